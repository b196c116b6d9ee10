/* SPDX-License-Identifier: MIT */
/*
 * runtime/mmu.c: segmentation, page walks and guest-physical access.
 *
 * Everything here follows the Intel SDM vol. 3 (chapter 3 "Protected-Mode
 * Memory Management", chapter 4 "Paging", chapter 5 "Protection"; section
 * numbers below are those of the 2023+ editions). AMD APM vol. 2 chapters
 * 4-5 agree for every rule used.
 *
 * Two principles shape the code:
 *
 *  1. A stop is always safe. When this layer reports LC_STOP_FAULT or
 *     LC_STOP_TERMINATOR the engine stops *before* the instruction and the
 *     guest executes it natively, where the real CPU decides. So wherever
 *     the architecture leaves room (implementation-specific behaviour,
 *     state we cannot see such as the PDPTE registers or PKRU), we stop
 *     rather than guess. What we must never do is complete an access the
 *     CPU would have refused, or refuse silently in a way that changes
 *     guest-visible state.
 *
 *  2. Guest memory is hostile. Page-table entries and everything they
 *     point to are read only through ops->gpa_map() and never beyond the
 *     `span` it returned. A walk has a fixed number of levels (at most
 *     five), so self-referencing or looping tables cannot make it run
 *     unbounded, and aliasing works as on hardware because each level is
 *     read afresh from guest memory.
 *
 * Side effects of a translation (accessed and dirty bits) are made only
 * after every check of every fragment has passed (see commit_ad()).
 *
 * Physical-address width: MAXPHYADDR is taken as 52, the architectural
 * maximum (SDM 4.1.4). The real value is the guest's CPUID.80000008H:EAX
 * [7:0], which this layer does not see. With 52 we flag fewer reserved
 * bits than a CPU with a narrower MAXPHYADDR would; an entry pointing above
 * the guest's real physical range then yields a gpa the VMM answers as
 * LC_GPA_UNMAPPED, so the access stops as a terminator and the CPU raises
 * the reserved-bit #PF itself when the guest executes the instruction.
 */
#include <assert.h>
#include <stddef.h>
#include <string.h>

#include "rt.h"

/* ---- constants ---------------------------------------------------------- */

#define PAGE_SIZE      4096u
#define PAGE_MASK      0xfffull
#define MAXPHYADDR     52
#define PHYS_MASK      ((1ull << MAXPHYADDR) - 1)
#define ADDR_4K        (PHYS_MASK & ~PAGE_MASK)   /* bits 51:12 */
#define MAX_LEVELS     5
_Static_assert(MAX_LEVELS == LCR_PWC_LEVELS, "walk and page-walk cache levels");
#define LA32_MASK      0xffffffffull

/* Paging-structure entry bits (SDM 4.3 tables 4-4..4-7, 4.4.2 tables
 * 4-8..4-11, 4.5.4 tables 4-14..4-20). A and D are both in byte 0 in every
 * format; commit_ad() sets them with a compare-and-exchange of the whole
 * entry against what the walk read (set_entry_bits()). */
#define PTE_P   (1ull << 0)
#define PTE_RW  (1ull << 1)
#define PTE_US  (1ull << 2)
#define PTE_A   (1ull << 5)
#define PTE_D   (1ull << 6)
#define PTE_PS  (1ull << 7)
#define PTE_XD  (1ull << 63)

/* Type field of a code/data descriptor (SDM 3.4.5.1, table 3-1). */
#define TYPE_CODE   0x8u    /* else data */
#define TYPE_RD_WR  0x2u    /* code: readable; data: writable */
#define TYPE_EXPDN  0x4u    /* data only: expand-down */

/* Outcome of an internal step; converted to v->stop only by the public
 * entry points, so lcr_fetch() can use the same code without stopping. */
typedef enum mres {
    M_OK = 0,
    M_PF,       /* page fault at the linear address being translated */
    M_GP,       /* general protection (non-canonical address) */
    M_TERM,     /* cannot be done here: stop as a terminator */
} mres;

static int stop_term(lcr_vcpu *v)
{
    v->stop = LC_STOP_TERMINATOR;
    return -1;
}

static int stop_fault(lcr_vcpu *v, uint8_t vector)
{
    v->stop = LC_STOP_FAULT;
    v->fault_vector = vector;
    return -1;
}

/* Little-endian load of a 4- or 8-byte paging entry. An aligned entry is
 * read with one atomic load, as the CPU reads it (SDM 4.8 notes that
 * entries may be modified by other processors concurrently); the fallback
 * covers hosts that hand out unaligned mappings. */
static inline uint64_t load_entry(const uint8_t *p, unsigned size)
{
#if defined(__GNUC__)
    if (size == 8 && ((uintptr_t)p & 7) == 0)
        return __atomic_load_n((const uint64_t *)(const void *)p,
                               __ATOMIC_RELAXED);
    if (size == 4 && ((uintptr_t)p & 3) == 0)
        return __atomic_load_n((const uint32_t *)(const void *)p,
                               __ATOMIC_RELAXED);
#endif
    uint64_t e = 0;
    lcr_ram_read(&e, p, size);  /* x86 host: little endian like the guest */
    return e;
}

/* Do the 8-byte, 8-aligned paging entries at ehva[0 .. n) still hold
 * eval[]? One load each: the revalidation of a page-walk cache entry and
 * the coherency check's fetch record run this on every use. */
#define ENTRY_DIFF8(i)                                                   \
    (__atomic_load_n((const uint64_t *)(const void *)ehva[i],           \
                     __ATOMIC_RELAXED) ^ eval[i])
static inline int entries_hold8(const uint8_t *const *ehva,
                                const uint64_t *eval, unsigned n)
{
    uint64_t d = 0;

    /* Unrolled, one OR of differences and one branch: a walk reads at
     * most MAX_LEVELS, 5, entries (a page-walk cache entry, the fetch
     * record of one page); the loop is for a fetch record of two pages
     * (up to LCR_REC_ENTRIES). */
    switch (n) {
    case 5: d |= ENTRY_DIFF8(4); /* fall through */
    case 4: d |= ENTRY_DIFF8(3); /* fall through */
    case 3: d |= ENTRY_DIFF8(2); /* fall through */
    case 2: d |= ENTRY_DIFF8(1); /* fall through */
    case 1: d |= ENTRY_DIFF8(0); /* fall through */
    case 0: return d == 0;
    default:
        for (unsigned i = 0; i < n; i++)
            d |= ENTRY_DIFF8(i);
        return d == 0;
    }
}
#undef ENTRY_DIFF8

/* Guest RAM is shared with the guest's other vCPUs, whose threads may run
 * the runtime at the same time, and with device DMA. Every access the
 * runtime makes to it is therefore a sequence of relaxed atomic loads or
 * stores, each of the widest naturally aligned size (8, 4, 2 or 1 bytes)
 * that fits: an aligned guest access of up to 8 bytes then stays
 * single-copy atomic as on the CPU (SDM vol. 3A, 8.1.1), and the accesses
 * of two vCPU threads are not a data race in C11 (nor for
 * ThreadSanitizer). On x86 these are the plain MOVs a memcpy would use.
 * One walk (ram_span()) makes that sequence for a read, a write and a
 * compare; each is a specialized copy of it. */
enum ram_op { RAM_READ, RAM_WRITE, RAM_EQUAL };

/* One access of `w` bytes at h (naturally aligned): load into buf, store
 * from buf, or compare with buf (0 when they differ). The buffer side is
 * a fixed-size copy (a single load or store; little endian host). */
static inline __attribute__((always_inline))
int ram_step(uint8_t *h, uint8_t *buf, unsigned w, enum ram_op op)
{
    uint64_t v = 0, e = 0;

    if (op == RAM_WRITE) {
        memcpy(&v, buf, w);
        switch (w) {
        case 8: __atomic_store_n((uint64_t *)(void *)h, v, __ATOMIC_RELAXED); break;
        case 4: __atomic_store_n((uint32_t *)(void *)h, (uint32_t)v, __ATOMIC_RELAXED); break;
        case 2: __atomic_store_n((uint16_t *)(void *)h, (uint16_t)v, __ATOMIC_RELAXED); break;
        default: __atomic_store_n(h, (uint8_t)v, __ATOMIC_RELAXED); break;
        }
        return 1;
    }
    switch (w) {
    case 8: v = __atomic_load_n((const uint64_t *)(void *)h, __ATOMIC_RELAXED); break;
    case 4: v = __atomic_load_n((const uint32_t *)(void *)h, __ATOMIC_RELAXED); break;
    case 2: v = __atomic_load_n((const uint16_t *)(void *)h, __ATOMIC_RELAXED); break;
    default: v = __atomic_load_n(h, __ATOMIC_RELAXED); break;
    }
    if (op == RAM_READ) {
        memcpy(buf, &v, w);
        return 1;
    }
    memcpy(&e, buf, w);
    return v == e;
}

/* `n` bytes at hva against buf, access by access: first a byte, a word
 * and a doubleword as the address needs to reach 8-alignment (a step
 * too wide for what is left is skipped: what is left is then narrower
 * still, and the tail takes it at that alignment), then quadwords, then
 * the tail from the widest down; each the widest aligned access that
 * fits. Written out, not chosen per access in a loop: the fetch of every
 * exit and the coherency check of every hit run this. 0 as soon as a
 * compare differs. Never touches a byte outside [hva, hva + n). */
static inline __attribute__((always_inline))
int ram_span(uint8_t *hva, uint8_t *buf, size_t n, enum ram_op op)
{
#define RAM_PART(w, when)                                     \
    do {                                                      \
        if ((when) && n >= (w)) {                             \
            if (!ram_step(hva, buf, (w), op))                 \
                return 0;                                     \
            hva += (w), buf += (w), n -= (w);                 \
        }                                                     \
    } while (0)
    RAM_PART(1, (uintptr_t)hva & 1);
    RAM_PART(2, (uintptr_t)hva & 2);
    RAM_PART(4, (uintptr_t)hva & 4);
    for (; n >= 8; hva += 8, buf += 8, n -= 8)
        if (!ram_step(hva, buf, 8, op))
            return 0;
    RAM_PART(4, 1);
    RAM_PART(2, 1);
    RAM_PART(1, 1);
#undef RAM_PART
    return 1;
}

/* The const qualifiers are dropped only where the walk neither stores to
 * guest RAM (read, compare) nor to the buffer (write, compare). */
void lcr_ram_read(void *dst, const uint8_t *hva, size_t n)
{
    ram_span((uint8_t *)(uintptr_t)hva, dst, n, RAM_READ);
}

void lcr_ram_write(uint8_t *hva, const void *src, size_t n)
{
    ram_span(hva, (uint8_t *)(uintptr_t)src, n, RAM_WRITE);
}

int lcr_ram_equal(const uint8_t *hva, const void *buf, size_t n)
{
    return ram_span((uint8_t *)(uintptr_t)hva, (uint8_t *)(uintptr_t)buf, n,
                    RAM_EQUAL);
}

