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
 *
 * An unconditional transfer the cluster does not follow (a RET without
 * LC_TECH_CALLS) ends the straight line, but not necessarily the window:
 * when an earlier conditional branch jumps forward over it (method 2 or
 * 3), decoding goes on at that target (lcx_trace_end, calls.c), so both paths of an
 * `if (!status) return; ...` are in the window. Linux's e1000_intr is
 * this shape: ICR read, `if (!icr) return IRQ_NONE;`, then the IMC write
 * and its flushing STATUS read. The gap count of such a target starts
 * from the branches that reach it, not from the skipped path.
 *
 * The cap is there because a memory access in the VMM costs a software
 * page walk (section 4). Section 11 suggests relaxing it once a page-walk
 * cache makes repeated accesses cheap: runtime/mmu.c keeps one for each
 * run, so the cap is counted in walks' worth. A memory gap filler that
 * will probably find its page already walked in the run (see
 * gap_cost()) counts 1, one that will probably walk counts
 * LCX_GAP_WALK, and max_mem_gap_fillers * LCX_GAP_WALK units may
 * separate two exits: with the defaults, the paper's four walks, or one
 * walk and six accesses to pages already walked. A wrong guess only
 * costs time.
 *
 * The paper set its four against an exit of 3,000 cycles (0.9 us,
 * section 9) and proposes, in section 11, a cost/benefit model
 * calibrated at power-on. When the VMM measured what an exit costs here
 * (lc_config.exit_cost_ns), the budget keeps the paper's ratio of filler
 * cost to exit cost: max_mem_gap_fillers walks per 0.9 us of exit. A
 * smaller exit cost never lowers it below the configured cap.
 *
 * The window scales the same way (lcx_window()): max_cluster_insns
 * instructions per 0.9 us of exit, never fewer than configured, at most
 * LCX_MAX_INSNS. The window bounds what a run may execute between two
 * exits, gap fillers included, as the cap bounds the walks: keeping its
 * ratio to the exit cost keeps the worst case a cluster adds per exit it
 * saves where the paper had it. On KVM here (an exit of 7-9 us) it is
 * 64, the cap: SeaBIOS's POST takes 411 exits instead of 565 with the
 * paper's 16 (docs/engine.md, "The decode-ahead window and the exit
 * cost" and "a fifth look"): its PCI configuration scan reads a device's
 * vendor ID every 17 to 32 instructions, and its serial input check
 * reads the line status twice 46 instructions apart.
 */
#include <string.h>

#include "form.h"

/* Cost of a memory gap filler that walks, in units of one that hits the
 * page-walk cache. Measured with bench_engine on this project's machine
 * (docs/engine.md, "Memory gap fillers"): about 50 ns with a walk, 25 ns
 * without, so 2. */
#define LCX_GAP_WALK 2u

/* The exit cost the paper's cap was set against: 3,000 cycles at
 * 3.33 GHz (section 9). */
#define LCX_PAPER_EXIT_NS 900u

/* Memory gap filler units allowed between two exiting instructions. */
static uint64_t gap_budget(const lc_config *cfg)
{
    uint64_t units = (uint64_t)cfg->max_mem_gap_fillers * LCX_GAP_WALK;

    /* (beyond a window of walks it cannot bind: no overflow below) */
    if (units < LCX_MAX_INSNS * LCX_GAP_WALK &&
        cfg->exit_cost_ns > LCX_PAPER_EXIT_NS)
        units = units * cfg->exit_cost_ns / LCX_PAPER_EXIT_NS;
    return units;
}

unsigned lcx_window(const lc_config *cfg)
{
    uint64_t w = cfg->max_cluster_insns;

    if (w < LCX_MAX_INSNS && cfg->exit_cost_ns > LCX_PAPER_EXIT_NS)
        w = w * cfg->exit_cost_ns / LCX_PAPER_EXIT_NS;
    return w < LCX_MAX_INSNS ? (unsigned)w : LCX_MAX_INSNS;
}

/* Will the access of instruction i probably hit a page an earlier
 * instruction of the cluster accessed (the run's page-walk cache)? Same
 * segment and addressing form: RIP-relative or absolute addresses in the
 * same 4 KiB page; a base (and index) register with displacements less
 * than 2 KiB apart. The registers may have changed in between: that
 * costs a walk, nothing else. */
