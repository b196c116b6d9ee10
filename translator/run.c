/* SPDX-License-Identifier: MIT */
/*
 * translator/run.c: running a formed cluster.
 *
 * The runtime keeps RIP exact after every instruction, so "where next" is
 * decided from RIP: the next instruction in the cluster (fall through),
 * an in-cluster target the translator allowed (forward branch, method 2;
 * backedge, method 3), or anything else, which ends the run with the guest
 * resuming at that RIP (a taken branch leaving the cluster, method 1).
 */
#include "../runtime/alu.h"
#include "form.h"

/* Lazy flags for the inline path: an ALU gap filler records its
 * operation and operands; the status flags are computed only when
 * something may read them (any instruction run by the runtime, ADC/SBB
 * needing CF, the end of the run). A chain of ALU gap fillers computes
 * them once. MOV leaves a pending computation alone (it writes no flags). */
typedef struct lazy_flags {
    uint8_t  pending;
    uint8_t  binop;
    uint8_t  bytes;
    uint8_t  cf_in;
    uint64_t a, b;
} lazy_flags;

static void materialize(lazy_flags *lz, lc_cpu_state *s)
{
    uint64_t fl;

    if (!lz->pending)
        return;
    fl = (s->rflags & ~LC_RFLAGS_CF) | (lz->cf_in ? LC_RFLAGS_CF : 0);
    lcr_alu_bin((enum lcr_binop)lz->binop, lz->bytes, lz->a, lz->b, &fl);
    s->rflags = (s->rflags & ~LCR_FL_STATUS) | (fl & LCR_FL_STATUS);
    lz->pending = 0;
}

/* Inline execution of a specialized register-only gap filler: the same
 * semantics as the runtime's ALU and MOV (runtime/exec.c), without its
 * dispatch. 32-bit writes zero-extend; 8/16-bit writes merge. */
static void run_fast(const lcx_fastop *f, lcr_vcpu *v, lazy_flags *lz)
{
    lc_cpu_state *s = v->st;
    uint64_t m = lcr_mask(f->bytes);
    uint64_t b = f->src == 0xff ? f->imm : s->gpr[f->src] & m;
    uint64_t *d = &s->gpr[f->dst];
    uint64_t r = b;

    if (f->kind == LCR_FAST_ALU) {
        uint64_t a = *d & m, cf = 0;
        if (f->binop == LCR_ADC || f->binop == LCR_SBB) {
            materialize(lz, s);
            cf = (s->rflags & LC_RFLAGS_CF) ? 1 : 0;
        }
        r = lcr_alu_result(f->binop, a, b, cf, m);
        lz->pending = 1;
        lz->binop = f->binop;
        lz->bytes = f->bytes;
        lz->cf_in = (uint8_t)cf;
        lz->a = a;
        lz->b = b;
        v->dirty |= LC_DIRTY_RFLAGS;
    }
    if (f->store) {             /* MOV, and ALU but CMP/TEST */
        *d = lcr_gpr_write(*d, f->bytes, r);
        v->dirty |= LC_DIRTY_GPRS;
    }
    s->rip += f->len;
    v->insns++;
    v->dirty |= LC_DIRTY_RIP;
}

/* Instruction x through the runtime's dispatcher (lcr_exec()), flags
 * computed first: 1 when it completed and the run may go on; 0 when the
 * run ends there, v->stop saying why (a fault or a refusal before it;
 * SMC or HLT after it, completed). Out of line: the dispatcher costs far
 * more than the call, and the run loop's inline cases keep a small
 * frame. */
static __attribute__((noinline))
int run_full(lcx_insn *x, lcr_vcpu *v, lazy_flags *lz)
{
    materialize(lz, v->st);
    v->route = x->routed ? &x->route : NULL;
    return lcr_exec(v, &x->d) == LCR_DONE && v->stop == LC_STOP_NONE;
}

static inline __attribute__((always_inline)) lc_stop_reason run_loop(lcx_cluster *cl, lcr_vcpu *v,
                               uint32_t weak_backedge_cap, unsigned start,
                               lazy_flags *lz);

/* The run leaves at x (index i). A CALL, RET or JMP the cluster followed
 * (calls.c) whose target is not the one predicted missed its guard, an
 * inline cache's miss: count it. Reaching the end of the cluster resets
 * the count. The engine re-forms a translation whose guard keeps missing
 * (LCX_RELINK_MISSES in a row), with the state of that exit: a RET
 * predicted for the caller that made the site hot, while the accessor is
 * now called from another, re-links to the new caller. */
static void guard_note(lcx_cluster *cl, unsigned i, const lcx_insn *x)
{
    if (i + 1 >= cl->ninsn)
        cl->guard_misses = 0;
    else if (x->follow && cl->guard_misses < 255)
        cl->guard_misses++;
}