/* Set A/D `bits` (byte 0) in the paging entry of `size` bytes at p that
 * the walk read as `old`, with a locked compare-and-exchange as the CPU
 * updates it (SDM 4.8): 1 when the entry holds them now and is otherwise
 * what the walk used (another vCPU's A or D update in between is kept);
 * 0 when it changed since (another vCPU cleared P, or remapped it, as a
 * reclaim does before its TLB shootdown): the walk's answer is stale and
 * nothing is set, as KVM's walker restarts there. An entry the host maps
 * misaligned cannot be exchanged whole: 0 as well (stop, the CPU's). */
static int set_entry_bits(uint8_t *p, unsigned size, uint64_t old,
                          uint8_t bits)
{
    /* one entry of type T: as the walk read it, but for bits others may
     * have set meanwhile, until it holds them */
#define SET_BITS(T)                                                        \
    do {                                                                   \
        T *e = (T *)(void *)p;                                             \
        T cur = __atomic_load_n(e, __ATOMIC_SEQ_CST);                      \
                                                                           \
        for (;;) {                                                         \
            if ((T)(cur | bits) != (T)(old | bits))                        \
                return 0;                                                  \
            if ((cur & bits) == bits ||                                    \
                __atomic_compare_exchange_n(e, &cur, (T)(cur | bits), 0,   \
                                            __ATOMIC_SEQ_CST,              \
                                            __ATOMIC_SEQ_CST))             \
                return 1;                                                  \
        }                                                                  \
    } while (0)
    if (size == 8 && !((uintptr_t)p & 7))
        SET_BITS(uint64_t);
    if (size == 4 && !((uintptr_t)p & 3))
        SET_BITS(uint32_t);
#undef SET_BITS
    return 0;
}


static int long_mode_active(const lcr_vcpu *v)
{
    return (v->st->efer & LC_EFER_LMA) != 0;
}

/* ---- segmentation (lcr_linear) ------------------------------------------ */

/* Type checks of SDM 5.4 ("Type Checking"): a write
 * needs a writable data segment, a read a data or readable code segment, a
 * fetch a code segment. Privilege (DPL vs CPL/RPL) is checked when the
 * segment register is loaded (SDM 5.6), never on an access, so not here. */
static int seg_type_ok(const lc_segment *s, unsigned access)
{
    unsigned t = s->type & 0xf;
    int code = (t & TYPE_CODE) != 0;

    if (!s->s)          /* a system descriptor cannot be in DS..GS/CS/SS */
        return 0;
    if ((access & LCR_ACC_WRITE) && (code || !(t & TYPE_RD_WR)))
        return 0;
    if ((access & LCR_ACC_READ) && code && !(t & TYPE_RD_WR))
        return 0;
    if ((access & LCR_ACC_FETCH) && !code)
        return 0;
    return 1;
}

/* Limit check for bytes [ea, ea + size - 1] (SDM 5.3): expand-up as
 * lcr_seg_limit_up() (rt.h, shared with the inline forms); an expand-down
 * data segment has valid offsets limit+1 .. 0xffff or 0xffffffff by D/B
 * (SDM 3.4.5.1, 5.3). The last offset is computed in 64 bits, so an access
 * that would wrap the 4 GiB offset space fails the check; the SDM makes
 * that case implementation-specific (5.3, "may or may not cause"), and
 * stopping is always safe. */
static int seg_limit_ok(const lc_segment *s, uint64_t ea, unsigned size,
                        int expand_down)
{
    uint64_t last = ea + size - 1;

    if (!expand_down)
        return lcr_seg_limit_up(s, ea, size);
    if (last < ea)
        return 0;
    return ea > s->limit && last <= (s->db ? LA32_MASK : 0xffffull);
}

/* A data segment real mode keeps expand-down (lcr_linear()). */
static int real_expdn(const lcr_vcpu *v, const lc_segment *s)
{
    return v->mode == LC_MODE_REAL && !(s->type & TYPE_CODE) &&
           (s->type & TYPE_EXPDN);
}

static int linear_of(lcr_vcpu *v, unsigned seg, uint64_t ea, unsigned size,
                     unsigned access, uint64_t *la)
{
    const lc_segment *s;
    uint8_t vec = seg == LC_SS ? LC_VEC_SS : LC_VEC_GP;

    if (seg >= LC_NR_SREGS || size == 0)
        return stop_term(v);        /* caller bug: refuse, never guess */
    s = &v->st->seg[seg];

    switch (v->mode) {
    case LC_MODE_REAL:
    case LC_MODE_VM86:
        /* SDM "Real-Address Mode Operation" (20.1.1 / 20.2 in the 2016-2022
         * editions): base + offset, checked against the cached
         * limit (0xffff normally; "big real mode" keeps a larger limit
         * loaded in protected mode). No type checks, but an
         * expand-down data segment kept from protected mode in real
         * mode is still expand-down ("Switching Back to Real-Address
         * Mode"; virtual-8086 mode's are expand-up). A20 is taken as
         * enabled, so no wrap at 1 MiB; linear addresses are 32 bits. */
        if (!seg_limit_ok(s, ea, size, real_expdn(v, s)))
            return stop_fault(v, vec);
        *la = (s->base + ea) & LA32_MASK;
        return 0;

    case LC_MODE_PROT16:
    case LC_MODE_PROT32:
    case LC_MODE_COMPAT16:
    case LC_MODE_COMPAT32: {
        /* Compatibility mode segments work as in protected mode (SDM
         * 3.4.4 / 5.3.1), with 32-bit linear addresses. */
        int expdn;

        /* SDM 3.4.2 / 5.4.1: a null (unusable) or not-present segment
         * faults on use: #GP, or #SS for the stack segment. */
        if (s->unusable || !s->present)
            return stop_fault(v, vec);
        if (!seg_type_ok(s, access))
            return stop_fault(v, vec);
        expdn = !(s->type & TYPE_CODE) && (s->type & TYPE_EXPDN);
        if (!seg_limit_ok(s, ea, size, expdn))
            return stop_fault(v, vec);
        *la = (s->base + ea) & LA32_MASK;
        return 0;
    }

    case LC_MODE_LONG64: {
        /* SDM 3.2.4 / 5.3.1: in 64-bit mode there are no limit or type
         * checks and the bases of CS, DS, ES and SS are treated as 0; FS
         * and GS keep theirs. Every byte must be canonical (SDM vol. 1
         * 3.3.7.1): checking the first and last suffices unless the range
         * wraps around 2^64, which we refuse as well. A non-canonical
         * SS-relative reference raises #SS, anything else #GP (SDM 6.15,
         * interrupts 12 and 13). */
        uint64_t base = (seg == LC_FS || seg == LC_GS) ? s->base : 0;
        uint64_t first = base + ea;

        if (!lcr_canonical_range_v(v, first, size))
            return stop_fault(v, vec);
        *la = first;
        return 0;
    }

    default:
        return stop_term(v);
    }
}

/* Alignment checking (SDM vol. 3 6.15, "Interrupt 17 - Alignment Check
 * Exception", and its table of alignments by data type): at CPL 3 (also
 * virtual-8086 mode) with CR0.AM and RFLAGS.AC set, an explicit data
 * reference not aligned to its size raises #AC. Asked of every access
 * as the largest power of two up to 16 that divides its size, which is
 * at least what the table asks (a stop where the CPU would not fault
 * costs an exit, nothing else). Fetches and implicit supervisor-mode
 * accesses are not checked. The inline forms reach RAM only at aligned
 * addresses (exec.c), so a misaligned access always comes here. */
static int align_faults(const lcr_vcpu *v, uint64_t la, unsigned size,
                        unsigned access)
{
    unsigned a = size >= 16 ? 16 : size >= 8 ? 8 : size >= 4 ? 4
                 : size >= 2 ? 2 : 1;

    return (la & (a - 1)) && !(access & (LCR_ACC_FETCH | LCR_ACC_IMPLICIT)) &&
           (v->st->cr0 & LC_CR0_AM) && (v->st->rflags & LC_RFLAGS_AC);
}

int lcr_linear(lcr_vcpu *v, unsigned seg, uint64_t ea, unsigned size,
               unsigned access, uint64_t *la)
{
    if (linear_of(v, seg, ea, size, access, la) < 0)
        return -1;
    if (__builtin_expect(v->cpl == 3, 0) && align_faults(v, *la, size, access))
        return stop_fault(v, LC_VEC_AC);
    return 0;
}

void lcr_seg_learn(lcr_vcpu *v, unsigned seg)
{
    const lc_segment *s = &v->st->seg[seg];
    uint8_t bit = (uint8_t)(1u << seg);
    int r = 0, w = 0;

    switch (v->mode) {
    case LC_MODE_REAL:
    case LC_MODE_VM86:
        /* the limit alone (lcr_linear()), expand-up */
        r = w = !real_expdn(v, s);
        break;
    case LC_MODE_PROT16:
    case LC_MODE_PROT32:
    case LC_MODE_COMPAT16:
    case LC_MODE_COMPAT32:
        if (!s->unusable && s->present &&
            ((s->type & TYPE_CODE) || !(s->type & TYPE_EXPDN))) {
            r = seg_type_ok(s, LCR_ACC_READ);
            w = seg_type_ok(s, LCR_ACC_WRITE);
        }
        break;
    default:
        break;                  /* 64-bit mode: ram_fast()'s own case */
    }
    v->seg_known |= bit;
    v->seg_r = (uint8_t)(r ? v->seg_r | bit : v->seg_r & ~bit);
    v->seg_w = (uint8_t)(w ? v->seg_w | bit : v->seg_w & ~bit);
}

/* ---- paging: context ---------------------------------------------------- */

enum pg_mode {
    PG_NONE = 0,  /* CR0.PG = 0: linear = physical */
    PG_32,        /* 32-bit paging, SDM 4.3 */
    PG_PAE,       /* PAE paging, SDM 4.4 */
    PG_4L,        /* 4-level paging, SDM 4.5 */
    PG_5L,        /* 5-level paging, SDM 4.5 */
};

/* What a walk needs from CR0/CR4/EFER/RFLAGS/CPL, computed once per
 * translation (SDM 4.1.1 table 4-1 for the mode selection). */
typedef struct pgctx {
    lcr_vcpu *v;
    unsigned mode;      /* enum pg_mode */
    unsigned levels;    /* paging-structure levels (0 for PG_NONE) */
    unsigned access;    /* enum lcr_access */
    uint8_t  user;      /* CPL 3: user-mode access (SDM 4.6) */
    uint8_t  wp;        /* CR0.WP */
    uint8_t  nxe;       /* EFER.NXE, meaningful for PAE/4L/5L only */
    uint8_t  pse;       /* CR4.PSE, meaningful for 32-bit paging only */
    uint8_t  smep, smap, ac;
    uint8_t  pke, pks;
} pgctx;

