/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_mmu.c: runtime/mmu.c, segmentation, page walks in every
 * paging mode, access rights, accessed/dirty bits, fragment splitting,
 * MMIO / traced / ROM dispatch, hostile page tables and instruction fetch.
 *
 * The fake VM is the shared one (tests/common/fakevm.h): 4 MiB of RAM at
 * guest-physical 0 (page tables are built in its top MiB, data lives
 * below), two MMIO windows (one below 4 GiB, one above for PSE-36), an
 * optional traced page, an optional ROM page and an optional page whose
 * mapping is deliberately short. Every callback logs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cluster/cluster.h>

#include "../../runtime/rt.h"
#include "fakevm.h"
#include "harness.h"

/* ---- fake VM ------------------------------------------------------------ */

#define RAM_SIZE    (4u << 20)
#define PT_BASE     0x300000ull          /* page tables: top MiB */
#define MMIO_BASE   0xfee00000ull
#define HIMMIO_BASE 0x1200c00000ull      /* reachable only via PSE-36 */
#define MMIO_SIZE   0x1000u

/* The shared fake VMM (tests/common/fakevm.h), with this file's device:
 * MMIO bytes read as dev_byte(), and the call numbered mmio_answer_at
 * answers mmio_answer. Traced writes are not stored (traced_no_store):
 * the MMU must never store to traced RAM itself. */
static fvm T;
static lc_cpu_state S;
static lcr_vcpu V;
static lc_vm_ops OPS;
static uint64_t next_pt;            /* page-table allocator */
static lc_cb_result mmio_answer;
static unsigned mmio_answer_at;     /* 1-based call that gets mmio_answer */
static unsigned nmmio;
static lc_cb_result traced_answer;  /* what traced writes get */

/* A device byte at `gpa` reads as this. */
static uint8_t dev_byte(uint64_t gpa)
{
    return (uint8_t)(gpa ^ 0xa5);
}

static lc_cb_result mmu_device(fvm *f, fvm_access *a)
{
    (void)f;
    if (a->kind == 't')
        return traced_answer;       /* traced writes: logged only */
    if (a->kind != 'r' && a->kind != 'w')
        return LC_CB_OK;
    nmmio++;
    if (mmio_answer_at == nmmio)
        return mmio_answer;
    if (a->kind == 'r') {
        a->value = 0;
        for (unsigned i = 0; i < a->size; i++)
            a->value |= (uint64_t)dev_byte(a->addr + i) << (8 * i);
    }
    return LC_CB_OK;
}

static void setup(void)
{
    ck_assert_int_eq(fvm_init_layout(&T, NULL, RAM_SIZE, MMIO_BASE,
                                     MMIO_SIZE), 0);
    T.mmio2_base = HIMMIO_BASE;
    T.mmio2_size = MMIO_SIZE;
    T.traced_no_store = 1;
    T.device = mmu_device;
    next_pt = PT_BASE;
    mmio_answer = LC_CB_OK;
    mmio_answer_at = 0;
    nmmio = 0;
    traced_answer = LC_CB_OK;
    OPS = (lc_vm_ops){ FVM_OPS_DEVICES, .traced_write = fvm_traced };
    memset(&S, 0, sizeof(S));
    memset(&V, 0, sizeof(V));
    V.st = &S;
    V.ops = &OPS;
    V.opaque = &T;
}

static void teardown(void)
{
    fvm_fini(&T);
}

static void set_mode(lc_cpu_mode mode, unsigned cpl)
{
    V.mode = mode;
    V.cpl = (uint8_t)cpl;
    lcr_pwc_forget(&V);     /* a new run (lcr_begin() would do it) */
    V.stop = LC_STOP_NONE;
    V.fault_vector = 0;
    V.fault_addr = 0;
}

static uint64_t rd(uint64_t gpa, unsigned size)
{
    uint64_t v = 0;
    memcpy(&v, T.ram + gpa, size);
    return v;
}

/* The test edits guest memory from outside the run, as another vCPU or a
 * device would: like such a write, it ends what the run's page-walk cache
 * (section 11 of the paper) may assume, which the next run would not
 * have (the CPU's TLB need not see it either, SDM vol. 3 4.10.4). */
static void wr(uint64_t gpa, unsigned size, uint64_t v)
{
    memcpy(T.ram + gpa, &v, size);
    lcr_pwc_forget(&V);
}

/* ---- page-table builder ------------------------------------------------- */

enum { PM_NONE, PM_32, PM_PAE, PM_4L, PM_5L };

#define F_P   0x1ull
#define F_RW  0x2ull
#define F_US  0x4ull
#define F_A   0x20ull
#define F_D   0x40ull
#define F_PS  0x80ull
#define F_XD  (1ull << 63)
#define F_DIR (F_P | F_RW | F_US)

static int PM;

static uint64_t pt_alloc(void)
{
    uint64_t p = next_pt;

    next_pt += 0x1000;
    ck_assert_uint_le(next_pt, RAM_SIZE);
    memset(T.ram + p, 0, 0x1000);
    lcr_pwc_forget(&V);     /* memory edited from outside: see wr() */
    return p;
}

/* Enter a paging mode: CR0/CR4/EFER and a fresh root table. */
static void paging(int pm, uint64_t extra_cr4)
{
    PM = pm;
    S.cr0 = LC_CR0_PE | LC_CR0_PG;
    S.cr4 = extra_cr4;
    S.efer = 0;
    switch (pm) {
    case PM_NONE:
        S.cr0 = LC_CR0_PE;
        return;
    case PM_32:
        break;
    case PM_PAE:
        S.cr4 |= LC_CR4_PAE;
        break;
    case PM_5L:
        S.cr4 |= LC_CR4_LA57;
        /* fall through */
    case PM_4L:
        S.cr4 |= LC_CR4_PAE;
        S.efer = LC_EFER_LME | LC_EFER_LMA;
        break;
    }
    S.cr3 = pt_alloc();
}

static unsigned top_level(void)
{
    return PM == PM_32 ? 2 : PM == PM_PAE ? 3 : PM == PM_4L ? 4 : 5;
}

static unsigned esize(void)
{
    return PM == PM_32 ? 4 : 8;
}

static uint64_t index_of(uint64_t la, unsigned level)
{
    if (PM == PM_32)
        return (la >> (12 + 10 * (level - 1))) & 0x3ff;
    if (PM == PM_PAE && level == 3)
        return (la >> 30) & 3;
    return (la >> (12 + 9 * (level - 1))) & 0x1ff;
}

/* Map `la` to `gpa` with a leaf at `leaf_level` (1: 4 KiB, 2: 2/4 MiB,
 * 3: 1 GiB) carrying `leaf` flags; missing directories are created with
 * `dir` flags (PAE PDPTEs only with P). `ent[level]` gets the gpa of each
 * entry used. Returns the gpa of the leaf entry. */
static uint64_t map_at(uint64_t la, uint64_t gpa, unsigned leaf_level,
                       uint64_t leaf, uint64_t dir, uint64_t ent[6])
{
    uint64_t table = S.cr3 & (PM == PM_PAE ? 0xffffffe0ull : ~0xfffull);
    uint64_t dummy[6];

    if (!ent)
        ent = dummy;
    for (unsigned level = top_level(); level > leaf_level; level--) {
        uint64_t e = table + index_of(la, level) * esize();
        uint64_t v = rd(e, esize());

        ent[level] = e;
        if (!(v & F_P)) {
            v = pt_alloc() | (PM == PM_PAE && level == 3 ? F_P : dir);
            wr(e, esize(), v);
        }
        table = v & 0x000ffffffffff000ull;
    }
    ent[leaf_level] = table + index_of(la, leaf_level) * esize();
    if (leaf_level > 1)
        leaf |= F_PS;
    if (PM == PM_32 && leaf_level == 2)  /* PSE-36 */
        wr(ent[leaf_level], 4, (gpa & 0xffc00000ull) |
                                   ((gpa >> 32) & 0xff) << 13 | leaf);
    else
        wr(ent[leaf_level], esize(), gpa | leaf);
    return ent[leaf_level];
}

static uint64_t map4k(uint64_t la, uint64_t gpa, uint64_t leaf)
{
    return map_at(la, gpa, 1, leaf, F_DIR, NULL);
}

/* ---- assertion helpers -------------------------------------------------- */

#define expect_ok(r, line)                                                   \
    ck_assert_msg((r) == 0 && V.stop == LC_STOP_NONE,                        \
                  "line %d: expected success, got r=%d stop=%d vec=%u",      \
                  (line), (r), (int)V.stop, V.fault_vector)

#define expect_fault(r, vec, line)                                           \
    ck_assert_msg((r) == -1 && V.stop == LC_STOP_FAULT &&                    \
                      V.fault_vector == (vec),                               \
                  "line %d: expected fault %u, got r=%d stop=%d vec=%u",     \
                  (line), (unsigned)(vec), (r), (int)V.stop, V.fault_vector)

#define expect_stop(r, why, line)                                            \
    ck_assert_msg((r) == -1 && V.stop == (why),                              \
                  "line %d: expected stop %d, got r=%d stop=%d",             \
                  (line), (int)(why), (r), (int)V.stop)

/* ---- segmentation ------------------------------------------------------- */

static lc_segment seg(uint64_t base, uint32_t limit, uint8_t type,
                      uint8_t db)
{
    lc_segment s;

    memset(&s, 0, sizeof(s));
    s.base = base;
    s.limit = limit;
    s.type = type;
    s.s = 1;
    s.present = 1;
    s.db = db;
    return s;
}

#define R  LCR_ACC_READ
#define W  LCR_ACC_WRITE
#define X  LCR_ACC_FETCH
#define RW (LCR_ACC_READ | LCR_ACC_WRITE)

enum { SEG_NORMAL, SEG_UNUSABLE, SEG_NOTPRESENT, SEG_SYSTEM };

typedef struct seg_case {
    int         line;
    lc_cpu_mode mode;
    unsigned    sreg;
    uint64_t    base;
    uint32_t    limit;
    uint8_t     type, db, flavour;
    uint64_t    cr4;
    uint64_t    ea;
    unsigned    size, access;
    int         vec;        /* -1: success with `la`; else the vector */
    uint64_t    la;
} seg_case;

