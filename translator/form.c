/* SPDX-License-Identifier: MIT */
/*
 * translator/form.c: cluster formation, the top level.
 *
 * Implements Agesen et al., Software Techniques for Avoiding Hardware
 * Virtualization Exits, USENIX ATC 2012, sections 3-6 by driving one file
 * per section (form.h):
 * 1. Decode ahead (form_static.c, section 4): the whole window with static
 *    clusters, else only the exiting instruction and a possible pair's
 *    second store (single-exit translations).
 * 2. Mark exiting instructions: strongly exiting ones always (static
 *    clusters, s4); weakly exiting ones when the exit-tracking table has
 *    seen them exit (dynamic clusters, s5: the predictor hookup below);
 *    the second store of an exit pair (pair.c, s3).
 * 3. Choose the end (form_static.c and cflow.c, s4 and s6), then record
 *    the runs of inline gap fillers for lcx_run().
 */
#include <string.h>

#include "../runtime/alu.h"
#include "form.h"

/* Translation-time specialization: a register-only gap filler whose
 * runtime row (runtime/exec.c, lcr_op_rows) names an inline fast path,
 * with full GPR operands (no AH..BH), gets a compact descriptor that
 * lcx_run() executes without the runtime's dispatch ("each operation with
 * its handler chosen and its operands ... resolved at translation
 * time"). The operation and whether it stores come from that row. */
static void specialize(lcx_insn *x)
{
    const lcd_insn *d = &x->d;
    const lcd_opnd *o0 = &d->opnd[0], *o1 = &d->opnd[1];
    const lcr_op_row *row = &lcr_op_rows[d->info.op];
    lcx_fastop *f = &x->fast;

    memset(f, 0, sizeof(*f));
    if (row->fast == LCR_FAST_NONE ||
        d->info.exit_class != LC_CLASS_GAP_FILLER || d->info.lock ||
        d->nopnds != 2 || o0->kind != LCD_OPND_REG ||
        o0->reg.cls != LCD_REG_GPR ||
        !(o1->kind == LCD_OPND_IMM ||
          (o1->kind == LCD_OPND_REG && o1->reg.cls == LCD_REG_GPR &&
           o1->bytes == o0->bytes)))
        return;
    f->kind = row->fast;
    f->binop = row->fast == LCR_FAST_ALU ? row->alu : 0;
    f->store = row->fast == LCR_FAST_MOV || (row->flags & LCR_ROW_STORE);
    f->bytes = o0->bytes;
    f->dst = o0->reg.num;
    f->len = d->info.length;
    if (o1->kind == LCD_OPND_IMM) {
        f->src = 0xff;
        f->imm = lcr_sext(o1->imm, o1->bytes) & lcr_mask(o0->bytes);
    } else {
        f->src = o1->reg.num;
    }
}

/* Step 2: which instructions exit. The first one did (unless the VMM
 * already completed it and the cluster starts after it); strongly exiting
 * ones always do; weakly exiting ones as the predictor says (dynamic
 * clusters, section 5). */
static void mark_exiting(const lcx_form_in *in, lcx_cluster *out, unsigned n,
                         int first_exiting)
{
    const lc_config *cfg = in->cfg;

    for (unsigned i = 0; i < n; i++) {
        lcx_insn *x = &out->insn[i];
        lc_exit_class k = x->d.info.exit_class;

        if (i == 0 && first_exiting) {
            x->exiting = 1;
            x->props = in->first_pred;
        } else if (k == LC_CLASS_STRONG) {
            x->exiting = 1;
        } else if (k == LC_CLASS_WEAK && in->predict &&
                   (cfg->techniques & LC_TECH_DYNAMIC)) {
            x->props = in->predict(in->predict_ctx, x->rip, &x->d);
            x->exiting = x->props != 0;
        }
    }
    lcx_pair_mark(out, n, cfg, first_exiting);
    /* Section 5: an access the table has seen going to a device gets a
     * route, learned on its first run, so later runs go straight to the
     * device without the VMM's address lookup. */
    for (unsigned i = 0; i < n; i++)
        if (out->insn[i].exiting && (out->insn[i].props & LCX_PRED_DEVICE) &&
            out->insn[i].d.info.exit_class == LC_CLASS_WEAK)
            out->insn[i].routed = 1;
}

/* Does x run in a chain (fast_run) through the runtime's inline form for
 * it, without the run loop: one that reaches only RAM (lcx_insn.ram_fn:
 * a MOV between a register and RAM, a PUSH, POP, near CALL or RET whose
 * slot the page-walk cache serves)? Not a routed or an exiting access:
 * it goes to a device, whose callback may end the run. */
static int batched(const lcx_insn *x)
{
    return x->ram_fn && !x->routed && !x->exiting;
}

/* Step 3's bookkeeping once the end `last` is chosen: targets beyond it
 * are outside (taken ends the run), the exit count, and the straight runs
 * of inline gap fillers lcx_run() executes back to back. */
