/* SPDX-License-Identifier: MIT */
/*
 * runtime/exec.c: instruction semantics and the step loop.
 *
 * Each instruction runs in two phases. Phase one does everything that can
 * fail without side effects: privilege and I/O permission checks,
 * segmentation and page walks for every memory operand, callback
 * presence. Phase two reads (memory and devices), computes, writes memory,
 * then registers and RIP. After phase one only a VMM callback answering
 * LC_CB_STOP/ERROR can stop an instruction, and then no register has been
 * written yet. This is what lets a cluster stop *before* an instruction
 * with all earlier effects complete (DESIGN.md, "Translations").
 */
#include <string.h>

#include "alu.h"
#include "rt.h"

#define RF(v) ((v)->st->rflags)

/* ---- registers ---------------------------------------------------------- */

static uint64_t reg_get(const lcr_vcpu *v, lcd_reg r, unsigned bytes)
{
    const uint64_t *g = v->st->gpr;

    switch (r.cls) {
    case LCD_REG_GPR:
        return g[r.num & 15] & lcr_mask(bytes);
    case LCD_REG_GPR8H:
        return (g[r.num & 3] >> 8) & 0xff;
    default:
        return 0;
    }
}

/* Register write as the CPU does it: 8- and 16-bit writes keep the rest
 * of the register, 32-bit writes zero the upper half (SDM vol. 1 3.4.1.1;
 * the same is done outside 64-bit mode, where the upper half is not
 * architecturally visible). */
static void reg_set(lcr_vcpu *v, lcd_reg r, unsigned bytes, uint64_t val)
{
    uint64_t *g = v->st->gpr;

    if (r.cls == LCD_REG_GPR8H) {
        uint64_t *p = &g[r.num & 3];
        *p = (*p & ~0xff00ull) | ((val & 0xff) << 8);
    } else if (r.cls == LCD_REG_GPR) {
        g[r.num & 15] = lcr_gpr_write(g[r.num & 15], bytes, val);
    }
    v->dirty |= LC_DIRTY_GPRS;
}

/* Also how stack pointers, counters and string indexes are updated at the
 * address (or stack) size: a 16-bit update keeps the bits above it, a
 * 32-bit one zero-extends (e.g. LOOP or REP with a 67h prefix in 64-bit
 * mode). */
static void gpr_set(lcr_vcpu *v, unsigned num, unsigned bytes, uint64_t val)
{
    lcd_reg r = { LCD_REG_GPR, (uint8_t)num };
    reg_set(v, r, bytes, val);
}

static int in_long64(const lcr_vcpu *v)
{
    return v->mode == LC_MODE_LONG64;
}

static unsigned stack_bytes(const lcr_vcpu *v)
{
    if (in_long64(v))
        return 8;
    return v->st->seg[LC_SS].db && v->mode != LC_MODE_REAL &&
                   v->mode != LC_MODE_VM86 ? 4 : 2;
}

/* ---- faults and stops ----------------------------------------------------- */

static int stop(lcr_vcpu *v, lc_stop_reason why)
{
    v->stop = why;
    return LCR_STOP;
}

static int fault(lcr_vcpu *v, uint8_t vector)
{
    v->fault_vector = vector;
    return stop(v, LC_STOP_FAULT);
}

static int canonical(const lcr_vcpu *v, uint64_t la)
{
    unsigned bits = (v->st->cr4 & LC_CR4_LA57) ? 57 : 48;
    int64_t s = (int64_t)(la << (64 - bits)) >> (64 - bits);
    return (uint64_t)s == la;
}

/* ---- memory operands -------------------------------------------------- */

/* Effective address of the memory operand of `in`, an instruction at
 * `rip` (RIP-relative operands count from its end), truncated to the
 * address size. `rsp_adj` is added when the base is rSP (POP to memory
 * computes its address after incrementing rSP). */
static uint64_t eff_addr(const lcr_vcpu *v, const lcd_insn *in, uint64_t rip,
                         int64_t rsp_adj)
{
    const lcd_mem *m = &in->mem;
    uint64_t ea = (uint64_t)m->disp;

    if (m->base.cls == LCD_REG_GPR) {
        ea += v->st->gpr[m->base.num & 15];
        if (m->base.num == LC_RSP)
            ea += (uint64_t)rsp_adj;
    } else if (m->base.cls == LCD_REG_IP) {
        ea += rip + in->info.length;
    }
    if (m->index.cls == LCD_REG_GPR)
        ea += v->st->gpr[m->index.num & 15] * m->scale;
    return ea & lcr_mask(m->addr_bytes);
}

/* A memory access: segment checks, then paging. */
static int mem_xlat(lcr_vcpu *v, unsigned seg, uint64_t ea, unsigned bytes,
                    unsigned access, lcr_xlat *x)
{
    uint64_t la;

    if (lcr_linear(v, seg, ea, bytes, access, &la) < 0)
        return -1;
    return lcr_translate(v, la, bytes, access, x);
}

/* After a translation made only to look (the I/O bit map, which
 * instruction exited): whatever it found is not a fault of the run. */
static void probe_done(lcr_vcpu *v)
{
    v->stop = LC_STOP_NONE;
    v->fault_vector = 0;
    v->fault_addr = 0;
}

int lcr_mem_gpa(lcr_vcpu *v, const lcd_insn *in, uint64_t insn_rip,
                uint64_t *gpa)
{
    lcr_xlat x;
    int r;

    if (!in->mem.present || in->mem.agen || !in->mem.bytes)
        return -1;
    r = mem_xlat(v, in->mem.seg, eff_addr(v, in, insn_rip, 0), in->mem.bytes,
                 LCR_ACC_READ, &x);
    probe_done(v);
    if (r < 0 || x.nfrag == 0)
        return -1;
    *gpa = x.frag[0].gpa;
    return 0;
}

