/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/fakevm.h: a small fake VMM for runtime tests.
 *
 * 4 MiB of RAM at guest-physical 0, an MMIO window at FVM_MMIO, an
 * optional traced page, and logging callbacks for every service in
 * lc_vm_ops. Device reads answer from a simple deterministic function of
 * the address so expected values can be computed in the test.
 */
#ifndef LC_TEST_FAKEVM_H
#define LC_TEST_FAKEVM_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cluster/cluster.h>

#define FVM_RAM_SIZE  (4u << 20)
#define FVM_MMIO      0xfee00000ull
#define FVM_MMIO_SIZE 0x1000u
#define FVM_LOG_MAX   256

typedef struct fvm_event {
    char     kind;       /* 'i' port in, 'o' port out, 'r'/'w' MMIO, 't'
                          * traced write, 'c' cpuid, 'R'/'W' MSR, 'd'/'D'
                          * DR read/write, 'v'/'V' VMREAD/VMWRITE, 'h' HLT */
    uint64_t addr;
    uint8_t  size;
    uint64_t value;
} fvm_event;

typedef struct fvm {
    uint8_t   *ram;
    uint64_t   traced_gfn;      /* ~0 for none */
    fvm_event  log[FVM_LOG_MAX];
    unsigned   nlog;
    lc_cb_result pio_answer;    /* LC_CB_OK unless a test wants STOP */
    int        irq;             /* irq_pending answer */
    uint32_t   in_seq[16];      /* if nin_seq: port reads answer these */
    unsigned   nin_seq, in_pos;
    uint64_t   dr[8];
} fvm;

static inline void fvm_log(fvm *f, char kind, uint64_t addr, uint8_t size,
                           uint64_t value)
{
    if (f->nlog < FVM_LOG_MAX)
        f->log[f->nlog++] = (fvm_event){ kind, addr, size, value };
}

/* Device answer for a read: a function of address and size. */
static inline uint64_t fvm_answer(uint64_t addr, unsigned size)
{
    uint64_t v = (addr * 0x9e3779b97f4a7c15ull) >> 17;
    return size >= 8 ? v : v & ((1ull << (size * 8)) - 1);
}

static inline void fvm_gpa_map(void *o, uint64_t gpa, int w, lc_gpa_map *m)
{
    fvm *f = o;
    (void)w;
    memset(m, 0, sizeof *m);
    if (gpa < FVM_RAM_SIZE) {
        m->kind = LC_GPA_RAM;
        m->hva = f->ram + gpa;
        m->span = FVM_RAM_SIZE - gpa;
        m->traced = (gpa >> 12) == f->traced_gfn;
    } else if (gpa >= FVM_MMIO && gpa < FVM_MMIO + FVM_MMIO_SIZE) {
        m->kind = LC_GPA_MMIO;
    }
}

static inline lc_cb_result fvm_pio(void *o, uint16_t port, uint8_t size,
                                   int is_write, uint32_t *val)
{
    fvm *f = o;
    if (f->pio_answer != LC_CB_OK)
        return f->pio_answer;
    if (!is_write)
        *val = f->nin_seq ? f->in_seq[f->in_pos++ % f->nin_seq]
                          : (uint32_t)fvm_answer(port, size);
    fvm_log(f, is_write ? 'o' : 'i', port, size, *val);
    return LC_CB_OK;
}

static inline lc_cb_result fvm_mmio(void *o, uint64_t gpa, uint8_t len,
                                    int is_write, uint64_t *val)
{
    fvm *f = o;
    if (!is_write)
        *val = fvm_answer(gpa, len);
    fvm_log(f, is_write ? 'w' : 'r', gpa, len, *val);
    return LC_CB_OK;
}

static inline lc_cb_result fvm_traced(void *o, uint64_t gpa, const void *d,
                                      uint8_t len)
{
    fvm *f = o;
    uint64_t v = 0;
    memcpy(&v, d, len);
    memcpy(f->ram + gpa, d, len);      /* the VMM performs the store */
    fvm_log(f, 't', gpa, len, v);
    return LC_CB_OK;
}

static inline int fvm_irq(void *o, const lc_cpu_state *s)
{
    (void)s;
    return ((fvm *)o)->irq;
}

static inline lc_cb_result fvm_cpuid(void *o, uint32_t leaf, uint32_t sub,
                                     uint32_t out[4])
{
    fvm_log(o, 'c', leaf, 4, sub);
    out[0] = leaf + 1; out[1] = 0x756e6547; out[2] = sub; out[3] = 0x49656e69;
    return LC_CB_OK;
}

static inline lc_cb_result fvm_rdmsr(void *o, uint32_t msr, uint64_t *v)
{
    *v = 0x1122334455667788ull ^ msr;
    fvm_log(o, 'R', msr, 8, *v);
    return LC_CB_OK;
}

static inline lc_cb_result fvm_wrmsr(void *o, uint32_t msr, uint64_t v)
{
    fvm_log(o, 'W', msr, 8, v);
    return LC_CB_OK;
}

static inline lc_cb_result fvm_dr_read(void *o, unsigned dr, uint64_t *v)
{
    *v = ((fvm *)o)->dr[dr & 7];
    fvm_log(o, 'd', dr, 8, *v);
    return LC_CB_OK;
}

