/* SPDX-License-Identifier: MIT */
/*
 * decoder/optable.c: what each operation is, in one const table.
 *
 * EXEC marks the set the runtime runs exactly (the gap-filler set, plus
 * the weakly exiting forms of the same operations when they touch memory).
 * STRONG marks instructions that always exit under VMX/SVM with a
 * conventional VMM configuration (paper section 5: "CPUID, OUT and HLT"
 * and friends); they are clustered through VMM callbacks. Every EXEC row
 * must be covered by the differential tests against Unicorn (tests/diff/).
 */
#include "insn.h"

#define EXEC   { LCD_F_EXEC, LC_CF_NONE }
#define COND   { LCD_F_EXEC | LCD_F_COND, LC_CF_NONE }
#define STRONG { LCD_F_EXEC | LCD_F_STRONG, LC_CF_NONE }
#define CFLOW(cf)  { LCD_F_EXEC | LCD_F_CFLOW, cf }
#define NONE   { 0, LC_CF_NONE }

/* One row per LC_OP_LIST entry, generated from the list: an operation
 * added to include/cluster/decode.h without a D_<name> row here does not
 * compile. How the runtime runs each EXEC row is runtime/exec.c's table
 * (lcr_op_rows); tests/unit/test_exec.c checks the two agree. */
#define D_OTHER    NONE              /* every unnamed instruction */
/* data movement */
#define D_MOV      EXEC
#define D_MOVZX    EXEC
#define D_MOVSX    EXEC
#define D_MOVSXD   EXEC
#define D_LEA      EXEC
/* XCHG with memory is implicitly locked: the runtime does it with a host
 * atomic on RAM, so an explicit LOCK changes nothing. */
#define D_XCHG     { LCD_F_EXEC | LCD_F_LOCKOK }
/* PUSH/POP of a segment register stay PUSH/POP (the same stack effect);
 * POP Sreg loads it with the descriptor checks (runtime/sreg.c). */
#define D_PUSH     { LCD_F_EXEC | LCD_F_SREG, LC_CF_NONE }
#define D_POP      { LCD_F_EXEC | LCD_F_SREG, LC_CF_NONE }
#define D_CMOVCC   COND
#define D_SETCC    COND
#define D_BSWAP    EXEC
#define D_CBW      EXEC
#define D_CWD      EXEC
/* arithmetic and logic, exact RFLAGS */
#define D_ADD      EXEC
#define D_ADC      EXEC
#define D_SUB      EXEC
#define D_SBB      EXEC
#define D_CMP      EXEC
#define D_AND      EXEC
#define D_OR       EXEC
#define D_XOR      EXEC
#define D_TEST     EXEC
#define D_INC      EXEC
#define D_DEC      EXEC
#define D_NEG      EXEC
#define D_NOT      EXEC
#define D_SHL      EXEC
#define D_SHR      EXEC
#define D_SAR      EXEC
#define D_ROL      EXEC
#define D_ROR      EXEC
#define D_RCL      EXEC
#define D_RCR      EXEC
#define D_MUL      EXEC
#define D_IMUL     EXEC
/* flags and no-ops */
#define D_CLC      EXEC
#define D_STC      EXEC
#define D_CMC      EXEC
#define D_CLD      EXEC
#define D_STD      EXEC
#define D_NOP      EXEC
/* near control flow (CALL and RET push and pop the return address on the
 * stack: the runtime runs them with the stack checks of PUSH and POP) */
