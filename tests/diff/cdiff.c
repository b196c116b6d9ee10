/* SPDX-License-Identifier: MIT */
/*
 * tests/diff/cdiff.c: `lc-diff --engine`, whole clusters through the public
 * engine API (lc_engine_create, lc_vcpu_handle_exit) against Unicorn.
 *
 * A case (gen_cluster_case) starts with a strongly exiting instruction
 * (IN/OUT, CPUID, RDMSR/WRMSR, HLT, VMCALL, VMREAD/VMWRITE, or a weakly
 * exiting MMIO access; c->xfirst describes its exit, RIP at it; a first
 * VMREAD/VMWRITE the fake VMM fails must be declined, state untouched)
 * and goes on with more exiting instructions, MMIO accesses, gap fillers,
 * forward branches, small loops and stores into the code page. Each case
 * gets its own configuration (control-flow method, technique subset,
 * window, gap-filler cap, backedge cap, sometimes a small instruction
 * budget), drawn from the case seed, and two engines:
 *
 *   A   translate_threshold 1: the first exit forms and runs the cluster.
 *   B   translate_threshold 3: calls B1 and B2 must interpret the exiting
 *       instruction alone (insns == 1); B3 translates and must agree with A.
 *
 * Every call starts from the case's initial registers, RAM and device
 * stream; the VMM side (callbacks over a copy of the RAM, the answer
 * stream, the access log) is the one rt_side.c has. Before the calls, weakly exiting instructions aimed at MMIO are
 * reported to the engine as MMIO exits from scratch state (what the guest
 * would have done before), so dynamic clusters (s5) include them; now and
 * then a RAM-accessing one is reported too (a stale prediction).
 *
 * A call runs res.insns instructions; Unicorn then runs exactly that many
 * from the same start (ucs_run_n) and everything lc-diff compares must
 * agree (registers, defined flags, RIP, all RAM with A/D bits, MSRs, the
 * ordered device log). The VMM's view is used: only the parts the result
 * marks dirty are taken from the engine's state. Also checked:
 *  - exits_done == the exiting instructions Unicorn executed in those
 *    res.insns: strongly exiting ones (a string I/O one only if it made
 *    an access), plus weakly exiting ones whose access went to MMIO;
 *    exits_saved == exits_done - 1;
 *  - SMC: the SMC watch covers the bytes of the code being run, not whole
 *    pages (libcluster/coherency.c), so with LC_TECH_SMC a run ends with
 *    LC_STOP_SMC only right after a store into the code page that may hit
 *    code bytes, never after one aimed beside the code (data sharing the
 *    page), and never for SMC otherwise; a run that goes on after a store
 *    onto code bytes must still agree with Unicorn, which runs the new
 *    bytes (the comparison above is what catches stale code);
 *  - code replacement (some cases): after A, an executed instruction is
 *    replaced by a NOP of its length (or the first one's port changes);
 *    the next call (R1) must run the exiting instruction alone (with
 *    chained runs: or the translations before the one that covers the
 *    replaced instruction) and count one coherency failure (with chained
 *    runs at least one: each stale translation it meets), and the one
 *    after (R2) a cluster that agrees with Unicorn on the new code;
 *  - the control-flow method (s6) on the executed path of a translated
 *    run: none runs no branch; M1 ends at a taken branch; M2 at a taken
 *    backward one; without static clusters a run is at most a pair;
 *  - a lower bound on the cluster (s4): on straight code from the exit,
 *    within the window and the gap-filler cap, the run must reach the
 *    last strongly exiting instruction (unless it stops for SMC);
 *  - the third exit with threshold 3 runs what the first did with
 *    threshold 1 (not with chained runs: they depend on the cache);
 *  - merged pairs (a quarter of the cases, accepts_wide a set of widths,
 *    ccfg.wide): a wide write agrees with one of Unicorn's or with the
 *    two halves of an exit pair in either order (diff_compare());
 *  - interrupts (a quarter of the cases, diff_irq_due(); in a quarter
 *    of those pending everywhere): a run the engine stops for one
 *    (LC_STOP_IRQ, at a loop head) stops where one is due with IF set,
 *    and agrees with Unicorn as every run must. Not checked: that a due
 *    one stops the run (the engine asks at the heads of the loops it
 *    forms, but the walk may lay a loop out unrolled, whose second pass
 *    has no head: an address may run twice with one pending);
 *  - traced pages (a quarter of the cases, pick_traced()): the engine
 *    stores into the page only through traced_write() (the fake VMM's
 *    copy of the page and the RAM end equal), each store into it is an
 *    exit; the instructions the engine runs only onto plain RAM end the
 *    lower bound, and an exiting one is declined;
 *  - refused ports (a quarter of the cases, pick_refused()): the fake
 *    VMM answers LC_CB_STOP for one port; a run stops right before an
 *    instruction that accesses it (LC_STOP_CALLBACK), and an exiting
 *    one is declined with the state untouched;
 *  - refused MMIO (a quarter, pick_refused_mmio()): the same for one
 *    MMIO quadword or dword, except that the A/D bits the refused
 *    instruction's walks set may stay (take_walk_bits()); a merged exit
 *    pair refused through its second half alone runs its first store
 *    (pair_split());
 *  - V: a second vCPU of A's engine (its own translation and page-walk
 *    caches, the shared exit-tracking table) takes the same exit after
 *    A and must run what A ran (not with chained runs);
 *  - W1, W2 (a quarter of the cases): two more vCPUs of A's engine take
 *    the same exit at once, on two threads, each on its own copy of the
 *    RAM, each checked against Unicorn (concurrent_calls());
 *  - P (cases starting with OUT): the VMM completed the OUT itself and
 *    calls with LC_EXIT_RIP_PAST; a decline must leave the state alone, a
 *    run must agree with Unicorn over 1 + res.insns instructions with
 *    exits_saved == exits_done.
 *
 * Reproduce a report with the command line it prints (--case I
 * --verbose shows the code, the configuration, and every call).
 * LCDIFF_AVOID=knownexits,pastnoexit (triage only) counts exits the way
 * the engine is known to, and accepts RIP-past runs that save nothing, so
 * that other differences show.
 */
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../runtime/rt.h"
#include "../../translator/translator.h"
#include "diff.h"
#include "progress.h"

/* ---- the VMM side: RAM and devices ---------------------------------------- */

/* The guest's RAM stays at one host address for the life of an engine
 * (ops.h: the engine may remember gpa_map answers until lc_engine_flush);
 * each call lays the case's image down in it. */
typedef diff_vm eng_ctx;   /* callbacks: vm_ops.c */

/* Instructions train() reported as MMIO exits in the current case: the
 * table may then rightly predict them as exiting even where they hit RAM
 * (section 5's predictor is allowed to be wrong). */
static uint8_t trained[DCASE_MAX_INSNS];
/* What the current case's VMM merges and refuses (ccfg.vmm), given to its
 * devices at each call (dev_side.vmm); its ops table takes merged pairs of
 * those widths (the engines of a case live within the case). */
static diff_vmm cur_vmm;
static lc_vm_ops ops_wide;

/* ---- per-case configuration ------------------------------------------------ */

typedef struct ccfg {
    lc_config cfg;
    int       replace;        /* do the code-replacement calls */
    int       irq;            /* diff_irq_due()'s key, 0: no interrupts */
    diff_vmm  vmm;            /* merges and refusals: accepts_wide's
                               * LC_WIDE_2/4/8 bits (drawn), the port
                               * and MMIO bytes picked (or none), the
                               * traced page's stores refused (drawn;
                               * pick_traced() keeps it where it can) */
    int       trace;          /* a traced page (one_case() picks it) */
    int       warm;           /* warm_tables() (if it traces a paging
                               * structure: one_case()) */
    uint64_t  trace_pick;
    uint64_t  tgfn;           /* the page picked, or DIFF_NO_TRACE */
    int       refuse;         /* a refused port (one_case() picks it) */
    uint64_t  refuse_pick;
    int       refuse_mmio;    /* refused MMIO bytes (one_case()) */
    uint64_t  rmmio_pick;
    int       concurrent;     /* calls W1 and W2 (concurrent_calls()) */
    uint64_t  rng[4];
} ccfg;

static unsigned crn(ccfg *k, unsigned n) { return (unsigned)(xo_next(k->rng) % n); }

static void pick_config(const dcase *c, ccfg *k)
{
    lc_config *f = &k->cfg;

    xo_seed(k->rng, c->seed ^ 0x636f6e666967ull);
    lc_config_init(f);
    f->cflow = (lc_cflow_method)crn(k, 4);
    if (crn(k, 100) < 35)
        f->techniques = crn(k, 64);
    if (crn(k, 100) < 40)
        f->max_cluster_insns = 1 + crn(k, 32);
    if (crn(k, 100) < 40)
        f->max_mem_gap_fillers = crn(k, 7);
    if (crn(k, 100) < 40)
        f->weak_backedge_cap = crn(k, 5);
    if (crn(k, 100) < 15)
        f->insn_budget = 1 + crn(k, 40);
    k->replace = crn(k, 100) < 40;
    /* (drawn last: the draws above, and so the configurations of seeds
     * recorded before, stay as they were) the cost model that scales
     * the gap cap (form_static.c) */
    if (crn(k, 100) < 40)
        f->exit_cost_ns = crn(k, 20000);
    /* From a stream of their own (k->rng goes on to replace_code(), so
     * the cases of seeds recorded before keep their replacements):
     * interrupts pending at some addresses, in a quarter of the cases;
     * a VMM that takes an exit pair's two stores as one access of twice
     * the width, for a nonempty set of widths, in another quarter. */
    {
        uint64_t r2[4];
        xo_seed(r2, c->seed ^ 0x6972712b77696465ull);
        k->irq = xo_next(r2) % 4 != 0 ? 0
                 : xo_next(r2) % 4 == 0 ? DIFF_IRQ_ALWAYS
                 : 1 + (int)(xo_next(r2) % (1u << 20));
        k->vmm.wide = xo_next(r2) % 4 == 0
                      ? (uint8_t)((1 + xo_next(r2) % 7) << 1) /* 2/4/8 */
                      : 0;
        /* and, in a quarter, a traced page among those the case stores
         * to (pick_traced()) */
        k->trace = xo_next(r2) % 4 == 0;
        k->trace_pick = xo_next(r2);
        k->tgfn = DIFF_NO_TRACE;
        /* and, in another quarter, a port the VMM refuses
         * (pick_refused()) */
        k->refuse = xo_next(r2) % 4 == 0;
        k->refuse_pick = xo_next(r2);
        k->vmm.refuse_port = -1;
        /* and, in another quarter, an MMIO quadword the VMM refuses
         * (pick_refused_mmio()) */
        k->refuse_mmio = xo_next(r2) % 4 == 0;
        k->rmmio_pick = xo_next(r2);
        k->vmm.refuse_mmio = DIFF_NO_REFUSE;
        /* and, in a quarter of the traced pages, every traced_write()
         * refused */
        k->vmm.refuse_traced = xo_next(r2) % 4 == 0;
        /* and, in another quarter, two vCPUs at once */
        k->concurrent = xo_next(r2) % 4 == 0;
        /* the refused MMIO bytes: a quadword, or in half the cases a
         * dword, so that an aligned 8-byte merged pair can reach them
         * through its second half alone (the first is the VMM's to take:
         * translator/pair.c runs a refused merged pair as two stores) */
        k->vmm.refuse_len = xo_next(r2) % 2 ? 4 : 8;
        /* and, in half the cases tracing a paging structure, tables
         * whose entries have their accessed and dirty bits set
         * (warm_tables()) */
        k->warm = xo_next(r2) % 2;
    }
    /* a store onto code bytes is only coherent with the SMC check on */
    for (uint32_t i = 0; i < c->ninsns; i++)
        if (c->insn[i].flags & GI_SMC_CODE)
            f->techniques |= LC_TECH_SMC;
}

static void fmt_config(char *b, size_t n, const ccfg *k)
{
    const lc_config *f = &k->cfg;

    static const char *const cf[4] = { "none", "m1", "m2", "m3" };
    snprintf(b, n, "cflow %s techniques 0x%x%s%s%s%s%s window %u (%u) gapcap %u "
             "exitcost %u backedgecap %u budget %u threshold %u irq %d "
             "wide 0x%x traced %s0x%llx%s%s refused port %d mmio %s0x%llx%s",
             cf[f->cflow & 3], f->techniques,
             f->techniques & LC_TECH_SINGLE ? " single" : "",
             f->techniques & LC_TECH_PAIRS ? " pairs" : "",
             f->techniques & LC_TECH_STATIC ? " static" : "",
             f->techniques & LC_TECH_DYNAMIC ? " dynamic" : "",
             f->techniques & LC_TECH_SMC ? " smc" : "",
             f->max_cluster_insns, lcx_window(f), f->max_mem_gap_fillers,
             f->exit_cost_ns,
             f->weak_backedge_cap, f->insn_budget, f->translate_threshold,
             k->irq, k->vmm.wide, k->tgfn == DIFF_NO_TRACE ? "none " : "gpa ",
             k->tgfn == DIFF_NO_TRACE ? 0ull
                                      : (unsigned long long)k->tgfn << 12,
             k->vmm.refuse_traced ? " (refused)" : "",
             k->warm ? " (warm tables)" : "", k->vmm.refuse_port, k->vmm.refuse_mmio == DIFF_NO_REFUSE ? "none " : "gpa ",
             k->vmm.refuse_mmio == DIFF_NO_REFUSE ? 0ull
                                        : (unsigned long long)k->vmm.refuse_mmio,
             k->vmm.refuse_mmio != DIFF_NO_REFUSE && k->vmm.refuse_len == 4
             ? " (dword)" : "");
}

/* ---- engine calls ------------------------------------------------------------ */

typedef struct ecall {
    const char *label;
    unsigned    pre;             /* instructions the VMM ran before the
                                  * call (1 for LC_EXIT_RIP_PAST) */
    lc_status   status;
    lc_result   res;
    int         untouched_bad;   /* declined but the state changed */
    run_result *r;
    int         ram_touched;     /* declined but the RAM changed */
    int         traced_at;       /* the first byte of the traced page the
                                  * engine changed without traced_write(),
                                  * or -1 */
} ecall;

static void fill_result(const dcase *c, const lc_cpu_state *s, run_result *r)
{
    for (int i = 0; i < 16; i++)
        r->gpr[i] = c->mode == DM_LONG64 ? s->gpr[i]
                  : i < 8 ? (uint32_t)s->gpr[i] : 0;
    r->rip = s->seg[LC_CS].base + s->rip;
    r->rflags = s->rflags;
    for (int i = 0; i < 6; i++)
        r->sel[i] = s->seg[i].selector;
    r->fs_base = s->seg[LC_FS].base;
    r->gs_base = s->seg[LC_GS].base;
    memcpy(r->msr, r->dev.msr, sizeof r->msr);
    memcpy(r->dr, r->dev.dr, sizeof r->dr);
}