static void note_vmm_access(const lcr_xlat *x, int *went)
{
    for (unsigned i = 0; i < x->nfrag; i++)
        if (x->frag[i].kind == LC_GPA_MMIO ||
            ((x->access & LCR_ACC_WRITE) && x->frag[i].traced))
            *went = 1;
}

static uint64_t load_le(const uint8_t *b, unsigned n)
{
    uint64_t v = 0;
    memcpy(&v, b, n);       /* x86 host: little endian like the guest */
    return v;
}

static int xread(lcr_vcpu *v, const lcr_xlat *x, uint64_t *val)
{
    uint8_t b[8] = { 0 };

    if (lcr_read(v, x, b) < 0)
        return -1;
    *val = load_le(b, x->len);
    return 0;
}

static int xwrite(lcr_vcpu *v, const lcr_xlat *x, uint64_t val)
{
    uint8_t b[8];

    memcpy(b, &val, sizeof b);
    return lcr_write(v, x, b);
}

/* ---- per-instruction context -------------------------------------------- */

typedef struct ectx {
    const lcd_insn *in;
    lcr_xlat mx;        /* the explicit memory operand, translated */
    int has_mx;
    int vmm;            /* an access went to the VMM (MMIO / traced) */
} ectx;

static int opnd_read(lcr_vcpu *v, ectx *c, unsigned i, uint64_t *val)
{
    const lcd_opnd *o = &c->in->opnd[i];

    switch (o->kind) {
    case LCD_OPND_REG:
        *val = reg_get(v, o->reg, o->bytes);
        return 0;
    case LCD_OPND_IMM:
        *val = o->imm;
        return 0;
    case LCD_OPND_MEM:
        return xread(v, &c->mx, val);
    default:
        *val = 0;
        return 0;
    }
}

static int opnd_write(lcr_vcpu *v, ectx *c, unsigned i, uint64_t val)
{
    const lcd_opnd *o = &c->in->opnd[i];

    if (o->kind == LCD_OPND_MEM)
        return xwrite(v, &c->mx, val);
    if (o->kind == LCD_OPND_REG)
        reg_set(v, o->reg, o->bytes, val);
    return 0;
}

static void set_flags(lcr_vcpu *v, uint64_t fl)
{
    if (v->st->rflags != fl)
        v->dirty |= LC_DIRTY_RFLAGS;
    v->st->rflags = fl;
}

/* ---- instruction groups ------------------------------------------------- */

static int exec_binop(lcr_vcpu *v, ectx *c, enum lcr_binop op, int store)
{
    unsigned n = c->in->opnd[0].bytes;
    uint64_t a, b, r, fl = RF(v);

    if (opnd_read(v, c, 0, &a) || opnd_read(v, c, 1, &b))
        return -1;
    r = lcr_alu_bin(op, n, a, lcr_sext(b, c->in->opnd[1].bytes) & lcr_mask(n),
                    &fl);
    if (store && opnd_write(v, c, 0, r))
        return -1;
    set_flags(v, fl);
    return 0;
}

static int exec_unary(lcr_vcpu *v, ectx *c, lc_op op)
{
    unsigned n = c->in->opnd[0].bytes;
    uint64_t a, r, fl = RF(v);

    if (opnd_read(v, c, 0, &a))
        return -1;
    switch (op) {
    case LC_OP_INC: r = lcr_alu_inc(n, a, &fl); break;
    case LC_OP_DEC: r = lcr_alu_dec(n, a, &fl); break;
    case LC_OP_NEG: r = lcr_alu_neg(n, a, &fl); break;
    default:        r = ~a & lcr_mask(n); break;   /* NOT: no flags */
    }
    if (opnd_write(v, c, 0, r))
        return -1;
    set_flags(v, fl);
    return 0;
}

static int exec_shift(lcr_vcpu *v, ectx *c, enum lcr_shop op)
{
    unsigned n = c->in->opnd[0].bytes;
    uint64_t a, cnt = 1, r, fl = RF(v);

    if (opnd_read(v, c, 0, &a))
        return -1;
    /* D0/D1 (by 1) have the count as an implicit operand in Zydis; C0/C1
     * an immediate; D2/D3 CL. */
    if (c->in->nopnds > 1 && opnd_read(v, c, 1, &cnt))
        return -1;
    r = lcr_alu_shift(op, n, a, (unsigned)(cnt & 0xff), &fl);
    /* A masked count of 0 leaves the flags alone but the destination is
     * still written: a 32-bit register zero-extends, and memory (a device
     * register) sees the store, as with QEMU and KVM's emulator. */
    if (opnd_write(v, c, 0, r))
        return -1;
    set_flags(v, fl);
    return 0;
}

/* MUL and IMUL. One-operand forms write rDX:rAX (AX for bytes); two- and
 * three-operand IMUL write the truncated product to the destination. */
static int exec_mul(lcr_vcpu *v, ectx *c, int is_signed)
{
    const lcd_insn *in = c->in;
    uint64_t a, b, lo, hi, fl = RF(v);
    unsigned n = in->opnd[0].bytes;

    /* Zydis hides MUL's implicit rAX/rDX, so the explicit operand count
     * tells the forms apart: 1 (rDX:rAX = rAX * r/m), 2 (IMUL r, r/m),
     * 3 (IMUL r, r/m, imm). */
    if (in->nopnds >= 2) {
        unsigned ia = in->nopnds >= 3 ? 1 : 0, ib = ia + 1;
        if (opnd_read(v, c, ia, &a) || opnd_read(v, c, ib, &b))
            return -1;
        lcr_alu_imul(n, a, b & lcr_mask(n), &lo, &hi, &fl);
        reg_set(v, in->opnd[0].reg, n, lo);
        set_flags(v, fl);
        return 0;
    }
    if (opnd_read(v, c, 0, &b))
        return -1;
    a = v->st->gpr[LC_RAX] & lcr_mask(n);
    if (is_signed)
        lcr_alu_imul(n, a, b, &lo, &hi, &fl);
    else
        lcr_alu_mul(n, a, b, &lo, &hi, &fl);
    if (n == 1) {
        gpr_set(v, LC_RAX, 2, lo | (hi << 8));
    } else {
        gpr_set(v, LC_RAX, n, lo);
        gpr_set(v, LC_RDX, n, hi);
    }
    set_flags(v, fl);
    return 0;
}