static mres pg_setup(lcr_vcpu *v, unsigned access, pgctx *c)
{
    const lc_cpu_state *st = v->st;

    memset(c, 0, sizeof(*c));
    c->v = v;
    c->access = access;
    c->user = v->cpl == 3 && !(access & LCR_ACC_IMPLICIT);
    c->wp = (st->cr0 & LC_CR0_WP) != 0;
    c->pse = (st->cr4 & LC_CR4_PSE) != 0;
    c->smep = (st->cr4 & LC_CR4_SMEP) != 0;
    c->smap = (st->cr4 & LC_CR4_SMAP) != 0;
    c->ac = (st->rflags & LC_RFLAGS_AC) != 0 && !(access & LCR_ACC_IMPLICIT);
    c->pke = (st->cr4 & LC_CR4_PKE) != 0;
    c->pks = (st->cr4 & LC_CR4_PKS) != 0;

    /* LASS (CR4.LASS): a user access to the upper half of the address
     * space, or a supervisor one to the lower half, is #GP or #SS before
     * paging; its rules (AC, implicit accesses, fetches) are not made
     * here: every access is left to the CPU. */
    if (st->cr4 & LC_CR4_LASS)
        return M_TERM;
    if (!(st->cr0 & LC_CR0_PG)) {
        c->mode = PG_NONE;
        return M_OK;
    }
    if (st->efer & LC_EFER_LMA) {
        /* IA-32e mode requires CR4.PAE (SDM "Initializing IA-32e
         * Mode"); a state claiming otherwise is not one the CPU can
         * be in: do not guess. */
        if (!(st->cr4 & LC_CR4_PAE))
            return M_TERM;
        c->mode = (st->cr4 & LC_CR4_LA57) ? PG_5L : PG_4L;
        c->levels = c->mode == PG_5L ? 5 : 4;
        c->nxe = (st->efer & LC_EFER_NXE) != 0;
    } else if (st->cr4 & LC_CR4_PAE) {
        c->mode = PG_PAE;
        c->levels = 3;
        c->nxe = (st->efer & LC_EFER_NXE) != 0;
    } else {
        c->mode = PG_32;
        c->levels = 2;
    }
    return M_OK;
}

/* ---- paging: one walk --------------------------------------------------- */

/* A paging-structure entry used by a walk and the A/D bits it needs. */
typedef struct pte_ref {
    uint64_t gpa;
    uint64_t old;       /* the entry as the walk read it */
    uint8_t  size;      /* 4 or 8 bytes */
    uint8_t  set;       /* PTE_A and/or PTE_D still clear in the entry */
    uint8_t *hva;       /* filled by commit_ad()'s check phase */
} pte_ref;

typedef struct walk {
    uint64_t gpa;       /* physical address of the first byte */
    unsigned nref;
    pte_ref  ref[MAX_LEVELS];
    /* for the page-walk cache: the combined rights (pg_rights()), the
     * leaf's D bit, and the frames of the entries read */
    uint8_t  user_addr, writable, xd, dirty;
    unsigned npt;
    uint64_t pt_gfn[MAX_LEVELS];
    /* where each entry read is, and what it holds once this walk's A/D
     * updates are made (the cache revalidates by reading them again) */
    const uint8_t *ehva[MAX_LEVELS];
    uint64_t eval[MAX_LEVELS];
} walk;

/* Index of `la` into the table at `level` (1 = page table). */
static unsigned pg_index(const pgctx *c, uint64_t la, unsigned level)
{
    if (c->mode == PG_32)                       /* SDM 4.3: 10 bits */
        return (unsigned)(la >> (12 + 10 * (level - 1))) & 0x3ff;
    if (c->mode == PG_PAE && level == 3)        /* SDM 4.4.1: la[31:30] */
        return (unsigned)(la >> 30) & 3;
    return (unsigned)(la >> (12 + 9 * (level - 1))) & 0x1ff;
}

/* Physical base of the top-level table from CR3 (SDM 4.3 table 4-3, 4.4.1
 * table 4-7, 4.5.2 table 4-12). Bits 63:52 of CR3 in IA-32e mode are not
 * address bits (LAM, PCID no-flush), so they are masked off. */
static uint64_t pg_root(const pgctx *c)
{
    uint64_t cr3 = c->v->st->cr3;

    switch (c->mode) {
    case PG_32:
        return cr3 & 0xfffff000ull;
    case PG_PAE:
        return cr3 & 0xffffffe0ull;
    default:
        return cr3 & ADDR_4K;
    }
}

/* Is the entry at `level` a leaf (maps a page)? SDM 4.3: a PDE with PS=1
 * maps 4 MiB only if CR4.PSE=1. SDM 4.4.2 / 4.5.4: PS in a PDE or PDPTE
 * maps 2 MiB / 1 GiB (1-GByte pages are assumed supported, as on every
 * CPU KVM exposes them on). PS in a PML4E/PML5E is reserved, handled by
 * pg_rsvd(). */
static int pg_leaf(const pgctx *c, unsigned level, uint64_t e)
{
    if (level == 1)
        return 1;
    switch (c->mode) {
    case PG_32:
        return level == 2 && c->pse && (e & PTE_PS);
    case PG_PAE:
        return level == 2 && (e & PTE_PS);
    default:
        return (level == 2 || level == 3) && (e & PTE_PS);
    }
}

/* Reserved bits of a present entry (any set -> #PF with RSVD, SDM 4.7).
 * With MAXPHYADDR = 52 the "51:M" ranges are empty. */
static uint64_t pg_rsvd(const pgctx *c, unsigned level, int leaf)
{
    uint64_t r = 0;

    switch (c->mode) {
    case PG_32:
        /* Table 4-4: a 4-MiB PDE has bit 21 reserved (PSE-36 puts address
         * bits 39:32 in 20:13; bits 39-M:13 are reserved only for
         * M < 40). Other 32-bit entries have no reserved bits. */
        return (level == 2 && leaf) ? (1ull << 21) : 0;
    case PG_PAE:
        if (level == 3)     /* Table 4-8 (PDPTE): 63:M, 8:5, 2:1 */
            return 0xfff0000000000000ull | 0x1e6ull;
        r = 0x7ff0000000000000ull;                  /* 62:M */
        break;
    default:
        if (level >= 4)
            r |= PTE_PS;    /* Tables 4-14, 4-15: PS reserved */
        break;
    }
    if (!c->nxe)
        r |= PTE_XD;        /* XD is reserved when EFER.NXE = 0 */
    if (leaf && level == 2)
        r |= 0x1fe000ull;   /* 2-MiB page: bits 20:13 */
    if (leaf && level == 3)
        r |= 0x3fffe000ull; /* 1-GiB page: bits 29:13 */
    return r;
}

/* Physical address of the byte at `la` through leaf entry `e`. */
static uint64_t pg_target(const pgctx *c, unsigned level, uint64_t e,
                          uint64_t la)
{
    if (c->mode == PG_32) {
        if (level == 1)
            return (e & 0xfffff000ull) | (la & PAGE_MASK);
        /* 4-MiB page, SDM 4.3 table 4-4: bits 31:22 are address bits
         * 31:22 and, with PSE-36, bits 20:13 are address bits 39:32
         * (implemented: every CPU with PAE supports PSE-36). */
        return ((e >> 13) & 0xff) << 32 | (e & 0xffc00000ull) |
               (la & 0x3fffffull);
    }
    switch (level) {
    case 1:
        return (e & ADDR_4K) | (la & PAGE_MASK);
    case 2:
        return (e & ADDR_4K & ~0x1fffffull) | (la & 0x1fffffull);
    default:
        return (e & ADDR_4K & ~0x3fffffffull) | (la & 0x3fffffffull);
    }
}

/* Read the entry at `gpa` of `size` bytes. Only ordinary RAM, and never
 * beyond what gpa_map() vouched for: a table in MMIO, unmapped space, or a
 * mapping too short for the entry ends the run as a terminator (the CPU
 * would read the device or abort; the VMM decides that, not us). */
static mres read_entry(lcr_vcpu *v, uint64_t gpa, unsigned size,
                       uint64_t *e, const uint8_t **hva)
{
    lc_gpa_map m;

    memset(&m, 0, sizeof(m));
    v->ops->gpa_map(v->opaque, gpa, 0, &m);
    if (m.kind != LC_GPA_RAM || m.hva == NULL || m.span < size)
        return M_TERM;
    *e = load_entry(m.hva, size);
    *hva = m.hva;
    if (v->rec) {
        lcr_fetch_rec *r = v->rec;
        if (r->nent < LCR_REC_ENTRIES) {
            r->ehva[r->nent] = m.hva;
            r->esize[r->nent] = (uint8_t)size;
            r->eval[r->nent] = *e;
            r->nent++;
        } else {
            r->valid = 0;       /* more than we can revalidate */
        }
    }
    return M_OK;
}

/* Access rights of SDM 4.6 from the combined U/S, R/W and XD of all
 * levels. `user_addr`: U/S = 1 at every level ("user-mode address");
 * `writable`: R/W = 1 at every level; `xd`: XD = 1 at some level with
 * EFER.NXE = 1. */
static mres pg_rights(const pgctx *c, int user_addr, int writable, int xd)
{
    unsigned a = c->access;

    if (c->user) {
        /* 4.6.1: user-mode accesses need a user-mode address; writes
         * need R/W = 1 everywhere regardless of CR0.WP. */
        if (!user_addr)
            return M_PF;
        if ((a & LCR_ACC_WRITE) && !writable)
            return M_PF;
    } else {
        /* 4.6.1: supervisor fetches from user-mode addresses are refused
         * under CR4.SMEP; supervisor data accesses to user-mode
         * addresses under CR4.SMAP unless RFLAGS.AC = 1 (all accesses
         * here are explicit ones). Supervisor writes honour R/W only
         * when CR0.WP = 1. */
        if ((a & LCR_ACC_FETCH) && user_addr && c->smep)
            return M_PF;
        if ((a & (LCR_ACC_READ | LCR_ACC_WRITE)) && user_addr && c->smap &&
            !c->ac)
            return M_PF;
        if ((a & LCR_ACC_WRITE) && !writable && c->wp)
            return M_PF;
    }
    if ((a & LCR_ACC_FETCH) && xd)
        return M_PF;
    /* 4.6.2: protection keys depend on PKRU / IA32_PKRS, which the state
     * does not carry. A data access the keys govern (4-/5-level paging,
     * user-mode address under CR4.PKE, supervisor-mode address under
     * CR4.PKS) cannot be decided here: leave it to the CPU. */
    if ((c->mode == PG_4L || c->mode == PG_5L) &&
        (a & (LCR_ACC_READ | LCR_ACC_WRITE)) &&
        ((user_addr && c->pke) || (!user_addr && c->pks)))
        return M_TERM;
    return M_OK;
}

/* Walk the tables for the page holding `la` (SDM 4.3, 4.4, 4.5), checking
 * presence, reserved bits and rights, and record which entries need A/D
 * bits. No side effects. The number of iterations is the fixed number of
 * levels of the mode (at most five), whatever the tables contain. */
