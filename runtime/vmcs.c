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
 */
#include "exec.h"

int lcr_ex_vmread(lcr_vcpu *v, lcr_ectx *c)
{
    uint64_t field, val = 0;

    if (!v->ops->vmcs_read)
        return lcr_stop(v, LC_STOP_TERMINATOR);
    if (lcr_cpl0_only(v))
        return LCR_STOP;
    if (lcr_opnd_read(v, c, 1, &field))
        return LCR_STOP;
    if (lcr_cb_result(v, v->ops->vmcs_read(v->opaque, field, &val)))
        return LCR_STOP;
    if (lcr_opnd_write(v, c, 0, val))
        return LCR_STOP;
    lcr_set_flags(v, v->st->rflags & ~LCR_FL_STATUS);
    return LCR_DONE;
}

int lcr_ex_vmwrite(lcr_vcpu *v, lcr_ectx *c)
{
    uint64_t field, val;

    if (!v->ops->vmcs_write)
        return lcr_stop(v, LC_STOP_TERMINATOR);
    if (lcr_cpl0_only(v))
        return LCR_STOP;
    if (lcr_opnd_read(v, c, 0, &field) || lcr_opnd_read(v, c, 1, &val))
        return LCR_STOP;
    if (lcr_cb_result(v, v->ops->vmcs_write(v->opaque, field, val)))
        return LCR_STOP;
    lcr_set_flags(v, v->st->rflags & ~LCR_FL_STATUS);
    return LCR_DONE;
}