/* ---- control flow ---------------------------------------------------------- */

/* New RIP for a near transfer: truncated to the operand size, checked
 * against CS's limit outside 64-bit mode and for canonical form inside
 * (SDM JMP: #GP(0) "if the target is outside the code segment limit" / "not
 * in canonical form"). The fault is raised by the branch itself, so the
 * run stops before it. */
static int branch_ok(lcr_vcpu *v, uint64_t target)
{
    if (in_long64(v))
        return canonical(v, target);
    return target <= v->st->seg[LC_CS].limit;
}

static uint64_t ip_trunc(const lcd_insn *in, uint64_t ip)
{
    return ip & lcr_mask(in->info.operand_bits / 8);
}

/* ---- I/O ------------------------------------------------------------------- */

/* The I/O permission bit map (SDM vol. 1 19.5.2): with CPL > IOPL (or in
 * virtual-8086 mode) the CPU reads the 16-bit map base at offset 0x66 of
 * the current 32- or 64-bit TSS, then the two bytes holding the bits of
 * the accessed ports; every bit must be 0, and both bytes must lie within
 * the TSS limit. These are implicit supervisor-mode reads. Anything this
 * cannot decide (no usable TSS, a paging fault, the map outside RAM)
 * answers "not allowed": the instruction is then a terminator and the
 * CPU decides when the guest resumes. */
/* An implicit supervisor-mode read of RAM at a linear address. */
static int read_implicit(lcr_vcpu *v, uint64_t la, void *buf, unsigned len)
{
    lcr_xlat x;

    if (lcr_translate(v, la, len, LCR_ACC_READ | LCR_ACC_IMPLICIT, &x) < 0) {
        probe_done(v);
        return -1;
    }
    for (unsigned i = 0; i < x.nfrag; i++)
        if (x.frag[i].kind != LC_GPA_RAM)
            return -1;
    return lcr_read(v, &x, buf);
}

static int io_bitmap_allows(lcr_vcpu *v, uint16_t port, unsigned size)
{
    const lc_segment *tr = &v->st->tr;
    uint16_t map_base, bits;
    uint64_t off;

    if (tr->unusable || !tr->present || tr->s ||
        (tr->type != 0x9 && tr->type != 0xb) || tr->limit < 0x67)
        return 0;
    if (read_implicit(v, tr->base + 0x66, &map_base, 2) < 0)
        return 0;
    off = (uint64_t)map_base + port / 8;
    if (off + 1 > tr->limit)
        return 0;
    if (read_implicit(v, tr->base + off, &bits, 2) < 0)
        return 0;
    return ((bits >> (port % 8)) & ((1u << size) - 1)) == 0;
}

/* I/O is allowed without consulting the bit map in real mode, or when
 * CPL <= IOPL in protected mode (SDM vol. 1 19.5.1). Otherwise the TSS
 * bit map decides. Some hypervisors run CPL 3 guest code without
 * honouring its IOPL, so guests that poll devices from CPL 3 grant their
 * ports through the bit map (examples/guests/boot/long64.S). */
static int io_allowed(lcr_vcpu *v, uint16_t port, unsigned size)
{
    unsigned iopl = (unsigned)((v->st->rflags & LC_RFLAGS_IOPL) >> 12);

    if (v->mode == LC_MODE_REAL)
        return 1;
    if (v->mode != LC_MODE_VM86 && v->cpl <= iopl)
        return 1;
    return io_bitmap_allows(v, port, size);
}

/* A callback's answer: LC_CB_STOP/ERROR stop the run before the
 * instruction (ERROR also reports LC_ERR_CALLBACK to the engine). */
static int cb_result(lcr_vcpu *v, lc_cb_result r)
{
    if (r == LC_CB_OK)
        return 0;
    if (r == LC_CB_ERROR)
        v->error = LC_ERR_CALLBACK;
    v->stop = LC_STOP_CALLBACK;
    return -1;
}

static int pio(lcr_vcpu *v, uint16_t port, unsigned size, int is_write,
               uint32_t *val)
{
    if (!is_write)
        *val = 0;      /* no stale data if the device answers less */
    return cb_result(v, v->ops->pio(v->opaque, port, (uint8_t)size,
                                    is_write, val));
}

/* INS / OUTS, one iteration or REP. Returns LCR_DONE when the instruction
 * finished (RIP advanced by the caller), LCR_STOP otherwise; a REP that
 * ran out of budget after some iterations stops with LC_STOP_BUDGET, RIP at
 * the instruction and the completed iterations' effects kept. */