static const seg_case seg_cases[] = {
    /* real mode: base + ea, cached limit, no wrap at 64 KiB */
    { __LINE__, LC_MODE_REAL, LC_DS, 0x12340, 0xffff, 3, 0, 0, 0,
      0x10, 2, R, -1, 0x12350 },
    { __LINE__, LC_MODE_REAL, LC_DS, 0x12340, 0xffff, 3, 0, 0, 0,
      0xfffe, 2, W, -1, 0x2233e },
    { __LINE__, LC_MODE_REAL, LC_DS, 0x12340, 0xffff, 3, 0, 0, 0,
      0xffff, 2, R, 13, 0 },
    { __LINE__, LC_MODE_REAL, LC_SS, 0x12340, 0xffff, 3, 0, 0, 0,
      0xffff, 2, W, 12, 0 },
    { __LINE__, LC_MODE_REAL, LC_ES, 0xffff0, 0xffff, 3, 0, 0, 0,
      0xffff, 1, R, -1, 0x10ffef },               /* A20 on: no wrap */
    /* real mode: no type checks (a read-only cached type is ignored) */
    { __LINE__, LC_MODE_REAL, LC_DS, 0x1000, 0xffff, 1, 0, 0, 0,
      0x10, 1, W, -1, 0x1010 },
    /* big real mode */
    { __LINE__, LC_MODE_REAL, LC_DS, 0, 0xffffffff, 3, 0, 0, 0,
      0x200000, 4, R, -1, 0x200000 },
    { __LINE__, LC_MODE_REAL, LC_DS, 0xffff0000, 0xffffffff, 3, 0, 0, 0,
      0x20000, 4, R, -1, 0x10000 },               /* 32-bit truncation */
    /* vm86 */
    { __LINE__, LC_MODE_VM86, LC_ES, 0xb8000, 0xffff, 3, 0, 0, 0,
      0x100, 2, W, -1, 0xb8100 },
    { __LINE__, LC_MODE_VM86, LC_SS, 0xb8000, 0xffff, 3, 0, 0, 0,
      0xfffd, 4, R, 12, 0 },
    /* protected mode limits */
    { __LINE__, LC_MODE_PROT32, LC_DS, 0x1000, 0xfff, 3, 1, 0, 0,
      0xffc, 4, R, -1, 0x1ffc },
    { __LINE__, LC_MODE_PROT32, LC_DS, 0x1000, 0xfff, 3, 1, 0, 0,
      0xffd, 4, R, 13, 0 },
    { __LINE__, LC_MODE_PROT32, LC_SS, 0x1000, 0xfff, 3, 1, 0, 0,
      0x1000, 1, R, 12, 0 },
    { __LINE__, LC_MODE_PROT32, LC_DS, 0xfffff000, 0xffffffff, 3, 1, 0, 0,
      0x2000, 4, R, -1, 0x1000 },                 /* base+ea wraps 4G */
    { __LINE__, LC_MODE_PROT32, LC_DS, 0, 0xffffffff, 3, 1, 0, 0,
      0xfffffffe, 4, R, 13, 0 },                  /* offset wraps: stop */
    { __LINE__, LC_MODE_PROT32, LC_DS, 0, 0xffffffff, 3, 1, 0, 0,
      0xffffffffffffffffull, 2, R, 13, 0 },       /* hostile ea */
    { __LINE__, LC_MODE_REAL, LC_DS, 0, 0xffff, 3, 0, 0, 0,
      0xffffffffffffffffull, 2, R, 13, 0 },
    /* expand-down, 16-bit (B=0): valid (limit, 0xffff] */
    { __LINE__, LC_MODE_PROT16, LC_DS, 0x10000, 0x0fff, 7, 0, 0, 0,
      0x0fff, 1, R, 13, 0 },
    { __LINE__, LC_MODE_PROT16, LC_DS, 0x10000, 0x0fff, 7, 0, 0, 0,
      0x1000, 2, W, -1, 0x11000 },
    { __LINE__, LC_MODE_PROT16, LC_DS, 0x10000, 0x0fff, 7, 0, 0, 0,
      0xfffe, 2, R, -1, 0x1fffe },
    { __LINE__, LC_MODE_PROT16, LC_DS, 0x10000, 0x0fff, 7, 0, 0, 0,
      0xffff, 2, R, 13, 0 },
    { __LINE__, LC_MODE_PROT16, LC_SS, 0x10000, 0x0fff, 7, 0, 0, 0,
      0x0ffe, 4, W, 12, 0 },                      /* straddles limit */
    /* expand-down, 32-bit (B=1): valid (limit, 0xffffffff] */
    { __LINE__, LC_MODE_PROT32, LC_SS, 0, 0x0fff, 7, 1, 0, 0,
      0xfffffffc, 4, W, -1, 0xfffffffc },
    { __LINE__, LC_MODE_PROT32, LC_SS, 0, 0x0fff, 7, 1, 0, 0,
      0x10000, 4, W, -1, 0x10000 },
    { __LINE__, LC_MODE_PROT32, LC_SS, 0, 0x0fff, 5, 1, 0, 0,
      0x0fff, 1, R, 12, 0 },
    /* read-only data (type 1) */
    { __LINE__, LC_MODE_PROT32, LC_DS, 0, 0xffffffff, 1, 1, 0, 0,
      0x100, 4, R, -1, 0x100 },
    { __LINE__, LC_MODE_PROT32, LC_DS, 0, 0xffffffff, 1, 1, 0, 0,
      0x100, 4, W, 13, 0 },
    { __LINE__, LC_MODE_PROT32, LC_ES, 0, 0xffffffff, 1, 1, 0, 0,
      0x100, 4, RW, 13, 0 },
    /* code segments: execute-only (8), execute/read (0xa), conforming */
    { __LINE__, LC_MODE_PROT32, LC_CS, 0, 0xffffffff, 8, 1, 0, 0,
      0x100, 4, R, 13, 0 },
    { __LINE__, LC_MODE_PROT32, LC_CS, 0, 0xffffffff, 8, 1, 0, 0,
      0x100, 4, X, -1, 0x100 },
    { __LINE__, LC_MODE_PROT32, LC_CS, 0, 0xffffffff, 0xb, 1, 0, 0,
      0x100, 4, R, -1, 0x100 },
    { __LINE__, LC_MODE_PROT32, LC_DS, 0, 0xffffffff, 0xe, 1, 0, 0,
      0x100, 4, R, -1, 0x100 },                   /* DS = readable code */
    { __LINE__, LC_MODE_PROT32, LC_DS, 0, 0xffffffff, 0xb, 1, 0, 0,
      0x100, 4, W, 13, 0 },                       /* code never writable */
    { __LINE__, LC_MODE_PROT32, LC_CS, 0, 0xffffffff, 3, 1, 0, 0,
      0x100, 1, X, 13, 0 },                       /* fetch from data */
    { __LINE__, LC_MODE_PROT32, LC_CS, 0x1000, 0xfff, 0xb, 1, 0, 0,
      0xffe, 4, X, 13, 0 },
    /* unusable / not present / system */
    { __LINE__, LC_MODE_PROT32, LC_DS, 0, 0xffffffff, 3, 1, SEG_UNUSABLE,
      0, 0x100, 4, R, 13, 0 },
    { __LINE__, LC_MODE_PROT32, LC_SS, 0, 0xffffffff, 3, 1, SEG_UNUSABLE,
      0, 0x100, 4, W, 12, 0 },
    { __LINE__, LC_MODE_PROT32, LC_ES, 0, 0xffffffff, 3, 1, SEG_NOTPRESENT,
      0, 0x100, 4, W, 13, 0 },
    { __LINE__, LC_MODE_PROT32, LC_GS, 0, 0xffffffff, 3, 1, SEG_SYSTEM,
      0, 0x100, 4, R, 13, 0 },
    /* compatibility mode: protected-mode rules, 32-bit linear */
    { __LINE__, LC_MODE_COMPAT32, LC_FS, 0xfffff000, 0xffffffff, 3, 1, 0, 0,
      0x2000, 4, R, -1, 0x1000 },
    { __LINE__, LC_MODE_COMPAT32, LC_DS, 0, 0xfff, 3, 1, 0, 0,
      0x1000, 4, R, 13, 0 },
    { __LINE__, LC_MODE_COMPAT16, LC_DS, 0, 0xffffffff, 1, 0, 0, 0,
      0x10, 2, W, 13, 0 },
    { __LINE__, LC_MODE_COMPAT32, LC_SS, 0, 0xffffffff, 3, 1, SEG_UNUSABLE,
      0, 0x10, 2, W, 12, 0 },
    /* 64-bit: only FS/GS bases, no limits, no types, canonical */
    { __LINE__, LC_MODE_LONG64, LC_DS, 0x5000, 0, 1, 0, 0, 0,
      0x1000, 8, W, -1, 0x1000 },
    { __LINE__, LC_MODE_LONG64, LC_SS, 0x5000, 0, 3, 0, SEG_UNUSABLE, 0,
      0x1000, 8, W, -1, 0x1000 },
    { __LINE__, LC_MODE_LONG64, LC_CS, 0x5000, 0, 8, 0, 0, 0,
      0x1000, 8, W, -1, 0x1000 },
    { __LINE__, LC_MODE_LONG64, LC_FS, 0x700000000000ull, 0, 3, 0, 0, 0,
      0x10, 4, R, -1, 0x700000000010ull },
    { __LINE__, LC_MODE_LONG64, LC_GS, 0xffff800000000000ull, 0, 3, 0,
      SEG_UNUSABLE, 0, 0x18, 8, R, -1, 0xffff800000000018ull },
    { __LINE__, LC_MODE_LONG64, LC_DS, 0, 0, 3, 0, 0, 0,
      0x0000800000000000ull, 1, R, 13, 0 },
    { __LINE__, LC_MODE_LONG64, LC_SS, 0, 0, 3, 0, 0, 0,
      0x0000800000000000ull, 1, R, 12, 0 },
    { __LINE__, LC_MODE_LONG64, LC_DS, 0, 0, 3, 0, 0, 0,
      0x00007ffffffffffcull, 4, R, -1, 0x00007ffffffffffcull },
    { __LINE__, LC_MODE_LONG64, LC_DS, 0, 0, 3, 0, 0, 0,
      0x00007ffffffffffeull, 4, R, 13, 0 },       /* last byte bad */
    { __LINE__, LC_MODE_LONG64, LC_SS, 0, 0, 3, 0, 0, 0,
      0xffff7ffffffffffcull, 8, W, 12, 0 },
    { __LINE__, LC_MODE_LONG64, LC_GS, 0x00007ffffffff000ull, 0, 3, 0, 0, 0,
      0x1000, 1, R, 13, 0 },                      /* base + ea */
    { __LINE__, LC_MODE_LONG64, LC_DS, 0, 0, 3, 0, 0, 0,
      0xfffffffffffffffeull, 4, R, 13, 0 },       /* wraps 2^64 */
    { __LINE__, LC_MODE_LONG64, LC_DS, 0, 0, 3, 0, 0, LC_CR4_LA57,
      0x00ff000000000000ull, 8, R, -1, 0x00ff000000000000ull },
    { __LINE__, LC_MODE_LONG64, LC_DS, 0, 0, 3, 0, 0, LC_CR4_LA57,
      0x0100000000000000ull, 8, R, 13, 0 },
};

START_TEST(segmentation_table)
{
    const seg_case *c = &seg_cases[_i];
    uint64_t la = 0xdead;
    int r;

    S.cr4 = c->cr4;
    S.seg[c->sreg] = seg(c->base, c->limit, c->type, c->db);
    if (c->flavour == SEG_UNUSABLE)
        S.seg[c->sreg].unusable = 1;
    if (c->flavour == SEG_NOTPRESENT)
        S.seg[c->sreg].present = 0;
    if (c->flavour == SEG_SYSTEM)
        S.seg[c->sreg].s = 0;
    set_mode(c->mode, 0);
    r = lcr_linear(&V, c->sreg, c->ea, c->size, c->access, &la);
    if (c->vec < 0) {
        expect_ok(r, c->line);
        ck_assert_msg(la == c->la, "line %d: la %#llx, want %#llx", c->line,
                      (unsigned long long)la, (unsigned long long)c->la);
    } else {
        expect_fault(r, c->vec, c->line);
    }
}
END_TEST

START_TEST(segmentation_bad_arguments)
{
    uint64_t la;

    set_mode(LC_MODE_LONG64, 0);
    expect_stop(lcr_linear(&V, 6, 0, 1, R, &la), LC_STOP_TERMINATOR,
                __LINE__);
    set_mode(LC_MODE_LONG64, 0);
    expect_stop(lcr_linear(&V, LC_DS, 0, 0, R, &la), LC_STOP_TERMINATOR,
                __LINE__);
    set_mode((lc_cpu_mode)LC_MODE_COUNT_, 0);
    expect_stop(lcr_linear(&V, LC_DS, 0, 1, R, &la), LC_STOP_TERMINATOR,
                __LINE__);
}
END_TEST

/* ---- translation basics ------------------------------------------------- */

/* Translate and expect one RAM fragment at `gpa`. */
static void expect_ram(uint64_t la, unsigned len, unsigned access,
                       uint64_t gpa, int line)
{
    lcr_xlat x;
    int r;

    V.stop = LC_STOP_NONE;
    r = lcr_translate(&V, la, len, access, &x);
    expect_ok(r, line);
    ck_assert_msg(x.nfrag == 1 && x.frag[0].kind == LC_GPA_RAM &&
                      x.frag[0].gpa == gpa && x.frag[0].len == len &&
                      x.frag[0].hva == T.ram + gpa,
                  "line %d: nfrag %u kind %u gpa %#llx len %u, want %#llx",
                  line, x.nfrag, x.frag[0].kind,
                  (unsigned long long)x.frag[0].gpa, x.frag[0].len,
                  (unsigned long long)gpa);
}

static void expect_pf(uint64_t la, unsigned len, unsigned access,
                      uint64_t fault_la, int line)
{
    lcr_xlat x;
    int r;

    V.stop = LC_STOP_NONE;
    r = lcr_translate(&V, la, len, access, &x);
    expect_fault(r, 14, line);
    ck_assert_msg(V.fault_addr == fault_la,
                  "line %d: fault_addr %#llx, want %#llx", line,
                  (unsigned long long)V.fault_addr,
                  (unsigned long long)fault_la);
}

static void expect_term(uint64_t la, unsigned len, unsigned access,
                        int line)
{
    lcr_xlat x;
    int r;

    V.stop = LC_STOP_NONE;
    r = lcr_translate(&V, la, len, access, &x);
    expect_stop(r, LC_STOP_TERMINATOR, line);
}

START_TEST(no_paging_identity)
{
    lcr_xlat x;

    paging(PM_NONE, 0);
    set_mode(LC_MODE_PROT32, 0);
    expect_ram(0x1234, 4, R, 0x1234, __LINE__);
    expect_ram(0x100001234ull, 4, W, 0x1234, __LINE__); /* 32-bit la */
    expect_term(0x800000, 4, R, __LINE__);              /* unmapped */
    ck_assert_int_eq(lcr_translate(&V, MMIO_BASE + 0x10, 4, R, &x), 0);
    ck_assert_uint_eq(x.nfrag, 1);
    ck_assert_uint_eq(x.frag[0].kind, LC_GPA_MMIO);
    ck_assert_ptr_null(x.frag[0].hva);
    ck_assert_uint_eq(x.frag[0].gpa, MMIO_BASE + 0x10);
    ck_assert_uint_eq(x.la, MMIO_BASE + 0x10);
    ck_assert_uint_eq(x.len, 4);
    ck_assert_uint_eq(x.access, R);
    /* bad arguments */
    set_mode(LC_MODE_PROT32, 0);
    expect_term(0x1000, 0, R, __LINE__);
    expect_term(0x1000, 16, R, __LINE__);
    expect_term(0x1000, 4, 0, __LINE__);
}
END_TEST

START_TEST(paging32_4k_4m_pse36)
{
    uint64_t pde;

    paging(PM_32, LC_CR4_PSE);
    set_mode(LC_MODE_PROT32, 0);
    map4k(0x40001000, 0x30000, F_P | F_RW);
    expect_ram(0x40001234, 4, R, 0x30234, __LINE__);
    expect_pf(0x40002000, 1, R, 0x40002000, __LINE__);  /* no PTE */

    /* 4 MiB page at gpa 0 */
    pde = map_at(0x80000000, 0, 2, F_P | F_RW, F_DIR, NULL);
    expect_ram(0x80012345, 4, W, 0x12345, __LINE__);
    expect_ram(0x803ffff0, 8, R, 0x3ffff0, __LINE__);

    /* CR4.PSE = 0: the same PDE points to a page table at gpa 0 */
    S.cr4 = 0;
    wr(0x12 * 4, 4, 0x35000 | F_P);           /* PTE index 0x12 */
    expect_ram(0x80012345, 1, R, 0x35345, __LINE__);
    S.cr4 = LC_CR4_PSE;

    /* PSE-36: PDE bits 20:13 are address bits 39:32 */
    map_at(0xc0000000, HIMMIO_BASE, 2, F_P | F_RW, F_DIR, NULL);
    {
        lcr_xlat x;
        set_mode(LC_MODE_PROT32, 0);
        ck_assert_int_eq(lcr_translate(&V, 0xc0000010, 4, R, &x), 0);
        ck_assert_uint_eq(x.frag[0].kind, LC_GPA_MMIO);
        ck_assert_uint_eq(x.frag[0].gpa, HIMMIO_BASE + 0x10);
    }
    /* bit 21 of a 4 MiB PDE is reserved */
    wr(pde, 4, rd(pde, 4) | (1u << 21));
    expect_pf(0x80000000, 1, R, 0x80000000, __LINE__);
}
END_TEST

START_TEST(paging_pae_4k_2m)
{
    uint64_t ent[6], pte;

    paging(PM_PAE, 0);
    set_mode(LC_MODE_PROT32, 0);
    pte = map_at(0xc0201000, 0x31000, 1, F_P | F_RW, F_DIR, ent);
    expect_ram(0xc0201ffc, 4, R, 0x31ffc, __LINE__);
    /* CR3 bits 4:0 (PWT, PCD, ignored) are not address bits */
    S.cr3 |= 0x1f;
    expect_ram(0xc0201ffc, 4, R, 0x31ffc, __LINE__);
    map_at(0x40000000, 0x200000, 2, F_P | F_RW, F_DIR, NULL);
    expect_ram(0x40001234, 2, R, 0x201234, __LINE__);
    expect_ram(0x401ffff8, 8, W, 0x3ffff8, __LINE__);
    /* not-present PDPTE -> #PF */
    expect_pf(0x80000000, 1, R, 0x80000000, __LINE__);
    /* bits 62:52 reserved in PAE entries */
    wr(pte, 8, rd(pte, 8) | (1ull << 52));
    expect_pf(0xc0201000, 1, R, 0xc0201000, __LINE__);
    wr(pte, 8, rd(pte, 8) & ~(1ull << 52));
    expect_ram(0xc0201000, 1, R, 0x31000, __LINE__);
    /* 2 MiB page with bit 13 set: reserved */
    map_at(0x40200000, 0x200000 | (1u << 13), 2, F_P, F_DIR, NULL);
    expect_pf(0x40200000, 1, R, 0x40200000, __LINE__);
    /* a PDPTE with reserved bits could not have been loaded by MOV CR3:
     * stop rather than guess what the PDPTE registers hold */
    wr(ent[3], 8, rd(ent[3], 8) | F_RW);
    expect_term(0xc0201000, 1, R, __LINE__);
}
END_TEST

START_TEST(paging_4level_4k_2m_1g)
{
    uint64_t ent[6];

    paging(PM_4L, 0);
    set_mode(LC_MODE_LONG64, 0);
    map4k(0x00007f0000001000ull, 0x32000, F_P | F_RW);
    expect_ram(0x00007f0000001008ull, 8, R, 0x32008, __LINE__);
    /* PAT bit (7) in a PTE is not PS and not reserved */
    map4k(0x00007f0000002000ull, 0x33000, F_P | F_PS);
    expect_ram(0x00007f0000002000ull, 1, R, 0x33000, __LINE__);
    /* 2 MiB */
    map_at(0xffff800000200000ull, 0x200000, 2, F_P | F_RW, F_DIR, NULL);
    expect_ram(0xffff8000003fff00ull, 8, R, 0x3fff00, __LINE__);
    /* 1 GiB at gpa 0 */
    map_at(0x0000008040000000ull, 0, 3, F_P | F_RW, F_DIR, ent);
    expect_ram(0x0000008040001234ull, 4, W, 0x1234, __LINE__);
    /* 1 GiB with bit 13 set: reserved */
    wr(ent[3], 8, rd(ent[3], 8) | (1u << 13));
    expect_pf(0x0000008040001234ull, 1, R, 0x0000008040001234ull, __LINE__);
    /* 2 MiB with bit 20 set: reserved */
    map_at(0x0000000000600000ull, 0x200000 | (1u << 20), 2, F_P, F_DIR,
           NULL);
    expect_pf(0x0000000000600000ull, 1, R, 0x600000, __LINE__);
    /* PS in a PML4E: reserved */
    map4k(0x0000010000000000ull, 0x34000, F_P);
    {
        uint64_t e = S.cr3 + ((0x0000010000000000ull >> 39) & 0x1ff) * 8;
        wr(e, 8, rd(e, 8) | F_PS);
    }
    expect_pf(0x0000010000000000ull, 1, R, 0x0000010000000000ull, __LINE__);
    /* CR3 bits 63:52 (PCID no-flush, LAM) are not address bits */
    S.cr3 |= 1ull << 63 | 1ull << 62 | 0xfff;
    expect_ram(0x00007f0000001008ull, 8, R, 0x32008, __LINE__);
    /* non-canonical linear address handed to translate: #GP, no walk */
    {
        lcr_xlat x;
        int r = lcr_translate(&V, 0x0000800000000000ull, 1, R, &x);
        expect_fault(r, 13, __LINE__);
    }
}
END_TEST

