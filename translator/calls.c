/* SPDX-License-Identifier: MIT */
/*
 * translator/calls.c: clusters across CALL, RET and JMP.
 *
 * Agesen et al., Software Techniques for Avoiding Hardware Virtualization
 * Exits, USENIX ATC 2012, section 11 names this as future work: real
 * drivers reach their devices through small accessor functions (an
 * `out; in; ret` configuration-space read), so a cluster that ends at
 * every CALL and RET never leaves one accessor. Here the decode-ahead
 * window follows:
 *   - a direct JMP to a place not yet in the cluster;
 *   - a direct CALL into the callee (the runtime pushes the return address
 *     as the CPU does: a guest stack write with its faults and the SMC
 *     stop);
 *   - a RET, to the return address the translation predicts: the one its
 *     own followed CALL pushed, or else the one in the slot at rSP (what
 *     a PUSH of the walk stored there, or the guest's stack at the exit);
 *   - an indirect CALL or JMP through a register or RAM, to the target it
 *     would have if the cluster ran now: values.c carries the registers
 *     through the instructions the walk decodes since the exit.
 * Nothing predicted is trusted: the cluster is laid out in execution
 * order and translator/run.c goes on only while RIP after each
 * instruction equals the next instruction's, the check of an inline
 * cache. A mispredicted RET or indirect transfer completes and the run
 * ends there (the guest resumes at the real target); a translation that
 * keeps missing there is formed again from a later exit's state
 * (libcluster/handle_exit.c, relink). The window counts the instructions
 * that are not followed transfers (lcx_trace_room), and section 6's
 * branch methods apply inside and across the functions followed.
 *
 * Code met this way may lie on other pages: each new stretch is a code
 * range of the cluster (at most LCX_MAX_RANGES), fetched through the
 * guest's page tables with a fetch record, checked for coherency and
 * watched for self-modification like the first (libcluster/coherency.c).
 *
 * The same walk also goes beyond one straight line for two loop shapes
 * section 6's methods miss on real code (with method 2 or 3, whether or
 * not calls are followed):
 *   - a conditional branch (or a direct JMP not followed) over a CALL or
 *     JMP to a later exiting instruction: its forward target is kept, and
 *     when the line ends (at the transfer, or at a terminator in the code
 *     the walk followed it to) the walk resumes there, with the stack view
 *     of the branch;
 *   - a poll whose exit test comes before the device read,
 *     `1: dec ecx; jz timeout; in al,dx; test al,1; jnz 1b`, exits at the
 *     IN, so the loop head lies before the exit and the JNZ's target was
 *     never decoded: with method 3 the walk follows the JNZ as taken, once,
 *     and keeps that only if it comes back to the JNZ (the loop closed);
 *     else everything since is undone and the walk goes on after the JNZ.
 *     cflow.c then records where the JNZ's fall-through goes and lets the
 *     loop's straight run pass the JZ that leaves it.
 */
#include <string.h>

#include "../runtime/alu.h"
#include "form.h"

void lcx_trace_init(lcx_trace *t, const lcx_form_in *in, lcx_cluster *out)
{
    memset(t, 0, sizeof(*t));
    t->in = in;
    t->out = out;
    /* Method 1 ends a run at any taken transfer (section 6.1), so
     * following needs method 2 or 3; only method 3 follows a jump to a
     * lower address (section 6.3 allows going back only there). */
    t->follow = (in->cfg->techniques & LC_TECH_CALLS) &&
                in->cfg->cflow >= LC_CFLOW_M2;
    t->sv.rsp_known = in->v != NULL;
    lcx_values_init(&t->sv.rv, in->v);
    out->nrange = 1;
    out->range[0].rip = in->rip;
    out->range[0].len = 0;
}