/* Set the accessed bit in every paging-structure entry (of the case's
 * tables, as laid out in `c->ram`) that the walk for the page holding `la`
 * uses, in `ram`. PAE PDPTEs have none. */
static void code_walk_accessed(const dcase *c, uint8_t *ram, uint64_t la)
{
    const uint64_t am = 0x000ffffffffff000ull;
    uint64_t e, ta;
    int lvl;

    if (c->mode == DM_LONG64) {
        ta = (c->st.cr3 & am) + ((la >> 39) & 511) * 8;
        lvl = 4;
    } else if (c->mode == DM_PAE) {
        ta = (c->st.cr3 & ~0x1full) + ((la >> 30) & 3) * 8;
        if (ta + 8 > RAM_SIZE)
            return;
        memcpy(&e, c->ram + ta, 8);
        ta = (e & am) + ((la >> 21) & 511) * 8;
        lvl = 2;
    } else {
        return;
    }
    for (; lvl >= 1 && ta + 8 <= RAM_SIZE; lvl--) {
        memcpy(&e, c->ram + ta, 8);
        ram[ta] |= 0x20;
        if (!(e & 1) || lvl == 1 || (lvl == 2 && (e & 0x80)))
            break;
        unsigned sh = lvl == 4 ? 30 : lvl == 3 ? 21 : 12;
        ta = (e & am) + ((la >> sh) & 511) * 8;
    }
}

/* Did a declined call leave the RAM as it was? The walks of the code
 * pages are left out: fetching the exiting instruction (the CPU did
 * before the exit) and decoding ahead of it set their accessed bits. A
 * data access's bits (a VMWRITE's memory source) count. */
static int ram_untouched(const dcase *c, const uint8_t *ram)
{
    /* (per thread: calls W1 and W2 run at once) */
    static _Thread_local uint8_t want[RAM_SIZE], got[RAM_SIZE];

    memcpy(want, c->ram, RAM_SIZE);
    memcpy(got, ram, RAM_SIZE);
    for (uint64_t p = 0; p < 2; p++) {
        code_walk_accessed(c, want, c->code_la + p * 0x1000);
        code_walk_accessed(c, got, c->code_la + p * 0x1000);
    }
    return memcmp(want, got, RAM_SIZE) == 0;
}

/* One lc_vcpu_handle_exit from the case's initial state; the VMM's view of
 * the outcome (dirty parts only) goes to e->r. */
static void eng_call(lc_vcpu *vc, eng_ctx *x, const dcase *c, ecall *e)
{
    lc_cpu_state st = c->st, fin;
    run_result *r = e->r;
    lc_exit xe = c->xfirst;

    r->ok = 1;
    r->why[0] = 0;
    r->ntrace = 0;
    memcpy(x->ram, c->ram, RAM_SIZE);
    dev_init(&r->dev, c);
    r->dev.vmm = cur_vmm;
    if (x->traced_gfn != FVM_NONE) {
        r->dev.tgfn = x->traced_gfn;
        memcpy(r->dev.tshadow, c->ram + (x->traced_gfn << 12), 4096);
    }
    diff_vm_devices(x, &r->dev);
    if (e->pre) {
        /* The VMM completed the OUT itself (KVM with RIP past it). */
        dev_log(&r->dev, AK_PIO, 1, xe.u.io.size, xe.u.io.port,
                xe.u.io.value);
        st.rip += c->insn[0].len;
        xe.rip = LC_EXIT_RIP_PAST;
    }
    fin = st;
    lc_cpu_state st0 = st;
    e->status = lc_vcpu_handle_exit(vc, &st, &xe, &e->res);
    e->untouched_bad = 0;
    if (e->res.disposition == LC_HANDLED) {
        if (e->res.dirty & LC_DIRTY_GPRS)
            memcpy(fin.gpr, st.gpr, sizeof fin.gpr);
        if (e->res.dirty & LC_DIRTY_RIP)
            fin.rip = st.rip;
        if (e->res.dirty & LC_DIRTY_RFLAGS)
            fin.rflags = st.rflags;
        if (e->res.dirty & LC_DIRTY_SREGS)
            memcpy(fin.seg, st.seg, sizeof fin.seg);
    } else if (memcmp(&st, &st0, sizeof st) != 0) {
        e->untouched_bad = 1;
    }
    e->ram_touched = e->res.disposition != LC_HANDLED &&
                     !ram_untouched(c, x->ram);
    /* the traced page as the VMM kept it, against the RAM: a byte that
     * differs was stored by the engine itself */
    e->traced_at = -1;
    if (x->traced_gfn != FVM_NONE)
        for (int i = 0; i < 4096; i++)
            if (x->ram[(x->traced_gfn << 12) + (unsigned)i] !=
                r->dev.tshadow[i]) {
                e->traced_at = i;
                break;
            }
    fill_result(c, &fin, r);
    memcpy(r->ram, x->ram, RAM_SIZE);
    r->ntrace = e->res.insns + e->pre;
}

/* Report weakly exiting instructions as MMIO exits from scratch state. */
static void train(lc_vcpu *vc, eng_ctx *x, const dcase *c,
                  run_result *scratch)
{
    uint64_t rng[4];

    xo_seed(rng, c->seed ^ 0x747261696eull);   /* the same for A and B */
    memset(trained, 0, sizeof trained);
    for (uint32_t i = 1; i < c->ninsns; i++) {
        const gen_insn *gi = &c->insn[i];
        lc_insn_info info;
        unsigned pct = (gi->flags & GI_MMIO) ? 75 : 5;

        if (gi->setup || xo_next(rng) % 100 >= pct)
            continue;
        if (lc_decode(dmode_cpu_mode(c->mode), c->code + gi->off, gi->len,
                      &info) != LC_OK || info.exit_class != LC_CLASS_WEAK)
            continue;
        unsigned len = info.mem_bits / 8;
        if (len != 1 && len != 2 && len != 4 && len != 8)
            continue;
        lc_exit xe;
        lc_result res;
        lc_cpu_state st = c->st;
        memset(&xe, 0, sizeof xe);
        xe.kind = LC_EXIT_MMIO;
        xe.rip = LC_EXIT_RIP_AT;
        xe.u.mmio.gpa = MMIO_PA;
        xe.u.mmio.len = (uint8_t)len;
        xe.u.mmio.is_write = info.mem_write;
        st.rip = c->st.rip + gi->off;
        memcpy(x->ram, c->ram, RAM_SIZE);
        dev_init(&scratch->dev, c);
        diff_vm_devices(x, &scratch->dev);
        lc_vcpu_handle_exit(vc, &st, &xe, &res);
        if (i < DCASE_MAX_INSNS)
            trained[i] = 1;
    }
}

/* ---- Unicorn runs, cached per (code version, count) ------------------------- */

#define UCACHE 4

typedef struct ucache {
    int         ver[UCACHE];
    unsigned    n[UCACHE];
    int         valid[UCACHE];
    run_result *r[UCACHE];
    unsigned    next;
    uint64_t    runs;
} ucache;

static run_result *uc_get(uc_side *u, ucache *q, const dcase *c, int ver,
                          unsigned n, int *setup_err)
{
    for (unsigned i = 0; i < UCACHE; i++)
        if (q->valid[i] && q->ver[i] == ver && q->n[i] == n)
            return q->r[i];
    unsigned i = q->next++ % UCACHE;
    q->valid[i] = 0;
    q->runs++;
    if (diff_verbose())
        printf("unicorn: running code version %d for %u instructions\n", ver,
               n);
    if (ucs_run_n(u, c, q->r[i], n) < 0) {
        *setup_err = 1;
        return q->r[i];
    }
    q->valid[i] = 1;
    q->ver[i] = ver;
    q->n[i] = n;
    return q->r[i];
}

/* ---- independent checks -------------------------------------------------------- */

/* Triage knob (not for the smoke test): LCDIFF_AVOID=knownexits counts
 * exits the way the engine is known to (see the report of the engine
 * issue): an OUTS reading MMIO twice, PUSH/POP with an MMIO operand not
 * at all, so that other exit-count differences show. */
static int known_exits(void)
{
    const char *e = getenv("LCDIFF_AVOID");
    return e && strstr(e, "knownexits") != NULL;
}

/* LCDIFF_AVOID=pastnoexit: do not report runs after a RIP-past exit that
 * save no exit (the engine records the instruction after the exiting one
 * as the one that exited; see the report). */
static int past_no_exit_ok(void)
{
    const char *e = getenv("LCDIFF_AVOID");
    return e && strstr(e, "pastnoexit") != NULL;
}

/* Did Unicorn's trace index `t` store into the traced page `tgfn`? */
static int wrote_traced(const run_result *ru, uint64_t tgfn, unsigned t)
{
    return tgfn < 32 && t < TRACE_MAX && ((ru->wpages[t] >> tgfn) & 1);
}

/* Is the case's traced page one of its paging structures? */
static int pt_traced(const dcase *c, uint64_t tgfn)
{
    return (c->mode == DM_PAE || c->mode == DM_LONG64) &&
           tgfn >= PT_PML4_PA >> 12 && tgfn <= PT_PT1_PA >> 12;
}

/* Did an instruction (Unicorn's RAM before it and after it, `before`
 * and `after`) set an accessed or dirty bit in the traced page, which
 * only the guest's own execution may do? */
static int sets_traced_bits(const uint8_t *before, const uint8_t *after,
                            uint64_t tgfn)
{
    const uint8_t *a = before + (tgfn << 12), *b = after + (tgfn << 12);

    for (unsigned i = 0; i < 4096; i++)
        if (a[i] != b[i] && !((a[i] ^ b[i]) & ~0x60) && !(a[i] & ~b[i]))
            return 1;
    return 0;
}

/* Does the case refuse an access (a port, MMIO bytes, the traced
 * page's stores)? */
static int refuses(const ccfg *k)
{
    return k->vmm.refuse_port >= 0 || k->vmm.refuse_mmio != DIFF_NO_REFUSE || k->vmm.refuse_traced;
}

/* Does `a` reach the refused MMIO bytes of `k`? */
static int mmio_refused(const dev_access *a, const ccfg *k)
{
    return a->kind == AK_MMIO && diff_mmio_refused(&k->vmm, a->addr, a->size);
}

/* Did Unicorn's trace index `t` access the refused port or MMIO
 * bytes of `k`, or store into its traced page if those are refused? */
static int refused_at(const run_result *ru, const ccfg *k, unsigned t)
{
    if (k->vmm.refuse_traced && wrote_traced(ru, k->tgfn, t))
        return 1;
    for (unsigned j = 0; j < ru->dev.nlog && j < DEV_LOG_MAX; j++) {
        const dev_access *a = &ru->dev.log[j];
        if (a->insn != t)
            continue;
        if (a->kind == AK_PIO && a->addr == (uint64_t)k->vmm.refuse_port)
            return 1;
        if (mmio_refused(a, k))
            return 1;
    }
    return 0;
}

/* A stop for what the VMM says of a page (an mmio() or traced_write()
 * answering LC_CB_STOP, an entry of a traced paging structure) leaves the
 * accessed and dirty bits that the walks of the instruction made before
 * it set (ops.h), as the guest's own execution does: where the engine's
 * RAM `got` differs from Unicorn's before that instruction (`before`)
 * only by bits 5 and 6 set in the low byte of a 4-byte-aligned entry
 * (the A and D bits of a paging-structure entry) that Unicorn's
 * execution of the instruction sets too (`after`), take Unicorn's byte.
 * Any other difference stays, for the comparison to report. The number
 * of bytes taken. */
static int take_walk_bits(const uint8_t *before, const uint8_t *after,
                          uint8_t *got)
{
    int n = 0;

    for (uint64_t pa = 0; pa < RAM_SIZE; pa += 4) {
        uint8_t set = (uint8_t)(got[pa] & ~before[pa]);
        if (!set || (got[pa] ^ before[pa]) & ~0x60 ||
            before[pa] & ~got[pa] || set & ~after[pa])
            continue;
        got[pa] = before[pa];
        n++;
    }
    return n;
}

/* Exiting instructions among the first `n` Unicorn executed, or -1.
 * `desc` lists the ones that are not plainly strongly exiting. */
static int count_exits(const dcase *c, const run_result *ru, unsigned n,
                       uint64_t tgfn, char *desc, size_t dn)
{
    int cnt = 0;
    size_t dl = 0;

    if (n > TRACE_MAX || ru->dev.overflow)
        return -1;
    for (unsigned t = 0; t < n; t++) {
        int k = dcase_insn_at(c, ru->trace[t]);
        lc_insn_info info;
        int mmio = 0, pio = 0;

        if (k < 0 || lc_decode(dmode_cpu_mode(c->mode),
                               c->code + c->insn[k].off, c->insn[k].len,
                               &info) != LC_OK)
            return -1;
        for (unsigned j = 0; j < ru->dev.nlog; j++)
            if (ru->dev.log[j].insn == t) {
                mmio |= ru->dev.log[j].kind == AK_MMIO;
                pio |= ru->dev.log[j].kind == AK_PIO;
            }
        int str = info.op == LC_OP_INS || info.op == LC_OP_OUTS;
        /* a store into the traced page exits (LC_EXIT_TRACED), whatever
         * makes it: an explicit operand, a PUSH's or a CALL's slot */
        int traced = wrote_traced(ru, tgfn, t);
        if (info.exit_class == LC_CLASS_STRONG)
            cnt += str ? pio : 1;
        else
            cnt += (info.exit_class == LC_CLASS_WEAK && mmio) || traced;
        if (known_exits() && mmio && (info.op == LC_OP_OUTS ||
                                      info.op == LC_OP_PUSH ||
                                      info.op == LC_OP_POP))
            cnt += info.op == LC_OP_OUTS ? 1 : -1;
        if (((info.exit_class == LC_CLASS_WEAK && mmio) || str || traced) &&
            dl < dn && desc)
            dl += (size_t)snprintf(desc + dl, dn - dl, " #%u %s%s%s%s", t,
                                   lc_op_name(info.op),
                                   mmio ? " (mmio)" : "",
                                   traced ? " (traced)" : "",
                                   str && !pio ? " (no iteration)" : "");
    }
    return cnt;
}

/* Does the engine go on through chained translations with this
 * configuration (libcluster/handle_exit.c, "chained runs")? Then a run can
 * be longer than its first translation, and how much longer depends on
 * what earlier calls left in the translation cache. */
static int chains(const lc_config *f)
{
    const uint32_t need = LC_TECH_SINGLE | LC_TECH_STATIC | LC_TECH_CALLS;

    return (f->techniques & need) == need && f->cflow == LC_CFLOW_M3;
}

/* Index in the trace of the first executed store into the code page. */
static int first_smc(const dcase *c, const run_result *ru, unsigned n)
{
    for (unsigned t = 0; t < n && t < TRACE_MAX; t++) {
        int k = dcase_insn_at(c, ru->trace[t]);
        if (k >= 0 && (c->insn[k].flags & GI_SMC))
            return (int)t;
        /* code from a file: an instruction the case does not describe
         * may store anywhere */
        if (k < 0 && c->real)
            return (int)t;
    }
    return c->real && n > TRACE_MAX ? TRACE_MAX : -1;
}