START_TEST(paging_5level)
{
    paging(PM_5L, 0);
    set_mode(LC_MODE_LONG64, 0);
    map4k(0x00ff000000001000ull, 0x33000, F_P | F_RW);
    map4k(0x00fe000000001000ull, 0x34000, F_P | F_RW);  /* PML5 index */
    map4k(0xff00000000001000ull, 0x35000, F_P | F_RW);
    expect_ram(0x00ff000000001010ull, 4, R, 0x33010, __LINE__);
    expect_ram(0x00fe000000001010ull, 4, R, 0x34010, __LINE__);
    expect_ram(0xff00000000001010ull, 4, R, 0x35010, __LINE__);
    expect_pf(0x00fd000000001000ull, 1, R, 0x00fd000000001000ull, __LINE__);
}
END_TEST

/* ---- access rights ------------------------------------------------------ */

typedef struct right_case {
    int      line;
    int      pm;
    uint64_t leaf, dir;
    unsigned cpl;
    uint64_t cr0, cr4, rflags, efer;
    unsigned access;
    int      expect;     /* 0 ok, 14 #PF, -2 terminator */
} right_case;

#define WP   LC_CR0_WP
#define SMEP LC_CR4_SMEP
#define SMAP LC_CR4_SMAP
#define AC   LC_RFLAGS_AC
#define NXE  LC_EFER_NXE
#define PKE  (1ull << 22)
#define PKS  (1ull << 24)
#define U    (F_P | F_RW | F_US)   /* user, writable */
#define K    (F_P | F_RW)          /* supervisor, writable */

static const right_case right_cases[] = {
    /* U/S */
    { __LINE__, PM_4L, U, F_DIR, 3, 0, 0, 0, 0, R, 0 },
    { __LINE__, PM_4L, K, F_DIR, 3, 0, 0, 0, 0, R, 14 },
    { __LINE__, PM_4L, U, F_P | F_RW, 3, 0, 0, 0, 0, R, 14 },
    { __LINE__, PM_4L, K, F_DIR, 0, 0, 0, 0, 0, R, 0 },
    { __LINE__, PM_32, K, F_DIR, 3, 0, 0, 0, 0, R, 14 },
    { __LINE__, PM_PAE, U, F_P | F_US, 3, 0, 0, 0, 0, R, 0 },
    /* R/W for user: always enforced */
    { __LINE__, PM_4L, F_P | F_US, F_DIR, 3, 0, 0, 0, 0, W, 14 },
    { __LINE__, PM_4L, U, F_P | F_US, 3, 0, 0, 0, 0, W, 14 },
    { __LINE__, PM_4L, U, F_DIR, 3, 0, 0, 0, 0, RW, 0 },
    { __LINE__, PM_32, F_P | F_US, F_DIR, 3, 0, 0, 0, 0, RW, 14 },
    /* R/W for supervisor: only with CR0.WP */
    { __LINE__, PM_4L, F_P, F_DIR, 0, 0, 0, 0, 0, W, 0 },
    { __LINE__, PM_4L, F_P, F_DIR, 0, WP, 0, 0, 0, W, 14 },
    { __LINE__, PM_4L, K, F_P, 0, WP, 0, 0, 0, W, 14 },
    { __LINE__, PM_4L, K, F_P, 0, 0, 0, 0, 0, W, 0 },
    { __LINE__, PM_32, F_P, F_DIR, 0, WP, 0, 0, 0, W, 14 },
    { __LINE__, PM_PAE, F_P, F_DIR, 0, 0, 0, 0, 0, RW, 0 },
    { __LINE__, PM_4L, F_P | F_US, F_DIR, 0, WP, 0, 0, 0, W, 14 },
    /* NX */
    { __LINE__, PM_4L, K | F_XD, F_DIR, 0, 0, 0, 0, NXE, X, 14 },
    { __LINE__, PM_4L, K | F_XD, F_DIR, 0, 0, 0, 0, NXE, R, 0 },
    { __LINE__, PM_4L, K, F_DIR | F_XD, 0, 0, 0, 0, NXE, X, 14 },
    { __LINE__, PM_4L, K, F_DIR, 0, 0, 0, 0, NXE, X, 0 },
    { __LINE__, PM_PAE, U | F_XD, F_DIR, 3, 0, 0, 0, NXE, X, 14 },
    { __LINE__, PM_PAE, U | F_XD, F_DIR, 3, 0, 0, 0, NXE, R, 0 },
    /* XD without EFER.NXE is a reserved bit, for any access */
    { __LINE__, PM_4L, K | F_XD, F_DIR, 0, 0, 0, 0, 0, R, 14 },
    { __LINE__, PM_PAE, K, F_DIR | F_XD, 0, 0, 0, 0, 0, R, 14 },
    /* SMEP */
    { __LINE__, PM_4L, U, F_DIR, 0, 0, SMEP, 0, 0, X, 14 },
    { __LINE__, PM_4L, U, F_DIR, 0, 0, 0, 0, 0, X, 0 },
    { __LINE__, PM_4L, K, F_DIR, 0, 0, SMEP, 0, 0, X, 0 },
    { __LINE__, PM_4L, U, F_DIR, 3, 0, SMEP, 0, 0, X, 0 },
    { __LINE__, PM_4L, U, F_DIR, 0, 0, SMEP, 0, 0, R, 0 },
    { __LINE__, PM_4L, U, F_P | F_RW, 0, 0, SMEP, 0, 0, X, 0 }, /* dir K */
    { __LINE__, PM_32, U, F_DIR, 0, 0, SMEP, 0, 0, X, 14 },
    /* SMAP */
    { __LINE__, PM_4L, U, F_DIR, 0, 0, SMAP, 0, 0, R, 14 },
    { __LINE__, PM_4L, U, F_DIR, 0, 0, SMAP, AC, 0, R, 0 },
    { __LINE__, PM_4L, U, F_DIR, 0, 0, SMAP, 0, 0, W, 14 },
    { __LINE__, PM_4L, U, F_DIR, 0, 0, SMAP, AC, 0, W, 0 },
    { __LINE__, PM_4L, U, F_DIR, 0, 0, SMAP, 0, 0, X, 0 },
    { __LINE__, PM_4L, U, F_DIR, 3, 0, SMAP, 0, 0, R, 0 },
    { __LINE__, PM_4L, K, F_DIR, 0, 0, SMAP, 0, 0, R, 0 },
    { __LINE__, PM_PAE, U, F_DIR, 0, 0, SMAP, 0, 0, R, 14 },
    /* SMAP + WP: AC lifts SMAP but not WP */
    { __LINE__, PM_4L, F_P | F_US, F_DIR, 0, WP, SMAP, AC, 0, W, 14 },
    /* protection keys: PKRU is not in the state, so stop */
    { __LINE__, PM_4L, U, F_DIR, 3, 0, PKE, 0, 0, R, -2 },
    { __LINE__, PM_4L, U, F_DIR, 3, 0, PKE, 0, 0, X, 0 },
    { __LINE__, PM_4L, K, F_DIR, 0, 0, PKE, 0, 0, R, 0 },
    { __LINE__, PM_4L, K, F_DIR, 0, 0, PKS, 0, 0, W, -2 },
    { __LINE__, PM_PAE, U, F_DIR, 3, 0, PKE, 0, 0, R, 0 },  /* no PK */
};

START_TEST(access_rights_table)
{
    const right_case *c = &right_cases[_i];
    uint64_t la = c->pm == PM_4L ? 0x00007f0000005000ull : 0x40005000ull;
    lcr_xlat x;
    int r;

    paging(c->pm, c->cr4);
    S.cr0 |= c->cr0;
    S.efer |= c->efer;
    S.rflags = 0x2 | c->rflags;
    map_at(la, 0x36000, 1, c->leaf, c->dir, NULL);
    set_mode(c->pm == PM_4L ? LC_MODE_LONG64 : LC_MODE_PROT32, c->cpl);
    r = lcr_translate(&V, la + 0x10, 4, c->access, &x);
    if (c->expect == 0) {
        expect_ok(r, c->line);
        ck_assert_msg(x.frag[0].gpa == 0x36010, "line %d", c->line);
    } else if (c->expect == 14) {
        expect_fault(r, 14, c->line);
        ck_assert_msg(V.fault_addr == la + 0x10, "line %d", c->line);
    } else {
        expect_stop(r, LC_STOP_TERMINATOR, c->line);
    }
}
END_TEST

/* ---- accessed and dirty bits -------------------------------------------- */

static uint64_t ent_val(uint64_t gpa)
{
    return rd(gpa, esize());
}

START_TEST(ad_bits_4level_exact)
{
    uint64_t la = 0x00007f0000007000ull, ent[6], before[6];
    uint8_t snap[0x4000];
    lcr_xlat x;
    int r;

    paging(PM_4L, 0);
    S.cr0 |= WP;
    /* avail bits 9..11 and 52..58 set to prove no byte is rewritten */
    map_at(la, 0x37000, 1, F_P | F_US | 0xe00 | (0x7full << 52),
           F_DIR | 0xe00, ent);
    for (unsigned l = 1; l <= 4; l++)
        before[l] = ent_val(ent[l]);

    /* a faulting access (user write to a read-only page) sets nothing */
    memcpy(snap, T.ram + PT_BASE, sizeof(snap));
    set_mode(LC_MODE_LONG64, 3);
    r = lcr_translate(&V, la, 8, W, &x);
    expect_fault(r, 14, __LINE__);
    ck_assert_int_eq(memcmp(snap, T.ram + PT_BASE, sizeof(snap)), 0);
    ck_assert_uint_eq(T.nmap_write, 0);

    /* a read sets A at every level, D nowhere */
    set_mode(LC_MODE_LONG64, 3);
    expect_ram(la, 8, R, 0x37000, __LINE__);
    for (unsigned l = 1; l <= 4; l++)
        ck_assert_msg(ent_val(ent[l]) == (before[l] | F_A),
                      "level %u: %#llx", l,
                      (unsigned long long)ent_val(ent[l]));

    /* a supervisor write (WP=0) sets D in the leaf only */
    S.cr0 &= ~WP;
    set_mode(LC_MODE_LONG64, 0);
    expect_ram(la, 8, W, 0x37000, __LINE__);
    ck_assert_uint_eq(ent_val(ent[1]), before[1] | F_A | F_D);
    for (unsigned l = 2; l <= 4; l++)
        ck_assert_uint_eq(ent_val(ent[l]), before[l] | F_A);
}
END_TEST

/* Another vCPU changes an entry between this walk and its A/D update
 * (a reclaim clears P before its TLB shootdown): the update, a
 * compare-and-exchange against what the walk read, finds it changed,
 * sets nothing in it and stops (the CPU walks again). Here the VMM's
 * gpa_map() answer for the update is where the change happens. */
static uint64_t race_gpa;
static unsigned race_clear;                 /* bits to clear, once */

static void race_gpa_map(void *o, uint64_t gpa, int w, lc_gpa_map *m)
{
    fvm_gpa_map(o, gpa, w, m);
    if (w && gpa == race_gpa && race_clear) {
        uint64_t e = rd(gpa, 8) & ~(uint64_t)race_clear;

        memcpy(T.ram + gpa, &e, 8);         /* not wr(): mid-walk */
        race_clear = 0;
    }
}

START_TEST(ad_update_sees_entry_changed)
{
    uint64_t la = 0x00007f0000009000ull, ent[6];
    lcr_xlat x;
    int r;

    paging(PM_4L, 0);
    map_at(la, 0x38000, 1, F_P | F_RW, F_DIR, ent);
    OPS.gpa_map = race_gpa_map;
    /* the leaf loses P between the walk and the update: nothing set in
     * it, a terminator (the higher levels' A bits stand, as on the CPU) */
    race_gpa = ent[1];
    race_clear = F_P;
    set_mode(LC_MODE_LONG64, 0);
    r = lcr_translate(&V, la, 8, W, &x);
    expect_stop(r, LC_STOP_TERMINATOR, __LINE__);
    ck_assert_uint_eq(ent_val(ent[1]) & (F_P | F_A | F_D), 0);
    /* another vCPU's own A update in between is no change: D and A set */
    wr(ent[1], 8, ent_val(ent[1]) | F_P);
    race_gpa = ent[1];
    race_clear = 0;
    set_mode(LC_MODE_LONG64, 0);
    {
        uint64_t e = ent_val(ent[1]) | F_A;   /* as if set meanwhile */
        memcpy(T.ram + ent[1], &e, 8);
    }
    expect_ram(la, 8, W, 0x38000, __LINE__);
    ck_assert_uint_eq(ent_val(ent[1]) & (F_A | F_D), F_A | F_D);
    OPS.gpa_map = fvm_gpa_map;
}
END_TEST

/* CR4.LASS: every access is left to the CPU (its #GP/#SS checks come
 * before paging and are not made here); nothing is set. */
START_TEST(lass_left_to_cpu)
{
    uint64_t la = 0x00007f000000a000ull, ent[6];
    lcr_xlat x;

    paging(PM_4L, 0);
    map_at(la, 0x39000, 1, F_P | F_RW | F_US, F_DIR, ent);
    S.cr4 |= LC_CR4_LASS;
    set_mode(LC_MODE_LONG64, 3);
    expect_stop(lcr_translate(&V, la, 8, R, &x), LC_STOP_TERMINATOR,
                __LINE__);
    ck_assert_uint_eq(ent_val(ent[1]) & F_A, 0);
    S.cr4 &= ~LC_CR4_LASS;
    set_mode(LC_MODE_LONG64, 3);
    expect_ram(la, 8, R, 0x39000, __LINE__);
}
END_TEST

START_TEST(ad_bits_large_and_legacy)
{
    uint64_t ent[6], before[6];

    /* 2 MiB leaf: D lands in the PDE */
    paging(PM_4L, 0);
    set_mode(LC_MODE_LONG64, 0);
    map_at(0x40000000, 0x200000, 2, F_P | F_RW, F_DIR, ent);
    expect_ram(0x40000010, 4, RW, 0x200010, __LINE__);
    ck_assert_uint_eq(ent_val(ent[2]) & (F_A | F_D), F_A | F_D);
    ck_assert_uint_eq(ent_val(ent[3]) & (F_A | F_D), F_A);
    ck_assert_uint_eq(ent_val(ent[4]) & (F_A | F_D), F_A);

    /* 32-bit: A in PDE and PTE, D in the PTE on a write */
    memset(T.ram + PT_BASE, 0, RAM_SIZE - PT_BASE);
    next_pt = PT_BASE;
    paging(PM_32, 0);
    set_mode(LC_MODE_PROT32, 0);
    map_at(0x40001000, 0x30000, 1, F_P | F_RW, F_DIR, ent);
    expect_ram(0x40001000, 4, R, 0x30000, __LINE__);
    ck_assert_uint_eq(rd(ent[2], 4) & (F_A | F_D), F_A);
    ck_assert_uint_eq(rd(ent[1], 4) & (F_A | F_D), F_A);
    expect_ram(0x40001000, 4, W, 0x30000, __LINE__);
    ck_assert_uint_eq(rd(ent[2], 4) & (F_A | F_D), F_A);
    ck_assert_uint_eq(rd(ent[1], 4) & (F_A | F_D), F_A | F_D);

    /* PAE: PDPTE has no A bit and is never written */
    memset(T.ram + PT_BASE, 0, RAM_SIZE - PT_BASE);
    next_pt = PT_BASE;
    paging(PM_PAE, 0);
    set_mode(LC_MODE_PROT32, 0);
    map_at(0x40001000, 0x30000, 1, F_P | F_RW, F_DIR, ent);
    before[3] = ent_val(ent[3]);
    expect_ram(0x40001000, 4, W, 0x30000, __LINE__);
    ck_assert_uint_eq(ent_val(ent[3]), before[3]);
    ck_assert_uint_eq(ent_val(ent[2]) & (F_A | F_D), F_A);
    ck_assert_uint_eq(ent_val(ent[1]) & (F_A | F_D), F_A | F_D);
}
END_TEST

