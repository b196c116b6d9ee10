/* SPDX-License-Identifier: MIT */
/*
 * tests/diff: differential testing of runtime/ against Unicorn.
 *
 * One guest-physical memory layout serves all four modes (real, prot32,
 * PAE, long64); page tables and the GDT are in it, and only the layout of
 * linear space differs per mode. A case is: the initial lc_cpu_state, the
 * initial RAM image (code, data, page tables, GDT), the initial values of
 * the harness's MSRs and a seed for the device answer stream. gen.c makes
 * cases, uc_side.c runs them in Unicorn, rt_side.c in the runtime, and
 * diff.c compares.
 */
#ifndef LC_TESTS_DIFF_H
#define LC_TESTS_DIFF_H

#include <stddef.h>
#include <stdint.h>

#include <cluster/cluster.h>

#include "fakevm.h"

/* ---- modes ------------------------------------------------------------- */

enum dmode { DM_REAL = 0, DM_PROT32, DM_PAE, DM_LONG64, DM_COUNT };
const char *dmode_name(int m);
lc_cpu_mode dmode_cpu_mode(int m);

/* ---- guest-physical layout (identical in every mode) -------------------- */

#define RAM_SIZE      0x20000u   /* 128 KiB; the MMIO page is a hole in it */
#define GDT_PA        0x00800u
#define CODE_PA       0x01000u   /* one page of code */
#define STACK_PA      0x02000u   /* one page of stack */
#define PT_PML4_PA    0x03000u
#define PT_PDPT_PA    0x04000u   /* PAE: CR3 points here (32-byte PDPT) */
#define PT_PDLO_PA    0x05000u   /* PD for linear 0..1 GiB */
#define PT_PDHI_PA    0x06000u   /* PD for linear 1..2 GiB */
#define PT_PT0_PA     0x07000u   /* PT: identity map of 0..2 MiB (128 KiB used) */
#define PT_PT1_PA     0x08000u   /* PT: the shuffled window at WIN_LA */
#define DATA0_PA      0x09000u   /* data pages 0x9000..0xEFFF */
#define DATA0_END     0x0F000u
#define MMIO_PA       0x0F000u   /* one page of MMIO */
#define MMIO_SIZE     0x01000u
#define DATA1_PA      0x10000u   /* data pages 0x10000..0x1FFFF */
#define DATA1_END     0x20000u

/* Linear layout with paging (PAE and long64). */
#define WIN_LA        0x40000000ull  /* 16 shuffled frames of DATA1, then MMIO,
                                      * then DATA0; code and stack (long64) */
#define WIN_MMIO_LA   (WIN_LA + 0x10000)
#define WIN_DATA0_LA  (WIN_LA + 0x11000)
#define WIN_CODE_LA   (WIN_LA + 0x20000)
#define WIN_STACK_LA  (WIN_LA + 0x21000)
#define BIG_LA        0x40200000ull  /* one 2 MiB page onto physical 0 */
#define HIGH_ALIAS    0xFFFF800000000000ull /* long64: PML4[256] = PML4[0] */

#define CODE_MAX      0x0E00u    /* code bytes per case: stays inside the
                                  * page with room for a 15-byte fetch */

/* ---- MSRs the harness answers (QEMU stores all of them unmasked) -------- */

#define N_MSRS 7
extern const uint32_t diff_msr_ids[N_MSRS];

/* ---- generated cases ---------------------------------------------------- */

enum { CNT_NONE = 0, CNT_IMM, CNT_CL };

/* What the harness needs to know about each generated instruction. */
typedef struct gen_insn {
    uint16_t off;         /* offset in the code */
    uint8_t  len;
    uint8_t  op;          /* lc_op */
    uint8_t  bits;        /* operand bits */
    uint8_t  cnt_kind;    /* shift/rotate count source */
    uint8_t  cnt_imm;
    uint8_t  setup;       /* a helper MOV that sets an address register */
    uint8_t  flags;       /* GI_* (engine mode) */
} gen_insn;

