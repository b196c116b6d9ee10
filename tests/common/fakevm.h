/* SPDX-License-Identifier: MIT */
/*
 * tests/common/fakevm.h: the one fake VMM every test, fuzz target,
 * benchmark and the paper demo give libcluster.
 *
 * Guest RAM at guest-physical 0 (allocated here, or the caller's, e.g. a
 * KVM memory slot), an MMIO window (which may be a hole in RAM) and an
 * optional second one, optional traced, read-only and short-span pages,
 * and one callback for every service in lc_vm_ops. Every callback describes its access as an
 * fvm_access and hands it to one device function, which answers reads
 * and may refuse; the fixture then logs the access. The default device
 * answers from deterministic functions (so tests can compute expected
 * values) with a few knobs; the fuzz targets and the differential tester
 * plug in their own answer streams instead of copying the callbacks.
 *
 * Every callback checks the contracts ops.h promises (access sizes, DR
 * numbers, traced writes inside RAM) and aborts if the engine breaks one:
 * under the fuzz targets that is the finding, under Check a failed test.
 * gpa_map poisons the fields it does not set, and MMIO reads that arrive
 * with a non-zero value are flagged (read_not_zeroed).
 *
 * Header-only and written against the public API alone (<cluster/
 * cluster.h>): the paper demo in examples/paper, which may use nothing
 * else, runs on it too, and each user compiles it with its own flags
 * (sanitizers, -fsanitize=fuzzer, C++ never) without a library to link.
 */
#ifndef LC_TEST_FAKEVM_H
#define LC_TEST_FAKEVM_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cluster/cluster.h>

/* The default layout (fvm_init). */
#define FVM_RAM_SIZE  (4u << 20)
#define FVM_MMIO      0xfee00000ull
#define FVM_MMIO_SIZE 0x1000u
#define FVM_LOG_MAX   1024
#define FVM_NONE      (~0ull)

/* One logged access. kind: 'i' port in, 'o' port out, 'r'/'w' MMIO, 't'
 * traced write, 'c' CPUID (value: subleaf), 'R'/'W' MSR, 'd'/'D' DR
 * read/write, 'v'/'V' VMREAD/VMWRITE, 'h' HLT. */
typedef struct fvm_event {
    char     kind;
    uint64_t addr;
    uint8_t  size;
    uint64_t value;
} fvm_event;

/* What a device function sees: the event, plus CPUID's two extra words.
 * For reads it fills `value` (or `cpuid`); 'q' (irq_pending, value: the
 * answer) is asked but never logged. */
typedef struct fvm_access {
    char     kind;
    uint8_t  size;
    uint64_t addr;        /* port, gpa, CPUID leaf, MSR, DR number, field */
    uint64_t value;       /* write: the value; read: the answer */
    uint32_t sub;         /* CPUID subleaf */
    uint32_t cpuid[4];    /* CPUID answer: eax, ebx, ecx, edx */
} fvm_access;

struct fvm;
/* Answers one access; anything but LC_CB_OK is returned to the engine
 * and the access is not logged. */
typedef lc_cb_result (*fvm_device_fn)(struct fvm *f, fvm_access *a);

typedef struct fvm {
    uint8_t   *ram;
    uint64_t   ram_size;
    int        own_ram;         /* fvm_fini frees it */
    uint64_t   mmio_base, mmio_size;
    uint64_t   mmio2_base, mmio2_size;  /* a second window, e.g. above
                                         * 4 GiB (0, 0: none) */
    uint64_t   traced_gfn;      /* FVM_NONE for none */
    uint64_t   readonly_gfn;    /* FVM_NONE for none */
    uint64_t   short_gfn;       /* RAM page whose span ends after 3 bytes,
                                 * shorter than any paging entry */
    int        traced_no_store; /* traced writes are logged, not stored:
                                 * proves the engine never stores to a
                                 * traced page itself */
    fvm_device_fn device;       /* NULL: fvm_default_device */
    void      *ctx;             /* the device function's own state */
    fvm_event  log[FVM_LOG_MAX];
    unsigned   nlog;            /* stops growing at FVM_LOG_MAX */
    unsigned   nmap, nmap_write;   /* gpa_map calls, with is_write */
    int        read_not_zeroed; /* an MMIO read arrived with *value != 0
                                 * (ops.h: the engine zeroes it) */
    /* Knobs of the default device. */
    lc_cb_result pio_answer;    /* LC_CB_OK unless a test wants STOP */
    int        irq;             /* irq_pending answer */
    uint32_t   in_seq[16];      /* if nin_seq: port reads answer these */
    unsigned   nin_seq, in_pos;
    int        fresh_reads;     /* device reads answer a running counter,
                                 * so a reordered, missing or extra read
                                 * changes what the guest computes */
    uint32_t   nreads;
    uint64_t   dr[8];
} fvm;

