/* SPDX-License-Identifier: MIT */
/*
 * libcluster/engine.c: engine and vCPU objects, configuration, statistics,
 * and the exit path:
 *
 *   exit -> translation cache hit? -> coherency check -> run the cluster
 *        -> miss: decode, check it is the instruction that exited, record
 *           it in the exit-tracking table; below the threshold interpret
 *           it alone; at the threshold (or forced by the leak guard) form
 *           the cluster, cache it, run it.
 *
 * Sections 2 (cached translations), 5 (tracking, first exits interpreted)
 * and 7 (coherency and SMC checks) of the paper live here; formation and
 * running are translator/'s.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cluster/cluster.h>

#include "../runtime/rt.h"
#include "../translator/cluster.h"
#include "tcache.h"
#include "engine_int.h"
#include "track.h"

struct lc_vcpu {
    lc_engine *engine;
    uint32_t id;
    void *opaque;
    lc_stats stats;
    tc_cache tc;                 /* this vCPU's translations */
    uint64_t invalidated[8];     /* RIPs whose translation failed the
                                  * coherency check, for "retranslations" */
    unsigned ninval;
    lcx_cluster scratch;         /* formation workspace */
    lcr_fetch_rec rec;           /* the last window fetch's record */
    struct lc_vcpu *next;        /* engine's list, under engine->lock */
    struct lc_vcpu **pprev;
};

struct lc_engine {
    lc_config cfg;
    const lc_vm_ops *ops;
    pthread_mutex_t lock;        /* vCPU list only: never on the hit path */
    lc_vcpu *vcpus;
    unsigned nr_vcpus;
    lc_stats retired;            /* counters of destroyed vCPUs */
    lct_table track;             /* shared; per-row locks */
};

static void stats_add(lc_stats *d, const lc_stats *s);

/* Counters have one writer (the vCPU's thread) and may be read from any
 * thread (lc_engine_get_stats): single-writer relaxed atomic stores and
 * atomic loads keep that race-free without a locked instruction. */
#define STAT_ADD(field, n) \
    __atomic_store_n(&(field), (field) + (uint64_t)(n), __ATOMIC_RELAXED)
#define STAT_INC(field) STAT_ADD(field, 1)

void lc_config_init(lc_config *cfg)
{
    if (!cfg)
        return;
    memset(cfg, 0, sizeof(*cfg));
    cfg->size = sizeof(*cfg);
    cfg->techniques = LC_TECH_ALL;
    cfg->cflow = LC_CFLOW_M3;
    cfg->max_cluster_insns = 16;        /* s4: "16 in our implementation" */
    cfg->max_mem_gap_fillers = 4;       /* s4: "cap ... at four" */
    cfg->track_index_bits = 9;          /* s5: 512 FIFOs */
    cfg->track_tag_bits = 26;           /* s5: 35-bit hash = 9 + 26 */
    cfg->track_depth = 8;               /* s5: 8-deep FIFOs */
    cfg->translate_threshold = 3;       /* s5: translate on the third exit */
    cfg->leak_age_ns = 10ull * 1000 * 1000 * 1000; /* s5: "10 seconds" */
    cfg->weak_backedge_cap = 10;        /* s6.3: "10 in our implementation" */
    cfg->insn_budget = 16384;
    cfg->rep_budget = 4096;
    cfg->tcache_max_bytes = 4ull << 20;
}

lc_status lc_config_validate(const lc_config *cfg)
{
    if (!cfg || cfg->size != sizeof(*cfg))
        return LC_ERR_INVAL;
    if (cfg->techniques & ~LC_TECH_ALL)
        return LC_ERR_INVAL;
    if ((unsigned)cfg->cflow > LC_CFLOW_M3)
        return LC_ERR_INVAL;
    if (cfg->max_cluster_insns == 0 || cfg->max_cluster_insns > 32)
        return LC_ERR_RANGE;
    if (cfg->track_index_bits == 0 || cfg->track_index_bits > 20 ||
        cfg->track_tag_bits == 0 || cfg->track_tag_bits > 32)
        return LC_ERR_RANGE;
    if (cfg->track_depth == 0 || cfg->track_depth > 64)
        return LC_ERR_RANGE;
    if (cfg->translate_threshold == 0 || cfg->translate_threshold > 255)
        return LC_ERR_RANGE;
    if (cfg->insn_budget == 0 || cfg->rep_budget == 0)
        return LC_ERR_RANGE;
    if (cfg->tcache_max_bytes < 4096)
        return LC_ERR_RANGE;
    return LC_OK;
}

