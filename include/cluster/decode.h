/* SPDX-License-Identifier: MIT */
/** @file
 * libcluster: decoding guest instructions and their exit classes.
 *
 * The engine decodes forward from an exiting instruction to find the next
 * ones that will exit (paper sections 4 and 5). The same decoder is
 * available to VMMs for diagnostics: what an instruction is, how long, and
 * which exit class the engine gives it.
 *
 * Every call takes a buffer and its length and never reads past it. An
 * instruction that runs past the end of the buffer (for instance because
 * the next guest page is not readable) is LC_ERR_DECODE_TRUNCATED, not a
 * guess.
 */
#ifndef CLUSTER_DECODE_H
#define CLUSTER_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include "cpu.h"
#include "error.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Exit classes (docs/design.md, "Decoding and exit classes").
 *  STRONG      always exits under hardware virtualization: IN, OUT, INS,
 *              OUTS, CPUID, HLT, MOV to/from DR, RDMSR, WRMSR, VMREAD,
 *              VMWRITE, VMCALL. The runtime runs it through a callback.
 *  WEAK        a memory access the runtime can run; it exits only when it
 *              touches MMIO or traced memory, which only the exit-tracking
 *              table can predict (paper section 5).
 *  GAP_FILLER  runs exactly in the runtime and never exits (section 4).
 *  TERMINATOR  anything else: not supported by the runtime, or not to be
 *              run in the VMM (mode changes, far transfers, LOCKed RMW,
 *              vendor-dependent encodings). A cluster ends before it.
 */
typedef enum lc_exit_class {
    LC_CLASS_TERMINATOR = 0,
    LC_CLASS_GAP_FILLER,
    LC_CLASS_WEAK,
    LC_CLASS_STRONG,
    LC_CLASS_COUNT_
} lc_exit_class;

/**
 * Operations the project distinguishes. X(name, mnemonic). Condition-code
 * families (Jcc, CMOVcc, SETcc) are one operation plus lc_insn_info.cond.
 * LC_OP_OTHER is every instruction the project does not name: always a
 * terminator.
 */
#define LC_OP_LIST(X)                                                       \
    X(OTHER, "other")                                                       \
    /** data movement */                                                     \
    X(MOV, "mov") X(MOVZX, "movzx") X(MOVSX, "movsx") X(MOVSXD, "movsxd")   \
    X(LEA, "lea") X(XCHG, "xchg") X(PUSH, "push") X(POP, "pop")             \
    X(CMOVCC, "cmovcc") X(SETCC, "setcc") X(BSWAP, "bswap")                 \
    X(CBW, "cbw/cwde/cdqe") X(CWD, "cwd/cdq/cqo")                           \
    /** arithmetic and logic */                                              \
    X(ADD, "add") X(ADC, "adc") X(SUB, "sub") X(SBB, "sbb") X(CMP, "cmp")   \
    X(AND, "and") X(OR, "or") X(XOR, "xor") X(TEST, "test")                 \
    X(INC, "inc") X(DEC, "dec") X(NEG, "neg") X(NOT, "not")                 \
    X(SHL, "shl") X(SHR, "shr") X(SAR, "sar") X(ROL, "rol") X(ROR, "ror")   \
    X(RCL, "rcl") X(RCR, "rcr") X(MUL, "mul") X(IMUL, "imul")               \
    /** flags and no-ops */                                                  \
    X(CLC, "clc") X(STC, "stc") X(CMC, "cmc") X(CLD, "cld") X(STD, "std")   \
    X(NOP, "nop")                                                           \
    /** near control flow */                                                 \
    X(JMP, "jmp") X(JCC, "jcc") X(LOOP, "loop") X(LOOPE, "loope")           \
    X(LOOPNE, "loopne") X(JCXZ, "jcxz/jecxz/jrcxz")                         \
    X(CALL, "call") X(RET, "ret")                                           \
    /** strongly exiting */                                                  \
    X(IN, "in") X(OUT, "out") X(INS, "ins") X(OUTS, "outs")                 \
    X(CPUID, "cpuid") X(HLT, "hlt") X(MOV_DR, "mov dr")                     \
    X(RDMSR, "rdmsr") X(WRMSR, "wrmsr")                                     \
    X(VMREAD, "vmread") X(VMWRITE, "vmwrite") X(VMCALL, "vmcall")           \
    /** named so that tests and logs can say why they terminate */           \
    X(MOV_CR, "mov cr") X(MOV_SREG, "mov sreg")                            \
    /** gap fillers added later, appended so that the values above keep   \
     * theirs (MOV_SREG above runs too, with its descriptor checks) */     \
    X(DIV, "div") X(IDIV, "idiv")                                           \
    X(BT, "bt") X(BTS, "bts") X(BTR, "btr") X(BTC, "btc")                  \
    X(CLI, "cli") X(STI, "sti")                                             \
    X(PUSHA, "pusha/pushad") X(POPA, "popa/popad") X(LEAVE, "leave")       \
    X(RDTSC, "rdtsc")

