/* SPDX-License-Identifier: MIT */
/** @file
 * libcluster: the services a VMM provides to the engine.
 *
 * Modelled on KVM's struct x86_emulate_ops: the engine knows nothing of the
 * VMM; it holds the vCPU's opaque pointer (given to lc_vcpu_create()) and a
 * const table of callbacks, one per host service. The engine copies the
 * table at lc_engine_create() (up to `size` bytes) and never writes to it.
 *
 * NOTES (contracts every callback may rely on):
 *  - Access sizes are 1, 2, 4 or 8 bytes (port I/O: 1, 2 or 4).
 *  - A callback is called on the vCPU thread that called
 *    lc_vcpu_handle_exit(), and never re-entrantly for one vCPU.
 *  - Read data is zeroed by the engine before dispatch, so a device that
 *    answers fewer bytes than asked leaks no stale values.
 *  - Every callback except gpa_map may be NULL. An instruction that would
 *    need a NULL callback is a terminator: the engine stops before it and
 *    the guest takes that exit the ordinary way.
 *  - LC_CB_STOP from a callback means "do not do this access here": the
 *    engine stops *before* the instruction with all earlier effects
 *    complete, and the guest will take the exit on it when it resumes.
 *    This is how a VMM says "I/O needed" (a device that must answer
 *    asynchronously) without the engine having to suspend.
 *  - The engine cannot take an access back, so a device refuses an
 *    instruction at its first access or not at all: once it accepted a
 *    part (the first piece of an access split across pages, the read of
 *    a read-modify-write), it must accept the rest. The engine itself
 *    never runs an instruction whose accesses would reach two devices in
 *    turn (INS and OUTS with MMIO or, for INS, a traced page; PUSH and
 *    POP between MMIO and an MMIO or traced stack): the guest does it.
 *  - While lc_vcpu_handle_exit() runs, the engine owns the lc_cpu_state
 *    it was given: no callback changes it, except vmcall() its general
 *    registers and RFLAGS through its argument.
 *  - A device callback (pio, mmio, traced_write) that writes guest memory
 *    is a DMA: the engine reads the data it wrote at once, but a write
 *    into a paging-structure entry changes the run's translations only
 *    from the next exit on, as a CPU's TLB keeps a translation until the
 *    guest invalidates it (SDM vol. 3 4.10.4). wrmsr, dr_write, halt,
 *    vmcall and vmcs_write may change the translations of data at once (a
 *    hypercall that flushes the guest's TLB or edits its page tables for
 *    it): the run's page-walk cache is read back after them. The code a
 *    run already decoded is not: a callback that changes how the guest's
 *    code is mapped calls lc_engine_flush(), which ends the run right
 *    after that instruction (LC_STOP_COHERENCY), and the next exit checks
 *    the code again.
 *  - pio() and mmio() see every access a cluster makes, including ones
 *    that would never have exited to the VMM: a port or address the
 *    hypervisor serves itself (KVM's in-kernel 8259A, 8254, I/O APIC,
 *    local APIC) must answer LC_CB_STOP (for MMIO, gpa_map() answering
 *    LC_GPA_UNMAPPED does the same), or the access is lost. An mmio()
 *    or traced_write() that answers LC_CB_STOP leaves the accessed (and
 *    for a store dirty) bits that the access's page walk set: the walk
 *    comes before the callback, and the guest's own execution of the
 *    instruction makes it again. gpa_map() answering LC_GPA_UNMAPPED
 *    leaves none.
 */
#ifndef CLUSTER_OPS_H
#define CLUSTER_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "cpu.h"