/* ---- code replacement ------------------------------------------------------------ */

/* A NOP of exactly `len` bytes that the project's decoder reads as one
 * NOP; 0 if none found. */
static int make_nop(int mode, unsigned len, uint8_t *out)
{
    static const uint8_t forms[][8] = {
        { 0x0f, 0x1f, 0x00 }, { 0x0f, 0x1f, 0x40, 0x00 },
        { 0x0f, 0x1f, 0x44, 0x00, 0x00 }, { 0x0f, 0x1f, 0x80, 0, 0 },
        { 0x0f, 0x1f, 0x80, 0, 0, 0, 0 }, { 0x0f, 0x1f, 0x84, 0, 0, 0, 0, 0 },
    };
    static const uint8_t flen[] = { 3, 4, 5, 5, 7, 8 };
    lc_insn_info info;

    for (unsigned f = 0; f <= sizeof flen; f++) {
        uint8_t b[16];
        unsigned pad;
        if (f == sizeof flen) {          /* 66 66 ... 90 */
            memset(b, 0x66, len);
            b[len - 1] = 0x90;
        } else {
            if (flen[f] > len)
                continue;
            pad = len - flen[f];
            memset(b, 0x66, pad);
            memcpy(b + pad, forms[f], flen[f]);
        }
        if (len == 1)
            b[0] = 0x90;
        if (lc_decode(dmode_cpu_mode(mode), b, len, &info) == LC_OK &&
            info.length == len && info.op == LC_OP_NOP) {
            memcpy(out, b, len);
            return 1;
        }
    }
    return 0;
}

static int replaceable(unsigned op)
{
    switch (op) {
    case LC_OP_MOV: case LC_OP_IN: case LC_OP_OUT: case LC_OP_CPUID:
    case LC_OP_NOP: case LC_OP_XCHG: case LC_OP_MOVZX: case LC_OP_MOVSX:
    case LC_OP_MOVSXD: case LC_OP_LEA: case LC_OP_PUSH: case LC_OP_POP:
    case LC_OP_BSWAP: case LC_OP_CBW: case LC_OP_CWD: case LC_OP_SETCC:
    case LC_OP_CMOVCC: case LC_OP_NOT: case LC_OP_RDMSR: case LC_OP_WRMSR:
        return 1;
    default:
        return 0;
    }
}

/* Make c2 = c with changed code: the first instruction's port (IN/OUT
 * with an immediate port), or an executed later instruction replaced by a
 * NOP of the same length. Returns 0 if nothing suitable. */
static int replace_code(const dcase *c, const run_result *ru, unsigned n,
                        ccfg *k, dcase *c2, char *what, size_t wn)
{
    const gen_insn *g0 = &c->insn[0];
    uint8_t op0 = g0->len >= 2 ? c->code[g0->off + g0->len - 2] : 0;
    int cand[TRACE_MAX], nc = 0;

    for (unsigned t = 1; t < n && t < TRACE_MAX; t++) {
        int i = dcase_insn_at(c, ru->trace[t]);
        if (i > 0 && !c->insn[i].setup && !(c->insn[i].flags & GI_LOOP) &&
            replaceable(c->insn[i].op))
            cand[nc++] = i;
    }
    if (c->xfirst.kind == LC_EXIT_IO && (g0->op == LC_OP_IN ||
                                         g0->op == LC_OP_OUT) &&
        g0->len >= 2 && op0 >= 0xe4 && op0 <= 0xe7 &&
        (!nc || crn(k, 3) == 0)) {
        memcpy(c2, c, sizeof *c2);
        uint8_t port = (uint8_t)(c->code[g0->len - 1] ^ (1 + crn(k, 255)));
        c2->code[g0->len - 1] = port;
        c2->ram[CODE_PA + g0->len - 1] = port;
        c2->xfirst.u.io.port = port;
        snprintf(what, wn, "port of the first instruction 0x%02x -> 0x%02x",
                 c->code[g0->len - 1], port);
        return 1;
    }
    if (!nc)
        return 0;
    int i = -1;
    uint8_t nop[16];
    for (int tries = 0; tries < 4 && i < 0; tries++) {
        i = cand[crn(k, (unsigned)nc)];
        if (!make_nop(c->mode, c->insn[i].len, nop) ||
            !memcmp(nop, c->code + c->insn[i].off, c->insn[i].len))
            i = -1;               /* no NOP of that length, or no change */
    }
    if (i < 0)
        return 0;
    memcpy(c2, c, sizeof *c2);
    memcpy(c2->code + c->insn[i].off, nop, c->insn[i].len);
    memcpy(c2->ram + CODE_PA + c->insn[i].off, nop, c->insn[i].len);
    c2->insn[i].op = LC_OP_NOP;
    c2->insn[i].bits = 0;
    c2->insn[i].cnt_kind = CNT_NONE;
    c2->insn[i].flags = 0;
    snprintf(what, wn, "instruction %d (+0x%x, %s) replaced by a %u-byte NOP",
             i, c->insn[i].off, lc_op_name((lc_op)c->insn[i].op),
             c->insn[i].len);
    return 1;
}

/* ---- statistics ----------------------------------------------------------------- */

typedef struct cstats {
    uint64_t cases, calls, mismatches, setup_errors, insns;
    uint64_t clusters;               /* translated runs */
    uint64_t multi;                  /* runs with exits_saved >= 1 */
    uint64_t saved;                  /* sum of exits_saved */
    uint64_t stops[LC_STOP_REASON_COUNT_];
    uint64_t loops_run;              /* runs that took a backward branch */
    uint64_t smc_runs;               /* runs ending with an SMC stop */
    uint64_t replaced;               /* code-replacement sequences */
    uint64_t bound_checked;          /* runs with a static lower bound > 1 */
    uint64_t past_runs;              /* LC_EXIT_RIP_PAST calls handled */
    uint64_t declined_past;          /* ... declined (nothing to run) */
    uint64_t declined_vmfail;        /* first VMREAD/VMWRITE the VMM
                                      * failed, declined cleanly */
    uint64_t max_insns, max_saved;
    uint64_t traced_cases;           /* cases with a traced page */
    uint64_t traced_runs;            /* agreed calls storing into it */
    uint64_t traced_writes;          /* ... traced_write() calls */
    uint64_t second_vcpu;            /* V calls agreed */
    uint64_t concurrent;             /* W1, W2 calls agreed */
    uint64_t refused_splits;         /* stops between the halves of a
                                      * merged pair the VMM refused
                                      * (pair_split()) */
    uint64_t split_picks;            /* refused dwords picked as such a
                                      * pair's second half */
    uint64_t max_unasked;            /* the longest stretch of a run
                                      * without an irq_pending question,
                                      * in window instructions
                                      * (irq_unasked()) */
    uint64_t asks_unmatched;         /* runs whose questions did not match
                                      * Unicorn's trace */
    uint64_t unaligned_mmio;         /* calls on code from a file not
                                      * compared: MMIO split differently
                                      * (split_mmio()) */
    uint64_t fetch_ahead_bits;       /* ... A bits of Unicorn's look past
                                      * the end forgiven (fetch_ahead_bits()) */
    uint64_t uc_aborts;              /* ... calls not compared: Unicorn's
                                      * translator aborted */
    uint64_t partial_rep;            /* ... calls not compared: the run
                                      * ended inside a REP INS/OUTS */
    uint64_t fault_walk_bits;        /* ... runs stopped by a fault keeping
                                      * its walks' bits (check_call) */
    uint64_t shadow_pairs;           /* STI, MOV SS or POP SS run with the
                                      * next instruction in agreed runs */
    uint64_t refused_cases;          /* cases with a refused port */
    uint64_t refused_stops;          /* runs stopped right before one */
    uint64_t declined_refused;       /* first instruction's refused */
    uint64_t refused_mmio_cases;     /* cases with a refused MMIO qword */
    uint64_t trefused_cases;         /* cases refusing traced stores */
    uint64_t refused_shadow;         /* refused_stops before the opener
                                      * of an interrupt shadow */
    uint64_t pt_traced_cases;        /* cases tracing a paging structure */
    uint64_t pt_stops;               /* runs ended early before an A/D
                                      * bit in it (pt_traced_stop()) */
    uint64_t declined_pt;            /* first instruction needing one */
    uint64_t pt_walk_bits;           /* ... runs that left earlier walks'
                                      * bits (take_walk_bits()) */
    uint64_t refused_walk_bits;      /* calls that left a refused MMIO
                                      * access's walk bits */
    uint64_t declined_traced;        /* first instruction refused: its
                                      * store would reach the traced page
                                      * (plain_store()) */
    uint64_t cflow_runs[4];
    uint64_t first_kind[LC_EXIT_KIND_COUNT_]; /* agreed calls per exit kind */
    uint64_t first_kind_multi[LC_EXIT_KIND_COUNT_]; /* ... saving exits */
} cstats;

/* ---- one case ---------------------------------------------------------------------- */

typedef struct cctx {
    const cdiff_opts *o;
    uc_side    *u;               /* the current case's: uc[0] or uc[1] */
    uc_side    *uc[2];           /* without, with the write hook */
    ucache      q;
    dcase      *c2;
    run_result *re[10];
    run_result *scratch;
    uint8_t    *vmram;           /* the guest RAM the engine sees */
    uint8_t    *wram[2];         /* ... W1's and W2's copies of it */
    struct wpool *pool;          /* their threads (concurrent_calls()) */
    cstats      s;
    int         verbose_case;
} cctx;

/* With a traced paging structure, did Unicorn's instruction `n` of the
 * current case set an A or D bit in it (sets_traced_bits())? Then the
 * engine rightly stops before it, keeping the bits that the walks of the
 * instruction's earlier accesses set (a POP to memory reads the stack
 * first): a stop for what the VMM says of a page, which the guest's own
 * execution reaches after those walks too (ops.h). Unicorn's RAM after
 * the instruction is left in x->scratch->ram for take_walk_bits().
 * Unicorn's runs of n and n + 1 instructions may leave the cache: the
 * caller gets its own again. */
static int pt_traced_stop(cctx *x, const dcase *c, const ccfg *k, int ver,
                          unsigned n)
{
    int err = 0;

    if (!pt_traced(c, k->tgfn) || n >= TRACE_MAX)
        return 0;
    run_result *rn1 = uc_get(x->u, &x->q, c, ver, n + 1, &err);
    if (err || rn1->ntrace <= n)
        return 0;
    memcpy(x->scratch->ram, rn1->ram, RAM_SIZE);
    run_result *rn = n ? uc_get(x->u, &x->q, c, ver, n, &err) : NULL;
    if (err)
        return 0;
    return sets_traced_bits(rn ? rn->ram : c->ram, x->scratch->ram, k->tgfn);
}

static void report(cctx *x, const dcase *c, const ccfg *k, const ecall *e,
                   const run_result *ru, const char *what, uint64_t idx,
                   const char *extra)
{
    char cfg[256];

    x->s.mismatches++;
    if (x->s.mismatches > x->o->max_report && !x->o->verbose)
        return;
    fmt_config(cfg, sizeof cfg, k);
    printf("MISMATCH engine mode=%s seed=%llu case=%llu call %s\n",
           dmode_name(c->mode), (unsigned long long)x->o->seed,
           (unsigned long long)idx, e->label);
    printf("  reproduce: lc-diff --engine --mode %s --seed %llu --case %llu "
           "--groups %u%s%s --verbose\n", dmode_name(c->mode),
           (unsigned long long)x->o->seed, (unsigned long long)idx,
           x->o->groups, x->o->code ? " --code " : "",
           x->o->code ? x->o->code->path : "");
    if (c->real)
        printf("  code: %s from file offset 0x%x\n", x->o->code->path,
               (unsigned)c->src_off);
    printf("  first difference: %s\n", what);
    if (extra && extra[0])
        printf("  %s\n", extra);
    printf("  config: %s\n", cfg);
    printf("  exit: %s", lc_exit_kind_name(c->xfirst.kind));
    if (c->xfirst.kind == LC_EXIT_IO)
        printf(" port 0x%x size %u %s", c->xfirst.u.io.port,
               c->xfirst.u.io.size, c->xfirst.u.io.is_out ? "out" : "in");
    printf("\n  engine: status %d %s stop %s insns %u exits_done %u "
           "exits_saved %u translated %u dirty 0x%x\n", (int)e->status,
           e->res.disposition == LC_HANDLED ? "handled" : "declined",
           lc_stop_reason_name(e->res.stop), e->res.insns,
           e->res.exits_done, e->res.exits_saved, e->res.translated,
           e->res.dirty);
    if (x->o->verbose) {
        diff_print_case(c, ru);
        diff_print_result("unicorn", c, ru);
        diff_print_result("engine", c, e->r);
    }
}

static int decode_at(const dcase *c, int k, lc_insn_info *info)
{
    return lc_decode(dmode_cpu_mode(c->mode), c->code + c->insn[k].off,
                     c->insn[k].len, info) == LC_OK;
}

static int opens_shadow(const dcase *c, int k);

/* Does the case's instruction `ki`, run with RFLAGS `rflags`, open an
 * interrupt shadow (SDM vol. 3 6.8.3: STI with IF clear, a load of SS)?
 * The engine never stops between it and the next instruction
 * (runtime/exec.c, shadow_run()). */
static int shadow_opened(const dcase *c, int ki, uint64_t rflags)
{
    lc_insn_info info;

    if (ki < 0 || !decode_at(c, ki, &info) || !opens_shadow(c, ki))
        return 0;
    return info.op != LC_OP_STI || !(rflags & LC_RFLAGS_IF);
}

/* The instruction a run that stopped after `n` stopped before: Unicorn's
 * n-th, or the next when that one opens an interrupt shadow. Its index,
 * or -1 (Unicorn ran no such instruction). */
static int stopped_index(cctx *x, const dcase *c, int ver, unsigned n)
{
    int err = 0;

    if (n + 1 > TRACE_MAX)
        return -1;
    run_result *r2 = uc_get(x->u, &x->q, c, ver,
                            n + 2 <= TRACE_MAX ? n + 2 : n + 1, &err);
    if (err || r2->ntrace <= n)
        return -1;
    int ki = dcase_insn_at(c, r2->trace[n]);
    if (r2->ntrace <= n + 1)
        return (int)n;
    run_result *r0 = uc_get(x->u, &x->q, c, ver, n, &err);
    if (err)
        return -1;
    return shadow_opened(c, ki, r0->rflags) ? (int)n + 1 : (int)n;
}