static mres pg_walk(const pgctx *c, uint64_t la, walk *w)
{
    unsigned esize = c->mode == PG_32 ? 4 : 8;
    uint64_t table = pg_root(c);
    int user_addr = 1, writable = 1, xd = 0;
    unsigned level;
    mres r;

    w->nref = 0;
    w->npt = 0;
    if (c->mode == PG_NONE) {
        /* SDM 4.1: without paging the linear address is the physical
         * address; outside IA-32e mode linear addresses are 32 bits. */
        w->user_addr = w->writable = w->dirty = 1;
        w->xd = 0;
        w->gpa = long_mode_active(c->v) ? la : la & LA32_MASK;
        return w->gpa > PHYS_MASK ? M_TERM : M_OK;
    }
    assert(c->levels >= 2 && c->levels <= MAX_LEVELS);

    for (level = c->levels; level >= 1; level--) {
        uint64_t egpa = table + (uint64_t)pg_index(c, la, level) * esize;
        uint64_t e;
        int leaf, pdpte = c->mode == PG_PAE && level == 3;

        r = read_entry(c->v, egpa, esize, &e, &w->ehva[w->npt]);
        if (r != M_OK)
            return r;
        w->eval[w->npt] = e;
        w->pt_gfn[w->npt++] = egpa >> 12;
        if (!(e & PTE_P))
            return M_PF;
        leaf = pg_leaf(c, level, e);
        if (e & pg_rsvd(c, level, leaf))
            /* PAE PDPTEs are loaded into registers when CR3 is loaded
             * (SDM 4.4.1) and a reserved bit there is a #GP of MOV CR3,
             * not a #PF. We read them from memory at walk time instead
             * (the registers are not in the state); one that would not
             * have loaded means memory changed after the load, so the
             * CPU may still be using other values: stop, do not guess. */
            return pdpte ? M_TERM : M_PF;

        /* PAE PDPTEs carry no R/W, U/S, XD or A bits (table 4-8). */
        if (!pdpte) {
            uint8_t set = 0;

            user_addr &= (e & PTE_US) != 0;
            writable &= (e & PTE_RW) != 0;
            if (c->nxe && (e & PTE_XD))
                xd = 1;
            /* SDM 4.8: A in every entry used; D in the leaf on a
             * write. */
            if (!(e & PTE_A))
                set |= (uint8_t)PTE_A;
            if (leaf && (c->access & LCR_ACC_WRITE) && !(e & PTE_D))
                set |= (uint8_t)PTE_D;
            if (set) {
                w->eval[w->npt - 1] |= set;
                assert(w->nref < MAX_LEVELS);
                w->ref[w->nref].gpa = egpa;
                w->ref[w->nref].old = e;
                w->ref[w->nref].size = (uint8_t)esize;
                w->ref[w->nref].set = set;
                w->ref[w->nref].hva = NULL;
                w->nref++;
            }
        }
        if (leaf) {
            w->gpa = pg_target(c, level, e, la);
            w->user_addr = (uint8_t)user_addr;
            w->writable = (uint8_t)writable;
            w->xd = (uint8_t)xd;
            w->dirty = (e & PTE_D) != 0;
            return pg_rights(c, user_addr, writable, xd);
        }
        table = c->mode == PG_32 ? e & 0xfffff000ull : e & ADDR_4K;
    }
    /* Level 1 is always a leaf. */
    assert(0 && "page walk without a leaf");
    return M_TERM;
}

/* ---- paging: data mapping and side effects ------------------------------ */

/* Map one fragment's guest-physical range (SDM-independent: the VMM's
 * view), and hand back the VMM's answer in *m (zeroed, kind
 * LC_GPA_UNMAPPED, when none was asked: a learned route). RAM must cover
 * the whole fragment; ROM refuses writes; MMIO is dispatched later by
 * lcr_read()/lcr_write(). */
static mres map_frag_m(lcr_vcpu *v, uint64_t gpa, unsigned len,
                       unsigned access, lcr_frag *f, lc_gpa_map *m)
{
    int is_write = (access & LCR_ACC_WRITE) != 0;

    memset(m, 0, sizeof(*m));
    if (gpa > PHYS_MASK || gpa + len - 1 > PHYS_MASK)
        return M_TERM;
    memset(f, 0, sizeof(*f));
    f->gpa = gpa;
    f->len = len;
    /* A learned route: this instruction's device frame, no lookup. Page
     * tables and code never take this path (route is only set for the
     * data accesses of a routed instruction, see lcr_translate). */
    if (v->route && v->route->learned && v->route->gfn == gpa >> 12 &&
        !(access & LCR_ACC_FETCH)) {
        f->kind = LC_GPA_MMIO;
        v->routed++;
        return M_OK;
    }
    v->ops->gpa_map(v->opaque, gpa, is_write, m);
    if (v->route && !v->route->learned && m->kind == LC_GPA_MMIO &&
        !(access & LCR_ACC_FETCH)) {
        v->route->gfn = gpa >> 12;
        v->route->learned = 1;
    }
    switch (m->kind) {
    case LC_GPA_RAM:
        if (m->hva == NULL || m->span < len || (is_write && m->readonly))
            return M_TERM;
        f->kind = LC_GPA_RAM;
        f->hva = m->hva;
        f->traced = m->traced != 0;
        return M_OK;
    case LC_GPA_MMIO:
        f->kind = LC_GPA_MMIO;
        return M_OK;
    default:
        return M_TERM;
    }
}

static mres map_frag(lcr_vcpu *v, uint64_t gpa, unsigned len,
                     unsigned access, lcr_frag *f)
{
    lc_gpa_map m;

    return map_frag_m(v, gpa, len, access, f, &m);
}

/* Set the A/D bits recorded by the walks: first check that every entry
 * needing an update is writable ordinary RAM (mapped again with is_write
 * = 1 so a VMM's dirty tracking sees the store), then store. A table in
 * ROM or in a traced page is a terminator: the engine never stores to a
 * traced page through hva, and the guest's own execution lets the CPU
 * (or the VMM's shadow walker) set the bits. An update is a one-byte
 * atomic OR of byte 0 of the entry, so no other byte is rewritten. All
 * entries were read before any is written; that is equivalent to the
 * CPU's in-walk updates even when tables alias, because A and D never
 * influence a translation. */
static mres commit_ad(lcr_vcpu *v, walk *w, unsigned nw)
{
    /* A look (v->probe) never stores: the CPU sets A/D bits only for
     * accesses it makes. A strict look fails where one is needed; a peek
     * succeeds without them (the caller makes the real access later, or
     * none) if the real access could set them: an entry in ROM or a
     * traced page (a shadow-paging VMM's copy of a guest page table) ends
     * the peek as it would end the access, before any callback the caller
     * makes between the two (a VMWRITE's, lc-diff --engine with a traced
     * PDPT, --mode pae --seed 11 --case 2995). */
    if (v->probe == LCR_PROBE_STRICT)
        for (unsigned i = 0; i < nw; i++)
            for (unsigned j = 0; j < w[i].nref; j++)
                if (w[i].ref[j].set)
                    return M_TERM;
    for (unsigned i = 0; i < nw; i++) {
        for (unsigned j = 0; j < w[i].nref; j++) {
            pte_ref *r = &w[i].ref[j];
            lc_gpa_map m;

            memset(&m, 0, sizeof(m));
            v->ops->gpa_map(v->opaque, r->gpa, 1, &m);
            if (m.kind != LC_GPA_RAM || m.hva == NULL || m.span < 1 ||
                m.readonly || m.traced)
                return M_TERM;
            r->hva = m.hva;
        }
    }
    if (v->probe == LCR_PROBE_PEEK)
        return M_OK;
    /* Root first, as the CPU walks: an entry changed since the walk ends
     * it there (the upper entries' A bits set stay set, as on the CPU,
     * which sets them for entries it used before a fault) */
    for (unsigned i = 0; i < nw; i++)
        for (unsigned j = 0; j < w[i].nref; j++)
            if (!set_entry_bits(w[i].ref[j].hva, w[i].ref[j].size,
                                w[i].ref[j].old, w[i].ref[j].set))
                return M_TERM;
    return M_OK;
}

static int mres_stop(lcr_vcpu *v, mres r, uint64_t la)
{
    switch (r) {
    case M_PF:
        v->fault_addr = la;
        return stop_fault(v, LC_VEC_PF);
    case M_GP:
        return stop_fault(v, LC_VEC_GP);
    default:
        return stop_term(v);
    }
}

/* In IA-32e mode a linear address reaching paging is canonical (segment
 * checks guarantee it); outside it linear addresses are 32 bits and wrap
 * (SDM 3.3, 4.1). Returns 0 if `la`..`la+len-1` is unusable. */
static int la_range_ok(const lcr_vcpu *v, uint64_t la, unsigned len)
{
    if (!long_mode_active(v))
        return la <= LA32_MASK;
    return lcr_canonical_range_v(v, la, len);
}

/* LCR_ACC_PLAIN's test: RAM, and for a store not a traced page. */
static int frag_plain(const lcr_frag *f, unsigned access)
{
    return f->kind == LC_GPA_RAM &&
           !((access & LCR_ACC_WRITE) && f->traced);
}

int lcr_xlat_plain(const lcr_xlat *x)
{
    for (unsigned i = 0; i < x->nfrag; i++)
        if (!frag_plain(&x->frag[i], x->access))
            return 0;
    return 1;
}

/* The cache's entry for linear page `lpn` (any epoch), or NULL. */
static inline lcr_pwc_ent *pwc_find(const lcr_pwc *p, uint64_t lpn)
{
    for (unsigned i = 0; i < p->nslot; i++)
        if (p->e[i].lpn == lpn)
            return (lcr_pwc_ent *)&p->e[i];
    return NULL;
}

/* ---- the page-walk cache (section 11 of the paper; rt.h) -------------- */

static int pwc_state_ok(const lcr_vcpu *v)
{
    const lcr_pwc *p = &v->pwc;
    const lc_cpu_state *st = v->st;

    return p->cr3 == st->cr3 && p->cr0 == st->cr0 && p->cr4 == st->cr4 &&
           p->efer == st->efer && p->cpl == v->cpl &&
           p->ac == ((st->rflags & LC_RFLAGS_AC) != 0);
}

/* Does frame `gfn` hold a paging-structure entry a cached walk read? */
static int pwc_is_pt(const lcr_pwc *p, uint64_t gfn)
{
    if (!(p->ptmask & (1ull << (gfn & 63))))
        return 0;
    for (unsigned i = 0; i < p->npt; i++)
        if (p->pt_gfn[i] == gfn)
            return 1;
    return 0;
}

/* What lcr_pwc_ram() may serve from entry `e` (current epoch) without
 * asking anything else (LCR_PWC_FAST_*). */
static uint8_t pwc_fast(const lcr_pwc *p, const lcr_pwc_ent *e)
{
    uint8_t f = 0;

    if (!e->mapped)
        return 0;
    if (e->ok & LCR_ACC_READ)
        f |= LCR_PWC_FAST_R;
    if ((e->ok & LCR_ACC_WRITE) && e->dirty && e->mapped == 2 &&
        !e->readonly && !e->traced && !pwc_is_pt(p, e->gpa >> 12))
        f |= LCR_PWC_FAST_W;
    return f;
}

/* A store is about to go to `gpa`: if a cached walk read an entry in its
 * frame, the walk may no longer be what the tables say (the guest edits
 * its own page tables): forget them all. */
static void pwc_store(lcr_vcpu *v, uint64_t gpa)
{
    if (v->pwc.npt && pwc_is_pt(&v->pwc, gpa >> 12))
        lcr_pwc_drop(v);
}

