/* SPDX-License-Identifier: MIT */
/*
 * translator/form.c: cluster formation.
 *
 * 1. Decode ahead up to max_cluster_insns instructions (section 4: 16),
 *    stopping at a terminator, an undecodable or truncated instruction,
 *    or after an unconditional transfer.
 * 2. Mark exiting instructions: strongly exiting ones always (static
 *    clusters, s4); weakly exiting ones when the exit-tracking table has
 *    seen them exit (dynamic clusters, s5); the second store of an exit
 *    pair (s3).
 * 3. Walk forward keeping the last index the cluster may end at: an
 *    exiting instruction, or an allowed backedge (s6.3). Stop the walk
 *    when more than max_mem_gap_fillers memory-accessing gap fillers
 *    separate two exiting instructions (s4), or at a branch the chosen
 *    control-flow method cannot include (s6).
 */
#include <string.h>

#include "../runtime/alu.h"
#include "translator.h"

/* Translation-time specialization: a register-only ALU or MOV with full
 * GPR operands (no AH..BH) gets a compact descriptor that lcx_run()
 * executes inline (DESIGN.md: "each operation with its handler chosen and
 * its operands ... resolved at translation time"). */
static void specialize(lcx_insn *x)
{
    const lcd_insn *d = &x->d;
    const lcd_opnd *o0 = &d->opnd[0], *o1 = &d->opnd[1];
    lcx_fastop *f = &x->fast;
    int binop = -1, store = 1;

    memset(f, 0, sizeof(*f));
    if (d->info.exit_class != LC_CLASS_GAP_FILLER || d->info.lock ||
        d->nopnds != 2 || o0->kind != LCD_OPND_REG ||
        o0->reg.cls != LCD_REG_GPR ||
        !(o1->kind == LCD_OPND_IMM ||
          (o1->kind == LCD_OPND_REG && o1->reg.cls == LCD_REG_GPR &&
           o1->bytes == o0->bytes)))
        return;
    switch (d->info.op) {
    case LC_OP_ADD: binop = LCR_ADD; break;
    case LC_OP_ADC: binop = LCR_ADC; break;
    case LC_OP_SUB: binop = LCR_SUB; break;
    case LC_OP_SBB: binop = LCR_SBB; break;
    case LC_OP_AND: binop = LCR_AND; break;
    case LC_OP_OR:  binop = LCR_OR; break;
    case LC_OP_XOR: binop = LCR_XOR; break;
    case LC_OP_CMP: binop = LCR_SUB; store = 0; break;
    case LC_OP_TEST: binop = LCR_AND; store = 0; break;
    case LC_OP_MOV: break;
    default: return;
    }
    f->kind = binop < 0 ? LCX_FAST_MOV : LCX_FAST_ALU;
    f->binop = (uint8_t)(binop < 0 ? 0 : binop);
    f->store = (uint8_t)store;
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

static int is_branch(const lcd_insn *d)
{
    return d->info.cflow == LC_CF_JMP_REL || d->info.cflow == LC_CF_JCC_REL ||
           d->info.cflow == LC_CF_JMP_IND;
}

static int ends_linear(const lcd_insn *d)
{
    /* Nothing after these is reached by falling through. */
    return d->info.cflow == LC_CF_JMP_REL || d->info.cflow == LC_CF_JMP_IND ||
           d->info.cflow == LC_CF_HALT;
}

/* Absolute address form of a memory operand, for pair detection: equal
 * `key` and a displacement difference are all that matters. */
static int same_form(const lcd_mem *a, const lcd_mem *b)
{
    return a->seg == b->seg && a->base.cls == b->base.cls &&
           a->base.num == b->base.num && a->index.cls == b->index.cls &&
           a->index.num == b->index.num && a->scale == b->scale &&
           a->addr_bytes == b->addr_bytes && a->bytes == b->bytes;
}

int lcx_is_pair(const lcd_insn *a, const lcd_insn *b)
{
    int64_t da, db, w;

    if (a->info.op != LC_OP_MOV || b->info.op != LC_OP_MOV ||
        !a->mem.present || !b->mem.present || a->mem.agen || b->mem.agen ||
        !a->mem.write || a->mem.read || !b->mem.write || b->mem.read)
        return 0;
    if (!same_form(&a->mem, &b->mem) || a->mem.bytes > 4)
        return 0;
    w = a->mem.bytes;
    da = a->mem.disp;
    db = b->mem.disp;
    /* RIP-relative displacements count from the end of each instruction:
     * b starts where a ends, so b's address is db + len(a) + len(b)
     * relative to a's end, against da + len(a)... both relative to a's
     * start: */
    if (a->mem.base.cls == LCD_REG_IP) {
        da += a->info.length;
        db += a->info.length + b->info.length;
    }
    return db - da == w || da - db == w;
}

/* The straight run from instruction `t` up to the first control-flow
 * instruction: does it reach an exiting instruction, and a strongly
 * exiting one? (section 6.3: "the straight list of instructions starting
 * from its target up to the first control-flow instruction encounters ...
 * an exiting instruction"). */
static enum lcx_backedge loop_kind(const lcx_cluster *c, unsigned t,
                                   unsigned branch)
{
    enum lcx_backedge k = LCX_BE_NONE;

    for (unsigned i = t; i <= branch; i++) {
        const lcx_insn *x = &c->insn[i];
        if (x->exiting) {
            if (x->d.info.exit_class == LC_CLASS_STRONG)
                return LCX_BE_STRONG;
            k = LCX_BE_WEAK;
        }
        if (i != branch && is_branch(&x->d))
            break;
    }
    return k;
}

static int index_of(const lcx_cluster *c, unsigned n, uint64_t rip)
{
    for (unsigned i = 0; i < n; i++)
        if (c->insn[i].rip == rip)
            return (int)i;
    return -1;
}

lc_status lcx_form(const lcx_form_in *in, lcx_cluster *out)
{
    const lc_config *cfg = in->cfg;
    unsigned window = cfg->max_cluster_insns, n = 0, last, mem_gap = 0;
    size_t off = 0;
    int first_exiting = !in->first_done;
    int statics = (cfg->techniques & LC_TECH_STATIC) != 0;

    memset(out, 0, offsetof(lcx_cluster, insn));
    out->rip = in->rip;
    out->mode = in->mode;
    out->cflow = cfg->cflow;
    out->first_done = (uint8_t)in->first_done;
    if (window > LCX_MAX_INSNS)
        window = LCX_MAX_INSNS;
    /* Without static clusters only the exiting instruction and a pair's
     * second store can run: decode no further (and an empty translation
     * then covers only those bytes). */
    if (!statics)
        window = 2;

    /* 1. Decode ahead. `seen` counts the bytes the decision depends on
     * (the terminator's included), for an empty translation below. */
    size_t seen = 0;
    while (n < window && off < in->code_len) {
        lcx_insn *x = &out->insn[n];
        lc_status st;

        memset(x, 0, sizeof(*x));
        st = lcd_decode(in->mode, in->code + off, in->code_len - off, &x->d);
        if (st != LC_OK) {
            if (n == 0)
                return st;
            break;
        }
        seen = off + x->d.info.length;
        if (x->d.info.exit_class == LC_CLASS_TERMINATOR)
            break;
        specialize(x);
        x->rip = in->rip + off;
        x->target = LCX_NO_TARGET;
        off += x->d.info.length;
        n++;
        if (ends_linear(&x->d))
            break;
    }
    /* With nothing worth running, out describes an empty translation:
     * ninsn 0, covering the `seen` bytes that made it empty. */
    out->nbytes = (uint16_t)seen;
    out->end_rip = in->rip;
    if (n == 0)
        return LC_ERR_UNSUPPORTED;

    /* 2. Exiting instructions. The first one exited (unless the VMM
     * already completed it and we start after it). */
    for (unsigned i = 0; i < n; i++) {
        lcx_insn *x = &out->insn[i];
        lc_exit_class k = x->d.info.exit_class;

        if (i == 0 && first_exiting) {
            x->exiting = 1;
            x->props = in->first_pred;
        }
        else if (k == LC_CLASS_STRONG)
            x->exiting = 1;
        else if (k == LC_CLASS_WEAK && in->predict &&
                 (cfg->techniques & LC_TECH_DYNAMIC))
            x->exiting = (x->props = in->predict(in->predict_ctx, x->rip,
                                                 &x->d)) != 0;
    }
    if (first_exiting && n >= 2 && (cfg->techniques & LC_TECH_PAIRS) &&
        out->insn[0].d.info.exit_class == LC_CLASS_WEAK &&
        lcx_is_pair(&out->insn[0].d, &out->insn[1].d)) {
        out->insn[1].exiting = 1;
        out->pair = 1;
    }

    /* Section 5: an access the table has seen going to a device gets a
     * route, learned on its first run, so later runs go straight to the
     * device without the VMM's address lookup. */
    for (unsigned i = 0; i < n; i++)
        if (out->insn[i].exiting && (out->insn[i].props & LCX_PRED_DEVICE) &&
            out->insn[i].d.info.exit_class == LC_CLASS_WEAK)
            out->insn[i].routed = 1;

    /* 3. Choose the end. */
    last = first_exiting ? 0 : (unsigned)-1;
    if (!statics) {
        /* Single-exit translations (and pairs, s3). */
        n = out->pair ? 2 : 1;
        last = out->pair ? 1 : 0;
        if (!first_exiting)
            return LC_ERR_UNSUPPORTED;
    } else {
        for (unsigned i = first_exiting ? 1 : 0; i < n; i++) {
            lcx_insn *x = &out->insn[i];

            if (x->exiting) {
                last = i;
                mem_gap = 0;
            } else if (x->d.info.has_mem && ++mem_gap > cfg->max_mem_gap_fillers) {
                break;
            }
            if (!is_branch(&x->d))
                continue;
            if (cfg->cflow == LC_CFLOW_NONE)
                break;                       /* end before any branch */
            if (x->d.info.cflow == LC_CF_JMP_IND)
                continue;                    /* target unknown: taken ends */
            {
                uint64_t t;
                lc_insn_info ii = x->d.info;
                int ti;
                if (lcd_branch_target(&ii, x->rip, &t) != LC_OK)
                    continue;
                ti = index_of(out, n, t);
                if (ti < 0)
                    continue;                /* leaves the cluster: ends */
                if ((unsigned)ti > i && cfg->cflow >= LC_CFLOW_M2) {
                    x->target = (uint8_t)ti;
                } else if ((unsigned)ti <= i && cfg->cflow == LC_CFLOW_M3) {
                    enum lcx_backedge k = loop_kind(out, (unsigned)ti, i);
                    if (k != LCX_BE_NONE) {
                        x->target = (uint8_t)ti;
                        x->backedge = (uint8_t)k;
                        /* Each iteration checks for interrupts at the loop
                         * head (s6.3). */
                        out->insn[ti].irq_check = 1;
                        /* A cluster may end in a backedge (s6.3). */
                        last = i;
                    }
                }
            }
        }
    }
    if (last == (unsigned)-1)
        return LC_ERR_UNSUPPORTED;   /* nothing worth running */

    /* A forward target beyond the end is outside: taken ends the run. */
    out->ninsn = (uint16_t)(last + 1);
    for (unsigned i = 0; i < out->ninsn; i++) {
        if (out->insn[i].target != LCX_NO_TARGET &&
            out->insn[i].target >= out->ninsn)
            out->insn[i].target = LCX_NO_TARGET;
        if (out->insn[i].exiting)
            out->nexits++;
    }
    /* Runs of inline gap fillers, executed back to back by lcx_run(). */
    for (unsigned i = out->ninsn; i-- > 0;) {
        lcx_insn *x = &out->insn[i];
        if (x->fast.kind == LCX_FAST_NONE)
            continue;
        x->fast_run = 1;
        if (i + 1 < out->ninsn && out->insn[i + 1].fast_run &&
            !out->insn[i + 1].irq_check && out->insn[i + 1].fast_run < 255)
            x->fast_run = (uint8_t)(out->insn[i + 1].fast_run + 1);
    }
    out->end_rip = out->insn[last].rip + out->insn[last].d.info.length;
    out->nbytes = (uint16_t)(out->end_rip - out->rip);
    return LC_OK;
}