/** The operations of LC_OP_LIST as an enum: LC_OP_MOV, LC_OP_IN, ... */
typedef enum lc_op {
#define LC_OP_ENUM_(name, str) LC_OP_##name,
    LC_OP_LIST(LC_OP_ENUM_)
#undef LC_OP_ENUM_
    LC_OP_COUNT_
} lc_op;

/** Control-flow kind of an instruction. */
typedef enum lc_cflow {
    LC_CF_NONE = 0,   /**< falls through */
    LC_CF_JMP_REL,    /**< near jump, static target */
    LC_CF_JCC_REL,    /**< conditional near jump, static target (Jcc, LOOPcc,
                       * JCXZ) */
    LC_CF_JMP_IND,    /**< near jump through a register or memory */
    LC_CF_CALL_REL,
    LC_CF_CALL_IND,
    LC_CF_RET,
    LC_CF_FAR,        /**< far jump/call/ret, IRET, INT, SYSCALL, ... */
    LC_CF_HALT,       /**< HLT: the next instruction is not reached directly */
} lc_cflow;

/** x86 condition codes in their encoding order (the low nibble of Jcc). */
typedef enum lc_cond {
    LC_CC_O = 0, LC_CC_NO, LC_CC_B, LC_CC_NB, LC_CC_Z, LC_CC_NZ, LC_CC_BE,
    LC_CC_NBE, LC_CC_S, LC_CC_NS, LC_CC_P, LC_CC_NP, LC_CC_L, LC_CC_NL,
    LC_CC_LE, LC_CC_NLE
} lc_cond;

/** The architectural limit on the length of an instruction, in bytes. */
#define LC_INSN_MAX_LEN 15

/** A decoded instruction as the public API describes it. */
typedef struct lc_insn_info {
    lc_cpu_mode   mode;          /**< the mode it was decoded in */
    lc_op         op;            /**< the operation */
    lc_exit_class exit_class;    /**< how the engine treats it */
    lc_cflow      cflow;         /**< its control-flow kind */
    uint8_t  length;              /**< 1..15 */
    uint8_t  bytes[LC_INSN_MAX_LEN]; /**< its encoding (length bytes) */
    uint8_t  operand_bits;        /**< effective operand size: 8..64 */
    uint8_t  address_bits;        /**< effective address size: 16, 32, 64 */
    uint8_t  cond;                /**< lc_cond for CMOVCC, SETCC, JCC */
    uint8_t  has_mem;             /**< touches memory (not LEA, not NOP) */
    uint8_t  mem_read;            /**< reads memory */
    uint8_t  mem_write;           /**< writes memory */
    uint8_t  mem_bits;            /**< width of the memory access */
    uint8_t  rep;                 /**< REP/REPE (1) or REPNE (2) prefix */
    uint8_t  lock;                /**< LOCK prefix */
    uint8_t  pad_[3];
    int64_t  branch_disp;         /**< LC_CF_JMP_REL/JCC_REL/CALL_REL: the
                                   * displacement from the next instruction */
} lc_insn_info;

/**
 * Decode one instruction at the start of `bytes` (`len` bytes readable) as
 * code of `mode`. Errors: LC_ERR_INVAL, LC_ERR_DECODE_TRUNCATED (give more
 * bytes, if there are any), LC_ERR_DECODE_TOO_LONG, LC_ERR_DECODE_INVALID.
 */
lc_status lc_decode(lc_cpu_mode mode, const void *bytes, size_t len,
                    lc_insn_info *out);

/** Target of a static branch of `info` at `rip`, truncated to the operand
 * size as the CPU does (IP wraps at 64 KiB in 16-bit code).
 * LC_ERR_INVAL if the instruction has no static target. */
lc_status lc_insn_branch_target(const lc_insn_info *info, uint64_t rip,
                                uint64_t *target);

/** Intel-syntax text of the instruction at `rip` into `buf` (always
 * NUL-terminated when size > 0). LC_ERR_RANGE if it did not fit. */
lc_status lc_insn_format(const lc_insn_info *info, uint64_t rip, char *buf,
                         size_t size);

/** Name of an operation ("mov", "in", ...) for logs and tests; never NULL. */
const char *lc_op_name(lc_op op);
/** Name of an exit class ("strong", "weak", ...); never NULL. */
const char *lc_exit_class_name(lc_exit_class cls);

#ifdef __cplusplus
}
#endif

#endif /* CLUSTER_DECODE_H */