/* Code bytes at `rip`: in a range already fetched, or in a new one. */
int lcx_trace_code(lcx_trace *t, uint64_t rip, unsigned want,
                   const uint8_t **p, size_t *avail, unsigned *range)
{
    const lcx_form_in *in = t->in;
    lcx_cluster *out = t->out;
    lcx_code *xc = in->extra;
    size_t got;
    unsigned k;

    for (k = 0; k < out->nrange; k++) {
        uint64_t off = rip - out->range[k].rip;
        size_t have = k == 0 ? in->code_len : xc->r[k - 1].avail;
        const uint8_t *base = k == 0 ? in->code : xc->r[k - 1].buf;

        if (rip >= out->range[k].rip && off < have) {
            *p = base + off;
            *avail = have - (size_t)off;
            *range = k;
            return 1;
        }
    }
    if (!in->v || !xc || out->nrange >= LCX_MAX_RANGES)
        return 0;
    k = out->nrange;
    if (want > LCX_RANGE_BYTES)
        want = LCX_RANGE_BYTES;
    /* Code the run may never reach: fetched without setting accessed
     * bits (a page whose bits are still clear is not followed into). */
    got = lcr_fetch_look_rec(in->v, rip, xc->r[k - 1].buf, want,
                             xc->r[k - 1].gfn, &xc->r[k - 1].ngfn,
                             &xc->r[k - 1].rec);
    if (got == 0)
        return 0;
    xc->r[k - 1].avail = got;
    out->range[k].rip = rip;
    out->range[k].len = 0;
    out->nrange = (uint8_t)(k + 1);
    *p = xc->r[k - 1].buf;
    *avail = got;
    *range = k;
    return 1;
}

static int in_trace(const lcx_cluster *c, unsigned n, uint64_t rip)
{
    for (unsigned i = 0; i < n; i++)
        if (c->insn[i].rip == rip)
            return 1;
    return 0;
}

/* rSP's change by `d` if it is a push or pop the trace can count; else
 * whether it writes rSP some other way (then rSP is no longer known). */
static void track_rsp(lcx_trace *t, const lcd_insn *d)
{
    unsigned n = d->info.operand_bits / 8;

    switch (d->info.op) {
    case LC_OP_PUSH:
    case LC_OP_CALL:
        t->sv.rsp_delta -= n;
        break;
    case LC_OP_POP:
        t->sv.rsp_delta += n;
        break;
    case LC_OP_RET:
        t->sv.rsp_delta += n;
        if (d->nopnds > 0 && d->opnd[0].kind == LCD_OPND_IMM)
            t->sv.rsp_delta += (int64_t)(d->opnd[0].imm & 0xffff);
        break;
    default:
        break;
    }
    for (unsigned i = 0; i < d->nopnds; i++)
        if (d->opnd[i].kind == LCD_OPND_REG && d->opnd[i].write &&
            d->opnd[i].reg.cls == LCD_REG_GPR && d->opnd[i].reg.num == LC_RSP)
            t->sv.rsp_known = 0;
}

/* After x the walk's registers and rSP are as x leaves them. Every
 * instruction of the walk runs in the cluster: with first_done the first
 * one is the one at the current RIP (the exiting instruction is behind
 * it), and an anchored translation's completed exiting instruction only
 * makes its destinations unknown, which is safe. */
static void track(lcx_trace *t, const lcx_insn *x)
{
    lcx_values_step(t, x);
    track_rsp(t, &x->d);
}

/* Remember a forward target to resume at, with the stack view at its
 * branch (index `idx`). */
static void pend_push(lcx_trace *t, uint64_t tgt, unsigned idx)
{
    for (unsigned k = 0; k < t->npend; k++)
        if (t->pend[k].rip == tgt)
            return;
    if (t->npend < LCX_MAX_PENDING) {
        t->pend[t->npend].rip = tgt;
        t->pend[t->npend].idx = idx;
        t->pend[t->npend].sv = t->sv;
        t->npend++;
    }
}

/* A conditional branch (section 6 beyond the straight line): remember a
 * forward target not decoded yet; follow a backward one to a loop head
 * not decoded yet, speculatively (lcx_trace_end undoes it). 1 when the
 * walk goes on at *next. */
static int cond_branch(lcx_trace *t, const lcx_insn *x, unsigned n,
                       uint64_t *next)
{
    const lc_config *cfg = t->in->cfg;
    uint64_t tgt;

    if (cfg->cflow < LC_CFLOW_M2 ||
        lcd_branch_target(&x->d.info, x->rip, &tgt) != LC_OK ||
        in_trace(t->out, n, tgt))
        return 0;
    if (tgt > x->rip) {
        pend_push(t, tgt, n - 1);
        return 0;
    }
    /* Backward to code the walk has not seen: a loop whose head lies
     * before the exit. Only method 3 keeps loops (s6.3); one speculation
     * per walk (a nested one could not be undone on its own). */
    if (cfg->cflow != LC_CFLOW_M3 || t->spec || t->spec_used)
        return 0;
    t->spec = 1;
    t->spec_used = 1;
    t->spec_idx = n - 1;
    t->spec_fall = x->rip + x->d.info.length;
    t->spec_sv = t->sv;
    t->spec_npend = t->npend;
    t->spec_nrange = t->out->nrange;
    *next = tgt;
    return 1;
}