static int exec_string_io(lcr_vcpu *v, ectx *c, int is_out, uint32_t *iters)
{
    const lcd_insn *in = c->in;
    unsigned ab = in->mem.addr_bytes, n = in->mem.bytes;
    unsigned idx = is_out ? LC_RSI : LC_RDI;
    unsigned seg = is_out ? in->mem.seg : LC_ES;  /* ES:rDI can't be overridden */
    int64_t step = (v->st->rflags & LC_RFLAGS_DF) ? -(int64_t)n : (int64_t)n;
    uint16_t port = (uint16_t)v->st->gpr[LC_RDX];

    for (;;) {
        uint64_t count = v->st->gpr[LC_RCX] & lcr_mask(ab);
        uint64_t ea = v->st->gpr[idx] & lcr_mask(ab);
        uint32_t val = 0;
        lcr_xlat x;

        if (in->info.rep && count == 0)
            return LCR_DONE;
        if (*iters >= v->rep_budget)
            return stop(v, LC_STOP_BUDGET);
        if (mem_xlat(v, seg, ea, n, is_out ? LCR_ACC_READ : LCR_ACC_WRITE,
                     &x) < 0)
            return LCR_STOP;
        if (is_out) {
            uint64_t d;
            if (xread(v, &x, &d) < 0)
                return LCR_STOP;
            val = (uint32_t)d;
            if (pio(v, port, n, 1, &val) < 0)
                return LCR_STOP;
        } else {
            if (pio(v, port, n, 0, &val) < 0)
                return LCR_STOP;
            if (xwrite(v, &x, val) < 0)
                return LCR_STOP;
        }
        (*iters)++;
        gpr_set(v, idx, ab, ea + (uint64_t)step);
        if (!in->info.rep)
            return LCR_DONE;
        gpr_set(v, LC_RCX, ab, count - 1);
        if (v->smc_hit)     /* stop between iterations: SMC */
            return count - 1 == 0 ? LCR_DONE : stop(v, LC_STOP_SMC);
    }
}

/* Atomic XCHG on one RAM fragment: returns 1 when done (register and
 * memory exchanged), 0 when the access is not naturally aligned (the
 * caller falls back to read-then-write). */
static int xchg_atomic(lcr_vcpu *v, ectx *c, uint64_t *old)
{
    const lcd_insn *in = c->in;
    unsigned mi = in->opnd[0].kind == LCD_OPND_MEM ? 0 : 1;
    const lcd_opnd *r = &in->opnd[1 - mi];
    uint8_t *p = c->mx.frag[0].hva;
    uint64_t val = reg_get(v, r->reg, r->bytes);

    if ((uintptr_t)p % r->bytes)
        return 0;
    switch (r->bytes) {
    case 1: *old = __atomic_exchange_n(p, (uint8_t)val, __ATOMIC_SEQ_CST); break;
    case 2: *old = __atomic_exchange_n((uint16_t *)(void *)p, (uint16_t)val,
                                       __ATOMIC_SEQ_CST); break;
    case 4: *old = __atomic_exchange_n((uint32_t *)(void *)p, (uint32_t)val,
                                       __ATOMIC_SEQ_CST); break;
    case 8: *old = __atomic_exchange_n((uint64_t *)(void *)p, val,
                                       __ATOMIC_SEQ_CST); break;
    default: return 0;
    }
    for (unsigned i = 0; i < v->nwatch; i++)
        if (c->mx.frag[0].gpa >> 12 == v->watch_gfn[i])
            v->smc_hit = 1;
    reg_set(v, r->reg, r->bytes, *old);
    return 1;
}

/* ---- the dispatcher ---------------------------------------------------- */

/* Translate the instruction's explicit memory operand at `ea` into c->mx.
 * Every explicit operand goes through here, so its device accesses always
 * count as the instruction's exit (note_vmm_access at the end). */
static int operand_xlat(lcr_vcpu *v, ectx *c, uint64_t ea, unsigned bytes,
                        unsigned access)
{
    if (mem_xlat(v, c->in->mem.seg, ea, bytes, access, &c->mx) < 0)
        return -1;
    c->has_mx = 1;
    return 0;
}

/* Phase one for an explicit memory operand. */
static int prepare_mem(lcr_vcpu *v, ectx *c)
{
    const lcd_insn *in = c->in;
    unsigned access = 0;

    for (unsigned i = 0; i < in->nopnds; i++) {
        if (in->opnd[i].kind != LCD_OPND_MEM)
            continue;
        if (in->opnd[i].read)
            access |= LCR_ACC_READ;
        if (in->opnd[i].write)
            access |= LCR_ACC_WRITE;
    }
    if (!access || in->mem.agen)
        return 0;
    return operand_xlat(v, c, eff_addr(v, in, v->st->rip, 0), in->mem.bytes,
                        access);
}

static int cpl0_only(lcr_vcpu *v)
{
    if (v->cpl != 0 || v->mode == LC_MODE_VM86) {
        fault(v, 13);
        return -1;
    }
    return 0;
}