/* An entry of an earlier epoch (the guest ran since, or the VMM: see
 * lcr_vmm_ran()): usable again if the guest-physical map is the same and
 * every paging entry its walk read still holds what it did after the
 * walk (then a walk now would find the same page, rights and D bit, and
 * set no A/D bit: SDM 4.8). The VMM's answer for the data page is kept
 * while the flush generation holds, asked again without one. Its
 * page-table frames are watched already (pwc_fill: the watch outlives
 * the epoch). Every case; pwc_revalidate() takes the common one inline. */
static __attribute__((noinline))
int pwc_revalidate_any(lcr_vcpu *v, lcr_pwc_ent *e)
{
    lcr_pwc *p = &v->pwc;

    if (v->flush_gen &&
        __atomic_load_n(v->flush_gen, __ATOMIC_ACQUIRE) != p->gen) {
        lcr_pwc_drop(v);
        return 0;
    }
    if (e->e8) {
        if (!entries_hold8(e->ehva, e->eval, e->nent))
            return 0;
    } else {
        for (unsigned i = 0; i < e->nent; i++)
            if (load_entry(e->ehva[i], e->esize) != e->eval[i])
                return 0;
    }
    e->epoch = p->epoch;
    /* The VMM's answer for the data page stays while the flush generation
     * holds: lc_vm_ops.gpa_map's contract asks for lc_engine_flush() on
     * every change of what it answers, tracing included (as KVM's
     * gfn_to_hva_cache keeps its host address while the memslots'
     * generation holds). Without a generation (a runtime used on its
     * own) it is asked again. */
    if (!v->flush_gen) {
        e->mapped = 0;
        e->fast = 0;
        lcr_pwc_tlb_forget(p);
    }
    p->n++;
    return 1;
}

/* pwc_revalidate_any() where the flush generation is there and holds and
 * the entries are 8 bytes each (4-level, 5-level and PAE paging; the
 * engine's runtime): the read-back alone, without the other cases'
 * registers in the caller's frame. lcr_pwc_tlb_revive() has its own copy
 * of this and pwc_current() for its common case, tests before stores:
 * a condition added here goes there too. */
static inline __attribute__((always_inline))
int pwc_revalidate(lcr_vcpu *v, lcr_pwc_ent *e)
{
    lcr_pwc *p = &v->pwc;

    if (__builtin_expect(!v->flush_gen || !e->e8 ||
                         __atomic_load_n(v->flush_gen, __ATOMIC_ACQUIRE) !=
                             p->gen, 0))
        return pwc_revalidate_any(v, e);
    if (!entries_hold8(e->ehva, e->eval, e->nent))
        return 0;
    e->epoch = p->epoch;
    p->n++;
    return 1;
}

/* Is entry `e` usable in this epoch? The paging state compared once per
 * epoch (state_known); on its first use in the epoch the entry
 * revalidated: its paging entries read back (the VMM's answer is kept
 * while the flush generation holds). */
static inline __attribute__((always_inline))
int pwc_current(lcr_vcpu *v, lcr_pwc_ent *e)
{
    lcr_pwc *p = &v->pwc;

    if (!p->state_known) {
        if (!pwc_state_ok(v))
            return 0;
        p->state_known = 1;
    }
    return e->epoch == p->epoch || pwc_revalidate(v, e);
}

/* Keep the VMM's gpa_map answer `m` for the RAM fragment `f` in entry `e`
 * (up to the end of its page), good for reads, and for writes too if `wr`
 * (the VMM was asked with is_write). */
static void pwc_keep_map(lcr_pwc_ent *e, const lcr_frag *f,
                         const lc_gpa_map *m, unsigned wr)
{
    uint64_t end = (f->gpa | PAGE_MASK) + 1;

    e->map_lo = f->gpa;
    e->map_hi = m->span < end - f->gpa ? f->gpa + m->span : end;
    e->map_hva = m->hva;
    e->mapped = (uint8_t)(1 + wr);
    e->traced = f->traced;
    e->readonly = m->readonly != 0;
}

/* The translation of an access within one page from the cache: 1 done
 * (x filled), 0 not cached (walk), -1 stopped (the VMM's answer for the
 * data page refuses it, exactly as after a walk). */
static inline __attribute__((always_inline))
int pwc_lookup(lcr_vcpu *v, uint64_t la, unsigned len,
                      unsigned access, lcr_xlat *x)
{
    lcr_pwc *p = &v->pwc;
    uint64_t lpn = la >> 12, gpa;
    unsigned need = access & (LCR_ACC_READ | LCR_ACC_WRITE);
    unsigned wr = (access & LCR_ACC_WRITE) != 0;
    lcr_pwc_ent *e = pwc_find(p, lpn);
    lcr_frag *f = &x->frag[0];

    if (!e)
        return 0;
    if (!pwc_state_ok(v)) {
        lcr_pwc_drop(v);
        return 0;
    }
    if (e->epoch != p->epoch && !pwc_revalidate(v, e))
        return 0;
    /* Anything a walk would have to decide afresh walks: rights the
     * entry does not grant (the walk finds the fault), a write with D
     * still clear (the walk sets it), a store into a page table. */
    if ((e->ok & need) != need || (wr && !e->dirty))
        return 0;
    gpa = e->gpa | (la & PAGE_MASK);
    if (wr && p->npt && pwc_is_pt(p, gpa >> 12))
        return 0;
    if (!v->route && e->mapped > wr && gpa >= e->map_lo &&
        gpa + len <= e->map_hi && !(wr && e->readonly)) {
        f->gpa = gpa;
        f->hva = e->map_hva + (gpa - e->map_lo);
        f->len = len;
        f->kind = LC_GPA_RAM;
        f->traced = e->traced;
    } else {
        lc_gpa_map m;
        mres r = map_frag_m(v, gpa, len, access, f, &m);

        if (r != M_OK)
            return mres_stop(v, r, la);
        if (f->kind == LC_GPA_RAM && !v->route) {
            /* a new answer, for another part of the page maybe: the TLB
             * is made again from the entry (lcr_pwc_tlb) */
            lcr_pwc_tlb_forget(p);
            pwc_keep_map(e, f, &m, wr);
            e->fast = pwc_fast(p, e);
        }
    }
    if ((access & LCR_ACC_PLAIN) && !frag_plain(f, access))
        return stop_term(v);
    x->la = la;
    x->len = len;
    x->access = (uint8_t)access;
    x->nfrag = 1;
    memset(&x->frag[1], 0, sizeof(x->frag[1]));
    v->pwc_hits++;
    return 1;
}

/* Entry `e` answers for linear page `la` as plain RAM in this epoch,
 * from map_lo to map_hi, for a store if `wr` (lcr_pwc_tlb). `la` is
 * canonical (lcr_pwc_ram()'s contract), so a hit in 64-bit mode in the
 * same epoch and paging state stands for the canonical check (ram_fast(),
 * exec.c); checking it here again cost 20 instructions a fill. */
static void pwc_tlb_fill(lcr_vcpu *v, unsigned wr, uint64_t la,
                         const lcr_pwc_ent *e)
{
    lcr_pwc_tlb *t = &v->pwc.tlb[wr];

    t->lpn = la >> 12;
    t->epoch = v->pwc.epoch;
    t->lo = (uint32_t)(e->map_lo & PAGE_MASK);
    t->hi = (uint32_t)(e->map_hi - e->gpa);
    t->hva = e->map_hva;
    t->watch = v->watching;
    t->slot = (uint8_t)(e - v->pwc.e);
    t->pair = 0;
    t->serial = ++v->pwc.tlb_fills;
    v->pwc.tlb[!wr].pair = 0;
}

/* lcr_pwc_tlb_revive() in every case: the paging state and the entry
 * through pwc_current(). */
static __attribute__((noinline))
int pwc_tlb_revive_any(lcr_vcpu *v, unsigned wr)
{
    lcr_pwc *p = &v->pwc;
    lcr_pwc_tlb *t = &p->tlb[wr];

    /* While the page is held, the entry it was made from is the one it
     * was made from (lcr_pwc_tlb: every change of an entry forgets the
     * TLB first), so it answers for the same page as fast as it did,
     * once current again. A failed revalidation may drop everything, the
     * TLB with it; a revalidation without a flush generation forgets the
     * TLB (the VMM is asked again). */
    if (!pwc_current(v, &p->e[t->slot]) || t->lpn == LCR_PWC_NO_PAGE)
        return 0;
    t->epoch = p->epoch;
    /* The other direction's page made with it: a port accessor's RET
     * reads the slot its CALL wrote after the device ran (nothing
     * forwarded), and would revive it alone. */
    if (t->pair)
        p->tlb[!wr].epoch = p->epoch;
    return 1;
}

/* The common renewal, a run's first access to the page the run before
 * used: the paging state to compare, an entry of an earlier epoch, the
 * flush generation unchanged, 8-byte paging entries to read back. The
 * same work as pwc_tlb_revive_any() for that case, with every test made
 * before the first store (the stores are of bytes, which the compiler
 * must assume alias the entry and the TLB page: it loaded them again),
 * every other case a tail call. */
int lcr_pwc_tlb_revive(lcr_vcpu *v, unsigned wr)
{
    lcr_pwc *p = &v->pwc;
    lcr_pwc_tlb *t = &p->tlb[wr];
    lcr_pwc_ent *e = &p->e[t->slot];
    uint64_t epoch = p->epoch;

    if (__builtin_expect(p->state_known || e->epoch == epoch ||
                         t->lpn == LCR_PWC_NO_PAGE || !v->flush_gen ||
                         !e->e8 ||
                         __atomic_load_n(v->flush_gen, __ATOMIC_ACQUIRE) !=
                             p->gen, 0))
        return pwc_tlb_revive_any(v, wr);
    if (!pwc_state_ok(v) || !entries_hold8(e->ehva, e->eval, e->nent))
        return 0;
    e->epoch = epoch;
    t->epoch = epoch;
    if (t->pair)
        p->tlb[!wr].epoch = epoch;
    p->state_known = 1;
    p->n++;
    return 1;
}