/* A direct JMP the walk does not follow (LC_TECH_CALLS off, or a target it
 * has seen) ends its line; a forward target not decoded yet is where the
 * walk may go on (method 2's forward branch inside the cluster). */
static void not_followed(lcx_trace *t, const lcx_insn *x, unsigned n)
{
    uint64_t tgt;

    if (x->d.info.cflow == LC_CF_JMP_REL &&
        t->in->cfg->cflow >= LC_CFLOW_M2 &&
        lcd_branch_target(&x->d.info, x->rip, &tgt) == LC_OK &&
        tgt > x->rip && !in_trace(t->out, n, tgt))
        pend_push(t, tgt, n - 1);
}

/* Will form.c mark it exiting: strongly exiting, or weakly exiting and
 * predicted to (section 5)? */
static int may_exit(const lcx_trace *t, const lcx_insn *x)
{
    const lcx_form_in *in = t->in;

    if (x->d.info.exit_class == LC_CLASS_STRONG)
        return 1;
    return x->d.info.exit_class == LC_CLASS_WEAK && in->predict &&
           (in->cfg->techniques & LC_TECH_DYNAMIC) &&
           in->predict(in->predict_ctx, x->rip, &x->d) != 0;
}

unsigned lcx_trace_room(const lcx_trace *t, unsigned n, unsigned window)
{
    unsigned used = 0;

    /* A transfer the cluster follows is where the compiler did not
     * inline: it moves RIP (and pushes or pops a return address) but does
     * none of the work between two exits. The window counts the rest, so
     * that an accessor called through a CALL and left through a RET gets
     * as much of it as the same code inlined would (section 4's 16
     * instructions). The list itself still holds LCX_MAX_INSNS. */
    for (unsigned i = 0; i < n; i++)
        if (!t->out->insn[i].follow)
            used++;
    if (n >= LCX_MAX_INSNS || used >= window)
        return 0;
    return window - used < LCX_MAX_INSNS - n ? window - used
                                             : LCX_MAX_INSNS - n;
}

int lcx_trace_end(lcx_trace *t, unsigned *n, unsigned window, uint64_t *rip)
{
    if (t->spec) {
        /* The loop did not close inside the window: undo everything
         * decoded since the branch and go on after it. */
        t->spec = 0;
        t->sv = t->spec_sv;
        t->npend = t->spec_npend;
        t->out->nrange = t->spec_nrange;
        *n = t->spec_idx + 1;
        *rip = t->spec_fall;
        return 1;
    }
    /* A full window does not end the walk while a branch's other side
     * is pending: the line after the branch is cut back to its last
     * instruction that may exit (below), which may make room. So a
     * conditional branch whose fall-through runs the window out without
     * an exit gets its taken side laid out instead (a PCI scan's
     * `if (vendor == 0xffff) continue;` to the next configuration
     * access); the side not laid out leaves the run at its RIP (run.c). */
    while (t->npend > 0) {
        /* The nearest forward target not decoded yet, with the stack
         * view of its branch. */
        unsigned best = 0, keep;
        for (unsigned k = 1; k < t->npend; k++)
            if (t->pend[k].rip < t->pend[best].rip)
                best = k;
        *rip = t->pend[best].rip;
        t->sv = t->pend[best].sv;
        keep = t->pend[best].idx + 1;
        t->pend[best] = t->pend[--t->npend];
        if (in_trace(t->out, *n, *rip))
            continue;
        /* What the line decoded after the branch is the branch's other
         * path: worth keeping up to its last instruction that may exit,
         * no further (a run down that path ends there anyway). */
        for (unsigned i = keep; i < *n; i++)
            if (may_exit(t, &t->out->insn[i]))
                keep = i + 1;
        if (!lcx_trace_room(t, keep, window))
            continue;           /* no room for that side */
        if (keep < *n) {
            *n = keep;
            for (unsigned k = 0; k < t->npend;)
                if (t->pend[k].idx >= keep)
                    t->pend[k] = t->pend[--t->npend];
                else
                    k++;
        }
        return 1;
    }
    return 0;
}

/* A followed transfer's target was read from the guest's state: remember
 * the first such read, so that the engine can tell whether the layout
 * holds in another state (lcx_guess_read). Later reads are only counted:
 * the first one still tells a state where the layout cannot hold (an
 * accessor's epilogue reached from another caller returns elsewhere
 * whatever the RETs after it read: SeaBIOS's serial console flush, called
 * from its input check and from its output, 2026-11-28). */
