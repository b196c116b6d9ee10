/* SPDX-License-Identifier: MIT */
/*
 * libcluster/decode.c: the public face of decoder/ (include/cluster/decode.h).
 */
#include <cluster/decode.h>

#include "../decoder/insn.h"

lc_status lc_decode(lc_cpu_mode mode, const void *bytes, size_t len,
                    lc_insn_info *out)
{
    lcd_insn insn;
    lc_status st;

    if (!out)
        return LC_ERR_INVAL;
    st = lcd_decode(mode, (const uint8_t *)bytes, len, &insn);
    *out = insn.info;
    return st;
}

lc_status lc_insn_branch_target(const lc_insn_info *info, uint64_t rip,
                                uint64_t *target)
{
    return lcd_branch_target(info, rip, target);
}

lc_status lc_insn_format(const lc_insn_info *info, uint64_t rip, char *buf,
                         size_t size)
{
    return lcd_format(info, rip, buf, size);
}

static const char *const op_names[LC_OP_COUNT_] = {
#define LC_OP_NAME_(name, str) [LC_OP_##name] = str,
    LC_OP_LIST(LC_OP_NAME_)
#undef LC_OP_NAME_
};

const char *lc_op_name(lc_op op)
{
    if ((unsigned)op >= LC_OP_COUNT_)
        return "invalid";
    return op_names[op];
}

const char *lc_exit_class_name(lc_exit_class cls)
{
    switch (cls) {
    case LC_CLASS_TERMINATOR: return "terminator";
    case LC_CLASS_GAP_FILLER: return "gap-filler";
    case LC_CLASS_WEAK:       return "weakly-exiting";
    case LC_CLASS_STRONG:     return "strongly-exiting";
    default:                  return "invalid";
    }
}
