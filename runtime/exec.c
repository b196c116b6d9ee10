/* SPDX-License-Identifier: MIT */
/*
 * runtime/exec.c: instruction semantics, the operation table and the step
 * loop.
 *
 * Each instruction runs in two phases. Phase one does everything that can
 * fail without side effects: privilege and I/O permission checks,
 * segmentation and page walks for every memory operand, callback
 * presence. Phase two reads (memory and devices), computes, writes memory,
 * then registers and RIP. After phase one only a VMM callback answering
 * LC_CB_STOP/ERROR can stop an instruction, and then no register has been
 * written yet. This is what lets a cluster stop *before* an instruction
 * with all earlier effects complete.
 *
 * The dispatcher looks the operation up in lcr_op_rows (the table at the
 * end of this file, one row per lc_op) and calls its executor; each
 * executor is a small function, `ex_<operation>`.
 */
#include <string.h>

#include "exec.h"

#define RF(v) ((v)->st->rflags)

/* ---- registers and stops ----------------------------------------------- */

/* Also how stack pointers, counters and string indexes are updated at the
 * address (or stack) size: a 16-bit update keeps the bits above it, a
 * 32-bit one zero-extends (e.g. LOOP or REP with a 67h prefix in 64-bit
 * mode). */
static void gpr_set(lcr_vcpu *v, unsigned num, unsigned bytes, uint64_t val)
{
    lcd_reg r = { LCD_REG_GPR, (uint8_t)num };
    lcr_reg_set(v, r, bytes, val);
}

static int in_long64(const lcr_vcpu *v)
{
    return v->mode == LC_MODE_LONG64;
}

/* rSP as a pop of `n` bytes leaves it on a stack of `sb` bytes: the
 * bits above the stack's size kept (a 16-bit stack moves SP alone). */
static uint64_t sp_after(const lcr_vcpu *v, unsigned sb, unsigned n)
{
    uint64_t rsp = v->st->gpr[LC_RSP];

    return (rsp & ~lcr_mask(sb)) | ((rsp + n) & lcr_mask(sb));
}

/* The inline forms come in two builds (lcr_inline_ram_fn()): `m64` set,
 * for a translation of 64-bit code, where the mode is checked once on
 * entry and each mode test below folds away; clear, for every mode. */
static inline __attribute__((always_inline))
unsigned stack_bytes_m(const lcr_vcpu *v, int m64)
{
    return m64 ? 8 : lcr_stack_bytes(v);
}

#define stop(v, why) lcr_stop(v, why)
#define fault(v, vec) lcr_fault(v, vec)

static int dispatch(lcr_vcpu *v, const lcd_insn *in);

/* ---- memory operands -------------------------------------------------- */