static void note_guess(lcx_trace *t, const lcx_insn *x, uint64_t tgt)
{
    lcx_cluster *out = t->out;
    const lcd_insn *d = &x->d;

    if (out->guessed) {
        out->guessed = 2;
        return;
    }
    out->guessed = 1;
    out->guess_val = tgt;
    out->guess_bytes = (uint8_t)(d->info.operand_bits / 8);
    if (d->info.cflow == LC_CF_RET) {
        out->guess_kind = LCX_GUESS_STACK;
        out->guess_delta = t->sv.rsp_delta;
    } else if (d->nopnds > 0 && d->opnd[0].kind == LCD_OPND_REG &&
               t->in->v &&
               (lcr_reg_get(t->in->v, d->opnd[0].reg, out->guess_bytes) &
                lcr_mask(out->guess_bytes)) == tgt) {
        /* the register as it was at the exit (values.c may have followed
         * a value the walk computed: then it cannot be read again) */
        out->guess_kind = LCX_GUESS_REG;
        out->guess_reg = d->opnd[0].reg;
    } else {
        out->guess_kind = LCX_GUESS_OTHER;
    }
}

int lcx_guess_read(const lcx_cluster *cl, lcr_vcpu *v, uint64_t *out)
{
    unsigned n = cl->guess_bytes;
    uint64_t val;

    if (!cl->guessed || n == 0 || n > 8)
        return -1;
    switch (cl->guess_kind) {
    case LCX_GUESS_STACK: {
        uint64_t sp = (v->st->gpr[LC_RSP] + (uint64_t)cl->guess_delta) &
                      lcr_mask(lcr_stack_bytes(v));
        /* only a prediction: the cache's last view will do (values.c) */
        if (lcx_peek_guess(v, LC_SS, sp, n, &val))
            return -1;
        break;
    }
    case LCX_GUESS_REG:
        val = lcr_reg_get(v, cl->guess_reg, n);
        break;
    default:
        return -1;
    }
    *out = val & lcr_mask(n);
    return 0;
}

int lcx_trace_follow(lcx_trace *t, lcx_insn *x, unsigned n, uint64_t *next)
{
    const lcd_insn *d = &x->d;
    uint64_t tgt = 0, ret = 0;
    int ok = 0, guess = 0;

    /* Back at the speculatively followed branch: its loop closed. */
    if (t->spec && n - 1 > t->spec_idx &&
        x->rip == t->out->insn[t->spec_idx].rip)
        t->spec = 0;
    if (d->info.cflow == LC_CF_JCC_REL) {
        ok = cond_branch(t, x, n, next);
        track(t, x);
        return ok;
    }
    if (!t->follow) {
        not_followed(t, x, n);
        track(t, x);
        return 0;
    }
    switch (d->info.cflow) {
    case LC_CF_JMP_REL:
        /* A jump back into the cluster is a loop: section 6's (cflow.c). */
        ok = lcd_branch_target(&d->info, x->rip, &tgt) == LC_OK &&
             !in_trace(t->out, n, tgt) &&
             (tgt > x->rip || t->in->cfg->cflow == LC_CFLOW_M3);
        break;
    case LC_CF_JMP_IND:
        ok = guess = lcx_values_target(t, x, &tgt);
        break;
    case LC_CF_CALL_REL:
    case LC_CF_CALL_IND:
        ret = (x->rip + d->info.length) &
              lcr_mask(d->info.operand_bits / 8);
        ok = t->sv.depth < LCX_MAX_DEPTH &&
             (d->info.cflow == LC_CF_CALL_REL
                  ? lcd_branch_target(&d->info, x->rip, &tgt) == LC_OK
                  : lcx_values_target(t, x, &tgt));
        if (ok)
            t->sv.ret[t->sv.depth++] = ret;
        guess = d->info.cflow == LC_CF_CALL_IND;
        break;
    case LC_CF_RET:
        if (t->sv.depth > 0) {
            tgt = t->sv.ret[--t->sv.depth];
            ok = 1;
        } else {
            /* The slot at rSP: what a PUSH of the walk stored there, or
             * the guest's stack at the exit (values.c). */
            ok = guess = lcx_values_stack(t, t->sv.rsp_delta,
                                          d->info.operand_bits / 8, &tgt);
        }
        break;
    default:
        break;
    }
    if (!ok)
        not_followed(t, x, n);
    /* Before track(): a RET's slot is at the rSP before it. */
    if (ok && guess)
        note_guess(t, x, tgt);
    track(t, x);
    if (!ok)
        return 0;
    x->follow = 1;
    *next = tgt;
    return 1;
}
