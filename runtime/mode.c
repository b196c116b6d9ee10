/* SPDX-License-Identifier: MIT */
/*
 * runtime/mode.c: which execution mode a CPU state is in. The runtime
 * derives it at the start of every run (lcr_begin) to decode and to
 * choose address and operand sizes; lc_cpu_mode_of() is its public face.
 */
#include "rt.h"

lc_cpu_mode lcr_cpu_mode(const lc_cpu_state *s)
{
    const lc_segment *cs = &s->seg[LC_CS];

    if (!(s->cr0 & LC_CR0_PE))
        return LC_MODE_REAL;
    if (s->efer & LC_EFER_LMA) {
        if (cs->l)
            return LC_MODE_LONG64;
        return cs->db ? LC_MODE_COMPAT32 : LC_MODE_COMPAT16;
    }
    if (s->rflags & LC_RFLAGS_VM)
        return LC_MODE_VM86;
    return cs->db ? LC_MODE_PROT32 : LC_MODE_PROT16;
}
