/* SPDX-License-Identifier: MIT */
/*
 * translator/values.c: the register values the walk across calls predicts.
 *
 * calls.c follows an indirect CALL or JMP to the target it would have if
 * the cluster ran now, and a RET to the return address on the stack
 * (Agesen et al., Software Techniques for Avoiding Hardware
 * Virtualization Exits, USENIX ATC 2012, section 11's clusters across
 * functions). The state at the exit is what the VMM handed over; but the
 * instructions the cluster runs before the transfer may change the
 * registers the transfer reads. Driver code does this all the time: a
 * poll calls its accessors through a table, `mov edi, [edi+0xfc]; call
 * [edi+4]`, after the first accessor returned (iPXE's PCnet poll, read
 * CSR0 then write it back through `priv->a->write_csr`). Read at the exit,
 * EDI still points at the private structure, and the pointer found at
 * [EDI+4] is not the accessor.
 *
 * So the walk carries a view of the general registers: at the exit all are
 * known (the exit's state); each instruction decoded updates it. MOV,
 * MOVZX/MOVSX, LEA, the register-zeroing idioms and ADD/SUB/AND/OR/XOR
 * with known operands compute their result; a load reads guest RAM now
 * (as calls.c reads a return address); POP takes what a PUSH of the walk
 * stored there, or the exit's stack. Any other write makes its register
 * unknown, and an instruction that may write registers it does not name
 * (MUL, CPUID, string instructions, ...) makes them all unknown. A
 * transfer through an unknown register or memory is not followed, as
 * before.
 *
 * All of this is only a prediction: memory may change before the run,
 * and a later exit may start the same translation with other registers.
 * run.c checks RIP after every instruction against the next one in the
 * cluster (an inline cache's guard), so a wrong prediction ends the run
 * after the transfer, its effects complete, and the guest goes on at the
 * real target.
 */
#include <string.h>

#include "../runtime/alu.h"
#include "form.h"

int lcx_peek(lcr_vcpu *v, unsigned seg, uint64_t ea, unsigned n,
             uint64_t *val)
{
    lc_stop_reason stop = v->stop;
    uint8_t vec = v->fault_vector;
    uint64_t addr = v->fault_addr;
    uint8_t b[8] = { 0 };
    unsigned off = 0;
    lcr_xlat x;
    int r;

    if (n == 0 || n > 8)
        return -1;
    v->probe = 1;
    r = lcr_mem_xlat(v, seg, ea, n, LCR_ACC_READ, &x);
    v->probe = 0;
    v->stop = stop;
    v->fault_vector = vec;
    v->fault_addr = addr;
    if (r < 0)
        return -1;
    for (unsigned i = 0; i < x.nfrag; i++) {
        if (x.frag[i].kind != LC_GPA_RAM || !x.frag[i].hva ||
            off + x.frag[i].len > n)
            return -1;
        lcr_ram_read(b + off, x.frag[i].hva, x.frag[i].len);
        off += x.frag[i].len;
    }
    if (off != n)
        return -1;
    memcpy(val, b, sizeof b);
    return 0;
}

int lcx_peek_guess(lcr_vcpu *v, unsigned seg, uint64_t ea, unsigned n,
                   uint64_t *val)
{
    lc_stop_reason stop = v->stop;
    uint8_t vec = v->fault_vector;
    uint64_t addr = v->fault_addr, la;

    if (lcr_linear(v, seg, ea, n, LCR_ACC_READ, &la) == 0)
        return lcr_pwc_peek(v, la, n, val) ? 0 : lcx_peek(v, seg, ea, n, val);
    v->stop = stop;             /* the segment check failed: so would */
    v->fault_vector = vec;      /* lcx_peek()'s */
    v->fault_addr = addr;
    return -1;
}

void lcx_values_init(lcx_regview *rv, const lcr_vcpu *v)
{
    memset(rv, 0, sizeof(*rv));
    if (!v)
        return;
    memcpy(rv->gpr, v->st->gpr, sizeof rv->gpr);
    rv->known = 0xffff;
}

