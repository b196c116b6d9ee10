/* SPDX-License-Identifier: MIT */
/*
 * libcluster/exit.c: what the exit was (include/cluster/exit.h). The
 * engine acts on an exit only if the instruction it decodes there is the
 * one the hypervisor reported, in every detail the VMM gave: a mismatch
 * means the code changed under us (another vCPU, DMA) or the description
 * is wrong, and either way the exit is declined.
 */
#include <string.h>

#include "engine_int.h"
#include "exit.h"

static const char *const exit_kind_names[LC_EXIT_KIND_COUNT_] = {
    [LC_EXIT_IO] = "io",          [LC_EXIT_MMIO] = "mmio",
    [LC_EXIT_TRACED] = "traced",  [LC_EXIT_CPUID] = "cpuid",
    [LC_EXIT_HLT] = "hlt",        [LC_EXIT_DR_ACCESS] = "dr_access",
    [LC_EXIT_RDMSR] = "rdmsr",    [LC_EXIT_WRMSR] = "wrmsr",
    [LC_EXIT_VMREAD] = "vmread",  [LC_EXIT_VMWRITE] = "vmwrite",
    [LC_EXIT_VMCALL] = "vmcall",
};

const char *lc_exit_kind_name(lc_exit_kind kind)
{
    if ((unsigned)kind >= LC_EXIT_KIND_COUNT_ || !exit_kind_names[kind])
        return "invalid";
    return exit_kind_names[kind];
}

/* MMIO and traced stores: a weakly exiting instruction whose access is
 * at least as wide as reported, in the reported direction, storing the
 * reported value when it is a plain MOV of the whole width. */
static int mmio_matches(const lcd_insn *d, const lc_exit *x,
                        const lc_cpu_state *st)
{
    const lc_exit_mmio *m = &x->u.mmio;
    uint64_t data;

    if (d->info.exit_class != LC_CLASS_WEAK || !d->mem.present)
        return 0;
    if (m->len > d->mem.bytes)
        return 0;
    if (x->kind == LC_EXIT_MMIO && !(m->is_write ? d->mem.write
                                                 : d->mem.read))
        return 0;
    if (m->is_write && (x->reported & LC_EXIT_HAS_VALUE) &&
        d->info.op == LC_OP_MOV && m->len == d->mem.bytes &&
        d->nopnds >= 2 && d->opnd[0].kind == LCD_OPND_MEM &&
        lci_opnd_value(&d->opnd[1], st, &data) == 0 &&
        data != lci_low_bytes(m->value, m->len))
        return 0;
    return 1;
}

int lci_exit_matches(const lcd_insn *d, const lc_exit *x,
                     const lc_cpu_state *st)
{
    if (x->insn_len && x->insn_len != d->info.length)
        return 0;
    switch (x->kind) {
    case LC_EXIT_IO:
        return lci_io_matches(d, x, st);
    case LC_EXIT_MMIO:
    case LC_EXIT_TRACED:
        return mmio_matches(d, x, st);
    case LC_EXIT_CPUID:     return d->info.op == LC_OP_CPUID;
    case LC_EXIT_HLT:       return d->info.op == LC_OP_HLT;
    case LC_EXIT_DR_ACCESS: return d->info.op == LC_OP_MOV_DR;
    case LC_EXIT_RDMSR:
    case LC_EXIT_WRMSR:
        if (d->info.op != (x->kind == LC_EXIT_RDMSR ? LC_OP_RDMSR
                                                    : LC_OP_WRMSR))
            return 0;
        return !(x->reported & LC_EXIT_HAS_MSR) ||
               (uint32_t)st->gpr[LC_RCX] == x->u.msr;
    case LC_EXIT_VMREAD:    return d->info.op == LC_OP_VMREAD;
    case LC_EXIT_VMWRITE:   return d->info.op == LC_OP_VMWRITE;
    case LC_EXIT_VMCALL:    return d->info.op == LC_OP_VMCALL;
    default:                return 0;
    }
}

uint8_t lci_exit_props(const lc_exit *x)
{
    switch (x->kind) {
    case LC_EXIT_IO:
        return LCT_PROP_PIO;
    case LC_EXIT_MMIO:
        return (x->u.mmio.gpa >> 12) == 0xfee00 ? LCT_PROP_APIC
                                                : LCT_PROP_MMIO;
    case LC_EXIT_TRACED:
        return LCT_PROP_TRACED;
    default:
        return LCT_PROP_INSN;
    }
}
