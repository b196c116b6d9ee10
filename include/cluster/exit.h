/* SPDX-License-Identifier: MIT */
/** @file
 * libcluster: what the exit was.
 *
 * The VMM describes the exit it just took in the terms its hypervisor
 * reported it (KVM_EXIT_IO, KVM_EXIT_MMIO, a VMX/SVM exit reason). The
 * engine uses the description to check that the instruction it decodes at
 * RIP is the one that exited, and to know whether RIP already points past
 * it (see PLATFORM notes in docs/: KVM variants differ).
 */
#ifndef CLUSTER_EXIT_H
#define CLUSTER_EXIT_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The kind of exit the hypervisor reported. */
typedef enum lc_exit_kind {
    LC_EXIT_IO = 1,     /**< IN, OUT, INS, OUTS */
    LC_EXIT_MMIO,       /**< a load or store that hit an MMIO range */
    LC_EXIT_TRACED,     /**< a store to a write-watched (traced) page */
    LC_EXIT_CPUID,
    LC_EXIT_HLT,
    LC_EXIT_DR_ACCESS,  /**< MOV to or from a debug register */
    LC_EXIT_RDMSR,
    LC_EXIT_WRMSR,
    LC_EXIT_VMREAD,
    LC_EXIT_VMWRITE,
    LC_EXIT_VMCALL,
    LC_EXIT_KIND_COUNT_
} lc_exit_kind;

/** Where the exiting instruction is relative to the RIP in the state. */
typedef enum lc_exit_rip {
    LC_EXIT_RIP_AT = 0, /**< RIP points at the exiting instruction: its
                         * effects have not happened (IN and MMIO reads on
                         * KVM: completion pending) */
    LC_EXIT_RIP_PAST,   /**< RIP already points past it and its effects are
                         * done, or will be done by the VMM before it
                         * calls the engine (OUT on some KVM builds) */
} lc_exit_rip;

/**
 * Every field the VMM fills is cross-checked against the instruction the
 * engine decodes there (and the registers), and the engine declines the
 * exit (LC_DECLINED, stop LC_STOP_UNSUPPORTED) on any disagreement: the
 * code changed under the hypervisor's feet (another vCPU, DMA) or the
 * description is wrong, and either way acting on it would be wrong.
 * Facts a hypervisor may not know carry a "known" bit in lc_exit.reported
 * or use 0 for "unknown", so a VMM that leaves them zeroed loses nothing.
 */
typedef struct lc_exit_io {
    uint16_t port;       /**< checked with LC_EXIT_HAS_PORT: the immediate or
                          * DX of the decoded IN/OUT/INS/OUTS */
    uint8_t  size;       /**< 1, 2 or 4 bytes: the decoded data width */
    uint8_t  is_out;     /**< 1 for OUT/OUTS, 0 for IN/INS */
    uint8_t  is_string;  /**< INS/OUTS */
    uint8_t  is_rep;     /**< with is_string: the instruction has a REP
                          * prefix (checked) */
    uint8_t  pad_[2];
    uint32_t count;      /**< iterations reported by the hypervisor, 0 if
                          * unknown; more than 1 only for REP INS/OUTS */
    uint32_t value;      /**< OUT with LC_EXIT_HAS_VALUE: the value written
                          * (size bytes), checked against AL/AX/EAX */
} lc_exit_io;

/** An MMIO or traced-page exit (lc_exit.u.mmio). */
typedef struct lc_exit_mmio {
    uint64_t gpa;        /**< guest-physical address of the access */
    uint8_t  len;        /**< 1, 2, 4 or 8; at most the decoded access width
                          * (a hypervisor may split one at a page end) */
    uint8_t  is_write;   /**< LC_EXIT_MMIO: the decoded instruction writes
                          * (or, for 0, reads) memory */
    uint8_t  pad_[6];
    uint64_t value;      /**< write with LC_EXIT_HAS_VALUE: the value stored
                          * (len bytes), checked against the source of a
                          * MOV store of the whole width */
} lc_exit_mmio;

/* Bits of lc_exit.reported: which optional facts the VMM filled in. */
#define LC_EXIT_HAS_PORT  (1u << 0)  /**< u.io.port */
#define LC_EXIT_HAS_VALUE (1u << 1)  /**< u.io.value (OUT), u.mmio.value
                                      * (MMIO write) */
#define LC_EXIT_HAS_MSR   (1u << 2)  /**< u.msr: ECX of the RDMSR/WRMSR */

/** The exit the VMM just took, as its hypervisor reported it. */
typedef struct lc_exit {
    lc_exit_kind kind;       /**< what exited */
    lc_exit_rip  rip;        /**< whether RIP is at or past the instruction */
    /** Length of the exiting instruction if the hypervisor reports it (VMX
     * "VM-exit instruction length"), or 0 if unknown; the engine decodes
     * it anyway and declines the exit when the lengths differ. With
     * LC_EXIT_RIP_PAST and no insn_rip it also tells where the exiting
     * instruction started (RIP - insn_len), checked as insn_rip is. */
    uint8_t      insn_len;
    uint8_t      reported;   /**< LC_EXIT_HAS_* */
    uint8_t      pad_[2];
    /** With LC_EXIT_RIP_PAST: the address (RIP) of the exiting instruction
     * if known, else 0. It lets the engine anchor a translation on the
     * exiting instruction itself, so a loop back to it stays inside the
     * cluster (paper section 6.3, "the translator extends clusters up to
     * the last backedge"). The engine checks that the instruction there
     * ends exactly at the current RIP and is the one reported. */
    uint64_t     insn_rip;
    /** The kind's details. */
    union {
        lc_exit_io   io;     /**< LC_EXIT_IO */
        lc_exit_mmio mmio;   /**< LC_EXIT_MMIO, LC_EXIT_TRACED */
        uint32_t     msr;    /**< LC_EXIT_RDMSR / LC_EXIT_WRMSR: ECX, with
                              * LC_EXIT_HAS_MSR */
    } u;
} lc_exit;

/** Name of an exit kind ("io", "mmio", "cpuid", ...); never NULL. */
const char *lc_exit_kind_name(lc_exit_kind kind);

#ifdef __cplusplus
}
#endif

#endif /* CLUSTER_EXIT_H */