static inline lc_cb_result fvm_dr_write(void *o, unsigned dr, uint64_t v)
{
    ((fvm *)o)->dr[dr & 7] = v;
    fvm_log(o, 'D', dr, 8, v);
    return LC_CB_OK;
}

static inline lc_cb_result fvm_halt(void *o)
{
    fvm_log(o, 'h', 0, 0, 0);
    return LC_CB_OK;
}

static inline lc_cb_result fvm_vmread(void *o, uint64_t field, uint64_t *v)
{
    *v = field * 3 + 1;
    fvm_log(o, 'v', field, 8, *v);
    return LC_CB_OK;
}

static inline lc_cb_result fvm_vmwrite(void *o, uint64_t field, uint64_t v)
{
    fvm_log(o, 'V', field, 8, v);
    return LC_CB_OK;
}

static const lc_vm_ops fvm_ops = {
    .size = sizeof(lc_vm_ops),
    .gpa_map = fvm_gpa_map,
    .pio = fvm_pio,
    .mmio = fvm_mmio,
    .traced_write = fvm_traced,
    .irq_pending = fvm_irq,
    .cpuid = fvm_cpuid,
    .rdmsr = fvm_rdmsr,
    .wrmsr = fvm_wrmsr,
    .dr_read = fvm_dr_read,
    .dr_write = fvm_dr_write,
    .halt = fvm_halt,
    .vmcs_read = fvm_vmread,
    .vmcs_write = fvm_vmwrite,
};

static inline void fvm_init(fvm *f)
{
    memset(f, 0, sizeof *f);
    f->ram = calloc(1, FVM_RAM_SIZE);
    f->traced_gfn = ~0ull;
}

static inline void fvm_fini(fvm *f)
{
    free(f->ram);
}

static inline void fvm_seg(lc_segment *s, uint16_t sel, uint64_t base,
                           uint32_t limit, uint8_t type, uint8_t db,
                           uint8_t l, uint8_t dpl)
{
    memset(s, 0, sizeof *s);
    s->selector = sel; s->base = base; s->limit = limit; s->type = type;
    s->present = 1; s->s = 1; s->db = db; s->l = l; s->dpl = dpl;
    s->g = limit > 0xfffff;
}

/* Real mode: all segments base 0, limit 64 KiB. */
static inline void fvm_state_real(lc_cpu_state *s)
{
    memset(s, 0, sizeof *s);
    for (int i = 0; i < LC_NR_SREGS; i++)
        fvm_seg(&s->seg[i], 0, 0, 0xffff, i == LC_CS ? 0xb : 0x3, 0, 0, 0);
    s->rflags = 0x2;
}

/* 32-bit flat protected mode, paging off, CPL `cpl`. */
static inline void fvm_state_prot32(lc_cpu_state *s, unsigned cpl)
{
    memset(s, 0, sizeof *s);
    for (int i = 0; i < LC_NR_SREGS; i++)
        fvm_seg(&s->seg[i], (uint16_t)(i == LC_CS ? 0x8 : 0x10) | cpl, 0,
                0xffffffffu, i == LC_CS ? 0xb : 0x3, 1, 0, (uint8_t)cpl);
    s->cr0 = LC_CR0_PE;
    s->rflags = 0x2;
}

/* 64-bit mode with identity 4-level paging of the first 1 GiB in 2 MiB
 * pages (tables at 0x1000..0x3fff) plus the MMIO window's 2 MiB page. */
static inline void fvm_state_long64(fvm *f, lc_cpu_state *s)
{
    uint64_t *pml4 = (uint64_t *)(f->ram + 0x1000);
    uint64_t *pdpt = (uint64_t *)(f->ram + 0x2000);
    uint64_t *pd = (uint64_t *)(f->ram + 0x3000);
    uint64_t *pd3 = (uint64_t *)(f->ram + 0x4000);

    pml4[0] = 0x2000 | 0x7;
    pdpt[0] = 0x3000 | 0x7;
    pdpt[3] = 0x4000 | 0x7;
    for (int i = 0; i < 512; i++)
        pd[i] = ((uint64_t)i << 21) | 0x87;      /* P RW US PS */
    pd3[(FVM_MMIO >> 21) & 511] = (FVM_MMIO & ~0x1fffffull) | 0x83;
    memset(s, 0, sizeof *s);
    for (int i = 0; i < LC_NR_SREGS; i++)
        fvm_seg(&s->seg[i], i == LC_CS ? 0x8 : 0x10, 0, 0xffffffffu,
                i == LC_CS ? 0xb : 0x3, i != LC_CS, i == LC_CS, 0);
    s->cr0 = LC_CR0_PE | LC_CR0_PG;
    s->cr3 = 0x1000;
    s->cr4 = LC_CR4_PAE;
    s->efer = LC_EFER_LME | LC_EFER_LMA;
    s->rflags = 0x2;
}

#ifdef LC_PAPER_EXAMPLES_H
/* The paper example `name` copied to guest-physical `gpa`; returns the
 * address after it. Aborts the test if there is no such example. */
static inline uint64_t fvm_load_example(fvm *f, const char *name,
                                        uint64_t gpa)
{
    const paper_example *ex = paper_example_find(name);
    size_t n;

    if (!ex)
        abort();
    n = paper_example_bytes(ex, f->ram + gpa, FVM_RAM_SIZE - gpa);
    return gpa + n;
}
#endif

#endif /* LC_TEST_FAKEVM_H */
