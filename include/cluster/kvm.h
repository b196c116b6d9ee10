/* SPDX-License-Identifier: MIT */
/** @file
 * libcluster: the ready adapter for KVM-based VMMs.
 *
 * The VMM keeps its vCPU loop. After KVM_RUN returns it calls
 * lc_kvm_handle_exit(); on LC_HANDLED it simply re-enters KVM_RUN (the
 * adapter has written the new registers into kvm_run's sync regs and dealt
 * with the pending completion), otherwise it handles the exit as it always
 * did. State travels through KVM_CAP_SYNC_REGS only: on these machines any
 * vCPU ioctl costs about as much as an exit (docs/kvm.md).
 *
 * KVM builds differ in where RIP points at an I/O or MMIO exit and in
 * whether changing RIP through the sync regs cancels a pending completion
 * (the IN or MMIO-read value KVM would write on the next KVM_RUN).
 * lc_kvm_probe() finds out on a throwaway VM; the adapter takes the fast
 * path where the probe says it is safe and otherwise completes the pending
 * exit first with one immediate_exit KVM_RUN.
 *
 * Available when the build found <linux/kvm.h> (meson option `kvm`).
 */
#ifndef CLUSTER_KVM_H
#define CLUSTER_KVM_H

#include <stdint.h>

#include "engine.h"