/* Its operation (LC_OP_OTHER if none). */
static unsigned stopped_op(cctx *x, const dcase *c, int ver, unsigned n)
{
    int m = stopped_index(x, c, ver, n), err = 0;

    if (m < 0)
        return LC_OP_OTHER;
    run_result *r = uc_get(x->u, &x->q, c, ver, (unsigned)m + 1, &err);
    int ki = !err && r->ntrace > (unsigned)m
             ? dcase_insn_at(c, r->trace[m]) : -1;
    return ki >= 0 ? c->insn[ki].op : LC_OP_OTHER;
}

/* With merged exit pairs (ccfg.wide): are instructions m - 1 and m of
 * Unicorn's run `r` two MMIO writes the engine may merge
 * (translator/pair.c: one write each, adjacent, of one width the VMM
 * takes doubled, the lower naturally aligned to the double)? Their
 * writes in *w0 and *w1. */
static int mergeable(const run_result *r, const ccfg *k, unsigned m,
                     const dev_access **w0, const dev_access **w1)
{
    int n0 = 0, n1 = 0;

    if (!k->vmm.wide || m == 0 || r->ntrace <= m)
        return 0;
    for (unsigned j = 0; j < r->dev.nlog && j < DEV_LOG_MAX; j++) {
        const dev_access *a = &r->dev.log[j];
        if (a->kind != AK_MMIO || !a->is_write)
            continue;
        if (a->insn == m - 1) {
            *w0 = a;
            n0++;
        } else if (a->insn == m) {
            *w1 = a;
            n1++;
        }
    }
    if (n0 != 1 || n1 != 1)     /* one write each, as two MOVs make */
        return 0;
    uint64_t a0 = (*w0)->addr, a1 = (*w1)->addr, lo = a0 < a1 ? a0 : a1;
    unsigned w = (*w0)->size;
    return (*w1)->size == w && w <= 4 && (k->vmm.wide & (2 * w)) &&
           (a0 > a1 ? a0 - a1 : a1 - a0) == w && !(lo & (2 * w - 1));
}

/* Is the refused instruction m the second of a mergeable pair whose first
 * the VMM takes (a refused dword reached through the merged access's
 * second half)? The engine then runs the two as two stores, the first
 * done, and stops before the second; a stop before the first is a
 * mismatch (the first is no refused access). */
static int pair_split(cctx *x, const dcase *c, const ccfg *k, int ver,
                      unsigned m)
{
    const dev_access *w0, *w1;
    int err = 0;

    if (k->vmm.refuse_mmio == DIFF_NO_REFUSE || m + 1 > TRACE_MAX)
        return 0;
    run_result *r = uc_get(x->u, &x->q, c, ver, m + 1, &err);
    return !err && mergeable(r, k, m, &w0, &w1) && !mmio_refused(w0, k) &&
           mmio_refused(w1, k);
}

/* The refused instruction a callback stop after `n` stopped before
 * (stopped_index()), or -1 if it makes no refused access. Unicorn's RAM
 * after it is left in x->scratch->ram. */
static int refused_insn(cctx *x, const dcase *c, const ccfg *k, int ver,
                        unsigned n)
{
    int m = refuses(k) ? stopped_index(x, c, ver, n) : -1, err = 0;

    if (m < 0)
        return -1;
    run_result *r = uc_get(x->u, &x->q, c, ver, (unsigned)m + 1, &err);
    if (err || r->ntrace <= (unsigned)m || !refused_at(r, k, (unsigned)m))
        return -1;
    memcpy(x->scratch->ram, r->ram, RAM_SIZE);
    return m;
}

/* Is instruction `info` one the walk follows without counting it against
 * the window (a direct or indirect JMP, a CALL, a RET)? */
static int followed_transfer(const lc_insn_info *info)
{
    return info->cflow == LC_CF_JMP_REL || info->cflow == LC_CF_JMP_IND ||
           info->cflow == LC_CF_CALL_REL || info->cflow == LC_CF_CALL_IND ||
           info->cflow == LC_CF_RET;
}

/* Interrupt latency (paper section 6: a loop checks for deliverable
 * interrupts at its head). With irq_pending answered (k->irq), the engine
 * asks at the head of every loop it lays out and before it chains into
 * the next translation, whenever IF is set. Between two questions it
 * therefore runs at most one translation's straight path: the window's
 * instructions (lcx_window()) and the JMPs, CALLs and RETs the walk
 * followed, which the window does not count. A loop it lays out unrolled
 * (the walk predicted its count, or laid a branch's taken side out next)
 * is part of that path. A longer stretch without a question that takes a
 * backward branch (a JMP, Jcc, LOOP or indirect JMP to a target at or
 * before itself), with IF set at every one, ran a loop past its head
 * unasked: a due interrupt would wait for the loop's end.
 *
 * Where each question was asked is known by its RIP and RCX
 * (dev_side.ask), which Unicorn's trace of the run's `n` instructions
 * (`pre` of them the VMM's) has before each instruction: a loop's
 * addresses recur, so a question may fit several places. Each gets the
 * earliest place it can have (matching in order from the start) and the
 * latest (from the end); a stretch is too long only if it is too long
 * between the latest place of one question and the earliest of the next,
 * so no reading of the questions makes it short enough. And a question
 * answered yes must end the run where it was asked (*ran_on set if not).
 * Returns the trace index of the instruction that made a stretch too
 * long, or of the earliest place of a question answered yes that the run
 * went on from, or -1 (also when the questions do not fit the trace:
 * counted). Unicorn's cache may lose `ru` (the caller gets it again). */
static int irq_unasked(cctx *x, const dcase *c, int ver, const ccfg *k,
                       const dev_side *d, const run_result *ru,
                       unsigned pre, unsigned n, int *ran_on)
{
    static uint64_t tr[TRACE_MAX + 1], cx[TRACE_MAX + 1];
    static unsigned early[DIFF_ASK_MAX], late[DIFF_ASK_MAX];
    unsigned na = d->nask, window = lcx_window(&k->cfg);
    int q;

    if (!k->irq || na > DIFF_ASK_MAX || n > TRACE_MAX || ru->ntrace < n)
        return -1;
    memcpy(tr, ru->trace, n * sizeof tr[0]);
    memcpy(cx, ru->trace_cl, n * sizeof cx[0]);
    tr[n] = ru->rip;
    cx[n] = ru->gpr[LC_RCX];
#define ASKED_AT(j, t) (d->ask[j] == tr[t] && d->ask_cx[j] == cx[t])
    q = (int)pre;
    for (unsigned j = 0; j < na; j++) {
        while (q <= (int)n && !ASKED_AT(j, q))
            q++;
        if (q > (int)n) {
            x->s.asks_unmatched++;
            return -1;
        }
        early[j] = (unsigned)q;
    }
    q = (int)n;
    for (unsigned j = na; j-- > 0;) {
        while (q >= (int)pre && !ASKED_AT(j, q))
            q--;
        late[j] = (unsigned)q;      /* (found: the early places fit) */
    }
    /* A question answered yes ends the run there: at a loop head
     * (LC_STOP_IRQ) or before chaining. */
    for (unsigned j = 0; j < na; j++)
        if (diff_irq_due(k->irq, d->ask[j]) &&
            (j + 1 < na || !ASKED_AT(j, n))) {
            *ran_on = 1;
            return (int)early[j];
        }
#undef ASKED_AT
    /* the stretches [from, to): before the first question, between two,
     * after the last */
    for (unsigned g = 0; g <= na; g++) {
        unsigned from = g == 0 ? pre : late[g - 1];
        unsigned to = g == na ? n : early[g];
        unsigned len = 0;

        for (unsigned t = from; t < to; t++) {
            int ki = dcase_insn_at(c, tr[t]);
            lc_insn_info info;
            if (ki < 0 || !decode_at(c, ki, &info))
                return -1;
            len += !followed_transfer(&info);
            if (len > x->s.max_unasked)
                x->s.max_unasked = len;
            if (len <= window + 1)
                continue;
            /* too long: a loop ran past its head, IF set there */
            int back = 0;
            for (unsigned u = from + 1; u <= t; u++) {
                int kb = dcase_insn_at(c, tr[u - 1]), err = 0;
                lc_insn_info bi;
                if (kb < 0 || !decode_at(c, kb, &bi) ||
                    (bi.cflow != LC_CF_JMP_REL &&
                     bi.cflow != LC_CF_JCC_REL &&
                     bi.cflow != LC_CF_JMP_IND) || tr[u] > tr[u - 1])
                    continue;
                run_result *r = uc_get(x->u, &x->q, c, ver, u, &err);
                if (err || !(r->rflags & LC_RFLAGS_IF))
                    return -1;
                back = 1;
            }
            if (back)
                return (int)t;
            break;
        }
    }
    return -1;
}

/* The paper's control-flow methods (s6) on the executed path of a
 * translated run: with none, no branch runs; with M1 a taken branch ends
 * the run; with M2 a taken backward branch does. Returns a description of
 * the first violation, or NULL. */
static const char *cflow_violation(const dcase *c, const run_result *ru,
                                   unsigned n, lc_cflow_method cf,
                                   unsigned *at)
{
    for (unsigned t = 0; t < n && t < TRACE_MAX; t++) {
        int k = dcase_insn_at(c, ru->trace[t]);
        lc_insn_info info;
        /* HLT (LC_CF_HALT) ends the run after it: no branch */
        if (k < 0 || !decode_at(c, k, &info) || info.cflow == LC_CF_NONE ||
            info.cflow == LC_CF_HALT)
            continue;
        *at = t;
        if (cf == LC_CFLOW_NONE)
            return "a branch ran (control-flow method none)";
        if (t + 1 >= n)
            continue;
        int taken = ru->trace[t + 1] != ru->trace[t] + info.length;
        if (taken && cf == LC_CFLOW_M1)
            return "the run went on after a taken branch (method 1)";
        /* A CALL, RET or indirect transfer the cluster follows is no
         * loop: the run goes on only at its predicted target, and never
         * back (translator/calls.c). */
        if (taken && cf == LC_CFLOW_M2 && ru->trace[t + 1] < ru->trace[t] &&
            info.cflow != LC_CF_CALL_REL && info.cflow != LC_CF_CALL_IND &&
            info.cflow != LC_CF_RET && info.cflow != LC_CF_JMP_IND)
            return "the run went on after a taken backward branch (method 2)";
    }
    return NULL;
}

/* Does instruction k open an interrupt shadow (STI, or a load of SS)? */
static int opens_shadow(const dcase *c, int k)
{
    lcd_insn li;

    return lcd_decode(dmode_cpu_mode(c->mode), c->code + c->insn[k].off,
                      c->insn[k].len, &li) == LC_OK && lcr_opens_shadow(&li);
}

/* Does the engine store only to plain RAM with this instruction, stopping
 * before it when its store would reach a traced page (runtime/exec.c:
 * LCR_ACC_PLAIN)? PUSHA, a 32-bit PUSH of a segment register (it keeps
 * the slot's upper bytes), PUSH or POP with a memory operand (a device
 * read with a store the VMM might refuse), VMREAD to memory. */
static int plain_store(const dcase *c, int k)
{
    lcd_insn li;

    if (lcd_decode(dmode_cpu_mode(c->mode), c->code + c->insn[k].off,
                   c->insn[k].len, &li) != LC_OK)
        return 1;
    switch (li.info.op) {
    case LC_OP_PUSHA:
        return 1;
    case LC_OP_VMREAD:
        return li.info.has_mem;
    case LC_OP_PUSH:
    case LC_OP_POP:
        return li.nopnds > 0 &&
               (li.opnd[0].kind == LCD_OPND_MEM ||
                (li.opnd[0].kind == LCD_OPND_REG &&
                 li.opnd[0].reg.cls == LCD_REG_SEG));
    default:
        return 0;
    }
}

/* Static clusters (s4) on straight code: the run must get at least to
 * the last strongly exiting instruction that is reachable from the first
 * without a branch, within the window and the gap-filler cap, before any
 * store into the code page. Weakly exiting instructions count as memory
 * gap fillers (a conservative bound: predicted ones could only extend the
 * cluster). Returns the minimal instruction count. */
/* Register-only instructions of the runtime that raise no exception
 * at CPL 0 whatever the registers hold (and IN, OUT, CPUID, which the
 * fake VMM answers), for static_extent() on code from a file. */
static int cannot_fault(const lc_insn_info *info)
{
    if (info->has_mem)
        return 0;
    switch (info->op) {
    case LC_OP_MOV: case LC_OP_MOVZX: case LC_OP_MOVSX: case LC_OP_MOVSXD:
    case LC_OP_LEA: case LC_OP_XCHG: case LC_OP_CMOVCC: case LC_OP_SETCC:
    case LC_OP_BSWAP: case LC_OP_CBW: case LC_OP_CWD:
    case LC_OP_ADD: case LC_OP_ADC: case LC_OP_SUB: case LC_OP_SBB:
    case LC_OP_CMP: case LC_OP_AND: case LC_OP_OR: case LC_OP_XOR:
    case LC_OP_TEST: case LC_OP_INC: case LC_OP_DEC: case LC_OP_NEG:
    case LC_OP_NOT: case LC_OP_SHL: case LC_OP_SHR: case LC_OP_SAR:
    case LC_OP_ROL: case LC_OP_ROR: case LC_OP_RCL: case LC_OP_RCR:
    case LC_OP_MUL: case LC_OP_IMUL: case LC_OP_CLC: case LC_OP_STC:
    case LC_OP_CMC: case LC_OP_CLD: case LC_OP_STD: case LC_OP_NOP:
    case LC_OP_BT: case LC_OP_BTS: case LC_OP_BTR: case LC_OP_BTC:
    case LC_OP_IN: case LC_OP_OUT: case LC_OP_CPUID:
        return 1;
    default:
        return 0;
    }
}