/* rSP now: the exit's, moved by the pushes and pops counted since. */
static int rsp_now(const lcx_trace *t, uint64_t *val)
{
    const lcr_vcpu *v = t->in->v;
    uint64_t sp, m;

    if (!v || !t->sv.rsp_known)
        return 0;
    m = lcr_mask(lcr_stack_bytes(v));
    sp = v->st->gpr[LC_RSP];
    *val = (sp & ~m) | ((sp + (uint64_t)t->sv.rsp_delta) & m);
    return 1;
}

/* The value of a register operand of `bytes` bytes, if the view has it. */
static int reg_get(const lcx_trace *t, lcd_reg r, unsigned bytes,
                   uint64_t *val)
{
    const lcx_regview *rv = &t->sv.rv;
    uint64_t g;

    if (r.cls == LCD_REG_GPR8H) {
        if (!(rv->known & (1u << (r.num & 3))))
            return 0;
        *val = (rv->gpr[r.num & 3] >> 8) & 0xff;
        return 1;
    }
    if (r.cls != LCD_REG_GPR)
        return 0;
    if ((r.num & 15) == LC_RSP) {
        if (!rsp_now(t, &g))
            return 0;
    } else if (rv->known & (1u << (r.num & 15))) {
        g = rv->gpr[r.num & 15];
    } else {
        return 0;
    }
    *val = g & lcr_mask(bytes);
    return 1;
}

static void reg_forget(lcx_regview *rv, lcd_reg r)
{
    if (r.cls == LCD_REG_GPR)
        rv->known &= (uint16_t)~(1u << (r.num & 15));
    else if (r.cls == LCD_REG_GPR8H)
        rv->known &= (uint16_t)~(1u << (r.num & 3));
}

static void reg_set(lcx_regview *rv, lcd_reg r, unsigned bytes,
                    uint64_t val)
{
    unsigned k = r.num & 15;

    if (r.cls != LCD_REG_GPR || k == LC_RSP || bytes == 0 || bytes > 8) {
        reg_forget(rv, r);      /* rSP is the stack view's (rsp_now) */
        return;
    }
    if (bytes < 4 && !(rv->known & (1u << k))) {
        reg_forget(rv, r);      /* a merge into an unknown value */
        return;
    }
    rv->gpr[k] = lcr_gpr_write(rv->gpr[k], bytes, val);
    rv->known |= (uint16_t)(1u << k);
}

/* The effective address of x's memory operand with the view's registers. */
static int eff_addr(const lcx_trace *t, const lcx_insn *x, uint64_t *ea)
{
    const lcd_mem *m = &x->d.mem;
    uint64_t a = (uint64_t)m->disp, r;

    if (m->base.cls == LCD_REG_GPR) {
        if (!reg_get(t, m->base, 8, &r))
            return 0;
        a += r;
    } else if (m->base.cls == LCD_REG_IP) {
        a += x->rip + x->d.info.length;
    }
    if (m->index.cls == LCD_REG_GPR) {
        if (!reg_get(t, m->index, 8, &r))
            return 0;
        a += r * m->scale;
    }
    *ea = a & lcr_mask(m->addr_bytes);
    return 1;
}

int lcx_values_stack(const lcx_trace *t, int64_t delta, unsigned bytes,
                     uint64_t *val)
{
    const lcx_regview *rv = &t->sv.rv;
    lcr_vcpu *v = t->in->v;
    uint64_t sp, m;

    if (!v || !t->sv.rsp_known)
        return 0;
    /* Stored by a PUSH or CALL of the walk (the newest at that slot). */
    for (unsigned k = rv->npush; k-- > 0;) {
        if (rv->push[k].delta != delta)
            continue;
        if (!rv->push[k].known || rv->push[k].bytes != bytes)
            return 0;
        *val = rv->push[k].val;
        return 1;
    }
    /* A slot the walk has not pushed: what the guest's stack holds. The
     * address is the stack pointer of the stack's width only (SP with a
     * 16-bit stack: bits above it in ESP are not part of the offset). */
    m = lcr_mask(lcr_stack_bytes(v));
    sp = (v->st->gpr[LC_RSP] + (uint64_t)delta) & m;
    if ((rv->seg_stale & (1u << LC_SS)) || lcx_peek(v, LC_SS, sp, bytes, val))
        return 0;
    *val &= lcr_mask(bytes);
    return 1;
}

