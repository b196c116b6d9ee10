/* SPDX-License-Identifier: MIT */
/*
 * tests/diff/vm_ops.c: the VMM the runtime and engine sides of lc-diff
 * give libcluster: the shared fake VMM (tests/common/fakevm.h) with the
 * harness devices answering from the case's seeded stream and logging in
 * order, CPUID, and the case's MSRs. The same device model as Unicorn's
 * side (uc_side.c), so the ordered logs can be compared. Only the
 * services Unicorn's side models are offered (a traced page's stores,
 * RDTSC's and DR0..DR3's
 * too: the harness supplies the guest TSC and keeps the debug registers
 * on both sides; HLT, VMREAD, VMWRITE and VMCALL against the fake VMM's
 * state in common.c, which Unicorn's side applies in its #UD hook), and
 * an interrupt line that only the engine side asks (diff_irq()).
 */
#include <string.h>

#include <cluster/cluster.h>

#include "diff.h"

static lc_cb_result diff_device(fvm *f, fvm_access *a)
{
    dev_side *d = f->ctx;
    int is_write = a->kind == 'o' || a->kind == 'w';
    int i;

    switch (a->kind) {
    case 'i':
    case 'o':
        /* a port the VMM will not do inside a run (lcvmm: one of KVM's
         * in-kernel devices): the instruction is the guest's to do */
        if (d->vmm.refuse_port >= 0 &&
            a->addr == (uint64_t)d->vmm.refuse_port)
            return LC_CB_STOP;
        if (!is_write)
            a->value = dev_answer(d, a->size);
        dev_log(d, AK_PIO, is_write, a->size, a->addr, a->value);
        return LC_CB_OK;
    case 'r':
    case 'w':
        /* a device register the VMM will not do inside a run (lcvmm:
         * KVM's in-kernel LAPIC and IOAPIC) */
        if (diff_mmio_refused(&d->vmm, a->addr, a->size))
            return LC_CB_STOP;
        if (is_write && (a->size == 2 || a->size == 4 || a->size == 8) &&
            (d->vmm.wide & a->size)) {
            /* one write, or an exit pair's two merged, of a width the
             * VMM takes (LC_WIDE_n is n; diff_compare) */
            dev_log(d, AK_MMIO, DEV_WIDE_WRITE, a->size, a->addr, a->value);
            return LC_CB_OK;
        }
        if (a->size == 8) {
            /* Unicorn's side sees a 64-bit access as two 32-bit ones */
            uint64_t lo = is_write ? a->value & 0xffffffffull
                                   : dev_answer(d, 4);
            dev_log(d, AK_MMIO, is_write, 4, a->addr, lo);
            uint64_t hi = is_write ? a->value >> 32 : dev_answer(d, 4);
            dev_log(d, AK_MMIO, is_write, 4, a->addr + 4, hi);
            a->value = lo | hi << 32;
            return LC_CB_OK;
        }
        if (!is_write)
            a->value = dev_answer(d, a->size);
        dev_log(d, AK_MMIO, is_write, a->size, a->addr, a->value);
        return LC_CB_OK;
    case 'c':
        cpuid_answer((uint32_t)a->addr, a->sub, a->cpuid);
        dev_log(d, AK_CPUID, 0, 4, a->addr | (uint64_t)a->sub << 32, 0);
        return LC_CB_OK;
    case 'R':
    case 'W':
        i = msr_index((uint32_t)a->addr);
        /* an MSR the harness does not model: generated code never
         * names one (an error shows an engine that read the wrong
         * rCX); code from a file does, and a VMM leaves it to the exit
         * path, which would inject #GP */
        if (i < 0)
            return d->real ? LC_CB_STOP : LC_CB_ERROR;
        if (a->kind == 'R')
            a->value = d->msr[i];
        else
            d->msr[i] = a->value;
        return LC_CB_OK;
    case 'd':
    case 'D':
        /* DR0..DR3 are plain storage on both sides (DR7 leaves every
         * breakpoint disabled); the generator touches no other */
        if (a->addr > 3)
            return LC_CB_STOP;
        if (a->kind == 'd')
            a->value = d->dr[a->addr];
        else
            d->dr[a->addr] = a->value;
        return LC_CB_OK;
    case 't':
        /* A store into the traced page (cdiff.c, "traced pages"): the
         * fake VMM performs it (fvm_traced()) and keeps its own copy of
         * the page, which must end equal to the RAM's; not logged, as
         * Unicorn's side sees a RAM store. The engine calls this only
         * for a page gpa_map() called traced. */
        if (d->tgfn == DIFF_NO_TRACE)
            return LC_CB_OK;        /* train(): no copy kept */
        if ((a->addr >> 12) != d->tgfn || (a->addr & 0xfff) + a->size > 4096 ||
            a->size > 8) {
            if (d->nstray++ == 0)
                d->tstray = a->addr;
            return LC_CB_OK;
        }
        /* a shadow-paging VMM that emulates the store in its own exit */
        if (d->vmm.refuse_traced)
            return LC_CB_STOP;
        memcpy(d->tshadow + (a->addr & 0xfff), &a->value, a->size);
        d->twrites++;
        return LC_CB_OK;
    case 'h':
        dev_log(d, AK_HLT, 0, 0, 0, 0);
        return LC_CB_OK;
    case 'v':
    case 'V':
        /* the fake VMCS (common.c): a VMREAD/VMWRITE that fails is the
         * VMM's to emulate on the exit it takes (runtime/vmcs.c), so the
         * engine is told to stop before it */
        if (vmx_check(d, a->kind == 'V', a->addr))
            return LC_CB_STOP;
        vmx_do(d, a->kind == 'V', a->addr, &a->value);
        return LC_CB_OK;
    default:                    /* not in diff_vm_ops */
        return LC_CB_ERROR;
    }
}

