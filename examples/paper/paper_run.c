/* SPDX-License-Identifier: MIT */
/*
 * examples/paper/paper_run.c: run the paper's examples through the engine
 * (public API only) against a tiny simulated machine: 4 MiB of RAM, a
 * device page at 0xfee00000, a write-watched page table page, ports that
 * answer 0 (so polling loops see "ready"), debug registers and a VMCS
 * that answers 0. For each example the guest exits on its first
 * instruction three times (two interpreted exits, then the translation)
 * and the demo prints what one exit did.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cluster/cluster.h>

#include "paper_examples.h"
#include "paper_run.h"

#define RAM_SIZE   (4u << 20)
#define DEV_GPA    0xfee00000ull
#define TRACED_GFN 0x50ull
#define CODE_GPA   0x300000ull   /* RIP-relative data 2 MiB below fits */
#define CODE_REAL  0x7000ull     /* real mode: below 1 MiB */

typedef struct machine {
    uint8_t *ram;
    unsigned device_accesses;
} machine;

static void gpa_map(void *o, uint64_t gpa, int w, lc_gpa_map *m)
{
    machine *mc = o;
    (void)w;
    memset(m, 0, sizeof *m);
    if (gpa < RAM_SIZE) {
        m->kind = LC_GPA_RAM;
        m->hva = mc->ram + gpa;
        m->span = RAM_SIZE - gpa;
        m->traced = (gpa >> 12) == TRACED_GFN;
    } else if (gpa >= DEV_GPA && gpa < DEV_GPA + 0x1000) {
        m->kind = LC_GPA_MMIO;
    }
}

static lc_cb_result pio(void *o, uint16_t port, uint8_t size, int w,
                        uint32_t *v)
{
    (void)port; (void)size;
    if (!w)
        *v = 0;
    ((machine *)o)->device_accesses++;
    return LC_CB_OK;
}

static lc_cb_result mmio(void *o, uint64_t gpa, uint8_t len, int w,
                         uint64_t *v)
{
    (void)gpa; (void)len;
    if (!w)
        *v = 0;
    ((machine *)o)->device_accesses++;
    return LC_CB_OK;
}

static lc_cb_result traced(void *o, uint64_t gpa, const void *d, uint8_t len)
{
    machine *mc = o;
    memcpy(mc->ram + gpa, d, len);   /* a shadow-paging VMM would also
                                      * update its shadow entry here */
    mc->device_accesses++;
    return LC_CB_OK;
}

static lc_cb_result dr_read(void *o, unsigned dr, uint64_t *v)
{ (void)o; (void)dr; *v = 0; return LC_CB_OK; }
static lc_cb_result dr_write(void *o, unsigned dr, uint64_t v)
{ (void)o; (void)dr; (void)v; return LC_CB_OK; }
static lc_cb_result vmread(void *o, uint64_t f, uint64_t *v)
{ (void)o; (void)f; *v = 0; return LC_CB_OK; }

static const lc_vm_ops ops = {
    .size = sizeof(lc_vm_ops), .gpa_map = gpa_map, .pio = pio, .mmio = mmio,
    .traced_write = traced, .dr_read = dr_read, .dr_write = dr_write,
    .vmcs_read = vmread,
};

static void seg(lc_segment *s, int code, int db, int l, uint32_t limit)
{
    memset(s, 0, sizeof *s);
    s->present = 1; s->s = 1; s->type = code ? 0xb : 0x3;
    s->db = (uint8_t)db; s->l = (uint8_t)l; s->limit = limit;
    s->g = limit > 0xfffff;
}

/* A flat state in `mode`; long mode gets identity paging of the first
 * 1 GiB and of the device page, built in RAM at 0x1000. */
static void state_for(machine *mc, lc_cpu_mode mode, lc_cpu_state *s)
{
    memset(s, 0, sizeof *s);
    s->rflags = 2;
    for (int i = 0; i < LC_NR_SREGS; i++) {
        if (mode == LC_MODE_REAL)
            seg(&s->seg[i], i == LC_CS, 0, 0, 0xffff);
        else if (mode == LC_MODE_LONG64)
            seg(&s->seg[i], i == LC_CS, i != LC_CS, i == LC_CS, 0xffffffffu);
        else
            seg(&s->seg[i], i == LC_CS, 1, 0, 0xffffffffu);
    }
    if (mode == LC_MODE_REAL) {
        s->rip = CODE_REAL;
        return;
    }
    s->cr0 = LC_CR0_PE;
    s->rip = CODE_GPA;
    if (mode == LC_MODE_LONG64) {
        uint64_t *pml4 = (uint64_t *)(void *)(mc->ram + 0x1000);
        uint64_t *pdpt = (uint64_t *)(void *)(mc->ram + 0x2000);
        uint64_t *pd0 = (uint64_t *)(void *)(mc->ram + 0x3000);
        uint64_t *pd3 = (uint64_t *)(void *)(mc->ram + 0x4000);
        pml4[0] = 0x2000 | 7;
        pdpt[0] = 0x3000 | 7;
        pdpt[3] = 0x4000 | 7;
        for (int i = 0; i < 512; i++)
            pd0[i] = ((uint64_t)i << 21) | 0x87;
        pd3[(DEV_GPA >> 21) & 511] = (DEV_GPA & ~0x1fffffull) | 0x83;
        s->cr0 |= LC_CR0_PG;
        s->cr3 = 0x1000;
        s->cr4 = LC_CR4_PAE;
        s->efer = LC_EFER_LME | LC_EFER_LMA;
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
        s->gpr[LC_RAX] = DEV_GPA + 0x201000;
        s->gpr[LC_RCX] = 0 - (DEV_GPA + 0x201000);
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
    machine mc = { 0 };
    lc_engine *e;
    lc_vcpu *v;
    lc_cpu_state s0, s;
    lc_result r;
    lc_exit x;
    size_t n;
    int rc = -1;

    memset(out, 0, sizeof *out);
    mc.ram = calloc(1, RAM_SIZE);
    if (!mc.ram)
        return -1;
    {
        uint64_t at = ex->mode == LC_MODE_REAL ? CODE_REAL : CODE_GPA;
        n = paper_example_bytes(ex, mc.ram + at, RAM_SIZE - at);
    }
    if (!n || lc_engine_create(NULL, &ops, &e) != LC_OK) {
        free(mc.ram);
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
        mc.device_accesses = 0;
        if (lc_vcpu_handle_exit(v, &s, &x, &r) != LC_OK ||
            r.disposition != LC_HANDLED)
            goto out_vcpu;
        if (i == 0)
            out->insns_first = r.insns;
    }
    out->insns = r.insns;
    out->exits_done = r.exits_done;
    out->exits_saved = r.exits_saved;
    out->device_accesses = mc.device_accesses;
    out->stop = lc_stop_reason_name(r.stop);
    rc = 0;
out_vcpu:
    lc_vcpu_destroy(v);
out_engine:
    lc_engine_destroy(e);
    free(mc.ram);
    return rc;
}