lc_status lc_engine_create(const lc_config *cfg, const lc_vm_ops *ops,
                           lc_engine **out)
{
    lc_engine *e;
    lc_config defaults;
    lc_status st;

    if (!out)
        return LC_ERR_INVAL;
    *out = NULL;
    if (!ops || ops->size < offsetof(lc_vm_ops, gpa_map) + sizeof(ops->gpa_map)
        || !ops->gpa_map)
        return LC_ERR_INVAL;
    if (!cfg) {
        lc_config_init(&defaults);
        cfg = &defaults;
    }
    st = lc_config_validate(cfg);
    if (st != LC_OK)
        return st;

    e = calloc(1, sizeof(*e));
    if (!e)
        return LC_ERR_NOMEM;
    e->cfg = *cfg;
    e->ops = ops;
    if (lct_init(&e->track, cfg) != LC_OK) {
        free(e);
        return LC_ERR_NOMEM;
    }
    if (pthread_mutex_init(&e->lock, NULL) != 0) {
        lct_fini(&e->track);
        free(e);
        return LC_ERR_NOMEM;
    }
    *out = e;
    return LC_OK;
}

lc_status lc_engine_destroy(lc_engine *e)
{
    if (!e)
        return LC_OK;
    pthread_mutex_lock(&e->lock);
    if (e->nr_vcpus) {
        pthread_mutex_unlock(&e->lock);
        return LC_ERR_BUSY;
    }
    pthread_mutex_unlock(&e->lock);
    pthread_mutex_destroy(&e->lock);
    lct_fini(&e->track);
    free(e);
    return LC_OK;
}

lc_status lc_engine_get_config(const lc_engine *e, lc_config *out)
{
    if (!e || !out)
        return LC_ERR_INVAL;
    *out = e->cfg;
    return LC_OK;
}

lc_status lc_engine_flush(lc_engine *e)
{
    if (!e)
        return LC_ERR_INVAL;
    pthread_mutex_lock(&e->lock);
    lct_clear(&e->track);
    for (lc_vcpu *v = e->vcpus; v; v = v->next)
        tc_flush(&v->tc);
    pthread_mutex_unlock(&e->lock);
    return LC_OK;
}

lc_status lc_vcpu_create(lc_engine *e, uint32_t id, void *opaque,
                         lc_vcpu **out)
{
    lc_vcpu *v;

    if (!out)
        return LC_ERR_INVAL;
    *out = NULL;
    if (!e)
        return LC_ERR_INVAL;
    v = calloc(1, sizeof(*v));
    if (!v)
        return LC_ERR_NOMEM;
    if (tc_init(&v->tc, e->cfg.tcache_max_bytes) != LC_OK) {
        free(v);
        return LC_ERR_NOMEM;
    }
    v->engine = e;
    v->id = id;
    v->opaque = opaque;
    pthread_mutex_lock(&e->lock);
    v->next = e->vcpus;
    if (v->next)
        v->next->pprev = &v->next;
    v->pprev = &e->vcpus;
    e->vcpus = v;
    e->nr_vcpus++;
    pthread_mutex_unlock(&e->lock);
    *out = v;
    return LC_OK;
}

void lc_vcpu_destroy(lc_vcpu *v)
{
    lc_engine *e;

    if (!v)
        return;
    e = v->engine;
    pthread_mutex_lock(&e->lock);
    *v->pprev = v->next;
    if (v->next)
        v->next->pprev = v->pprev;
    e->nr_vcpus--;
    {
        lc_stats last;
        lc_vcpu_get_stats(v, &last);    /* with the cache's own counters */
        stats_add(&e->retired, &last);
    }
    pthread_mutex_unlock(&e->lock);
    tc_fini(&v->tc);
    free(v);
}

