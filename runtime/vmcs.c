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

int lcr_ex_vmread(lcr_vcpu *v, lcr_ectx *c)
{
    uint64_t field, val = 0;

    if (!v->ops->vmcs_read)
        return lcr_stop(v, LC_STOP_TERMINATOR);
    if (!vmx_mode_ok(v) || lcr_cpl0_only(v))
        return LCR_STOP;
    if (lcr_opnd_read(v, c, 1, &field))
        return LCR_STOP;
    if (lcr_cb_result(v, v->ops->vmcs_read(v->opaque, field, &val)))
        return LCR_STOP;
    /* the destination after the VMM's answer (OWNMEM row, exec.c) */
    if (lcr_prepare_mem(v, c) < 0 || lcr_opnd_write(v, c, 0, val))
        return LCR_STOP;
    lcr_set_flags(v, v->st->rflags & ~LCR_FL_STATUS);
    return LCR_DONE;
}

int lcr_ex_vmwrite(lcr_vcpu *v, lcr_ectx *c)
{
    uint64_t field, val;

    if (!v->ops->vmcs_write)
        return lcr_stop(v, LC_STOP_TERMINATOR);
    if (!vmx_mode_ok(v) || lcr_cpl0_only(v))
        return LCR_STOP;
    if (lcr_opnd_read(v, c, 0, &field) || lcr_opnd_read(v, c, 1, &val))
        return LCR_STOP;
    if (lcr_cb_result(v, v->ops->vmcs_write(v->opaque, field, val)))
        return LCR_STOP;
    lcr_set_flags(v, v->st->rflags & ~LCR_FL_STATUS);
    return LCR_DONE;
}