static unsigned gap_cost(const lcx_cluster *out, unsigned i)
{
    const lcd_mem *m = &out->insn[i].d.mem;

    for (unsigned j = 0; j < i; j++) {
        const lcd_mem *o = &out->insn[j].d.mem;
        uint64_t a, b;

        if (!out->insn[j].d.info.has_mem || o->seg != m->seg ||
            o->base.cls != m->base.cls || o->base.num != m->base.num ||
            o->index.cls != m->index.cls || o->index.num != m->index.num ||
            (m->index.cls != LCD_REG_NONE && o->scale != m->scale))
            continue;
        a = (uint64_t)m->disp;
        b = (uint64_t)o->disp;
        if (m->base.cls == LCD_REG_IP) {
            a += out->insn[i].rip + out->insn[i].d.info.length;
            b += out->insn[j].rip + out->insn[j].d.info.length;
        }
        if (m->base.cls == LCD_REG_GPR || m->index.cls == LCD_REG_GPR) {
            if (a - b + 2048 < 4096)
                return 1;           /* near the same register's address */
        } else if (a >> 12 == b >> 12) {
            return 1;               /* RIP-relative or absolute: same page */
        }
    }
    return LCX_GAP_WALK;
}

unsigned lcx_static_decode(const lcx_form_in *in, lcx_cluster *out,
                           unsigned window, size_t *seen, lc_status *err)
{
    unsigned n = 0, range;
    uint64_t rip = in->rip;
    lcx_trace t;
    int shadow;

    *seen = 0;
    *err = LC_OK;
    lcx_trace_init(&t, in, out);
    /* Each pass decodes one straight line; when it ends, the walk may go
     * on elsewhere (calls.c: a pending forward target, or after a loop
     * speculation that did not close). */
    do {
        shadow = 0;
        while (lcx_trace_room(&t, n, window)) {
            lcx_insn *x = &out->insn[n];
            const uint8_t *p;
            size_t avail;
            uint64_t next;
            lc_status st;

            /* The window counts instructions but followed transfers: a
             * followed call's callee gets what is left of it (calls.c,
             * lcx_trace_room). */
            if (!lcx_trace_code(&t, rip,
                                lcx_trace_room(&t, n, window) *
                                    LC_INSN_MAX_LEN, &p, &avail, &range))
                break;
            memset(x, 0, sizeof(*x));
            st = lcd_decode(in->mode, p, avail, &x->d);
            if (st != LC_OK) {
                if (n == 0) {
                    *err = st;
                    return 0;
                }
                break;
            }
            if (range == 0 && rip - in->rip + x->d.info.length > *seen)
                *seen = (size_t)(rip - in->rip) + x->d.info.length;
            /* A terminator; or, under CET, a transfer the runtime does
             * not run (lcr_cet_guards()) */
            if (x->d.info.exit_class == LC_CLASS_TERMINATOR ||
                (in->v && lcr_cet_guards(in->v->st, &x->d)))
                break;
            x->rip = rip;
            x->range = (uint8_t)range;
            x->target = LCX_NO_TARGET;
            n++;
            /* The instruction in an interrupt shadow ends the cluster: the
             * walk does not resume elsewhere (a pending target could be
             * its fall-through), unless a loop speculation is undone. */
            if (n >= 2 && lcr_opens_shadow(&out->insn[n - 2].d)) {
                shadow = 1;
                break;
            }
            next = rip + x->d.info.length;
            if (lcx_trace_follow(&t, x, n, &next)) {
                rip = next;
                continue;
            }
            if (lcx_cflow_ends_linear(&x->d))
                break;
            rip = next;
        }
    } while (n > 0 && (!shadow || t.spec) &&
             lcx_trace_end(&t, &n, window, &rip));
    return n;
}

unsigned lcx_static_end(lcx_cluster *out, unsigned n, const lc_config *cfg,
                        int first_exiting, unsigned last)
{
    unsigned mem_gap = 0;
    /* The gap count at each branch target (+1; 0: no branch to it). */
    unsigned gap_in[LCX_MAX_INSNS] = { 0 };
    const uint64_t budget = gap_budget(cfg);

    for (unsigned i = first_exiting ? 1 : 0; i < n; i++) {
        const lcx_insn *x = &out->insn[i];

        /* Reached only by a branch over an unfollowed transfer (see
         * lcx_static_decode): its path's count, not the skipped one's. */
        if (i > 0 && !out->insn[i - 1].follow &&
            lcx_cflow_ends_linear(&out->insn[i - 1].d)) {
            if (gap_in[i] == 0)
                break;
            mem_gap = gap_in[i] - 1;
        }

        /* Without a control-flow method no branch is included, even one
         * that is itself predicted to exit (a CALL pushing to MMIO). */
        if (cfg->cflow == LC_CFLOW_NONE && lcx_cflow_is_branch(x))
            break;
        if (x->exiting) {
            last = i;
            mem_gap = 0;
        } else if (x->d.info.has_mem &&
                   (mem_gap += gap_cost(out, i)) > budget) {
            break;
        }
        if (lcx_cflow_is_branch(x) &&
            lcx_cflow_branch(out, n, i, cfg, &last))
            break;
        if (x->target != LCX_NO_TARGET && x->target > i &&
            gap_in[x->target] < mem_gap + 1)
            gap_in[x->target] = mem_gap + 1;
    }
    return last;
}