static inline void fvm_log(fvm *f, char kind, uint64_t addr, uint8_t size,
                           uint64_t value)
{
    if (f->nlog < FVM_LOG_MAX)
        f->log[f->nlog++] = (fvm_event){ kind, addr, size, value };
}

/* Whether two runs made the same accesses in the same order (field by
 * field: the events' padding is not compared). */
static inline int fvm_log_equal(const fvm *a, const fvm *b)
{
    if (a->nlog != b->nlog)
        return 0;
    for (unsigned i = 0; i < a->nlog; i++) {
        const fvm_event *x = &a->log[i], *y = &b->log[i];
        if (x->kind != y->kind || x->addr != y->addr || x->size != y->size ||
            x->value != y->value)
            return 0;
    }
    return 1;
}

static inline uint64_t fvm_mask(unsigned size)
{
    return size >= 8 ? ~0ull : (1ull << (size * 8)) - 1;
}

/* Device answer for a read: a function of address and size. */
static inline uint64_t fvm_answer(uint64_t addr, unsigned size)
{
    return ((addr * 0x9e3779b97f4a7c15ull) >> 17) & fvm_mask(size);
}

/* The default device: every answer a fixed function of the request
 * (CPUID: leaf + 1, "Genu", subleaf, "ineI"), debug registers stored. */
static inline lc_cb_result fvm_default_device(fvm *f, fvm_access *a)
{
    switch (a->kind) {
    case 'i':
    case 'o':
        if (f->pio_answer != LC_CB_OK)
            return f->pio_answer;
        if (a->kind == 'o')
            break;
        if (f->nin_seq) {
            a->value = f->in_seq[f->in_pos++ % f->nin_seq];
            break;
        }
        /* fall through */
    case 'r':
        a->value = f->fresh_reads
            ? (f->nreads++ * 37u + a->addr) & fvm_mask(a->size)
            : fvm_answer(a->addr, a->size);
        break;
    case 'q':
        a->value = (uint64_t)f->irq;
        break;
    case 'c':
        a->cpuid[0] = (uint32_t)a->addr + 1;
        a->cpuid[1] = 0x756e6547;
        a->cpuid[2] = a->sub;
        a->cpuid[3] = 0x49656e69;
        break;
    case 'R':
        a->value = 0x1122334455667788ull ^ a->addr;
        break;
    case 'd':
        a->value = f->dr[a->addr];
        break;
    case 'D':
        f->dr[a->addr] = a->value;
        break;
    case 'v':
        a->value = a->addr * 3 + 1;
        break;
    default:                    /* writes the device only records */
        break;
    }
    return LC_CB_OK;
}

/* Hands one access to the device and logs it if accepted. */
static inline lc_cb_result fvm_access_device(fvm *f, fvm_access *a)
{
    lc_cb_result r = (f->device ? f->device : fvm_default_device)(f, a);

    if (r == LC_CB_OK && a->kind != 'q')
        fvm_log(f, a->kind, a->addr, a->size,
                a->kind == 'c' ? a->sub : a->value);
    return r;
}

static inline void fvm_gpa_map(void *o, uint64_t gpa, int w, lc_gpa_map *m)
{
    fvm *f = o;

    f->nmap++;
    f->nmap_write += w != 0;
    /* Every field is set below: poison the rest, so an engine that
     * relied on zeroing would show it. */
    memset(m, 0xee, sizeof *m);
    m->traced = 0;
    m->readonly = 0;
    m->hva = NULL;
    m->span = 0;
    if ((gpa >= f->mmio_base && gpa - f->mmio_base < f->mmio_size) ||
        (gpa >= f->mmio2_base && gpa - f->mmio2_base < f->mmio2_size)) {
        m->kind = LC_GPA_MMIO;
    } else if (gpa < f->ram_size) {
        /* RAM up to the MMIO hole, if the window lies inside RAM */
        uint64_t end = gpa < f->mmio_base && f->mmio_base < f->ram_size
                           ? f->mmio_base : f->ram_size;
        m->kind = LC_GPA_RAM;
        m->hva = f->ram + gpa;
        m->span = end - gpa;
        m->traced = (gpa >> 12) == f->traced_gfn;
        m->readonly = (gpa >> 12) == f->readonly_gfn;
        if ((gpa >> 12) == f->short_gfn && m->span > 3)
            m->span = 3;
    } else {
        m->kind = LC_GPA_UNMAPPED;
    }
}