uint8_t *lcr_pwc_ram(lcr_vcpu *v, uint64_t la, unsigned len, unsigned access)
{
    lcr_pwc *p = &v->pwc;
    unsigned wr = access == LCR_ACC_WRITE;
    lcr_pwc_ent *e = NULL;
    uint64_t gpa;

    if (v->route || len - 1u >= 8 ||
        (access != LCR_ACC_READ && access != LCR_ACC_WRITE))
        return NULL;
    if (!long_mode_active(v))
        la &= LA32_MASK;
    if ((la & PAGE_MASK) + len > PAGE_SIZE)
        return NULL;
    e = pwc_find(p, la >> 12);
    if (!e || !pwc_current(v, e))
        return NULL;
    if (!(e->fast & (wr ? LCR_PWC_FAST_W : LCR_PWC_FAST_R))) {
        /* No answer from the VMM for this access yet (the first store, or
         * no generation to keep one by), or one of the cases below: what
         * lcr_translate() would do, once. A stop it finds is found again
         * by the full path. */
        lcr_xlat x;
        int h = pwc_lookup(v, la, len, access, &x);

        if (h <= 0) {
            if (h < 0)
                lcr_stop_forget(v);
            return NULL;
        }
        v->pwc_hits--;          /* counted below */
        /* Exactly the cases pwc_lookup() serves from this epoch's entry
         * and the VMM's answer it keeps (it may have dropped everything:
         * then the epoch moved); a store also must not need anything
         * lcr_write() does besides storing: no traced page, no page
         * table (pwc_fast() says). */
        if (e->epoch != p->epoch ||
            !(e->fast & (wr ? LCR_PWC_FAST_W : LCR_PWC_FAST_R)))
            return NULL;
    }
    gpa = e->gpa | (la & PAGE_MASK);
    if (gpa < e->map_lo || gpa + len > e->map_hi)
        return NULL;
    /* nor watched code bytes (the watch covers the bytes the translation
     * runs); a page with none of them in the part the VMM vouched for
     * goes into the TLB for stores, and for loads too (a writable page
     * is readable: FAST_R) */
    if (!wr || !lcr_watched(v, e->map_lo, (unsigned)(e->map_hi - e->map_lo))) {
        if (wr)
            pwc_tlb_fill(v, 1, la, e);
        if (e->fast & LCR_PWC_FAST_R)
            pwc_tlb_fill(v, 0, la, e);
        if (wr && (e->fast & LCR_PWC_FAST_R))
            p->tlb[0].pair = p->tlb[1].pair = 1;
    } else if (wr && lcr_watched(v, gpa, len)) {
        return NULL;
    }
    v->pwc_hits++;
    return e->map_hva + (gpa - e->map_lo);
}

int lcr_pwc_peek(const lcr_vcpu *v, uint64_t la, unsigned len,
                 uint64_t *val)
{
    const lcr_pwc *p = &v->pwc;
    const lcr_pwc_ent *e = NULL;
    uint64_t lpn, gpa;
    uint8_t b[8] = { 0 };

    if (!p->nslot || v->route || len - 1u >= 8 || !pwc_state_ok(v))
        return 0;
    /* The hosts of the kept answers are valid until the guest-physical
     * map changes (lc_vm_ops.gpa_map's contract): not after a flush. */
    if (v->flush_gen &&
        __atomic_load_n(v->flush_gen, __ATOMIC_ACQUIRE) != p->gen)
        return 0;
    if (!long_mode_active(v))
        la &= LA32_MASK;
    if ((la & PAGE_MASK) + len > PAGE_SIZE)
        return 0;
    lpn = la >> 12;
    e = pwc_find(p, lpn);
    if (!e || !e->mapped || !(e->ok & LCR_ACC_READ))
        return 0;
    gpa = e->gpa | (la & PAGE_MASK);
    if (gpa < e->map_lo || gpa + len > e->map_hi)
        return 0;
    lcr_ram_read(b, e->map_hva + (gpa - e->map_lo), len);
    memcpy(val, b, sizeof b);
    return 1;
}

/* Which data accesses (LCR_ACC_READ, LCR_ACC_WRITE) the rights a walk
 * found allow in context `c`: pg_rights() for a read and for a write,
 * in one pass (a read-modify-write needs both). */
static uint8_t pg_data_rights(const pgctx *c, const walk *w)
{
    uint8_t ok = LCR_ACC_READ | LCR_ACC_WRITE;

    if (c->mode == PG_NONE)
        return ok;
    if (c->user) {
        if (!w->user_addr)
            return 0;
        if (!w->writable)
            ok = LCR_ACC_READ;
    } else {
        if (w->user_addr && c->smap && !c->ac)
            return 0;
        if (!w->writable && c->wp)
            ok = LCR_ACC_READ;
    }
    if ((c->mode == PG_4L || c->mode == PG_5L) &&
        ((w->user_addr && c->pke) || (!w->user_addr && c->pks)))
        return 0;               /* protection keys: the CPU decides */
    return ok;
}

/* Watch the frames of walk `w`'s paging entries (pt_gfn). 0 if they do
 * not all fit. */
static int pwc_watch_walk(lcr_pwc *p, const walk *w)
{
    for (unsigned i = 0; i < w->npt; i++) {
        uint64_t g = w->pt_gfn[i];

        if (pwc_is_pt(p, g))
            continue;
        if (p->npt == LCR_PWC_PT)
            return 0;
        p->pt_gfn[p->npt++] = g;
        p->ptmask |= 1ull << (g & 63);
        /* a data page that now holds a watched table: stores test it */
        for (unsigned k = 0; k < p->nslot; k++)
            if (p->e[k].gpa >> 12 == g)
                p->e[k].fast &= (uint8_t)~LCR_PWC_FAST_W;
    }
    return 1;
}

/* Remember a walk that just succeeded (its A/D bits committed) for the
 * rest of the run. `f`, `m`: the data fragment and the VMM's answer. */
static void pwc_fill(lcr_vcpu *v, const pgctx *c, uint64_t la, const walk *w,
                     const lcr_frag *f, const lc_gpa_map *m)
{
    lcr_pwc *p = &v->pwc;
    const lc_cpu_state *st = v->st;
    unsigned wr = (c->access & LCR_ACC_WRITE) != 0, i;
    lcr_pwc_ent *e = NULL;

    /* The walk may replace an entry or watch a new page table: the TLB
     * is made again from what lcr_pwc_ram() serves next. */
    lcr_pwc_tlb_forget(p);
    if (p->nslot && !pwc_state_ok(v))
        lcr_pwc_drop(v);
    if (!p->nslot) {
        p->gen = v->flush_gen ? __atomic_load_n(v->flush_gen,
                                                __ATOMIC_ACQUIRE) : 0;
        p->cr0 = st->cr0;
        p->cr3 = st->cr3;
        p->cr4 = st->cr4;
        p->efer = st->efer;
        p->cpl = v->cpl;
        p->ac = (st->rflags & LC_RFLAGS_AC) != 0;
    }
    /* A store into one of its own page tables (self-mapped tables): the
     * store follows this translation, so the walk would go stale at once
     * (an atomic XCHG stores without lcr_write()). */
    for (i = 0; i < w->npt; i++)
        if (wr && w->pt_gfn[i] == w->gpa >> 12)
            return;
    if (!pwc_watch_walk(p, w)) {
        /* The watch is full of frames of entries replaced since: start
         * again from this walk (every entry held must be watched). */
        lcr_pwc_drop(v);
        pwc_fill(v, c, la, w, f, m);
        return;
    }
    e = pwc_find(p, la >> 12);
    if (!e) {
        if (p->nslot < LCR_PWC_ENTRIES) {
            e = &p->e[p->nslot++];
            e->epoch = p->epoch - 1;
        } else {
            e = &p->e[p->next];
            p->next = (uint8_t)((p->next + 1) % LCR_PWC_ENTRIES);
        }
    }
    if (e->epoch != p->epoch)
        p->n++;
    e->epoch = p->epoch;
    e->nent = (uint8_t)w->npt;
    e->esize = c->mode == PG_32 ? 4 : 8;
    e->e8 = e->esize == 8;
    e->ngfn = 0;
    for (i = 0; i < w->npt; i++) {
        unsigned k = 0;

        if ((uintptr_t)w->ehva[i] & 7)
            e->e8 = 0;
        e->ehva[i] = w->ehva[i];
        e->eval[i] = w->eval[i];
        while (k < e->ngfn && e->egfn[k] != w->pt_gfn[i])
            k++;
        if (k == e->ngfn)
            e->egfn[e->ngfn++] = w->pt_gfn[i];
    }
    e->lpn = la >> 12;
    e->gpa = w->gpa & ~PAGE_MASK;
    e->ok = pg_data_rights(c, w);
    /* Every entry of the walk has A set now; D is set if it was, or if
     * this access was a write (commit_ad() just set it). */
    e->dirty = (uint8_t)(w->dirty || wr);
    e->mapped = 0;
    if (f->kind == LC_GPA_RAM && !v->route && m->kind == LC_GPA_RAM)
        pwc_keep_map(e, f, m, wr);
    e->fast = pwc_fast(p, e);
}

int lcr_translate(lcr_vcpu *v, uint64_t la, unsigned len, unsigned access,
                  lcr_xlat *x)
{
    uint64_t fla[2];
    unsigned flen[2], nfrag, i;
    lc_gpa_map m;
    walk w[2];
    pgctx c;
    mres r;

    if (!long_mode_active(v))
        la &= LA32_MASK;
    if ((access & LCR_ACC_LOCKED) && (la & (len - 1u)))
        return stop_term(v);        /* a split lock: the CPU's */
    /* Section 11: a page this run has walked already. Only plain data
     * accesses within one page (a fetch records its walk, an implicit
     * access has other rights, a page-crossing access is two walks); a
     * cached page passed every check below when it was walked, and they
     * hold for any access inside it. */
    if (v->pwc.nslot && len - 1u < LC_INSN_MAX_LEN &&
        (access & (LCR_ACC_READ | LCR_ACC_WRITE)) &&
        !(access & ~(unsigned)(LCR_ACC_READ | LCR_ACC_WRITE |
                               LCR_ACC_PLAIN | LCR_ACC_LOCKED)) &&
        (la & PAGE_MASK) + len <= PAGE_SIZE) {
        int h = pwc_lookup(v, la, len, access, x);

        if (h > 0)
            return 0;
        if (h < 0) {
            x->nfrag = 0;
            return -1;
        }
    }
    memset(x, 0, sizeof(*x));
    if (len == 0 || len > LC_INSN_MAX_LEN ||
        !(access & (LCR_ACC_READ | LCR_ACC_WRITE | LCR_ACC_FETCH)))
        return stop_term(v);        /* caller bug: refuse, never guess */
    /* Defence in depth: lcr_linear() has already checked canonicality;
     * a caller that skipped it gets a #GP stop rather than an aliased
     * walk. */
    if (!la_range_ok(v, la, len))
        return stop_fault(v, LC_VEC_GP);
    /* Compatibility mode forms 32-bit linear addresses, zero-extended
     * (SDM 3.4.2.1 / vol. 1 3.3.7). Whether an access whose bytes cross
     * 4 GiB there wraps is not something the SDM pins down, so stop. An
     * implicit access to a system table (GDT, LDT, TSS) is not segment-
     * relative: its base is 64-bit in IA-32e mode, whatever CS says. */
    if (long_mode_active(v) && v->mode != LC_MODE_LONG64 &&
        !(access & LCR_ACC_IMPLICIT) && la + len - 1 > LA32_MASK)
        return stop_term(v);

    x->la = la;
    x->len = len;
    x->access = (uint8_t)access;

    r = pg_setup(v, access, &c);
    if (r != M_OK)
        return mres_stop(v, r, la);

    /* An access crossing a 4 KiB boundary is two translations (SDM 4.1:
     * each page is translated separately). A 32-bit linear address wraps
     * at 4 GiB. */
    flen[0] = PAGE_SIZE - (unsigned)(la & PAGE_MASK);
    if (flen[0] > len)
        flen[0] = len;
    flen[1] = len - flen[0];
    fla[0] = la;
    fla[1] = la + flen[0];
    if (!long_mode_active(v))
        fla[1] &= LA32_MASK;
    nfrag = flen[1] ? 2 : 1;

    /* Phase 1: all checks of all fragments, no side effects. The first
     * fragment's fault wins; a fault on the second page reports the first
     * byte of that page. */
    for (i = 0; i < nfrag; i++) {
        r = pg_walk(&c, fla[i], &w[i]);
        if (r != M_OK)
            return mres_stop(v, r, fla[i]);
    }
    for (i = 0; i < nfrag; i++) {
        r = map_frag_m(v, w[i].gpa, flen[i], access, &x->frag[i], &m);
        if (r != M_OK)
            return mres_stop(v, r, fla[i]);
        if ((access & LCR_ACC_PLAIN) && !frag_plain(&x->frag[i], access))
            return stop_term(v);
    }
    /* Phase 2: A/D bits, only now that the translation succeeds. */
    r = commit_ad(v, w, nfrag);
    if (r != M_OK)
        return mres_stop(v, r, la);
    x->nfrag = (uint8_t)nfrag;
    /* A peek set no A/D bits: the cache, whose entries say the walk's
     * bits are set, must not remember it. */
    if (v->probe == LCR_PROBE_PEEK)
        return 0;
    /* A store to a page table the cache walked through makes its walks
     * stale; then remember this walk (section 11). */
    if (access & LCR_ACC_WRITE)
        for (i = 0; i < nfrag; i++)
            pwc_store(v, x->frag[i].gpa);
    if (nfrag == 1 && !(access & (LCR_ACC_FETCH | LCR_ACC_IMPLICIT)) &&
        !v->rec)
        pwc_fill(v, &c, la, &w[0], &x->frag[0], &m);
    return 0;
}