uint64_t lcr_eff_addr(const lcr_vcpu *v, const lcd_insn *in, uint64_t rip,
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

int lcr_mem_xlat(lcr_vcpu *v, unsigned seg, uint64_t ea, unsigned bytes,
                 unsigned access, lcr_xlat *x)
{
    uint64_t la;

    if (lcr_linear(v, seg, ea, bytes, access, &la) < 0)
        return -1;
    return lcr_translate(v, la, bytes, access, x);
}


/* One naturally aligned relaxed atomic access of n = 1, 2, 4 or 8 bytes
 * at host address h, as lcr_read() and lcr_write() make it (single-copy
 * atomic, mmu.c): the inline paths through the page-walk cache. */
static uint64_t ram_load_n(const uint8_t *h, unsigned n)
{
    switch (n) {
    case 8: return __atomic_load_n((const uint64_t *)(const void *)h, __ATOMIC_RELAXED);
    case 4: return __atomic_load_n((const uint32_t *)(const void *)h, __ATOMIC_RELAXED);
    case 2: return __atomic_load_n((const uint16_t *)(const void *)h, __ATOMIC_RELAXED);
    default: return __atomic_load_n(h, __ATOMIC_RELAXED);
    }
}

static void ram_store_n(uint8_t *h, unsigned n, uint64_t val)
{
    switch (n) {
    case 8: __atomic_store_n((uint64_t *)(void *)h, val, __ATOMIC_RELAXED); break;
    case 4: __atomic_store_n((uint32_t *)(void *)h, (uint32_t)val, __ATOMIC_RELAXED); break;
    case 2: __atomic_store_n((uint16_t *)(void *)h, (uint16_t)val, __ATOMIC_RELAXED); break;
    default: __atomic_store_n(h, (uint8_t)val, __ATOMIC_RELAXED); break;
    }
}

/* ram_fast() in 64-bit mode past a TLB miss: the canonical check, then
 * the cache. Out of line: a hit keeps a small frame. */
static __attribute__((noinline))
uint8_t *ram_miss64(lcr_vcpu *v, uint64_t la, unsigned n, unsigned access)
{
    if (!lcr_canonical_range_v(v, la, n))
        return NULL;
    return lcr_pwc_ram(v, la, n, access);
}

/* ram_fast() outside 64-bit mode, and for FS and GS: the segmentation
 * (lcr_linear_fast(), else lcr_linear()), then the TLB and the cache. */
static inline __attribute__((always_inline))
uint8_t *ram_seg_in(lcr_vcpu *v, unsigned seg, uint64_t ea, unsigned n,
                    unsigned access)
{
    unsigned wr = access == LCR_ACC_WRITE;
    uint64_t la;
    uint8_t *h;

    if (!lcr_linear_fast(v, seg, ea, n, wr, &la) &&
        lcr_linear(v, seg, ea, n, access, &la) < 0) {
        lcr_stop_forget(v);
        return NULL;
    }
    h = lcr_pwc_tlb_get(v, la, n, wr);
    if (!h)
        h = lcr_pwc_ram(v, la, n, access);
    return h && !(((uintptr_t)h | la) & (n - 1)) ? h : NULL;
}

/* The same out of line, for 64-bit code's FS and GS. */
static __attribute__((noinline))
uint8_t *ram_seg(lcr_vcpu *v, unsigned seg, uint64_t ea, unsigned n,
                 unsigned access)
{
    return ram_seg_in(v, seg, ea, n, access);
}

/* The host address of `n` bytes at seg:ea when the page-walk cache
 * answers for them as plain RAM (lcr_pwc_ram) and they are naturally
 * aligned, at their linear address and at the host's (which need not
 * agree: ops.h asks nothing of a mapping's alignment), else NULL with
 * nothing changed: the caller translates in full (and meets any fault of
 * the segmentation check again there, or the #AC of a misaligned access,
 * mmu.c, lcr_linear()). */
static inline __attribute__((always_inline))
uint8_t *ram_fast(lcr_vcpu *v, unsigned seg, uint64_t ea, unsigned n,
                  unsigned access, int m64)
{
    uint8_t *h;

    if ((n & (n - 1)) || n > 8 || !n)
        return NULL;
    if (m64 && seg >= LC_FS)
        return ram_seg(v, seg, ea, n, access);
    if (!m64 && (v->mode != LC_MODE_LONG64 || seg >= LC_FS))
        return ram_seg_in(v, seg, ea, n, access);
    /* lcr_linear()'s 64-bit case for ES, CS, SS, DS (base 0, no limit or
     * type checks): canonical first and last byte, else the full path
     * raises the fault. A TLB hit (or renewal, lcr_pwc_tlb_get())
     * implies both: every page in the TLB passed a canonical check as it
     * went in (this one for ES, CS, SS and DS; lcr_linear()'s for FS and
     * GS; compatibility mode's addresses lie below 4 GiB), a hit needs
     * the epoch and paging state it was made in (CR4.LA57 as then), and
     * the access lies within the page. */
    h = lcr_pwc_tlb_get(v, ea, n, access == LCR_ACC_WRITE);
    if (!h)
        h = ram_miss64(v, ea, n, access);
    return h && !(((uintptr_t)h | ea) & (n - 1)) ? h : NULL;
}

int lcr_mem_gpa(lcr_vcpu *v, const lcd_insn *in, uint64_t insn_rip,
                uint64_t *gpa)
{
    lcr_xlat x;
    int r;

    if (!in->mem.present || in->mem.agen || !in->mem.bytes)
        return -1;
    r = lcr_mem_xlat(v, in->mem.seg, lcr_eff_addr(v, in, insn_rip, 0),
                     in->mem.bytes, LCR_ACC_READ, &x);
    lcr_stop_forget(v);
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

/* Translate the instruction's explicit memory operand at `ea` into c->mx.
 * Every explicit operand goes through here, so its device accesses always
 * count as the instruction's exit (note_vmm_access in dispatch()). */
static int operand_xlat(lcr_vcpu *v, lcr_ectx *c, uint64_t ea, unsigned bytes,
                        unsigned access)
{
    if (lcr_mem_xlat(v, c->in->mem.seg, ea, bytes, access, &c->mx) < 0)
        return -1;
    c->has_mx = 1;
    return 0;
}

/* Phase one for an explicit memory operand. */
static int prepare_mem(lcr_vcpu *v, lcr_ectx *c)
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
    if (c->row->flags & LCR_ROW_PLAINMEM)
        access |= LCR_ACC_PLAIN;
    if (c->row->flags & LCR_ROW_LOCKED)
        access |= LCR_ACC_LOCKED;
    return operand_xlat(v, c, lcr_eff_addr(v, in, v->st->rip, 0),
                        in->mem.bytes, access);
}

int lcr_prepare_mem(lcr_vcpu *v, lcr_ectx *c)
{
    return prepare_mem(v, c);
}

/* The executors return LCR_DONE or LCR_STOP; helpers return 0 or -1. */
#define DONE_IF(ok) ((ok) ? LCR_DONE : LCR_STOP)

/* ---- data movement ---------------------------------------------------- */

static int ex_mov(lcr_vcpu *v, lcr_ectx *c)           /* MOV, MOVZX */
{
    uint64_t a;

    return DONE_IF(!lcr_opnd_read(v, c, 1, &a) && !lcr_opnd_write(v, c, 0, a));
}

static int ex_movsx(lcr_vcpu *v, lcr_ectx *c)         /* MOVSX, MOVSXD */
{
    uint64_t a;

    return DONE_IF(!lcr_opnd_read(v, c, 1, &a) &&
                   !lcr_opnd_write(v, c, 0, lcr_sext(a, c->in->opnd[1].bytes)));
}

static int ex_lea(lcr_vcpu *v, lcr_ectx *c)
{
    const lcd_insn *in = c->in;

    lcr_reg_set(v, in->opnd[0].reg, in->opnd[0].bytes,
                lcr_eff_addr(v, in, v->st->rip, 0));
    return LCR_DONE;
}

/* Atomic XCHG on one RAM fragment: returns 1 when done (register and
 * memory exchanged), 0 when the access is not naturally aligned (the
 * caller falls back to read-then-write). */
static int xchg_atomic(lcr_vcpu *v, lcr_ectx *c, uint64_t *old)
{
    const lcd_insn *in = c->in;
    unsigned mi = in->opnd[0].kind == LCD_OPND_MEM ? 0 : 1;
    const lcd_opnd *r = &in->opnd[1 - mi];
    uint8_t *p = c->mx.frag[0].hva;
    uint64_t val = lcr_reg_get(v, r->reg, r->bytes);

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
    if (lcr_watched(v, c->mx.frag[0].gpa, r->bytes))
        v->end_after = LC_STOP_SMC;
    lcr_reg_set(v, r->reg, r->bytes, *old);
    return 1;
}

static int ex_xchg(lcr_vcpu *v, lcr_ectx *c)
{
    const lcd_insn *in = c->in;
    uint64_t a, b;

    /* XCHG with memory is locked (SDM XCHG): other vCPUs run while we do.
     * One naturally aligned RAM fragment takes a host atomic exchange (a
     * misaligned one stopped in the translation, LCR_ACC_LOCKED); MMIO
     * and traced pages go through the VMM, which serializes them itself.
     * RAM the host maps misaligned cannot be exchanged atomically: left
     * to the CPU. */
    if (c->has_mx && c->mx.nfrag == 1 && c->mx.frag[0].kind == LC_GPA_RAM &&
        !c->mx.frag[0].traced) {
        if (xchg_atomic(v, c, &a))
            return LCR_DONE;
        return stop(v, LC_STOP_TERMINATOR);
    }
    if (lcr_opnd_read(v, c, 0, &a) || lcr_opnd_read(v, c, 1, &b))
        return LCR_STOP;
    /* Memory first: if the store is refused, no register changed. */
    if (in->opnd[0].kind == LCD_OPND_MEM) {
        if (lcr_opnd_write(v, c, 0, b))
            return LCR_STOP;
        lcr_opnd_write(v, c, 1, a);
    } else {
        if (lcr_opnd_write(v, c, 1, a))
            return LCR_STOP;
        lcr_opnd_write(v, c, 0, b);
    }
    return LCR_DONE;
}

static int ex_cmovcc(lcr_vcpu *v, lcr_ectx *c)
{
    const lcd_opnd *d = &c->in->opnd[0];
    uint64_t a;

    if (lcr_opnd_read(v, c, 1, &a))    /* the source is read regardless */
        return LCR_STOP;
    if (lcr_cond(c->in->info.cond, RF(v)))
        lcr_reg_set(v, d->reg, d->bytes, a);
    else if (d->bytes == 4)
        /* 32-bit CMOVcc zero-extends even when not moving (64-bit mode;
         * harmless elsewhere). */
        lcr_reg_set(v, d->reg, 4, lcr_reg_get(v, d->reg, 4));
    return LCR_DONE;
}

static int ex_setcc(lcr_vcpu *v, lcr_ectx *c)
{
    uint64_t set = (uint64_t)lcr_cond(c->in->info.cond, RF(v));

    return DONE_IF(!lcr_opnd_write(v, c, 0, set));
}

static int ex_bswap(lcr_vcpu *v, lcr_ectx *c)
{
    const lcd_opnd *d = &c->in->opnd[0];
    uint64_t a;

    if (d->bytes == 2)
        return stop(v, LC_STOP_TERMINATOR);   /* undefined result */
    a = lcr_reg_get(v, d->reg, d->bytes);
    a = d->bytes == 8 ? __builtin_bswap64(a) : __builtin_bswap32((uint32_t)a);
    lcr_reg_set(v, d->reg, d->bytes, a);
    return LCR_DONE;
}

static int ex_cbw(lcr_vcpu *v, lcr_ectx *c)         /* CBW, CWDE, CDQE */
{
    unsigned n = c->in->info.operand_bits / 8;

    gpr_set(v, LC_RAX, n, lcr_sext(v->st->gpr[LC_RAX], n / 2));
    return LCR_DONE;
}

static int ex_cwd(lcr_vcpu *v, lcr_ectx *c)         /* CWD, CDQ, CQO */
{
    unsigned n = c->in->info.operand_bits / 8;

    gpr_set(v, LC_RDX, n,
            (v->st->gpr[LC_RAX] & lcr_sign(n)) ? lcr_mask(n) : 0);
    return LCR_DONE;
}

static int sreg_operand(const lcd_insn *in)
{
    return in->opnd[0].kind == LCD_OPND_REG &&
           in->opnd[0].reg.cls == LCD_REG_SEG;
}

static int ex_push_sreg(lcr_vcpu *v, lcr_ectx *c);
static int ex_pop_sreg(lcr_vcpu *v, lcr_ectx *c);

/* A look at an access the instruction will make (lcr_peek_xlat()): 1 if
 * it reaches plain RAM only (no MMIO; for a store, no traced page), 0 if
 * not, -1 if the translation stops (a fault, or a paging entry whose A
 * or D bit it could not set), with that stop forgotten: the real access
 * makes it again, in the CPU's order. For the instructions whose later
 * access must be plain when an earlier one is not: the engine refuses
 * them before the first access sets an A or D bit, as a stop that is the
 * engine's and not the CPU's must leave the state as it was before the
 * instruction (a fault's stop keeps what the CPU sets before it
 * faults). */
static int peek_plain(lcr_vcpu *v, unsigned seg, uint64_t ea, unsigned n,
                      unsigned access)
{
    lcr_xlat x;

    if (lcr_peek_xlat(v, seg, ea, n, access, &x) < 0) {
        lcr_stop_forget(v);
        return -1;
    }
    return lcr_xlat_plain(&x);
}

static int ex_push(lcr_vcpu *v, lcr_ectx *c)
{
    const lcd_insn *in = c->in;
    unsigned sb = lcr_stack_bytes(v), n = in->info.operand_bits / 8;
    uint64_t sp = (v->st->gpr[LC_RSP] - n) & lcr_mask(sb), a;
    lcr_xlat sx;

    if (sreg_operand(in))
        return ex_push_sreg(v, c);
    /* a device read and a slot the VMM takes: refused (below) before the
     * read's walk sets an A bit */
    if (in->opnd[0].kind == LCD_OPND_MEM &&
        peek_plain(v, LC_SS, sp, n, LCR_ACC_WRITE) == 0 &&
        peek_plain(v, in->mem.seg, lcr_eff_addr(v, in, v->st->rip, 0), n,
                   LCR_ACC_READ) == 0)
        return stop(v, LC_STOP_TERMINATOR);
    if (in->opnd[0].kind == LCD_OPND_MEM &&
        operand_xlat(v, c, lcr_eff_addr(v, in, v->st->rip, 0), n,
                     LCR_ACC_READ) < 0)
        return LCR_STOP;
    /* After a device read, a store the VMM may refuse could not take the
     * read back (ops.h): then the slot must be plain RAM. */
    if (lcr_mem_xlat(v, LC_SS, sp, n,
                     in->opnd[0].kind == LCD_OPND_MEM && !lcr_xlat_plain(&c->mx)
                         ? LCR_ACC_WRITE | LCR_ACC_PLAIN : LCR_ACC_WRITE,
                     &sx) < 0)
        return LCR_STOP;
    if (lcr_opnd_read(v, c, 0, &a))
        return LCR_STOP;
    if (in->opnd[0].kind == LCD_OPND_IMM)
        a = lcr_sext(a, in->opnd[0].bytes);
    if (lcr_xwrite(v, &sx, a & lcr_mask(n)))
        return LCR_STOP;
    note_vmm_access(&sx, &c->vmm);
    gpr_set(v, LC_RSP, sb, sp);
    return LCR_DONE;
}

static int ex_pop(lcr_vcpu *v, lcr_ectx *c)
{
    const lcd_insn *in = c->in;
    unsigned sb = lcr_stack_bytes(v), n = in->info.operand_bits / 8;
    uint64_t sp = v->st->gpr[LC_RSP] & lcr_mask(sb), a;
    lcr_xlat sx;

    if (sreg_operand(in))
        return ex_pop_sreg(v, c);
    /* a device slot and a destination the VMM takes: refused (below)
     * before the slot's walk sets an A bit */
    if (in->opnd[0].kind == LCD_OPND_MEM &&
        peek_plain(v, LC_SS, sp, n, LCR_ACC_READ) == 0 &&
        peek_plain(v, in->mem.seg,
                   lcr_eff_addr(v, in, v->st->rip,
                                (int64_t)(sp_after(v, sb, n) -
                                          v->st->gpr[LC_RSP])), n,
                   LCR_ACC_WRITE) == 0)
        return stop(v, LC_STOP_TERMINATOR);
    if (lcr_mem_xlat(v, LC_SS, sp, n, LCR_ACC_READ, &sx) < 0)
        return LCR_STOP;
    /* POP to memory with an rSP base uses rSP after the increment (SDM
     * POP: "the ESP register is incremented before the effective address
     * is computed"), at the stack's size: with a 16-bit stack only SP
     * moves (and wraps), whatever the address size. */
    /* after a device read, the store plain RAM (as in ex_push) */
    if (in->opnd[0].kind == LCD_OPND_MEM &&
        operand_xlat(v, c, lcr_eff_addr(v, in, v->st->rip,
                                        (int64_t)(sp_after(v, sb, n) -
                                                  v->st->gpr[LC_RSP])), n,
                     lcr_xlat_plain(&sx) ? LCR_ACC_WRITE
                                         : LCR_ACC_WRITE | LCR_ACC_PLAIN) < 0)
        return LCR_STOP;
    if (lcr_xread(v, &sx, &a))
        return LCR_STOP;
    note_vmm_access(&sx, &c->vmm);
    if (in->opnd[0].kind == LCD_OPND_MEM) {
        if (lcr_opnd_write(v, c, 0, a))
            return LCR_STOP;
        gpr_set(v, LC_RSP, sb, sp + n);
    } else {
        gpr_set(v, LC_RSP, sb, sp + n);
        lcr_reg_set(v, in->opnd[0].reg, n, a);   /* POP rSP wins */
    }
    return LCR_DONE;
}

/* ---- arithmetic and logic ---------------------------------------------- */

/* ADD ADC SUB SBB CMP AND OR XOR TEST: the row names the ALU operation
 * and whether the result is stored (the translator's inline path reads
 * the same two facts from the same row). */
static int ex_binop(lcr_vcpu *v, lcr_ectx *c)
{
    unsigned n = c->in->opnd[0].bytes;
    uint64_t a, b, r, fl = RF(v);

    if (lcr_opnd_read(v, c, 0, &a) || lcr_opnd_read(v, c, 1, &b))
        return LCR_STOP;
    r = lcr_alu_bin((enum lcr_binop)c->row->alu, n, a,
                    lcr_sext(b, c->in->opnd[1].bytes) & lcr_mask(n), &fl);
    if ((c->row->flags & LCR_ROW_STORE) && lcr_opnd_write(v, c, 0, r))
        return LCR_STOP;
    lcr_set_flags(v, fl);
    return LCR_DONE;
}

/* INC DEC NEG NOT: read, `f`, write back, then the flags. */
static int unary(lcr_vcpu *v, lcr_ectx *c,
                 uint64_t (*f)(unsigned, uint64_t, uint64_t *))
{
    unsigned n = c->in->opnd[0].bytes;
    uint64_t a, fl = RF(v);

    if (lcr_opnd_read(v, c, 0, &a) || lcr_opnd_write(v, c, 0, f(n, a, &fl)))
        return LCR_STOP;
    lcr_set_flags(v, fl);
    return LCR_DONE;
}

static uint64_t alu_not(unsigned n, uint64_t a, uint64_t *fl)
{
    (void)fl;                                  /* NOT: no flags */
    return ~a & lcr_mask(n);
}

static int ex_inc(lcr_vcpu *v, lcr_ectx *c) { return unary(v, c, lcr_alu_inc); }
static int ex_dec(lcr_vcpu *v, lcr_ectx *c) { return unary(v, c, lcr_alu_dec); }
static int ex_neg(lcr_vcpu *v, lcr_ectx *c) { return unary(v, c, lcr_alu_neg); }
static int ex_not(lcr_vcpu *v, lcr_ectx *c) { return unary(v, c, alu_not); }

/* SHL SHR SAR ROL ROR RCL RCR; the row names the operation. */
static int ex_shift(lcr_vcpu *v, lcr_ectx *c)
{
    unsigned n = c->in->opnd[0].bytes;
    uint64_t a, cnt = 1, r, fl = RF(v);

    if (lcr_opnd_read(v, c, 0, &a))
        return LCR_STOP;
    /* D0/D1 (by 1) have the count as an implicit operand in Zydis; C0/C1
     * an immediate; D2/D3 CL. */
    if (c->in->nopnds > 1 && lcr_opnd_read(v, c, 1, &cnt))
        return LCR_STOP;
    r = lcr_alu_shift((enum lcr_shop)c->row->alu, n, a,
                      (unsigned)(cnt & 0xff), &fl);
    /* A masked count of 0 leaves the flags alone but the destination is
     * still written: a 32-bit register zero-extends, and memory (a device
     * register) sees the store, as with QEMU and KVM's emulator. */
    if (lcr_opnd_write(v, c, 0, r))
        return LCR_STOP;
    lcr_set_flags(v, fl);
    return LCR_DONE;
}

/* MUL and IMUL. One-operand forms write rDX:rAX (AX for bytes); two- and
 * three-operand IMUL write the truncated product to the destination. */
static int mul(lcr_vcpu *v, lcr_ectx *c, int is_signed)
{
    const lcd_insn *in = c->in;
    uint64_t a, b, lo, hi, fl = RF(v);
    unsigned n = in->opnd[0].bytes;

    /* Zydis hides MUL's implicit rAX/rDX, so the explicit operand count
     * tells the forms apart: 1 (rDX:rAX = rAX * r/m), 2 (IMUL r, r/m),
     * 3 (IMUL r, r/m, imm). */
    if (in->nopnds >= 2) {
        unsigned ia = in->nopnds >= 3 ? 1 : 0, ib = ia + 1;
        if (lcr_opnd_read(v, c, ia, &a) || lcr_opnd_read(v, c, ib, &b))
            return LCR_STOP;
        lcr_alu_imul(n, a, b & lcr_mask(n), &lo, &hi, &fl);
        lcr_reg_set(v, in->opnd[0].reg, n, lo);
        lcr_set_flags(v, fl);
        return LCR_DONE;
    }
    if (lcr_opnd_read(v, c, 0, &b))
        return LCR_STOP;
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
    lcr_set_flags(v, fl);
    return LCR_DONE;
}

static int ex_mul(lcr_vcpu *v, lcr_ectx *c) { return mul(v, c, 0); }
static int ex_imul(lcr_vcpu *v, lcr_ectx *c) { return mul(v, c, 1); }

/* ---- flags and no-ops --------------------------------------------------- */

static int flags_to(lcr_vcpu *v, uint64_t fl)
{
    lcr_set_flags(v, fl);
    return LCR_DONE;
}

static int ex_clc(lcr_vcpu *v, lcr_ectx *c)
{
    (void)c;
    return flags_to(v, RF(v) & ~LC_RFLAGS_CF);
}
static int ex_stc(lcr_vcpu *v, lcr_ectx *c)
{
    (void)c;
    return flags_to(v, RF(v) | LC_RFLAGS_CF);
}
static int ex_cmc(lcr_vcpu *v, lcr_ectx *c)
{
    (void)c;
    return flags_to(v, RF(v) ^ LC_RFLAGS_CF);
}
static int ex_cld(lcr_vcpu *v, lcr_ectx *c)
{
    (void)c;
    return flags_to(v, RF(v) & ~LC_RFLAGS_DF);
}
static int ex_std(lcr_vcpu *v, lcr_ectx *c)
{
    (void)c;
    return flags_to(v, RF(v) | LC_RFLAGS_DF);
}

static int ex_nop(lcr_vcpu *v, lcr_ectx *c)
{
    (void)v;
    (void)c;
    return LCR_DONE;
}

/* ---- near control flow ------------------------------------------------- */

/* New RIP for a near transfer: truncated to the operand size, checked
 * against CS's limit outside 64-bit mode and for canonical form inside
 * (SDM JMP: #GP(0) "if the target is outside the code segment limit" / "not
 * in canonical form"). The fault is raised by the branch itself, so the
 * run stops before it. */
static inline __attribute__((always_inline))
int branch_ok_m(lcr_vcpu *v, uint64_t target, int m64)
{
    if (m64 || in_long64(v))
        return lcr_canonical_v(v, target);
    return target <= v->st->seg[LC_CS].limit;
}

static int branch_ok(lcr_vcpu *v, uint64_t target)
{
    return branch_ok_m(v, target, 0);
}

/* The static target of a relative branch, truncated to the operand size
 * (IP wraps at 64 KiB in 16-bit code). */
static uint64_t rel_target(const lcr_ectx *c)
{
    const lc_insn_info *ii = &c->in->info;

    return (c->next + (uint64_t)ii->branch_disp) &
           lcr_mask(ii->operand_bits / 8);
}

/* Go to `target` when `taken`, or #GP before the branch. */
static int branch(lcr_vcpu *v, lcr_ectx *c, int taken, uint64_t target)
{
    if (taken && !branch_ok(v, target))
        return fault(v, LC_VEC_GP);
    if (taken)
        c->next = target;
    return LCR_DONE;
}

static int ex_jmp(lcr_vcpu *v, lcr_ectx *c)
{
    const lc_insn_info *ii = &c->in->info;
    uint64_t a;

    if (ii->cflow == LC_CF_JMP_REL)
        return branch(v, c, 1, rel_target(c));
    if (ii->cflow != LC_CF_JMP_IND || lcr_cet_guards(v->st, c->in))
        return stop(v, LC_STOP_TERMINATOR);     /* indirect branch tracking */
    if (lcr_opnd_read(v, c, 0, &a))
        return LCR_STOP;
    return branch(v, c, 1, a & lcr_mask(ii->operand_bits / 8));
}

static int ex_jcc(lcr_vcpu *v, lcr_ectx *c)
{
    return branch(v, c, lcr_cond(c->in->info.cond, RF(v)), rel_target(c));
}

/* rCX at the address size (SDM LOOP, JCXZ). */
static uint64_t count_reg(const lcr_vcpu *v, const lcr_ectx *c)
{
    return v->st->gpr[LC_RCX] & lcr_mask(c->in->info.address_bits / 8);
}

static int ex_jcxz(lcr_vcpu *v, lcr_ectx *c)
{
    return branch(v, c, count_reg(v, c) == 0, rel_target(c));
}

/* LOOP, LOOPE, LOOPNE: decrement rCX (without touching flags), branch if
 * it is not zero and ZF agrees. The count is written only if the branch
 * does not fault. */
static int loop(lcr_vcpu *v, lcr_ectx *c, int zf_want)
{
    unsigned ab = c->in->info.address_bits / 8;
    uint64_t count = (count_reg(v, c) - 1) & lcr_mask(ab);
    int zf = (RF(v) & LC_RFLAGS_ZF) != 0;
    int taken = count != 0 && (zf_want < 0 || zf == zf_want);

    if (branch(v, c, taken, rel_target(c)) != LCR_DONE)
        return LCR_STOP;
    gpr_set(v, LC_RCX, ab, count);
    return LCR_DONE;
}

/* A push through the page-walk cache (section 11): `val` at the operand
 * size `n` onto SS:rSP - n, and rSP moved (a near CALL's return address
 * once its target is checked, a PUSH's value). 1, or 0 with nothing done
 * when the cache cannot serve the slot (ex_call(), ex_push() then
 * translate it). */
static inline __attribute__((always_inline))
int stack_push_m(lcr_vcpu *v, unsigned n, uint64_t val, int m64)
{
    unsigned sb = stack_bytes_m(v, m64);
    uint64_t sp = (v->st->gpr[LC_RSP] - n) & lcr_mask(sb);
    uint8_t *h = ram_fast(v, LC_SS, sp, n, LCR_ACC_WRITE, m64);

    if (!h)
        return 0;
    ram_store_n(h, n, val & lcr_mask(n));
    gpr_set(v, LC_RSP, sb, sp);
    v->fwd_n = (uint8_t)n;
    v->fwd_sp = sp;
    v->fwd_val = val & lcr_mask(n);
    return 1;
}

/* Out of line, in both builds: the hit keeps a small frame. */
static __attribute__((noinline))
int stack_push_fast(lcr_vcpu *v, unsigned n, uint64_t val)
{
    return stack_push_m(v, n, val, 0);
}

static __attribute__((noinline))
int stack_push_fast64(lcr_vcpu *v, unsigned n, uint64_t val)
{
    return stack_push_m(v, n, val, 1);
}

/* Near CALL (SDM CALL, "near call"): the target (relative, or read from
 * a register or memory at the operand size) is checked first (#GP), then
 * the return address is pushed at the operand size onto SS:rSP (#SS, #PF:
 * the run stops before the CALL), then RIP moves. Phase one (every check
 * and translation) is complete before the stack write. */
static int ex_call(lcr_vcpu *v, lcr_ectx *c)
{
    const lcd_insn *in = c->in;
    unsigned sb = lcr_stack_bytes(v), n = in->info.operand_bits / 8;
    uint64_t sp = (v->st->gpr[LC_RSP] - n) & lcr_mask(sb), target;
    lcr_xlat sx;

    if (lcr_cet_guards(v->st, in))
        return stop(v, LC_STOP_TERMINATOR);     /* the shadow stack */
    if (in->info.cflow == LC_CF_CALL_REL) {
        target = rel_target(c);
    } else if (in->info.cflow == LC_CF_CALL_IND) {
        /* The pointer is read before the target and stack checks, so it
         * must come from RAM: a device read cannot be taken back if the
         * CALL then faults. */
        if (in->opnd[0].kind == LCD_OPND_MEM) {
            if (operand_xlat(v, c, lcr_eff_addr(v, in, v->st->rip, 0), n,
                             LCR_ACC_READ | LCR_ACC_PLAIN) < 0)
                return LCR_STOP;
            if (lcr_xread(v, &c->mx, &target))
                return LCR_STOP;
        } else if (in->opnd[0].kind == LCD_OPND_REG) {
            target = lcr_reg_get(v, in->opnd[0].reg, n);
        } else {
            return stop(v, LC_STOP_TERMINATOR);
        }
        target &= lcr_mask(n);
    } else {
        return stop(v, LC_STOP_TERMINATOR);
    }
    if (!branch_ok(v, target))
        return fault(v, LC_VEC_GP);
    if (!stack_push_fast(v, n, c->next)) {
        if (lcr_mem_xlat(v, LC_SS, sp, n, LCR_ACC_WRITE, &sx) < 0)
            return LCR_STOP;
        if (lcr_xwrite(v, &sx, c->next & lcr_mask(n)))
            return LCR_STOP;
        note_vmm_access(&sx, &c->vmm);
        gpr_set(v, LC_RSP, sb, sp);
    }
    c->next = target;
    return LCR_DONE;
}

/* The `n` bytes at SS:rSP read through the page-walk cache (section 11):
 * a near RET's return address, a POP's value. 1 with *target, or 0 with
 * nothing done (ex_ret(), ex_pop() then translate the slot). */
static inline __attribute__((always_inline))
int stack_read_fast(lcr_vcpu *v, unsigned n, uint64_t *target, int m64)
{
    uint64_t sp = v->st->gpr[LC_RSP] & lcr_mask(stack_bytes_m(v, m64));
    /* The slot the last stack store of this run wrote, nothing observed
     * since (rt.h, lcr_fwd_forget()): its value, forwarded. Its
     * translation held for the store, so it holds for this load (the same
     * bytes, read: no right a write has is missing for a read). */
    int fwd = v->fwd_n == n && v->fwd_sp == sp;
    uint8_t *h;

    lcr_fwd_forget(v);          /* read once, whichever way */
    if (fwd) {
        *target = v->fwd_val;
        return 1;
    }
    h = ram_fast(v, LC_SS, sp, n, LCR_ACC_READ, m64);
    if (!h)
        return 0;
    *target = ram_load_n(h, n);
    return 1;
}

/* rSP past `n` bytes of stack (a POP's slot, a RET's return address and
 * its imm16), in the stack's address size. */
static inline __attribute__((always_inline))
void stack_release(lcr_vcpu *v, uint64_t n, int m64)
{
    unsigned sb = stack_bytes_m(v, m64);

    gpr_set(v, LC_RSP, sb, (v->st->gpr[LC_RSP] & lcr_mask(sb)) + n);
}

/* A near RET's end, its target checked: rSP past the return address and
 * imm16 more bytes. */
static inline __attribute__((always_inline))
void ret_release(lcr_vcpu *v, const lcd_insn *in, unsigned n, int m64)
{
    uint64_t extra = 0;

    if (in->nopnds > 0 && in->opnd[0].kind == LCD_OPND_IMM)
        extra = in->opnd[0].imm & 0xffff;
    stack_release(v, n + extra, m64);
}

/* Near RET and RET imm16 (SDM RET, "near return"): pop the return address
 * at the operand size, check it (#GP), then release imm16 more bytes of
 * stack. */
static int ex_ret(lcr_vcpu *v, lcr_ectx *c)
{
    const lcd_insn *in = c->in;
    unsigned n = in->info.operand_bits / 8;
    uint64_t target;
    lcr_xlat sx;

    if (in->info.cflow != LC_CF_RET || lcr_cet_guards(v->st, in))
        return stop(v, LC_STOP_TERMINATOR);
    if (!stack_read_fast(v, n, &target, 0)) {
        uint64_t sp = v->st->gpr[LC_RSP] & lcr_mask(lcr_stack_bytes(v));

        /* read before the target check, which can still fault */
        if (lcr_mem_xlat(v, LC_SS, sp, n, LCR_ACC_READ | LCR_ACC_PLAIN,
                         &sx) < 0)
            return LCR_STOP;
        if (lcr_xread(v, &sx, &target))
            return LCR_STOP;
        note_vmm_access(&sx, &c->vmm);
    }
    target &= lcr_mask(n);
    if (!branch_ok(v, target))
        return fault(v, LC_VEC_GP);
    ret_release(v, in, n, 0);
    c->next = target;
    return LCR_DONE;
}

static int ex_loop(lcr_vcpu *v, lcr_ectx *c) { return loop(v, c, -1); }
static int ex_loope(lcr_vcpu *v, lcr_ectx *c) { return loop(v, c, 1); }
static int ex_loopne(lcr_vcpu *v, lcr_ectx *c) { return loop(v, c, 0); }

/* ---- I/O --------------------------------------------------------------- */

/* The I/O permission bit map (SDM vol. 1 19.5.2): with CPL > IOPL (or in
 * virtual-8086 mode) the CPU reads the 16-bit map base at offset 0x66 of
 * the current 32- or 64-bit TSS, then the two bytes holding the bits of
 * the accessed ports; every bit must be 0, and both bytes must lie within
 * the TSS limit. These are implicit supervisor-mode reads. Anything this
 * cannot decide (no usable TSS, a paging fault, the map outside RAM)
 * answers "not allowed": the instruction is then a terminator and the
 * CPU decides when the guest resumes.
 *
 * An implicit supervisor-mode read of RAM at a linear address. */
static int read_implicit(lcr_vcpu *v, uint64_t la, void *buf, unsigned len)
{
    lcr_xlat x;

    if (lcr_translate(v, la, len, LCR_ACC_READ | LCR_ACC_IMPLICIT, &x) < 0) {
        lcr_stop_forget(v);
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
static int io_allowed_by_iopl(const lcr_vcpu *v)
{
    unsigned iopl = (unsigned)((v->st->rflags & LC_RFLAGS_IOPL) >> 12);

    return v->mode == LC_MODE_REAL ||
           (v->mode != LC_MODE_VM86 && v->cpl <= iopl);
}

static int io_allowed(lcr_vcpu *v, uint16_t port, unsigned size)
{
    return io_allowed_by_iopl(v) || io_bitmap_allows(v, port, size);
}

static int pio(lcr_vcpu *v, uint16_t port, unsigned size, int is_write,
               uint32_t *val)
{
    if (!is_write)
        *val = 0;      /* no stale data if the device answers less */
    return lcr_cb_result(v, v->ops->pio(v->opaque, port, (uint8_t)size,
                                        is_write, val));
}

/* INS / OUTS, one iteration or REP. Returns LCR_DONE when the instruction
 * finished (RIP advanced by the caller), LCR_STOP otherwise; a REP that
 * ran out of budget after some iterations stops with LC_STOP_BUDGET, RIP at
 * the instruction and the completed iterations' effects kept. */
static int string_io(lcr_vcpu *v, lcr_ectx *c, int is_out, uint32_t *iters)
{
    const lcd_insn *in = c->in;
    unsigned ab = in->mem.addr_bytes, n = in->mem.bytes;
    unsigned idx = is_out ? LC_RSI : LC_RDI;
    unsigned seg = is_out ? in->mem.seg : LC_ES;  /* ES:rDI can't be overridden */
    int64_t step = (v->st->rflags & LC_RFLAGS_DF) ? -(int64_t)n : (int64_t)n;
    uint16_t port = (uint16_t)v->st->gpr[LC_RDX];

    /* REP with a 32-bit address size (67h) in 64-bit mode and ECX 0:
     * Intel's CPUs clear bits 63:32 of rCX and the index, AMD's leave
     * them (the SDM does not say): left to the CPU. */
    if (in->info.rep && ab == 4 && in_long64(v) &&
        (v->st->gpr[LC_RCX] & 0xffffffffu) == 0)
        return stop(v, LC_STOP_TERMINATOR);

    for (;;) {
        uint64_t count = v->st->gpr[LC_RCX] & lcr_mask(ab);
        uint64_t ea = v->st->gpr[idx] & lcr_mask(ab);
        uint32_t val = 0;
        lcr_xlat x;

        if (in->info.rep && count == 0)
            return LCR_DONE;
        if (*iters >= v->rep_budget)
            return stop(v, LC_STOP_BUDGET);
        /* The port is one device; memory must not be another (MMIO, or a
         * traced page for INS's store): the port read of an INS, or the
         * MMIO read of an OUTS, could not be taken back if the second
         * access were refused. The CPU does it (after the iterations
         * done, as an interrupted REP). */
        if (lcr_mem_xlat(v, seg, ea, n,
                         (is_out ? LCR_ACC_READ : LCR_ACC_WRITE) |
                             LCR_ACC_PLAIN, &x) < 0)
            return LCR_STOP;
        if (is_out) {
            uint64_t d;
            if (lcr_xread(v, &x, &d) < 0)
                return LCR_STOP;
            val = (uint32_t)d;
            if (pio(v, port, n, 1, &val) < 0)
                return LCR_STOP;
        } else {
            if (pio(v, port, n, 0, &val) < 0)
                return LCR_STOP;
            if (lcr_xwrite(v, &x, val) < 0)
                return LCR_STOP;
        }
        (*iters)++;
        gpr_set(v, idx, ab, ea + (uint64_t)step);
        if (!in->info.rep)
            return LCR_DONE;
        gpr_set(v, LC_RCX, ab, count - 1);
        if (v->end_after)   /* stop between iterations: SMC, a new map */
            return count - 1 == 0 ? LCR_DONE : stop(v, v->end_after);
    }
}

/* IN or OUT (not the string forms) of the port its operand names, once
 * allowed: the device access and the register. LCR_STOP if refused. */
static inline __attribute__((always_inline))
int in_out(lcr_vcpu *v, const lcd_insn *in, int is_out, uint16_t port)
{
    const lcd_opnd *data = &in->opnd[is_out ? 1 : 0];
    uint32_t val = 0;

    if (is_out)
        val = (uint32_t)lcr_reg_get(v, data->reg, data->bytes);
    if (pio(v, port, data->bytes, is_out, &val) < 0)
        return LCR_STOP;
    if (!is_out)
        lcr_reg_set(v, data->reg, data->bytes, val);
    return LCR_DONE;
}

static int ex_in_out(lcr_vcpu *v, lcr_ectx *c)
{
    const lcd_insn *in = c->in;
    int is_out = in->info.op == LC_OP_OUT;
    uint16_t p = lcr_io_port(v, in, is_out);

    if (!v->ops->pio || !io_allowed(v, p, in->opnd[is_out ? 1 : 0].bytes))
        return stop(v, LC_STOP_TERMINATOR);
    return in_out(v, in, is_out, p);
}

static int ex_string_io(lcr_vcpu *v, lcr_ectx *c)      /* INS, OUTS */
{
    uint32_t iters = 0;
    int r;

    if (!v->ops->pio ||
        !io_allowed(v, (uint16_t)v->st->gpr[LC_RDX], c->in->mem.bytes))
        return stop(v, LC_STOP_TERMINATOR);
    r = string_io(v, c, c->in->info.op == LC_OP_OUTS, &iters);
    if (iters) {
        v->exits_done++;   /* the string instruction did exit */
        v->exit_insns = v->insns;
    }
    c->exiting = 0;        /* counted here, once, whatever its memory */
    return r;
}

/* ---- other strongly exiting instructions ------------------------------- */

static int ex_cpuid(lcr_vcpu *v, lcr_ectx *c)
{
    lc_cpu_state *s = v->st;
    uint32_t out[4] = { 0, 0, 0, 0 };

    (void)c;
    if (!v->ops->cpuid)
        return stop(v, LC_STOP_TERMINATOR);
    if (lcr_cb_result(v, v->ops->cpuid(v->opaque, (uint32_t)s->gpr[LC_RAX],
                                       (uint32_t)s->gpr[LC_RCX], out)))
        return LCR_STOP;
    gpr_set(v, LC_RAX, 4, out[0]);
    gpr_set(v, LC_RBX, 4, out[1]);
    gpr_set(v, LC_RCX, 4, out[2]);
    gpr_set(v, LC_RDX, 4, out[3]);
    return LCR_DONE;
}

static int ex_hlt(lcr_vcpu *v, lcr_ectx *c)
{
    (void)c;
    if (!v->ops->halt)
        return stop(v, LC_STOP_TERMINATOR);
    if (lcr_cpl0_only(v))
        return LCR_STOP;
    if (lcr_cb_result_cpu(v, v->ops->halt(v->opaque)))
        return LCR_STOP;
    v->stop = LC_STOP_HALT;     /* completes, then ends the run */
    return LCR_DONE;
}

static int ex_mov_dr(lcr_vcpu *v, lcr_ectx *c)
{
    const lcd_insn *in = c->in;
    int to_dr = in->opnd[0].kind == LCD_OPND_REG &&
                in->opnd[0].reg.cls == LCD_REG_DR;
    const lcd_opnd *dr = &in->opnd[to_dr ? 0 : 1];
    const lcd_opnd *gp = &in->opnd[to_dr ? 1 : 0];
    unsigned n = dr->reg.num, bytes = in_long64(v) ? 8 : 4;
    uint64_t val = 0;

    if (to_dr ? !v->ops->dr_write : !v->ops->dr_read)
        return stop(v, LC_STOP_TERMINATOR);
    if (lcr_cpl0_only(v))
        return LCR_STOP;
    /* DR4/DR5 alias DR6/DR7 unless CR4.DE, where they are #UD (SDM vol. 3
     * 18.2.2). */
    if (n == 4 || n == 5) {
        if (v->st->cr4 & LC_CR4_DE)
            return fault(v, LC_VEC_UD);
        n += 2;
    }
    if (n > 7)
        return fault(v, LC_VEC_UD);
    if (to_dr)
        return DONE_IF(!lcr_cb_result_cpu(v, v->ops->dr_write(
                               v->opaque, n, lcr_reg_get(v, gp->reg, bytes))));
    if (lcr_cb_result(v, v->ops->dr_read(v->opaque, n, &val)))
        return LCR_STOP;
    lcr_reg_set(v, gp->reg, bytes, val);
    return LCR_DONE;
}

static int ex_rdmsr(lcr_vcpu *v, lcr_ectx *c)
{
    uint64_t val = 0;

    (void)c;
    if (!v->ops->rdmsr)
        return stop(v, LC_STOP_TERMINATOR);
    if (lcr_cpl0_only(v))
        return LCR_STOP;
    if (lcr_cb_result(v, v->ops->rdmsr(v->opaque, (uint32_t)v->st->gpr[LC_RCX],
                                       &val)))
        return LCR_STOP;
    gpr_set(v, LC_RAX, 4, val & 0xffffffffu);
    gpr_set(v, LC_RDX, 4, val >> 32);
    return LCR_DONE;
}

static int ex_wrmsr(lcr_vcpu *v, lcr_ectx *c)
{
    const lc_cpu_state *s = v->st;
    uint64_t val = (s->gpr[LC_RDX] << 32) | (s->gpr[LC_RAX] & 0xffffffffu);

    (void)c;
    if (!v->ops->wrmsr)
        return stop(v, LC_STOP_TERMINATOR);
    if (lcr_cpl0_only(v))
        return LCR_STOP;
    return DONE_IF(!lcr_cb_result_cpu(v, v->ops->wrmsr(
                           v->opaque, (uint32_t)s->gpr[LC_RCX], val)));
}

static int ex_vmcall(lcr_vcpu *v, lcr_ectx *c)
{
    (void)c;
    if (!v->ops->vmcall)
        return stop(v, LC_STOP_TERMINATOR);
    if (lcr_cb_result_cpu(v, v->ops->vmcall(v->opaque, v->st)))
        return LCR_STOP;
    v->dirty |= LC_DIRTY_GPRS | LC_DIRTY_RFLAGS;
    return LCR_DONE;
}

/* ---- gap fillers found missing on real code paths (issue 14) ------------ */

/* The interrupt shadow (SDM vol. 3 6.8.3; STI, MOV SS, POP SS): no
 * interrupt is delivered between the instruction and the next one.
 * lc_cpu_state has no field to hand a shadow back to the VMM, so a run
 * never stops between the two: the instruction that opens the shadow
 * (its effects already in *v->st, RIP after it) runs the next one here,
 * with no interrupt check, and if that one stops the first one is taken
 * back (`save`), so the run stops before both and the CPU opens the
 * shadow itself on resume. A shadow opening inside a shadow is left to
 * the CPU. An SS load whose shadow's instruction the run cannot make (a
 * terminator, seen by a look; no budget left) stops before it reads
 * anything (ss_load_check()), so it leaves nothing in memory
 * (load_sreg() leaves a descriptor whose accessed bit is clear to the
 * CPU). One whose next
 * instruction stops while it runs (a fault, an access the VMM refuses)
 * is taken back after that walk: the page tables keep the accessed bits
 * it set, as they keep a refused access's (ops.h), bits the CPU sets
 * again when it runs the load. */
typedef struct shadow_save {
    uint64_t   rip, rflags, rsp;
    lc_segment ss;
    uint32_t   dirty;
} shadow_save;

static void shadow_save_state(const lcr_vcpu *v, shadow_save *s)
{
    s->rip = v->st->rip;
    s->rflags = v->st->rflags;
    s->rsp = v->st->gpr[LC_RSP];
    s->ss = v->st->seg[LC_SS];
    s->dirty = v->dirty;
}

static int shadow_run(lcr_vcpu *v, lcr_ectx *c, const shadow_save *s)
{
    uint8_t buf[LC_INSN_MAX_LEN];
    uint64_t gfn[2];
    unsigned ngfn = 0;
    size_t n;
    lcd_insn next;
    lc_stop_reason why = LC_STOP_TERMINATOR;
    uint8_t vec = 0;
    uint64_t addr = 0;
    int r = LCR_STOP;

    if (v->insns + 2 > v->insn_budget) {
        why = LC_STOP_BUDGET;
        goto undo;
    }
    v->st->rip = c->next;
    n = lcr_fetch(v, buf, sizeof buf, gfn, &ngfn);
    if (n == 0 || lcd_decode(v->mode, buf, n, &next) != LC_OK ||
        next.info.exit_class == LC_CLASS_TERMINATOR) {
        why = v->stop == LC_STOP_NONE ? LC_STOP_TERMINATOR : v->stop;
        vec = v->fault_vector;
        addr = v->fault_addr;
        goto undo;
    }
    /* An instruction that may stop with part of its work standing (a
     * REP INS/OUTS: port accesses made, rCX and the index moved) could
     * not be taken back with the one that opened the shadow. Not started
     * here: the CPU runs both. */
    if (next.info.rep && (unsigned)next.info.op < LC_OP_COUNT_ &&
        (lcr_op_rows[next.info.op].flags & LCR_ROW_REP_PARTIAL))
        goto undo;
    v->in_shadow = 1;
    v->route = NULL;            /* the translator's route was for us */
    r = dispatch(v, &next);
    v->in_shadow = 0;
    if (r == LCR_DONE) {
        v->insns++;             /* the one after; lcr_exec counts ours */
        c->next = v->st->rip;
        return LCR_DONE;
    }
    why = v->stop;
    vec = v->fault_vector;
    addr = v->fault_addr;
undo:
    v->st->rip = s->rip;
    v->st->rflags = s->rflags;
    v->st->gpr[LC_RSP] = s->rsp;
    v->st->seg[LC_SS] = s->ss;
    v->dirty = s->dirty;
    v->stop = why;
    v->fault_vector = vec;
    v->fault_addr = addr;
    return LCR_STOP;
}

/* An SS load (MOV SS, POP SS) opens the interrupt shadow: the next
 * instruction runs with it (shadow_run()), or the load is taken back.
 * Before the load reads anything (its source, its descriptor: their
 * walks set accessed bits), stop where the outcome is known already:
 * inside a shadow (left to the CPU), no budget for both, or a next
 * instruction (c->next) the run cannot make, a terminator or no
 * instruction at all, seen by a look that sets no bit. A next
 * instruction the look cannot fetch whole is shadow_run()'s to fetch.
 * LCR_DONE to go on. */
static int ss_load_check(lcr_vcpu *v, const lcr_ectx *c)
{
    uint8_t buf[LC_INSN_MAX_LEN];
    uint64_t gfn[2];
    unsigned ngfn = 0;
    lcd_insn next;
    size_t n;

    if (v->in_shadow)
        return stop(v, LC_STOP_TERMINATOR);
    if (v->insns + 2 > v->insn_budget)
        return stop(v, LC_STOP_BUDGET);
    n = lcr_fetch_look_rec(v, c->next, buf, sizeof buf, gfn, &ngfn, NULL);
    if (n == 0)
        return LCR_DONE;
    if (lcd_decode(v->mode, buf, n, &next) != LC_OK)
        /* (cut short, it may be one) */
        return n == sizeof buf ? stop(v, LC_STOP_TERMINATOR) : LCR_DONE;
    return next.info.exit_class == LC_CLASS_TERMINATOR
           ? stop(v, LC_STOP_TERMINATOR) : LCR_DONE;
}

/* MOV Sreg, r/m16 and MOV r/m, Sreg. A load reads its selector first, so
 * a memory source must be RAM (the descriptor checks can still fault);
 * loading SS opens the interrupt shadow. A store of a selector writes 16
 * bits to memory, or the register at its operand size zero-extended (SDM
 * MOV: processors from the Pentium Pro on zero the upper bits). */
static int load_sreg(lcr_vcpu *v, lcr_ectx *c, unsigned seg, uint16_t sel,
                     const lcr_xlat *stack, unsigned sb, uint64_t new_sp)
{
    lcr_sreg_load ld;
    shadow_save sv = { 0 };   /* set before shadow_run() reads it; the
                                * compiler cannot see the SS guard */

    /* (for SS its callers made ss_load_check()) */
    if (lcr_sreg_prepare(v, seg, sel, &ld) < 0)
        return LCR_STOP;
    /* A load of SS may be taken back with its shadow's instruction
     * (shadow_run): it must leave nothing in memory, so a descriptor
     * whose accessed bit the CPU would set is left to the CPU. */
    if (seg == LC_SS && ld.set_accessed)
        return stop(v, LC_STOP_TERMINATOR);
    if (seg == LC_SS)
        shadow_save_state(v, &sv);
    if (lcr_sreg_commit(v, seg, &ld) < 0)
        return LCR_STOP;
    if (stack) {
        note_vmm_access(stack, &c->vmm);
        gpr_set(v, LC_RSP, sb, new_sp);
    }
    if (seg != LC_SS)
        return LCR_DONE;
    return shadow_run(v, c, &sv);
}

static int ex_mov_sreg(lcr_vcpu *v, lcr_ectx *c)
{
    const lcd_insn *in = c->in;
    const lcd_opnd *d = &in->opnd[0], *src = &in->opnd[1];
    uint64_t a = 0;

    if (d->kind == LCD_OPND_REG && d->reg.cls == LCD_REG_SEG) {
        int r = d->reg.num == LC_SS ? ss_load_check(v, c) : LCR_DONE;
        if (r != LCR_DONE)
            return r;
        if (src->kind == LCD_OPND_MEM) {
            if (operand_xlat(v, c, lcr_eff_addr(v, in, v->st->rip, 0), 2,
                             LCR_ACC_READ | LCR_ACC_PLAIN) < 0)
                return LCR_STOP;
            if (lcr_xread(v, &c->mx, &a))
                return LCR_STOP;
        } else {
            a = lcr_reg_get(v, src->reg, 2);
        }
        return load_sreg(v, c, d->reg.num, (uint16_t)a, NULL, 0, 0);
    }
    if (src->kind != LCD_OPND_REG || src->reg.cls != LCD_REG_SEG ||
        src->reg.num >= LC_NR_SREGS)
        return stop(v, LC_STOP_TERMINATOR);
    a = v->st->seg[src->reg.num].selector;
    if (d->kind == LCD_OPND_MEM)
        return DONE_IF(!operand_xlat(v, c, lcr_eff_addr(v, in, v->st->rip, 0),
                                     2, LCR_ACC_WRITE) &&
                       !lcr_xwrite(v, &c->mx, a));
    lcr_reg_set(v, d->reg, d->bytes, a);
    return LCR_DONE;
}

/* PUSH Sreg. With a 32-bit operand size the CPU either pushes the
 * selector zero-extended or writes only its 16 bits and leaves the upper
 * two bytes of the slot as they were (SDM PUSH; recent Intel parts do the
 * latter). The two agree when those bytes are already zero: then the
 * push runs here (on plain RAM), otherwise it is left to the CPU. 16- and
 * 64-bit pushes are exact (64-bit: zero-extended). */
static int ex_push_sreg(lcr_vcpu *v, lcr_ectx *c)
{
    const lcd_insn *in = c->in;
    unsigned sb = lcr_stack_bytes(v), n = in->info.operand_bits / 8;
    uint64_t sp = (v->st->gpr[LC_RSP] - n) & lcr_mask(sb), old;
    unsigned s = in->opnd[0].reg.num;
    lcr_xlat sx;

    if (s >= LC_NR_SREGS)
        return stop(v, LC_STOP_TERMINATOR);
    /* A 32-bit push of a selector keeps the slot's upper half (SDM PUSH:
     * recent processors make a 16-bit move) or zeroes it; the engine runs
     * it only where both give the same, the upper half 0. Its look at the
     * slot comes first and sets no accessed or dirty bit: a stop that is
     * the engine's leaves the state as before the instruction (found on
     * SeaBIOS's code by lc-diff --engine --code: `push es` after a walk
     * had set the stack page's A bit). A look that faults says nothing:
     * the access below faults again, in the CPU's order. */
    if (n == 4) {
        lcr_xlat px;

        if (lcr_peek_xlat(v, LC_SS, sp, n, LCR_ACC_READ | LCR_ACC_WRITE,
                          &px) < 0)
            lcr_stop_forget(v);
        else if (lcr_xlat_plain(&px) && lcr_xread(v, &px, &old) == 0 &&
                 (old >> 16))
            return stop(v, LC_STOP_TERMINATOR);
    }
    /* a 32-bit slot is read first (its upper half is kept): plain RAM */
    if (lcr_mem_xlat(v, LC_SS, sp, n,
                     n == 4 ? LCR_ACC_READ | LCR_ACC_WRITE | LCR_ACC_PLAIN
                            : LCR_ACC_WRITE,
                     &sx) < 0)
        return LCR_STOP;
    if (n == 4) {
        if (lcr_xread(v, &sx, &old))
            return LCR_STOP;
        if (old >> 16)
            return stop(v, LC_STOP_TERMINATOR);
    }
    if (lcr_xwrite(v, &sx, v->st->seg[s].selector))
        return LCR_STOP;
    note_vmm_access(&sx, &c->vmm);
    gpr_set(v, LC_RSP, sb, sp);
    return LCR_DONE;
}

/* POP Sreg: the selector is the low 16 bits of the operand-size slot;
 * the slot must be RAM (it is read before the descriptor checks). */
static int ex_pop_sreg(lcr_vcpu *v, lcr_ectx *c)
{
    const lcd_insn *in = c->in;
    unsigned sb = lcr_stack_bytes(v), n = in->info.operand_bits / 8;
    uint64_t sp = v->st->gpr[LC_RSP] & lcr_mask(sb), a;
    lcr_xlat sx;
    int r = in->opnd[0].reg.num == LC_SS ? ss_load_check(v, c) : LCR_DONE;

    if (r != LCR_DONE)
        return r;
    if (lcr_mem_xlat(v, LC_SS, sp, n, LCR_ACC_READ | LCR_ACC_PLAIN, &sx) < 0)
        return LCR_STOP;
    if (lcr_xread(v, &sx, &a))
        return LCR_STOP;
    return load_sreg(v, c, in->opnd[0].reg.num, (uint16_t)a, &sx, sb,
                     sp + n);
}

/* DIV and IDIV (SDM DIV, IDIV): rDX:rAX (AX for bytes) by r/m; a zero
 * divisor or a quotient that does not fit raises #DE, so the run stops
 * before the instruction. The divisor is read before that check: from
 * memory it must be RAM. CF, OF, SF, ZF, AF and PF are undefined: they
 * are left unchanged (as QEMU does). */
static int divide(lcr_vcpu *v, lcr_ectx *c, int is_signed)
{
    unsigned n = c->in->opnd[0].bytes, bits = n * 8;
    const uint64_t *g = v->st->gpr;
    unsigned __int128 dd, q, r, top;
    uint64_t b;
    int dneg = 0, bneg = 0;

    if (lcr_opnd_read(v, c, 0, &b))
        return LCR_STOP;
    b &= lcr_mask(n);
    if (n == 1)
        dd = g[LC_RAX] & 0xffff;
    else
        dd = ((unsigned __int128)(g[LC_RDX] & lcr_mask(n)) << bits) |
             (g[LC_RAX] & lcr_mask(n));
    if (b == 0)
        return fault(v, LC_VEC_DE);
    if (is_signed) {
        /* magnitudes, so that no signed operation can overflow */
        unsigned __int128 dmask = bits == 64 ? ~(unsigned __int128)0
                                  : ((unsigned __int128)1 << (2 * bits)) - 1;
        dneg = (int)((dd >> (2 * bits - 1)) & 1);
        bneg = (int)((b >> (bits - 1)) & 1);
        if (dneg)
            dd = (~dd + 1) & dmask;
        if (bneg)
            b = (~b + 1) & lcr_mask(n);
    }
    q = dd / b;
    r = dd % b;
    top = (unsigned __int128)1 << (bits - 1);
    if (!is_signed ? q > lcr_mask(n)
                   : (dneg != bneg ? q > top : q > top - 1))
        return fault(v, LC_VEC_DE);
    if (dneg != bneg)
        q = ~q + 1;
    if (dneg)
        r = ~r + 1;
    if (n == 1) {
        gpr_set(v, LC_RAX, 2, ((uint64_t)(r & 0xff) << 8) | (uint64_t)(q & 0xff));
    } else {
        gpr_set(v, LC_RAX, n, (uint64_t)q & lcr_mask(n));
        gpr_set(v, LC_RDX, n, (uint64_t)r & lcr_mask(n));
    }
    return LCR_DONE;
}

static int ex_div(lcr_vcpu *v, lcr_ectx *c) { return divide(v, c, 0); }
static int ex_idiv(lcr_vcpu *v, lcr_ectx *c) { return divide(v, c, 1); }

/* BT, BTS, BTR, BTC (the row's alu: 0 test, 1 set, 2 reset, 3
 * complement). The bit offset is an immediate (taken modulo the operand
 * size) or a register; with a register and a memory operand it is signed
 * and addresses beyond the operand: the access is at ea + operand size *
 * floor(offset / operand bits) (SDM BT, "bit-offset operand"). CF is the
 * bit; ZF is unaffected; OF, SF, AF and PF are undefined and left
 * unchanged. */
enum { BT_TEST = 0, BT_SET, BT_RESET, BT_COMPL };

static int ex_bt(lcr_vcpu *v, lcr_ectx *c)
{
    const lcd_insn *in = c->in;
    const lcd_opnd *o = &in->opnd[0], *bo = &in->opnd[1];
    unsigned n = o->bytes, bits = n * 8, kind = c->row->alu, bit;
    uint64_t off = lcr_src_value(v, bo), val, ea;

    if (o->kind == LCD_OPND_MEM) {
        ea = lcr_eff_addr(v, in, v->st->rip, 0);
        if (bo->kind == LCD_OPND_REG) {
            uint64_t so = lcr_sext(off, bo->bytes), q;
            /* floor division without a right shift of a negative value */
            q = (so >> 63) ? ~(~so / bits) : so / bits;
            ea = (ea + q * n) & lcr_mask(in->mem.addr_bytes);
        }
        if (operand_xlat(v, c, ea, n, kind == BT_TEST
                                          ? LCR_ACC_READ
                                          : LCR_ACC_READ | LCR_ACC_WRITE) < 0 ||
            lcr_xread(v, &c->mx, &val))
            return LCR_STOP;
    } else {
        val = lcr_reg_get(v, o->reg, n);
    }
    bit = (unsigned)(off & (bits - 1));
    uint64_t m = 1ull << bit, cf = (val & m) != 0;
    switch (kind) {
    case BT_SET: val |= m; break;
    case BT_RESET: val &= ~m; break;
    case BT_COMPL: val ^= m; break;
    default: break;
    }
    if (kind != BT_TEST && lcr_opnd_write(v, c, 0, val))
        return LCR_STOP;
    lcr_set_flags(v, (RF(v) & ~LC_RFLAGS_CF) | (cf ? LC_RFLAGS_CF : 0));
    return LCR_DONE;
}

/* CLI and STI need CPL <= IOPL in protected mode (SDM CLI, STI); with
 * CPL > IOPL the CPU raises #GP or, with CR4.PVI/VME, changes VIF: both
 * left to the CPU, as is virtual-8086 mode. */
static int iflag_allowed(const lcr_vcpu *v)
{
    unsigned iopl = (unsigned)((v->st->rflags & LC_RFLAGS_IOPL) >> 12);

    if (v->mode == LC_MODE_REAL)
        return 1;
    return v->mode != LC_MODE_VM86 && v->cpl <= iopl;
}

static int ex_cli(lcr_vcpu *v, lcr_ectx *c)
{
    (void)c;
    if (!iflag_allowed(v))
        return stop(v, LC_STOP_TERMINATOR);
    return flags_to(v, RF(v) & ~LC_RFLAGS_IF);
}

/* STI with IF clear opens the interrupt shadow (shadow_run); with IF
 * already set it changes nothing. */
static int ex_sti(lcr_vcpu *v, lcr_ectx *c)
{
    shadow_save sv;

    if (!iflag_allowed(v))
        return stop(v, LC_STOP_TERMINATOR);
    if (RF(v) & LC_RFLAGS_IF)
        return LCR_DONE;
    if (v->in_shadow)
        return stop(v, LC_STOP_TERMINATOR);
    shadow_save_state(v, &sv);
    flags_to(v, RF(v) | LC_RFLAGS_IF);
    return shadow_run(v, c, &sv);
}

/* PUSHA/PUSHAD: rAX, rCX, rDX, rBX, the original rSP, rBP, rSI, rDI at
 * the operand size; POPA/POPAD the reverse, skipping the rSP slot (SDM
 * PUSHA, POPA; not in 64-bit mode, where the decoder rejects them). All
 * eight slots are translated first and must be plain RAM. */
static int ex_pusha(lcr_vcpu *v, lcr_ectx *c)
{
    unsigned sb = lcr_stack_bytes(v), n = c->in->info.operand_bits / 8;
    uint64_t sp = v->st->gpr[LC_RSP];
    lcr_xlat sx[8];

    /* The slots lie on at most two pages, those of the first and the
     * last: one that is not plain RAM refuses the instruction before
     * the other's walk sets its A and D bits (peek_plain()). */
    if (peek_plain(v, LC_SS, (sp - n) & lcr_mask(sb), n,
                   LCR_ACC_WRITE) == 0 ||
        peek_plain(v, LC_SS, (sp - 8 * n) & lcr_mask(sb), n,
                   LCR_ACC_WRITE) == 0)
        return stop(v, LC_STOP_TERMINATOR);
    for (unsigned k = 0; k < 8; k++) {
        if (lcr_mem_xlat(v, LC_SS, (sp - (k + 1) * n) & lcr_mask(sb), n,
                         LCR_ACC_WRITE | LCR_ACC_PLAIN, &sx[k]) < 0)
            return LCR_STOP;
    }
    for (unsigned k = 0; k < 8; k++)   /* k is the register number */
        if (lcr_xwrite(v, &sx[k], (k == LC_RSP ? sp : v->st->gpr[k]) &
                                      lcr_mask(n)))
            return LCR_STOP;
    gpr_set(v, LC_RSP, sb, sp - 8 * n);
    return LCR_DONE;
}

static int ex_popa(lcr_vcpu *v, lcr_ectx *c)
{
    unsigned sb = lcr_stack_bytes(v), n = c->in->info.operand_bits / 8;
    uint64_t sp = v->st->gpr[LC_RSP], val[8] = { 0 };
    lcr_xlat sx[8];

    /* as in ex_pusha: the first and the last slot's pages */
    if (peek_plain(v, LC_SS, sp & lcr_mask(sb), n, LCR_ACC_READ) == 0 ||
        peek_plain(v, LC_SS, (sp + 7 * n) & lcr_mask(sb), n,
                   LCR_ACC_READ) == 0)
        return stop(v, LC_STOP_TERMINATOR);
    /* slot k holds register 7 - k (rDI first) */
    for (unsigned k = 0; k < 8; k++) {
        if (7 - k == LC_RSP)
            continue;
        if (lcr_mem_xlat(v, LC_SS, (sp + k * n) & lcr_mask(sb), n,
                         LCR_ACC_READ | LCR_ACC_PLAIN, &sx[k]) < 0)
            return LCR_STOP;
    }
    for (unsigned k = 0; k < 8; k++)
        if (7 - k != LC_RSP && lcr_xread(v, &sx[k], &val[7 - k]))
            return LCR_STOP;
    for (unsigned r = 0; r < 8; r++)
        if (r != LC_RSP)
            gpr_set(v, r, n, val[r]);
    gpr_set(v, LC_RSP, sb, sp + 8 * n);
    return LCR_DONE;
}

/* LEAVE: rSP = rBP at the stack size, then pop rBP at the operand size
 * (SDM LEAVE). */
static int ex_leave(lcr_vcpu *v, lcr_ectx *c)
{
    unsigned sb = lcr_stack_bytes(v), n = c->in->info.operand_bits / 8;
    uint64_t sp = v->st->gpr[LC_RBP] & lcr_mask(sb), a;
    lcr_xlat sx;

    if (lcr_mem_xlat(v, LC_SS, sp, n, LCR_ACC_READ, &sx) < 0 ||
        lcr_xread(v, &sx, &a))
        return LCR_STOP;
    note_vmm_access(&sx, &c->vmm);
    gpr_set(v, LC_RSP, sb, sp + n);
    gpr_set(v, LC_RBP, n, a);
    return LCR_DONE;
}

/* RDTSC through the VMM's rdtsc callback (the guest's TSC, offset and
 * scaling applied by the VMM). CR4.TSD at CPL > 0: #GP, stop before. */
static int ex_rdtsc(lcr_vcpu *v, lcr_ectx *c)
{
    uint64_t tsc = 0;

    (void)c;
    if (!v->ops->rdtsc)
        return stop(v, LC_STOP_TERMINATOR);
    if ((v->st->cr4 & LC_CR4_TSD) && v->cpl > 0)
        return fault(v, LC_VEC_GP);
    if (lcr_cb_result(v, v->ops->rdtsc(v->opaque, &tsc)))
        return LCR_STOP;
    gpr_set(v, LC_RAX, 4, tsc & 0xffffffffu);
    gpr_set(v, LC_RDX, 4, tsc >> 32);
    return LCR_DONE;
}

/* ---- the operation table ------------------------------------------------ *
 *
 * One row per LC_OP_LIST entry, generated from the list itself: each
 * operation needs a ROW_<name> macro below or the table does not compile,
 * so an operation added to include/cluster/decode.h cannot be forgotten
 * here. A NULL executor makes the operation a terminator at run time
 * whatever the decoder said; the decoder's LCD_F_EXEC rows and the
 * non-NULL rows here are checked to match (tests/unit/test_exec.c). */

#define X_(ex, flags, fast, alu) { ex, flags, fast, alu, 0 }
#define PLAIN(ex)   X_(ex, 0, LCR_FAST_NONE, 0)
#define OWNMEM(ex)  X_(ex, LCR_ROW_OWNMEM, LCR_FAST_NONE, 0)
#define ALU(op)     X_(ex_binop, LCR_ROW_STORE, LCR_FAST_ALU, op)
#define CMPALU(op)  X_(ex_binop, 0, LCR_FAST_ALU, op)
#define SHIFT(op)   X_(ex_shift, 0, LCR_FAST_NONE, op)
#define NOTRUN      X_(NULL, 0, LCR_FAST_NONE, 0)

#define ROW_OTHER    NOTRUN
/* data movement */
#define ROW_MOV      X_(ex_mov, 0, LCR_FAST_MOV, 0)
#define ROW_MOVZX    PLAIN(ex_mov)
#define ROW_MOVSX    PLAIN(ex_movsx)
#define ROW_MOVSXD   PLAIN(ex_movsx)
#define ROW_LEA      PLAIN(ex_lea)
#define ROW_XCHG     X_(ex_xchg, LCR_ROW_LOCKED, LCR_FAST_NONE, 0)
#define ROW_PUSH     OWNMEM(ex_push)
#define ROW_POP      OWNMEM(ex_pop)
#define ROW_CMOVCC   PLAIN(ex_cmovcc)
#define ROW_SETCC    PLAIN(ex_setcc)
#define ROW_BSWAP    PLAIN(ex_bswap)
#define ROW_CBW      PLAIN(ex_cbw)
#define ROW_CWD      PLAIN(ex_cwd)
/* arithmetic and logic */
#define ROW_ADD      ALU(LCR_ADD)
#define ROW_ADC      ALU(LCR_ADC)
#define ROW_SUB      ALU(LCR_SUB)
#define ROW_SBB      ALU(LCR_SBB)
#define ROW_CMP      CMPALU(LCR_SUB)
#define ROW_AND      ALU(LCR_AND)
#define ROW_OR       ALU(LCR_OR)
#define ROW_XOR      ALU(LCR_XOR)
#define ROW_TEST     CMPALU(LCR_AND)
#define ROW_INC      PLAIN(ex_inc)
#define ROW_DEC      PLAIN(ex_dec)
#define ROW_NEG      PLAIN(ex_neg)
#define ROW_NOT      PLAIN(ex_not)
#define ROW_SHL      SHIFT(LCR_SHL)
#define ROW_SHR      SHIFT(LCR_SHR)
#define ROW_SAR      SHIFT(LCR_SAR)
#define ROW_ROL      SHIFT(LCR_ROL)
#define ROW_ROR      SHIFT(LCR_ROR)
#define ROW_RCL      SHIFT(LCR_RCL)
#define ROW_RCR      SHIFT(LCR_RCR)
#define ROW_MUL      PLAIN(ex_mul)
#define ROW_IMUL     PLAIN(ex_imul)
/* flags and no-ops */
#define ROW_CLC      PLAIN(ex_clc)
#define ROW_STC      PLAIN(ex_stc)
#define ROW_CMC      PLAIN(ex_cmc)
#define ROW_CLD      PLAIN(ex_cld)
#define ROW_STD      PLAIN(ex_std)
#define ROW_NOP      PLAIN(ex_nop)
/* near control flow; CALL and RET are named, not yet run */
#define ROW_JMP      X_(ex_jmp, LCR_ROW_PLAINMEM, LCR_FAST_NONE, 0)
#define ROW_JCC      PLAIN(ex_jcc)
#define ROW_LOOP     PLAIN(ex_loop)
#define ROW_LOOPE    PLAIN(ex_loope)
#define ROW_LOOPNE   PLAIN(ex_loopne)
#define ROW_JCXZ     PLAIN(ex_jcxz)
#define ROW_CALL     OWNMEM(ex_call)
#define ROW_RET      OWNMEM(ex_ret)
/* strongly exiting: run through the VMM's callbacks */
#define ROW_IN       PLAIN(ex_in_out)
#define ROW_OUT      PLAIN(ex_in_out)
#define ROW_INS      X_(ex_string_io, LCR_ROW_OWNMEM | LCR_ROW_REP_PARTIAL, \
                        LCR_FAST_NONE, 0)
#define ROW_OUTS     ROW_INS
#define ROW_CPUID    PLAIN(ex_cpuid)
#define ROW_HLT      PLAIN(ex_hlt)
#define ROW_MOV_DR   PLAIN(ex_mov_dr)
#define ROW_RDMSR    PLAIN(ex_rdmsr)
#define ROW_WRMSR    PLAIN(ex_wrmsr)
#define ROW_VMREAD   OWNMEM(lcr_ex_vmread)      /* vmcs.c, section 8 */
#define ROW_VMWRITE  OWNMEM(lcr_ex_vmwrite)     /* peeks at its source */
#define ROW_VMCALL   PLAIN(ex_vmcall)
/* never run: mode and paging changes */
#define ROW_MOV_CR   NOTRUN
/* segment register moves, with the CPU's descriptor checks (sreg.c) */
#define ROW_MOV_SREG OWNMEM(ex_mov_sreg)
/* issue 14's gap fillers; BT* keep the bit test's kind in `alu` */
#define ROW_DIV      X_(ex_div, LCR_ROW_PLAINMEM, LCR_FAST_NONE, 0)
#define ROW_IDIV     X_(ex_idiv, LCR_ROW_PLAINMEM, LCR_FAST_NONE, 0)
#define ROW_BT       X_(ex_bt, LCR_ROW_OWNMEM, LCR_FAST_NONE, BT_TEST)
#define ROW_BTS      X_(ex_bt, LCR_ROW_OWNMEM, LCR_FAST_NONE, BT_SET)
#define ROW_BTR      X_(ex_bt, LCR_ROW_OWNMEM, LCR_FAST_NONE, BT_RESET)
#define ROW_BTC      X_(ex_bt, LCR_ROW_OWNMEM, LCR_FAST_NONE, BT_COMPL)
#define ROW_CLI      PLAIN(ex_cli)
#define ROW_STI      PLAIN(ex_sti)
#define ROW_PUSHA    OWNMEM(ex_pusha)
#define ROW_POPA     OWNMEM(ex_popa)
#define ROW_LEAVE    OWNMEM(ex_leave)
#define ROW_RDTSC    PLAIN(ex_rdtsc)

const lcr_op_row lcr_op_rows[LC_OP_COUNT_] = {
#define ROW_(name, str) [LC_OP_##name] = ROW_##name,
    LC_OP_LIST(ROW_)
#undef ROW_
};

/* ---- the dispatcher ---------------------------------------------------- */

/* Executes `in`; returns LCR_DONE with RIP set, or LCR_STOP. */
static int dispatch(lcr_vcpu *v, const lcd_insn *in)
{
    const lc_insn_info *ii = &in->info;
    const lcr_op_row *row;
    lcr_ectx c;     /* mx is filled only when an operand needs it */

    if ((unsigned)ii->op >= LC_OP_COUNT_ || !lcr_op_rows[ii->op].ex)
        return stop(v, LC_STOP_TERMINATOR);
    row = &lcr_op_rows[ii->op];
    c.in = in;
    c.row = row;
    c.next = v->st->rip + ii->length;
    c.has_mx = 0;
    c.vmm = 0;
    c.exiting = ii->exit_class == LC_CLASS_STRONG;
    if (!(row->flags & LCR_ROW_OWNMEM) && prepare_mem(v, &c) < 0)
        return LCR_STOP;
    if (row->ex(v, &c) != LCR_DONE)
        return LCR_STOP;
    if (c.has_mx)
        note_vmm_access(&c.mx, &c.vmm);
    if (c.exiting || c.vmm) {
        v->exits_done++;
        v->exit_insns = v->insns;
    }
    v->st->rip = c.next;
    v->dirty |= LC_DIRTY_RIP;
    /* RF is cleared once an instruction completes (SDM vol. 3 18.3.1.1);
     * for the inline forms, at the end of the engine's run */
    if (__builtin_expect((v->st->rflags & LC_RFLAGS_RF) != 0, 0)) {
        v->st->rflags &= ~LC_RFLAGS_RF;
        v->dirty |= LC_DIRTY_RFLAGS;
    }
    return LCR_DONE;
}

/* ---- public entry points ----------------------------------------------- */

void lcr_begin(lcr_vcpu *v, lc_cpu_state *st, const lc_vm_ops *ops,
               void *opaque)
{
    lcr_begin_common(v, st, ops, opaque);
    lcr_pwc_drop(v);
}


unsigned lcr_inline_kind(const lcd_insn *in)
{
    const lc_insn_info *ii = &in->info;
    const lcd_opnd *o0 = &in->opnd[0], *o1 = &in->opnd[1];
    unsigned n = in->mem.bytes;

    if (ii->exit_class == LC_CLASS_TERMINATOR)
        return LCR_INL_NONE;
    switch (ii->op) {
    case LC_OP_MOV:
        /* between a general register (not AH..BH) or an immediate and
         * memory, of a size one host access can do */
        if (in->nopnds != 2 || !in->mem.present || in->mem.agen ||
            ii->exit_class == LC_CLASS_STRONG || (n != 1 && n != 2 && n != 4 && n != 8))
            return LCR_INL_NONE;
        if (o0->kind == LCD_OPND_REG && o0->reg.cls == LCD_REG_GPR &&
            o0->bytes == n && o1->kind == LCD_OPND_MEM)
            return LCR_INL_LOAD;
        if (o0->kind == LCD_OPND_MEM &&
            ((o1->kind == LCD_OPND_REG && o1->reg.cls == LCD_REG_GPR) ||
             o1->kind == LCD_OPND_IMM))
            return LCR_INL_STORE;
        return LCR_INL_NONE;
    case LC_OP_CALL:
        if (ii->cflow == LC_CF_CALL_REL)
            return LCR_INL_CALL_REL;
        if (ii->cflow == LC_CF_CALL_IND && in->nopnds > 0 &&
            o0->kind == LCD_OPND_REG)
            return LCR_INL_CALL_REG;
        return LCR_INL_NONE;
    case LC_OP_RET:
        return ii->cflow == LC_CF_RET ? LCR_INL_RET : LCR_INL_NONE;
    case LC_OP_PUSH:
        /* a general register or an immediate (not a segment register,
         * not memory) */
        if (in->nopnds >= 1 &&
            ((o0->kind == LCD_OPND_REG && o0->reg.cls == LCD_REG_GPR) ||
             o0->kind == LCD_OPND_IMM))
            return LCR_INL_PUSH;
        return LCR_INL_NONE;
    case LC_OP_POP:
        return in->nopnds >= 1 && o0->kind == LCD_OPND_REG &&
               o0->reg.cls == LCD_REG_GPR ? LCR_INL_POP : LCR_INL_NONE;
    case LC_OP_IN:
        return in->nopnds == 2 && o0->kind == LCD_OPND_REG ? LCR_INL_IN
                                                           : LCR_INL_NONE;
    case LC_OP_OUT:
        return in->nopnds == 2 && o1->kind == LCD_OPND_REG ? LCR_INL_OUT
                                                           : LCR_INL_NONE;
    default:
        return LCR_INL_NONE;
    }
}

/* MOV between a general register (or an immediate) and RAM: the shape
 * was checked by lcr_inline_kind(). */
static inline __attribute__((always_inline))
int inline_mov(lcr_vcpu *v, const lcd_insn *in, int store, int m64)
{
    unsigned n = in->mem.bytes;
    uint8_t *h;

    /* Segmentation as always (a fault there is found again by lcr_exec). */
    h = ram_fast(v, in->mem.seg, lcr_eff_addr(v, in, v->st->rip, 0), n,
                 store ? LCR_ACC_WRITE : LCR_ACC_READ, m64);
    if (!h)
        return 0;               /* unaligned: lcr_read/lcr_write split it */
    if (store)
        ram_store_n(h, n, lcr_src_value(v, &in->opnd[1]));
    else
        lcr_reg_set(v, in->opnd[0].reg, n, ram_load_n(h, n));
    v->st->rip += in->info.length;
    return 1;
}

/* Near CALL, relative or through a register, whose target does not
 * fault and whose stack slot the cache serves: ex_call()'s fast case. */
static inline __attribute__((always_inline))
int inline_call(lcr_vcpu *v, const lcd_insn *in, int rel, int m64)
{
    const lc_insn_info *ii = &in->info;
    unsigned n = ii->operand_bits / 8;
    uint64_t next = v->st->rip + ii->length, target;

    if (rel)
        target = (next + (uint64_t)ii->branch_disp) & lcr_mask(n);
    else
        target = lcr_reg_get(v, in->opnd[0].reg, n) & lcr_mask(n);
    if (!branch_ok_m(v, target, m64) ||
        !(m64 ? stack_push_fast64(v, n, next) : stack_push_fast(v, n, next)))
        return 0;
    v->st->rip = target;
    return 1;
}

/* Near RET and RET imm16 whose stack slot the cache serves and whose
 * target does not fault: ex_ret()'s fast case. */
static inline __attribute__((always_inline))
int inline_ret(lcr_vcpu *v, const lcd_insn *in, int m64)
{
    unsigned n = in->info.operand_bits / 8;
    uint64_t target;

    if (!stack_read_fast(v, n, &target, m64))
        return 0;
    target &= lcr_mask(n);
    if (!branch_ok_m(v, target, m64))
        return 0;
    ret_release(v, in, n, m64);
    v->st->rip = target;
    return 1;
}

/* PUSH of a general register or an immediate whose stack slot the cache
 * serves: ex_push()'s fast case (PUSH rSP pushes rSP before the push;
 * an immediate is sign-extended to the operand size). */
static inline __attribute__((always_inline))
int inline_push(lcr_vcpu *v, const lcd_insn *in, int m64)
{
    unsigned n = in->info.operand_bits / 8;
    const lcd_opnd *o = &in->opnd[0];
    uint64_t a = lcr_src_value(v, o);

    if (o->kind == LCD_OPND_IMM)
        a = lcr_sext(a, o->bytes);

    if (!(m64 ? stack_push_fast64(v, n, a) : stack_push_fast(v, n, a)))
        return 0;
    v->st->rip += in->info.length;
    return 1;
}

/* POP to a general register whose stack slot the cache serves: ex_pop()'s
 * fast case (POP rSP leaves the popped value in rSP). */
static inline __attribute__((always_inline))
int inline_pop(lcr_vcpu *v, const lcd_insn *in, int m64)
{
    unsigned n = in->info.operand_bits / 8;
    uint64_t a;

    if (!stack_read_fast(v, n, &a, m64))
        return 0;
    stack_release(v, n, m64);
    lcr_reg_set(v, in->opnd[0].reg, n, a);
    v->st->rip += in->info.length;
    return 1;
}

/* IN and OUT (not the string forms) where no bit map needs reading:
 * ex_in_out() without the dispatcher. The callback's refusal is final:
 * -1 with v->stop set, as lcr_exec() would stop. */
static inline __attribute__((always_inline))
int inline_io(lcr_vcpu *v, const lcd_insn *in, int is_out)
{
    if (!v->ops->pio || !io_allowed_by_iopl(v))
        return 0;
    if (in_out(v, in, is_out, lcr_io_port(v, in, is_out)) != LCR_DONE)
        return -1;
    v->exits_done++;
    v->exit_insns = v->insns;
    v->st->rip += in->info.length;
    return 1;
}

/* The inline forms that reach only RAM, through the page-walk cache, one
 * function each (lcr_inline_ram_fn()): no callback runs, so nothing can
 * end the run after them (end_after). Store forwarding (rt.h) lives
 * through the stack's own forms only (CALL, RET, PUSH, POP): the MOVs
 * observe memory and forget it. A form that declines leaves the
 * instruction to lcr_exec(), which forgets it as well. */
static inline __attribute__((always_inline))
int inline_done(lcr_vcpu *v, int r)
{
    if (!r)
        return 0;
    v->stop = LC_STOP_NONE;
    v->dirty |= LC_DIRTY_RIP;
    v->insns++;
    return 1;
}

/* Each form twice: for every mode, and for 64-bit code (the mode checked
 * once here; a translation keeps its mode, but an instruction it ran
 * through lcr_exec() may have left it). */
#define INLINE_FORM(name, body)                                         \
    static __attribute__((noinline))                                    \
    int name(lcr_vcpu *v, const lcd_insn *in)                           \
    {                                                                   \
        const int m64 = 0;                                              \
        body                                                            \
    }                                                                   \
    static __attribute__((noinline))                                    \
    int name##64(lcr_vcpu *v, const lcd_insn *in)                       \
    {                                                                   \
        const int m64 = 1;                                              \
        if (!in_long64(v))                                              \
            return name(v, in);                                         \
        body                                                            \
    }
INLINE_FORM(inl_load, lcr_fwd_forget(v);
            return inline_done(v, inline_mov(v, in, 0, m64));)
INLINE_FORM(inl_store, lcr_fwd_forget(v);
            return inline_done(v, inline_mov(v, in, 1, m64));)
INLINE_FORM(inl_call_rel, return inline_done(v, inline_call(v, in, 1, m64));)
INLINE_FORM(inl_call_reg, return inline_done(v, inline_call(v, in, 0, m64));)
INLINE_FORM(inl_ret, return inline_done(v, inline_ret(v, in, m64));)
INLINE_FORM(inl_push, return inline_done(v, inline_push(v, in, m64));)
INLINE_FORM(inl_pop, return inline_done(v, inline_pop(v, in, m64));)
#undef INLINE_FORM

/* The stack's forms in 64-bit code for their common case, an 8-byte slot
 * on the TLB page of this run (lcr_pwc_tlb_hit(); for a read, or the slot
 * forwarded from this run's last stack store): leaves, with no frame to
 * set up. Everything else, the page's renewal (a run's first stack
 * access) among it, is the general form's, by a tail call. Each does
 * what the general form does in that case, its checks in the same order
 * where one can fail after another has passed. */
static inline __attribute__((always_inline))
int leaf_push8(lcr_vcpu *v, uint64_t val, int renew)
{
    uint64_t sp = v->st->gpr[LC_RSP] - 8;
    uint8_t *h = renew ? lcr_pwc_tlb_get(v, sp, 8, 1)
                       : lcr_pwc_tlb_hit(v, sp, 8, 1);

    if (!h || (((uintptr_t)h | sp) & 7))
        return 0;
    __atomic_store_n((uint64_t *)(void *)h, val, __ATOMIC_RELAXED);
    v->st->gpr[LC_RSP] = sp;
    v->fwd_n = 8;
    v->fwd_sp = sp;
    v->fwd_val = val;
    return 1;
}

static inline __attribute__((always_inline))
int leaf_pop8(lcr_vcpu *v, uint64_t *val, int renew)
{
    uint64_t sp = v->st->gpr[LC_RSP];
    uint8_t *h;

    if (v->fwd_n == 8 && v->fwd_sp == sp) {
        *val = v->fwd_val;
    } else {
        h = renew ? lcr_pwc_tlb_get(v, sp, 8, 0)
                  : lcr_pwc_tlb_hit(v, sp, 8, 0);
        if (!h || (((uintptr_t)h | sp) & 7))
            return 0;
        *val = __atomic_load_n((const uint64_t *)(const void *)h,
                               __ATOMIC_RELAXED);
    }
    lcr_fwd_forget(v);
    return 1;
}

static inline __attribute__((always_inline))
int leaf_done(lcr_vcpu *v, uint64_t rip)
{
    v->st->rip = rip;
    v->stop = LC_STOP_NONE;
    v->dirty |= LC_DIRTY_RIP | LC_DIRTY_GPRS;
    v->insns++;
    return 1;
}

/* Each leaf twice: `renew` clear, the leaf, which on a miss tail-calls
 * the same with `renew` set, out of line: the TLB page renewed once a run
 * (lcr_pwc_tlb_get()), whose call needs a frame; what that declines is
 * the general form's. */
#define LEAF_FORM(name, general, ...)                                  \
    static __attribute__((noinline))                                    \
    int name##_renew(lcr_vcpu *v, const lcd_insn *in)                   \
    {                                                                   \
        const int renew = 1;                                            \
        __VA_ARGS__                                                     \
        return general(v, in);                                          \
    }                                                                   \
    static int name(lcr_vcpu *v, const lcd_insn *in)                    \
    {                                                                   \
        const int renew = 0;                                            \
        __VA_ARGS__                                                     \
        return name##_renew(v, in);                                     \
    }

/* near CALL rel: the target's check, then the push */
LEAF_FORM(leaf_call_rel64, inl_call_rel64,
    uint64_t next = v->st->rip + in->info.length;
    uint64_t target = next + (uint64_t)in->info.branch_disp;

    if (in_long64(v) && in->info.operand_bits == 64 &&
        lcr_canonical_v(v, target) && leaf_push8(v, next, renew))
        return leaf_done(v, target);)

/* the same where the translation found the operand size 64 and the
 * target canonical with 48-bit linear addresses, so with 57-bit ones too
 * (lcr_inline_ram_fn_at()): at the RIP it was made for, no target can
 * fault */
LEAF_FORM(leaf_call_rel64_canon, inl_call_rel64,
    uint64_t next = v->st->rip + in->info.length;

    if (in_long64(v) && leaf_push8(v, next, renew))
        return leaf_done(v, next + (uint64_t)in->info.branch_disp);)

/* near RET and RET imm16: the slot read (or forwarded: read once, as
 * inline_ret() reads it), then the target's check */
#define LEAF_RET(has_imm, size_known)                                    \
    uint64_t sp = v->st->gpr[LC_RSP], target;                           \
                                                                        \
    if (in_long64(v) && (size_known || in->info.operand_bits == 64) &&  \
        leaf_pop8(v, &target, renew)) {                                 \
        if (!lcr_canonical_v(v, target))                                \
            return 0;                                                   \
        if (has_imm && in->nopnds > 0 &&                                \
            in->opnd[0].kind == LCD_OPND_IMM)                           \
            sp += in->opnd[0].imm & 0xffff;                             \
        v->st->gpr[LC_RSP] = sp + 8;                                    \
        return leaf_done(v, target);                                    \
    }
LEAF_FORM(leaf_ret64_imm, inl_ret64, LEAF_RET(1, 0))
/* a RET without imm16 whose operand size the translation found 64
 * (lcr_inline_ram_fn_at()) */
LEAF_FORM(leaf_ret64_q, inl_ret64, LEAF_RET(0, 1))
#undef LEAF_RET

/* PUSH of a general register (PUSH rSP pushes rSP as it was) */
LEAF_FORM(leaf_push64, inl_push64,
    const lcd_opnd *o = &in->opnd[0];

    if (in_long64(v) && in->info.operand_bits == 64 &&
        o->kind == LCD_OPND_REG && o->reg.cls == LCD_REG_GPR &&
        leaf_push8(v, v->st->gpr[o->reg.num & 15], renew))
        return leaf_done(v, v->st->rip + in->info.length);)

/* POP to a general register (POP rSP leaves the popped value in rSP) */
LEAF_FORM(leaf_pop64, inl_pop64,
    const lcd_opnd *o = &in->opnd[0];
    uint64_t a;

    if (in_long64(v) && in->info.operand_bits == 64 &&
        o->kind == LCD_OPND_REG && o->reg.cls == LCD_REG_GPR &&
        leaf_pop8(v, &a, renew)) {
        v->st->gpr[LC_RSP] += 8;
        v->st->gpr[o->reg.num & 15] = a;
        return leaf_done(v, v->st->rip + in->info.length);
    })
#undef LEAF_FORM

lcr_inline_fn lcr_inline_ram_fn(unsigned kind, lc_cpu_mode mode)
{
    int m64 = mode == LC_MODE_LONG64;

    switch (kind) {
    case LCR_INL_LOAD:     return m64 ? inl_load64 : inl_load;
    case LCR_INL_STORE:    return m64 ? inl_store64 : inl_store;
    case LCR_INL_CALL_REL: return m64 ? leaf_call_rel64 : inl_call_rel;
    case LCR_INL_CALL_REG: return m64 ? inl_call_reg64 : inl_call_reg;
    case LCR_INL_RET:      return m64 ? leaf_ret64_imm : inl_ret;
    case LCR_INL_PUSH:     return m64 ? leaf_push64 : inl_push;
    case LCR_INL_POP:      return m64 ? leaf_pop64 : inl_pop;
    default:               return NULL;   /* IN, OUT, none */
    }
}

lcr_inline_fn lcr_inline_ram_fn_at(unsigned kind, lc_cpu_mode mode,
                                   const lcd_insn *in, uint64_t rip)
{
    int q = mode == LC_MODE_LONG64 && in->info.operand_bits == 64;

    if (q && kind == LCR_INL_CALL_REL &&
        lcr_canonical(rip + in->info.length + (uint64_t)in->info.branch_disp,
                      48))
        return leaf_call_rel64_canon;
    if (q && kind == LCR_INL_RET &&
        !(in->nopnds > 0 && in->opnd[0].kind == LCD_OPND_IMM))
        return leaf_ret64_q;
    return lcr_inline_ram_fn(kind, mode);
}

int lcr_exec_inline(lcr_vcpu *v, const lcd_insn *in, unsigned kind,
                    lcr_inline_fn ram_fn)
{
    int r;

    /* lcr_exec()'s own checks; the caller has made the interrupt check
     * unnecessary (not a loop head). */
    if (v->insns >= v->insn_budget || (v->st->rflags & LC_RFLAGS_TF))
        return 0;
    if (kind != LCR_INL_IN && kind != LCR_INL_OUT)
        return ram_fn ? ram_fn(v, in) : 0;
    lcr_fwd_forget(v);
    r = inline_io(v, in, kind == LCR_INL_OUT);
    if (r <= 0)
        return r;
    v->stop = LC_STOP_NONE;
    v->dirty |= LC_DIRTY_RIP;
    v->insns++;
    if (__builtin_expect(v->end_after != 0, 0)) {
        /* done, and the run ends here: its callback changed the
         * guest-physical map */
        v->stop = v->end_after;
        return -1;
    }
    return 1;
}

int lcr_exec(lcr_vcpu *v, const lcd_insn *in)
{
    int r;

    lcr_insn_begin(v);
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
    /* It may change the paging state (MOV CR, WRMSR EFER, POPF's AC, a
     * far transfer's CPL): the page-walk cache compares it again. */
    v->pwc.state_known = 0;
    v->seg_known = 0;
    r = dispatch(v, in);
    v->pwc.state_known = 0;
    v->seg_known = 0;
    if (r == LCR_DONE) {
        v->insns++;
        if (v->end_after && v->stop == LC_STOP_NONE)
            v->stop = v->end_after;  /* completed; the run ends after it */
    }
    return r;
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

