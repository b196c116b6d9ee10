/* SPDX-License-Identifier: MIT */
/*
 * examples/paper/paper_run.c: run the paper's examples through the engine
 * (public API only) against a tiny simulated machine: 4 MiB of RAM, a
 * device page at 0xfee00000, a write-watched page table page, ports that
 * answer 0 (so polling loops see "ready"), debug registers and a VMCS
 * that answer 0. For each example the guest exits on its first
 * instruction three times (two interpreted exits, then the translation)
 * and the demo prints what one exit did.
 *
 * The machine is the tests' shared fake VMM (tests/common/fakevm.h) with
 * a device that answers 0 and counts. An example may use only the public
 * API, and that fixture is written against it alone; this file is also
 * what the unit tests run to check the paper's exit counts
 * (test_engine_run.c), so a machine of its own here would be a second
 * fake VMM for the same tests to trust.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cluster/cluster.h>

#include "paper_examples.h"
#include "paper_run.h"
#include "../../tests/common/fakevm.h"

#define TRACED_GFN 0x50ull
#define CODE_GPA   0x300000ull   /* RIP-relative data 2 MiB below fits */
#define CODE_REAL  0x7000ull     /* real mode: below 1 MiB */

/* Every device read (ports, MMIO, debug registers, VMCS fields) answers
 * 0; `ctx` counts the accesses to devices and to the traced page. */
static lc_cb_result quiet_device(fvm *f, fvm_access *a)
{
    unsigned *accesses = f->ctx;

    a->value = 0;
    memset(a->cpuid, 0, sizeof a->cpuid);
    if (strchr("iorwt", a->kind))
        ++*accesses;
    return LC_CB_OK;
}

/* The services the paper's examples need; others stay NULL so the engine
 * stops before an instruction that would need one. */
static const lc_vm_ops ops = {
    FVM_OPS_DEVICES, .traced_write = fvm_traced, .dr_read = fvm_dr_read,
    .dr_write = fvm_dr_write, .vmcs_read = fvm_vmread,
};

/* A flat state in `mode`: code at CODE_REAL or CODE_GPA; long mode gets
 * identity paging of the first 1 GiB and of the device page. */
static void state_for(fvm *f, lc_cpu_mode mode, lc_cpu_state *s)
{
    if (mode == LC_MODE_REAL) {
        fvm_state_real(s);
        s->rip = CODE_REAL;
    } else if (mode == LC_MODE_LONG64) {
        fvm_state_long64(f, s);
        s->rip = CODE_GPA;
    } else {
        fvm_state_prot32(s, 0);
        s->rip = CODE_GPA;
    }
}

/* What the hypervisor would report for the example's first exit, and the
 * registers that make the example run as the paper describes it. */
static lc_exit_kind setup(const paper_example *ex, lc_cpu_state *s)
{
    const char *n = ex->name;

    s->gpr[LC_RSP] = 0x80000;
    if (!strcmp(n, "pae-pte-pair") || !strcmp(n, "win7-loop")) {
        s->gpr[LC_RCX] = TRACED_GFN << 12;      /* a page-table page */
        s->gpr[LC_R9] = 4;                      /* 4 PTEs (Windows 7) */
        return LC_EXIT_TRACED;
    }
    if (!strcmp(n, "sles-weak")) {
        /* RAX - 0x201000 is the device; the table load (RAM, 0) and
         * AND/SUB recompute RAX as -RCX, so RCX brings it back there. */
        s->gpr[LC_RAX] = FVM_MMIO + 0x201000;
        s->gpr[LC_RCX] = 0 - (FVM_MMIO + 0x201000);
        s->gpr[LC_RSI] = 0x10000000;            /* table at 8*RSI-...: RAM */
        return LC_EXIT_MMIO;
    }
    if (!strcmp(n, "passmark-dr")) {
        s->gpr[LC_RDI] = 0x20000;
        return LC_EXIT_DR_ACCESS;
    }
    if (!strcmp(n, "hyperv-vmread") || !strcmp(n, "vmware-vmread"))
        return LC_EXIT_VMREAD;
    if (!strcmp(n, "bios-pci"))
        s->gpr[LC_RDX] = 0xcf8;
    return LC_EXIT_IO;
}

static lc_exit describe(lc_exit_kind kind, const paper_example *ex)
{
    lc_exit x;
    lc_insn_info first;

    memset(&x, 0, sizeof x);
    x.kind = kind;
    x.rip = LC_EXIT_RIP_AT;
    lc_decode(ex->mode, ex->insns[0].bytes, ex->insns[0].len, &first);
    if (kind == LC_EXIT_IO) {
        x.u.io.size = (uint8_t)(first.operand_bits / 8);
        x.u.io.is_out = first.op == LC_OP_OUT;
    } else if (kind == LC_EXIT_MMIO || kind == LC_EXIT_TRACED) {
        x.u.mmio.len = (uint8_t)(first.mem_bits / 8);
        x.u.mmio.is_write = first.mem_write;
    }
    return x;
}

int paper_run(const paper_example *ex, paper_run_result *out)
{
    fvm mc;
    unsigned accesses = 0;
    lc_engine *e;
    lc_vcpu *v;
    lc_cpu_state s0, s;
    lc_result r;
    lc_exit x;
    size_t n;
    int rc = -1;

    memset(out, 0, sizeof *out);
    if (fvm_init_layout(&mc, NULL, FVM_RAM_SIZE, FVM_MMIO, FVM_MMIO_SIZE))
        return -1;
    mc.traced_gfn = TRACED_GFN;
    mc.device = quiet_device;
    mc.ctx = &accesses;
    {
        uint64_t at = ex->mode == LC_MODE_REAL ? CODE_REAL : CODE_GPA;
        n = paper_example_bytes(ex, mc.ram + at, FVM_RAM_SIZE - at);
    }
    if (!n || lc_engine_create(NULL, &ops, &e) != LC_OK) {
        fvm_fini(&mc);
        return -1;
    }
    if (lc_vcpu_create(e, 0, &mc, &v) != LC_OK)
        goto out_engine;
    state_for(&mc, ex->mode, &s0);
    x = describe(setup(ex, &s0), ex);

    /* Dynamic clusters (section 5): the later device stores must have
     * been seen exiting before the translation is formed. Let each of
     * them exit once, as the guest would on its first passes. */
    if (x.kind == LC_EXIT_MMIO) {
        uint64_t off = 0;
        for (size_t i = 0; i < ex->count; i++) {
            if (i && ex->insns[i].paper_exits) {
                s = s0;
                s.rip = s0.rip + off;
                lc_vcpu_handle_exit(v, &s, &x, &r);
            }
            off += ex->insns[i].len;
        }
    }
    for (int i = 0; i < 3; i++) {         /* two interpreted, then translated */
        s = s0;
        accesses = 0;
        if (lc_vcpu_handle_exit(v, &s, &x, &r) != LC_OK ||
            r.disposition != LC_HANDLED)
            goto out_vcpu;
        if (i == 0)
            out->insns_first = r.insns;
    }
    out->insns = r.insns;
    out->exits_done = r.exits_done;
    out->exits_saved = r.exits_saved;
    out->device_accesses = accesses;
    out->stop = lc_stop_reason_name(r.stop);
    rc = 0;
out_vcpu:
    lc_vcpu_destroy(v);
out_engine:
    lc_engine_destroy(e);
    fvm_fini(&mc);
    return rc;
}