START_TEST(page_cross_second_not_present)
{
    uint64_t la = 0x00007f0000010000ull;
    uint8_t snap[0x4000], buf[8];
    lcr_xlat x;
    int r;

    paging(PM_4L, 0);
    set_mode(LC_MODE_LONG64, 0);
    map4k(la, 0x40000, F_P | F_RW);
    /* make sure the second page's PT exists but its PTE is not present */
    map4k(la + 0x2000, 0x42000, F_P | F_RW);
    memcpy(snap, T.ram + PT_BASE, sizeof(snap));
    r = lcr_translate(&V, la + 0xffc, 8, R, &x);
    expect_fault(r, 14, __LINE__);
    ck_assert_uint_eq(V.fault_addr, la + 0x1000);
    ck_assert_int_eq(memcmp(snap, T.ram + PT_BASE, sizeof(snap)), 0);

    /* second page present but supervisor-only at CPL 3: same story */
    map4k(la, 0x40000, U);
    map4k(la + 0x1000, 0x50000, K);
    memcpy(snap, T.ram + PT_BASE, sizeof(snap));
    set_mode(LC_MODE_LONG64, 3);
    r = lcr_translate(&V, la + 0xffc, 8, R, &x);
    expect_fault(r, 14, __LINE__);
    ck_assert_uint_eq(V.fault_addr, la + 0x1000);
    ck_assert_int_eq(memcmp(snap, T.ram + PT_BASE, sizeof(snap)), 0);

    /* both present: two fragments, data assembled in order */
    map4k(la + 0x1000, 0x50000, U);
    wr(0x40ffc, 4, 0x44332211);
    wr(0x50000, 4, 0x88776655);
    set_mode(LC_MODE_LONG64, 3);
    r = lcr_translate(&V, la + 0xffc, 8, R, &x);
    expect_ok(r, __LINE__);
    ck_assert_uint_eq(x.nfrag, 2);
    ck_assert_uint_eq(x.frag[0].gpa, 0x40ffc);
    ck_assert_uint_eq(x.frag[0].len, 4);
    ck_assert_uint_eq(x.frag[1].gpa, 0x50000);
    ck_assert_uint_eq(x.frag[1].len, 4);
    ck_assert_int_eq(lcr_read(&V, &x, buf), 0);
    {
        uint64_t v;
        memcpy(&v, buf, 8);
        ck_assert_uint_eq(v, 0x8877665544332211ull);
    }
}
END_TEST

START_TEST(linear_wrap_32bit)
{
    lcr_xlat x;

    paging(PM_32, 0);
    set_mode(LC_MODE_PROT32, 0);
    map4k(0xfffff000, 0x34000, F_P | F_RW);
    map4k(0x00000000, 0x35000, F_P | F_RW);
    ck_assert_int_eq(lcr_translate(&V, 0xfffffffe, 4, W, &x), 0);
    ck_assert_uint_eq(x.nfrag, 2);
    ck_assert_uint_eq(x.frag[0].gpa, 0x34ffe);
    ck_assert_uint_eq(x.frag[0].len, 2);
    ck_assert_uint_eq(x.frag[1].gpa, 0x35000);
    ck_assert_uint_eq(x.frag[1].len, 2);

    /* compatibility mode: 32-bit linear addresses, no crossing 4 GiB */
    paging(PM_4L, 0);
    set_mode(LC_MODE_COMPAT32, 0);
    map4k(0xfffff000, 0x34000, F_P | F_RW);
    map4k(0x100000000ull, 0x35000, F_P | F_RW);
    expect_ram(0xfffffff8, 8, R, 0x34ff8, __LINE__);
    expect_term(0xfffffffe, 4, R, __LINE__);

    /* physical addresses never exceed 52 bits (a PG=0, LMA=1 state) */
    S.cr0 = LC_CR0_PE;
    set_mode(LC_MODE_LONG64, 0);
    expect_term(0xffff800000000000ull, 1, R, __LINE__);
}
END_TEST

/* ---- hostile page tables ------------------------------------------------ */

START_TEST(table_outside_ram_or_in_mmio)
{
    uint64_t la = 0x00007f0000020000ull, ent[6], pml4e;
    lcr_xlat x;
    int r;

    paging(PM_4L, 0);
    set_mode(LC_MODE_LONG64, 0);
    map_at(la, 0x40000, 1, F_P | F_RW, F_DIR, ent);
    pml4e = ent_val(ent[4]);

    /* the PDE points to a page table in unmapped space */
    wr(ent[2], 8, 0x10000000ull | F_DIR);
    expect_term(la, 4, R, __LINE__);
    /* ... at the top of the physical space */
    wr(ent[2], 8, 0x000ffffffffff000ull | F_DIR);
    expect_term(la, 4, R, __LINE__);
    /* ... in MMIO: never read through the device */
    wr(ent[2], 8, MMIO_BASE | F_DIR);
    expect_term(la, 4, R, __LINE__);
    ck_assert_uint_eq(nmmio, 0);
    /* no A bit was set anywhere on the way */
    ck_assert_uint_eq(ent_val(ent[4]), pml4e);

    /* a mapping shorter than the entry: never read past span */
    wr(ent[2], 8, 0x60000ull | F_DIR);
    T.short_gfn = 0x60;
    expect_term(la, 4, R, __LINE__);
    T.short_gfn = FVM_NONE;

    /* A bit needed in a traced or ROM page table: stop, never store */
    map_at(la, 0x40000, 1, F_P | F_RW, F_DIR, ent);
    T.traced_gfn = ent[1] >> 12;
    expect_term(la, 4, R, __LINE__);
    ck_assert_uint_eq(ent_val(ent[1]) & F_A, 0);
    T.traced_gfn = FVM_NONE;
    T.readonly_gfn = ent[1] >> 12;
    expect_term(la, 4, R, __LINE__);
    ck_assert_uint_eq(ent_val(ent[1]) & F_A, 0);
    /* with A already set, a read-only table is fine for a read */
    wr(ent[1], 8, ent_val(ent[1]) | F_A);
    for (unsigned l = 2; l <= 4; l++)
        wr(ent[l], 8, ent_val(ent[l]) | F_A);
    V.stop = LC_STOP_NONE;
    r = lcr_translate(&V, la, 4, R, &x);
    expect_ok(r, __LINE__);

    /* 32-bit paging: CR3 pointing outside RAM */
    paging(PM_32, 0);
    S.cr3 = 0x80000000;
    set_mode(LC_MODE_PROT32, 0);
    expect_term(0x1000, 1, R, __LINE__);
    /* PG with LMA but no PAE is not a state a CPU can be in */
    paging(PM_4L, 0);
    S.cr4 &= ~LC_CR4_PAE;
    set_mode(LC_MODE_LONG64, 0);
    expect_term(0x1000, 1, R, __LINE__);
}
END_TEST

START_TEST(self_referencing_tables)
{
    const uint64_t xva = 0x400000;
    const uint64_t self = 0xfffffffffffff000ull; /* PML4[511] x4 */
    uint64_t ent[6], pte_la, v = 0;
    lcr_xlat x;

    paging(PM_4L, 0);
    set_mode(LC_MODE_LONG64, 0);
    wr(S.cr3 + 511 * 8, 8, S.cr3 | F_P | F_RW);
    map_at(xva, 0x40000, 1, F_P | F_RW, F_DIR, ent);

    /* the PML4 seen as data through the recursive slot; the A bit the
     * walk sets in PML4[511] is visible in the data, as on hardware */
    ck_assert_int_eq(lcr_translate(&V, self + 511 * 8, 8, R, &x), 0);
    ck_assert_uint_eq(x.frag[0].gpa, S.cr3 + 511 * 8);
    ck_assert_int_eq(lcr_read(&V, &x, &v), 0);
    ck_assert_uint_eq(v, S.cr3 | F_P | F_RW | F_A);

    /* the PTE of X through the recursive mapping, rewritten by a guest
     * store; the next walk of X uses the new PTE */
    pte_la = 0xffffff8000000000ull | ((xva >> 9) & 0x7ffffffff8ull);
    ck_assert_int_eq(lcr_translate(&V, pte_la, 8, RW, &x), 0);
    ck_assert_uint_eq(x.frag[0].gpa, ent[1]);
    ck_assert_int_eq(lcr_read(&V, &x, &v), 0);
    ck_assert_uint_eq(v, 0x40000 | F_P | F_RW);
    v = 0x41000 | F_P | F_RW;
    ck_assert_int_eq(lcr_write(&V, &x, &v), 0);
    expect_ram(xva + 8, 8, R, 0x41008, __LINE__);
    /* PML4[511] was a leaf only for the read: A, no D; the PDE of X was
     * the leaf of the store through the recursive mapping: A and D */
    ck_assert_uint_eq(rd(S.cr3 + 511 * 8, 8) & (F_A | F_D), F_A);
    ck_assert_uint_eq(rd(ent[2], 8) & (F_A | F_D), F_A | F_D);
}
END_TEST

/* ---- reads, writes, devices --------------------------------------------- */

static void xl(uint64_t la, unsigned len, unsigned access, lcr_xlat *x,
               int line)
{
    V.stop = LC_STOP_NONE;
    expect_ok(lcr_translate(&V, la, len, access, x), line);
}

START_TEST(mmio_split_across_pages)
{
    uint64_t la = 0x00007f0000030000ull, val;
    uint8_t buf[8];
    lcr_xlat x;

    paging(PM_4L, 0);
    set_mode(LC_MODE_LONG64, 0);
    map4k(la, MMIO_BASE, F_P | F_RW);
    map4k(la + 0x1000, MMIO_BASE, F_P | F_RW);

    /* 4-byte read at 0xffd: 3 + 1 by page, the 3 as 2 + 1 */
    xl(la + 0xffd, 4, R, &x, __LINE__);
    ck_assert_uint_eq(x.nfrag, 2);
    ck_assert_uint_eq(x.frag[0].kind, LC_GPA_MMIO);
    ck_assert_uint_eq(x.frag[1].kind, LC_GPA_MMIO);
    memset(buf, 0xcc, sizeof(buf));
    ck_assert_int_eq(lcr_read(&V, &x, buf), 0);
    ck_assert_uint_eq(T.nlog, 3);
    ck_assert_int_eq(T.log[0].kind, 'r');
    ck_assert_uint_eq(T.log[0].addr, MMIO_BASE + 0xffd);
    ck_assert_uint_eq(T.log[0].size, 2);
    ck_assert_uint_eq(T.log[1].addr, MMIO_BASE + 0xfff);
    ck_assert_uint_eq(T.log[1].size, 1);
    ck_assert_uint_eq(T.log[2].addr, MMIO_BASE);
    ck_assert_uint_eq(T.log[2].size, 1);
    ck_assert_uint_eq(buf[0], dev_byte(MMIO_BASE + 0xffd));
    ck_assert_uint_eq(buf[1], dev_byte(MMIO_BASE + 0xffe));
    ck_assert_uint_eq(buf[2], dev_byte(MMIO_BASE + 0xfff));
    ck_assert_uint_eq(buf[3], dev_byte(MMIO_BASE));
    ck_assert_uint_eq(buf[4], 0xcc);              /* nothing past len */
    ck_assert_int_eq(T.read_not_zeroed, 0);

    /* 4-byte write the same way */
    T.nlog = 0;
    xl(la + 0xffd, 4, W, &x, __LINE__);
    val = 0x44332211;
    ck_assert_int_eq(lcr_write(&V, &x, &val), 0);
    ck_assert_uint_eq(T.nlog, 3);
    ck_assert_int_eq(T.log[0].kind, 'w');
    ck_assert_uint_eq(T.log[0].value, 0x2211);
    ck_assert_uint_eq(T.log[1].value, 0x33);
    ck_assert_uint_eq(T.log[2].value, 0x44);
    ck_assert_uint_eq(T.log[2].addr, MMIO_BASE);

    /* an aligned 8-byte access is one call */
    T.nlog = 0;
    xl(la + 0x18, 8, R, &x, __LINE__);
    ck_assert_int_eq(lcr_read(&V, &x, buf), 0);
    ck_assert_uint_eq(T.nlog, 1);
    ck_assert_uint_eq(T.log[0].size, 8);
    /* 7 bytes before the boundary: 4 + 2 + 1 */
    T.nlog = 0;
    xl(la + 0xff9, 8, R, &x, __LINE__);
    ck_assert_int_eq(lcr_read(&V, &x, buf), 0);
    ck_assert_uint_eq(T.nlog, 4);
    ck_assert_uint_eq(T.log[0].size, 4);
    ck_assert_uint_eq(T.log[1].size, 2);
    ck_assert_uint_eq(T.log[2].size, 1);
    ck_assert_uint_eq(T.log[3].size, 1);
    ck_assert_uint_eq(T.log[3].addr, MMIO_BASE);
}
END_TEST

START_TEST(ram_mmio_mixed_and_callbacks)
{
    uint64_t la = 0x00007f0000040000ull, val = 0;
    lcr_xlat x;

    paging(PM_4L, 0);
    set_mode(LC_MODE_LONG64, 0);
    map4k(la, 0x38000, F_P | F_RW);
    map4k(la + 0x1000, MMIO_BASE, F_P | F_RW);
    wr(0x38ffe, 2, 0xbbaa);

    xl(la + 0xffe, 4, R, &x, __LINE__);
    ck_assert_uint_eq(x.frag[0].kind, LC_GPA_RAM);
    ck_assert_uint_eq(x.frag[1].kind, LC_GPA_MMIO);
    ck_assert_int_eq(lcr_read(&V, &x, &val), 0);
    ck_assert_uint_eq(val & 0xffff, 0xbbaa);
    ck_assert_uint_eq((val >> 16) & 0xff, dev_byte(MMIO_BASE));
    ck_assert_uint_eq(T.nlog, 1);
    ck_assert_uint_eq(T.log[0].size, 2);

    /* NULL mmio: terminator before anything, RAM part not written */
    OPS.mmio = NULL;
    xl(la + 0xffe, 4, W, &x, __LINE__);
    val = 0x11223344;
    expect_stop(lcr_write(&V, &x, &val), LC_STOP_TERMINATOR, __LINE__);
    ck_assert_uint_eq(rd(0x38ffe, 2), 0xbbaa);
    V.stop = LC_STOP_NONE;
    expect_stop(lcr_read(&V, &x, &val), LC_STOP_TERMINATOR, __LINE__);
    OPS.mmio = fvm_mmio;

    /* LC_CB_STOP and LC_CB_ERROR */
    mmio_answer = LC_CB_STOP;
    mmio_answer_at = nmmio + 1;
    V.stop = LC_STOP_NONE;
    expect_stop(lcr_read(&V, &x, &val), LC_STOP_CALLBACK, __LINE__);
    ck_assert_int_eq(V.error, LC_OK);
    mmio_answer = LC_CB_ERROR;
    mmio_answer_at = nmmio + 1;
    V.stop = LC_STOP_NONE;
    expect_stop(lcr_write(&V, &x, &val), LC_STOP_CALLBACK, __LINE__);
    ck_assert_int_eq(V.error, LC_ERR_CALLBACK);
    /* A store whose MMIO piece the VMM refuses leaves its RAM piece
     * unwritten: the guest's own execution takes the exit on the whole
     * store (found by lc-diff --engine's refused traced stores, --mode
     * real --seed 11). Accepted, both pieces are done. */
    xl(la + 0xffe, 4, W, &x, __LINE__);
    val = 0x11223344;
    mmio_answer = LC_CB_STOP;
    mmio_answer_at = nmmio + 1;
    V.stop = LC_STOP_NONE;
    V.error = LC_OK;
    expect_stop(lcr_write(&V, &x, &val), LC_STOP_CALLBACK, __LINE__);
    ck_assert_uint_eq(rd(0x38ffe, 2), 0xbbaa);
    V.stop = LC_STOP_NONE;
    ck_assert_int_eq(lcr_write(&V, &x, &val), 0);
    ck_assert_uint_eq(rd(0x38ffe, 2), 0x3344);

    /* a translation made for reading cannot be written through */
    xl(la, 4, R, &x, __LINE__);
    expect_stop(lcr_write(&V, &x, &val), LC_STOP_TERMINATOR, __LINE__);
}
END_TEST