static void finish(lcx_cluster *out, unsigned last)
{
    out->ninsn = (uint16_t)(last + 1);
    for (unsigned i = 0; i < out->ninsn; i++) {
        out->insn[i].inl = (uint8_t)lcr_inline_kind(&out->insn[i].d);
        out->insn[i].ram_fn = lcr_inline_ram_fn_at(out->insn[i].inl,
                                                   out->mode,
                                                   &out->insn[i].d,
                                                   out->insn[i].rip);
        if (out->insn[i].target != LCX_NO_TARGET &&
            out->insn[i].target >= out->ninsn)
            out->insn[i].target = LCX_NO_TARGET;
        if (out->insn[i].exiting)
            out->nexits++;
        if (!out->stack && out->insn[i].ram_fn &&
            out->insn[i].inl >= LCR_INL_CALL_REL &&
            out->insn[i].inl <= LCR_INL_POP)
            out->stack = out->insn[i].inl == LCR_INL_RET ||
                                 out->insn[i].inl == LCR_INL_POP ? 1 : 2;
    }
    for (unsigned i = out->ninsn; i-- > 0;) {
        lcx_insn *x = &out->insn[i];
        if (x->fast.kind == LCR_FAST_NONE && !batched(x))
            continue;
        x->fast_run = 1;
        /* A chain runs on through code that falls through, and through a
         * CALL or RET the cluster follows to the next one listed (the
         * run checks RIP after each of those). The list may go on
         * elsewhere (a line resumed at a branch target, calls.c), and a
         * register gap filler does not check RIP. */
        if (i + 1 < out->ninsn && out->insn[i + 1].fast_run &&
            (out->insn[i + 1].rip == x->rip + x->d.info.length ||
             x->follow) &&
            !out->insn[i + 1].irq_check && out->insn[i + 1].fast_run < 255)
            x->fast_run = (uint8_t)(out->insn[i + 1].fast_run + 1);
    }
    /* Decided here once: a translation of one instruction with an inline
     * form runs it without the run loop (lcx_run()). */
    out->solo = out->ninsn == 1 && out->insn[0].inl && !out->insn[0].routed &&
                out->insn[0].target == LCX_NO_TARGET;
    out->end_rip = out->insn[last].rip + out->insn[last].d.info.length;
    /* Each code range covers its included instructions (calls.c): the
     * coherency check and the SMC watch are over exactly those bytes. */
    for (unsigned k = 0; k < out->nrange; k++)
        out->range[k].len = 0;
    for (unsigned i = 0; i < out->ninsn; i++) {
        const lcx_insn *x = &out->insn[i];
        lcx_range *r = &out->range[x->range];
        uint64_t end = x->rip + x->d.info.length - r->rip;

        if (end > r->len)
            r->len = (uint16_t)end;
    }
    out->nbytes = out->range[0].len;
}

lc_status lcx_form(const lcx_form_in *in, lcx_cluster *out)
{
    const lc_config *cfg = in->cfg;
    unsigned window = lcx_window(cfg), n, last;
    int first_exiting = !in->first_done;
    int statics = (cfg->techniques & LC_TECH_STATIC) != 0;
    size_t seen;
    lc_status err;

    memset(out, 0, offsetof(lcx_cluster, insn));
    out->rip = in->rip;
    out->mode = in->mode;
    out->cflow = cfg->cflow;
    out->first_done = (uint8_t)in->first_done;
    /* Without static clusters only the exiting instruction and a pair's
     * second store can run: decode no further (and an empty translation
     * then covers only those bytes). */
    if (!statics)
        window = 2;

    /* 1. Decode ahead. With nothing worth running, out describes an empty
     * translation: ninsn 0, covering the `seen` bytes that made it empty
     * (the terminator's included). */
    n = lcx_static_decode(in, out, window, &seen, &err);
    if (err != LC_OK)
        return err;
    out->nbytes = (uint16_t)seen;
    out->end_rip = in->rip;
    /* An empty translation covers what made it empty, in its first range
     * only (others are dropped: nothing runs from them). */
    out->range[0].len = out->nbytes;
    if (n == 0) {
        out->nrange = 1;
        return LC_ERR_UNSUPPORTED;
    }
    for (unsigned i = 0; i < n; i++)
        specialize(&out->insn[i]);

    /* 2. Exiting instructions. */
    mark_exiting(in, out, n, first_exiting);

    /* 3. Choose the end. */
    last = first_exiting ? 0 : (unsigned)-1;
    if (statics) {
        last = lcx_static_end(out, n, cfg, first_exiting, last);
    } else {
        /* Single-exit translations (and pairs, s3). */
        if (!first_exiting)
            { out->nrange = 1; return LC_ERR_UNSUPPORTED; }
        last = out->pair ? 1 : 0;
    }
    /* The instruction in an interrupt shadow runs with the one that opens
     * it (runtime/exec.c): include it, so that coherency and the SMC watch
     * cover it; without it decoded, end before the opener. */
    if (last != (unsigned)-1 && lcr_opens_shadow(&out->insn[last].d)) {
        if (last + 1 < n)
            last++;
        else if (statics && last > 0)
            last = lcx_static_end(out, last, cfg, first_exiting,
                                  first_exiting ? 0 : (unsigned)-1);
    }
    if (last == (unsigned)-1) {
        out->nrange = 1;
        return LC_ERR_UNSUPPORTED;   /* nothing worth running */
    }
    finish(out, last);
    return LC_OK;
}