#ifdef __cplusplus
extern "C" {
#endif

struct kvm_run;

/** What this kernel's KVM does, as measured by lc_kvm_probe(). */
typedef struct lc_kvm_caps {
    uint8_t sync_regs;        /**< KVM_CAP_SYNC_REGS covers REGS and SREGS */
    uint8_t in_rip_past;      /**< at an IN exit RIP is already past it */
    uint8_t out_rip_past;     /**< at an OUT exit RIP is already past it */
    uint8_t mmio_read_rip_past;  /**< ... at an MMIO read exit */
    uint8_t mmio_write_rip_past; /**< ... at an MMIO write exit */
    uint8_t cancel_in;        /**< changing RIP cancels a pending IN */
    uint8_t cancel_mmio_read; /**< ... a pending MMIO read */
    uint8_t cancel_out;       /**< ... a pending OUT (RIP at it) */
    uint8_t cancel_mmio_write;/**< ... a pending MMIO write */
    uint8_t pad_[7];
} lc_kvm_caps;

/**
 * Measure this kernel's behaviour on a throwaway VM (one real-mode vCPU,
 * a few exits). Takes a few milliseconds; call once per process and keep
 * the result. Errors: LC_ERR_UNSUPPORTED (no /dev/kvm, API other than 12,
 * no sync regs), LC_ERR_CALLBACK (a KVM call failed unexpectedly; errno
 * is left as the kernel set it).
 */
lc_status lc_kvm_probe(lc_kvm_caps *caps);

/** One line describing the probe's findings, for logs; never NULL. */
const char *lc_kvm_caps_describe(const lc_kvm_caps *caps, char *buf,
                                 unsigned size);

/* ---- kvm_run in the engine's terms ------------------------------------------
 * The conversions the adapter itself uses, for a VMM that keeps its own
 * loop (or calls lc_vcpu_handle_exit() itself). They read and write
 * kvm_run only; no ioctl.
 */

/**
 * The vCPU state from kvm_run's sync regs (run->s.regs.regs and .sregs),
 * which KVM fills at every exit when run->kvm_valid_regs has
 * KVM_SYNC_X86_REGS | KVM_SYNC_X86_SREGS (lc_kvm_vcpu_attach() sets them).
 * Errors: LC_ERR_INVAL (NULL), LC_ERR_UNSUPPORTED (those sync regs are
 * not valid in `run`; *state untouched).
 */
lc_status lc_kvm_state_from_run(const struct kvm_run *run,
                                lc_cpu_state *state);

/**
 * Write back the parts of `state` named by `dirty` (LC_DIRTY_*, as in
 * lc_result.dirty) into the sync regs and mark them in
 * run->kvm_dirty_regs, so the next KVM_RUN loads them without a
 * KVM_SET_REGS/KVM_SET_SREGS ioctl. LC_DIRTY_SREGS writes segments,
 * descriptor tables, control registers and EFER, and keeps the rest of
 * kvm_sregs (APIC base, pending interrupts) as KVM reported it.
 * Errors: LC_ERR_INVAL (NULL).
 */
lc_status lc_kvm_state_to_run(struct kvm_run *run, const lc_cpu_state *state,
                              uint32_t dirty);

/**
 * Describe a KVM_EXIT_IO or KVM_EXIT_MMIO exit as lc_exit: port, size,
 * direction and count, the value of an OUT or MMIO write (with
 * LC_EXIT_HAS_PORT / LC_EXIT_HAS_VALUE set), and, when `caps` is given,
 * whether RIP is already past the instruction on this kernel (else
 * LC_EXIT_RIP_AT). KVM does not say whether a port access was a string
 * instruction: one with count > 1 is described as REP INS/OUTS, one with
 * count 1 as IN/OUT (the engine declines it if the code is INS/OUTS).
 * Errors: LC_ERR_INVAL (NULL), LC_ERR_UNSUPPORTED (another exit reason).
 */
lc_status lc_kvm_exit_from_run(const struct kvm_run *run,
                               const lc_kvm_caps *caps, lc_exit *exit);

/** The adapter's state for one KVM vCPU (opaque; lc_kvm_vcpu_attach()). */
typedef struct lc_kvm_vcpu lc_kvm_vcpu;

/**
 * Attach the adapter to a KVM vCPU: `vcpu` is the engine's context for it,
 * `vcpu_fd` the KVM vCPU fd, `run` its mmap'ed kvm_run. `caps` is copied.
 * The adapter sets run->kvm_valid_regs to REGS|SREGS so KVM fills the sync
 * regs on every exit. Errors: LC_ERR_INVAL, LC_ERR_UNSUPPORTED (caps say
 * no sync regs), LC_ERR_NOMEM.
 */
lc_status lc_kvm_vcpu_attach(lc_vcpu *vcpu, int vcpu_fd, struct kvm_run *run,
                             const lc_kvm_caps *caps, lc_kvm_vcpu **out);

/** Free the adapter's state for a vCPU (the engine's context and the KVM
 * vCPU stay the caller's). NULL is accepted and ignored. */
void lc_kvm_vcpu_detach(lc_kvm_vcpu *kv);

/**
 * Handle the exit in `run` (KVM_EXIT_IO or KVM_EXIT_MMIO; anything else is
 * declined). LC_HANDLED: re-enter KVM_RUN (if res->halted, treat the vCPU
 * as after a HLT exit), whatever the status: an error with LC_HANDLED
 * says what ended the run early, its state written all the same.
 * LC_DECLINED: handle the exit in `run` yourself: the one KVM reported,
 * untouched; or, where the adapter completed that one and KVM stopped at
 * the next piece of the same instruction (an MMIO read across a page
 * boundary), that piece's exit; or, where a run came back to the exiting
 * read and your callback refused to answer it, that read (the state the
 * run left is written, kvm_dirty_regs set). String I/O is declined.
 */
lc_status lc_kvm_handle_exit(lc_kvm_vcpu *kv, lc_result *res);

/** What the adapter did, for a VMM's statistics and for tests. */
typedef struct lc_kvm_stats {
    uint64_t exits_offered;     /**< calls to lc_kvm_handle_exit */
    uint64_t exits_handled;     /**< answered LC_HANDLED */
    uint64_t completions;       /**< immediate_exit KVM_RUNs to complete a
                                 * pending read before running ahead */
    uint64_t exits_skipped;     /**< declined at once: running ahead there
                                 * saved nothing lately, so the completion
                                 * ioctl or backward decode would be pure
                                 * cost */
    uint64_t string_io_declined;/**< INS/OUTS exits (not handled here) */
} lc_kvm_stats;

/** Copy the adapter's counters for this vCPU. LC_ERR_INVAL on NULL. */
lc_status lc_kvm_vcpu_get_stats(const lc_kvm_vcpu *kv, lc_kvm_stats *out);

#ifdef __cplusplus
}
#endif

#endif /* CLUSTER_KVM_H */