static inline lc_cb_result fvm_pio(void *o, uint16_t port, uint8_t size,
                                   int is_write, uint32_t *val)
{
    fvm_access a = { is_write ? 'o' : 'i', size, port,
                     is_write ? *val & fvm_mask(size) : 0, 0, { 0 } };
    lc_cb_result r;

    if (size != 1 && size != 2 && size != 4)
        abort();                /* contract: port accesses of 1, 2, 4 */
    r = fvm_access_device(o, &a);
    if (r == LC_CB_OK && !is_write)
        *val = (uint32_t)(a.value & fvm_mask(size));
    return r;
}

static inline lc_cb_result fvm_mmio(void *o, uint64_t gpa, uint8_t len,
                                    int is_write, uint64_t *val)
{
    fvm_access a = { is_write ? 'w' : 'r', len, gpa,
                     is_write ? *val & fvm_mask(len) : 0, 0, { 0 } };
    lc_cb_result r;

    if (len != 1 && len != 2 && len != 4 && len != 8)
        abort();                /* contract: naturally sized pieces only */
    if (!is_write && *val != 0)
        ((fvm *)o)->read_not_zeroed = 1;
    r = fvm_access_device(o, &a);
    if (r == LC_CB_OK && !is_write)
        *val = a.value & fvm_mask(len);
    return r;
}

/* The VMM performs the store (a shadow-paging VMM would also update its
 * shadow entry here). */
static inline lc_cb_result fvm_traced(void *o, uint64_t gpa, const void *d,
                                      uint8_t len)
{
    fvm *f = o;
    fvm_access a = { 't', len, gpa, 0, 0, { 0 } };
    lc_cb_result r;

    if (gpa >= f->ram_size || f->ram_size - gpa < len)
        abort();                /* contract: inside RAM */
    memcpy(&a.value, d, len < 8 ? len : 8);
    r = fvm_access_device(f, &a);
    if (r == LC_CB_OK && !f->traced_no_store)
        memcpy(f->ram + gpa, d, len);
    return r;
}

static inline int fvm_irq(void *o, const lc_cpu_state *s)
{
    fvm_access a = { 'q', 0, 0, 0, 0, { 0 } };
    (void)s;
    return fvm_access_device(o, &a) == LC_CB_OK && a.value != 0;
}

static inline lc_cb_result fvm_cpuid(void *o, uint32_t leaf, uint32_t sub,
                                     uint32_t out[4])
{
    fvm_access a = { 'c', 4, leaf, 0, sub, { 0 } };
    lc_cb_result r = fvm_access_device(o, &a);

    if (r == LC_CB_OK)
        memcpy(out, a.cpuid, sizeof a.cpuid);
    return r;
}

/* The services with one 64-bit value in or out. */
static inline lc_cb_result fvm_value(void *o, char kind, uint64_t addr,
                                     uint64_t in, uint64_t *out)
{
    fvm_access a = { kind, 8, addr, in, 0, { 0 } };
    lc_cb_result r = fvm_access_device(o, &a);

    if (r == LC_CB_OK && out)
        *out = a.value;
    return r;
}

static inline lc_cb_result fvm_rdmsr(void *o, uint32_t msr, uint64_t *v)
{ return fvm_value(o, 'R', msr, 0, v); }
static inline lc_cb_result fvm_wrmsr(void *o, uint32_t msr, uint64_t v)
{ return fvm_value(o, 'W', msr, v, NULL); }
static inline lc_cb_result fvm_vmread(void *o, uint64_t field, uint64_t *v)
{ return fvm_value(o, 'v', field, 0, v); }
static inline lc_cb_result fvm_vmwrite(void *o, uint64_t field, uint64_t v)
{ return fvm_value(o, 'V', field, v, NULL); }

static inline lc_cb_result fvm_dr_read(void *o, unsigned dr, uint64_t *v)
{
    if (dr > 7)
        abort();                /* contract: DR0..DR7 */
    return fvm_value(o, 'd', dr, 0, v);
}

static inline lc_cb_result fvm_dr_write(void *o, unsigned dr, uint64_t v)
{
    if (dr > 7)
        abort();
    return fvm_value(o, 'D', dr, v, NULL);
}

static inline lc_cb_result fvm_halt(void *o)
{
    fvm_access a = { 'h', 0, 0, 0, 0, { 0 } };
    return fvm_access_device(o, &a);
}

/* The table entries of a VMM that only has devices. A test that wants
 * a VMM without some service starts from these and adds the rest it
 * has: the engine stops before an instruction whose service is NULL
 * (ops.h), which the KVM test and the differential tester rely on. */
#define FVM_OPS_DEVICES \
    .size = sizeof(lc_vm_ops), .gpa_map = fvm_gpa_map, .pio = fvm_pio, \
    .mmio = fvm_mmio