/* Executes `in`; returns LCR_DONE with RIP set, or LCR_STOP. */
static int dispatch(lcr_vcpu *v, const lcd_insn *in)
{
    lc_cpu_state *s = v->st;
    const lc_insn_info *ii = &in->info;
    uint64_t next = s->rip + ii->length, a, b;
    uint64_t fl = s->rflags;
    ectx c;     /* mx is filled only when an operand needs it */

    c.in = in;
    c.has_mx = 0;
    c.vmm = 0;
    int exiting = ii->exit_class == LC_CLASS_STRONG;

    /* PUSH, POP and string I/O translate their own operands. */
    if (ii->op != LC_OP_PUSH && ii->op != LC_OP_POP &&
        ii->op != LC_OP_INS && ii->op != LC_OP_OUTS && prepare_mem(v, &c) < 0)
        return LCR_STOP;

    switch (ii->op) {
    /* ---- data movement ---- */
    case LC_OP_MOV:
    case LC_OP_MOVZX:
        if (opnd_read(v, &c, 1, &a) || opnd_write(v, &c, 0, a))
            return LCR_STOP;
        break;
    case LC_OP_MOVSX:
    case LC_OP_MOVSXD:
        if (opnd_read(v, &c, 1, &a) ||
            opnd_write(v, &c, 0, lcr_sext(a, in->opnd[1].bytes)))
            return LCR_STOP;
        break;
    case LC_OP_LEA:
        reg_set(v, in->opnd[0].reg, in->opnd[0].bytes,
                eff_addr(v, in, v->st->rip, 0));
        break;
    case LC_OP_XCHG:
        /* XCHG with memory is locked (SDM XCHG): other vCPUs run while we
         * do. One naturally aligned RAM fragment takes a host atomic
         * exchange; MMIO and traced pages go through the VMM, which
         * serializes them itself. */
        if (c.has_mx && c.mx.nfrag == 1 && c.mx.frag[0].kind == LC_GPA_RAM &&
            !c.mx.frag[0].traced && xchg_atomic(v, &c, &a))
            break;
        if (opnd_read(v, &c, 0, &a) || opnd_read(v, &c, 1, &b))
            return LCR_STOP;
        /* Memory first: if the store is refused, no register changed. */
        if (in->opnd[0].kind == LCD_OPND_MEM) {
            if (opnd_write(v, &c, 0, b))
                return LCR_STOP;
            opnd_write(v, &c, 1, a);
        } else {
            if (opnd_write(v, &c, 1, a))
                return LCR_STOP;
            opnd_write(v, &c, 0, b);
        }
        break;
    case LC_OP_CMOVCC:
        if (opnd_read(v, &c, 1, &a))    /* the source is read regardless */
            return LCR_STOP;
        if (lcr_cond(ii->cond, fl))
            reg_set(v, in->opnd[0].reg, in->opnd[0].bytes, a);
        else if (in->opnd[0].bytes == 4)
            /* 32-bit CMOVcc zero-extends even when not moving (64-bit
             * mode; harmless elsewhere). */
            reg_set(v, in->opnd[0].reg, 4, reg_get(v, in->opnd[0].reg, 4));
        break;
    case LC_OP_SETCC:
        if (opnd_write(v, &c, 0, (uint64_t)lcr_cond(ii->cond, fl)))
            return LCR_STOP;
        break;
    case LC_OP_BSWAP:
        if (in->opnd[0].bytes == 2)
            return stop(v, LC_STOP_TERMINATOR);   /* undefined result */
        a = reg_get(v, in->opnd[0].reg, in->opnd[0].bytes);
        a = in->opnd[0].bytes == 8 ? __builtin_bswap64(a)
                                   : __builtin_bswap32((uint32_t)a);
        reg_set(v, in->opnd[0].reg, in->opnd[0].bytes, a);
        break;
    case LC_OP_CBW: {
        unsigned n = ii->operand_bits / 8;
        gpr_set(v, LC_RAX, n, lcr_sext(s->gpr[LC_RAX], n / 2));
        break;
    }
    case LC_OP_CWD: {
        unsigned n = ii->operand_bits / 8;
        gpr_set(v, LC_RDX, n,
                (s->gpr[LC_RAX] & lcr_sign(n)) ? lcr_mask(n) : 0);
        break;
    }
    case LC_OP_PUSH: {
        unsigned sb = stack_bytes(v), n = ii->operand_bits / 8;
        uint64_t sp = (s->gpr[LC_RSP] - n) & lcr_mask(sb);
        lcr_xlat sx;
        if (in->opnd[0].kind == LCD_OPND_REG &&
            in->opnd[0].reg.cls == LCD_REG_SEG)
            return stop(v, LC_STOP_TERMINATOR);
        if (in->opnd[0].kind == LCD_OPND_MEM &&
            operand_xlat(v, &c, eff_addr(v, in, v->st->rip, 0), n,
                         LCR_ACC_READ) < 0)
            return LCR_STOP;
        if (mem_xlat(v, LC_SS, sp, n, LCR_ACC_WRITE, &sx) < 0)
            return LCR_STOP;
        if (opnd_read(v, &c, 0, &a))
            return LCR_STOP;
        if (in->opnd[0].kind == LCD_OPND_IMM)
            a = lcr_sext(a, in->opnd[0].bytes);
        if (xwrite(v, &sx, a & lcr_mask(n)))
            return LCR_STOP;
        note_vmm_access(&sx, &c.vmm);
        gpr_set(v, LC_RSP, sb, sp);
        break;
    }
    case LC_OP_POP: {
        unsigned sb = stack_bytes(v), n = ii->operand_bits / 8;
        uint64_t sp = s->gpr[LC_RSP] & lcr_mask(sb);
        lcr_xlat sx;
        if (in->opnd[0].kind == LCD_OPND_REG &&
            in->opnd[0].reg.cls == LCD_REG_SEG)
            return stop(v, LC_STOP_TERMINATOR);
        if (mem_xlat(v, LC_SS, sp, n, LCR_ACC_READ, &sx) < 0)
            return LCR_STOP;
        /* POP to memory with an rSP base uses rSP after the increment
         * (SDM POP: "the ESP register is incremented before the effective
         * address is computed"). */
        if (in->opnd[0].kind == LCD_OPND_MEM &&
            operand_xlat(v, &c, eff_addr(v, in, v->st->rip, (int64_t)n), n,
                         LCR_ACC_WRITE) < 0)
            return LCR_STOP;
        if (xread(v, &sx, &a))
            return LCR_STOP;
        note_vmm_access(&sx, &c.vmm);
        if (in->opnd[0].kind == LCD_OPND_MEM) {
            if (opnd_write(v, &c, 0, a))
                return LCR_STOP;
            gpr_set(v, LC_RSP, sb, sp + n);
        } else {
            gpr_set(v, LC_RSP, sb, sp + n);
            reg_set(v, in->opnd[0].reg, n, a);   /* POP rSP wins */
        }
        break;
    }

    /* ---- arithmetic and logic ---- */
    case LC_OP_ADD: if (exec_binop(v, &c, LCR_ADD, 1)) return LCR_STOP; break;
    case LC_OP_ADC: if (exec_binop(v, &c, LCR_ADC, 1)) return LCR_STOP; break;
    case LC_OP_SUB: if (exec_binop(v, &c, LCR_SUB, 1)) return LCR_STOP; break;
    case LC_OP_SBB: if (exec_binop(v, &c, LCR_SBB, 1)) return LCR_STOP; break;
    case LC_OP_CMP: if (exec_binop(v, &c, LCR_SUB, 0)) return LCR_STOP; break;
    case LC_OP_AND: if (exec_binop(v, &c, LCR_AND, 1)) return LCR_STOP; break;
    case LC_OP_OR:  if (exec_binop(v, &c, LCR_OR, 1)) return LCR_STOP; break;
    case LC_OP_XOR: if (exec_binop(v, &c, LCR_XOR, 1)) return LCR_STOP; break;
    case LC_OP_TEST: if (exec_binop(v, &c, LCR_AND, 0)) return LCR_STOP; break;
    case LC_OP_INC: case LC_OP_DEC: case LC_OP_NEG: case LC_OP_NOT:
        if (exec_unary(v, &c, ii->op))
            return LCR_STOP;
        break;
    case LC_OP_SHL: if (exec_shift(v, &c, LCR_SHL)) return LCR_STOP; break;
    case LC_OP_SHR: if (exec_shift(v, &c, LCR_SHR)) return LCR_STOP; break;
    case LC_OP_SAR: if (exec_shift(v, &c, LCR_SAR)) return LCR_STOP; break;
    case LC_OP_ROL: if (exec_shift(v, &c, LCR_ROL)) return LCR_STOP; break;
    case LC_OP_ROR: if (exec_shift(v, &c, LCR_ROR)) return LCR_STOP; break;
    case LC_OP_RCL: if (exec_shift(v, &c, LCR_RCL)) return LCR_STOP; break;
    case LC_OP_RCR: if (exec_shift(v, &c, LCR_RCR)) return LCR_STOP; break;
    case LC_OP_MUL: if (exec_mul(v, &c, 0)) return LCR_STOP; break;
    case LC_OP_IMUL: if (exec_mul(v, &c, 1)) return LCR_STOP; break;

    /* ---- flags ---- */
    case LC_OP_CLC: set_flags(v, fl & ~LC_RFLAGS_CF); break;
    case LC_OP_STC: set_flags(v, fl | LC_RFLAGS_CF); break;
    case LC_OP_CMC: set_flags(v, fl ^ LC_RFLAGS_CF); break;
    case LC_OP_CLD: set_flags(v, fl & ~LC_RFLAGS_DF); break;
    case LC_OP_STD: set_flags(v, fl | LC_RFLAGS_DF); break;
    case LC_OP_NOP: break;

    /* ---- near control flow ---- */
    case LC_OP_JMP:
        if (ii->cflow == LC_CF_JMP_REL) {
            a = ip_trunc(in, next + (uint64_t)ii->branch_disp);
        } else if (ii->cflow == LC_CF_JMP_IND) {
            if (opnd_read(v, &c, 0, &a))
                return LCR_STOP;
            a &= lcr_mask(ii->operand_bits / 8);
        } else {
            return stop(v, LC_STOP_TERMINATOR);
        }
        if (!branch_ok(v, a))
            return fault(v, 13);
        next = a;
        break;
    case LC_OP_JCC:
    case LC_OP_LOOP:
    case LC_OP_LOOPE:
    case LC_OP_LOOPNE:
    case LC_OP_JCXZ: {
        int taken;
        unsigned ab = ii->address_bits / 8;
        uint64_t count = s->gpr[LC_RCX] & lcr_mask(ab);

        switch (ii->op) {
        case LC_OP_JCC:  taken = lcr_cond(ii->cond, fl); break;
        case LC_OP_JCXZ: taken = count == 0; break;
        default:
            count = (count - 1) & lcr_mask(ab);
            taken = count != 0;
            if (ii->op == LC_OP_LOOPE)
                taken = taken && (fl & LC_RFLAGS_ZF);
            else if (ii->op == LC_OP_LOOPNE)
                taken = taken && !(fl & LC_RFLAGS_ZF);
            break;
        }
        a = ip_trunc(in, next + (uint64_t)ii->branch_disp);
        if (taken && !branch_ok(v, a))
            return fault(v, 13);
        if (ii->op == LC_OP_LOOP || ii->op == LC_OP_LOOPE ||
            ii->op == LC_OP_LOOPNE)
            gpr_set(v, LC_RCX, ab, count);
        if (taken)
            next = a;
        break;
    }

    /* ---- strongly exiting ---- */
    case LC_OP_IN:
    case LC_OP_OUT: {
        int is_out = ii->op == LC_OP_OUT;
        const lcd_opnd *data = &in->opnd[is_out ? 1 : 0];
        const lcd_opnd *port = &in->opnd[is_out ? 0 : 1];
        uint32_t val = 0;
        uint16_t p;

        if (!v->ops->pio)
            return stop(v, LC_STOP_TERMINATOR);
        p = port->kind == LCD_OPND_IMM ? (uint16_t)port->imm
                                       : (uint16_t)s->gpr[LC_RDX];
        if (!io_allowed(v, p, data->bytes))
            return stop(v, LC_STOP_TERMINATOR);
        if (is_out)
            val = (uint32_t)reg_get(v, data->reg, data->bytes);
        if (pio(v, p, data->bytes, is_out, &val) < 0)
            return LCR_STOP;
        if (!is_out)
            reg_set(v, data->reg, data->bytes, val);
        break;
    }
    case LC_OP_INS:
    case LC_OP_OUTS: {
        uint32_t iters = 0;
        int r;
        if (!v->ops->pio ||
            !io_allowed(v, (uint16_t)s->gpr[LC_RDX], in->mem.bytes))
            return stop(v, LC_STOP_TERMINATOR);
        r = exec_string_io(v, &c, ii->op == LC_OP_OUTS, &iters);
        if (iters)
            v->exits_done++;   /* the string instruction did exit */
        if (r != LCR_DONE)
            return LCR_STOP;
        exiting = 0;           /* counted above, once, whatever its memory */
        break;
    }
    case LC_OP_CPUID: {
        uint32_t out[4] = { 0, 0, 0, 0 };
        if (!v->ops->cpuid)
            return stop(v, LC_STOP_TERMINATOR);
        if (cb_result(v, v->ops->cpuid(v->opaque, (uint32_t)s->gpr[LC_RAX],
                                       (uint32_t)s->gpr[LC_RCX], out)))
            return LCR_STOP;
        gpr_set(v, LC_RAX, 4, out[0]);
        gpr_set(v, LC_RBX, 4, out[1]);
        gpr_set(v, LC_RCX, 4, out[2]);
        gpr_set(v, LC_RDX, 4, out[3]);
        break;
    }
    case LC_OP_HLT:
        if (!v->ops->halt)
            return stop(v, LC_STOP_TERMINATOR);
        if (cpl0_only(v))
            return LCR_STOP;
        if (cb_result(v, v->ops->halt(v->opaque)))
            return LCR_STOP;
        v->stop = LC_STOP_HALT;     /* completes, then ends the run */
        break;
    case LC_OP_MOV_DR: {
        int to_dr = in->opnd[0].kind == LCD_OPND_REG &&
                    in->opnd[0].reg.cls == LCD_REG_DR;
        const lcd_opnd *dr = &in->opnd[to_dr ? 0 : 1];
        const lcd_opnd *gp = &in->opnd[to_dr ? 1 : 0];
        unsigned n = dr->reg.num, bytes = in_long64(v) ? 8 : 4;
        if (to_dr ? !v->ops->dr_write : !v->ops->dr_read)
            return stop(v, LC_STOP_TERMINATOR);
        if (cpl0_only(v))
            return LCR_STOP;
        /* DR4/DR5 alias DR6/DR7 unless CR4.DE, where they are #UD. */
        if (n == 4 || n == 5) {
            if (s->cr4 & (1ull << 3))
                return fault(v, 6);
            n += 2;
        }
        if (n > 7)
            return fault(v, 6);
        if (to_dr) {
            if (cb_result(v, v->ops->dr_write(v->opaque, n,
                                              reg_get(v, gp->reg, bytes))))
                return LCR_STOP;
        } else {
            uint64_t val = 0;
            if (cb_result(v, v->ops->dr_read(v->opaque, n, &val)))
                return LCR_STOP;
            reg_set(v, gp->reg, bytes, val);
        }
        break;
    }
    case LC_OP_RDMSR:
    case LC_OP_WRMSR: {
        uint32_t msr = (uint32_t)s->gpr[LC_RCX];
        if (ii->op == LC_OP_RDMSR ? !v->ops->rdmsr : !v->ops->wrmsr)
            return stop(v, LC_STOP_TERMINATOR);
        if (cpl0_only(v))
            return LCR_STOP;
        if (ii->op == LC_OP_RDMSR) {
            uint64_t val = 0;
            if (cb_result(v, v->ops->rdmsr(v->opaque, msr, &val)))
                return LCR_STOP;
            gpr_set(v, LC_RAX, 4, val & 0xffffffffu);
            gpr_set(v, LC_RDX, 4, val >> 32);
        } else {
            uint64_t val = (s->gpr[LC_RDX] << 32) |
                           (s->gpr[LC_RAX] & 0xffffffffu);
            if (cb_result(v, v->ops->wrmsr(v->opaque, msr, val)))
                return LCR_STOP;
        }
        break;
    }
    case LC_OP_VMREAD:
    case LC_OP_VMWRITE: {
        /* Operands in Intel order: VMREAD r/m, r(field);
         * VMWRITE r(field), r/m(value). Operand size is 64 in 64-bit mode,
         * 32 elsewhere (SDM vol. 3 31.3). VMsucceed clears CF PF AF ZF SF
         * OF. Failures (VMfailValid/Invalid) are the VMM's to report: its
         * callback answers LC_CB_STOP and the guest takes the real exit. */
        uint64_t field, val = 0;
        if (ii->op == LC_OP_VMREAD ? !v->ops->vmcs_read
                                   : !v->ops->vmcs_write)
            return stop(v, LC_STOP_TERMINATOR);
        if (cpl0_only(v))
            return LCR_STOP;
        if (ii->op == LC_OP_VMREAD) {
            if (opnd_read(v, &c, 1, &field))
                return LCR_STOP;
            if (cb_result(v, v->ops->vmcs_read(v->opaque, field, &val)))
                return LCR_STOP;
            if (opnd_write(v, &c, 0, val))
                return LCR_STOP;
        } else {
            if (opnd_read(v, &c, 0, &field) || opnd_read(v, &c, 1, &val))
                return LCR_STOP;
            if (cb_result(v, v->ops->vmcs_write(v->opaque, field, val)))
                return LCR_STOP;
        }
        set_flags(v, fl & ~LCR_FL_STATUS);
        break;
    }
    case LC_OP_VMCALL:
        if (!v->ops->vmcall)
            return stop(v, LC_STOP_TERMINATOR);
        if (cb_result(v, v->ops->vmcall(v->opaque, s)))
            return LCR_STOP;
        v->dirty |= LC_DIRTY_GPRS | LC_DIRTY_RFLAGS;
        break;

    default:
        return stop(v, LC_STOP_TERMINATOR);
    }

    if (c.has_mx)
        note_vmm_access(&c.mx, &c.vmm);
    if (exiting || c.vmm)
        v->exits_done++;
    s->rip = next;
    v->dirty |= LC_DIRTY_RIP;
    return LCR_DONE;
}

