/* SPDX-License-Identifier: MIT */
/*
 * libcluster/kvm/state.c: kvm_run to and from the engine's terms
 * (lc_cpu_state, lc_exit), public so a VMM with its own loop uses the
 * same conversion as the adapter.
 */
#include <string.h>

#include "kvm_int.h"

/* The fields lc_segment and struct kvm_segment share, by name. */
#define SEG_FIELDS(X) X(base) X(limit) X(selector) X(type) X(present) \
    X(dpl) X(db) X(s) X(l) X(g) X(avl) X(unusable)
#define SEG_COPY(f) d->f = s->f;

static void seg_in(lc_segment *d, const struct kvm_segment *s)
{
    memset(d, 0, sizeof(*d));
    SEG_FIELDS(SEG_COPY)
}

static void seg_out(struct kvm_segment *d, const lc_segment *s)
{
    SEG_FIELDS(SEG_COPY)
}

lc_status lc_kvm_state_from_run(const struct kvm_run *run, lc_cpu_state *st)
{
    const struct kvm_regs *r;
    const struct kvm_sregs *s;

    if (!run || !st)
        return LC_ERR_INVAL;
    if ((run->kvm_valid_regs & LCK_SYNC_RS) != LCK_SYNC_RS)
        return LC_ERR_UNSUPPORTED;
    r = &run->s.regs.regs;
    s = &run->s.regs.sregs;
    memset(st, 0, sizeof(*st));
    st->gpr[LC_RAX] = r->rax; st->gpr[LC_RCX] = r->rcx;
    st->gpr[LC_RDX] = r->rdx; st->gpr[LC_RBX] = r->rbx;
    st->gpr[LC_RSP] = r->rsp; st->gpr[LC_RBP] = r->rbp;
    st->gpr[LC_RSI] = r->rsi; st->gpr[LC_RDI] = r->rdi;
    st->gpr[LC_R8] = r->r8;   st->gpr[LC_R9] = r->r9;
    st->gpr[LC_R10] = r->r10; st->gpr[LC_R11] = r->r11;
    st->gpr[LC_R12] = r->r12; st->gpr[LC_R13] = r->r13;
    st->gpr[LC_R14] = r->r14; st->gpr[LC_R15] = r->r15;
    st->rip = r->rip;
    st->rflags = r->rflags;
    seg_in(&st->seg[LC_ES], &s->es); seg_in(&st->seg[LC_CS], &s->cs);
    seg_in(&st->seg[LC_SS], &s->ss); seg_in(&st->seg[LC_DS], &s->ds);
    seg_in(&st->seg[LC_FS], &s->fs); seg_in(&st->seg[LC_GS], &s->gs);
    seg_in(&st->ldtr, &s->ldt);
    seg_in(&st->tr, &s->tr);
    st->gdtr.base = s->gdt.base; st->gdtr.limit = s->gdt.limit;
    st->idtr.base = s->idt.base; st->idtr.limit = s->idt.limit;
    st->cr0 = s->cr0; st->cr2 = s->cr2; st->cr3 = s->cr3;
    st->cr4 = s->cr4; st->cr8 = s->cr8; st->efer = s->efer;
    return LC_OK;
}

static void sregs_out(struct kvm_sregs *s, const lc_cpu_state *st)
{
    seg_out(&s->es, &st->seg[LC_ES]); seg_out(&s->cs, &st->seg[LC_CS]);
    seg_out(&s->ss, &st->seg[LC_SS]); seg_out(&s->ds, &st->seg[LC_DS]);
    seg_out(&s->fs, &st->seg[LC_FS]); seg_out(&s->gs, &st->seg[LC_GS]);
    seg_out(&s->ldt, &st->ldtr);
    seg_out(&s->tr, &st->tr);
    s->gdt.base = st->gdtr.base; s->gdt.limit = st->gdtr.limit;
    s->idt.base = st->idtr.base; s->idt.limit = st->idtr.limit;
    s->cr0 = st->cr0; s->cr2 = st->cr2; s->cr3 = st->cr3;
    s->cr4 = st->cr4; s->cr8 = st->cr8; s->efer = st->efer;
}

