/* SPDX-License-Identifier: MIT */
/*
 * runtime/vmcs.c: nested VMCS accesses.
 *
 * Implements Agesen et al., Software Techniques for Avoiding Hardware
 * Virtualization Exits, USENIX ATC 2012, section 8: a guest hypervisor's
 * VMREAD and VMWRITE exit to the outer VMM, which emulates them against
 * the VMCS it keeps for the guest. Clustering them runs each access
 * through the VMM's lc_vm_ops.vmcs_read / vmcs_write callbacks without an
 * exit of its own, so a handler's run of VMCS accesses costs one exit.
 *
 * Operands in Intel order: VMREAD r/m, r(field); VMWRITE r(field),
 * r/m(value). The operand size is 64 bits in 64-bit mode and 32
 * elsewhere (SDM vol. 3 31.3), which the decoder already gives. VMsucceed
 * clears CF PF AF ZF SF OF. Failures (VMfailValid/VMfailInvalid) are the
 * VMM's to report: its callback answers LC_CB_STOP and the guest takes
 * the real exit, so this file never sets a failure status.
 *
 * Both are #UD with CR0.PE = 0, in virtual-8086 mode and in
 * compatibility mode, a check the CPU makes before the VM exit (SDM vol.
 * 2, VMREAD/VMWRITE "Operation"): there they never reach the VMM and the
 * run stops before them. VMREAD's memory destination is translated (its
 * accessed and dirty bits set) only after the VMM answered: "faults
 * resulting from accessing a memory destination operand can occur only
 * after determining ... that the specified VMCS field is supported"
 * (SDM, VMREAD), and a failing VMREAD writes nothing, so the stop before
 * it leaves no dirty bit behind (lc-diff found both).
 *
 * VMWRITE's memory source is the other way round: the VMM's callback
 * needs the value, but the CPU reads it only after the check for a
 * current VMCS (SDM, VMWRITE "Operation": VMfailInvalid comes first), so
 * a VMWRITE that fails there sets no accessed bit. The source is therefore
 * first read through a peek (mmu.c, LCR_PROBE_PEEK: the translation and
 * its checks, no A/D bit set, nothing cached), the VMM asked with that
 * value, and only when it completes the instruction is the source
 * translated for real, which sets the accessed bits the CPU's read sets.
 * A VMM that fails it (LC_CB_STOP) gets the instruction back untouched,
 * and its emulation of the exit reads the source or not, as the SDM has
 * it for the failure it reports.
 */
#include "exec.h"

/* The modes where VMREAD and VMWRITE can exit (else #UD). */
static int vmx_mode_ok(lcr_vcpu *v)
{
    switch (v->mode) {
    case LC_MODE_PROT16:
    case LC_MODE_PROT32:
    case LC_MODE_LONG64:
        return 1;
    default:                /* real, virtual-8086, compatibility mode */
        lcr_fault(v, LC_VEC_UD);
        return 0;
    }
}

/* The memory operand's translation for `access`, looked at with no side
 * effects (lcr_peek_xlat()), plain RAM only (LCR_ACC_PLAIN: a device
 * read has side effects, a device store could be refused after the VMM
 * answered). 0, or -1 with v->stop set: a fault, or a terminator. */
static int peek_xlat(lcr_vcpu *v, lcr_ectx *c, unsigned access, lcr_xlat *x)
{
    const lcd_insn *in = c->in;

    return lcr_peek_xlat(v, in->mem.seg, lcr_eff_addr(v, in, v->st->rip, 0),
                         in->mem.bytes, access | LCR_ACC_PLAIN, x);
}

int lcr_ex_vmread(lcr_vcpu *v, lcr_ectx *c)
{
    uint64_t field, val = 0;

    if (!v->ops->vmcs_read)
        return lcr_stop(v, LC_STOP_TERMINATOR);
    if (!vmx_mode_ok(v) || lcr_cpl0_only(v))
        return LCR_STOP;
    if (lcr_opnd_read(v, c, 1, &field))
        return LCR_STOP;
    /* A destination that would fault or reach the VMM stops the run
     * before the VMM is asked (a stop must leave no callback done): only
     * looked at here, the real translation after the answer sets the A/D
     * bits (a VMREAD the VMM fails writes nothing; OWNMEM row, exec.c). */
    if (c->in->opnd[0].kind == LCD_OPND_MEM) {
        lcr_xlat x;

        if (peek_xlat(v, c, LCR_ACC_WRITE, &x) < 0)
            return LCR_STOP;
    }
    if (lcr_cb_result(v, v->ops->vmcs_read(v->opaque, field, &val)))
        return LCR_STOP;
    if (lcr_prepare_mem(v, c) < 0 || lcr_opnd_write(v, c, 0, val))
        return LCR_STOP;
    lcr_set_flags(v, v->st->rflags & ~LCR_FL_STATUS);
    return LCR_DONE;
}

/* The VMWRITE's memory source, looked at without side effects
 * (peek_xlat): its translation in *x (all RAM) and its value in *val. 0,
 * or -1 with v->stop set: a fault, or a source the peek cannot read
 * without a side effect (MMIO: a device read), which the CPU then reads
 * itself when the guest executes the instruction. */
static int peek_source(lcr_vcpu *v, lcr_ectx *c, lcr_xlat *x, uint64_t *val)
{
    if (peek_xlat(v, c, LCR_ACC_READ, x) < 0)
        return -1;
    return lcr_xread(v, x, val);
}

/* Did the real translation of the source find what the peek found? */
static int same_source(const lcr_xlat *a, const lcr_xlat *b)
{
    if (a->nfrag != b->nfrag)
        return 0;
    for (unsigned i = 0; i < a->nfrag; i++)
        if (a->frag[i].kind != b->frag[i].kind ||
            a->frag[i].gpa != b->frag[i].gpa ||
            a->frag[i].len != b->frag[i].len ||
            a->frag[i].hva != b->frag[i].hva)
            return 0;
    return 1;
}

int lcr_ex_vmwrite(lcr_vcpu *v, lcr_ectx *c)
{
    int mem = c->in->opnd[1].kind == LCD_OPND_MEM;
    uint64_t field, val;
    lcr_xlat peek;

    if (!v->ops->vmcs_write)
        return lcr_stop(v, LC_STOP_TERMINATOR);
    if (!vmx_mode_ok(v) || lcr_cpl0_only(v))
        return LCR_STOP;
    if (lcr_opnd_read(v, c, 0, &field))
        return LCR_STOP;
    if (mem ? peek_source(v, c, &peek, &val) : lcr_opnd_read(v, c, 1, &val))
        return LCR_STOP;
    if (lcr_cb_result_cpu(v, v->ops->vmcs_write(v->opaque, field, val)))
        return LCR_STOP;
    /* The read the CPU made, accessed bits and all. Only the VMM ran in
     * between; should it have changed the tables under the source, stop
     * before the instruction: the guest executes it again natively and
     * the VMM's exit handler writes the field with what the CPU reads
     * then (the field's last write wins, and no guest code saw it). */
    if (mem) {
        if (lcr_prepare_mem(v, c) < 0)
            return LCR_STOP;
        if (!same_source(&peek, &c->mx))
            return lcr_stop(v, LC_STOP_TERMINATOR);
    }
    lcr_set_flags(v, v->st->rflags & ~LCR_FL_STATUS);
    return LCR_DONE;
}