/* RDTSC: the case's monotonic TSC stream, the same on Unicorn's side
 * (uc_side.c overwrites EDX:EAX after each RDTSC). */
static lc_cb_result diff_rdtsc(void *o, uint64_t *tsc)
{
    fvm *f = o;

    *tsc = dev_rdtsc(f->ctx);
    return LC_CB_OK;
}

/* Interrupts, when the case has a key for them (diff_irq_due()): the
 * engine stops a run at a loop head there (LC_STOP_IRQ), or does not
 * chain into the next translation. Unicorn's side needs no model: it
 * runs as many instructions as the engine did. Every question is logged
 * (dev_side.ask) for the latency check (cdiff.c, irq_unasked()). */
static int diff_irq(void *o, const lc_cpu_state *s)
{
    fvm *f = o;
    dev_side *d = f->ctx;
    uint64_t la = s->seg[LC_CS].base + s->rip;

    if (d->nask < DIFF_ASK_MAX) {
        d->ask[d->nask] = la;
        d->ask_cx[d->nask] = s->gpr[LC_RCX];
    }
    d->nask++;
    return diff_irq_due(f->irq, la);
}

/* VMCALL: the fake VMM's hypercall on the registers (common.c). */
static lc_cb_result diff_vmcall(void *o, lc_cpu_state *s)
{
    fvm *f = o;
    dev_side *d = f->ctx;

    vmx_vmcall(d, s->gpr, d->long64);
    return LC_CB_OK;
}

void diff_vm_init(diff_vm *x, uint8_t *ram)
{
    fvm_init_layout(x, ram, RAM_SIZE, MMIO_PA, MMIO_SIZE);
    x->device = diff_device;
}

const lc_vm_ops diff_vm_ops = {
    FVM_OPS_DEVICES,
    .traced_write = fvm_traced,
    .cpuid = fvm_cpuid,
    .rdmsr = fvm_rdmsr,
    .wrmsr = fvm_wrmsr,
    .rdtsc = diff_rdtsc,
    .dr_read = fvm_dr_read,
    .dr_write = fvm_dr_write,
    .halt = fvm_halt,
    .vmcs_read = fvm_vmread,
    .vmcs_write = fvm_vmwrite,
    .vmcall = diff_vmcall,
    .irq_pending = diff_irq,
};
