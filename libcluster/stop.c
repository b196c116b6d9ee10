/* SPDX-License-Identifier: MIT */
/*
 * libcluster/stop.c: names of stop reasons (include/cluster/stop.h).
 */
#include <cluster/stop.h>

static const char *const stop_names[LC_STOP_REASON_COUNT_] = {
    [LC_STOP_NONE] = "none",           [LC_STOP_END] = "end",
    [LC_STOP_TERMINATOR] = "terminator", [LC_STOP_FAULT] = "fault",
    [LC_STOP_IRQ] = "irq",             [LC_STOP_BUDGET] = "budget",
    [LC_STOP_BACKEDGES] = "backedges", [LC_STOP_SMC] = "smc",
    [LC_STOP_COHERENCY] = "coherency", [LC_STOP_CALLBACK] = "callback",
    [LC_STOP_HALT] = "halt",           [LC_STOP_UNSUPPORTED] = "unsupported",
};

const char *lc_stop_reason_name(lc_stop_reason reason)
{
    if ((unsigned)reason >= LC_STOP_REASON_COUNT_)
        return "invalid";
    return stop_names[reason];
}
