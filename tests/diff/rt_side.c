/* SPDX-License-Identifier: MIT */
/*
 * tests/diff/rt_side.c: running a case in the runtime (lcr_begin /
 * lcr_step), with lc_vm_ops callbacks over a private copy of the RAM and
 * the same device model as the Unicorn side.
 *
 * Device model shared with uc_side.c: every port or MMIO read consumes the
 * next value of the case's answer stream; writes and reads are logged in
 * order. An 8-byte MMIO access is delivered to the device as two 4-byte
 * accesses, low half first: that is how QEMU's memory core dispatches it
 * to a region without .impl.max_access_size (Unicorn's uc_mmio_map), and
 * a device model is free to work that way, so both sides see the same.
 */
#include <stdio.h>
#include <string.h>

#include "../../runtime/rt.h"
#include "diff.h"

/* The fake VMM's handling of the exit on a VMREAD/VMWRITE it failed
 * (vm_ops.c answered LC_CB_STOP, runtime/vmcs.c stopped before it): the
 * instruction as the SDM has it fail, VMfailInvalid or VMfailValid with
 * the error number in the VM-instruction error field, no operand
 * written, RIP past it. A VMWRITE reads its source before it looks at
 * the field, so under VMfailValid a memory source's accessed bits are
 * set (the VMM's read, here the runtime's page walk on the VMM's
 * behalf); VMfailInvalid comes before the read and sets none. The
 * runtime stopped before reading it for real (runtime/vmcs.c), so what
 * the page tables hold here is the VMM's doing alone. Returns 0, or -1
 * if it does not fail (then the stop is the runtime's and stays a
 * difference). */
static int vmm_vmfail(const dcase *c, lc_cpu_state *st, dev_side *d,
                      lcr_vcpu *v, uint64_t la)
{
    vmx_insn vi;
    lcd_insn in;
    uint64_t off = la - c->code_la, field, gpa;
    int code;

    if (off >= c->code_len ||
        vmx_decode(c->mode, c->code + off, c->code_len - off, &vi) < 0 ||
        vi.op == LC_OP_VMCALL)
        return -1;
    field = st->gpr[vi.field_reg] & (vi.opbits == 64 ? ~0ull : 0xffffffffu);
    code = vmx_check(d, vi.op == LC_OP_VMWRITE, field);
    if (!code)
        return -1;
    if (vi.op == LC_OP_VMWRITE && vi.val_reg < 0 &&
        code != VMX_FAIL_INVALID &&
        (lcd_decode(v->mode, c->code + off, c->code_len - off, &in) !=
             LC_OK ||
         lcr_mem_gpa(v, &in, st->rip, &gpa) < 0))
        return -1;
    st->rflags = vmx_fail(d, vi.op == LC_OP_VMWRITE, field, code,
                          st->rflags);
    st->rip += vi.len;
    return 0;
}

int rts_run(const dcase *c, run_result *r, unsigned max_insns)
{
    lc_cpu_state st = c->st;
    diff_vm x;
    lcr_vcpu v;
    lcd_insn scratch;

    r->ok = 0;
    r->why[0] = 0;
    r->ntrace = 0;
    dev_init(&r->dev, c);
    memcpy(r->ram, c->ram, RAM_SIZE);
    diff_vm_init(&x, r->ram);
    diff_vm_devices(&x, &r->dev);
    memset(&v, 0, sizeof v);
    v.insn_budget = max_insns;
    v.rep_budget = 1u << 20;
    lcr_begin(&v, &st, &diff_vm_ops, &x);
    for (;;) {
        uint64_t la = st.seg[LC_CS].base + st.rip;
        if (c->mode != DM_LONG64)
            la = (uint32_t)la;
        if (la == c->end_la) {
            r->ok = 1;
            break;
        }
        if (r->ntrace >= max_insns) {
            snprintf(r->why, sizeof r->why,
                     "runtime: no end after %u instructions", r->ntrace);
            break;
        }
        if (r->ntrace < TRACE_MAX) {
            r->trace[r->ntrace] = la;
            r->trace_cl[r->ntrace] = st.gpr[LC_RCX];
        }
        r->ntrace++;
        uint32_t before = v.insns;
        if (lcr_step(&v, &scratch) == LCR_DONE) {
            /* STI, MOV SS, POP SS ran the next instruction in their
             * interrupt shadow, in the same step */
            if (v.insns - before == 2) {
                if (r->ntrace < TRACE_MAX) {
                    r->trace[r->ntrace] = la + scratch.info.length;
                    /* none of the three writes rCX */
                    r->trace_cl[r->ntrace] = r->trace_cl[r->ntrace - 1];
                }
                r->ntrace++;
            }
            if (v.stop == LC_STOP_HALT) {
                /* the HLT completed and ends the run (runtime/exec.c) */
                r->ok = 1;
                break;
            }
            continue;
        }
        int k = dcase_insn_at(c, la);
        if (k >= 0 && (c->insn[k].flags & (GI_STOP | GI_SHADOW_STOP))) {
            /* the decline the case expects (or, GI_SHADOW_STOP, the
             * shadow over it): Unicorn's side ends here too, and
             * everything up to here must agree */
            r->ntrace--;
            r->ok = 1;
            break;
        }
        if (k >= 0 && (c->insn[k].flags & GI_VMFAIL) &&
            v.stop == LC_STOP_CALLBACK &&
            vmm_vmfail(c, &st, &r->dev, &v, la) == 0) {
            /* the VMM took the exit and emulated the failure; the guest
             * resumes and the next exit starts a new run */
            lcr_begin(&v, &st, &diff_vm_ops, &x);
            continue;
        }
        {
            char txt[64] = "?";
            lc_insn_info info;
            uint64_t off = la - c->code_la;
            if (off < c->code_len &&
                lc_decode(dmode_cpu_mode(c->mode), c->code + off,
                          c->code_len - off, &info) == LC_OK)
                lc_insn_format(&info, la, txt, sizeof txt);
            snprintf(r->why, sizeof r->why,
                     "runtime: stop '%s' (fault vector %u, addr 0x%llx, "
                     "error %d) before '%s' at 0x%llx",
                     lc_stop_reason_name(v.stop), v.fault_vector,
                     (unsigned long long)v.fault_addr, (int)v.error, txt,
                     (unsigned long long)la);
            r->ntrace--;
            break;
        }
    }
    for (int i = 0; i < 16; i++)
        r->gpr[i] = st.gpr[i];
    if (c->mode != DM_LONG64)
        for (int i = 0; i < 16; i++)
            r->gpr[i] = i < 8 ? (uint32_t)st.gpr[i] : 0;
    r->rip = st.seg[LC_CS].base + st.rip;
    r->rflags = st.rflags;
    for (int s = 0; s < 6; s++)
        r->sel[s] = st.seg[s].selector;
    r->fs_base = st.seg[LC_FS].base;
    r->gs_base = st.seg[LC_GS].base;
    memcpy(r->msr, r->dev.msr, sizeof r->msr);
    memcpy(r->dr, r->dev.dr, sizeof r->dr);
    return 0;
}