/* ---- public entry points ------------------------------------------------- */

void lcr_begin(lcr_vcpu *v, lc_cpu_state *st, const lc_vm_ops *ops,
               void *opaque)
{
    uint32_t ib = v->insn_budget, rb = v->rep_budget;
    uint8_t irq = v->irq_check, nw = v->nwatch;
    uint64_t w0 = v->watch_gfn[0], w1 = v->watch_gfn[1];

    memset(v, 0, sizeof(*v));
    v->st = st;
    v->ops = ops;
    v->opaque = opaque;
    v->insn_budget = ib;
    v->rep_budget = rb ? rb : 1;
    v->irq_check = irq;
    v->nwatch = nw > 2 ? 2 : nw;
    v->watch_gfn[0] = w0;
    v->watch_gfn[1] = w1;
    v->mode = lcr_cpu_mode(st);
    /* CPL is SS.DPL (SDM vol. 3 5.5: CS.DPL can differ for conforming
     * code); real mode is CPL 0 and vm86 CPL 3. */
    if (v->mode == LC_MODE_REAL)
        v->cpl = 0;
    else if (v->mode == LC_MODE_VM86)
        v->cpl = 3;
    else
        v->cpl = st->seg[LC_SS].dpl & 3;
}

int lcr_exec(lcr_vcpu *v, const lcd_insn *in)
{
    int r;

    v->stop = LC_STOP_NONE;
    v->smc_hit = 0;
    if (v->insns >= v->insn_budget)
        return stop(v, LC_STOP_BUDGET);
    /* A single-step trap is due after every instruction: leave it to the
     * CPU. */
    if (v->st->rflags & LC_RFLAGS_TF)
        return stop(v, LC_STOP_TERMINATOR);
    if (v->irq_check && (v->st->rflags & LC_RFLAGS_IF) && v->ops->irq_pending &&
        v->ops->irq_pending(v->opaque, v->st))
        return stop(v, LC_STOP_IRQ);
    if (in->info.exit_class == LC_CLASS_TERMINATOR)
        return stop(v, LC_STOP_TERMINATOR);
    r = dispatch(v, in);
    if (r == LCR_DONE) {
        v->insns++;
        if (v->smc_hit && v->stop == LC_STOP_NONE)
            v->stop = LC_STOP_SMC;   /* completed; the run ends after it */
    }
    return r;
}