#define D_JMP      CFLOW(LC_CF_JMP_REL)
#define D_JCC      { LCD_F_EXEC | LCD_F_CFLOW | LCD_F_COND, LC_CF_JCC_REL }
#define D_LOOP     CFLOW(LC_CF_JCC_REL)
#define D_LOOPE    CFLOW(LC_CF_JCC_REL)
#define D_LOOPNE   CFLOW(LC_CF_JCC_REL)
#define D_JCXZ     CFLOW(LC_CF_JCC_REL)
#define D_CALL     CFLOW(LC_CF_CALL_REL)
#define D_RET      CFLOW(LC_CF_RET)
/* strongly exiting */
#define D_IN       STRONG
#define D_OUT      STRONG
#define D_INS      STRONG
#define D_OUTS     STRONG
#define D_CPUID    STRONG
#define D_HLT      { LCD_F_EXEC | LCD_F_STRONG, LC_CF_HALT }
#define D_MOV_DR   STRONG
#define D_RDMSR    STRONG
#define D_WRMSR    STRONG
#define D_VMREAD   STRONG
#define D_VMWRITE  STRONG
#define D_VMCALL   STRONG
/* Mode and paging changes are never spanned by a cluster (paper section
 * 8: "we do not create translations that span changes in guest paging
 * mode"). */
#define D_MOV_CR   NONE
/* Segment register moves: the runtime makes the descriptor checks the
 * CPU makes and stops before the load when one would fault (CS is never
 * a MOV target: Zydis rejects 8E /1). */
#define D_MOV_SREG { LCD_F_EXEC | LCD_F_SREG, LC_CF_NONE }
/* Gap fillers found missing on real driver and firmware code paths
 * (issue 14): #DE, a fault the runtime cannot take back, stops the run
 * before DIV/IDIV; BTS/BTR/BTC with LOCK stay terminators (the LOCK rule
 * below); CLI/STI only where CPL <= IOPL; RDTSC only with the VMM's
 * rdtsc callback (runtime/exec.c). */
#define D_DIV      EXEC
#define D_IDIV     EXEC
#define D_BT       EXEC
#define D_BTS      EXEC
#define D_BTR      EXEC
#define D_BTC      EXEC
#define D_CLI      EXEC
#define D_STI      EXEC
#define D_PUSHA    EXEC
#define D_POPA     EXEC
#define D_LEAVE    EXEC
#define D_RDTSC    EXEC

const lcd_op_desc lcd_op_table[LC_OP_COUNT_] = {
#define D_ROW_(name, str) [LC_OP_##name] = D_##name,
    LC_OP_LIST(D_ROW_)
#undef D_ROW_
};

#undef EXEC
#undef COND
#undef STRONG
#undef CFLOW
#undef NONE

lc_exit_class lcd_classify(const lcd_insn *insn)
{
    const lc_insn_info *info = &insn->info;
    uint8_t flags = lcd_op_table[info->op].flags;

    if (!(flags & LCD_F_EXEC))
        return LC_CLASS_TERMINATOR;
    /* A LOCKed read-modify-write must be atomic against other vCPUs; the
     * runtime only guarantees that for XCHG. */
    if (info->lock && !(flags & LCD_F_LOCKOK))
        return LC_CLASS_TERMINATOR;
    /* In 64-bit mode Intel ignores an operand-size prefix on near
     * branches and AMD honours it: behaviour depends on the host vendor,
     * so the instruction is left to the CPU. */
    if ((flags & LCD_F_CFLOW) && info->mode == LC_MODE_LONG64 &&
        insn->opsize_prefix)
        return LC_CLASS_TERMINATOR;
    /* Far transfers load CS: never inside a cluster. */
    if (info->cflow == LC_CF_FAR)
        return LC_CLASS_TERMINATOR;
    /* Segment registers as operands only where the row says the runtime
     * makes the loads' descriptor checks; never a load of CS. */
    for (unsigned i = 0; i < insn->nopnds; i++)
        if (insn->opnd[i].kind == LCD_OPND_REG &&
            insn->opnd[i].reg.cls == LCD_REG_SEG &&
            (!(flags & LCD_F_SREG) ||
             (insn->opnd[i].write && insn->opnd[i].reg.num == LC_CS)))
            return LC_CLASS_TERMINATOR;
    /* BSWAP of a 16-bit register is undefined (SDM BSWAP). */
    if (info->op == LC_OP_BSWAP && info->operand_bits == 16)
        return LC_CLASS_TERMINATOR;
    if (flags & LCD_F_STRONG)
        return LC_CLASS_STRONG;
    if (info->has_mem)
        return LC_CLASS_WEAK;
    return LC_CLASS_GAP_FILLER;
}
