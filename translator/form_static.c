/* SPDX-License-Identifier: MIT */
/*
 * translator/form_static.c: the static cluster window.
 *
 * Implements Agesen et al., Software Techniques for Avoiding Hardware
 * Virtualization Exits, USENIX ATC 2012, section 4: from an exiting
 * instruction, decode ahead up to max_cluster_insns instructions (the
 * paper's 16), stopping at a terminator, an undecodable or truncated
 * instruction, or after an unconditional transfer; the cluster then ends
 * at the last exiting instruction found before more than
 * max_mem_gap_fillers memory-accessing gap fillers separate two exiting
 * instructions. Branches inside the window are cflow.c's (section 6).
 */
#include <string.h>

#include "form.h"

unsigned lcx_static_decode(const lcx_form_in *in, lcx_cluster *out,
                           unsigned window, size_t *seen, lc_status *err)
{
    unsigned n = 0, range;
    uint64_t rip = in->rip;
    lcx_trace t;

    *seen = 0;
    *err = LC_OK;
    lcx_trace_init(&t, in, out);
    while (n < window) {
        lcx_insn *x = &out->insn[n];
        const uint8_t *p;
        size_t avail;
        uint64_t next;
        lc_status st;

        /* The window counts instructions: a followed call's callee gets
         * what is left of it (calls.c). */
        if (!lcx_trace_code(&t, rip, (window - n) * LC_INSN_MAX_LEN, &p,
                            &avail, &range))
            break;
        memset(x, 0, sizeof(*x));
        st = lcd_decode(in->mode, p, avail, &x->d);
        if (st != LC_OK) {
            if (n == 0)
                *err = st;
            break;
        }
        if (range == 0 && rip - in->rip + x->d.info.length > *seen)
            *seen = (size_t)(rip - in->rip) + x->d.info.length;
        if (x->d.info.exit_class == LC_CLASS_TERMINATOR)
            break;
        x->rip = rip;
        x->range = (uint8_t)range;
        x->target = LCX_NO_TARGET;
        n++;
        /* the instruction in an interrupt shadow ends the cluster */
        if (n >= 2 && lcr_opens_shadow(&out->insn[n - 2].d))
            break;
        next = rip + x->d.info.length;
        if (lcx_trace_follow(&t, x, n, &next)) {
            rip = next;
            continue;
        }
        if (lcx_cflow_ends_linear(&x->d))
            break;
        rip = next;
    }
    return n;
}

unsigned lcx_static_end(lcx_cluster *out, unsigned n, const lc_config *cfg,
                        int first_exiting, unsigned last)
{
    unsigned mem_gap = 0;

    for (unsigned i = first_exiting ? 1 : 0; i < n; i++) {
        const lcx_insn *x = &out->insn[i];

        /* Without a control-flow method no branch is included, even one
         * that is itself predicted to exit (a CALL pushing to MMIO). */
        if (cfg->cflow == LC_CFLOW_NONE && lcx_cflow_is_branch(x))
            break;
        if (x->exiting) {
            last = i;
            mem_gap = 0;
        } else if (x->d.info.has_mem &&
                   ++mem_gap > cfg->max_mem_gap_fillers) {
            break;
        }
        if (lcx_cflow_is_branch(x) &&
            lcx_cflow_branch(out, n, i, cfg, &last))
            break;
    }
    return last;
}