static int exit_valid(const lc_exit *x)
{
    if (x->kind < LC_EXIT_IO || x->kind >= LC_EXIT_KIND_COUNT_)
        return 0;
    if (x->rip != LC_EXIT_RIP_AT && x->rip != LC_EXIT_RIP_PAST)
        return 0;
    if (x->insn_len > LC_INSN_MAX_LEN)
        return 0;
    if (x->kind == LC_EXIT_IO) {
        uint8_t sz = x->u.io.size;
        if (sz != 1 && sz != 2 && sz != 4)
            return 0;
    }
    if (x->kind == LC_EXIT_MMIO || x->kind == LC_EXIT_TRACED) {
        uint8_t l = x->u.mmio.len;
        if (l != 1 && l != 2 && l != 4 && l != 8)
            return 0;
    }
    return 1;
}

/* Is `d` the instruction the hypervisor says exited? A mismatch means
 * the code changed under us (another vCPU, DMA) or the VMM's description
 * is wrong: either way the engine must not act on it. */
static int matches_exit(const lcd_insn *d, const lc_exit *x)
{
    switch (x->kind) {
    case LC_EXIT_IO:
        if (x->u.io.is_string)
            return d->info.op == (x->u.io.is_out ? LC_OP_OUTS : LC_OP_INS);
        return d->info.op == (x->u.io.is_out ? LC_OP_OUT : LC_OP_IN);
    case LC_EXIT_MMIO:
    case LC_EXIT_TRACED:
        return d->info.exit_class == LC_CLASS_WEAK;
    case LC_EXIT_CPUID:     return d->info.op == LC_OP_CPUID;
    case LC_EXIT_HLT:       return d->info.op == LC_OP_HLT;
    case LC_EXIT_DR_ACCESS: return d->info.op == LC_OP_MOV_DR;
    case LC_EXIT_RDMSR:     return d->info.op == LC_OP_RDMSR;
    case LC_EXIT_WRMSR:     return d->info.op == LC_OP_WRMSR;
    case LC_EXIT_VMREAD:    return d->info.op == LC_OP_VMREAD;
    case LC_EXIT_VMWRITE:   return d->info.op == LC_OP_VMWRITE;
    case LC_EXIT_VMCALL:    return d->info.op == LC_OP_VMCALL;
    default:                return 0;
    }
}

/* Why it exited, for the tracking table's property bits (section 5). */
static uint8_t exit_props(const lc_exit *x)
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

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Distinguishes "exited just before this RIP" from "this instruction
 * exited" in the tracking table (any odd constant far from 0). */
#define LC_PAST_SITE_SALT 0x9e3779b97f4a7c15ull

/* Dynamic clusters (section 5): a weakly exiting instruction downstream
 * is included when the tracking table has seen it exit. */
static uint8_t pred_bits(uint8_t props)
{
    if (!props)
        return 0;
    return LCX_PRED_EXITS |
           ((props & (LCT_PROP_MMIO | LCT_PROP_APIC)) ? LCX_PRED_DEVICE : 0);
}

/* The translator's predictor; `ctx` is the engine's tracking table. */
static uint8_t predict(void *ctx, uint64_t rip, const lcd_insn *d)
{
    return pred_bits(lct_lookup(ctx,
                                lct_hash(rip, d->info.bytes,
                                         d->info.length)));
}

static unsigned log2_bucket(uint64_t n, unsigned buckets)
{
    unsigned b = 0;
    while (n && b + 1 < buckets) {
        n >>= 1;
        b++;
    }
    return b;
}

