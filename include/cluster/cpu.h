/* SPDX-License-Identifier: MIT */
/** @file
 * libcluster: guest CPU state as the VMM hands it to the engine.
 *
 * The structure carries what KVM_CAP_SYNC_REGS puts in kvm_run (struct
 * kvm_regs and struct kvm_sregs): general registers, RIP, RFLAGS, the six
 * segment registers with their hidden parts, LDTR and TR, GDTR and IDTR,
 * CR0/CR2/CR3/CR4/CR8 and EFER. Debug registers and MSRs are *not* here:
 * instructions that touch them are exits the VMM serves through the
 * callbacks in ops.h, exactly as it would without the library.
 *
 * Ownership: the VMM owns the structure. lc_vcpu_handle_exit() reads it and
 * writes back only the fields named in lc_result.dirty.
 */
#ifndef CLUSTER_CPU_H
#define CLUSTER_CPU_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** General registers in the architectural encoding order (ModRM.reg /
 * REX.B numbering), so index N is the register an instruction names N. */
enum lc_gpr {
    LC_RAX = 0, LC_RCX, LC_RDX, LC_RBX, LC_RSP, LC_RBP, LC_RSI, LC_RDI,
    LC_R8, LC_R9, LC_R10, LC_R11, LC_R12, LC_R13, LC_R14, LC_R15,
    LC_NR_GPRS
};

/** Segment registers in the architectural Sreg encoding order. */
enum lc_sreg {
    LC_ES = 0, LC_CS, LC_SS, LC_DS, LC_FS, LC_GS,
    LC_NR_SREGS
};

/**
 * A segment register with its hidden (descriptor cache) part, field for
 * field as struct kvm_segment. `limit` is the byte-granular limit already
 * scaled by G, as the CPU caches it. `type` is the 4-bit descriptor type;
 * `s` 1 for code/data, 0 for system; `db` the D/B bit; `l` the 64-bit code
 * bit; `unusable` is set for a null selector loaded in protected mode.
 */
typedef struct lc_segment {
    uint64_t base;       /**< linear base address */
    uint32_t limit;      /**< byte-granular limit (already scaled by G) */
    uint16_t selector;   /**< the visible selector */
    uint8_t  type;       /**< 4-bit descriptor type */
    uint8_t  present;    /**< P bit */
    uint8_t  dpl;        /**< descriptor privilege level */
    uint8_t  db;         /**< D/B bit: 32-bit default size */
    uint8_t  s;          /**< 1 code/data, 0 system */
    uint8_t  l;          /**< 64-bit code segment */
    uint8_t  g;          /**< granularity bit */
    uint8_t  avl;        /**< available-to-software bit */
    uint8_t  unusable;   /**< null selector loaded in protected mode */
    uint8_t  pad_;
} lc_segment;

/** GDTR / IDTR. */
typedef struct lc_dtable {
    uint64_t base;                /**< linear base address */
    uint16_t limit;               /**< limit in bytes */
    uint16_t pad_[3];
} lc_dtable;

/** The vCPU state exchanged with the engine at each exit (see the file
 * description). */
typedef struct lc_cpu_state {
    uint64_t   gpr[LC_NR_GPRS];   /**< indexed by enum lc_gpr */
    uint64_t   rip;               /**< instruction pointer */
    uint64_t   rflags;            /**< flags (LC_RFLAGS_*) */
    lc_segment seg[LC_NR_SREGS];  /**< indexed by enum lc_sreg */
    lc_segment ldtr;              /**< local descriptor table register */
    lc_segment tr;                /**< task register */
    lc_dtable  gdtr;              /**< global descriptor table register */
    lc_dtable  idtr;              /**< interrupt descriptor table register */
    /**@{*/
    /** control registers (LC_CR0_*, LC_CR4_*) */
    uint64_t   cr0, cr2, cr3, cr4, cr8;
    /**@}*/
    uint64_t   efer;              /**< the EFER MSR (LC_EFER_*) */
} lc_cpu_state;