#ifdef __cplusplus
extern "C" {
#endif

/** What a callback answers. */
typedef enum lc_cb_result {
    LC_CB_OK = 0,     /**< done; out-parameters are valid */
    LC_CB_STOP,       /**< not done; stop before the instruction */
    LC_CB_ERROR,      /**< failed; stop before the instruction and report
                       * LC_ERR_CALLBACK to the caller of the engine */
} lc_cb_result;

/** What a guest-physical address is backed by. */
typedef enum lc_gpa_kind {
    LC_GPA_UNMAPPED = 0,  /**< nothing: the engine stops before the access */
    LC_GPA_RAM,           /**< ordinary memory reachable through `hva` */
    LC_GPA_MMIO,          /**< a device: accesses go to lc_vm_ops.mmio */
} lc_gpa_kind;

/**
 * Answer of gpa_map(). For LC_GPA_RAM, `hva` points at the byte for the
 * requested gpa and `span` bytes from there are valid host memory (at least
 * to the end of the 4 KiB guest page, so the engine never needs a second
 * call inside one page). `traced` marks a write-watched page: the engine
 * never stores to it through `hva` but calls traced_write() instead.
 * `readonly` marks ROM: a store stops the run before the instruction.
 */
typedef struct lc_gpa_map {
    lc_gpa_kind kind;         /**< what backs the address */
    uint8_t     traced;       /**< write-watched page */
    uint8_t     readonly;     /**< ROM: stores stop the run */
    uint8_t     pad_[2];
    uint8_t    *hva;          /**< LC_GPA_RAM: host address of the byte */
    uint64_t    span;         /**< LC_GPA_RAM: valid bytes from hva */
} lc_gpa_map;

/** The callback table a VMM gives lc_engine_create() (see the file
 * description for the contracts). */
typedef struct lc_vm_ops {
    /** Size of this structure as the VMM was compiled against it
     * (sizeof(lc_vm_ops)); lets the table grow without breaking the ABI:
     * the engine takes min(size, its sizeof) bytes and treats callbacks
     * beyond them as NULL. At least up to and including gpa_map. */
    size_t size;

    /** Required. Translate a guest-physical address. `is_write` says what
     * the access will be. Must not fail for any gpa: unbacked addresses
     * answer LC_GPA_UNMAPPED. The engine remembers answers across exits
     * (which device frame an instruction always hits, paper section 5;
     * the host address, `traced` and `readonly` of the RAM pages its
     * page-walk cache holds, section 11): call lc_engine_flush() whenever
     * any answer would change (a BAR moves, a memory slot is added or
     * removed, a page starts or stops being traced or read-only). A VMM
     * that logs dirty pages from `is_write` flushes when it clears its
     * log, as it would re-protect pages under KVM: until then a page
     * answered once for a write is not asked again. */
    void (*gpa_map)(void *opaque, uint64_t gpa, int is_write,
                    lc_gpa_map *out);

    /** Port I/O: on a write *value holds the value (size bytes, zero
     * extended); on a read the callback stores it there. */
    lc_cb_result (*pio)(void *opaque, uint16_t port, uint8_t size,
                        int is_write, uint32_t *value);

    /** MMIO at `gpa`: on a write *value holds the data, on a read the
     * callback stores it. */
    lc_cb_result (*mmio)(void *opaque, uint64_t gpa, uint8_t len,
                         int is_write, uint64_t *value);

    /** A store of `len` bytes to a traced page. The VMM performs the store
     * itself (or drops it) and updates whatever it shadows. With exit pairs
     * (paper section 3) `len` may be twice the instruction's width when two
     * adjacent stores are delivered as one; `accepts_wide` below says
     * whether the VMM wants that. */
    lc_cb_result (*traced_write)(void *opaque, uint64_t gpa,
                                 const void *data, uint8_t len);

    /** Nonzero if an interrupt is pending and deliverable in `state` (the
     * engine has already checked RFLAGS.IF and the interrupt shadow it
     * knows of). A cluster stops at its interrupt-check points when this
     * says yes, so the guest takes the interrupt on resume. */
    int (*irq_pending)(void *opaque, const lc_cpu_state *state);

    /** Instruction services, each the VMM's handling of that exit. */
    lc_cb_result (*cpuid)(void *opaque, uint32_t leaf, uint32_t subleaf,
                          uint32_t out[4] /* eax, ebx, ecx, edx */);
    /** RDMSR of `msr`: the callback stores the value. */
    lc_cb_result (*rdmsr)(void *opaque, uint32_t msr, uint64_t *value);
    /** WRMSR of `value` to `msr`. */
    lc_cb_result (*wrmsr)(void *opaque, uint32_t msr, uint64_t value);
    /** MOV from debug register `dr`: the callback stores the value. */
    lc_cb_result (*dr_read)(void *opaque, unsigned dr, uint64_t *value);
    /** MOV of `value` to debug register `dr`. */
    lc_cb_result (*dr_write)(void *opaque, unsigned dr, uint64_t value);
    /** HLT: the VMM marks the vCPU halted; the run ends after the HLT. */
    lc_cb_result (*halt)(void *opaque);
    /** VMREAD of the nested guest's VMCS (paper section 8): LC_CB_OK only
     * when it succeeds (VMsucceed: the engine clears CF, PF, AF, ZF, SF
     * and OF). Any failure (no current VMCS, VMfailValid with its error
     * number, the vCPU not in VMX operation, an L2 guest) answers
     * LC_CB_STOP: the guest executes it and takes the real exit, where
     * the VMM reports it; answered LC_CB_OK, the failure would read as a
     * success. `field` is the whole register (bits 63:32 set: error 12,
     * the VMM's to report). */
    lc_cb_result (*vmcs_read)(void *opaque, uint64_t field,
                              uint64_t *value);
    /** VMWRITE of `value` to the VMCS field `field`, answered as
     * vmcs_read(). */
    lc_cb_result (*vmcs_write)(void *opaque, uint64_t field,
                               uint64_t value);
    /** VMCALL: the VMM may change the general registers and RFLAGS in
     * `state` (the engine writes those back and goes on after the
     * VMCALL). A hypercall that must change segments, control registers
     * or RIP answers LC_CB_STOP and does it in its own exit handler. */
    lc_cb_result (*vmcall)(void *opaque, lc_cpu_state *state);

    /** Widths (bitmask of 1, 2, 4, 8 as bits 0..3) that traced_write() and
     * mmio() accept for a merged exit pair; 0 means deliver pairs as two
     * separate accesses (still without a second exit). */
    uint8_t accepts_wide;

    /* Appended after accepts_wide: a VMM compiled against an older table
     * passes a smaller `size` and these stay NULL. */

    /** RDTSC: the guest's time-stamp counter now (the host's TSC with the
     * guest's offset and scaling applied, as the CPU would return it).
     * With this callback RDTSC is a gap filler (it never exits under a
     * conventional VMX/SVM set-up); without it RDTSC ends a cluster.
     * At CPL > 0 with CR4.TSD the engine stops before the RDTSC and the
     * guest takes its \#GP; the callback is not called. */
    lc_cb_result (*rdtsc)(void *opaque, uint64_t *tsc);
} lc_vm_ops;

/**@{*/
/** Bits of lc_vm_ops.accepts_wide. */
#define LC_WIDE_2 (1u << 1)
#define LC_WIDE_4 (1u << 2)
#define LC_WIDE_8 (1u << 3)
/**@}*/

#ifdef __cplusplus
}
#endif

#endif /* CLUSTER_OPS_H */