START_TEST(traced_rom_smc)
{
    uint64_t val;
    lcr_xlat x;

    paging(PM_NONE, 0);
    set_mode(LC_MODE_PROT32, 0);
    T.traced_gfn = 0x36;
    T.readonly_gfn = 0x37;
    wr(0x36010, 4, 0xaabbccdd);

    /* traced write: goes to traced_write, never stored by the MMU */
    xl(0x36010, 4, W, &x, __LINE__);
    ck_assert_uint_eq(x.frag[0].traced, 1);
    val = 0x11223344;
    ck_assert_int_eq(lcr_write(&V, &x, &val), 0);
    ck_assert_uint_eq(T.nlog, 1);
    ck_assert_int_eq(T.log[0].kind, 't');
    ck_assert_uint_eq(T.log[0].addr, 0x36010);
    ck_assert_uint_eq(T.log[0].size, 4);
    ck_assert_uint_eq(T.log[0].value, 0x11223344);
    ck_assert_uint_eq(rd(0x36010, 4), 0xaabbccdd);
    /* reading a traced page is ordinary RAM */
    xl(0x36010, 4, R, &x, __LINE__);
    val = 0;
    ck_assert_int_eq(lcr_read(&V, &x, &val), 0);
    ck_assert_uint_eq(val, 0xaabbccdd);

    /* crossing from plain RAM into the traced page: 2 stored + 2 traced */
    T.nlog = 0;
    xl(0x35ffe, 4, W, &x, __LINE__);
    val = 0x11223344;
    ck_assert_int_eq(lcr_write(&V, &x, &val), 0);
    ck_assert_uint_eq(rd(0x35ffe, 2), 0x3344);
    ck_assert_uint_eq(T.nlog, 1);
    ck_assert_uint_eq(T.log[0].addr, 0x36000);
    ck_assert_uint_eq(T.log[0].value, 0x1122);
    /* 5 traced bytes go as 4 + 1 (callbacks see only 1/2/4/8) */
    T.nlog = 0;
    xl(0x35ffd, 8, W, &x, __LINE__);
    val = 0x8877665544332211ull;
    ck_assert_int_eq(lcr_write(&V, &x, &val), 0);
    ck_assert_uint_eq(T.nlog, 2);
    ck_assert_uint_eq(T.log[0].addr, 0x36000);
    ck_assert_uint_eq(T.log[0].size, 4);
    ck_assert_uint_eq(T.log[0].value, 0x77665544);
    ck_assert_uint_eq(T.log[1].addr, 0x36004);
    ck_assert_uint_eq(T.log[1].size, 1);
    ck_assert_uint_eq(T.log[1].value, 0x88);
    ck_assert_uint_eq(rd(0x35ffd, 3), 0x332211);
    /* NULL traced_write on the second fragment: nothing written at all */
    OPS.traced_write = NULL;
    wr(0x35ffe, 2, 0);
    xl(0x35ffe, 4, W, &x, __LINE__);
    expect_stop(lcr_write(&V, &x, &val), LC_STOP_TERMINATOR, __LINE__);
    ck_assert_uint_eq(rd(0x35ffe, 2), 0);
    OPS.traced_write = fvm_traced;
    /* nor when traced_write() refuses it (LC_CB_STOP); accepted, both
     * pieces are done */
    traced_answer = LC_CB_STOP;
    T.nlog = 0;
    V.stop = LC_STOP_NONE;
    expect_stop(lcr_write(&V, &x, &val), LC_STOP_CALLBACK, __LINE__);
    ck_assert_uint_eq(rd(0x35ffe, 2), 0);
    traced_answer = LC_CB_OK;
    V.stop = LC_STOP_NONE;
    ck_assert_int_eq(lcr_write(&V, &x, &val), 0);
    ck_assert_uint_eq(rd(0x35ffe, 2), 0x2211);
    ck_assert_uint_eq(T.log[T.nlog - 1].addr, 0x36000);
    ck_assert_uint_eq(T.log[T.nlog - 1].value, 0x4433);

    /* ROM: reads fine, a write translation stops */
    xl(0x37000, 4, R, &x, __LINE__);
    expect_term(0x37000, 4, W, __LINE__);
    expect_term(0x36ffe, 4, RW, __LINE__);

    /* SMC watch: the write completes and flags the hit */
    static const lcr_watch w = { .n = 1, .gfn = { 0x39, 0x3a } };  /* 0x3a: not armed */
    V.watching = &w;
    xl(0x3a000, 4, W, &x, __LINE__);
    ck_assert_int_eq(lcr_write(&V, &x, &val), 0);
    ck_assert_uint_eq(V.end_after, 0);
    xl(0x38ffe, 4, W, &x, __LINE__);
    ck_assert_int_eq(lcr_write(&V, &x, &val), 0);
    ck_assert_uint_eq(V.end_after, LC_STOP_SMC);
    ck_assert_uint_eq(rd(0x39000, 2), 0x4433);
    V.end_after = 0;
    xl(0x39000, 4, R, &x, __LINE__);
    ck_assert_int_eq(lcr_read(&V, &x, &val), 0);
    ck_assert_uint_eq(V.end_after, 0);
}
END_TEST

/* ---- instruction fetch -------------------------------------------------- */

/* ---- the page-walk cache (paper section 11) ----------------------------- */

/* Within one run a page is walked once: later accesses to it ask neither
 * the page tables nor gpa_map again, until a write finds D clear. In
 * 32-bit, PAE and 4-level paging (_i). */
static const struct { int pm; lc_cpu_mode mode; uint64_t la; } pwc_modes[] = {
    { PM_32, LC_MODE_PROT32, 0x40001000ull },
    { PM_PAE, LC_MODE_PROT32, 0x40001000ull },
    { PM_4L, LC_MODE_LONG64, 0x00007f0000001000ull },
};

START_TEST(pwc_one_walk_per_page)
{
    const uint64_t la = pwc_modes[_i].la;
    uint64_t ent[6];
    unsigned nmap, nmapw, es = pwc_modes[_i].pm == PM_32 ? 4 : 8;

    paging(pwc_modes[_i].pm, 0);
    set_mode(pwc_modes[_i].mode, 0);
    map_at(la, 0x30000, 1, F_P | F_RW, F_DIR, ent);
    T.nmap = T.nmap_write = 0;
    expect_ram(la + 8, 8, R, 0x30008, __LINE__);
    ck_assert_uint_eq(V.pwc_hits, 0);
    nmap = T.nmap;
    ck_assert_uint_ge(nmap, 3);              /* the levels and the data */
    expect_ram(la + 0x10, 4, R, 0x30010, __LINE__);
    expect_ram(la + 0xff8, 8, R, 0x30ff8, __LINE__);
    ck_assert_uint_eq(V.pwc_hits, 2);
    ck_assert_uint_eq(T.nmap, nmap);         /* no walk, no gpa_map */
    ck_assert_uint_eq(rd(ent[1], es) & (F_A | F_D), F_A);

    /* A write: D is clear in the cached walk, so it walks and sets D,
     * exactly as the CPU (SDM vol. 3 4.8). */
    expect_ram(la + 0x20, 4, W, 0x30020, __LINE__);
    ck_assert_uint_eq(V.pwc_hits, 2);
    ck_assert_uint_eq(rd(ent[1], es) & (F_A | F_D), F_A | F_D);
    nmap = T.nmap;
    nmapw = T.nmap_write;
    expect_ram(la + 0x28, 8, W, 0x30028, __LINE__);
    expect_ram(la + 0x30, 2, RW, 0x30030, __LINE__);
    ck_assert_uint_eq(V.pwc_hits, 4);
    ck_assert_uint_eq(T.nmap, nmap);
    ck_assert_uint_eq(T.nmap_write, nmapw);

    /* A page crossing walks (two pages), and another page walks once. */
    map4k(la + 0x1000, 0x31000, F_P | F_RW);
    expect_ram(la + 0x1008, 8, R, 0x31008, __LINE__);
    ck_assert_uint_eq(V.pwc_hits, 4);
    expect_ram(la + 0x1010, 8, R, 0x31010, __LINE__);
    ck_assert_uint_eq(V.pwc_hits, 5);
}
END_TEST

/* A full cache replaces round robin from e[0], whatever `next` held
 * before the run: lcr_begin() leaves the cache's bytes as the caller's
 * stack had them (rt.h), so forgetting must reset the replacement index
 * too, or the ninth page of a run is stored past e[] (a host write beyond
 * the vCPU, found by fuzz_engine's corpus under ASan). */
START_TEST(pwc_full_replaces_inside)
{
    const uint64_t la = 0x00007f0000001000ull;
    const unsigned pages = LCR_PWC_ENTRIES + 3;

    paging(PM_4L, 0);
    V.pwc.next = 0xff;                  /* garbage from an earlier frame */
    set_mode(LC_MODE_LONG64, 0);        /* forgets, as lcr_begin() does */
    ck_assert_uint_lt(V.pwc.next, LCR_PWC_ENTRIES);
    for (unsigned i = 0; i < pages; i++)
        map4k(la + 0x1000ull * i, 0x30000 + 0x1000ull * i, F_P | F_RW);
    V.pwc.next = 0xff;
    lcr_pwc_forget(&V);                 /* map4k() forgot: same again */
    ck_assert_uint_lt(V.pwc.next, LCR_PWC_ENTRIES);
    for (unsigned i = 0; i < pages; i++) {
        int found = 0;
        expect_ram(la + 0x1000ull * i + 8, 8, R, 0x30008 + 0x1000ull * i,
                   __LINE__);
        ck_assert_uint_le(V.pwc.n, LCR_PWC_ENTRIES);
        ck_assert_uint_lt(V.pwc.next, LCR_PWC_ENTRIES);
        for (unsigned k = 0; k < V.pwc.n; k++)
            found |= V.pwc.e[k].lpn == (la >> 12) + i;
        ck_assert_int_eq(found, 1);     /* cached, inside e[] */
    }
    /* The last page hits; the first was replaced and walks again. */
    expect_ram(la + 0x1000ull * (pages - 1) + 16, 8, R,
               0x30010 + 0x1000ull * (pages - 1), __LINE__);
    ck_assert_uint_eq(V.pwc_hits, 1);
}
END_TEST

/* D already set, page first mapped for a read: the first store through
 * the cached walk still asks gpa_map with is_write = 1 (a VMM's dirty
 * tracking must see it), once. */
START_TEST(pwc_store_maps_for_write)
{
    const uint64_t la = 0x00007f0000001000ull;
    unsigned nmapw;

    paging(PM_4L, 0);
    set_mode(LC_MODE_LONG64, 0);
    map4k(la, 0x30000, F_P | F_RW | F_A | F_D);
    expect_ram(la, 8, R, 0x30000, __LINE__);
    nmapw = T.nmap_write;
    expect_ram(la + 8, 8, W, 0x30008, __LINE__);
    ck_assert_uint_eq(V.pwc_hits, 1);
    ck_assert_uint_eq(T.nmap_write, nmapw + 1);
    expect_ram(la + 16, 8, W, 0x30010, __LINE__);
    ck_assert_uint_eq(V.pwc_hits, 2);
    ck_assert_uint_eq(T.nmap_write, nmapw + 1);
}
END_TEST

/* Rights are those of the walk, in the state of the access: a read-only
 * page's cached walk does not serve a write, a user page's does not serve
 * a supervisor read once RFLAGS.AC is cleared under SMAP. */
START_TEST(pwc_rights_and_state)
{
    const uint64_t la = 0x00007f0000001000ull;
    lcr_xlat x;
    int r;

    paging(PM_4L, LC_CR4_SMAP);
    S.cr0 |= LC_CR0_WP;
    set_mode(LC_MODE_LONG64, 0);
    map4k(la, 0x30000, F_P | F_US);
    S.rflags = 0x2 | LC_RFLAGS_AC;
    expect_ram(la, 4, R, 0x30000, __LINE__);
    expect_ram(la + 4, 4, R, 0x30004, __LINE__);
    ck_assert_uint_eq(V.pwc_hits, 1);
    V.stop = LC_STOP_NONE;
    r = lcr_translate(&V, la + 8, 4, W, &x);
    expect_fault(r, 14, __LINE__);
    V.stop = LC_STOP_NONE;
    S.rflags = 0x2;                         /* CLAC: SMAP applies */
    r = lcr_translate(&V, la + 8, 4, R, &x);
    expect_fault(r, 14, __LINE__);
    ck_assert_uint_eq(V.pwc_hits, 1);

    /* CR3 changes (the engine never runs MOV CR3, a caller may): the
     * new tables answer. */
    S.rflags = 0x2 | LC_RFLAGS_AC;
    expect_ram(la, 4, R, 0x30000, __LINE__);
    {
        uint64_t old = S.cr3;

        S.cr3 = pt_alloc();
        map4k(la, 0x32000, F_P | F_US);
        set_mode(LC_MODE_LONG64, 0);
        expect_ram(la, 4, R, 0x32000, __LINE__);
        S.cr3 = old;
        expect_ram(la, 4, R, 0x30000, __LINE__);
    }
}
END_TEST

/* The run stores into a page table it walked through (a guest editing
 * its own tables through a mapping of them): the next access walks the
 * new tables; the A/D updates of the walker itself do not forget. */