static void finish(lc_vcpu *vc, const lcr_vcpu *v, lc_stop_reason stop,
                   int first_done, lc_result *res)
{
    lc_stats *s = &vc->stats;

    res->stop = stop;
    STAT_INC(s->stops[stop < LC_STOP_REASON_COUNT_ ? stop : LC_STOP_NONE]);
    if (v->insns == 0 && v->dirty == 0) {
        /* Nothing ran: the state is as it was; the VMM handles the exit
         * (or, with RIP past it, just resumes). A REP string instruction
         * that stopped between iterations did change state (its
         * completed iterations stand, RIP still at it): that is handled,
         * not declined. */
        res->disposition = LC_DECLINED;
        STAT_INC(s->exits_declined);
        return;
    }
    res->disposition = LC_HANDLED;
    res->dirty = v->dirty;
    res->insns = v->insns;
    res->exits_done = v->exits_done;
    res->exits_saved = v->exits_done > (first_done ? 0u : 1u)
                       ? v->exits_done - (first_done ? 0u : 1u) : 0;
    res->halted = stop == LC_STOP_HALT;
    STAT_ADD(s->insns, v->insns);
    STAT_ADD(s->routed_accesses, v->routed);
    STAT_ADD(s->exits_saved, res->exits_saved);
    STAT_INC(s->cluster_len[v->exits_done < LC_STATS_CLUSTER_BUCKETS
                            ? v->exits_done : LC_STATS_CLUSTER_BUCKETS - 1]);
    if (v->exits_done > 1)
        STAT_INC(s->exit_distance[log2_bucket((v->insns - 1) /
                                              (v->exits_done - 1),
                                              LC_STATS_DISTANCE_BUCKETS)]);
    if (v->error == LC_ERR_CALLBACK)
        res->stop = LC_STOP_CALLBACK;
}

/* Run a translation whose code is known coherent: watch its code frames
 * for self-modification (section 7), run it, account for it. */
static lc_status run_translation(lc_vcpu *vc, lcr_vcpu *v, lcx_cluster *cl,
                                 const uint64_t gfn[2], unsigned ngfn,
                                 unsigned start, int first_done,
                                 lc_result *res)
{
    const lc_config *cfg = &vc->engine->cfg;
    lc_stop_reason stop;

    if (cfg->techniques & LC_TECH_SMC) {
        v->nwatch = (uint8_t)ngfn;
        v->watch_gfn[0] = gfn[0];
        v->watch_gfn[1] = gfn[1];
    }
    if (cl->ninsn == 0) {       /* an empty translation: nothing to run */
        finish(vc, v, LC_STOP_TERMINATOR, first_done, res);
        return LC_OK;
    }
    stop = lcx_run(cl, v, cfg->weak_backedge_cap, start);
    if (stop == LC_STOP_SMC)
        STAT_INC(vc->stats.smc_stops);
    if (v->insns)
        STAT_INC(vc->stats.exits_translated);
    res->translated = 1;
    finish(vc, v, stop, first_done, res);
    return v->error;
}

static int was_invalidated(lc_vcpu *vc, uint64_t rip)
{
    for (unsigned i = 0; i < vc->ninval && i < 8; i++)
        if (vc->invalidated[i] == rip)
            return 1;
    return 0;
}