/**@{*/
/** Architectural bits the engine reads; named as in the SDM. */
#define LC_RFLAGS_CF   (1ull << 0)
#define LC_RFLAGS_PF   (1ull << 2)
#define LC_RFLAGS_AF   (1ull << 4)
#define LC_RFLAGS_ZF   (1ull << 6)
#define LC_RFLAGS_SF   (1ull << 7)
#define LC_RFLAGS_TF   (1ull << 8)
#define LC_RFLAGS_IF   (1ull << 9)
#define LC_RFLAGS_DF   (1ull << 10)
#define LC_RFLAGS_OF   (1ull << 11)
#define LC_RFLAGS_IOPL (3ull << 12)
#define LC_RFLAGS_NT   (1ull << 14)
#define LC_RFLAGS_RF   (1ull << 16)
#define LC_RFLAGS_VM   (1ull << 17)
#define LC_RFLAGS_AC   (1ull << 18)

#define LC_CR0_PE (1ull << 0)
#define LC_CR0_WP (1ull << 16)
#define LC_CR0_AM (1ull << 18)    /* alignment mask: #AC at CPL 3 with RFLAGS.AC */
#define LC_CR0_PG (1ull << 31)
#define LC_CR4_TSD  (1ull << 2)    /* RDTSC at CPL > 0 raises #GP */
#define LC_CR4_DE   (1ull << 3)    /* debugging extensions: DR4/DR5 #UD */
#define LC_CR4_PSE  (1ull << 4)
#define LC_CR4_PAE  (1ull << 5)
#define LC_CR4_LA57 (1ull << 12)
#define LC_CR4_SMEP (1ull << 20)
#define LC_CR4_SMAP (1ull << 21)
#define LC_CR4_PKE  (1ull << 22)   /* protection keys, user pages */
#define LC_CR4_CET  (1ull << 23)   /* control-flow enforcement (shadow stacks, IBT) */
#define LC_CR4_PKS  (1ull << 24)   /* protection keys, supervisor pages */
#define LC_CR4_LASS (1ull << 27)   /* linear-address space separation */
#define LC_EFER_LME (1ull << 8)
#define LC_EFER_LMA (1ull << 10)
#define LC_EFER_NXE (1ull << 11)
/**@}*/

/** Exception vectors (SDM vol. 3 6.3.1, table 6-1). The library never
 * injects one; the runtime names the fault an instruction would raise
 * when it stops before it, and the guest raises it itself on resume. */
#define LC_VEC_DE  0    /**< divide error */
#define LC_VEC_DB  1    /**< debug */
#define LC_VEC_UD  6    /**< invalid opcode */
#define LC_VEC_NP  11   /**< segment not present */
#define LC_VEC_SS  12   /**< stack-segment fault */
#define LC_VEC_GP  13   /**< general protection */
#define LC_VEC_PF  14   /**< page fault */
#define LC_VEC_AC  17   /**< alignment check */

/**
 * The execution mode a state implies, as the CPU derives it from CR0.PE,
 * EFER.LMA, RFLAGS.VM and CS.L/CS.D. It fixes default operand and address
 * sizes for decoding and how addresses are formed.
 */
typedef enum lc_cpu_mode {
    LC_MODE_REAL = 0,   /**< CR0.PE=0: 16-bit, segment base = selector << 4 */
    LC_MODE_VM86,       /**< protected mode with RFLAGS.VM=1: 16-bit */
    LC_MODE_PROT16,     /**< protected mode, CS.D=0 */
    LC_MODE_PROT32,     /**< protected mode, CS.D=1 */
    LC_MODE_COMPAT16,   /**< long mode, CS.L=0, CS.D=0 */
    LC_MODE_COMPAT32,   /**< long mode, CS.L=0, CS.D=1 */
    LC_MODE_LONG64,     /**< long mode, CS.L=1 */
    LC_MODE_COUNT_
} lc_cpu_mode;

/** Mode implied by `state` (never fails: any bit pattern maps to a mode). */
lc_cpu_mode lc_cpu_mode_of(const lc_cpu_state *state);

/** Short name of a mode ("real", "prot32", "long64", ...); never NULL. */
const char *lc_cpu_mode_name(lc_cpu_mode mode);

/** Default operand/address width of code in `mode`, in bits (16, 32, 64). */
unsigned lc_cpu_mode_bits(lc_cpu_mode mode);

#ifdef __cplusplus
}
#endif

#endif /* CLUSTER_CPU_H */
