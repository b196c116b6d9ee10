/* SPDX-License-Identifier: MIT */
/*
 * translator/cflow.c: control flow and loops in clusters.
 *
 * Implements Agesen et al., Software Techniques for Avoiding Hardware
 * Virtualization Exits, USENIX ATC 2012, section 6. At formation time
 * each near branch inside the window is resolved to what the configured
 * method allows:
 *   method 1  a taken branch leaves the cluster (the guest resumes at its
 *             target); LC_CFLOW_NONE ends the cluster before any branch;
 *   method 2  forward branches to an instruction of the cluster stay in
 *             it;
 *   method 3  backward branches too, when the loop they close reaches an
 *             exiting instruction (section 6.3); such a cluster may end
 *             in the backedge, and each iteration checks for interrupts
 *             at the loop head.
 * translator/run.c follows the recorded targets at run time and caps
 * loops that reach only weakly exiting instructions.
 */
#include "form.h"

int lcx_cflow_is_branch(const lcx_insn *x)
{
    const lcd_insn *d = &x->d;

    return !x->follow &&
           (d->info.cflow == LC_CF_JMP_REL || d->info.cflow == LC_CF_JCC_REL ||
            d->info.cflow == LC_CF_JMP_IND || d->info.cflow == LC_CF_CALL_REL ||
            d->info.cflow == LC_CF_CALL_IND || d->info.cflow == LC_CF_RET);
}

int lcx_cflow_ends_linear(const lcd_insn *d)
{
    return d->info.cflow == LC_CF_JMP_REL || d->info.cflow == LC_CF_JMP_IND ||
           d->info.cflow == LC_CF_CALL_REL ||
           d->info.cflow == LC_CF_CALL_IND || d->info.cflow == LC_CF_RET ||
           d->info.cflow == LC_CF_HALT;
}

/* A conditional branch at index i whose one successor is the next
 * instruction of the list: the other one's RIP (the target, or the
 * fall-through when the walk laid out the taken path next, calls.c).
 * 0 when neither successor is next. */
static int other_successor(const lcx_cluster *c, unsigned n, unsigned i,
                           uint64_t *other)
{
    const lcx_insn *x = &c->insn[i];
    uint64_t tgt, fall = x->rip + x->d.info.length;

    if (x->d.info.cflow != LC_CF_JCC_REL ||
        lcd_branch_target(&x->d.info, x->rip, &tgt) != LC_OK)
        return 0;
    if (i + 1 < n && c->insn[i + 1].rip == tgt && tgt != fall) {
        *other = fall;
        return 1;
    }
    if (i + 1 >= n || c->insn[i + 1].rip == fall) {
        *other = tgt;
        return 1;
    }
    return 0;
}

/* Does an instruction of the list outside t..branch (among the n) jump
 * into the loop past its head t by a relative JMP or Jcc: a path that
 * left the loop through a branch and comes back into it without passing
 * what lies between that branch and the backedge? (A jump to the head
 * itself goes round all of it: the first pass's backedge, calls.c.) */
static int reenters(const lcx_cluster *c, unsigned n, unsigned t,
                    unsigned branch)
{
    for (unsigned j = 0; j < n; j++) {
        const lc_insn_info *ii = &c->insn[j].d.info;
        uint64_t tgt;

        if ((j >= t && j <= branch) ||
            (ii->cflow != LC_CF_JMP_REL && ii->cflow != LC_CF_JCC_REL) ||
            lcd_branch_target(ii, c->insn[j].rip, &tgt) != LC_OK)
            continue;
        for (unsigned k = t + 1; k <= branch; k++)
            if (c->insn[k].rip == tgt)
                return 1;
    }
    return 0;
}

/* The straight run from instruction `t` up to the first control-flow
 * instruction: does it reach an exiting instruction, and a strongly
 * exiting one? (section 6.3: "the straight list of instructions starting
 * from its target up to the first control-flow instruction encounters ...
 * an exiting instruction"). A conditional branch that leaves the loop
 * (its other successor is no instruction of t..branch) does not end the
 * run: an iteration that takes the backedge went past it, as in a poll
 * whose exit test comes before the port read (`1: dec ecx; jz timeout;
 * in al,dx; test al,1; jnz 1b`). Unless the list, n instructions, has a
 * way back into the loop from outside it: an iteration could then leave
 * at that branch, skip the exit, and come round again (`jz L; out; ...;
 * jnz head; ...; L: jmp mid`), a loop with no exit in it. */
