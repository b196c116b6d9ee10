/* SPDX-License-Identifier: MIT */
/*
 * runtime/sreg.c: loading a data or stack segment register as the CPU
 * does (MOV Sreg, POP Sreg), for the executors in exec.c.
 *
 * Real mode: the selector and base = selector << 4; limit and attributes
 * stay as cached (SDM vol. 3 20.1.1: "big real mode" keeps its limit).
 * Protected and long mode: the checks of SDM vol. 2 MOV / POP
 * ("Protected Mode Exceptions") in the CPU's order, the descriptor read
 * from the GDT or LDT through guest memory (implicit supervisor reads),
 * the hidden base, limit and attributes loaded from it, and the
 * descriptor's accessed bit set in memory if it was clear. A check that
 * would fault stops the run before the instruction (the CPU raises it
 * when the guest resumes); anything the runtime does not decide itself
 * (virtual-8086 mode, a null SS or a null FS/GS in 64-bit mode, whose
 * hidden state differs between vendors, a descriptor table outside RAM)
 * is a terminator.
 */
#include <string.h>

#include "exec.h"

/* Descriptor type bits (SDM vol. 3 3.4.5.1). */
#define T_ACCESSED 0x1u
#define T_WRITE    0x2u     /* data: writable; code: readable */
#define T_CONFORM  0x4u     /* code: conforming */
#define T_CODE     0x8u

/* An implicit supervisor-mode access to a descriptor table, RAM only
 * (a table in MMIO is left to the CPU). In IA-32e mode the GDTR and LDTR
 * bases are 64-bit, in compatibility mode too (only segment-relative
 * addresses are 32-bit there): the address is cut to 32 bits only
 * outside it. */
static int table_xlat(lcr_vcpu *v, uint64_t la, unsigned len, unsigned acc,
                      lcr_xlat *x)
{
    if (lcr_translate(v, la & ((v->st->efer & LC_EFER_LMA) ? ~0ull
                                                           : 0xffffffffull),
                      len, acc | LCR_ACC_IMPLICIT, x) < 0)
        return -1;
    for (unsigned i = 0; i < x->nfrag; i++)
        if (x->frag[i].kind != LC_GPA_RAM) {
            v->stop = LC_STOP_TERMINATOR;
            return -1;
        }
    return 0;
}