START_TEST(pwc_store_to_page_table)
{
    const uint64_t la = 0x00007f0000001000ull;
    const uint64_t alias = 0x00007f0000200000ull;  /* maps the PT frame */
    const uint64_t mla = 0x00007f0000400000ull;    /* maps the device */
    uint64_t ent[6];
    uint8_t b[8];
    lcr_xlat x;

    paging(PM_4L, 0);
    map_at(la, 0x30000, 1, F_P | F_RW, F_DIR, ent);
    map4k(la + 0x1000, 0x31000, F_P | F_RW);   /* PTE in the same frame */
    map4k(alias, ent[1] & ~0xfffull, F_P | F_RW | F_A | F_D);
    map4k(mla, MMIO_BASE, F_P | F_RW);
    set_mode(LC_MODE_LONG64, 0);
    expect_ram(la, 8, R, 0x30000, __LINE__);
    /* the walker's own A update in the same page-table frame keeps it */
    expect_ram(la + 0x1000, 8, R, 0x31000, __LINE__);
    ck_assert_uint_eq(rd(ent[1] + 8, 8) & F_A, F_A);
    expect_ram(la + 8, 8, R, 0x30008, __LINE__);
    ck_assert_uint_eq(V.pwc_hits, 1);

    /* the run stores a new PTE through the alias: la now maps 0x35000 */
    V.stop = LC_STOP_NONE;
    ck_assert_int_eq(lcr_translate(&V, alias + (ent[1] & 0xfff), 8, W, &x),
                     0);
    {
        uint64_t nv = 0x35000 | F_P | F_RW | F_A;

        memcpy(b, &nv, 8);
    }
    ck_assert_int_eq(lcr_write(&V, &x, b), 0);
    expect_ram(la + 8, 8, R, 0x35008, __LINE__);   /* walked, not a hit */
    ck_assert_uint_eq(V.pwc_hits, 1);

    /* an MMIO callback forgets everything too (a device may DMA) */
    expect_ram(la + 16, 8, R, 0x35010, __LINE__);
    ck_assert_uint_ne(V.pwc.n, 0);
    V.stop = LC_STOP_NONE;
    ck_assert_int_eq(lcr_translate(&V, mla, 4, W, &x), 0);
    ck_assert_uint_ne(V.pwc.n, 0);
    ck_assert_int_eq(lcr_write(&V, &x, b), 0);
    ck_assert_uint_eq(V.pwc.n, 0);
}
END_TEST

/* A whole cluster, through the engine, that rewrites the page-directory
 * entry of the page it reads, then reads it again: the second read sees
 * the new mapping (with a stale cached walk it would read the old page). */
START_TEST(pwc_cluster_writes_own_page_table)
{
    static const uint8_t code[] = {
        0xe6, 0x80,                     /* out 0x80, al */
        0x48, 0x8b, 0x03,               /* mov rax, [rbx] */
        0x48, 0x89, 0x11,               /* mov [rcx], rdx: PD entry 1 */
        0x48, 0x8b, 0x33,               /* mov rsi, [rbx] */
        0xe6, 0x80,                     /* out 0x80, al */
    };
    fvm f;
    lc_config c;
    lc_engine *e;
    lc_vcpu *vc;
    lc_cpu_state st;
    lc_exit x;
    lc_result res;
    uint64_t v1 = 0x1111111111111111ull, v2 = 0x2222222222222222ull;

    fvm_init(&f);
    memcpy(f.ram + 0x100000, code, sizeof code);
    fvm_state_long64(&f, &st);
    memcpy(f.ram + 0x200000, &v1, 8);   /* PD[1] maps 0x200000 ... */
    memcpy(f.ram + 0x000000, &v2, 8);   /* ... and will map 0 */
    st.rip = 0x100000;
    st.gpr[LC_RBX] = 0x200000;
    st.gpr[LC_RCX] = 0x3008;            /* PD at 0x3000, identity mapped */
    st.gpr[LC_RDX] = 0x87;              /* P RW US PS, 2 MiB at 0 */
    lc_config_init(&c);
    c.translate_threshold = 1;
    ck_assert_int_eq(lc_engine_create(&c, &fvm_ops, &e), LC_OK);
    ck_assert_int_eq(lc_vcpu_create(e, 0, &f, &vc), LC_OK);
    memset(&x, 0, sizeof x);
    x.kind = LC_EXIT_IO;
    x.u.io.port = 0x80;
    x.u.io.size = 1;
    x.u.io.is_out = 1;
    ck_assert_int_eq(lc_vcpu_handle_exit(vc, &st, &x, &res), LC_OK);
    ck_assert_int_eq(res.disposition, LC_HANDLED);
    ck_assert_uint_eq(res.insns, 5);
    ck_assert_uint_eq(res.exits_saved, 1);
    ck_assert_uint_eq(st.gpr[LC_RAX], v1);
    ck_assert_uint_eq(st.gpr[LC_RSI], v2);
    lc_vcpu_destroy(vc);
    lc_engine_destroy(e);
    fvm_fini(&f);
}
END_TEST

/* Section 11 across runs and callbacks: once the epoch ends (the guest
 * ran, or a callback without a flush generation), a cached walk is used again after its paging entries read back
 * unchanged, without walking (only the data page's gpa_map is asked
 * again); an entry changed meanwhile (the guest remapped the page, or
 * cleared an A bit) walks, as the CPU would find it. */
START_TEST(pwc_revalidated_after_epoch)
{
    const uint64_t la = 0x00007f0000001000ull;
    uint64_t ent[6];
    unsigned nmap;

    paging(PM_4L, 0);
    set_mode(LC_MODE_LONG64, 0);
    map_at(la, 0x30000, 1, F_P | F_RW, F_DIR, ent);
    expect_ram(la, 8, R, 0x30000, __LINE__);
    ck_assert_uint_eq(V.pwc_hits, 0);

    /* unchanged: one gpa_map (the data page), no walk */
    lcr_pwc_forget(&V);
    ck_assert_uint_eq(V.pwc.n, 0);
    nmap = T.nmap;
    expect_ram(la + 8, 8, R, 0x30008, __LINE__);
    ck_assert_uint_eq(V.pwc_hits, 1);
    ck_assert_uint_eq(T.nmap, nmap + 1);
    ck_assert_uint_ne(V.pwc.n, 0);

    /* the PTE now maps another page: walks, finds it */
    memcpy(T.ram + ent[1], &(uint64_t){ 0x35000 | F_P | F_RW | F_A }, 8);
    lcr_pwc_forget(&V);
    expect_ram(la + 16, 8, R, 0x35010, __LINE__);
    ck_assert_uint_eq(V.pwc_hits, 1);

    /* A cleared in the PML4 entry: walks, sets it again (SDM 4.8) */
    memcpy(T.ram + ent[4], &(uint64_t){ rd(ent[4], 8) & ~F_A }, 8);
    lcr_pwc_forget(&V);
    expect_ram(la + 24, 8, R, 0x35018, __LINE__);
    ck_assert_uint_eq(V.pwc_hits, 1);
    ck_assert_uint_eq(rd(ent[4], 8) & F_A, F_A);
    lcr_pwc_forget(&V);
    expect_ram(la + 32, 8, R, 0x35020, __LINE__);
    ck_assert_uint_eq(V.pwc_hits, 2);
}
END_TEST

/* The engine's flush generation moved (the guest-physical map changed:
 * the hosts of the recorded entries may be gone): nothing is revalidated,
 * everything walks. */
START_TEST(pwc_dropped_on_flush_generation)
{
    const uint64_t la = 0x00007f0000001000ull;
    uint64_t gen = 7;
    unsigned nmap;

    paging(PM_4L, 0);
    set_mode(LC_MODE_LONG64, 0);
    V.flush_gen = &gen;
    map4k(la, 0x30000, F_P | F_RW);
    expect_ram(la, 8, R, 0x30000, __LINE__);
    lcr_pwc_forget(&V);
    expect_ram(la + 8, 8, R, 0x30008, __LINE__);
    ck_assert_uint_eq(V.pwc_hits, 1);
    gen++;
    lcr_pwc_forget(&V);
    nmap = T.nmap;
    expect_ram(la + 16, 8, R, 0x30010, __LINE__);
    ck_assert_uint_eq(V.pwc_hits, 1);
    ck_assert_uint_ge(T.nmap, nmap + 5);        /* four levels and the data */
    V.flush_gen = NULL;
}
END_TEST

/* Without a flush generation nothing vouches for the host addresses the
 * cached walks hold (a callback may have unmapped them): a callback
 * drops the cache instead of ending its epoch, so the next access walks
 * again rather than reading back entries through old host addresses. */
START_TEST(pwc_dropped_by_callback_without_generation)
{
    const uint64_t la = 0x00007f0000002000ull;
    unsigned nmap;

    paging(PM_4L, 0);
    set_mode(LC_MODE_LONG64, 0);
    ck_assert_ptr_null(V.flush_gen);
    map4k(la, 0x31000, F_P | F_RW);
    expect_ram(la, 8, R, 0x31000, __LINE__);
    ck_assert_uint_gt(V.pwc.nslot, 0);
    lcr_vmm_ran(&V);
    ck_assert_uint_eq(V.pwc.nslot, 0);
    nmap = T.nmap;
    expect_ram(la + 8, 8, R, 0x31008, __LINE__);
    ck_assert_uint_ge(T.nmap, nmap + 5);        /* four levels and the data */
}
END_TEST

/* Through the engine, whose runtime context persists: between two exits
 * the guest remaps the page a cluster reads (a 2 MiB PD entry): the
 * second run reads the new page (a walk cached from the first run and
 * trusted without re-reading its entries would read the old one). */
START_TEST(pwc_engine_runs_see_remap)
{
    static const uint8_t code[] = {
        0xe6, 0x80,                     /* out 0x80, al */
        0x48, 0x8b, 0x03,               /* mov rax, [rbx] */
        0xe6, 0x80,                     /* out 0x80, al */
    };
    fvm f;
    lc_config c;
    lc_engine *e;
    lc_vcpu *vc;
    lc_cpu_state st, s0;
    lc_exit x;
    lc_result res;
    uint64_t v1 = 0x1111111111111111ull, v2 = 0x2222222222222222ull;

    fvm_init(&f);
    memcpy(f.ram + 0x100000, code, sizeof code);
    fvm_state_long64(&f, &s0);
    memcpy(f.ram + 0x200000, &v1, 8);   /* PD[1] maps 0x200000 ... */
    memcpy(f.ram + 0x000000, &v2, 8);   /* ... and later 0 */
    s0.rip = 0x100000;
    s0.gpr[LC_RBX] = 0x200000;
    lc_config_init(&c);
    c.translate_threshold = 1;
    ck_assert_int_eq(lc_engine_create(&c, &fvm_ops, &e), LC_OK);
    ck_assert_int_eq(lc_vcpu_create(e, 0, &f, &vc), LC_OK);
    memset(&x, 0, sizeof x);
    x.kind = LC_EXIT_IO;
    x.u.io.port = 0x80;
    x.u.io.size = 1;
    x.u.io.is_out = 1;
    for (int k = 0; k < 3; k++) {
        st = s0;
        ck_assert_int_eq(lc_vcpu_handle_exit(vc, &st, &x, &res), LC_OK);
        ck_assert_uint_eq(res.insns, 3);
        ck_assert_uint_eq(st.gpr[LC_RAX], v1);
    }
    memcpy(f.ram + 0x3008, &(uint64_t){ 0xa7 }, 8);  /* P RW US A PS, 0 */
    st = s0;
    ck_assert_int_eq(lc_vcpu_handle_exit(vc, &st, &x, &res), LC_OK);
    ck_assert_uint_eq(res.insns, 3);
    ck_assert_uint_eq(st.gpr[LC_RAX], v2);
    lc_vcpu_destroy(vc);
    lc_engine_destroy(e);
    fvm_fini(&f);
}
END_TEST

/* The inline path's question (lcr_pwc_ram, translator/run.c): a host
 * address only for plain RAM the cache answers for; a store never for a
 * traced page or a watched code frame (lcr_write() must see those). */
START_TEST(pwc_ram_inline_answers)
{
    const uint64_t la = 0x00007f0000001000ull;
    uint8_t *h;

    paging(PM_4L, 0);
    set_mode(LC_MODE_LONG64, 0);
    map4k(la, 0x30000, F_P | F_RW | F_A | F_D);
    ck_assert_ptr_null(lcr_pwc_ram(&V, la + 8, 8, R));  /* nothing cached */
    expect_ram(la, 8, R, 0x30000, __LINE__);
    ck_assert_ptr_eq(lcr_pwc_ram(&V, la + 8, 8, R), T.ram + 0x30008);
    ck_assert_ptr_null(lcr_pwc_ram(&V, la + 0xffc, 8, R));   /* crosses */
    h = lcr_pwc_ram(&V, la + 16, 4, W);                 /* maps for write */
    ck_assert_ptr_eq(h, T.ram + 0x30010);
    ck_assert_uint_eq(T.nmap_write > 0, 1);

    T.traced_gfn = 0x30;
    lcr_pwc_forget(&V);
    ck_assert_ptr_eq(lcr_pwc_ram(&V, la + 8, 8, R), T.ram + 0x30008);
    ck_assert_ptr_null(lcr_pwc_ram(&V, la + 8, 8, W));
    T.traced_gfn = FVM_NONE;
    lcr_pwc_forget(&V);
    static const lcr_watch w = { .n = 1, .gfn = { 0x30 } };
    V.watching = &w;
    ck_assert_ptr_null(lcr_pwc_ram(&V, la + 8, 8, W));
    V.watching = NULL;
    ck_assert_ptr_eq(lcr_pwc_ram(&V, la + 8, 8, W), T.ram + 0x30008);
}
END_TEST

/* The one-entry TLB in front of the cache (lcr_pwc_tlb_hit): the page
 * lcr_pwc_ram() last served, per direction, within the part the VMM's
 * answer vouched for, in this epoch only, with the paging state known;
 * a store only under the watch it was made under; forgotten by a walk
 * (it may watch a new page table). */
START_TEST(pwc_tlb_last_page)
{
    const uint64_t la = 0x00007f0000001000ull;
    static const lcr_watch w = { .n = 1, .gfn = { 0x30 } };

    paging(PM_4L, 0);
    set_mode(LC_MODE_LONG64, 0);
    map4k(la, 0x30000, F_P | F_RW | F_A | F_D);
    map4k(la + 0x1000, 0x31000, F_P | F_RW | F_A | F_D);
    map4k(la + 0x2000, 0x60000, F_P | F_RW | F_A | F_D);
    expect_ram(la, 8, R, 0x30000, __LINE__);
    ck_assert_ptr_null(lcr_pwc_tlb_hit(&V, la + 8, 8, 0)); /* not served */
    ck_assert_ptr_eq(lcr_pwc_ram(&V, la + 16, 8, W), T.ram + 0x30010);
    ck_assert_ptr_eq(lcr_pwc_tlb_hit(&V, la + 24, 8, 1), T.ram + 0x30018);
    ck_assert_ptr_eq(lcr_pwc_tlb_hit(&V, la + 16, 8, 0), T.ram + 0x30010);
    ck_assert_ptr_null(lcr_pwc_tlb_hit(&V, la + 0xffc, 8, 0)); /* crosses */
    ck_assert_ptr_null(lcr_pwc_tlb_hit(&V, la + 0x1008, 8, 0));
    ck_assert_ptr_null(lcr_pwc_tlb_hit(&V, la + 8, 8, 0)); /* before lo */
    ck_assert_ptr_eq(lcr_pwc_tlb_hit(&V, la + 0xff8, 8, 0),
                     T.ram + 0x30ff8);

    /* another watch: stores ask again (and meet the watched frame) */
    V.watching = &w;
    ck_assert_ptr_null(lcr_pwc_tlb_hit(&V, la + 24, 8, 1));
    ck_assert_ptr_eq(lcr_pwc_tlb_hit(&V, la + 24, 8, 0), T.ram + 0x30018);
    ck_assert_ptr_null(lcr_pwc_ram(&V, la + 24, 8, W));
    V.watching = NULL;
    ck_assert_ptr_eq(lcr_pwc_ram(&V, la + 24, 8, W), T.ram + 0x30018);
    lcr_watch_arm(&V, NULL, 1);         /* new content: asked again */
    ck_assert_ptr_null(lcr_pwc_tlb_hit(&V, la + 24, 8, 1));
    ck_assert_ptr_eq(lcr_pwc_ram(&V, la + 24, 8, W), T.ram + 0x30018);

    /* an instruction through lcr_exec() may change the paging state */
    V.pwc.state_known = 0;
    ck_assert_ptr_null(lcr_pwc_tlb_hit(&V, la + 24, 8, 0));
    ck_assert_ptr_eq(lcr_pwc_ram(&V, la + 24, 8, R), T.ram + 0x30018);
    ck_assert_ptr_eq(lcr_pwc_tlb_hit(&V, la + 24, 8, 0), T.ram + 0x30018);

    /* a walk of another page forgets both directions */
    expect_ram(la + 0x1000, 8, R, 0x31000, __LINE__);
    ck_assert_ptr_null(lcr_pwc_tlb_hit(&V, la + 24, 8, 0));
    ck_assert_ptr_null(lcr_pwc_tlb_hit(&V, la + 24, 8, 1));

    /* the epoch ended: nothing until lcr_pwc_ram() serves the page again */
    ck_assert_ptr_eq(lcr_pwc_ram(&V, la + 24, 8, W), T.ram + 0x30018);
    lcr_pwc_forget(&V);
    ck_assert_ptr_null(lcr_pwc_tlb_hit(&V, la + 24, 8, 0));
    ck_assert_ptr_null(lcr_pwc_tlb_hit(&V, la + 24, 8, 1));
    /* (the state known again in the new epoch, through another page) */
    ck_assert_ptr_eq(lcr_pwc_ram(&V, la + 0x1008, 8, R), T.ram + 0x31008);
    ck_assert_ptr_null(lcr_pwc_tlb_hit(&V, la + 24, 8, 0));
    ck_assert_ptr_null(lcr_pwc_tlb_hit(&V, la + 24, 8, 1));

    /* a short answer (3 bytes from the first access) bounds the page */
    T.short_gfn = 0x60;
    expect_ram(la + 0x2000, 1, R, 0x60000, __LINE__);
    ck_assert_ptr_eq(lcr_pwc_ram(&V, la + 0x2000, 1, R), T.ram + 0x60000);
    ck_assert_ptr_eq(lcr_pwc_tlb_hit(&V, la + 0x2001, 2, 0),
                     T.ram + 0x60001);
    ck_assert_ptr_null(lcr_pwc_tlb_hit(&V, la + 0x2002, 2, 0));
    /* a new answer for another part of the page replaces the entry's */
    expect_ram(la + 0x2800, 1, R, 0x60800, __LINE__);
    ck_assert_ptr_null(lcr_pwc_tlb_hit(&V, la + 0x2001, 2, 0));
    T.short_gfn = FVM_NONE;
}
END_TEST