/* What x's memory operand reads now: a slot the walk pushed, or RAM. */
static int mem_read(const lcx_trace *t, const lcx_insn *x, unsigned bytes,
                    uint64_t *val)
{
    const lcd_mem *m = &x->d.mem;
    uint64_t ea, sp;

    if (!t->in->v || m->seg >= LC_NR_SREGS ||
        (t->sv.rv.seg_stale & (1u << m->seg)) || m->agen ||
        !eff_addr(t, x, &ea))
        return 0;
    /* Through the stack segment while rSP is known: perhaps a slot the
     * walk pushed (cdecl arguments, a saved register) whose value is not
     * in memory yet. */
    if (m->seg == LC_SS && rsp_now(t, &sp))
        /* (wrapping: ea and rSP are guest values, any distance apart) */
        return lcx_values_stack(t, (int64_t)((uint64_t)t->sv.rsp_delta +
                                             (ea - sp)), bytes, val);
    if (lcx_peek(t->in->v, m->seg, ea, bytes, val))
        return 0;
    *val &= lcr_mask(bytes);
    return 1;
}

/* The value of operand `o` of x (register, immediate or memory). */
static int opnd_get(const lcx_trace *t, const lcx_insn *x,
                    const lcd_opnd *o, uint64_t *val)
{
    if (o->bytes == 0 || o->bytes > 8)
        return 0;               /* not a value the view can hold */
    switch (o->kind) {
    case LCD_OPND_REG:
        return reg_get(t, o->reg, o->bytes, val);
    case LCD_OPND_IMM:
        *val = lcr_sext(o->imm, o->bytes);   /* the writer masks */
        return 1;
    case LCD_OPND_MEM:
        return mem_read(t, x, o->bytes, val);
    default:
        return 0;
    }
}

int lcx_values_target(const lcx_trace *t, const lcx_insn *x, uint64_t *tgt)
{
    const lcd_insn *d = &x->d;
    unsigned n = d->info.operand_bits / 8;
    lcd_opnd o;

    if (d->nopnds < 1 || (d->opnd[0].kind != LCD_OPND_REG &&
                          d->opnd[0].kind != LCD_OPND_MEM))
        return 0;
    o = d->opnd[0];
    o.bytes = (uint8_t)n;
    if (!opnd_get(t, x, &o, tgt))
        return 0;
    *tgt &= lcr_mask(n);
    return 1;
}

/* Operations whose explicit operands name every general register they
 * write, rSP of a stack operation aside (the stack view counts it). Any
 * other may write registers the decoder does not list (MUL's rDX, a
 * string instruction's rSI/rDI/rCX, LOOP's rCX, CPUID, LEAVE's rBP): the
 * whole view is dropped there. */
static int names_its_writes(const lcd_insn *d)
{
    switch (d->info.op) {
    case LC_OP_MOV: case LC_OP_MOVZX: case LC_OP_MOVSX: case LC_OP_MOVSXD:
    case LC_OP_LEA: case LC_OP_XCHG: case LC_OP_PUSH: case LC_OP_POP:
    case LC_OP_CMOVCC: case LC_OP_SETCC: case LC_OP_BSWAP:
    case LC_OP_ADD: case LC_OP_ADC: case LC_OP_SUB: case LC_OP_SBB:
    case LC_OP_CMP: case LC_OP_AND: case LC_OP_OR: case LC_OP_XOR:
    case LC_OP_TEST: case LC_OP_INC: case LC_OP_DEC: case LC_OP_NEG:
    case LC_OP_NOT: case LC_OP_SHL: case LC_OP_SHR: case LC_OP_SAR:
    case LC_OP_ROL: case LC_OP_ROR: case LC_OP_RCL: case LC_OP_RCR:
    case LC_OP_CLC: case LC_OP_STC: case LC_OP_CMC: case LC_OP_CLD:
    case LC_OP_STD: case LC_OP_NOP: case LC_OP_JMP: case LC_OP_JCC:
    case LC_OP_CALL: case LC_OP_RET: case LC_OP_IN: case LC_OP_OUT:
    case LC_OP_BT: case LC_OP_BTS: case LC_OP_BTR: case LC_OP_BTC:
    case LC_OP_CLI: case LC_OP_STI: case LC_OP_MOV_SREG:
        return 1;
    case LC_OP_IMUL:
        /* the one-operand form writes rDX:rAX, not named */
        return d->nopnds >= 2;
    default:
        return 0;
    }
}