static unsigned static_extent(const dcase *c, const lc_config *f,
                              int traced)
{
    unsigned last = 0, gap = 0;
    /* the window the engine decodes, scaled by the exit cost (the gap
     * cap below stays the configured one: a lower bound) */
    unsigned window = lcx_window(f);

    if (!(f->techniques & LC_TECH_STATIC) || !(f->techniques & LC_TECH_SINGLE))
        return 1;
    /* a HLT ends the run after it */
    if (c->ninsns && c->insn[0].op == LC_OP_HLT)
        return 1;
    for (uint32_t i = 1; i < c->ninsns && i < window; i++) {
        lc_insn_info info;
        /* the run stops before a declined instruction and before a
         * VMREAD/VMWRITE the VMM fails (LC_CB_STOP) */
        if (c->insn[i].off != c->insn[i - 1].off + c->insn[i - 1].len ||
            !decode_at(c, (int)i, &info) ||
            info.exit_class == LC_CLASS_TERMINATOR ||
            info.cflow != LC_CF_NONE ||
            (c->insn[i].flags & (GI_SMC | GI_STOP | GI_VMFAIL)))
            break;
        /* an INS or OUTS whose memory is MMIO (or, for INS, a traced
         * page) is not run: a port and a device in one instruction
         * (runtime/exec.c, string_io); which it is depends on rSI/rDI
         * then, so no bound reaches past one */
        if (info.op == LC_OP_INS || info.op == LC_OP_OUTS)
            break;
        /* code from a file: no generator made its operands safe, so only
         * instructions that cannot fault or be refused reach on */
        if (c->real && !cannot_fault(&info))
            break;
        /* with a traced page, where its store may go (plain_store()) */
        if (traced && plain_store(c, (int)i))
            break;
        if (info.exit_class == LC_CLASS_STRONG) {
            last = i;
            gap = 0;
        } else if (info.has_mem && ++gap > f->max_mem_gap_fillers) {
            break;
        }
        /* STI, MOV SS and POP SS run the next instruction in their
         * interrupt shadow, in the same step, and the run ends after it
         * (runtime/exec.c, shadow_run) */
        if (opens_shadow(c, (int)i)) {
            /* (a REP INS/OUTS is not started there: the run stops
             * before the instruction opening the shadow; nor is one
             * with MMIO, see above) */
            if (i + 1 < c->ninsns && i + 1 < window &&
                decode_at(c, (int)i + 1, &info) &&
                info.exit_class == LC_CLASS_STRONG &&
                info.op != LC_OP_INS && info.op != LC_OP_OUTS)
                last = i + 1;
            break;
        }
    }
    if (last + 1 <= f->insn_budget)
        return last + 1;
    /* the budget cuts the run: never between an instruction opening a
     * shadow and the next, which need two of it together */
    return f->insn_budget >= 1 && opens_shadow(c, (int)f->insn_budget - 1)
           ? f->insn_budget - 1 : f->insn_budget;
}

/* Did the run end by falling through its last instruction (rather than a
 * taken branch leaving the cluster)? */
static int fell_through(const dcase *c, const run_result *ru, unsigned n)
{
    if (n == 0 || n > TRACE_MAX || n > ru->ntrace)
        return 0;
    for (uint32_t i = 0; i < c->ninsns; i++) {
        lc_insn_info info;
        if (c->code_la + c->insn[i].off != ru->trace[n - 1])
            continue;
        /* A RET or an indirect transfer that lands right after itself
         * still left through a (mispredicted) target: the cluster
         * followed it to where it predicted (translator/calls.c). So may
         * a conditional branch not taken: the walk lays out a branch's
         * taken side next when it resumes at its target or follows it
         * back to a loop head (calls.c), and the side not taken is then
         * outside the cluster. */
        if (decode_at(c, (int)i, &info) &&
            (info.cflow == LC_CF_RET || info.cflow == LC_CF_CALL_IND ||
             info.cflow == LC_CF_CALL_REL || info.cflow == LC_CF_JMP_IND ||
             info.cflow == LC_CF_JCC_REL))
            return 0;
        return ru->rip == ru->trace[n - 1] + c->insn[i].len;
    }
    return 0;
}

/* Did the engine's part of a run (trace entries pre..n-1) execute an
 * instruction train() reported as exiting, or a strongly exiting one? */
static int ran_trained(const dcase *c, const run_result *ru, unsigned pre,
                       unsigned n)
{
    for (unsigned t = pre; t < n && t < TRACE_MAX && t < ru->ntrace; t++)
        for (uint32_t i = 0; i < c->ninsns && i < DCASE_MAX_INSNS; i++) {
            lc_insn_info info;
            if (c->code_la + c->insn[i].off != ru->trace[t])
                continue;
            if (trained[i])
                return 1;
            /* A strongly exiting instruction that made no access (REP
             * INS/OUTS with a zero count) was still worth clustering. */
            if (lc_decode(dmode_cpu_mode(c->mode), c->code + c->insn[i].off,
                          c->insn[i].len, &info) == LC_OK &&
                info.exit_class == LC_CLASS_STRONG)
                return 1;
        }
    return 0;
}

/* Did a run access MMIO in a way the two sides split differently: at an
 * address that is no multiple of the size, 8 bytes at once (Unicorn
 * makes two accesses of 4, UNICORN_BUGS.md 5), or (Unicorn's side, whose
 * log names the instruction) in two accesses or more by one instruction? */
static int split_mmio(const dev_side *d, int tagged)
{
    unsigned n = d->nlog < DEV_LOG_MAX ? d->nlog : DEV_LOG_MAX;

    for (unsigned i = 0; i < n; i++) {
        const dev_access *a = &d->log[i];
        if (a->kind != AK_MMIO)
            continue;
        if (a->size == 8 || (a->size && a->addr % a->size))
            return 1;
        for (unsigned j = i + 1; tagged && j < n; j++)
            if (d->log[j].kind == AK_MMIO && d->log[j].insn == a->insn)
                return 1;
    }
    return 0;
}

/* Unicorn translates the block after the last instruction of a run before
 * its code hook stops there, and that fetch's walks (its page, and the
 * next one a block may reach into) set accessed bits the run's
 * instructions do not: a run of code from a file often ends by a jump
 * onto another page. An accessed bit on those walks which Unicorn set,
 * clear before and clear on the engine's side, is given to the engine's
 * result (the engine's own walks to that page, had it made any, would
 * have set it). The number of entries. */
static unsigned fetch_ahead_bits(const dcase *c, const run_result *ru,
                                 run_result *got)
{
    uint64_t pa[8], e0, eu, eg;
    /* (a block QEMU translates may reach into the next page) */
    unsigned n = diff_walk_entries(c->mode, c->ram, c->st.cr3, ru->rip, pa);
    unsigned k = 0;

    n += diff_walk_entries(c->mode, c->ram, c->st.cr3,
                           (ru->rip | 0xfff) + 1, pa + n);
    for (unsigned i = 0; i < n; i++) {
        memcpy(&e0, c->ram + pa[i], 8);
        memcpy(&eu, ru->ram + pa[i], 8);
        memcpy(&eg, got->ram + pa[i], 8);
        if (!(e0 & 0x20) && eu == (e0 | 0x20) && eg == e0) {
            memcpy(got->ram + pa[i], &eu, 8);
            k++;
        }
    }
    return k;
}

/* Is the instruction at linear `la` of the case's initial RAM a REP INS
 * or REP OUTS? */
static int rep_string_at(const dcase *c, uint64_t la)
{
    int64_t pa = diff_la_to_pa(c->mode, c->ram, c->st.cr3, la);
    lc_insn_info info;

    if (pa < 0 || (uint64_t)pa >= RAM_SIZE)
        return 0;
    return lc_decode(dmode_cpu_mode(c->mode), c->ram + pa,
                     RAM_SIZE - (uint64_t)pa < 15 ? RAM_SIZE - (uint64_t)pa
                                                  : 15, &info) == LC_OK &&
           (info.op == LC_OP_INS || info.op == LC_OP_OUTS) && info.rep;
}

/* Check one call against Unicorn; `want1`: the call must run the exiting
 * instruction alone. Returns 1 if it agreed. */