lc_status lc_vcpu_handle_exit(lc_vcpu *vc, lc_cpu_state *state,
                              const lc_exit *exit, lc_result *res)
{
    lc_engine *e;
    const lc_config *cfg;
    lcr_vcpu v;
    tc_key key;
    tc_entry *te;
    uint8_t code[LCX_MAX_INSNS * LC_INSN_MAX_LEN];
    uint64_t gfn[2];
    unsigned ngfn = 0;
    size_t got, want;
    int first_done, incoherent = 0;
    uint8_t first_props = 0;
    lc_stop_reason stop;
    uint64_t at;           /* where the translation starts */
    unsigned start = 0;    /* 1: anchored on the completed exiting insn */

    if (res)
        memset(res, 0, sizeof(*res));
    if (!vc || !state || !exit || !res || !exit_valid(exit))
        return LC_ERR_INVAL;
    e = vc->engine;
    cfg = &e->cfg;
    STAT_INC(vc->stats.exits_seen);
    first_done = exit->rip == LC_EXIT_RIP_PAST;

    v.insn_budget = cfg->insn_budget;      /* lcr_begin clears the rest */
    v.rep_budget = cfg->rep_budget;
    v.irq_check = 0;
    v.nwatch = 0;
    lcr_begin(&v, state, e->ops, vc->opaque);

    /* The VMM completed the exiting instruction and says where it was:
     * anchor the translation on it, so a loop back to it can stay inside
     * the cluster; the run starts at instruction 1 (the current RIP). */
    at = state->rip;
    if (first_done && exit->insn_rip && exit->insn_rip < state->rip &&
        state->rip - exit->insn_rip <= LC_INSN_MAX_LEN) {
        at = exit->insn_rip;
        start = 1;
    }
anchor_again:
    key.rip = at;
    key.cs_base = state->seg[LC_CS].base;
    key.cr3 = (state->cr0 & LC_CR0_PG) ? state->cr3 : 0;
    key.mode = (uint8_t)v.mode;
    key.first_done = (uint8_t)(start ? 2 : first_done);

    /* Section 2 and 7: a cached translation, if its bytes still match. */
    te = (cfg->techniques & LC_TECH_SINGLE) ? tc_lookup(&vc->tc, &key) : NULL;
    if (te && start && (te->cl->ninsn == 0 ||
                        at + te->cl->insn[0].d.info.length != state->rip))
        te = NULL;      /* not the anchored instruction's end: decode */
    if (te) {
        lcx_cluster *cl = te->cl;
        int same;

        /* Section 7's coherency check, first by the fetch record (the
         * paging entries and code the translation was made from, read
         * directly), else by a full fetch that also re-records. */
        if (lcr_fetch_check(&v, at, &te->rec, te->code, cl->nbytes)) {
            same = 1;
            ngfn = te->rec.npages;
            gfn[0] = te->rec.gfn[0];
            gfn[1] = te->rec.gfn[1];
        } else {
            got = lcr_fetch_at_rec(&v, at, code, cl->nbytes, gfn, &ngfn,
                                   &te->rec);
            same = got == cl->nbytes && !memcmp(code, te->code, cl->nbytes);
        }
        if (same) {
            return run_translation(vc, &v, cl, gfn, ngfn, start, first_done,
                                   res);
        }
        /* The code changed: drop the translation; this exit runs only its
         * own instruction; a later exit retranslates (section 7). */
        STAT_INC(vc->stats.coherency_failures);
        vc->invalidated[vc->ninval++ % 8] = at;
        tc_remove(&vc->tc, te);
        te = NULL;
        incoherent = 1;
    }

    /* Miss: decode what is there now. */
    want = (size_t)cfg->max_cluster_insns * LC_INSN_MAX_LEN;
    if (want > sizeof code)
        want = sizeof code;
    got = lcr_fetch_at_rec(&v, at, code, want, gfn, &ngfn, &vc->rec);
    {
        lcd_insn *first = &vc->scratch.insn[0].d;
        lc_status st = lcd_decode(v.mode, code, got, first);
        lct_verdict verdict;

        if (start && (st != LC_OK || at + first->info.length != state->rip ||
                      !matches_exit(first, exit))) {
            /* Not the exiting instruction after all: no anchor. */
            at = state->rip;
            start = 0;
            goto anchor_again;
        }
        if (st != LC_OK || (!first_done && !matches_exit(first, exit))) {
            finish(vc, &v, LC_STOP_UNSUPPORTED, first_done, res);
            return LC_OK;
        }
        /* The exiting instruction's identity. With RIP past it and no
         * anchor, the instruction at RIP did not exit: track the exit
         * *site* in its own hash domain, so the predictor never takes
         * that next instruction for an exiting one. */
        verdict = lct_record(&e->track,
                             lct_hash(at, first->info.bytes,
                                      first->info.length) ^
                             (first_done && !start ? LC_PAST_SITE_SALT : 0),
                             exit_props(exit), now_ns(), &first_props);
        if (verdict == LCT_INTERPRET || incoherent ||
            !(cfg->techniques & LC_TECH_SINGLE)) {
            /* First exits are interpreted (section 5). With RIP already
             * past the exiting instruction there is nothing to do. */
            res->learning = verdict == LCT_INTERPRET || incoherent;
            if (first_done) {
                finish(vc, &v, LC_STOP_NONE, first_done, res);
                return LC_OK;
            }
            if (lcr_exec(&v, first) == LCR_DONE) {
                STAT_INC(vc->stats.exits_interpreted);
                stop = v.stop != LC_STOP_NONE ? v.stop : LC_STOP_END;
            } else {
                stop = v.stop;
            }
            finish(vc, &v, stop, first_done, res);
            return v.error;
        }
        if (verdict == LCT_TRANSLATE_FORCED)
            STAT_INC(vc->stats.forced_translations);
    }

    /* Translate: form the cluster, cache it, run it. */
    {
        lcx_form_in in = {
            .cfg = cfg, .mode = v.mode, .rip = at, .code = code,
            .code_len = got, .first_done = start ? 0 : first_done,
            .predict = predict, .predict_ctx = &e->track,
            .first_pred = pred_bits(first_props),
        };
        lcx_cluster *cl = &vc->scratch;

        if (lcx_form(&in, cl) != LC_OK) {
            /* Nothing worth running here. Remember that too, as an empty
             * translation checked like any other (section 7), so later
             * exits at this site cost a lookup instead of a decode of the
             * whole window. */
            if (cl->ninsn == 0 && cl->nbytes > 0 &&
                (cfg->techniques & LC_TECH_SINGLE)) {
                te = tc_insert(&vc->tc, &key, cl, code);
                if (te)
                    te->rec = vc->rec;
            }
            finish(vc, &v, LC_STOP_TERMINATOR, first_done, res);
            return LC_OK;
        }
        STAT_INC(vc->stats.translations);
        if (was_invalidated(vc, at))
            STAT_INC(vc->stats.retranslations);
        te = tc_insert(&vc->tc, &key, cl, code);
        if (!te)
            return LC_ERR_NOMEM;   /* nothing ran; state untouched */
        te->rec = vc->rec;
        return run_translation(vc, &v, te->cl, gfn, ngfn, start, first_done,
                               res);
    }
}