static enum lcx_backedge loop_kind(const lcx_cluster *c, unsigned n,
                                   unsigned t, unsigned branch)
{
    int back = -1;          /* reenters(), asked once if needed */

    enum lcx_backedge k = LCX_BE_NONE;

    for (unsigned i = t; i <= branch; i++) {
        const lcx_insn *x = &c->insn[i];
        uint64_t other;
        int leaves = 1;

        if (x->exiting) {
            if (x->d.info.exit_class == LC_CLASS_STRONG)
                return LCX_BE_STRONG;
            k = LCX_BE_WEAK;
        }
        if (i == branch || !lcx_cflow_is_branch(x))
            continue;
        if (!other_successor(c, branch + 1, i, &other))
            break;
        for (unsigned j = t; j <= branch && leaves; j++)
            if (c->insn[j].rip == other)
                leaves = 0;
        if (leaves && back < 0)
            back = reenters(c, n, t, branch);
        if (!leaves || back)
            break;
    }
    return k;
}

/* The instruction at `rip` for the branch at index `from`: for a target
 * above the branch, the nearest after it in the list, else the nearest
 * before; for a target at or below the branch, only the nearest before.
 * One address may appear more than once (a function called twice,
 * calls.c; a loop whose head lies before the exit; a resumed line that
 * runs into code decoded already). Any copy is correct for run.c, which
 * checks RIP, but a backward branch must stay a backward move in the list
 * (method 2 ends there; method 3's backedges check interrupts and cap
 * weak loops), and the nearest keeps the run inside the same call. */
static int index_of(const lcx_cluster *c, unsigned n, unsigned from,
                    uint64_t rip)
{
    if (rip > c->insn[from].rip)
        for (unsigned i = from + 1; i < n; i++)
            if (c->insn[i].rip == rip)
                return (int)i;
    for (unsigned i = from + 1; i-- > 0;)
        if (c->insn[i].rip == rip)
            return (int)i;
    return -1;
}

int lcx_cflow_branch(lcx_cluster *out, unsigned n, unsigned i,
                     const lc_config *cfg, unsigned *last)
{
    lcx_insn *x = &out->insn[i];
    lc_insn_info ii = x->d.info;
    enum lcx_backedge k;
    uint64_t t;
    int ti;

    if (cfg->cflow == LC_CFLOW_NONE)
        return 1;                            /* end before any branch */
    if (ii.cflow != LC_CF_JMP_REL && ii.cflow != LC_CF_JCC_REL)
        return 0;      /* indirect, or a CALL/RET not followed: ends */
    if (lcd_branch_target(&ii, x->rip, &t) != LC_OK)
        return 0;
    /* The walk may have laid out a conditional branch's taken path next
     * (a loop head before the exit, calls.c): then the in-cluster place
     * to record is where its fall-through went. */
    if (ii.cflow == LC_CF_JCC_REL && i + 1 < n &&
        out->insn[i + 1].rip == t && t != x->rip + ii.length) {
        ti = index_of(out, n, i, x->rip + ii.length);
        if (ti > (int)i && cfg->cflow >= LC_CFLOW_M2)
            x->target = (uint8_t)ti;
        return 0;
    }
    ti = index_of(out, n, i, t);
    if (ti < 0)
        return 0;                            /* leaves the cluster: ends */
    if ((unsigned)ti > i) {
        if (cfg->cflow >= LC_CFLOW_M2)
            x->target = (uint8_t)ti;         /* method 2 */
        return 0;
    }
    if (cfg->cflow != LC_CFLOW_M3)
        return 0;
    k = loop_kind(out, n, (unsigned)ti, i);
    if (k == LCX_BE_NONE)
        return 0;
    x->target = (uint8_t)ti;
    x->backedge = (uint8_t)k;
    /* Each iteration checks for interrupts at the loop head (s6.3). */
    out->insn[ti].irq_check = 1;
    /* A cluster may end in a backedge (s6.3). */
    *last = i;
    return 0;
}
