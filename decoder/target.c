/* SPDX-License-Identifier: MIT */
/*
 * decoder/target.c: where a direct relative branch goes. The translator
 * needs it to keep forward branches and loops inside a cluster (paper
 * section 6); lc_insn_branch_target() is its public face.
 */
#include "insn.h"

lc_status lcd_branch_target(const lc_insn_info *info, uint64_t rip,
                            uint64_t *target)
{
    uint64_t t;

    if (!info || !target)
        return LC_ERR_INVAL;
    if (info->cflow != LC_CF_JMP_REL && info->cflow != LC_CF_JCC_REL &&
        info->cflow != LC_CF_CALL_REL)
        return LC_ERR_INVAL;
    t = rip + info->length + (uint64_t)info->branch_disp;
    /* The CPU truncates the new instruction pointer to the operand size
     * (SDM Vol. 2, JMP: "tempEIP AND 0000FFFFH" for 16-bit operands). */
    if (info->operand_bits == 16)
        t &= 0xffffu;
    else if (info->operand_bits == 32)
        t &= 0xffffffffu;
    *target = t;
    return LC_OK;
}