int lcr_exec_pair(lcr_vcpu *v, const lcd_insn *a, const lcd_insn *b)
{
    lc_cpu_state *s = v->st;
    unsigned w = a->mem.bytes;
    uint64_t ea_a, ea_b, lo, va, vb;
    uint8_t buf[16];
    lcr_xlat x;
    ectx c;

    if (w == 0 || w > 4 || b->mem.bytes != w || a->mem.seg != b->mem.seg ||
        a->info.exit_class == LC_CLASS_TERMINATOR ||
        b->info.exit_class == LC_CLASS_TERMINATOR)
        return -1;
    v->stop = LC_STOP_NONE;
    v->smc_hit = 0;
    if (v->insns + 2 > v->insn_budget || (s->rflags & LC_RFLAGS_TF))
        return -1;
    ea_a = eff_addr(v, a, s->rip, 0);
    ea_b = eff_addr(v, b, s->rip + a->info.length, 0);
    lo = ea_a < ea_b ? ea_a : ea_b;
    /* One naturally aligned double-width store, or nothing merged. */
    if ((ea_a > ea_b ? ea_a - ea_b : ea_b - ea_a) != w || (lo & (2 * w - 1)))
        return -1;
    if (mem_xlat(v, a->mem.seg, lo, 2 * w, LCR_ACC_WRITE, &x) < 0)
        return LCR_STOP;
    c.in = a;
    c.has_mx = 0;
    c.vmm = 0;
    if (opnd_read(v, &c, 1, &va))
        return LCR_STOP;
    c.in = b;
    if (opnd_read(v, &c, 1, &vb))
        return LCR_STOP;
    memcpy(buf + (ea_a - lo), &va, w);
    memcpy(buf + (ea_b - lo), &vb, w);
    if (lcr_write(v, &x, buf) < 0)
        return LCR_STOP;
    v->exits_done += 2;            /* two exiting instructions ran */
    s->rip += a->info.length + b->info.length;
    v->dirty |= LC_DIRTY_RIP;
    v->insns += 2;
    if (v->smc_hit)
        v->stop = LC_STOP_SMC;
    return LCR_DONE;
}

int lcr_step(lcr_vcpu *v, lcd_insn *scratch)
{
    uint8_t buf[LC_INSN_MAX_LEN];
    uint64_t gfn[2];
    unsigned ngfn = 0;
    size_t n;
    lc_status st;

    v->stop = LC_STOP_NONE;
    n = lcr_fetch(v, buf, sizeof buf, gfn, &ngfn);
    if (n == 0)
        return stop(v, LC_STOP_FAULT);
    st = lcd_decode(v->mode, buf, n, scratch);
    if (st != LC_OK)
        /* Truncated at an unfetchable page, or invalid: the CPU raises
         * #PF or #UD itself when the guest resumes. */
        return stop(v, st == LC_ERR_DECODE_TRUNCATED ? LC_STOP_FAULT
                                                     : LC_STOP_TERMINATOR);
    return lcr_exec(v, scratch);
}