lc_stop_reason lcx_run(lcx_cluster *cl, lcr_vcpu *v,
                       uint32_t weak_backedge_cap, unsigned start)
{
    lazy_flags lz = { 0 };
    lc_stop_reason stop;

    /* A new run: nothing is forwarded from a store of the one before
     * (the engine looked between them, runtime/rt.h) */
    lcr_fwd_forget(v);

    /* Most translations are one exiting instruction with nothing worth
     * running around it (section 2's single-exit translation): when it
     * has an inline form (an IN or OUT, a MOV to or from RAM; cl->solo,
     * decided at formation), it runs as the loop below would run it,
     * without the loop's set-up: no flags pending before or after, no
     * interrupt check on entry, no target to go on to; reaching the end
     * resets the guard count (guard_note()). A decline changes nothing,
     * and the instruction goes through lcr_exec() as in the loop, without
     * a second try of the inline form (a declined MOV to a device may
     * have asked the VMM's gpa_map already). */
    if (cl->solo && start == 0) {
        lcx_insn *x = &cl->insn[0];
        int r;

        v->irq_check = 0;
        v->route = NULL;
        r = lcr_exec_inline(v, &x->d, x->inl, x->ram_fn);
        if (r < 0)
            return v->stop;             /* the device refused */
        if (r == 0 && !run_full(x, v, &lz))
            return v->stop;
        cl->guard_misses = 0;
        return LC_STOP_END;
    }
    stop = run_loop(cl, v, weak_backedge_cap, start, &lz);

    materialize(&lz, v->st);
    return stop;
}

static inline __attribute__((always_inline)) lc_stop_reason run_loop(lcx_cluster *cl, lcr_vcpu *v,
                               uint32_t weak_backedge_cap, unsigned start,
                               lazy_flags *lz)
{
    unsigned weak = 0;
    int first = 1;
    /* Single-stepping: every instruction goes through lcr_exec(), which
     * leaves it to the CPU. Nothing in a cluster can change TF. */
    int tf = (v->st->rflags & LC_RFLAGS_TF) != 0;
    /* Pointers, not indices: an lcx_insn is large, and an index costs a
     * multiplication at every step. */
    lcx_insn *x, *end = &cl->insn[cl->ninsn];

    if (start >= cl->ninsn)
        return LC_STOP_END;
    x = &cl->insn[start];
    /* Section 3 (pair.c): deliver an exit pair as one double-width access
     * when the VMM takes that width (else the two stores run one by one,
     * still without a second exit). */
    if (start == 0 && cl->pair) {
        int done = 0;
        lc_stop_reason why = LC_STOP_NONE;

        if (lcx_pair_run(cl, v, &done, &why) == 0) {
            if (done)
                return why;
            x = &cl->insn[2];
            first = 0;
        }
    }

    for (;;) {
        lcx_insn *t;
        uint64_t rip;
        int inl;

        /* Interrupt checks at loop heads, except on entry: the guest has
         * just exited there with interrupts as they are. */
        v->irq_check = (uint8_t)(x->irq_check && !first);
        first = 0;
        if (x->fast_run && !v->irq_check && !tf &&
            v->insns + x->fast_run <= v->insn_budget) {
            /* A chain (form.c): register gap fillers and the runtime's
             * inline forms that reach only RAM, no loop head among them,
             * the budget and TF checked for all at once. RIP falls
             * through each, or a CALL or RET the cluster follows goes to
             * the next listed: checked after each inline form. One that
             * declines runs through lcr_exec() (it may fault); one whose
             * guard missed is done, and the run leaves below. */
            lcx_insn *last = x + x->fast_run - 1;
            int r = 1;

            v->route = NULL;
            for (;; x++) {
                if (x->fast.kind != LCR_FAST_NONE) {
                    run_fast(&x->fast, v, lz);
                } else {
                    r = x->ram_fn(v, &x->d);
                    if (!r || (x != last && v->st->rip != x[1].rip))
                        break;
                }
                if (x == last)
                    break;
            }
            if (r == 0 && !run_full(x, v, lz))
                return v->stop;
        } else if (x->inl && !v->irq_check && !x->routed &&
                   (v->route = NULL,
                    (inl = lcr_exec_inline(v, &x->d, x->inl,
                                           x->ram_fn)) != 0)) {
            /* An IN or OUT; a MOV to or from RAM, a CALL, RET, PUSH or
             * POP with its slot in RAM the page-walk cache answers for
             * (section 11) where no chain runs it (a loop head, an
             * exiting one): no dispatch, no walk. None reads or writes
             * the flags: a lazy computation stays pending. */
            if (inl < 0)
                return v->stop;         /* the device refused */
        } else if (!run_full(x, v, lz)) {
            return v->stop;
        }
        rip = v->st->rip;
        if (x + 1 < end && rip == x[1].rip) {
            x++;
            continue;
        }
        t = x->target == LCX_NO_TARGET ? NULL : &cl->insn[x->target];
        if (!t || rip != t->rip) {
            guard_note(cl, (unsigned)(x - cl->insn), x);
            return LC_STOP_END;           /* fell off the end, or left */
        }
        if (t <= x) {
            if (x->backedge == LCX_BE_WEAK && ++weak > weak_backedge_cap)
                return LC_STOP_BACKEDGES;
            if (x->backedge == LCX_BE_NONE)
                return LC_STOP_END;
        }
        x = t;
    }
}