/* A PUSH or CALL of the walk stores `val` (known or not) at `delta`. */
static void push_note(lcx_regview *rv, int64_t delta, unsigned bytes,
                      int known, uint64_t val)
{
    unsigned k;

    for (k = 0; k < rv->npush; k++)
        if (rv->push[k].delta == delta)
            break;
    if (k == rv->npush) {
        if (rv->npush == LCX_MAX_PUSHES) {
            /* the oldest (deepest in the callers) goes */
            memmove(&rv->push[0], &rv->push[1],
                    sizeof(rv->push[0]) * (LCX_MAX_PUSHES - 1));
            k = LCX_MAX_PUSHES - 1;
        } else {
            rv->npush++;
        }
    }
    rv->push[k].delta = delta;
    rv->push[k].val = val & lcr_mask(bytes);
    rv->push[k].bytes = (uint8_t)bytes;
    rv->push[k].known = (uint8_t)known;
}

/* LEAVE, PUSHA and POPA move rSP without naming it (the decoder lists
 * none of their registers): keep the stack view right, so that a RET
 * after `leave` is still predicted. 1 when x was one of them. */
static int leave_or_pusha(lcx_trace *t, const lcd_insn *d)
{
    lcx_regview *rv = &t->sv.rv;
    const lcr_vcpu *v = t->in->v;
    unsigned n = d->info.operand_bits / 8, sb;
    static const lcd_reg bp = { LCD_REG_GPR, LC_RBP };
    uint64_t val, sp;

    switch (d->info.op) {
    case LC_OP_LEAVE:
        /* rSP = rBP (stack width), then POP rBP */
        if (!v || !t->sv.rsp_known || !reg_get(t, bp, 8, &val)) {
            t->sv.rsp_known = 0;
            rv->known = 0;
            return 1;
        }
        sb = lcr_stack_bytes(v);
        sp = v->st->gpr[LC_RSP];
        t->sv.rsp_delta = (int64_t)lcr_sext(val - sp, sb);
        if (lcx_values_stack(t, t->sv.rsp_delta, n, &val))
            reg_set(rv, bp, n, val);
        else
            reg_forget(rv, bp);
        t->sv.rsp_delta += n;
        return 1;
    case LC_OP_PUSHA:
        /* rAX, rCX, rDX, rBX, the old rSP, rBP, rSI, rDI, downwards */
        for (unsigned r = 0; r < 8 && t->sv.rsp_known; r++) {
            lcd_reg g = { LCD_REG_GPR, (uint8_t)r };
            int known = r == LC_RSP ? rsp_now(t, &val)
                                    : reg_get(t, g, n, &val);
            push_note(rv, t->sv.rsp_delta - (int64_t)(n * (r + 1)), n,
                      known, val);
        }
        t->sv.rsp_delta -= (int64_t)(8 * n);
        return 1;
    case LC_OP_POPA:
        t->sv.rsp_delta += (int64_t)(8 * n);
        rv->known &= (uint16_t)(1u << LC_RSP);
        return 1;
    default:
        return 0;
    }
}

/* The result of x, a two-operand computation the view can follow, into
 * *val: 1, or 0 when it cannot tell. */