lc_status lc_kvm_state_to_run(struct kvm_run *run, const lc_cpu_state *st,
                              uint32_t dirty)
{
    struct kvm_regs *r;

    if (!run || !st)
        return LC_ERR_INVAL;
    r = &run->s.regs.regs;
    if (dirty & LC_DIRTY_GPRS) {
        r->rax = st->gpr[LC_RAX]; r->rcx = st->gpr[LC_RCX];
        r->rdx = st->gpr[LC_RDX]; r->rbx = st->gpr[LC_RBX];
        r->rsp = st->gpr[LC_RSP]; r->rbp = st->gpr[LC_RBP];
        r->rsi = st->gpr[LC_RSI]; r->rdi = st->gpr[LC_RDI];
        r->r8 = st->gpr[LC_R8];   r->r9 = st->gpr[LC_R9];
        r->r10 = st->gpr[LC_R10]; r->r11 = st->gpr[LC_R11];
        r->r12 = st->gpr[LC_R12]; r->r13 = st->gpr[LC_R13];
        r->r14 = st->gpr[LC_R14]; r->r15 = st->gpr[LC_R15];
    }
    if (dirty & LC_DIRTY_RIP)
        r->rip = st->rip;
    if (dirty & LC_DIRTY_RFLAGS)
        r->rflags = st->rflags;
    if (dirty & (LC_DIRTY_GPRS | LC_DIRTY_RIP | LC_DIRTY_RFLAGS))
        run->kvm_dirty_regs |= KVM_SYNC_X86_REGS;
    if (dirty & LC_DIRTY_SREGS) {
        /* the rest of kvm_sregs (APIC base, pending interrupt bitmap)
         * stays as KVM reported it */
        sregs_out(&run->s.regs.sregs, st);
        run->kvm_dirty_regs |= KVM_SYNC_X86_SREGS;
    }
    return LC_OK;
}

lc_status lc_kvm_exit_from_run(const struct kvm_run *run,
                               const lc_kvm_caps *caps, lc_exit *x)
{
    if (!run || !x)
        return LC_ERR_INVAL;
    memset(x, 0, sizeof(*x));
    if (run->exit_reason == KVM_EXIT_IO) {
        const lc_exit_io io = {
            .port = run->io.port,
            .size = run->io.size,
            .is_out = run->io.direction == KVM_EXIT_IO_OUT,
            .is_string = run->io.count > 1,
            .is_rep = run->io.count > 1,
            .count = run->io.count,
        };
        x->kind = LC_EXIT_IO;
        x->u.io = io;
        x->reported = LC_EXIT_HAS_PORT;
        if (io.is_out && io.count == 1 && io.size <= sizeof(x->u.io.value)) {
            memcpy(&x->u.io.value, lck_io_data((struct kvm_run *)run),
                   io.size);
            x->reported |= LC_EXIT_HAS_VALUE;
        }
        if (caps && (io.is_out ? caps->out_rip_past : caps->in_rip_past))
            x->rip = LC_EXIT_RIP_PAST;
        return LC_OK;
    }
    if (run->exit_reason == KVM_EXIT_MMIO) {
        x->kind = LC_EXIT_MMIO;
        x->u.mmio.gpa = run->mmio.phys_addr;
        x->u.mmio.len = (uint8_t)run->mmio.len;
        x->u.mmio.is_write = run->mmio.is_write;
        if (run->mmio.is_write && run->mmio.len <= sizeof(x->u.mmio.value)) {
            memcpy(&x->u.mmio.value, run->mmio.data, run->mmio.len);
            x->reported = LC_EXIT_HAS_VALUE;
        }
        if (caps && (run->mmio.is_write ? caps->mmio_write_rip_past
                                        : caps->mmio_read_rip_past))
            x->rip = LC_EXIT_RIP_PAST;
        return LC_OK;
    }
    return LC_ERR_UNSUPPORTED;
}