int lcr_sreg_prepare(lcr_vcpu *v, unsigned seg, uint16_t sel,
                     lcr_sreg_load *ld)
{
    const lc_cpu_state *st = v->st;
    const lc_segment *tbl;
    unsigned rpl = sel & 3u, idx = sel & ~7u, dpl, type;
    uint64_t d, la;
    lc_segment *s = &ld->seg;

    memset(ld, 0, sizeof(*ld));
    if (seg >= LC_NR_SREGS || seg == LC_CS)
        return lcr_stop(v, LC_STOP_TERMINATOR), -1;
    if (v->mode == LC_MODE_REAL) {
        *s = st->seg[seg];
        s->selector = sel;
        s->base = (uint64_t)sel << 4;
        return 0;
    }
    if (v->mode == LC_MODE_VM86)
        return lcr_stop(v, LC_STOP_TERMINATOR), -1;

    /* Null selector (index 0 of the GDT). */
    if ((sel & ~3u) == 0) {
        if (seg == LC_SS) {
            /* #GP(0) outside 64-bit mode; allowed in 64-bit mode at CPL
             * < 3 with RPL = CPL, but what the hidden part holds then is
             * the VMM's and vendor's business: left to the CPU. */
            if (v->mode == LC_MODE_LONG64)
                return lcr_stop(v, LC_STOP_TERMINATOR), -1;
            return lcr_fault(v, LC_VEC_GP), -1;
        }
        /* Intel clears a null FS/GS's base in IA-32e mode, older AMD
         * parts keep it (AMD's CPUID NullSelectorClearsBase), which 64-bit
         * code sees again after compatibility mode: left to the CPU. */
        if ((v->st->efer & LC_EFER_LMA) && (seg == LC_FS || seg == LC_GS))
            return lcr_stop(v, LC_STOP_TERMINATOR), -1;
        /* Loaded and marked unusable, as KVM reports it (the hidden part
         * cleared, as QEMU's load of a null selector does). A use outside
         * 64-bit mode then faults (mmu.c). */
        s->selector = sel;
        s->unusable = 1;
        return 0;
    }

    /* The descriptor: within the table's limit, else #GP(selector). */
    if (sel & 4u) {
        tbl = &st->ldtr;
        if (tbl->unusable || !tbl->present)
            return lcr_fault(v, LC_VEC_GP), -1;
        la = tbl->base;
        if ((uint64_t)idx + 7 > tbl->limit)
            return lcr_fault(v, LC_VEC_GP), -1;
    } else {
        la = st->gdtr.base;
        if ((uint64_t)idx + 7 > st->gdtr.limit)
            return lcr_fault(v, LC_VEC_GP), -1;
    }
    la += idx;
    if (table_xlat(v, la, 8, LCR_ACC_READ, &ld->desc) < 0 ||
        lcr_read(v, &ld->desc, &d) < 0)
        return -1;

    type = (unsigned)(d >> 40) & 0xf;
    dpl = (unsigned)(d >> 45) & 3;
    if (!((d >> 44) & 1))                 /* a system descriptor */
        return lcr_fault(v, LC_VEC_GP), -1;
    if (seg == LC_SS) {
        /* RPL = CPL, a writable data segment, DPL = CPL; then present,
         * else #SS(selector). */
        if (rpl != v->cpl || (type & (T_CODE | T_WRITE)) != T_WRITE ||
            dpl != v->cpl)
            return lcr_fault(v, LC_VEC_GP), -1;
        if (!((d >> 47) & 1))
            return lcr_fault(v, LC_VEC_SS), -1;
    } else {
        /* A data or readable code segment; data and non-conforming code
         * need RPL <= DPL and CPL <= DPL; then present, else
         * #NP(selector). */
        if ((type & (T_CODE | T_WRITE)) == T_CODE)
            return lcr_fault(v, LC_VEC_GP), -1;
        if ((!(type & T_CODE) || !(type & T_CONFORM)) &&
            (rpl > dpl || v->cpl > dpl))
            return lcr_fault(v, LC_VEC_GP), -1;
        if (!((d >> 47) & 1))
            return lcr_fault(v, LC_VEC_NP), -1;
    }

    /* The accessed bit is set in memory by the load (SDM vol. 3 3.4.5.1):
     * a write the CPU makes whatever the page's U/S, translated now so
     * that nothing is left to fail after the instruction's first effect. */
    if (!(type & T_ACCESSED)) {
        /* SS: a load that may be taken back with its shadow's
         * instruction (exec.c) leaves the write to the CPU, before the
         * write's translation sets a dirty bit for it */
        if (seg == LC_SS)
            return lcr_stop(v, LC_STOP_TERMINATOR), -1;
        if (table_xlat(v, la + 5, 1, LCR_ACC_WRITE, &ld->abit) < 0)
            return -1;
        ld->set_accessed = 1;
        ld->abit_val = (uint8_t)((d >> 40) | T_ACCESSED);
        type |= T_ACCESSED;
    }
    s->selector = sel;
    s->base = ((d >> 16) & 0xffffffu) | ((d >> 32) & 0xff000000u);
    s->limit = (uint32_t)((d & 0xffff) | ((d >> 32) & 0xf0000));
    s->g = (uint8_t)((d >> 55) & 1);
    if (s->g)
        s->limit = (s->limit << 12) | 0xfff;
    s->type = (uint8_t)type;
    s->s = 1;
    s->dpl = (uint8_t)dpl;
    s->present = 1;
    s->avl = (uint8_t)((d >> 52) & 1);
    s->l = (uint8_t)((d >> 53) & 1);
    s->db = (uint8_t)((d >> 54) & 1);
    return 0;
}

int lcr_sreg_commit(lcr_vcpu *v, unsigned seg, const lcr_sreg_load *ld)
{
    /* the locked update the CPU makes (SDM vol. 3 3.4.5.1): a descriptor
     * another vCPU changed since phase one read it is left to the CPU */
    if (ld->set_accessed &&
        lcr_write_byte_if(v, &ld->abit,
                          (uint8_t)(ld->abit_val & ~T_ACCESSED),
                          ld->abit_val) < 0)
        return -1;
    v->st->seg[seg] = ld->seg;
    v->dirty |= LC_DIRTY_SREGS;
    return 0;
}