/* gen_insn.flags */
#define GI_MMIO     0x01u /* its memory operand was aimed at MMIO */
#define GI_SMC      0x02u /* a store into the code page */
#define GI_SMC_CODE 0x04u /* ... possibly onto code bytes */
#define GI_LOOP     0x08u /* a backward branch (loop) */
#define GI_STOP     0x10u /* the library must stop before it, leaving the
                           * state as the CPU has it there (MOV CR, a
                           * VMX instruction in real mode: #UD); both
                           * sides end the run there */
#define GI_VMFAIL   0x20u /* a VMREAD/VMWRITE the fake VMM fails
                           * (VMfailInvalid/VMfailValid): the library
                           * stops before it, the VMM emulates it on the
                           * exit (rt_side.c) */
#define GI_SMC_DATA 0x40u /* ... never onto code bytes (data beside code) */
#define GI_SHADOW_STOP 0x80u /* STI, MOV SS or POP SS right before a
                           * GI_STOP instruction: where it opens an
                           * interrupt shadow (STI with IF clear) the
                           * library takes it back, as the CPU runs the
                           * two together (runtime/exec.c, shadow_run()),
                           * and both sides end the run before it */

#define GEN_MAX_INSNS 96
/* What a case can describe: the generator's instructions, or those of a
 * code file's case reachable from its start (gen_code_case()) */
#define DCASE_MAX_INSNS 512

typedef struct dcase {
    int          mode;
    uint64_t     seed;        /* the per-case seed (reproducible) */
    lc_cpu_state st;          /* initial state */
    uint8_t      ram[RAM_SIZE];
    uint8_t      code[CODE_MAX];
    uint32_t     code_len;
    uint64_t     code_la;     /* linear address of the first byte */
    uint64_t     end_la;      /* linear address where the run ends */
    uint64_t     msr[N_MSRS];
    uint64_t     dev_seed;
    uint32_t     ninsns;
    gen_insn     insn[DCASE_MAX_INSNS];
    uint8_t      native_ok;   /* long64: only user-level, window-only
                               * accesses (can run on the host CPU) */
    lc_exit      xfirst;      /* engine mode: the exit the first
                               * instruction causes */
    uint8_t      xfirst_declined; /* engine mode: the VMM fails the first
                               * instruction (a failing VMREAD/VMWRITE):
                               * the engine must decline, state untouched */
    uint8_t      vmcs_valid;  /* the fake VMM's current-VMCS pointer is
                               * valid (else VMfailInvalid) */
    uint8_t      real;        /* code from a file (gen_code_case()): no
                               * generator's guarantee (every memory
                               * operand mapped, no #DE, ...) holds */
    uint32_t     src_off;     /* ... and the file offset of its start */
} dcase;

/* Options of the generator. */
typedef struct gen_opts {
    unsigned max_groups;      /* instruction groups per case (>= 1) */
    int      native;          /* long64: generate host-runnable cases only */
    uint8_t  perm[16];        /* window page i maps DATA1 frame perm[i] */
} gen_opts;

/* The window's frame permutation of a run (fixed per seed: Unicorn 2.0.1
 * needs it at engine setup, see uc_side.c). */
void diff_perm(uint64_t seed, uint8_t perm[16]);

/* Make case number `index` of (seed, mode). Deterministic. */
void gen_case(dcase *c, int mode, uint64_t seed, uint64_t index,
              const gen_opts *o);

/* Engine mode (cdiff.c): a case whose first instruction is a strongly
 * exiting one (described in c->xfirst), followed by exiting instructions,
 * MMIO accesses, gap fillers, forward branches, small loops and stores
 * into the code page. Deterministic. */
void gen_cluster_case(dcase *c, int mode, uint64_t seed, uint64_t index,
                      const gen_opts *o);

/* Code nobody here wrote (code_src.c): a file's executable regions and,
 * per CPU mode, the file offsets of the instructions a case can start on:
 * strongly exiting ones (IN, OUT, CPUID, HLT, RDMSR, WRMSR), and moves
 * to or from memory through a base register (`msite`), which the case
 * aims at its MMIO page (a driver's readl/writel). */
#define CODE_SRC_REGIONS 64
typedef struct code_src {
    char     path[256];
    uint8_t *bytes;
    size_t   size;
    int      elf;
    unsigned nregion;
    struct { size_t off, len; char name[32]; } region[CODE_SRC_REGIONS];
    uint32_t *site[DM_COUNT];
    size_t   nsite[DM_COUNT];
    uint32_t *msite[DM_COUNT];
    size_t   nmsite[DM_COUNT];
} code_src;
int  code_src_load(code_src *s, const char *path, char *err, size_t errlen);
void code_src_free(code_src *s);
int  code_src_region(const code_src *s, size_t off);
/* In 64-bit code a REX prefix followed by a legacy prefix is ignored (SDM
 * vol. 2, 2.2.1); QEMU 5's decoder (Unicorn 2.0.1) keeps it, so
 * `48 66 83 F8 FD` compares RAX where the CPU compares AX
 * (UNICORN_BUGS.md, exclusion 8). Is `p[0], p[1]` such a pair? */
int  code_uc_misreads(int mode, const uint8_t *p);

/* Engine mode on code from a file: case `index` starts at one of the
 * file's sites for `mode`, with the bytes that follow it in its region
 * (up to CODE_MAX) as the case's code, the generator's random state and
 * RAM, and registers often pointing into RAM. Deterministic. */
void gen_code_case(dcase *c, int mode, uint64_t seed, uint64_t index,
                   const gen_opts *o, const code_src *src);

/* Coverage: (op, width) pairs generated, per mode. width index 0..3 for
 * 8/16/32/64 bits (0 for ops without a width). */
extern uint64_t gen_cov[DM_COUNT][LC_OP_COUNT_][4];
extern uint64_t gen_skipped[DM_COUNT][LC_OP_COUNT_];
unsigned width_index(unsigned bits);

/* ---- flags -------------------------------------------------------------- */

#define FL_CF 0x001u
#define FL_PF 0x004u
#define FL_AF 0x010u
#define FL_ZF 0x040u
#define FL_SF 0x080u
#define FL_OF 0x800u
#define FL_STATUS (FL_CF | FL_PF | FL_AF | FL_ZF | FL_SF | FL_OF)

/* Flags an instruction writes with a defined value (*def) and leaves
 * undefined (*und), per the SDM. `count` is the masked shift count, or -1
 * if unknown (then *def holds only flags written for every count). */
void flag_effect(unsigned op, unsigned bits, int count, uint32_t *def,
                 uint32_t *und);
/* Flags an instruction reads. */
uint32_t flag_uses(unsigned op, unsigned cond);

/* ---- devices: answer stream and access log ------------------------------ */

enum { AK_PIO = 1, AK_MMIO, AK_CPUID, AK_RDMSR, AK_WRMSR, AK_RDTSC,
       AK_HLT, AK_VMREAD, AK_VMWRITE, AK_VMCALL };

typedef struct dev_access {
    uint8_t  kind;
    uint8_t  is_write;
    uint8_t  size;
    uint64_t addr;        /* port, gpa, leaf | subleaf << 32, msr */
    uint64_t value;
    uint32_t insn;        /* Unicorn side: index in the trace of the
                           * instruction that made it (not compared) */
} dev_access;

#define DEV_LOG_MAX 512
/* dev_access.is_write of a write the engine side may have merged from an
 * exit pair (paper section 3, lc_vm_ops.accepts_wide): it agrees with one
 * write of its size on Unicorn's side, or with two adjacent writes of
 * half its size, in either order, that make its bytes. */
#define DEV_WIDE_WRITE 2

#define DIFF_NO_REFUSE (~0ull)

/* What the engine side's fake VMM merges and refuses, the same for every
 * call of a case (cdiff.c draws it with the case). */
typedef struct diff_vmm {
    uint8_t  wide;           /* the widths it takes merged exit pairs of
                              * (accepts_wide, LC_WIDE_n = n); its MMIO
                              * writes of those sizes are logged as
                              * DEV_WIDE_WRITE (diff_compare()) */
    uint8_t  refuse_traced;  /* every traced_write() into the traced page
                              * answered LC_CB_STOP ("refused traced
                              * stores") */
    int      refuse_port;    /* every access to it answered LC_CB_STOP
                              * ("refused ports"); -1: none */
    uint64_t refuse_mmio;    /* a gpa aligned to refuse_len: every MMIO
                              * access that overlaps those bytes answered
                              * LC_CB_STOP ("refused MMIO");
                              * DIFF_NO_REFUSE: none */
    uint8_t  refuse_len;     /* 8 (a quadword) or 4 (a dword, which an
                              * aligned 8-byte merged pair can reach
                              * through its second half alone) */
} diff_vmm;

/* Does an access of `size` bytes at `gpa` reach the refused MMIO bytes
 * of `v`? */
static inline int diff_mmio_refused(const diff_vmm *v, uint64_t gpa,
                                    unsigned size)
{
    return v->refuse_mmio != DIFF_NO_REFUSE &&
           gpa < v->refuse_mmio + v->refuse_len &&
           gpa + size > v->refuse_mmio;
}

#define DIFF_ASK_MAX 128

typedef struct dev_side {
    uint64_t   rng[4];    /* answer stream */
    unsigned   nlog;
    int        overflow;
    dev_access log[DEV_LOG_MAX];
    uint64_t   msr[N_MSRS];
    uint64_t   tsc;       /* the next RDTSC's answer (monotonic) */
    uint64_t   dr[4];     /* DR0..DR3 (MOV DR; start at 0) */
    uint8_t    long64;            /* the case's mode is long64 */
    uint8_t    vmcs_valid;        /* the fake VMCS (see vmx_*) */
    uint8_t    real;              /* a case of code from a file */
    uint64_t   vmcs[16];
    /* Engine side, a traced page (cdiff.c, "traced pages"): the page's
     * frame number (DIFF_NO_TRACE: none), the page as the VMM keeps it
     * (the case's bytes, then every traced_write() applied), the writes
     * delivered, and those outside the page with the first one's gpa. */
    uint64_t   tgfn;
    uint32_t   twrites;
    uint32_t   nstray;
    uint64_t   tstray;
    uint8_t    tshadow[4096];
    diff_vmm   vmm;               /* engine side: merges and refusals */
    /* Engine side: the linear RIP and RCX of every irq_pending()
     * question, in order (nask counts past DIFF_ASK_MAX; cdiff.c,
     * irq_unasked()) */
    uint32_t   nask;
    uint64_t   ask[DIFF_ASK_MAX];
    uint64_t   ask_cx[DIFF_ASK_MAX];
} dev_side;

#define DIFF_NO_TRACE (~0ull)

void dev_init(dev_side *d, const dcase *c);
/* The guest-physical address linear `la` maps to under the case's paging
 * (mode and CR3; the tables as `ram`, RAM_SIZE bytes, holds them), or -1
 * if no present entry maps it or it lies outside RAM. Without paging
 * (real, prot32) linear is physical. Permissions and A/D bits are not
 * looked at. */
/* The guest-physical addresses of the paging-structure entries with an
 * accessed bit that translating `la` reads (PAE, long64; the number of
 * them, 0 without paging), as far as they are present. */
unsigned diff_walk_entries(int mode, const uint8_t *ram, uint64_t cr3,
                           uint64_t la, uint64_t pa[4]);
int64_t diff_la_to_pa(int mode, const uint8_t *ram, uint64_t cr3,
                      uint64_t la);
uint64_t dev_answer(dev_side *d, unsigned size);
/* The guest TSC an RDTSC reads (logged in order as AK_RDTSC). */
uint64_t dev_rdtsc(dev_side *d);
void dev_log(dev_side *d, int kind, int is_write, unsigned size,
             uint64_t addr, uint64_t value);
void cpuid_answer(uint32_t leaf, uint32_t sub, uint32_t out[4]);
int msr_index(uint32_t msr);
/*
 * The fake VMM's nested-virtualization state (paper section 8): the VMCS
 * it keeps for its guest hypervisor, served to libcluster through
 * lc_vm_ops.vmcs_read/vmcs_write and to Unicorn's side by the #UD hook
 * (uc_side.c), with the field semantics of the SDM (vol. 3, "VMREAD,
 * VMWRITE, and Encodings of VMCS Fields"): 16-, 32-, 64-bit (full and
 * high access) and natural-width fields, read-only fields, an unsupported
 * encoding failing with VMfailValid(12), a write to a read-only field
 * with VMfailValid(13), no current VMCS with VMfailInvalid.
 */
#define VMX_NFIELDS 16
extern const uint32_t vmx_fields[VMX_NFIELDS];
#define VMX_INSN_ERROR 0x4400u    /* VM-instruction error (read-only) */
#define VMX_FAIL_INVALID (-1)
/* 0 if the access succeeds, VMX_FAIL_INVALID, or the VMfailValid error
 * number; no side effect. */
int vmx_check(const dev_side *d, int is_write, uint64_t field);
/* A successful VMREAD (*val out) or VMWRITE (*val in: the source operand
 * zero-extended from the operand size); logged. */
void vmx_do(dev_side *d, int is_write, uint64_t field, uint64_t *val);
/* A failed one: the VM-instruction error field for VMfailValid; logged.
 * Returns RFLAGS after it (VMfailInvalid: CF; VMfailValid: ZF; the other
 * status flags cleared). */
uint64_t vmx_fail(dev_side *d, int is_write, uint64_t field, int code,
                  uint64_t rflags);
/* VMCALL: the fake VMM's hypercall (RAX in, RAX and RDX out, 32 bits
 * outside 64-bit mode); logged. */
void vmx_vmcall(dev_side *d, uint64_t gpr[16], int long64);
/* A field the fake VMCS has (index), or -1. */
int vmx_field_index(uint64_t field);

/* A VMREAD, VMWRITE or VMCALL as the harness's own decode (Zydis, not the
 * library's decoder) sees it: what the oracle (uc_side.c) and the fake
 * VMM's exit handler (rt_side.c) need. Operands in Intel order: VMREAD
 * r/m(value), r(field); VMWRITE r(field), r/m(value). */
typedef struct vmx_insn {
    unsigned op;          /* LC_OP_VMREAD, LC_OP_VMWRITE, LC_OP_VMCALL */
    unsigned len;
    unsigned opbits;      /* 64 in 64-bit mode, else 32 (SDM) */
    int      field_reg;   /* GPR number */
    int      val_reg;     /* GPR number, or -1: memory */
    /* the memory operand */
    int      base, index; /* GPR numbers, -1 none, -2 RIP */
    unsigned scale, abits, seg;
    int64_t  disp;
} vmx_insn;
/* 0, or -1 if the bytes are not one of the three. */
int vmx_decode(int mode, const uint8_t *code, size_t n, vmx_insn *out);

/* Monotonic seconds, for soak timing. */
double diff_now(void);
/* Index of the case's instruction at linear address `la`, or -1. */
int dcase_insn_at(const dcase *c, uint64_t la);

/* ---- results ------------------------------------------------------------ */

#define TRACE_MAX 512

typedef struct run_result {
    int       ok;             /* reached end_la */
    int       aborted;        /* Unicorn's side: its translator aborted
                               * (code from a file; uc_side.c) */
    char      why[256];       /* if not ok */
    uint64_t  gpr[16];
    uint64_t  rip;            /* linear address */
    uint64_t  rflags;
    uint8_t   ram[RAM_SIZE];
    uint64_t  msr[N_MSRS];
    dev_side  dev;
    unsigned  ntrace;         /* executed instructions (linear RIPs) */
    uint64_t  trace[TRACE_MAX];
    uint64_t  trace_cl[TRACE_MAX]; /* RCX before each one (shift counts) */
    uint16_t  sel[6];         /* segment selectors at the end */
    uint64_t  fs_base, gs_base; /* long64: FS/GS bases at the end */
    uint64_t  dr[4];          /* DR0..DR3 at the end */
    uint32_t  wpages[TRACE_MAX]; /* Unicorn side: the RAM pages (bit n:
                                  * guest-physical page n) each traced
                                  * instruction stored to */
} run_result;

/* ---- Unicorn side (uc_side.c) ------------------------------------------- */

typedef struct uc_side uc_side;
/* Cases per Unicorn instance before it is reopened (see UNICORN_BUGS.md,
 * "translated-block chaining"). */
#define UC_REOPEN_CASES 200000

/* `watch_writes`: record the RAM pages each instruction stores to
 * (run_result.wpages), with a UC_HOOK_MEM_WRITE hook; its mere presence
 * changes the flags of some instructions (UNICORN_BUGS.md, 13). */
uc_side *ucs_open(int mode, const uint8_t perm[16], int watch_writes);
void ucs_close(uc_side *u);
/* Run case `c`; fill `r`. Returns 0, or -1 on a harness (setup) error. */
int ucs_run(uc_side *u, const dcase *c, run_result *r, unsigned max_insns);
/* Run case `c` for exactly `n` instructions (a REP string instruction
 * counts once) from its start; r->ok if all `n` ran. */
int ucs_run_n(uc_side *u, const dcase *c, run_result *r, unsigned n);

/* ---- runtime side (rt_side.c) ------------------------------------------- */

int rts_run(const dcase *c, run_result *r, unsigned max_insns);

/* ---- shared by diff.c and cdiff.c ---------------------------------------- */

/* Exit pairs the engine delivered merged that agreed with Unicorn's two
 * writes (diff_compare(), DEV_WIDE_WRITE). */
extern unsigned long long diff_merged_pairs;

/* First difference between `a` (reference) and `b`; 0 if none. `b` may
 * log wide writes (DEV_WIDE_WRITE), `a` (Unicorn's side) not. */
int diff_compare(const dcase *c, const run_result *a, const char *an,
                 const run_result *b, const char *bn, char *out, size_t n);
void diff_print_case(const dcase *c, const run_result *r);
void diff_print_result(const char *name, const dcase *c, const run_result *r);
int diff_verbose(void);

/* ---- engine mode (cdiff.c) ------------------------------------------------ */

typedef struct cdiff_opts {
    int      mode;            /* -1: all */
    uint64_t count;
    uint64_t seed;
    double   soak;
    int64_t  one_case;
    unsigned groups;
    unsigned max_report;
    int      verbose;
    const code_src *code;     /* --code FILE: cases on its code */
} cdiff_opts;
int cdiff_main(const cdiff_opts *o);

/* ---- native side (native.c) --------------------------------------------- */

int native_run(const dcase *c, run_result *r);

/* ---- PRNG --------------------------------------------------------------- */

static inline uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static inline uint64_t rotl64(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

/* xoshiro256** */
static inline uint64_t xo_next(uint64_t s[4])
{
    uint64_t r = rotl64(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3];
    s[2] ^= t; s[3] = rotl64(s[3], 45);
    return r;
}

static inline void xo_seed(uint64_t s[4], uint64_t seed)
{
    for (int i = 0; i < 4; i++)
        s[i] = splitmix64(&seed);
}

/* The VMM side libcluster sees (vm_ops.c): the shared fake VMM
 * (tests/common/fakevm.h) over guest RAM at one host address (the engine
 * may remember gpa_map answers until a flush), the MMIO page a hole in
 * it, and the case's devices (dev_side) answering through diff_device. */
typedef fvm diff_vm;

/* `ram` (RAM_SIZE bytes, the caller's) as the guest's; no devices yet. */
void diff_vm_init(diff_vm *x, uint8_t *ram);
/* The devices that answer and log from now on. */
static inline void diff_vm_devices(diff_vm *x, dev_side *d)
{
    x->ctx = d;
}

/* lc_vm_ops.irq_pending on the engine side: with the case's key (the
 * fvm's `irq`; 0: never) an interrupt is pending at about a third of the
 * code's addresses, by a hash of the linear RIP (its low 32 bits, as the
 * 32-bit modes wrap it), or at all of them (DIFF_IRQ_ALWAYS), so every
 * engine of a case gets the same answers at the same places and a stop
 * for it can be checked after the run. */
#define DIFF_IRQ_ALWAYS 0x7fffffff    /* the key of "pending everywhere" */
static inline int diff_irq_due(int key, uint64_t linear_rip)
{
    if (key == DIFF_IRQ_ALWAYS)
        return 1;
    /* splitmix64's finalizer: neighbouring addresses answer apart */
    uint64_t h = ((uint64_t)(uint32_t)linear_rip << 21) ^ (uint64_t)key;

    h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
    h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
    h ^= h >> 31;
    return key != 0 && h % 3 == 0;
}

/* accepts_wide 0; the engine side copies it with the widths of the case
 * (cdiff.c), its devices logging with dev_side.vmm.wide set to them. */
extern const lc_vm_ops diff_vm_ops;

#endif /* LC_TESTS_DIFF_H */