/* Every service. */
static const lc_vm_ops fvm_ops = {
    FVM_OPS_DEVICES,
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

/* The lean table, for the benchmarks (bench/): the same machine with
 * callbacks as cheap as a VMM's own (RAM or the first MMIO window, device
 * reads answered, nothing logged, counted or checked), so that a figure
 * per exit is the engine's cost and not this fixture's bookkeeping. The
 * tests use fvm_ops. */
static inline void fvm_gpa_map_lean(void *o, uint64_t gpa, int w,
                                    lc_gpa_map *m)
{
    const fvm *f = o;

    (void)w;
    m->traced = 0;
    m->readonly = 0;
    if (gpa - f->mmio_base < f->mmio_size) {
        m->kind = LC_GPA_MMIO;
        m->hva = NULL;
        m->span = 0;
    } else if (gpa < f->ram_size) {
        m->kind = LC_GPA_RAM;
        m->hva = f->ram + gpa;
        m->span = (gpa < f->mmio_base && f->mmio_base < f->ram_size
                       ? f->mmio_base : f->ram_size) - gpa;
    } else {
        m->kind = LC_GPA_UNMAPPED;
        m->hva = NULL;
        m->span = 0;
    }
}

static inline lc_cb_result fvm_pio_lean(void *o, uint16_t port, uint8_t size,
                                        int is_write, uint32_t *val)
{
    (void)o;
    if (!is_write)
        *val = (uint32_t)fvm_answer(port, size);
    return LC_CB_OK;
}

static inline lc_cb_result fvm_mmio_lean(void *o, uint64_t gpa, uint8_t len,
                                         int is_write, uint64_t *val)
{
    (void)o;
    if (!is_write)
        *val = fvm_answer(gpa, len);
    return LC_CB_OK;
}

static const lc_vm_ops fvm_ops_lean = {
    .size = sizeof(lc_vm_ops), .gpa_map = fvm_gpa_map_lean,
    .pio = fvm_pio_lean, .mmio = fvm_mmio_lean,
};

/* `ram_size` bytes of RAM at `ram` (NULL: allocated here, zeroed), the
 * MMIO window at [mmio_base, mmio_base + mmio_size). Returns 0, or -1 if
 * the allocation failed. */
static inline int fvm_init_layout(fvm *f, uint8_t *ram, uint64_t ram_size,
                                  uint64_t mmio_base, uint64_t mmio_size)
{
    memset(f, 0, sizeof *f);
    f->own_ram = ram == NULL;
    f->ram = ram ? ram : calloc(1, (size_t)ram_size);
    f->ram_size = ram_size;
    f->mmio_base = mmio_base;
    f->mmio_size = mmio_size;
    f->traced_gfn = FVM_NONE;
    f->readonly_gfn = FVM_NONE;
    f->short_gfn = FVM_NONE;
    return f->ram ? 0 : -1;
}

/* The default layout: FVM_RAM_SIZE of RAM, MMIO at FVM_MMIO. Aborts if
 * there is no memory (a test cannot go on without it). */
static inline void fvm_init(fvm *f)
{
    if (fvm_init_layout(f, NULL, FVM_RAM_SIZE, FVM_MMIO, FVM_MMIO_SIZE))
        abort();
}

static inline void fvm_fini(fvm *f)
{
    if (f->own_ram)
        free(f->ram);
    f->ram = NULL;
}

/* ---- CPU states ---------------------------------------------------------- */

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
 * pages (tables at 0x1000..0x4fff of RAM) plus the 2 MiB page of the
 * MMIO window if it lies in the fourth GiB. */
static inline void fvm_state_long64(fvm *f, lc_cpu_state *s)
{
    uint64_t *pml4 = (uint64_t *)(void *)(f->ram + 0x1000);
    uint64_t *pdpt = (uint64_t *)(void *)(f->ram + 0x2000);
    uint64_t *pd = (uint64_t *)(void *)(f->ram + 0x3000);
    uint64_t *pd3 = (uint64_t *)(void *)(f->ram + 0x4000);

    if (f->ram_size < 0x5000)
        abort();
    pml4[0] = 0x2000 | 0x7;
    pdpt[0] = 0x3000 | 0x7;
    pdpt[3] = 0x4000 | 0x7;
    for (int i = 0; i < 512; i++)
        pd[i] = ((uint64_t)i << 21) | 0x87;      /* P RW US PS */
    if (f->mmio_base >> 30 == 3)
        pd3[(f->mmio_base >> 21) & 511] = (f->mmio_base & ~0x1fffffull) | 0x83;
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

    if (!ex || gpa >= f->ram_size)
        abort();
    n = paper_example_bytes(ex, f->ram + gpa, (size_t)(f->ram_size - gpa));
    return gpa + n;
}
#endif

#endif /* LC_TEST_FAKEVM_H */