static int compute(const lcx_trace *t, const lcx_insn *x, uint64_t *val)
{
    const lcd_insn *d = &x->d;
    const lcd_opnd *o0 = &d->opnd[0], *o1 = &d->opnd[1];
    unsigned n = o0->bytes;
    uint64_t a, b, m = lcr_mask(n);
    enum lcr_binop op;

    switch (d->info.op) {
    case LC_OP_MOV:
        return opnd_get(t, x, o1, val);
    case LC_OP_MOVZX:
    case LC_OP_MOVSX:
    case LC_OP_MOVSXD:
        if (!opnd_get(t, x, o1, &b))
            return 0;
        *val = (d->info.op == LC_OP_MOVZX ? b : lcr_sext(b, o1->bytes)) & m;
        return 1;
    case LC_OP_LEA:
        if (!eff_addr(t, x, &a))
            return 0;
        *val = a & m;
        return 1;
    case LC_OP_ADD: op = LCR_ADD; break;
    case LC_OP_SUB: op = LCR_SUB; break;
    case LC_OP_AND: op = LCR_AND; break;
    case LC_OP_OR:  op = LCR_OR;  break;
    case LC_OP_XOR: op = LCR_XOR; break;
    default:
        return 0;
    }
    /* `xor r, r` and `sub r, r`: zero whatever r was. */
    if ((op == LCR_XOR || op == LCR_SUB) && o0->kind == LCD_OPND_REG &&
        o1->kind == LCD_OPND_REG && o0->reg.cls == o1->reg.cls &&
        o0->reg.num == o1->reg.num) {
        *val = 0;
        return 1;
    }
    if (!opnd_get(t, x, o0, &a) || !opnd_get(t, x, o1, &b))
        return 0;
    *val = lcr_alu_result(op, a & m, b & m, 0, m);
    return 1;
}

void lcx_values_step(lcx_trace *t, const lcx_insn *x)
{
    const lcd_insn *d = &x->d;
    lcx_regview *rv = &t->sv.rv;
    unsigned n = d->info.operand_bits / 8;
    uint64_t val = 0;
    int known;

    for (unsigned i = 0; i < d->nopnds; i++)
        if (d->opnd[i].kind == LCD_OPND_REG && d->opnd[i].write &&
            d->opnd[i].reg.cls == LCD_REG_SEG)
            rv->seg_stale |= (uint8_t)(1u << (d->opnd[i].reg.num & 7));
    if (leave_or_pusha(t, d))
        return;
    if (!names_its_writes(d)) {
        rv->known = 0;
        return;
    }
    switch (d->info.op) {
    case LC_OP_PUSH:
        known = d->nopnds >= 1 && opnd_get(t, x, &d->opnd[0], &val);
        if (t->sv.rsp_known)
            push_note(rv, t->sv.rsp_delta - (int64_t)n, n, known, val);
        return;
    case LC_OP_CALL:
        if (t->sv.rsp_known)
            push_note(rv, t->sv.rsp_delta - (int64_t)n, n, 1,
                      x->rip + d->info.length);
        return;
    case LC_OP_POP:
        if (d->nopnds >= 1 && d->opnd[0].kind == LCD_OPND_REG &&
            d->opnd[0].reg.cls == LCD_REG_GPR) {
            if (lcx_values_stack(t, t->sv.rsp_delta, n, &val))
                reg_set(rv, d->opnd[0].reg, n, val);
            else
                reg_forget(rv, d->opnd[0].reg);
        } else if (d->nopnds >= 1 && d->opnd[0].kind == LCD_OPND_REG) {
            reg_forget(rv, d->opnd[0].reg);
        }
        return;
    default:
        break;
    }
    if (d->nopnds >= 1 && d->opnd[0].kind == LCD_OPND_REG &&
        d->opnd[0].write && compute(t, x, &val)) {
        reg_set(rv, d->opnd[0].reg, d->opnd[0].bytes, val);
        return;
    }
    for (unsigned i = 0; i < d->nopnds; i++)
        if (d->opnd[i].kind == LCD_OPND_REG && d->opnd[i].write)
            reg_forget(rv, d->opnd[i].reg);
}