static int check_call(cctx *x, const dcase *c, int ver, const ccfg *k,
                      ecall *e, uint64_t idx, int want1)
{
    char what[600], extra[256] = "";
    const lc_result *res = &e->res;
    int err = 0;
    unsigned pre = e->pre, n = res->insns + pre;

    x->s.calls++;
    if (e->status != LC_OK) {
        snprintf(what, sizeof what, "lc_vcpu_handle_exit returned %d (%s)",
                 (int)e->status, lc_status_name(e->status));
        report(x, c, k, e, e->r, what, idx, NULL);
        return 0;
    }
    if (e->traced_at >= 0 || e->r->dev.nstray) {
        if (e->traced_at >= 0)
            snprintf(what, sizeof what, "traced page: the engine changed "
                     "gpa 0x%llx itself, not through traced_write()",
                     (unsigned long long)((k->tgfn << 12) +
                                          (unsigned)e->traced_at));
        else
            snprintf(what, sizeof what, "traced_write() for gpa 0x%llx, "
                     "outside the traced page 0x%llx",
                     (unsigned long long)e->r->dev.tstray,
                     (unsigned long long)k->tgfn << 12);
        report(x, c, k, e, e->r, what, idx, NULL);
        return 0;
    }
    if (pre && res->disposition == LC_DECLINED && !e->untouched_bad) {
        x->s.declined_past++;     /* nothing to run after it: fine */
        return 1;
    }
    if (c->xfirst_declined && !pre) {
        /* the VMM failed the exiting VMREAD/VMWRITE (LC_CB_STOP): the
         * engine must decline it and leave the state alone, so that the
         * VMM emulates the failure on this exit */
        if (res->disposition == LC_DECLINED && !e->untouched_bad &&
            !e->ram_touched) {
            x->s.declined_vmfail++;
            return 1;
        }
        snprintf(what, sizeof what, "the VMM failed the exiting %s, yet the "
                 "engine %s (stop %s, %u instructions)%s%s",
                 lc_exit_kind_name(c->xfirst.kind),
                 res->disposition == LC_HANDLED ? "handled it" : "declined",
                 lc_stop_reason_name(res->stop), res->insns,
                 e->untouched_bad ? " and changed the state" : "",
                 e->ram_touched ? " and changed the RAM" : "");
        report(x, c, k, e, e->r, what, idx, NULL);
        return 0;
    }
    if ((res->disposition != LC_HANDLED || res->insns == 0) && !pre &&
        (k->tgfn != DIFF_NO_TRACE || refuses(k)) && !e->untouched_bad) {
        /* a clean decline of an exiting instruction the engine must leave
         * to the VMM: its access is a refused one (a refused MMIO access
         * may leave its walk's A/D bits), or its store goes to the traced
         * page and it is of a kind the engine runs only onto plain RAM
         * (plain_store()) */
        int held = refused_insn(x, c, k, ver, 0) == 0 ? 1
                         : pt_traced_stop(x, c, k, ver, 0) ? 2 : 0;
        /* (a refusal, or a walk needing a bit in the traced paging
         * structure, may leave the A/D bits of the instruction's walks:
         * take_walk_bits()) */
        if (held && e->ram_touched &&
            take_walk_bits(c->ram, x->scratch->ram, e->r->ram) > 0 &&
            ram_untouched(c, e->r->ram)) {
            e->ram_touched = 0;
            x->s.refused_walk_bits += held == 1;
        }
        if (held && !e->ram_touched) {
            x->s.declined_refused += held == 1;
            x->s.declined_pt += held == 2;
            return 1;
        }
        run_result *r1 = uc_get(x->u, &x->q, c, ver, 1, &err);
        if (!err && r1->ntrace == 1 && !e->ram_touched &&
            wrote_traced(r1, k->tgfn, 0) && plain_store(c, 0)) {
            x->s.declined_traced++;
            return 1;
        }
    }
    if (res->disposition != LC_HANDLED || res->insns == 0) {
        snprintf(what, sizeof what, "the engine declined the exit (stop %s)%s",
                 lc_stop_reason_name(res->stop),
                 e->untouched_bad ? " and changed the state" : "");
        report(x, c, k, e, e->r, what, idx, NULL);
        return 0;
    }
    x->s.stops[res->stop < LC_STOP_REASON_COUNT_ ? res->stop : 0]++;
    /* stopped right before a refused access (m, in Unicorn's trace), or
     * before a walk needing a bit in a traced paging structure: the A/D
     * bits the walks of that instruction set stay (take_walk_bits()) */
    int m = res->stop == LC_STOP_CALLBACK && n < TRACE_MAX
            ? refused_insn(x, c, k, ver, n) : -1;
    int pt = res->stop == LC_STOP_TERMINATOR &&
             pt_traced_stop(x, c, k, ver, n);
    if (m >= 0 || pt) {
        int err2 = 0;
        run_result *rn = uc_get(x->u, &x->q, c, ver, n, &err2);
        int kept = !err2 &&
                   take_walk_bits(rn->ram, x->scratch->ram, e->r->ram) > 0;
        x->s.pt_walk_bits += kept && pt;
        x->s.refused_walk_bits += kept && !pt;
    }
    /* code from a file: a run stopped by a fault keeps the accessed bits
     * the faulting instruction's walks set before it faulted, as the CPU
     * does (a descriptor read from the GDT before a #GP): those Unicorn
     * sets too when it starts that instruction */
    if (c->real && res->stop == LC_STOP_FAULT && n + 1 <= TRACE_MAX) {
        int err2 = 0;
        run_result *rf = uc_get(x->u, &x->q, c, ver, n + 1, &err2);
        if (!err2 && rf->ntrace == n + 1) {
            memcpy(x->scratch->ram, rf->ram, RAM_SIZE);
            run_result *rn = uc_get(x->u, &x->q, c, ver, n, &err2);
            if (!err2 && take_walk_bits(rn->ram, x->scratch->ram,
                                        e->r->ram) > 0)
                x->s.fault_walk_bits++;
        }
    }
    run_result *ru = uc_get(x->u, &x->q, c, ver, n, &err);
    if (err) {
        x->s.setup_errors++;
        printf("SETUP ERROR engine mode=%s seed=%llu case=%llu: %s\n",
               dmode_name(c->mode), (unsigned long long)x->o->seed,
               (unsigned long long)idx, ru->why);
        return 0;
    }
    x->s.insns += res->insns;
    /* the engine has no trace: give it Unicorn's for the flag mask */
    memcpy(e->r->trace, ru->trace, sizeof ru->trace);
    memcpy(e->r->trace_cl, ru->trace_cl, sizeof ru->trace_cl);
    /* Code from a file may access MMIO unaligned or 8 bytes at once: KVM
     * reports such an access as one exit and the engine makes it one (or
     * two of 4), while Unicorn (QEMU's TCG) splits it its own way, which
     * the fake device answers differently. Not comparable: counted, not
     * checked. */
    if (c->real && (split_mmio(&e->r->dev, 0) || split_mmio(&ru->dev, 1))) {
        x->s.unaligned_mmio++;
        return 1;
    }
    if (!ru->ok && ru->aborted && c->real) {
        x->s.uc_aborts++;           /* no oracle (UNICORN_BUGS.md, 6) */
        return 1;
    }
    if (!ru->ok) {
        snprintf(what, sizeof what, "the engine ran %u instructions (after "
                 "%u by the VMM), Unicorn could not: %s", res->insns, pre,
                 ru->why);
        report(x, c, k, e, ru, what, idx, NULL);
        return 0;
    }
    /* A run may end inside a REP INS or OUTS, some iterations done (a
     * store of one into the code page: an SMC stop), the instruction not
     * complete and not counted: architecturally so (an interrupt does it
     * too), but Unicorn's side runs whole instructions only. Code from a
     * file does it; generated code never stores into its code page that
     * way. Not comparable: counted, not checked. */
    if (c->real && e->r->rip == ru->rip &&
        e->r->dev.nlog > ru->dev.nlog && rep_string_at(c, ru->rip)) {
        x->s.partial_rep++;
        return 1;
    }
    if (c->real)
        x->s.fetch_ahead_bits += fetch_ahead_bits(c, ru, e->r);
    if (diff_compare(c, ru, "unicorn", e->r, "engine", what, sizeof what)) {
        report(x, c, k, e, ru, what, idx, NULL);
        return 0;
    }
    int ex = count_exits(c, ru, n, k->tgfn, extra, sizeof extra);
    int want_done = ex - (int)pre;
    int want_saved = pre ? want_done : (ex > 0 ? ex - 1 : 0);
    if (ex >= 0 && ((int)res->exits_done != want_done ||
                    (int)res->exits_saved != want_saved)) {
        char ex2[300];
        snprintf(what, sizeof what, "exits: the engine says done %u saved %u; "
                 "Unicorn executed %d exiting instructions, %u of them by "
                 "the VMM (want done %d saved %d)", res->exits_done,
                 res->exits_saved, ex, pre, want_done, want_saved);
        snprintf(ex2, sizeof ex2, "weakly exiting and string I/O ones "
                 "executed:%s", extra);
        report(x, c, k, e, ru, what, idx, ex2);
        return 0;
    }
    /* a HLT the run executed is its last instruction, and the result
     * says so (lc_result.halted: the VMM marks the vCPU halted) */
    int kl = n && n <= TRACE_MAX ? dcase_insn_at(c, ru->trace[n - 1]) : -1;
    int hlt = kl >= 0 && c->insn[kl].op == LC_OP_HLT;
    /* (code from a file, an instruction the case does not describe: the
     * HLT Unicorn's side logged, last; the logs agreed above) */
    if (kl < 0 && c->real)
        hlt = ru->dev.nlog && ru->dev.nlog <= DEV_LOG_MAX &&
              ru->dev.log[ru->dev.nlog - 1].kind == AK_HLT;
    if (hlt != (res->halted != 0) || (hlt && res->stop != LC_STOP_HALT)) {
        snprintf(what, sizeof what, "halt: the run's last instruction %s a "
                 "HLT, the engine says halted %u, stop %s", hlt ? "is" : "is "
                 "not", res->halted, lc_stop_reason_name(res->stop));
        report(x, c, k, e, ru, what, idx, NULL);
        return 0;
    }
    /* a stop for an interrupt: where one is due, with IF set */
    if (res->stop == LC_STOP_IRQ &&
        (!(e->r->rflags & LC_RFLAGS_IF) ||
         !diff_irq_due(k->irq, e->r->rip))) {
        snprintf(what, sizeof what, "stop irq at 0x%llx, where no "
                 "interrupt is due (key %d, IF %d)",
                 (unsigned long long)e->r->rip, k->irq,
                 (e->r->rflags & LC_RFLAGS_IF) != 0);
        report(x, c, k, e, ru, what, idx, NULL);
        return 0;
    }
    /* a stop for a refused access: right before an instruction that
     * makes one (the other callbacks' refusals, VMREAD/VMWRITE the fake
     * VMM fails and MOV DR beyond DR3, are checked elsewhere) */
    if (m >= 0) {
        x->s.refused_stops++;
        x->s.refused_shadow += m == (int)n + 1;
        x->s.refused_splits += pair_split(x, c, k, ver, (unsigned)m);
    } else if (res->stop == LC_STOP_CALLBACK && refuses(k) &&
               n < TRACE_MAX) {
        /* (in an interrupt shadow, the instruction after the one that
         * opens it) */
        unsigned op = stopped_op(x, c, ver, n);
        /* (code from a file: an MSR the fake VMM does not model, which
         * it leaves to the exit path, vm_ops.c) */
        int msr_stop = c->real && (op == LC_OP_RDMSR || op == LC_OP_WRMSR) &&
                       msr_index((uint32_t)uc_get(x->u, &x->q, c, ver, n,
                                                  &err)->gpr[LC_RCX]) < 0;
        if (op != LC_OP_VMREAD && op != LC_OP_VMWRITE &&
            op != LC_OP_MOV_DR && !msr_stop) {
            snprintf(what, sizeof what, "stop callback before instruction "
                     "#%u, which does not access the refused port %d, MMIO "
                     "bytes at 0x%llx or traced page%s", n,
                     k->vmm.refuse_port,
                     (unsigned long long)k->vmm.refuse_mmio,
                     k->vmm.refuse_traced ? "" : " (not refused)");
            report(x, c, k, e, uc_get(x->u, &x->q, c, ver, n, &err), what,
                   idx, NULL);
            return 0;
        }
    }
    ru = uc_get(x->u, &x->q, c, ver, n, &err);      /* (the cache's) */
    int smc = first_smc(c, ru, n);
    if (res->stop == LC_STOP_SMC && n > 0 && n - 1 < TRACE_MAX) {
        int last = dcase_insn_at(c, ru->trace[n - 1]);
        if ((last < 0 && !c->real) ||
            (last >= 0 && (!(c->insn[last].flags & GI_SMC) ||
                           (c->insn[last].flags & GI_SMC_DATA)))) {
            snprintf(what, sizeof what, "SMC: stop smc after instruction #%u "
                     "of %u, which is no store that may hit code bytes",
                     n - 1, n);
            report(x, c, k, e, ru, what, idx, NULL);
            return 0;
        }
    }
    if (smc < 0 && res->stop == LC_STOP_SMC) {
        snprintf(what, sizeof what, "SMC stop without a store into the code "
                 "page");
        report(x, c, k, e, ru, what, idx, NULL);
        return 0;
    }
    extra[0] = 0;
    /* A RIP-past translation that ran to its end must have executed an
     * exiting instruction (else it was formed around nothing). Runs cut
     * short (SMC, budget, a fault) and wrong predictions of instructions
     * train() reported as exiting are legitimate. */
    if (pre && res->translated && res->exits_done == 0 &&
        res->stop == LC_STOP_END && fell_through(c, ru, n) &&
        !past_no_exit_ok() && !ran_trained(c, ru, pre, n)) {
        snprintf(what, sizeof what, "a translated run after an exit with RIP "
                 "past it saved no exit: %u instructions, none exiting",
                 res->insns);
        report(x, c, k, e, ru, what, idx, NULL);
        return 0;
    }
    if (res->translated) {
        unsigned at = 0;
        const char *v = cflow_violation(c, ru, n, k->cfg.cflow, &at);
        if (v) {
            snprintf(what, sizeof what, "%s: instruction #%u of %u", v, at,
                     n);
            report(x, c, k, e, ru, what, idx, NULL);
            return 0;
        }
        if (!(k->cfg.techniques & LC_TECH_STATIC) && res->insns > 2) {
            snprintf(what, sizeof what, "static clusters off, yet the run "
                     "executed %u instructions", res->insns);
            report(x, c, k, e, ru, what, idx, NULL);
            return 0;
        }
        unsigned want = pre ? 0 : static_extent(c, &k->cfg,
                                                k->tgfn != DIFF_NO_TRACE);
        x->s.bound_checked += want > 1;
        /* (an interrupt may stop it at any loop head, which method 3
         * has: also at one that straight code falls into, the target of
         * a later backward branch) */
        if (res->insns < want && pt) {
            x->s.pt_stops++;
            want = 0;
        }
        if (res->insns < want && res->stop != LC_STOP_SMC &&
            !(res->stop == LC_STOP_IRQ && k->cfg.cflow == LC_CFLOW_M3) &&
            !(res->stop == LC_STOP_CALLBACK && refuses(k))) {
            snprintf(what, sizeof what, "the cluster ended early: %u "
                     "instructions run (stop %s), but straight code with a "
                     "strongly exiting instruction reaches to #%u", res->insns,
                     lc_stop_reason_name(res->stop), want - 1);
            report(x, c, k, e, ru, what, idx, NULL);
            return 0;
        }
    }
    /* With chained runs the replaced instruction may lie in a chained
     * translation: the first runs, the chained one fails its coherency
     * check (counted by the caller) and the run ends there. */
    if (want1 && res->insns != 1 && !chains(&k->cfg)) {
        snprintf(what, sizeof what, "expected the exiting instruction alone "
                 "(interpreted), the engine ran %u instructions", res->insns);
        snprintf(extra, sizeof extra, "(translated %u)", res->translated);
        report(x, c, k, e, ru, what, idx, extra);
        return 0;
    }
    int ran_on = 0;
    int late = irq_unasked(x, c, ver, k, &e->r->dev, ru, pre, n, &ran_on);
    ru = uc_get(x->u, &x->q, c, ver, n, &err);
    uint64_t late_la = late >= 0 && (unsigned)late < n ? ru->trace[late]
                                                       : ru->rip;
    if (late >= 0 && ran_on) {
        snprintf(what, sizeof what, "told an interrupt is due before "
                 "instruction #%u at 0x%llx (its earliest place), the run "
                 "went on", late, (unsigned long long)late_la);
        report(x, c, k, e, ru, what, idx, NULL);
        return 0;
    }
    if (late >= 0) {
        snprintf(what, sizeof what, "a loop went on without asking for an "
                 "interrupt: instruction #%u at 0x%llx makes a stretch longer "
                 "than the window (%u) with no irq_pending question, "
                 "through a backward branch with IF set", late,
                 (unsigned long long)late_la, lcx_window(&k->cfg));
        report(x, c, k, e, ru, what, idx, NULL);
        return 0;
    }
    /* The interrupt shadow (SDM vol. 3 6.8.3): a run never ends between
     * an instruction that opens one and the next (shadow_run() in
     * runtime/exec.c runs the two together or takes the opener back), so
     * the guest never takes a due interrupt between them on resume. */
    for (unsigned t = pre; t < n && t < TRACE_MAX; t++) {
        int ks = dcase_insn_at(c, ru->trace[t]);
        if (ks < 0 || !opens_shadow(c, ks))
            continue;
        if (t + 1 < n) {
            x->s.shadow_pairs++;    /* run with the next */
            continue;
        }
        run_result *rb = uc_get(x->u, &x->q, c, ver, t, &err);
        int open = !err && shadow_opened(c, ks, rb->rflags);
        ru = uc_get(x->u, &x->q, c, ver, n, &err);
        if (open) {
            snprintf(what, sizeof what, "the run ended right after "
                     "instruction #%u, which opens an interrupt shadow", t);
            report(x, c, k, e, ru, what, idx, NULL);
            return 0;
        }
    }
    /* statistics */
    if (res->translated)
        x->s.clusters++;
    if (c->xfirst.kind < LC_EXIT_KIND_COUNT_) {
        x->s.first_kind[c->xfirst.kind]++;
        x->s.first_kind_multi[c->xfirst.kind] += res->exits_saved != 0;
    }
    if (res->exits_saved) {
        x->s.multi++;
        x->s.saved += res->exits_saved;
    }
    if (res->insns > x->s.max_insns)
        x->s.max_insns = res->insns;
    if (res->exits_saved > x->s.max_saved)
        x->s.max_saved = res->exits_saved;
    x->s.traced_runs += e->r->dev.twrites != 0;
    x->s.traced_writes += e->r->dev.twrites;
    if (res->stop == LC_STOP_SMC)
        x->s.smc_runs++;
    x->s.cflow_runs[k->cfg.cflow & 3]++;
    for (unsigned t = 1; t < n && t < TRACE_MAX; t++)
        if (ru->trace[t] <= ru->trace[t - 1]) {
            x->s.loops_run++;
            break;
        }
    if (x->verbose_case) {
        char cfg[256];
        fmt_config(cfg, sizeof cfg, k);
        printf("call %s agrees: %s, stop %s, insns %u, exits_done %u, saved "
               "%u, translated %u\n", e->label, cfg,
               lc_stop_reason_name(res->stop), res->insns, res->exits_done,
               res->exits_saved, res->translated);
    }
    return 1;
}

static int make_engine(const lc_config *cfg, eng_ctx *x, lc_engine **eng,
                       lc_vcpu **vc)
{
    ops_wide = diff_vm_ops;
    ops_wide.accepts_wide = cur_vmm.wide;
    if (lc_engine_create(cfg, &ops_wide, eng) != LC_OK)
        return -1;
    if (lc_vcpu_create(*eng, 0, x, vc) != LC_OK) {
        lc_engine_destroy(*eng);
        return -1;
    }
    return 0;
}

/* Calls W1 and W2 run on two worker threads that live as long as lc-diff
 * (a thread made per case costs more than the calls), started together
 * by a semaphore each. */
typedef struct wcall {
    lc_vcpu     *vc;
    eng_ctx     *ex;
    const dcase *c;
    ecall       *e;
} wcall;

typedef struct wpool wpool;
typedef struct wslot {
    wpool *w;
    int    i;
} wslot;

struct wpool {
    pthread_t th[2];
    sem_t     go[2], done;
    wcall     job[2];
    wslot     slot[2];
    int       up[2], quit;
};

static void *wpool_worker(void *p)
{
    wpool *w = ((wslot *)p)->w;
    int i = ((wslot *)p)->i;

    for (;;) {
        while (sem_wait(&w->go[i]) != 0)
            ;
        if (__atomic_load_n(&w->quit, __ATOMIC_ACQUIRE))
            return NULL;
        eng_call(w->job[i].vc, w->job[i].ex, w->job[i].c, w->job[i].e);
        sem_post(&w->done);
    }
}

static int wpool_start(wpool *w)
{
    memset(w, 0, sizeof *w);
    if (sem_init(&w->go[0], 0, 0) || sem_init(&w->go[1], 0, 0) ||
        sem_init(&w->done, 0, 0))
        return -1;
    for (int i = 0; i < 2; i++) {
        w->slot[i] = (wslot){ w, i };
        w->up[i] = pthread_create(&w->th[i], NULL, wpool_worker,
                                  &w->slot[i]) == 0;
    }
    return w->up[0] && w->up[1] ? 0 : -1;
}

static void wpool_stop(wpool *w)
{
    if (!w)
        return;
    __atomic_store_n(&w->quit, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < 2; i++)
        if (w->up[i]) {
            sem_post(&w->go[i]);
            pthread_join(w->th[i], NULL);
        }
}

static void concurrent_calls(cctx *x, const dcase *c, ccfg *k,
                             lc_engine *eng, const eng_ctx *ex, uint64_t idx)
{
    ecall e[2] = {
        { "W1", 0, 0, { 0 }, 0, x->re[8], 0, -1 },
        { "W2", 0, 0, { 0 }, 0, x->re[9], 0, -1 },
    };
    eng_ctx wx[2];
    wpool *w = x->pool;
    int n = 0;

    for (int i = 0; i < 2; i++) {
        diff_vm_init(&wx[i], x->wram[i]);
        wx[i].traced_gfn = ex->traced_gfn;
        wx[i].irq = ex->irq;
        w->job[i] = (wcall){ NULL, &wx[i], c, &e[i] };
        if (lc_vcpu_create(eng, 2 + (unsigned)i, &wx[i], &w->job[i].vc) !=
            LC_OK) {
            x->s.setup_errors++;
            w->job[i].vc = NULL;
        }
    }
    for (int i = 0; i < 2; i++)
        if (w->job[i].vc) {
            sem_post(&w->go[i]);
            n++;
        }
    while (n > 0)
        if (sem_wait(&w->done) == 0)
            n--;
    for (int i = 0; i < 2; i++) {
        if (w->job[i].vc && check_call(x, c, 0, k, &e[i], idx, 0))
            x->s.concurrent++;
        if (w->job[i].vc)
            lc_vcpu_destroy(w->job[i].vc);
    }
}

