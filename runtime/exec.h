/* SPDX-License-Identifier: MIT */
/*
 * runtime/exec.h: what the executors share (private to runtime/).
 *
 * An executor (`ex_add`, `ex_mov`, ... in exec.c; `lcr_ex_vmread` and
 * `lcr_ex_vmwrite` in vmcs.c) runs phase two of one operation: the
 * dispatcher has done phase one for the explicit memory operand (c->mx)
 * unless the row says LCR_ROW_OWNMEM. It returns LCR_DONE with its
 * effects complete (c->next is the new RIP), or LCR_STOP with v->stop set
 * and no register written. The helpers are inline so the executors in
 * exec.c compile as the former single switch did.
 */
#ifndef LC_RUNTIME_EXEC_H
#define LC_RUNTIME_EXEC_H

#include <string.h>

#include "alu.h"
#include "rt.h"

typedef struct lcr_ectx {
    const lcd_insn   *in;
    const lcr_op_row *row;
    uint64_t next;      /* RIP after the instruction; branches change it */
    lcr_xlat mx;        /* the explicit memory operand, translated */
    int has_mx;
    int vmm;            /* an access went to the VMM (MMIO / traced) */
    int exiting;        /* counts as an exit (strongly exiting) */
} lcr_ectx;

static inline int lcr_stop(lcr_vcpu *v, lc_stop_reason why)
{
    v->stop = why;
    return LCR_STOP;
}

/* Stop before the instruction: the guest raises `vector` itself. */
static inline int lcr_fault(lcr_vcpu *v, uint8_t vector)
{
    v->fault_vector = vector;
    return lcr_stop(v, LC_STOP_FAULT);
}

/* Register write as the CPU does it: 8- and 16-bit writes keep the rest
 * of the register, 32-bit writes zero the upper half (SDM vol. 1 3.4.1.1;
 * the same is done outside 64-bit mode, where the upper half is not
 * architecturally visible). */
static inline void lcr_reg_set(lcr_vcpu *v, lcd_reg r, unsigned bytes,
                               uint64_t val)
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

static inline void lcr_set_flags(lcr_vcpu *v, uint64_t fl)
{
    if (v->st->rflags != fl)
        v->dirty |= LC_DIRTY_RFLAGS;
    v->st->rflags = fl;
}

static inline int lcr_xread(lcr_vcpu *v, const lcr_xlat *x, uint64_t *val)
{
    uint8_t b[8] = { 0 };

    if (lcr_read(v, x, b) < 0)
        return -1;
    *val = 0;
    memcpy(val, b, x->len > 8 ? 8 : x->len);  /* x86 host: little endian */
    return 0;
}

static inline int lcr_xwrite(lcr_vcpu *v, const lcr_xlat *x, uint64_t val)
{
    uint8_t b[8];

    memcpy(b, &val, sizeof b);
    return lcr_write(v, x, b);
}

/* Operand i of the instruction: register, immediate or the translated
 * memory operand. 0, or -1 with v->stop set. */
static inline int lcr_opnd_read(lcr_vcpu *v, lcr_ectx *c, unsigned i,
                                uint64_t *val)
{
    const lcd_opnd *o = &c->in->opnd[i];

    if (o->kind == LCD_OPND_MEM)
        return lcr_xread(v, &c->mx, val);
    *val = lcr_src_value(v, o);
    return 0;
}

static inline int lcr_opnd_write(lcr_vcpu *v, lcr_ectx *c, unsigned i,
                                 uint64_t val)
{
    const lcd_opnd *o = &c->in->opnd[i];

    if (o->kind == LCD_OPND_MEM)
        return lcr_xwrite(v, &c->mx, val);
    if (o->kind == LCD_OPND_REG)
        lcr_reg_set(v, o->reg, o->bytes, val);
    return 0;
}

