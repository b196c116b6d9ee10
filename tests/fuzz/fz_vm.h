/* SPDX-License-Identifier: MIT */
/*
 * tests/fuzz/fz_vm.h: the hostile fake VMM shared by the runtime and
 * engine fuzz targets. 64 KiB of RAM whose contents (page tables,
 * descriptors, code) come from the input, a traced page, a read-only
 * page, an MMIO window, and callbacks whose answers come from the input.
 * Every callback also checks the contracts the engine promises (access
 * sizes, DR numbers, traced writes inside RAM) and aborts if broken.
 */
#ifndef LC_TEST_FZ_VM_H
#define LC_TEST_FZ_VM_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cluster/cluster.h>

#define RAM_SIZE 0x10000u
#define MMIO_BASE 0x20000u

typedef struct fz {
    uint8_t *ram;
    const uint8_t *data;
    size_t size, pos;
} fz;

static inline uint64_t take(fz *f, unsigned n)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < n; i++) {
        uint8_t b = f->pos < f->size ? f->data[f->pos] : 0;
        f->pos++;
        v |= (uint64_t)b << (8 * i);
    }
    return v;
}

static inline void map(void *o, uint64_t gpa, int w, lc_gpa_map *m)
{
    fz *f = o;
    (void)w;
    memset(m, 0, sizeof *m);
    if (gpa < RAM_SIZE) {
        m->kind = LC_GPA_RAM;
        m->hva = f->ram + gpa;
        m->span = RAM_SIZE - gpa;
        m->traced = (gpa >> 12) == 3;
        m->readonly = (gpa >> 12) == 4;
    } else if (gpa >= MMIO_BASE && gpa < MMIO_BASE + 0x1000) {
        m->kind = LC_GPA_MMIO;
    }
}

static inline lc_cb_result pio(void *o, uint16_t p, uint8_t s, int w, uint32_t *v)
{
    fz *f = o;
    (void)p;
    if (!w)
        *v = (uint32_t)take(f, s);
    return (take(f, 1) & 0x1f) == 0 ? LC_CB_STOP : LC_CB_OK;
}

static inline lc_cb_result mmio(void *o, uint64_t a, uint8_t l, int w, uint64_t *v)
{
    fz *f = o;
    (void)a;
    if (l != 1 && l != 2 && l != 4 && l != 8)
        abort();    /* contract: naturally sized pieces only */
    if (!w)
        *v = take(f, l);
    return LC_CB_OK;
}

static inline lc_cb_result traced(void *o, uint64_t gpa, const void *d, uint8_t l)
{
    fz *f = o;
    if (gpa + l > RAM_SIZE)
        abort();
    memcpy(f->ram + gpa, d, l);
    return LC_CB_OK;
}

static inline int irq(void *o, const lc_cpu_state *s)
{
    (void)s;
    return (take(o, 1) & 7) == 0;
}

static inline lc_cb_result cpuid(void *o, uint32_t l, uint32_t s, uint32_t out[4])
{
    (void)l; (void)s;
    for (int i = 0; i < 4; i++)
        out[i] = (uint32_t)take(o, 4);
    return LC_CB_OK;
}

static inline lc_cb_result rdmsr(void *o, uint32_t m, uint64_t *v)
{ (void)m; *v = take(o, 8); return LC_CB_OK; }
static inline lc_cb_result wrmsr(void *o, uint32_t m, uint64_t v)
{ (void)o; (void)m; (void)v; return LC_CB_OK; }
static inline lc_cb_result drr(void *o, unsigned d, uint64_t *v)
{ if (d > 7) abort(); *v = take(o, 8); return LC_CB_OK; }
static inline lc_cb_result drw(void *o, unsigned d, uint64_t v)
{ (void)o; (void)v; if (d > 7) abort(); return LC_CB_OK; }
static inline lc_cb_result halt(void *o) { (void)o; return LC_CB_OK; }
static inline lc_cb_result vmr(void *o, uint64_t fl, uint64_t *v)
{ (void)fl; *v = take(o, 8); return LC_CB_OK; }
static inline lc_cb_result vmw(void *o, uint64_t fl, uint64_t v)
{ (void)o; (void)fl; (void)v; return LC_CB_OK; }