static void free_engine(lc_engine *eng, lc_vcpu *vc)
{
    lc_vcpu_destroy(vc);
    lc_engine_destroy(eng);
}

/* Does the case shift or rotate a memory operand? Unicorn 2.0.1 with a
 * write hook gets those flags wrong (UNICORN_BUGS.md, 13): such a case
 * gets no traced page. */
static int mem_shift(const dcase *c)
{
    for (uint32_t i = 0; i < c->ninsns; i++) {
        unsigned op = c->insn[i].op;
        lc_insn_info info;
        if ((op == LC_OP_SHL || op == LC_OP_SHR || op == LC_OP_SAR ||
             op == LC_OP_ROL || op == LC_OP_ROR || op == LC_OP_RCL ||
             op == LC_OP_RCR) &&
            decode_at(c, (int)i, &info) && info.has_mem)
            return 1;
    }
    return 0;
}

/* Will pick_traced() trace one of the case's paging structures? */
static int traces_tables(const dcase *c, const ccfg *k)
{
    return k->trace && (c->mode == DM_PAE || c->mode == DM_LONG64) &&
           (k->trace_pick >> 32) % 2;
}

/* Set the accessed bit of every present entry of the case's paging
 * structures, and the dirty bit of every leaf, as a guest's tables are
 * once it has used them: the generator sets each in 15% and 10% of the
 * entries, so a walk through a traced paging structure nearly always
 * needs a bit there and the run stops (or its first exit is declined)
 * before it. With warm tables runs go on through the traced structure,
 * reading it in their walks and storing into it. PAE's PDPTEs have no
 * such bits (reserved) and are left alone. */
static void warm_tables(dcase *c)
{
    int lm = c->mode == DM_LONG64;

    for (uint32_t pa = lm ? PT_PML4_PA : PT_PDLO_PA; pa <= PT_PT1_PA;
         pa += 0x1000) {
        int pt = pa >= PT_PT0_PA, pd = pa == PT_PDLO_PA || pa == PT_PDHI_PA;
        for (uint32_t i = 0; i < 512; i++) {
            uint64_t e;
            memcpy(&e, c->ram + pa + i * 8, 8);
            if (!(e & 1))
                continue;
            e |= 0x20;
            if (pt || (pd && (e & 0x80)))
                e |= 0x40;
            memcpy(c->ram + pa + i * 8, &e, 8);
        }
    }
}

/* A traced page, for a case that draws one: a RAM page the case stores
 * to on Unicorn's side in its first TRACE_MAX instructions (data, stack
 * or code), chosen by k->trace_pick. Never MMIO, the GDT's page or,
 * with paging, a page of the paging structures: the engine never sets
 * an accessed or dirty bit in a traced page (runtime/mmu.c, commit_ad()
 * leaves it to the guest's own execution) and stops before, which would
 * cut runs this harness does not predict. */
static void pick_traced(cctx *x, const dcase *c, ccfg *k)
{
    int err = 0;
    run_result *ru = uc_get(x->u, &x->q, c, 0, TRACE_MAX, &err);
    uint32_t pages = 0;

    if (err)
        return;
    for (unsigned t = 0; t < ru->ntrace && t < TRACE_MAX; t++)
        pages |= ru->wpages[t];
    /* Nor a page a REP INS stores to: the engine stops such a REP
     * between iterations at the traced page (a port and the VMM in one
     * instruction, runtime/exec.c), where Unicorn's count of whole
     * instructions cannot follow (found with --mode prot32 --seed
     * 291331 --case 39734: DF set, the second iteration crossing down
     * into the page) */
    for (unsigned t = 0; t < ru->ntrace && t < TRACE_MAX; t++) {
        int ki = dcase_insn_at(c, ru->trace[t]);
        lc_insn_info info;
        if (ru->wpages[t] && ki >= 0 && decode_at(c, ki, &info) &&
            info.rep && info.op == LC_OP_INS)
            pages &= ~ru->wpages[t];
    }
    pages &= ~(1u << (MMIO_PA >> 12) | 1u << (GDT_PA >> 12));
    /* With paging, in half the cases one of the paging structures
     * instead, stored to or not, as a shadow-paging VMM traces the
     * guest's page tables: the engine sets no accessed or dirty bit in a
     * traced page (commit_ad() in runtime/mmu.c) and stops before the
     * instruction whose walk would (pt_traced_stop()). */
    if (traces_tables(c, k)) {
        pages = 0;
        for (uint32_t pa = PT_PML4_PA; pa <= PT_PT1_PA; pa += 0x1000)
            pages |= 1u << (pa >> 12);
    }
    unsigned n = (unsigned)__builtin_popcount(pages);
    if (n == 0)
        return;
    unsigned want = (unsigned)(k->trace_pick % n);
    for (unsigned g = 0; g < 32; g++)
        if (((pages >> g) & 1) && want-- == 0) {
            k->tgfn = g;
            break;
        }
    /* Its stores refused only where each instruction storing into it
     * makes no other device access (ops.h: a device refuses an
     * instruction at its first access or not at all) and has no REP (a
     * refused REP stops between iterations). */
    for (unsigned t = 0; k->vmm.refuse_traced && t < ru->ntrace && t < TRACE_MAX;
         t++) {
        int ki = dcase_insn_at(c, ru->trace[t]);
        lc_insn_info info;
        if (!wrote_traced(ru, k->tgfn, t))
            continue;
        if (ki < 0 || !decode_at(c, ki, &info) || info.rep ||
            ru->dev.overflow)
            k->vmm.refuse_traced = 0;
        for (unsigned j = 0; j < ru->dev.nlog && j < DEV_LOG_MAX; j++)
            if (ru->dev.log[j].insn == t)
                k->vmm.refuse_traced = 0;
    }
}

/* Candidates for a refusal (a port, an MMIO quadword), each kept while
 * every access to it qualifies: the picks below. */
typedef struct cands {
    uint64_t key[2 * DEV_LOG_MAX];
    uint8_t  ok[2 * DEV_LOG_MAX];
    unsigned n;
} cands;

static void cand_see(cands *s, uint64_t key, int ok)
{
    unsigned i;

    for (i = 0; i < s->n && s->key[i] != key; i++)
        ;
    if (i == s->n) {
        if (s->n == 2 * DEV_LOG_MAX)
            return;
        s->key[s->n] = key;
        s->ok[s->n++] = 1;
    }
    s->ok[i] &= (uint8_t)(ok != 0);
}

static int cand_ok(const cands *s, uint64_t key)
{
    for (unsigned i = 0; i < s->n; i++)
        if (s->key[i] == key)
            return s->ok[i];
    return 0;
}

/* The `pick`-th (modulo their number) that still qualifies, or -1. */
static int64_t cand_pick(const cands *s, uint64_t pick)
{
    unsigned m = 0;

    for (unsigned i = 0; i < s->n; i++)
        m += s->ok[i];
    if (m == 0)
        return -1;
    pick %= m;
    for (unsigned i = 0; i < s->n; i++)
        if (s->ok[i] && pick-- == 0)
            return (int64_t)s->key[i];
    return -1;
}

/* A refused port, for a case that draws one: a port that the case
 * accesses in Unicorn's first TRACE_MAX instructions, only through IN
 * and OUT (a refused REP INS/OUTS stops between iterations, where
 * Unicorn's count of whole instructions cannot follow). The fake VMM
 * answers LC_CB_STOP for every access to it, as lcvmm does for a port of
 * KVM's in-kernel devices: the run must stop right before the first
 * instruction that makes one (LC_STOP_CALLBACK), and a first one is
 * declined. MMIO: pick_refused_mmio(). */
static void pick_refused(cctx *x, const dcase *c, ccfg *k)
{
    int err = 0;
    run_result *ru = uc_get(x->u, &x->q, c, 0, TRACE_MAX, &err);
    static cands s;

    if (err || ru->dev.overflow)
        return;
    s.n = 0;
    for (unsigned j = 0; j < ru->dev.nlog && j < DEV_LOG_MAX; j++) {
        const dev_access *a = &ru->dev.log[j];
        lc_insn_info info;
        int ki = a->insn < ru->ntrace && a->insn < TRACE_MAX
                 ? dcase_insn_at(c, ru->trace[a->insn]) : -1;
        int plain = ki >= 0 && decode_at(c, ki, &info) && !info.rep &&
                    (info.op == LC_OP_IN || info.op == LC_OP_OUT);

        if (a->kind == AK_PIO)
            cand_see(&s, a->addr, plain);
    }
    int64_t port = cand_pick(&s, k->refuse_pick);
    if (port >= 0)
        k->vmm.refuse_port = (int)port;
}

/* A refused MMIO quadword or dword (k->vmm.refuse_len), for a case that
 * draws one: naturally aligned bytes of the MMIO page that the case
 * accesses in Unicorn's first TRACE_MAX instructions, only by
 * instructions without REP (a refused REP stops between iterations)
 * whose first device access reaches them (ops.h: a device refuses an
 * instruction at its first access or not at all; a MOVS from other MMIO
 * bytes into them, an INS into them, would be refused after a part was
 * done). The fake VMM answers LC_CB_STOP for every access that overlaps
 * them, as lcvmm does for KVM's in-kernel LAPIC and IOAPIC. The run must stop right before the first instruction that
 * makes one, leaving only the A/D bits that instruction's walks set
 * (take_walk_bits()); a first one is declined. */
static void pick_refused_mmio(cctx *x, const dcase *c, ccfg *k)
{
    int err = 0;
    run_result *ru = uc_get(x->u, &x->q, c, 0, TRACE_MAX, &err);
    static cands s;
    unsigned len = k->vmm.refuse_len;

    if (err || ru->dev.overflow)
        return;
    s.n = 0;
    for (unsigned j = 0; j < ru->dev.nlog && j < DEV_LOG_MAX; j++) {
        const dev_access *a = &ru->dev.log[j];
        lc_insn_info info;
        unsigned t = a->insn;
        int ki = t < ru->ntrace && t < TRACE_MAX
                 ? dcase_insn_at(c, ru->trace[t]) : -1;
        int norep = ki >= 0 && decode_at(c, ki, &info) && !info.rep;
        const dev_access *first = NULL;

        if (a->kind != AK_MMIO)
            continue;
        /* the instruction's first device access */
        for (unsigned f = 0; f <= j; f++) {
            const dev_access *b = &ru->dev.log[f];
            if (b->insn == t && (b->kind == AK_PIO || b->kind == AK_MMIO)) {
                first = b;
                break;
            }
        }
        for (uint64_t p = a->addr & ~(uint64_t)(len - 1);
             p < a->addr + a->size; p += len)
            cand_see(&s, p, norep && first && first->kind == AK_MMIO &&
                            first->addr < p + len &&
                            first->addr + first->size > p);
    }
    int64_t q = k->refuse_mmio ? cand_pick(&s, k->rmmio_pick) : -1;
    /* The second half of a pair the engine may merge into 8 bytes, if
     * the case makes one (pair_split()): in half the cases that refuse a
     * dword, and in every other case with a dword (rare otherwise: the
     * generator makes such pairs at a first exit only). */
    for (unsigned m = 1; len == 4 && (!k->refuse_mmio ||
                                      (k->rmmio_pick >> 32) % 2) &&
                         m < ru->ntrace && m < TRACE_MAX; m++) {
        const dev_access *w0, *w1;
        if (mergeable(ru, k, m, &w0, &w1) && w0->size == 4 &&
            cand_ok(&s, w1->addr)) {
            q = (int64_t)w1->addr;
            x->s.split_picks++;
            break;
        }
    }
    if (q >= 0)
        k->vmm.refuse_mmio = (uint64_t)q;
}