lc_status lc_vcpu_get_stats(const lc_vcpu *v, lc_stats *out)
{
    const uint64_t *src;
    uint64_t *dst;

    if (!v || !out)
        return LC_ERR_INVAL;
    src = (const uint64_t *)(const void *)&v->stats;
    dst = (uint64_t *)(void *)out;
    for (size_t i = 0; i < sizeof(*out) / sizeof(uint64_t); i++)
        dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
    out->tcache_bytes = __atomic_load_n(&v->tc.bytes, __ATOMIC_RELAXED);
    out->evictions = __atomic_load_n(&v->tc.evictions, __ATOMIC_RELAXED);
    return LC_OK;
}

lc_status lc_vcpu_reset_stats(lc_vcpu *v)
{
    if (!v)
        return LC_ERR_INVAL;
    memset(&v->stats, 0, sizeof(v->stats));
    return LC_OK;
}

static void stats_add(lc_stats *d, const lc_stats *s)
{
    /* lc_stats is all uint64_t counters: add it as an array. */
    uint64_t *dv = (uint64_t *)(void *)d;
    const uint64_t *sv = (const uint64_t *)(const void *)s;

    for (size_t i = 0; i < sizeof(*d) / sizeof(uint64_t); i++)
        dv[i] += sv[i];
}

lc_status lc_engine_get_stats(const lc_engine *e, lc_stats *out)
{
    if (!e || !out)
        return LC_ERR_INVAL;
    pthread_mutex_lock((pthread_mutex_t *)&e->lock);
    *out = e->retired;
    for (const lc_vcpu *v = e->vcpus; v; v = v->next) {
        lc_stats one;
        lc_vcpu_get_stats(v, &one);
        stats_add(out, &one);
    }
    pthread_mutex_unlock((pthread_mutex_t *)&e->lock);
    return LC_OK;
}

/* ---- for the adapters (engine_int.h) ------------------------------------ */

const lc_vm_ops *lci_vcpu_ops(const lc_vcpu *v)
{
    return v->engine->ops;
}

void *lci_vcpu_opaque(const lc_vcpu *v)
{
    return v->opaque;
}
