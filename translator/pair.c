/* SPDX-License-Identifier: MIT */
/*
 * translator/pair.c: exit pairs.
 *
 * Implements Agesen et al., Software Techniques for Avoiding Hardware
 * Virtualization Exits, USENIX ATC 2012, section 3: two stores to
 * adjacent locations through the same addressing form, one right after
 * the other, are a 64-bit value written as two 32-bit halves (or a 32-bit
 * one as two 16-bit halves). The first exits; the translation runs the
 * second with it, and when the VMM takes the doubled width
 * (lc_vm_ops.accepts_wide) delivers both as one access, which is what the
 * device model wanted to see.
 */
#include <string.h>

#include "form.h"

/* Absolute address form of a memory operand, for pair detection: equal
 * forms and a displacement difference are all that matters. */
static int same_form(const lcd_mem *a, const lcd_mem *b)
{
    return a->seg == b->seg && a->base.cls == b->base.cls &&
           a->base.num == b->base.num && a->index.cls == b->index.cls &&
           a->index.num == b->index.num && a->scale == b->scale &&
           a->addr_bytes == b->addr_bytes && a->bytes == b->bytes;
}

int lcx_is_pair(const lcd_insn *a, const lcd_insn *b)
{
    uint64_t da, db, w;

    if (a->info.op != LC_OP_MOV || b->info.op != LC_OP_MOV ||
        !a->mem.present || !b->mem.present || a->mem.agen || b->mem.agen ||
        !a->mem.write || a->mem.read || !b->mem.write || b->mem.read)
        return 0;
    if (!same_form(&a->mem, &b->mem) || a->mem.bytes > 4)
        return 0;
    /* Unsigned: a 64-bit moffs displacement (mov [moffs64], eax) can be
     * anything, and a signed difference of two of them overflows.
     * Modulo 2^64 is also how the addresses themselves wrap. */
    w = a->mem.bytes;
    da = (uint64_t)a->mem.disp;
    db = (uint64_t)b->mem.disp;
    /* RIP-relative displacements count from the end of each instruction:
     * b starts where a ends, so relative to a's start a's address is
     * da + len(a) and b's db + len(a) + len(b). */
    if (a->mem.base.cls == LCD_REG_IP) {
        da += a->info.length;
        db += a->info.length + b->info.length;
    }
    return db - da == w || da - db == w;
}

void lcx_pair_mark(lcx_cluster *out, unsigned n, const lc_config *cfg,
                   int first_exiting)
{
    if (first_exiting && n >= 2 && (cfg->techniques & LC_TECH_PAIRS) &&
        out->insn[0].d.info.exit_class == LC_CLASS_WEAK &&
        lcx_is_pair(&out->insn[0].d, &out->insn[1].d)) {
        out->insn[1].exiting = 1;
        out->pair = 1;
    }
}

/* Execute two adjacent stores `a`, `b` (b right after a; lcx_is_pair()
 * holds) as one store of twice the width, delivered to the VMM as one
 * access. LCR_DONE with both completed and RIP after b; LCR_STOP as
 * lcr_exec(); or -1 with nothing done when the two addresses turn out not
 * to be adjacent and aligned at run time, or the VMM refuses the merged
 * store (the caller then runs them one by one). */
static int exec_pair(lcr_vcpu *v, const lcd_insn *a, const lcd_insn *b)
{
    lc_cpu_state *s = v->st;
    unsigned w = a->mem.bytes;
    uint64_t ea_a, ea_b, lo, va, vb;
    uint8_t buf[16];
    lcr_xlat x;

    if (w == 0 || w > 4 || b->mem.bytes != w || a->mem.seg != b->mem.seg ||
        a->info.exit_class == LC_CLASS_TERMINATOR ||
        b->info.exit_class == LC_CLASS_TERMINATOR)
        return -1;
    lcr_insn_begin(v);
    if (v->insns + 2 > v->insn_budget || (s->rflags & LC_RFLAGS_TF))
        return -1;
    ea_a = lcr_eff_addr(v, a, s->rip, 0);
    ea_b = lcr_eff_addr(v, b, s->rip + a->info.length, 0);
    lo = ea_a < ea_b ? ea_a : ea_b;
    /* One naturally aligned double-width store, or nothing merged. */
    if ((ea_a > ea_b ? ea_a - ea_b : ea_b - ea_a) != w || (lo & (2 * w - 1)))
        return -1;
    if (lcr_mem_xlat(v, a->mem.seg, lo, 2 * w, LCR_ACC_WRITE, &x) < 0)
        return LCR_STOP;
    /* The stored values: MOV m, r or MOV m, imm (lcx_is_pair). */
    va = lcr_src_value(v, &a->opnd[1]);
    vb = lcr_src_value(v, &b->opnd[1]);
    memcpy(buf + (ea_a - lo), &va, w);
    memcpy(buf + (ea_b - lo), &vb, w);
    if (lcr_write(v, &x, buf) < 0) {
        /* The VMM refused the merged store (LC_CB_STOP, no error): it
         * refuses at an access's first piece (ops.h), so nothing was
         * done but the walk's A/D bits, which the guest's own stores set
         * too. Run the two one by one: it may take the narrow first. */
        if (v->stop == LC_STOP_CALLBACK && v->error == LC_OK) {
            lcr_stop_forget(v);
            return -1;
        }
        return LCR_STOP;
    }
    v->exits_done += 2;            /* two exiting instructions ran */
    v->exit_insns = v->insns + 1;
    s->rip += a->info.length + b->info.length;
    v->dirty |= LC_DIRTY_RIP;
    v->insns += 2;
    if (v->end_after)
        v->stop = v->end_after;     /* SMC, a new map */
    return LCR_DONE;
}

int lcx_pair_run(lcx_cluster *cl, lcr_vcpu *v, int *done,
                 lc_stop_reason *stop)
{
    int r;

    /* LC_WIDE_n is n: the merged store's width. */
    if (!cl->pair || cl->ninsn < 2 ||
        !(v->ops->accepts_wide & (2u * cl->insn[0].d.mem.bytes)))
        return -1;
    r = exec_pair(v, &cl->insn[0].d, &cl->insn[1].d);
    if (r < 0)
        return -1;
    *done = r == LCR_STOP || v->stop != LC_STOP_NONE || cl->ninsn == 2;
    *stop = v->stop != LC_STOP_NONE ? v->stop : LC_STOP_END;
    return 0;
}
