/* SPDX-License-Identifier: MIT */
/*
 * libcluster/adapter.h: the engine's one narrow interface for the
 * adapters beside it (libcluster/kvm/). An adapter otherwise uses only
 * the public API; it never reaches into the runtime or the decoder (the
 * build links it against an engine that exports only lc_* and these, see
 * libcluster/meson.build).
 *
 * Not installed, not exported from libcluster.so.
 */
#ifndef LC_LIBCLUSTER_ADAPTER_H
#define LC_LIBCLUSTER_ADAPTER_H

#include <stdint.h>

#include <cluster/engine.h>

/*
 * Perform the access an I/O or MMIO exit `x` describes through the VMM's
 * own callbacks (lc_vm_ops.pio or .mmio) of `vcpu`, as the VMM would when
 * handling the exit itself. For a write, *value holds the data (size or
 * len bytes); for a read the callback's answer is stored there (zeroed
 * first). 0 on success; -1 if the callback is NULL, answered anything
 * but LC_CB_OK, or `x` is not an I/O or MMIO exit.
 */
int lci_adapter_perform(lc_vcpu *vcpu, const lc_exit *x, uint64_t *value);

/*
 * For an exit reported with RIP already past the instruction (`st` is
 * the state after it): the length of the exiting instruction ending at
 * st->rip, found by decoding the bytes before RIP through the guest's
 * segmentation and page tables; 0 if none is certain. A candidate of k
 * bytes counts only if it decodes to exactly k bytes and is what `x`
 * reports: an OUT of the reported port and size, or a plain MOV store of
 * the reported width whose memory operand, computed with the registers
 * of `st`, is the reported guest-physical address. `hint` (0: none) is a
 * length found before at this site, tried first. The shortest candidate
 * wins (a longer one differs only by redundant bytes in front).
 */
unsigned lci_adapter_insn_len(lc_vcpu *vcpu, const lc_cpu_state *st,
                              const lc_exit *x, unsigned hint);

/*
 * A read exit `x` (IN, or an MMIO read with RIP at the instruction) as the
 * instruction at st->rip makes it now, with the registers of `st`: its
 * port (DX may have moved) or guest-physical address (the pointer may
 * have). For an adapter whose pending read KVM completes at that RIP
 * after a run came back to it: the read the guest makes there now is of
 * that port or address, not the first exit's. 0 with x updated; -1 when
 * the instruction there is not such a read (x unchanged).
 */
int lci_adapter_exit_now(lc_vcpu *vcpu, const lc_cpu_state *st, lc_exit *x);

#endif /* LC_LIBCLUSTER_ADAPTER_H */