static void one_case(cctx *x, dcase *c, uint64_t idx)
{
    ccfg k;
    eng_ctx ex;
    lc_engine *eng;
    lc_vcpu *vc;
    ecall a = { "A", 0, 0, { 0 }, 0, x->re[0], 0, -1 };
    ecall b[3] = {
        { "B1", 0, 0, { 0 }, 0, x->re[1], 0, -1 },
        { "B2", 0, 0, { 0 }, 0, x->re[2], 0, -1 },
        { "B3", 0, 0, { 0 }, 0, x->re[3], 0, -1 },
    };
    ecall r1 = { "R1", 0, 0, { 0 }, 0, x->re[4], 0, -1 };
    ecall r2 = { "R2", 0, 0, { 0 }, 0, x->re[5], 0, -1 };
    ecall p = { "P", 1, 0, { 0 }, 0, x->re[6], 0, -1 };
    ecall v2 = { "V", 0, 0, { 0 }, 0, x->re[7], 0, -1 };

    memset(x->q.valid, 0, sizeof x->q.valid);
    diff_vm_init(&ex, x->vmram);
    pick_config(c, &k);
    x->u = x->uc[0];
    k.warm &= k.trace && !mem_shift(c) && traces_tables(c, &k);
    if (k.trace && !mem_shift(c)) {
        x->u = x->uc[1];
        if (k.warm)
            warm_tables(c);
        pick_traced(x, c, &k);
    }
    if (k.tgfn != DIFF_NO_TRACE) {
        ex.traced_gfn = k.tgfn;
        x->s.traced_cases++;
    }
    k.vmm.refuse_traced &= k.tgfn != DIFF_NO_TRACE;
    x->s.trefused_cases += k.vmm.refuse_traced;
    x->s.pt_traced_cases += pt_traced(c, k.tgfn);
    if (k.refuse)
        pick_refused(x, c, &k);
    /* (with a dword, also where no refusal was drawn: a mergeable
     * pair's second half, if the case makes one) */
    if (k.refuse_mmio || k.vmm.refuse_len == 4)
        pick_refused_mmio(x, c, &k);
    x->s.refused_cases += k.vmm.refuse_port >= 0;
    x->s.refused_mmio_cases += k.vmm.refuse_mmio != DIFF_NO_REFUSE;
    ex.irq = k.irq;
    cur_vmm = k.vmm;
    x->s.cases++;

    /* A: translate at the first exit */
    k.cfg.translate_threshold = 1;
    if (make_engine(&k.cfg, &ex, &eng, &vc) < 0) {
        printf("SETUP ERROR: cannot create an engine\n");
        x->s.setup_errors++;
        return;
    }
    train(vc, &ex, c, x->scratch);
    eng_call(vc, &ex, c, &a);
    int a_ok = check_call(x, c, 0, &k, &a, idx, 0);

    /* V: a second vCPU of the same engine takes the same exit. It has a
     * translation cache and a page-walk cache of its own and shares the
     * exit-tracking table A's vCPU trained and ran with: it forms its
     * own translation, which must agree with Unicorn and, as B3, run
     * what A ran (not with chained runs: those depend on the cache) */
    lc_vcpu *vc2;
    if (lc_vcpu_create(eng, 1, &ex, &vc2) == LC_OK) {
        eng_call(vc2, &ex, c, &v2);
        if (check_call(x, c, 0, &k, &v2, idx, 0)) {
            x->s.second_vcpu++;
            if (a_ok && !chains(&k.cfg) &&
                (v2.res.insns != a.res.insns || v2.res.stop != a.res.stop ||
                 v2.res.exits_saved != a.res.exits_saved)) {
                char what[256];
                snprintf(what, sizeof what, "a second vCPU ran %u "
                         "instructions, stop %s, saved %u; the first ran "
                         "%u, stop %s, saved %u", v2.res.insns,
                         lc_stop_reason_name(v2.res.stop),
                         v2.res.exits_saved, a.res.insns,
                         lc_stop_reason_name(a.res.stop), a.res.exits_saved);
                report(x, c, &k, &v2, v2.r, what, idx, NULL);
            }
        }
        lc_vcpu_destroy(vc2);
    } else {
        x->s.setup_errors++;
    }

    /* W1, W2: two more vCPUs of the same engine take the same exit at
     * the same time, each on a thread of its own with its own copy of the
     * RAM: the shared exit-tracking table under two writers, each run
     * checked against Unicorn as every call is (not against A: what they
     * run depends on which of them updates the table first) */
    if (k.concurrent)
        concurrent_calls(x, c, &k, eng, &ex, idx);

    /* code replacement on the same engine */
    if (a_ok && k.replace && !c->xfirst_declined) {
        char what[128];
        run_result *ru = uc_get(x->u, &x->q, c, 0, a.res.insns, &(int){ 0 });
        if (replace_code(c, ru, a.res.insns, &k, x->c2, what, sizeof what)) {
            x->s.replaced++;
            if (x->verbose_case)
                printf("code replacement: %s\n", what);
            eng_call(vc, &ex, x->c2, &r1);
            int want1 = a.res.translated && (k.cfg.techniques & LC_TECH_SINGLE);
            lc_stats st;
            /* one stale translation found, or with chained runs one or
             * more (a chained translation made during A may cover the
             * replaced bytes too, and fails its own check) */
            if (want1 && lc_vcpu_get_stats(vc, &st) == LC_OK &&
                (chains(&k.cfg) ? st.coherency_failures < 1
                                : st.coherency_failures != 1)) {
                char w2[256];
                snprintf(w2, sizeof w2, "code replaced (%s): coherency "
                         "failures %llu, want %s", what,
                         (unsigned long long)st.coherency_failures,
                         chains(&k.cfg) ? "at least 1" : "1");
                report(x, x->c2, &k, &r1, r1.r, w2, idx, NULL);
            }
            if (check_call(x, x->c2, 1, &k, &r1, idx, want1)) {
                eng_call(vc, &ex, x->c2, &r2);
                check_call(x, x->c2, 1, &k, &r2, idx, 0);
            }
        }
    }
    free_engine(eng, vc);

    /* B: interpret twice, translate at the third exit */
    k.cfg.translate_threshold = 3;
    if (make_engine(&k.cfg, &ex, &eng, &vc) < 0) {
        x->s.setup_errors++;
        return;
    }
    train(vc, &ex, c, x->scratch);
    for (int i = 0; i < 3; i++) {
        eng_call(vc, &ex, c, &b[i]);
        if (!check_call(x, c, 0, &k, &b[i], idx, i < 2))
            break;
        if (i == 2 && a_ok && !chains(&k.cfg) &&
            (b[2].res.insns != a.res.insns || b[2].res.stop != a.res.stop ||
             b[2].res.exits_saved != a.res.exits_saved)) {
            char what[256];
            snprintf(what, sizeof what, "threshold 3 (third exit) ran %u "
                     "instructions, stop %s, saved %u; threshold 1 ran %u, "
                     "stop %s, saved %u", b[2].res.insns,
                     lc_stop_reason_name(b[2].res.stop), b[2].res.exits_saved,
                     a.res.insns, lc_stop_reason_name(a.res.stop),
                     a.res.exits_saved);
            report(x, c, &k, &b[2], b[2].r, what, idx, NULL);
        }
    }
    free_engine(eng, vc);

    /* P: an OUT the VMM completed itself (RIP past it); threshold 1 */
    if (c->xfirst.kind == LC_EXIT_IO && c->xfirst.u.io.is_out &&
        !c->xfirst.u.io.is_string) {
        k.cfg.translate_threshold = 1;
        if (make_engine(&k.cfg, &ex, &eng, &vc) < 0) {
            x->s.setup_errors++;
            return;
        }
        train(vc, &ex, c, x->scratch);
        eng_call(vc, &ex, c, &p);
        if (check_call(x, c, 0, &k, &p, idx, 0) &&
            p.res.disposition == LC_HANDLED)
            x->s.past_runs++;
        free_engine(eng, vc);
    }
}

static void close_ucs(cctx *x)
{
    ucs_close(x->uc[0]);
    ucs_close(x->uc[1]);
    x->uc[0] = x->uc[1] = x->u = NULL;
}

static int open_ucs(cctx *x, int m, const uint8_t perm[16])
{
    x->uc[0] = ucs_open(m, perm, 0);
    x->uc[1] = ucs_open(m, perm, 1);
    if (!x->uc[0] || !x->uc[1]) {
        fprintf(stderr, "lc-diff: cannot set up Unicorn for %s\n",
                dmode_name(m));
        close_ucs(x);
        return -1;
    }
    x->u = x->uc[0];
    return 0;
}

int cdiff_main(const cdiff_opts *o)
{
    cctx x;
    dcase *c = malloc(sizeof *c);
    gen_opts go = { .max_groups = o->groups };
    uint64_t total_bad = 0, total_err = 0;

    /* line-buffered: Unicorn may abort() (see UNICORN_BUGS.md) */
    setvbuf(stdout, NULL, _IOLBF, 0);
    memset(&x, 0, sizeof x);
    x.o = o;
    x.c2 = malloc(sizeof *x.c2);
    x.scratch = malloc(sizeof *x.scratch);
    x.vmram = malloc(RAM_SIZE);
    x.wram[0] = malloc(RAM_SIZE);
    x.wram[1] = malloc(RAM_SIZE);
    x.pool = malloc(sizeof *x.pool);
    if (!c || !x.c2 || !x.scratch || !x.vmram || !x.wram[0] || !x.wram[1] ||
        !x.pool || wpool_start(x.pool) < 0) {
        fprintf(stderr, "lc-diff: out of memory or threads\n");
        return 2;
    }
    for (unsigned i = 0; i < 10; i++)
        if (!(x.re[i] = malloc(sizeof *x.re[i])))
            return 2;
    for (unsigned i = 0; i < UCACHE; i++)
        if (!(x.q.r[i] = malloc(sizeof *x.q.r[i])))
            return 2;

    diff_progress pg;   /* progress lines on a terminal (progress.h) */
    diff_progress_init(&pg, "engine", o->mode >= 0 ? 1 : DM_COUNT, o->soak,
                       o->count);
    if (o->one_case >= 0)
        pg.on = 0;
    for (int m = 0; m < DM_COUNT; m++) {
        if (o->mode >= 0 && m != o->mode)
            continue;
        if (o->code && !o->code->nsite[m] && !o->code->nmsite[m]) {
            printf("engine mode %-6s: no instruction to start a case on in "
                   "%s (IN, OUT, CPUID, HLT, RDMSR, WRMSR), 0 cases\n",
                   dmode_name(m), o->code->path);
            continue;
        }
        if (o->code)
            printf("engine mode %-6s: %s, %zu sites with a strongly "
                   "exiting instruction and %zu with a move through a base "
                   "register, in %u regions\n", dmode_name(m),
                   o->code->path, o->code->nsite[m], o->code->nmsite[m],
                   o->code->nregion);
        diff_perm(o->seed, go.perm);
        if (open_ucs(&x, m, go.perm) < 0)
            return 2;
        memset(&x.s, 0, sizeof x.s);
        x.q.runs = 0;
        unsigned long long merged0 = diff_merged_pairs;
        double t0 = diff_now(), soak_end = o->soak > 0 ? t0 + o->soak : 0;
        diff_progress_begin(&pg, dmode_name(m));
        uint64_t first = o->one_case >= 0 ? (uint64_t)o->one_case : 0;
        for (uint64_t idx = first;; idx++) {
            if (o->one_case >= 0 && idx != (uint64_t)o->one_case)
                break;
            if (soak_end ? diff_now() >= soak_end : idx - first >= o->count)
                break;
            diff_progress_tick(&pg, x.s.cases, x.s.mismatches);
            if (o->code)
                gen_code_case(c, m, o->seed, idx, &go, o->code);
            else
                gen_cluster_case(c, m, o->seed, idx, &go);
            /* Bounded life for each Unicorn instance (UNICORN_BUGS.md);
             * the result cache is per case, so nothing refers to it. */
            if (idx > first && (idx - first) % UC_REOPEN_CASES == 0) {
                close_ucs(&x);
                if (open_ucs(&x, m, go.perm) < 0)
                    return 2;
            }
            x.verbose_case = o->verbose && o->one_case >= 0;
            if (x.verbose_case) {
                printf("case %llu:\n", (unsigned long long)idx);
                diff_print_case(c, NULL);
            }
            one_case(&x, c, idx);
        }
        double dt = diff_now() - t0;
        diff_progress_end(&pg, x.s.cases, x.s.mismatches);
        cstats *s = &x.s;
        printf("engine mode %-6s: %llu cases, %llu calls, %llu instructions, "
               "%llu mismatches (%.1f s, %llu Unicorn runs)\n", dmode_name(m),
               (unsigned long long)s->cases, (unsigned long long)s->calls,
               (unsigned long long)s->insns,
               (unsigned long long)s->mismatches, dt,
               (unsigned long long)x.q.runs);
        printf("  agreed: %llu translated runs, %llu with exits saved (%llu "
               "saved in all, at most %llu in one run), longest run %llu "
               "instructions, %llu runs took a backward branch, %llu SMC "
               "stops, %llu code replacements, %llu runs held to a static "
               "lower bound, %llu RIP-past runs (%llu declined), %llu "
               "failing first VMREAD/VMWRITE declined, %llu merged pairs\n",
               (unsigned long long)s->clusters, (unsigned long long)s->multi,
               (unsigned long long)s->saved, (unsigned long long)s->max_saved,
               (unsigned long long)s->max_insns,
               (unsigned long long)s->loops_run,
               (unsigned long long)s->smc_runs,
               (unsigned long long)s->replaced,
               (unsigned long long)s->bound_checked,
               (unsigned long long)s->past_runs,
               (unsigned long long)s->declined_past,
               (unsigned long long)s->declined_vmfail,
               diff_merged_pairs - merged0);
        printf("  traced pages: %llu cases (%llu paging structures: %llu "
               "runs ended before an A/D bit in one, %llu of them leaving "
               "an earlier walk's bits, %llu exits declined), "
               "%llu runs storing into one, "
               "%llu traced writes, %llu exits declined; refused ports: "
               "%llu cases, refused MMIO: %llu cases, refused traced "
               "stores: %llu cases, %llu calls leaving walk bits; %llu "
               "runs stopped before a refused access (%llu before the "
               "shadow it lies in, %llu after the first half of a merged "
               "pair refused through its second, in %llu cases picking "
               "such a dword), "
               "%llu exits declined; %llu calls on a second vCPU, %llu on "
               "two more at once\n",
               (unsigned long long)s->traced_cases,
               (unsigned long long)s->pt_traced_cases,
               (unsigned long long)s->pt_stops,
               (unsigned long long)s->pt_walk_bits,
               (unsigned long long)s->declined_pt,
               (unsigned long long)s->traced_runs,
               (unsigned long long)s->traced_writes,
               (unsigned long long)s->declined_traced,
               (unsigned long long)s->refused_cases,
               (unsigned long long)s->refused_mmio_cases,
               (unsigned long long)s->trefused_cases,
               (unsigned long long)s->refused_walk_bits,
               (unsigned long long)s->refused_stops,
               (unsigned long long)s->refused_shadow,
               (unsigned long long)s->refused_splits,
               (unsigned long long)s->split_picks,
               (unsigned long long)s->declined_refused,
               (unsigned long long)s->second_vcpu,
               (unsigned long long)s->concurrent);
        printf("  interrupts: the longest stretch of a run without an "
               "irq_pending question %llu window instructions, %llu runs "
               "whose questions did not match the trace; %llu STI, MOV SS "
               "or POP SS run with the next instruction\n",
               (unsigned long long)s->max_unasked,
               (unsigned long long)s->asks_unmatched,
               (unsigned long long)s->shadow_pairs);
        printf("  runs per cflow none/m1/m2/m3: %llu/%llu/%llu/%llu; stops:",
               (unsigned long long)s->cflow_runs[0],
               (unsigned long long)s->cflow_runs[1],
               (unsigned long long)s->cflow_runs[2],
               (unsigned long long)s->cflow_runs[3]);
        for (int r = 0; r < LC_STOP_REASON_COUNT_; r++)
            if (s->stops[r])
                printf(" %s %llu", lc_stop_reason_name((lc_stop_reason)r),
                       (unsigned long long)s->stops[r]);
        if (o->code)
            printf("\n  code from %s: %llu calls not compared (an unaligned "
                   "or 8-byte MMIO access, which Unicorn splits its own "
                   "way), %llu accessed bits "
                   "of Unicorn's fetch past a run's end given to the "
                   "engine, %llu runs stopped by a fault keeping its walks' "
                   "bits, %llu calls not compared (the run ended inside a "
                   "REP INS or OUTS), %llu not compared (Unicorn's "
                   "translator aborted)", o->code->path,
                   (unsigned long long)s->unaligned_mmio,
                   (unsigned long long)s->fetch_ahead_bits,
                   (unsigned long long)s->fault_walk_bits,
                   (unsigned long long)s->partial_rep,
                   (unsigned long long)s->uc_aborts);
        printf("\n  agreed calls (with exits saved) per first exit:");
        for (int r = 0; r < LC_EXIT_KIND_COUNT_; r++)
            if (s->first_kind[r])
                printf(" %s %llu (%llu)", lc_exit_kind_name((lc_exit_kind)r),
                       (unsigned long long)s->first_kind[r],
                       (unsigned long long)s->first_kind_multi[r]);
        printf("\n");
        total_bad += s->mismatches;
        total_err += s->setup_errors;
        close_ucs(&x);
    }
    for (unsigned i = 0; i < 10; i++)
        free(x.re[i]);
    free(x.wram[0]);
    free(x.wram[1]);
    wpool_stop(x.pool);
    free(x.pool);
    for (unsigned i = 0; i < UCACHE; i++)
        free(x.q.r[i]);
    free(x.scratch);
    free(x.vmram);
    free(x.c2);
    free(c);
    return total_bad || total_err ? 1 : 0;
}