/* The TLB's pages outlive the epoch (lcr_pwc_tlb_get(), which calls
 * lcr_pwc_tlb_revive()): after the VMM ran, the page served last in a
 * direction serves again once its entry revalidates, and the other
 * direction's page with it when the two were made together; not when
 * a paging entry changed, the flush generation moved, the paging state
 * changed, or (stores) under another watch or with new watch content;
 * never without a generation (the answer is asked again). */
START_TEST(pwc_tlb_renewed)
{
    const uint64_t la = 0x00007f0000001000ull;
    static const lcr_watch w = { .n = 1, .gfn = { 0x70 } };
    uint64_t gen = 3;

    paging(PM_4L, 0);
    set_mode(LC_MODE_LONG64, 0);
    V.flush_gen = &gen;
    map4k(la, 0x30000, F_P | F_RW | F_A | F_D);
    map4k(la + 0x1000, 0x31000, F_P | F_RW | F_A | F_D);
    expect_ram(la, 8, R, 0x30000, __LINE__);
    ck_assert_ptr_eq(lcr_pwc_ram(&V, la + 16, 8, W), T.ram + 0x30010);

    lcr_pwc_forget(&V);                 /* the epoch ends */
    ck_assert_ptr_null(lcr_pwc_tlb_hit(&V, la + 24, 8, 1));
    ck_assert_ptr_null(lcr_pwc_tlb_get(&V, la + 0x1008, 8, 1));
    ck_assert_ptr_null(lcr_pwc_tlb_get(&V, la + 0xffc, 8, 1));
    ck_assert_ptr_eq(lcr_pwc_tlb_get(&V, la + 24, 8, 1), T.ram + 0x30018);
    ck_assert_ptr_eq(lcr_pwc_tlb_hit(&V, la + 24, 8, 1), T.ram + 0x30018);
    ck_assert_ptr_eq(lcr_pwc_tlb_hit(&V, la + 32, 4, 0), T.ram + 0x30020);

    /* an instruction through lcr_exec() (the state to compare again) */
    V.pwc.state_known = 0;
    ck_assert_ptr_null(lcr_pwc_tlb_hit(&V, la + 24, 8, 0));
    ck_assert_ptr_eq(lcr_pwc_tlb_get(&V, la + 24, 8, 0), T.ram + 0x30018);
    V.st->cr4 |= LC_CR4_SMEP;           /* ... which changed it */
    V.pwc.state_known = 0;
    ck_assert_ptr_null(lcr_pwc_tlb_get(&V, la + 24, 8, 0));
    V.st->cr4 &= ~(uint64_t)LC_CR4_SMEP;

    /* a changed paging entry: not renewed (a walk finds the new page) */
    expect_ram(la, 8, R, 0x30000, __LINE__);
    ck_assert_ptr_eq(lcr_pwc_ram(&V, la + 16, 8, W), T.ram + 0x30010);
    lcr_pwc_forget(&V);
    map4k(la, 0x32000, F_P | F_RW | F_A | F_D);
    ck_assert_ptr_null(lcr_pwc_tlb_get(&V, la + 16, 8, 1));
    ck_assert_ptr_null(lcr_pwc_tlb_get(&V, la + 16, 8, 0));
    expect_ram(la, 8, R, 0x32000, __LINE__);

    /* the flush generation moved: not renewed */
    ck_assert_ptr_eq(lcr_pwc_ram(&V, la + 16, 8, W), T.ram + 0x32010);
    lcr_pwc_forget(&V);
    gen++;
    ck_assert_ptr_null(lcr_pwc_tlb_get(&V, la + 16, 8, 0));
    ck_assert_ptr_null(lcr_pwc_tlb_hit(&V, la + 16, 8, 0));

    /* stores: only under the watch, and watch content, made under */
    expect_ram(la, 8, R, 0x32000, __LINE__);
    ck_assert_ptr_eq(lcr_pwc_ram(&V, la + 16, 8, W), T.ram + 0x32010);
    lcr_pwc_forget(&V);
    lcr_watch_arm(&V, &w, 0);           /* another watch (the page is
                                         * still held: the pointer says) */
    ck_assert_ptr_null(lcr_pwc_tlb_get(&V, la + 16, 8, 1));
    ck_assert_ptr_eq(lcr_pwc_tlb_get(&V, la + 16, 8, 0), T.ram + 0x32010);
    ck_assert_ptr_eq(lcr_pwc_ram(&V, la + 16, 8, W), T.ram + 0x32010);
    lcr_pwc_forget(&V);
    lcr_watch_arm(&V, &w, 0);           /* the same watch, as it was */
    ck_assert_ptr_eq(lcr_pwc_tlb_get(&V, la + 16, 8, 1), T.ram + 0x32010);
    lcr_pwc_forget(&V);
    lcr_watch_arm(&V, &w, 1);           /* its content made again */
    ck_assert_ptr_null(lcr_pwc_tlb_get(&V, la + 16, 8, 1));
    lcr_watch_arm(&V, NULL, 1);

    /* the other direction's page is renewed with it only when the two
     * were made together: a load page from another entry, whose paging
     * entry changed, is not (a walk finds the new page) */
    lcr_pwc_drop(&V);
    expect_ram(la, 8, R, 0x32000, __LINE__);
    expect_ram(la + 0x1000, 8, R, 0x31000, __LINE__);
    ck_assert_ptr_eq(lcr_pwc_ram(&V, la + 16, 8, W), T.ram + 0x32010);
    ck_assert_ptr_eq(lcr_pwc_ram(&V, la + 0x1008, 8, R), T.ram + 0x31008);
    lcr_pwc_forget(&V);
    map4k(la + 0x1000, 0x33000, F_P | F_RW | F_A | F_D);
    ck_assert_ptr_eq(lcr_pwc_tlb_get(&V, la + 16, 8, 1), T.ram + 0x32010);
    ck_assert_ptr_null(lcr_pwc_tlb_hit(&V, la + 0x1008, 8, 0));
    ck_assert_ptr_null(lcr_pwc_tlb_get(&V, la + 0x1008, 8, 0));
    expect_ram(la + 0x1008, 8, R, 0x33008, __LINE__);

    /* no generation: revalidation asks the VMM again, so no renewal */
    V.flush_gen = NULL;
    lcr_pwc_drop(&V);
    expect_ram(la, 8, R, 0x32000, __LINE__);
    ck_assert_ptr_eq(lcr_pwc_ram(&V, la + 8, 8, R), T.ram + 0x32008);
    lcr_pwc_forget(&V);
    ck_assert_ptr_null(lcr_pwc_tlb_get(&V, la + 8, 8, 0));
}
END_TEST

/* The TLB's page is not renewed once the entry it came from is gone: its
 * slot taken by a ninth page, or the cache dropped by a store into one of
 * the page tables its walk read (in a later epoch: the store the run
 * makes through an alias of the table). */
START_TEST(pwc_tlb_not_renewed_when_entry_gone)
{
    const uint64_t la = 0x00007f0000001000ull;
    const uint64_t alias = 0x00007f0000200000ull;  /* maps the PT frame */
    uint64_t ent[6], gen = 5, nv;
    uint8_t b[8];
    lcr_xlat x;

    paging(PM_4L, 0);
    set_mode(LC_MODE_LONG64, 0);
    V.flush_gen = &gen;
    map_at(la, 0x30000, 1, F_P | F_RW | F_A | F_D, F_DIR, ent);
    for (unsigned k = 1; k <= LCR_PWC_ENTRIES; k++)
        map4k(la + 0x10000 * k, 0x40000 + 0x1000 * k,
              F_P | F_RW | F_A | F_D);
    map4k(alias, ent[1] & ~0xfffull, F_P | F_RW | F_A | F_D);

    /* a ninth page takes the entry's slot */
    expect_ram(la, 8, R, 0x30000, __LINE__);
    ck_assert_ptr_eq(lcr_pwc_ram(&V, la + 8, 8, R), T.ram + 0x30008);
    for (unsigned k = 1; k <= LCR_PWC_ENTRIES; k++)
        expect_ram(la + 0x10000 * k, 8, R, 0x40000 + 0x1000 * k, __LINE__);
    lcr_pwc_forget(&V);
    ck_assert_ptr_null(lcr_pwc_tlb_get(&V, la + 8, 8, 0));

    /* a store into the PT frame in a later epoch: la now maps 0x35000 */
    lcr_pwc_drop(&V);
    expect_ram(la, 8, R, 0x30000, __LINE__);
    ck_assert_ptr_eq(lcr_pwc_ram(&V, la + 8, 8, R), T.ram + 0x30008);
    lcr_pwc_forget(&V);
    V.stop = LC_STOP_NONE;
    ck_assert_int_eq(lcr_translate(&V, alias + (ent[1] & 0xfff), 8, W, &x),
                     0);
    nv = 0x35000 | F_P | F_RW | F_A | F_D;
    memcpy(b, &nv, 8);
    ck_assert_int_eq(lcr_write(&V, &x, b), 0);
    ck_assert_ptr_null(lcr_pwc_tlb_get(&V, la + 8, 8, 0));
    expect_ram(la + 8, 8, R, 0x35008, __LINE__);
    V.flush_gen = NULL;
}
END_TEST

/* The VMM's answer for a cached page outlives the epoch while the flush
 * generation holds (lc_vm_ops.gpa_map's contract: any change of it comes
 * with lc_engine_flush()): in a later epoch, the entry is revalidated by
 * its paging entries alone, no gpa_map call; once the generation moved,
 * everything is asked again (here: the page became traced, so a store
 * is no longer inline). Without a generation the answer is asked again
 * at every epoch. */
START_TEST(pwc_keeps_map_per_generation)
{
    const uint64_t la = 0x00007f0000001000ull;
    uint64_t gen = 7;
    unsigned nmap;

    paging(PM_4L, 0);
    set_mode(LC_MODE_LONG64, 0);
    V.flush_gen = &gen;
    map4k(la, 0x30000, F_P | F_RW | F_A | F_D);
    expect_ram(la, 8, R, 0x30000, __LINE__);
    ck_assert_ptr_eq(lcr_pwc_ram(&V, la + 16, 8, W), T.ram + 0x30010);
    lcr_pwc_forget(&V);                 /* the epoch ends */
    nmap = T.nmap;
    ck_assert_ptr_eq(lcr_pwc_ram(&V, la + 16, 8, W), T.ram + 0x30010);
    ck_assert_ptr_eq(lcr_pwc_ram(&V, la + 24, 8, R), T.ram + 0x30018);
    ck_assert_uint_eq(T.nmap, nmap);

    /* a changed paging entry still walks: the revalidation reads it */
    lcr_pwc_forget(&V);
    map4k(la, 0x31000, F_P | F_RW | F_A | F_D);
    ck_assert_ptr_null(lcr_pwc_ram(&V, la + 8, 8, R));
    expect_ram(la, 8, R, 0x31000, __LINE__);

    T.traced_gfn = 0x31;                /* and the VMM flushes */
    gen++;
    lcr_pwc_forget(&V);
    ck_assert_ptr_null(lcr_pwc_ram(&V, la + 16, 8, W));
    expect_ram(la, 8, R, 0x31000, __LINE__);
    ck_assert_ptr_null(lcr_pwc_ram(&V, la + 16, 8, W));
    ck_assert_ptr_eq(lcr_pwc_ram(&V, la + 16, 8, R), T.ram + 0x31010);
    T.traced_gfn = FVM_NONE;

    /* no generation: the answer is asked again in a later epoch */
    V.flush_gen = NULL;
    lcr_pwc_drop(&V);
    expect_ram(la, 8, R, 0x31000, __LINE__);
    lcr_pwc_forget(&V);
    nmap = T.nmap;
    ck_assert_ptr_eq(lcr_pwc_ram(&V, la + 8, 8, R), T.ram + 0x31008);
    ck_assert_uint_eq(T.nmap, nmap + 1);
}
END_TEST

/* A guess through the cache (lcr_pwc_peek, the chain's check of a
 * stacked return address): the current bytes of the page the entry last
 * mapped, in any epoch, with no walk, no gpa_map call and nothing
 * changed; stale after a remap by design; nothing once the map
 * generation or the paging state moved, across a page, or uncached. */
START_TEST(pwc_peek_guesses)
{
    const uint64_t la = 0x00007f0000001000ull;
    uint64_t ent[6], gen = 3, val = 0, cr3;
    unsigned nmap, hits;

    paging(PM_4L, 0);
    set_mode(LC_MODE_LONG64, 0);
    V.flush_gen = &gen;
    map_at(la, 0x30000, 1, F_P | F_RW, F_DIR, ent);
    memcpy(T.ram + 0x30008, &(uint64_t){ 0x1122334455667788ull }, 8);
    ck_assert_int_eq(lcr_pwc_peek(&V, la + 8, 8, &val), 0);  /* uncached */
    expect_ram(la, 8, R, 0x30000, __LINE__);
    lcr_pwc_forget(&V);                 /* a callback ran */
    nmap = T.nmap;
    hits = V.pwc_hits;
    ck_assert_int_eq(lcr_pwc_peek(&V, la + 8, 8, &val), 1);
    ck_assert_uint_eq(val, 0x1122334455667788ull);
    ck_assert_int_eq(lcr_pwc_peek(&V, la + 8, 2, &val), 1);
    ck_assert_uint_eq(val, 0x7788);
    ck_assert_uint_eq(T.nmap, nmap);
    ck_assert_uint_eq(V.pwc_hits, hits);
    ck_assert_uint_eq(V.pwc.n, 0);      /* not revalidated */
    ck_assert_int_eq(lcr_pwc_peek(&V, la + 0xffc, 8, &val), 0);
    ck_assert_int_eq(lcr_pwc_peek(&V, la + 8, 0, &val), 0);
    ck_assert_int_eq(lcr_pwc_peek(&V, la + 8, 9, &val), 0);
    ck_assert_int_eq(lcr_pwc_peek(&V, la + 0x1008, 8, &val), 0);

    /* the PTE maps another page now: the guess still reads the old one
     * (a walk, lcr_translate, finds the new) */
    memcpy(T.ram + ent[1], &(uint64_t){ 0x35000 | F_P | F_RW | F_A }, 8);
    ck_assert_int_eq(lcr_pwc_peek(&V, la + 8, 8, &val), 1);
    ck_assert_uint_eq(val, 0x1122334455667788ull);

    /* another paging state, or the map changed: no answer */
    cr3 = S.cr3;
    S.cr3 ^= 0x1000;
    ck_assert_int_eq(lcr_pwc_peek(&V, la + 8, 8, &val), 0);
    S.cr3 = cr3;
    ck_assert_int_eq(lcr_pwc_peek(&V, la + 8, 8, &val), 1);
    gen++;
    ck_assert_int_eq(lcr_pwc_peek(&V, la + 8, 8, &val), 0);
    V.flush_gen = NULL;
}
END_TEST

