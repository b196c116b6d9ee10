/* SPDX-License-Identifier: MIT */
/*
 * libcluster/cpu.c: the public face of CPU modes (include/cluster/cpu.h).
 * Which mode a state is in is the runtime's to know (runtime/mode.c).
 */
#include <cluster/cpu.h>

#include "../runtime/rt.h"

lc_cpu_mode lc_cpu_mode_of(const lc_cpu_state *s)
{
    return lcr_cpu_mode(s);
}

static const char *const mode_names[LC_MODE_COUNT_] = {
    [LC_MODE_REAL] = "real",       [LC_MODE_VM86] = "vm86",
    [LC_MODE_PROT16] = "prot16",   [LC_MODE_PROT32] = "prot32",
    [LC_MODE_COMPAT16] = "compat16", [LC_MODE_COMPAT32] = "compat32",
    [LC_MODE_LONG64] = "long64",
};

const char *lc_cpu_mode_name(lc_cpu_mode mode)
{
    if ((unsigned)mode >= LC_MODE_COUNT_)
        return "invalid";
    return mode_names[mode];
}

unsigned lc_cpu_mode_bits(lc_cpu_mode mode)
{
    switch (mode) {
    case LC_MODE_PROT32:
    case LC_MODE_COMPAT32:
        return 32;
    case LC_MODE_LONG64:
        return 64;
    default:
        return 16;
    }
}