/* ---- reads and writes --------------------------------------------------- */

/* Largest natural MMIO size (1, 2, 4, 8) not above `n`: a fragment of
 * another length is delivered as such pieces in address order, since
 * lc_vm_ops promises callbacks only those sizes (ops.h, NOTES). */
static unsigned piece_len(unsigned n)
{
    return n >= 8 ? 8 : n >= 4 ? 4 : n >= 2 ? 2 : 1;
}

static int cb_result(lcr_vcpu *v, lc_cb_result r)
{
    lcr_vmm_ran(v);         /* guest memory, even its map, may differ */
    if (r == LC_CB_OK)
        return 0;
    v->stop = LC_STOP_CALLBACK;
    if (r != LC_CB_STOP)        /* LC_CB_ERROR, or a value out of range */
        v->error = LC_ERR_CALLBACK;
    return -1;
}

/* A translation handed back to us must be one lcr_translate() made. */
static int xlat_sane(const lcr_xlat *x)
{
    unsigned total = 0;

    if (x->nfrag < 1 || x->nfrag > 2)
        return 0;
    for (unsigned i = 0; i < x->nfrag; i++) {
        const lcr_frag *f = &x->frag[i];

        if (f->len == 0 || f->len > PAGE_SIZE)
            return 0;
        if (f->kind == LC_GPA_RAM && f->hva == NULL)
            return 0;
        if (f->kind != LC_GPA_RAM && f->kind != LC_GPA_MMIO)
            return 0;
        total += f->len;
    }
    return total == x->len;
}

/* One MMIO fragment: a read into `rd`, or a write from `wr`. */
static int mmio_frag(lcr_vcpu *v, const lcr_frag *f, uint8_t *rd,
                     const uint8_t *wr)
{
    int is_write = wr != NULL;

    for (unsigned off = 0; off < f->len;) {
        unsigned n = piece_len(f->len - off);
        uint64_t val = 0;   /* zeroed before a read (ops.h, NOTES) */

        if (is_write)
            memcpy(&val, wr + off, n);
        if (cb_result(v, v->ops->mmio(v->opaque, f->gpa + off, (uint8_t)n,
                                      is_write, &val)) < 0)
            return -1;
        if (!is_write)
            memcpy(rd + off, &val, n);
        off += n;
    }
    return 0;
}

static int traced_frag(lcr_vcpu *v, const lcr_frag *f, const uint8_t *buf)
{
    for (unsigned off = 0; off < f->len;) {
        unsigned n = piece_len(f->len - off);

        if (cb_result(v, v->ops->traced_write(v->opaque, f->gpa + off,
                                              buf + off, (uint8_t)n)) < 0)
            return -1;
        off += n;
    }
    return 0;
}

/* The common access: one fragment of RAM, 1, 2, 4 or 8 bytes, naturally
 * aligned: one relaxed atomic move (see lcr_ram_read: another vCPU may
 * store to the same guest RAM at the same time). 0: take the general
 * path. */
static int load_small(void *dst, const uint8_t *p, unsigned len)
{
    uint64_t v;

    if (len > 8 || (len & (len - 1)) || ((uintptr_t)p & (len - 1)))
        return 0;
    switch (len) {
    case 8: v = __atomic_load_n((const uint64_t *)p, __ATOMIC_RELAXED); break;
    case 4: v = __atomic_load_n((const uint32_t *)p, __ATOMIC_RELAXED); break;
    case 2: v = __atomic_load_n((const uint16_t *)p, __ATOMIC_RELAXED); break;
    default: v = __atomic_load_n(p, __ATOMIC_RELAXED); break;
    }
    memcpy(dst, &v, len);           /* little endian host */
    return 1;
}

int lcr_read(lcr_vcpu *v, const lcr_xlat *x, void *buf)
{
    uint8_t *out = buf;
    unsigned off = 0, i;

    if (x->nfrag == 1 && x->frag[0].kind == LC_GPA_RAM && x->frag[0].hva &&
        x->frag[0].len == x->len && load_small(buf, x->frag[0].hva, x->len))
        return 0;

    if (!xlat_sane(x))
        return stop_term(v);
    /* Preconditions of every fragment before the first access, so a
     * missing callback never leaves half a read done (a device read can
     * have side effects). */
    for (i = 0; i < x->nfrag; i++)
        if (x->frag[i].kind == LC_GPA_MMIO && v->ops->mmio == NULL)
            return stop_term(v);
    for (i = 0; i < x->nfrag; i++) {
        const lcr_frag *f = &x->frag[i];

        if (f->kind == LC_GPA_RAM)
            lcr_ram_read(out + off, f->hva, f->len);
        else if (mmio_frag(v, f, out + off, NULL) < 0)
            return -1;
        off += f->len;
    }
    return 0;
}

int lcr_watched(const lcr_vcpu *v, uint64_t gpa, unsigned len)
{
    const lcr_watch *w = v->watching;
    unsigned off = (unsigned)(gpa & 0xfff), n;

    if (!w)
        return 0;
    n = w->n < LCR_WATCH_MAX ? w->n : LCR_WATCH_MAX;
    for (unsigned i = 0; i < n; i++)
        if (w->gfn[i] == gpa >> 12 &&
            (!w->bytes || (off < w->hi[i] && off + len > w->lo[i])))
            return 1;
    return 0;
}

__attribute__((cold, noinline)) void lcr_pwc_drop_cold(lcr_vcpu *v)
{
    lcr_pwc_drop(v);
}

int lcr_write_byte_if(lcr_vcpu *v, const lcr_xlat *x, uint8_t old,
                      uint8_t val)
{
    const lcr_frag *f = &x->frag[0];
    uint8_t cur = old;

    if (x->nfrag != 1 || x->len != 1 || f->kind != LC_GPA_RAM || !f->hva ||
        f->traced || !(x->access & LCR_ACC_WRITE))
        return lcr_write(v, x, &val);
    if (!__atomic_compare_exchange_n(f->hva, &cur, val, 0, __ATOMIC_SEQ_CST,
                                     __ATOMIC_SEQ_CST) && cur != val)
        return stop_term(v);
    pwc_store(v, f->gpa);
    if (lcr_watched(v, f->gpa, 1))
        v->end_after = LC_STOP_SMC;
    return 0;
}

int lcr_write(lcr_vcpu *v, const lcr_xlat *x, const void *buf)
{
    const uint8_t *in = buf;
    unsigned off = 0, i;

    /* A translation made without LCR_ACC_WRITE did not check R/W, did not
     * set D and did not refuse ROM: writing through it would be wrong. */
    if (x->nfrag == 1 && x->frag[0].kind == LC_GPA_RAM && x->frag[0].hva &&
        !x->frag[0].traced && x->frag[0].len == x->len &&
        (x->access & LCR_ACC_WRITE) && (x->len & (x->len - 1)) == 0 &&
        x->len <= 8) {
        pwc_store(v, x->frag[0].gpa);   /* the guest edits a page table */
        lcr_ram_write(x->frag[0].hva, in, x->len);
        if (lcr_watched(v, x->frag[0].gpa, x->len))
            v->end_after = LC_STOP_SMC;
        return 0;
    }
    if (!xlat_sane(x) || !(x->access & LCR_ACC_WRITE))
        return stop_term(v);
    /* All preconditions first: a NULL callback needed by the second
     * fragment must not leave the first one written (rt.h contract). */
    for (i = 0; i < x->nfrag; i++) {
        const lcr_frag *f = &x->frag[i];

        if (f->kind == LC_GPA_MMIO && v->ops->mmio == NULL)
            return stop_term(v);
        if (f->kind == LC_GPA_RAM && f->traced &&
            v->ops->traced_write == NULL)
            return stop_term(v);
    }
    /* The VMM's pieces (MMIO, a traced page) first, in order, then the
     * plain RAM: a callback may refuse (LC_CB_STOP) its first piece, and a
     * store split across a page boundary must then leave nothing written,
     * as the CPU's exit on it does (ops.h: a device refuses an
     * instruction at its first access or not at all). */
    for (int ram = 0; ram < 2; ram++) {
        off = 0;
        for (i = 0; i < x->nfrag; i++) {
            const lcr_frag *f = &x->frag[i];
            int plain = f->kind == LC_GPA_RAM && !f->traced, r = 0;

            if (plain != ram) {
                off += f->len;
                continue;
            }
            if (f->kind == LC_GPA_MMIO) {
                r = mmio_frag(v, f, NULL, in + off);
            } else {
                pwc_store(v, f->gpa);   /* the guest edits a page table */
                if (f->traced)
                    r = traced_frag(v, f, in + off);
                else
                    lcr_ram_write(f->hva, in + off, f->len);
            }
            if (r < 0)
                return -1;
            /* Section 7 of the paper: a store into the code being run
             * completes, then the run stops. */
            if (lcr_watched(v, f->gpa, f->len))
                v->end_after = LC_STOP_SMC;
            off += f->len;
        }
    }
    return 0;
}

/* ---- instruction fetch -------------------------------------------------- */

/* How many of `max` bytes at CS:RIP segmentation lets us fetch, and the
 * linear address of the first. Same rules as lcr_linear() for CS with
 * LCR_ACC_FETCH, except that a violation shortens the fetch instead of
 * stopping: the bytes before it may still form a whole instruction. */