/* A cluster loads from its own code page, then stores into it with MOV:
 * the store completes and the run stops there (section 7), inline path
 * or not. */
START_TEST(pwc_inline_store_into_code_stops)
{
    static const uint8_t code[] = {
        0xe6, 0x80,                         /* out 0x80, al */
        0x48, 0x8b, 0x05, 0x17, 0, 0, 0,    /* mov rax, [0x100020] */
        0x88, 0x05, 0x01, 0, 0, 0,          /* mov [0x100010], al */
        0x90,                               /* nop */
        0x90,                               /* nop: the store's target */
        0xe6, 0x80,                         /* out 0x80, al */
    };
    fvm f;
    lc_config c;
    lc_engine *e;
    lc_vcpu *vc;
    lc_cpu_state st, s0;
    lc_exit x;
    lc_result res;

    fvm_init(&f);
    memcpy(f.ram + 0x100000, code, sizeof code);
    fvm_state_long64(&f, &s0);
    s0.rip = 0x100000;
    s0.gpr[LC_RAX] = 0;
    lc_config_init(&c);
    c.translate_threshold = 1;
    ck_assert_int_eq(lc_engine_create(&c, &fvm_ops, &e), LC_OK);
    ck_assert_int_eq(lc_vcpu_create(e, 0, &f, &vc), LC_OK);
    memset(&x, 0, sizeof x);
    x.kind = LC_EXIT_IO;
    x.u.io.port = 0x80;
    x.u.io.size = 1;
    x.u.io.is_out = 1;
    /* The store writes a NOP onto a NOP the translation covers: the
     * code is the same, but a store onto watched code bytes must take the
     * full path and stop the run (section 7), warm cache or not. */
    for (int k = 0; k < 3; k++) {
        f.ram[0x100020] = 0x90;
        st = s0;
        ck_assert_int_eq(lc_vcpu_handle_exit(vc, &st, &x, &res), LC_OK);
        ck_assert_int_eq(res.stop, LC_STOP_SMC);
        ck_assert_uint_eq(res.insns, 3);
        ck_assert_uint_eq(st.rip, 0x10000f);
        ck_assert_uint_eq(f.ram[0x100010], 0x90);
    }
    lc_vcpu_destroy(vc);
    lc_engine_destroy(e);
    fvm_fini(&f);
}
END_TEST

/* 64-bit code 6 bytes before the end of its page (frame 0x3b, its
 * entries' A bits clear, 0x9a..0x9f), the next page not mapped; `ent`
 * gets the entries' addresses (map_at()). */
static uint64_t code_at_page_end(uint64_t ent[6])
{
    const uint64_t rip = 0x00007f0000050ffaull;

    paging(PM_4L, 0);
    S.efer |= NXE;
    set_mode(LC_MODE_LONG64, 0);
    map_at(rip & ~0xfffull, 0x3b000, 1, F_P, F_DIR, ent);
    for (unsigned i = 0; i < 16; i++)
        T.ram[0x3bff0 + i] = (uint8_t)(0x90 + i);
    return rip;
}

START_TEST(fetch_truncated_at_non_present_page)
{
    uint64_t gfn[2] = { 0, 0 }, ent[6];
    uint64_t rip = code_at_page_end(ent);
    uint8_t buf[15];
    unsigned ngfn = 99;
    size_t n;

    S.rip = rip;
    n = lcr_fetch(&V, buf, 15, gfn, &ngfn);
    ck_assert_uint_eq(n, 6);
    ck_assert_uint_eq(ngfn, 1);
    ck_assert_uint_eq(gfn[0], 0x3b);
    ck_assert_uint_eq(buf[0], 0x9a);
    ck_assert_uint_eq(buf[5], 0x9f);
    ck_assert_int_eq(V.stop, LC_STOP_NONE);
    ck_assert_uint_eq(V.fault_vector, 0);
    ck_assert_uint_eq(ent_val(ent[1]) & (F_A | F_D), F_A);

    /* next page present: all 15, two frames */
    map4k(rip + 6, 0x3c000, F_P);
    n = lcr_fetch(&V, buf, 15, gfn, &ngfn);
    ck_assert_uint_eq(n, 15);
    ck_assert_uint_eq(ngfn, 2);
    ck_assert_uint_eq(gfn[1], 0x3c);
    /* next page NX: shortened, no stop */
    map4k(rip + 6, 0x3c000, F_P | F_XD);
    n = lcr_fetch(&V, buf, 15, gfn, &ngfn);
    ck_assert_uint_eq(n, 6);
    /* next page MMIO: shortened */
    map4k(rip + 6, MMIO_BASE, F_P);
    n = lcr_fetch(&V, buf, 15, gfn, &ngfn);
    ck_assert_uint_eq(n, 6);
    ck_assert_uint_eq(nmmio, 0);
    /* first page not fetchable at all */
    S.rip = 0x00007f0000060000ull;
    n = lcr_fetch(&V, buf, 15, gfn, &ngfn);
    ck_assert_uint_eq(n, 0);
    ck_assert_uint_eq(ngfn, 0);
    ck_assert_int_eq(V.stop, LC_STOP_NONE);
    /* max below 15 is honoured */
    S.rip = rip - 0xa;
    n = lcr_fetch(&V, buf, 3, gfn, &ngfn);
    ck_assert_uint_eq(n, 3);
    ck_assert_uint_eq(buf[0], 0x90);
}
END_TEST

/* A fetch record holds each paging entry as the walk left it, its A bit
 * set: the check passes while the entries stay so, fails once the guest
 * clears a bit (the fetch made again then sets it, as the CPU's fetch of
 * the code does), and passes again after that fetch. A page the fetch
 * could not reach (here not present) keeps the values read, so the
 * record of a truncated fetch keeps passing too. */
START_TEST(fetch_record_holds_entries_as_walked)
{
    uint64_t gfn[2] = { 0, 0 }, ent[6];
    uint64_t rip = code_at_page_end(ent);
    uint8_t buf[15];
    unsigned ngfn = 0;
    lcr_fetch_rec rec;

    ck_assert_uint_eq(ent_val(ent[1]) & F_A, 0);
    ck_assert_uint_eq(lcr_fetch_at_rec(&V, rip, buf, 15, gfn, &ngfn, &rec),
                      6);
    ck_assert_uint_eq(ent_val(ent[1]) & F_A, F_A);
    ck_assert(rec.valid);
    for (int k = 0; k < 2; k++)
        ck_assert(lcr_fetch_check(&V, rip, &rec, buf, 6));
    wr(ent[1], 8, ent_val(ent[1]) & ~F_A);
    ck_assert(!lcr_fetch_check(&V, rip, &rec, buf, 6));
    ck_assert_uint_eq(lcr_fetch_at_rec(&V, rip, buf, 15, gfn, &ngfn, &rec),
                      6);
    ck_assert_uint_eq(ent_val(ent[1]) & F_A, F_A);
    ck_assert(lcr_fetch_check(&V, rip, &rec, buf, 6));
}
END_TEST

START_TEST(fetch_segment_and_canonical_limits)
{
    uint64_t gfn[2];
    uint8_t buf[15];
    unsigned ngfn;

    /* protected mode, no paging: CS limit shortens the fetch */
    paging(PM_NONE, 0);
    S.seg[LC_CS] = seg(0x30000, 0x1005, 0xb, 1);
    set_mode(LC_MODE_PROT32, 0);
    S.rip = 0x1000;
    ck_assert_uint_eq(lcr_fetch(&V, buf, 15, gfn, &ngfn), 6);
    ck_assert_uint_eq(gfn[0], 0x31);
    S.rip = 0x1006;
    ck_assert_uint_eq(lcr_fetch(&V, buf, 15, gfn, &ngfn), 0);
    /* a data segment in CS, or an unusable CS: nothing */
    S.rip = 0x1000;
    S.seg[LC_CS].type = 3;
    ck_assert_uint_eq(lcr_fetch(&V, buf, 15, gfn, &ngfn), 0);
    S.seg[LC_CS].type = 0x9;                /* execute-only is fine */
    ck_assert_uint_eq(lcr_fetch(&V, buf, 15, gfn, &ngfn), 6);
    S.seg[LC_CS].present = 0;
    ck_assert_uint_eq(lcr_fetch(&V, buf, 15, gfn, &ngfn), 0);
    ck_assert_int_eq(V.stop, LC_STOP_NONE);

    /* real mode: base + IP, 64 KiB limit */
    S.cr0 = 0;
    S.seg[LC_CS] = seg(0xf0000, 0xffff, 0xb, 0);
    set_mode(LC_MODE_REAL, 0);
    S.rip = 0xfff8;
    ck_assert_uint_eq(lcr_fetch(&V, buf, 15, gfn, &ngfn), 8);
    ck_assert_uint_eq(gfn[0], 0xff);

    /* 64-bit: stop at the end of the canonical lower half */
    paging(PM_4L, 0);
    set_mode(LC_MODE_LONG64, 0);
    map4k(0x00007ffffffff000ull, 0x3d000, F_P);
    S.rip = 0x00007ffffffffffaull;
    ck_assert_uint_eq(lcr_fetch(&V, buf, 15, gfn, &ngfn), 6);
    ck_assert_uint_eq(ngfn, 1);
    S.rip = 0x0000800000000000ull;
    ck_assert_uint_eq(lcr_fetch(&V, buf, 15, gfn, &ngfn), 0);
    ck_assert_int_eq(V.stop, LC_STOP_NONE);

    /* compatibility mode: the fetch ends at 4 GiB */
    map4k(0xfffff000, 0x3e000, F_P);
    map4k(0x100000000ull, 0x3f000, F_P);
    S.seg[LC_CS] = seg(0, 0xffffffff, 0xb, 1);
    set_mode(LC_MODE_COMPAT32, 0);
    S.rip = 0xfffffffc;
    ck_assert_uint_eq(lcr_fetch(&V, buf, 15, gfn, &ngfn), 4);
    ck_assert_uint_eq(ngfn, 1);
    ck_assert_uint_eq(gfn[0], 0x3e);
}
END_TEST

/* lcr_ram_read/write/equal (guest RAM as other vCPUs share it): every
 * offset and length copies exactly the bytes asked, touches nothing
 * around them, and equal notices a difference at any position. */
START_TEST(ram_access_every_alignment)
{
    uint8_t ram[96], src[48], out[48];

    for (unsigned i = 0; i < sizeof src; i++)
        src[i] = (uint8_t)(0x80 + i);
    for (unsigned off = 0; off < 16; off++) {
        for (unsigned len = 0; len <= 40; len++) {
            memset(ram, 0xee, sizeof ram);
            lcr_ram_write(ram + off, src, len);
            for (unsigned i = 0; i < sizeof ram; i++) {
                uint8_t want = i >= off && i < off + len ? src[i - off] : 0xee;
                ck_assert_msg(ram[i] == want, "off %u len %u byte %u", off,
                              len, i);
            }
            memset(out, 0, sizeof out);
            lcr_ram_read(out, ram + off, len);
            ck_assert_int_eq(memcmp(out, src, len), 0);
            ck_assert_int_eq(out[len], 0);      /* len <= 40 < 48 */
            ck_assert(lcr_ram_equal(ram + off, src, len));
            for (unsigned i = 0; i < len; i++) {
                ram[off + i] ^= 1;
                ck_assert(!lcr_ram_equal(ram + off, src, len));
                ram[off + i] ^= 1;
            }
        }
    }
}
END_TEST

static Suite *mmu_suite(void)
{
    Suite *s = suite_create("mmu");
    TCase *t;

    t = tcase_create("segmentation");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_add_loop_test(t, segmentation_table, 0,
                        (int)(sizeof(seg_cases) / sizeof(seg_cases[0])));
    tcase_add_test(t, segmentation_bad_arguments);
    suite_add_tcase(s, t);

    t = tcase_create("paging");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_add_test(t, no_paging_identity);
    tcase_add_test(t, paging32_4k_4m_pse36);
    tcase_add_test(t, paging_pae_4k_2m);
    tcase_add_test(t, paging_4level_4k_2m_1g);
    tcase_add_test(t, paging_5level);
    tcase_add_loop_test(t, access_rights_table, 0,
                        (int)(sizeof(right_cases) / sizeof(right_cases[0])));
    tcase_add_test(t, ad_bits_4level_exact);
    tcase_add_test(t, ad_bits_large_and_legacy);
    tcase_add_test(t, ad_update_sees_entry_changed);
    tcase_add_test(t, lass_left_to_cpu);
    tcase_add_test(t, page_cross_second_not_present);
    tcase_add_test(t, linear_wrap_32bit);
    tcase_add_test(t, table_outside_ram_or_in_mmio);
    tcase_add_test(t, self_referencing_tables);
    suite_add_tcase(s, t);

    t = tcase_create("access");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_add_test(t, mmio_split_across_pages);
    tcase_add_test(t, ram_mmio_mixed_and_callbacks);
    tcase_add_test(t, traced_rom_smc);
    tcase_add_test(t, ram_access_every_alignment);
    suite_add_tcase(s, t);

    t = tcase_create("pwc");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_add_loop_test(t, pwc_one_walk_per_page, 0,
                        (int)(sizeof(pwc_modes) / sizeof(pwc_modes[0])));
    tcase_add_test(t, pwc_store_maps_for_write);
    tcase_add_test(t, pwc_full_replaces_inside);
    tcase_add_test(t, pwc_rights_and_state);
    tcase_add_test(t, pwc_store_to_page_table);
    tcase_add_test(t, pwc_cluster_writes_own_page_table);
    tcase_add_test(t, pwc_revalidated_after_epoch);
    tcase_add_test(t, pwc_dropped_on_flush_generation);
    tcase_add_test(t, pwc_dropped_by_callback_without_generation);
    tcase_add_test(t, pwc_engine_runs_see_remap);
    tcase_add_test(t, pwc_ram_inline_answers);
    tcase_add_test(t, pwc_tlb_last_page);
    tcase_add_test(t, pwc_tlb_renewed);
    tcase_add_test(t, pwc_tlb_not_renewed_when_entry_gone);
    tcase_add_test(t, pwc_peek_guesses);
    tcase_add_test(t, pwc_keeps_map_per_generation);
    tcase_add_test(t, pwc_inline_store_into_code_stops);
    suite_add_tcase(s, t);

    t = tcase_create("fetch");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_add_test(t, fetch_truncated_at_non_present_page);
    tcase_add_test(t, fetch_record_holds_entries_as_walked);
    tcase_add_test(t, fetch_segment_and_canonical_limits);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return lc_test_run(mmu_suite());
}