static const lc_vm_ops ops = {
    .size = sizeof ops, .gpa_map = map, .pio = pio, .mmio = mmio,
    .traced_write = traced, .irq_pending = irq, .cpuid = cpuid,
    .rdmsr = rdmsr, .wrmsr = wrmsr, .dr_read = drr, .dr_write = drw,
    .halt = halt, .vmcs_read = vmr, .vmcs_write = vmw,
};

/* Input layout: a header that becomes the CPU state, then RAM. */
static inline void fz_parse(fz *fp, lc_cpu_state *sp, const uint8_t *data,
                            size_t size)
{
    fz f = *fp;
    lc_cpu_state s;
    /* Three of four inputs start from a sane mode (real, flat 32-bit, long
     * mode with identity tables) so code actually runs; the fourth has a
     * fully fuzzed state. RAM (and so code and tables) is always hostile,
     * except the long-mode tables the template installs. */
    unsigned tmpl = (unsigned)take(&f, 1) & 3;

    memset(&s, 0, sizeof s);
    s.cr0 = take(&f, 4);
    s.cr3 = take(&f, 4) & (RAM_SIZE - 1) & ~0xfffull;
    s.cr4 = take(&f, 4);
    s.efer = take(&f, 2);
    s.rflags = (take(&f, 4) | 2) & ~LC_RFLAGS_TF;
    for (int i = 0; i < LC_NR_SREGS; i++) {
        uint64_t a = take(&f, 4);
        lc_segment *sg = &s.seg[i];
        sg->base = take(&f, 1) << 12;
        sg->limit = (a & 1) ? 0xffffffffu : (uint32_t)(a >> 8) & 0xffff;
        sg->type = (a >> 1) & 0xf;
        sg->present = (a >> 5) & 1;
        sg->dpl = (a >> 6) & 3;
        sg->db = (a >> 24) & 1;
        sg->s = !((a >> 25) & 1);
        sg->l = (a >> 26) & 1;
        sg->g = (a >> 27) & 1;
        sg->unusable = ((a >> 28) & 7) == 0;
    }
    for (int i = 0; i < LC_NR_GPRS; i++)
        s.gpr[i] = take(&f, 1) & 1 ? take(&f, 8) : take(&f, 2);
    s.rip = take(&f, 2) & 0xfff;
    /* The rest is RAM: page tables, descriptors and code. */
    {
        size_t n = f.pos < size ? size - f.pos : 0;
        if (n > RAM_SIZE)
            n = RAM_SIZE;
        memcpy(f.ram, data + f.pos, n);
        /* Device answers come from the whole input, cycling. */
        f.pos = 0;
    }
    if (tmpl != 0) {
        uint64_t keep_rflags = (s.rflags & 0xcd5) | 2;   /* status + DF, IF */
        for (int i = 0; i < LC_NR_SREGS; i++) {
            lc_segment *sg = &s.seg[i];
            memset(sg, 0, sizeof *sg);
            sg->present = 1;
            sg->s = 1;
            sg->type = i == LC_CS ? 0xb : 0x3;
            sg->limit = tmpl == 1 ? 0xffff : 0xffffffffu;
            sg->db = tmpl == 2 || (tmpl == 3 && i != LC_CS);
            sg->l = tmpl == 3 && i == LC_CS;
        }
        s.rflags = keep_rflags;
        s.cr0 = tmpl == 1 ? 0 : tmpl == 2 ? LC_CR0_PE : LC_CR0_PE | LC_CR0_PG;
        s.cr4 = tmpl == 3 ? LC_CR4_PAE : 0;
        s.efer = tmpl == 3 ? LC_EFER_LME | LC_EFER_LMA : 0;
        if (tmpl == 3) {
            /* PML4 at 0xc000 -> PDPT 0xd000 -> PD 0xe000: 2 MiB identity
             * page 0, which covers RAM, the traced/ROM pages and MMIO. */
            uint64_t e[3] = { 0xd000 | 7, 0xe000 | 7, 0x87 };
            memset(f.ram + 0xc000, 0, 0x3000);
            memcpy(f.ram + 0xc000, &e[0], 8);
            memcpy(f.ram + 0xd000, &e[1], 8);
            memcpy(f.ram + 0xe000, &e[2], 8);
            s.cr3 = 0xc000;
        }
    }

    *fp = f;
    *sp = s;
}

#endif /* LC_TEST_FZ_VM_H */
