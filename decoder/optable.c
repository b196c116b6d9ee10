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

#define EXEC   LCD_F_EXEC
#define STRONG (LCD_F_EXEC | LCD_F_STRONG)
#define CFLOW  (LCD_F_EXEC | LCD_F_CFLOW)
#define NONE   0

const lcd_op_desc lcd_op_table[LC_OP_COUNT_] = {
    /* Rows not named here (LC_OP_OTHER and anything added to LC_OP_LIST
     * without a row) are zero: terminators. */
    /* data movement */
    [LC_OP_MOV]    = { EXEC },     [LC_OP_MOVZX]  = { EXEC },
    [LC_OP_MOVSX]  = { EXEC },   [LC_OP_MOVSXD] = { EXEC },
    [LC_OP_LEA]    = { EXEC },
    /* XCHG with memory is implicitly locked: the runtime does it with a
     * host atomic on RAM, so an explicit LOCK changes nothing. */
    [LC_OP_XCHG]   = { EXEC | LCD_F_LOCKOK },
    [LC_OP_PUSH]   = { EXEC },    [LC_OP_POP]    = { EXEC },
    [LC_OP_CMOVCC] = { EXEC },  [LC_OP_SETCC]  = { EXEC },
    [LC_OP_BSWAP]  = { EXEC },
    [LC_OP_CBW]    = { EXEC },
    [LC_OP_CWD]    = { EXEC },

    /* arithmetic and logic, exact RFLAGS */
    [LC_OP_ADD] = { EXEC }, [LC_OP_ADC] = { EXEC },
    [LC_OP_SUB] = { EXEC }, [LC_OP_SBB] = { EXEC },
    [LC_OP_CMP] = { EXEC }, [LC_OP_AND] = { EXEC },
    [LC_OP_OR]  = { EXEC },  [LC_OP_XOR] = { EXEC },
    [LC_OP_TEST] = { EXEC },
    [LC_OP_INC] = { EXEC }, [LC_OP_DEC] = { EXEC },
    [LC_OP_NEG] = { EXEC }, [LC_OP_NOT] = { EXEC },
    [LC_OP_SHL] = { EXEC }, [LC_OP_SHR] = { EXEC },
    [LC_OP_SAR] = { EXEC }, [LC_OP_ROL] = { EXEC },
    [LC_OP_ROR] = { EXEC }, [LC_OP_RCL] = { EXEC },
    [LC_OP_RCR] = { EXEC }, [LC_OP_MUL] = { EXEC },
    [LC_OP_IMUL] = { EXEC },

    [LC_OP_CLC] = { EXEC }, [LC_OP_STC] = { EXEC },
    [LC_OP_CMC] = { EXEC }, [LC_OP_CLD] = { EXEC },
    [LC_OP_STD] = { EXEC }, [LC_OP_NOP] = { EXEC },

    /* near control flow; CALL/RET are named but not yet run */
    [LC_OP_JMP]    = { CFLOW },    [LC_OP_JCC]   = { CFLOW },
    [LC_OP_LOOP]   = { CFLOW },   [LC_OP_LOOPE] = { CFLOW },
    [LC_OP_LOOPNE] = { CFLOW },
    [LC_OP_JCXZ]   = { CFLOW },
    [LC_OP_CALL]   = { LCD_F_CFLOW },
    [LC_OP_RET]    = { LCD_F_CFLOW },

    /* strongly exiting */
    [LC_OP_IN]     = { STRONG },    [LC_OP_OUT]   = { STRONG },
    [LC_OP_INS]    = { STRONG },   [LC_OP_OUTS]  = { STRONG },
    [LC_OP_CPUID]  = { STRONG }, [LC_OP_HLT]   = { STRONG },
    [LC_OP_MOV_DR] = { STRONG },
    [LC_OP_RDMSR]  = { STRONG }, [LC_OP_WRMSR] = { STRONG },
    [LC_OP_VMREAD] = { STRONG },
    [LC_OP_VMWRITE] = { STRONG },
    [LC_OP_VMCALL] = { STRONG },

    /* Mode and paging changes are never spanned by a cluster (paper
     * section 8: "we do not create translations that span changes in guest
     * paging mode"); segment loads need descriptor checks. */
    [LC_OP_MOV_CR]   = { NONE },
    [LC_OP_MOV_SREG] = { NONE },
};

#undef EXEC
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
    /* Segment registers as operands: PUSH/POP Sreg load a segment or store
     * a selector with an implementation-dependent width (SDM PUSH). */
    for (unsigned i = 0; i < insn->nopnds; i++)
        if (insn->opnd[i].kind == LCD_OPND_REG &&
            insn->opnd[i].reg.cls == LCD_REG_SEG)
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