static size_t fetch_linear(const lcr_vcpu *v, uint64_t ea, size_t max,
                           uint64_t *la)
{
    const lc_segment *cs = &v->st->seg[LC_CS];
    size_t n;

    switch (v->mode) {
    case LC_MODE_LONG64: {
        /* No limit; each byte must be canonical (SDM vol. 1 3.3.7.1): the
         * fetch stops at the end of the canonical half it starts in. */
        unsigned bits = lcr_la_bits(v);
        uint64_t room;

        if (!lcr_canonical(ea, bits))
            return 0;
        room = (ea >> (bits - 1)) ? 0 - ea              /* up to 2^64 */
                                  : (1ull << (bits - 1)) - ea;
        n = room && room < max ? (size_t)room : max;
        *la = ea;
        return n;
    }
    case LC_MODE_PROT16:
    case LC_MODE_PROT32:
    case LC_MODE_COMPAT16:
    case LC_MODE_COMPAT32:
        if (cs->unusable || !cs->present ||
            !seg_type_ok(cs, LCR_ACC_FETCH))
            return 0;
        break;
    case LC_MODE_REAL:
    case LC_MODE_VM86:
        /* No type checks (SDM "Real-Address Mode"). A code segment still
         * 32-bit from protected mode (CR0.PE just cleared, CS not yet
         * reloaded: SDM vol. 3, "Switching Back to Real-Address Mode")
         * runs with 32-bit defaults, which the real mode the decoder
         * knows does not have: nothing is fetched, so nothing runs.
         * Virtual-8086 mode's CS is 16-bit whatever its attributes. */
        if (v->mode == LC_MODE_REAL && cs->db)
            return 0;
        break;
    default:
        return 0;
    }
    if (ea > cs->limit)
        return 0;
    n = max;
    if (cs->limit - ea + 1 < n)
        n = (size_t)(cs->limit - ea + 1);
    *la = (cs->base + ea) & LA32_MASK;
    return n;
}

size_t lcr_fetch(lcr_vcpu *v, uint8_t *buf, size_t max, uint64_t gfn[2],
                 unsigned *ngfn)
{
    if (max > LC_INSN_MAX_LEN)
        max = LC_INSN_MAX_LEN;
    return lcr_fetch_at(v, v->st->rip, buf, max, gfn, ngfn);
}

/* CS's attribute bytes type .. avl as one word (the coherency check
 * compares them on every hit: one load, not nine). */
static uint64_t cs_attr_of(const lc_segment *s)
{
    uint64_t a;

    _Static_assert(offsetof(lc_segment, avl) ==
                   offsetof(lc_segment, type) + 7, "lc_segment layout");
    memcpy(&a, (const uint8_t *)s + offsetof(lc_segment, type), sizeof a);
    return a;
}

size_t lcr_fetch_at_rec(lcr_vcpu *v, uint64_t rip, uint8_t *buf, size_t max,
                        uint64_t gfn[2], unsigned *ngfn, lcr_fetch_rec *rec)
{
    size_t got;
    const lc_cpu_state *st = v->st;

    memset(rec, 0, sizeof(*rec));
    rec->valid = 1;
    v->rec = rec;
    got = lcr_fetch_at(v, rip, buf, max, gfn, ngfn);
    v->rec = NULL;
    if (got == 0 || rec->npages != *ngfn)
        rec->valid = 0;
    rec->rip = rip;
    rec->cr0 = st->cr0;
    rec->cr3 = st->cr3;
    rec->cr4 = st->cr4;
    rec->efer = st->efer;
    rec->cs_base = st->seg[LC_CS].base;
    rec->cs_limit = st->seg[LC_CS].limit;
    rec->cs_attr = cs_attr_of(&st->seg[LC_CS]);
    rec->cs_unusable = st->seg[LC_CS].unusable;
    rec->cpl = v->cpl;
    rec->mode = (uint8_t)v->mode;
    rec->e8 = 1;
    for (unsigned i = 0; i < rec->nent; i++)
        if (rec->esize[i] != 8 || ((uintptr_t)rec->ehva[i] & 7))
            rec->e8 = 0;
    return got;
}

size_t lcr_fetch_look_rec(lcr_vcpu *v, uint64_t rip, uint8_t *buf,
                          size_t max, uint64_t gfn[2], unsigned *ngfn,
                          lcr_fetch_rec *rec)
{
    size_t got;

    v->probe = 1;
    got = rec ? lcr_fetch_at_rec(v, rip, buf, max, gfn, ngfn, rec)
              : lcr_fetch_at(v, rip, buf, max, gfn, ngfn);
    v->probe = 0;
    lcr_stop_forget(v);
    return got;
}

unsigned lcr_fetch_page_off(const lcr_fetch_rec *rec)
{
    uint64_t la = rec->mode == LC_MODE_LONG64 ? rec->rip
                                              : rec->cs_base + rec->rip;
    return (unsigned)(la & 0xfff);
}

/* The code bytes a record points at, against `expect`. */
static inline __attribute__((always_inline))
int rec_code_equal(const lcr_fetch_rec *rec, const uint8_t *expect,
                          size_t len)
{
    size_t off = 0;

    if (__builtin_expect(len == 0, 0))
        return 1;               /* lcr_fetch_check_walk() */
    if (__builtin_expect(rec->npages == 1 && rec->code_len[0] >= len, 1))
        return lcr_ram_equal(rec->code[0], expect, len);
    for (unsigned p = 0; p < rec->npages && off < len; p++) {
        size_t n = rec->code_len[p];
        if (n > len - off)
            n = len - off;
        if (!lcr_ram_equal(rec->code[p], expect + off, n))
            return 0;
        off += n;
    }
    return off == len;
}

int lcr_fetch_check(const lcr_vcpu *v, uint64_t rip, const lcr_fetch_rec *rec,
                    const uint8_t *expect, size_t len)
{
    const lc_cpu_state *st = v->st;

    if (!rec->valid || rec->rip != rip || rec->cr0 != st->cr0 ||
        rec->cr3 != st->cr3 || rec->cr4 != st->cr4 ||
        rec->efer != st->efer || rec->cs_base != st->seg[LC_CS].base ||
        rec->cs_limit != st->seg[LC_CS].limit ||
        rec->cs_attr != cs_attr_of(&st->seg[LC_CS]) ||
        rec->cs_unusable != st->seg[LC_CS].unusable || rec->cpl != v->cpl ||
        rec->mode != (uint8_t)v->mode)
        return 0;
    if (rec->e8) {
        if (!entries_hold8(rec->ehva, rec->eval, rec->nent))
            return 0;
    } else {
        for (unsigned i = 0; i < rec->nent; i++)
            if (load_entry(rec->ehva[i], rec->esize[i]) != rec->eval[i])
                return 0;
    }
    return rec_code_equal(rec, expect, len);
}

int lcr_pwc_tlb_stamp(const lcr_vcpu *v, unsigned wr,
                      const lcr_fetch_rec *rec, lcr_tlb_stamp *s)
{
    const lcr_pwc *p = &v->pwc;
    const lcr_pwc_tlb *t = &p->tlb[wr];
    const lcr_pwc_ent *e = &p->e[t->slot];

    s->serial = 0;
    s->n = 0;
    if (!t->serial || !v->flush_gen || !rec->valid || !rec->e8 ||
        !e->e8 || p->cr0 != rec->cr0 ||
        p->cr3 != rec->cr3 || p->cr4 != rec->cr4 ||
        p->efer != rec->efer || p->cpl != rec->cpl)
        return 0;
    for (unsigned i = 0; i < e->nent; i++) {
        unsigned j = 0;

        while (j < rec->nent && (rec->ehva[j] != e->ehva[i] ||
                                 rec->eval[j] != e->eval[i]))
            j++;
        if (j == rec->nent) {
            s->ehva[s->n] = e->ehva[i];
            s->eval[s->n++] = e->eval[i];
        }
    }
    s->wr = (uint8_t)wr;
    s->serial = t->serial;
    return 1;
}

int lcr_fetch_code_equal(const lcr_fetch_rec *rec, const uint8_t *expect,
                         size_t len)
{
    return rec->valid && rec_code_equal(rec, expect, len);
}

int lcr_fetch_same_walk(const lcr_fetch_rec *a, const lcr_fetch_rec *b)
{
    if (!a->valid || !b->valid || a->nent != b->nent ||
        a->cr0 != b->cr0 || a->cr3 != b->cr3 || a->cr4 != b->cr4 ||
        a->efer != b->efer || a->cs_base != b->cs_base ||
        a->cs_attr != b->cs_attr || a->cs_limit != b->cs_limit ||
        a->cs_unusable != b->cs_unusable || a->cpl != b->cpl ||
        a->mode != b->mode)
        return 0;
    for (unsigned i = 0; i < a->nent; i++)
        if (a->ehva[i] != b->ehva[i] || a->eval[i] != b->eval[i] ||
            a->esize[i] != b->esize[i])
            return 0;
    return 1;
}

size_t lcr_fetch_at(lcr_vcpu *v, uint64_t rip, uint8_t *buf, size_t max,
                    uint64_t gfn[2], unsigned *ngfn)
{
    uint64_t la = 0;
    size_t n, got = 0;
    unsigned n0;
    pgctx c;

    *ngfn = 0;
    if (max > LCR_FETCH_MAX)
        max = LCR_FETCH_MAX;
    n = fetch_linear(v, rip, max, &la);
    if (n == 0 || pg_setup(v, LCR_ACC_FETCH, &c) != M_OK)
        return 0;

    /* At most two pages (n <= LCR_FETCH_MAX). Each page is translated and committed
     * on its own: the A bits of a page fetched from are set even if the
     * next page cannot be fetched, as on the CPU. */
    while (got < n && *ngfn < 2) {
        uint64_t pla = la + got;
        size_t chunk;
        lcr_frag f;
        walk w;

        if (!long_mode_active(v))
            pla &= LA32_MASK;
        else if (v->mode != LC_MODE_LONG64 && pla > LA32_MASK)
            break;          /* compatibility mode: see lcr_translate() */
        chunk = PAGE_SIZE - (size_t)(pla & PAGE_MASK);
        if (chunk > n - got)
            chunk = n - got;
        n0 = v->rec ? v->rec->nent : 0;
        /* Only ordinary RAM can be fetched from here (MMIO code is left
         * to the CPU and the VMM). */
        if (pg_walk(&c, pla, &w) != M_OK ||
            map_frag(v, w.gpa, (unsigned)chunk, LCR_ACC_FETCH, &f) != M_OK ||
            f.kind != LC_GPA_RAM || commit_ad(v, &w, 1) != M_OK)
            break;
        /* The record holds this page's entries as the walk left them,
         * their A bits set: a check passes only while the bits stay set,
         * so once the guest clears one the next hit fetches again and
         * sets it, as the CPU fetching the code does. (A page that could
         * not be fetched keeps the values read: nothing was set; a walk
         * that set nothing left them as read.) */
        if (w.nref && v->rec && v->rec->valid &&
            v->rec->nent == n0 + w.npt)
            for (unsigned i = 0; i < w.npt; i++)
                v->rec->eval[n0 + i] = w.eval[i];
        lcr_ram_read(buf + got, f.hva, chunk);
        if (v->rec && *ngfn < 2) {
            v->rec->code[*ngfn] = f.hva;
            v->rec->code_len[*ngfn] = (uint32_t)chunk;
            v->rec->gfn[*ngfn] = w.gpa >> 12;
            v->rec->npages = (uint8_t)(*ngfn + 1);
        }
        gfn[(*ngfn)++] = w.gpa >> 12;
        got += chunk;
    }
    return got;
}