/* A callback's answer: LC_CB_STOP/ERROR stop the run before the
 * instruction (ERROR also reports LC_ERR_CALLBACK to the engine). For a
 * device's access and for the callbacks that only answer a read (CPUID,
 * RDMSR, a debug register, RDTSC, VMREAD): the page-walk cache's epoch
 * goes on unless the map changed (lcr_vmm_ran(), as a TLB outlives a
 * DMA). */
static inline int lcr_cb_result(lcr_vcpu *v, lc_cb_result r)
{
    lcr_vmm_ran(v);         /* guest memory, even its map, may differ */
    if (r == LC_CB_OK)
        return 0;
    if (r == LC_CB_ERROR)
        v->error = LC_ERR_CALLBACK;
    v->stop = LC_STOP_CALLBACK;
    return -1;
}

/* The same for a callback whose effect the VMM defines beyond an answer:
 * WRMSR, a debug-register write, HLT, VMCALL, VMWRITE. A hypercall or a
 * paravirtual MSR may flush the guest's TLB or edit its page tables for
 * it (Hyper-V's flush hypercalls, a PV MMU): an invalidation made inside
 * the run, unlike a device's DMA. The page-walk cache's epoch ends, so
 * what it holds is read back before it is used again. */
static inline int lcr_cb_result_cpu(lcr_vcpu *v, lc_cb_result r)
{
    lcr_pwc_forget(v);
    return lcr_cb_result(v, r);
}

/* Instructions that #GP outside CPL 0 (and in virtual-8086 mode). */
static inline int lcr_cpl0_only(lcr_vcpu *v)
{
    if (v->cpl != 0 || v->mode == LC_MODE_VM86) {
        lcr_fault(v, LC_VEC_GP);
        return -1;
    }
    return 0;
}

/* A look at an access the instruction will make: lcr_mem_xlat() as a
 * peek (LCR_PROBE_PEEK: the walk and its checks, no A/D bit set,
 * nothing cached) and without the instruction's device route (it is for
 * the accesses the instruction makes, and this is none). 0, or -1 with
 * v->stop set. */
static inline int lcr_peek_xlat(lcr_vcpu *v, unsigned seg, uint64_t ea,
                                unsigned bytes, unsigned access,
                                lcr_xlat *x)
{
    lcr_route *route = v->route;
    uint8_t probe = v->probe;
    int r;

    v->route = NULL;
    v->probe = LCR_PROBE_PEEK;
    r = lcr_mem_xlat(v, seg, ea, bytes, access, x);
    v->route = route;
    v->probe = probe;
    return r;
}

/* Phase one for the explicit memory operand (translation, A/D bits),
 * for OWNMEM executors that must do it after a check of their own. */
int lcr_prepare_mem(lcr_vcpu *v, lcr_ectx *c);

/* Executors living outside exec.c (paper section 8: vmcs.c). */
int lcr_ex_vmread(lcr_vcpu *v, lcr_ectx *c);
int lcr_ex_vmwrite(lcr_vcpu *v, lcr_ectx *c);

/* A segment load (sreg.c): phase one checks the selector and descriptor
 * as the CPU does and fills `ld` (0), or stops (-1: v->stop set, a fault
 * vector for a check that faults); phase two (commit) sets the
 * descriptor's accessed bit if it was clear and loads the register. */
typedef struct lcr_sreg_load {
    lc_segment seg;       /* what the register will hold */
    lcr_xlat   desc;      /* the descriptor, translated */
    lcr_xlat   abit;      /* its type byte, when the accessed bit is set */
    uint8_t    set_accessed;
    uint8_t    abit_val;
} lcr_sreg_load;

int lcr_sreg_prepare(lcr_vcpu *v, unsigned seg, uint16_t sel,
                     lcr_sreg_load *ld);
int lcr_sreg_commit(lcr_vcpu *v, unsigned seg, const lcr_sreg_load *ld);

#endif /* LC_RUNTIME_EXEC_H */
