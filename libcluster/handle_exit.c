/* SPDX-License-Identifier: MIT */
/*
 * libcluster/handle_exit.c: the exit path, lc_vcpu_handle_exit().
 *
 *   exit -> lookup: a cached translation for this place (section 2)
 *        -> coherency: its guest bytes unchanged (section 7, coherency.c)
 *        -> run it, watching its code frames for self-modification
 *   miss -> decode, check it is the instruction that exited (exit.c),
 *           record it in the exit-tracking table (section 5); below the
 *           threshold interpret it alone; at the threshold (or forced by
 *           the leak guard) form the cluster, cache it, run it.
 *
 * Formation and running are translator/'s. The hit path is
 * lc_vcpu_handle_exit -> exit_begin -> serve -> lookup -> lci_coherent ->
 * run_translation -> finish; everything else is the miss.
 */
#include <string.h>
#include <time.h>

#include "engine_int.h"
#include "exit.h"

/* One exit on its way through the engine. */
typedef struct exit_ctx {
    lc_vcpu *vc;
    const lc_config *cfg;
    lc_cpu_state *state;
    const lc_exit *exit;
    lc_result *res;
    lcr_vcpu *v;       /* the vCPU's runtime context (vc->rv) */
    tc_key key;
    uint64_t at;       /* where the translation starts */
    unsigned start;    /* 1: anchored on the completed exiting insn */
    int first_done;    /* RIP is already past the exiting instruction */
} exit_ctx;

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

static inline __attribute__((always_inline))
void finish(lc_vcpu *vc, const lcr_vcpu *v, lc_stop_reason stop,
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
    /* An instruction completed: RF is clear after it (SDM vol. 3
     * 18.3.1.1; the dispatcher clears it, the inline forms leave it to
     * here). A REP string stop changed nothing else and keeps it. */
    if (__builtin_expect((v->st->rflags & LC_RFLAGS_RF) != 0, 0) &&
        v->insns > 0) {
        v->st->rflags &= ~LC_RFLAGS_RF;
        res->dirty |= LC_DIRTY_RFLAGS;
    }
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

static int was_invalidated(lc_vcpu *vc, uint64_t rip)
{
    for (unsigned i = 0; i < vc->ninval && i < 8; i++)
        if (vc->invalidated[i] == rip)
            return 1;
    return 0;
}

static lc_stop_reason chain(exit_ctx *c, lcx_cluster *ran,
                            lc_stop_reason stop);

/* Do runs chain with this configuration (chain())? */
static int chains(const lc_config *cfg)
{
    const uint32_t need = LC_TECH_SINGLE | LC_TECH_STATIC | LC_TECH_CALLS;

    return (cfg->techniques & need) == need && cfg->cflow == LC_CFLOW_M3;
}

/* A translation whose followed CALL, RET or JMP keeps going elsewhere than
 * predicted (translator/run.c counts the runs in a row) predicts from the
 * state of the exit that formed it, which no longer holds: drop it, and
 * the next exit here forms it again from its own state, as an inline
 * cache re-links at a miss. */
static void relink(lc_vcpu *vc, tc_entry *te)
{
    if (te->cl->guard_misses < LCX_RELINK_MISSES)
        return;
    vc->invalidated[vc->ninval++ % 8] = te->key.rip;
    tc_remove(&vc->tc, te);
}

/* Watch the code a translation runs for self-modification (section 7):
 * its frames (gfn, from the coherency check), narrowed to its bytes; the
 * runtime reads the translation's own watch. */
static void arm_watch(lcr_vcpu *v, tc_entry *te, const uint64_t *gfn,
                      unsigned ngfn)
{
    unsigned fresh = 0;

    if (ngfn != LCI_WATCH_KEPT)
        fresh = (unsigned)lci_watch_narrow(te, gfn, ngfn < LCR_WATCH_MAX
                                                    ? ngfn : LCR_WATCH_MAX);
    lcr_watch_arm(v, &te->watch, fresh);
}

/* Run a translation whose code is known coherent: watch its code frames
 * for self-modification (section 7), run it, account for it. */
static inline __attribute__((always_inline))
lc_status run_translation(exit_ctx *c, tc_entry *te,
                                 const uint64_t *gfn, unsigned ngfn)
{
    lc_vcpu *vc = c->vc;
    lcr_vcpu *v = c->v;
    lcx_cluster *cl = te->cl;
    lc_stop_reason stop;

    if (cl->ninsn == 0) {       /* an empty translation: nothing to run */
        finish(vc, v, LC_STOP_TERMINATOR, c->first_done, c->res);
        return LC_OK;
    }
    if (c->cfg->techniques & LC_TECH_SMC)
        arm_watch(v, te, gfn, ngfn);
    stop = lci_run(v, te, c->cfg->weak_backedge_cap, c->start);
    /* Where runs chain (method 3 with calls), a run that misses a guard
     * goes on at once with the translation of the place it reached, so a
     * translation shared by several callers (an accessor's RET) stays;
     * elsewhere one that keeps missing is formed again. */
    if (chains(c->cfg))
        stop = chain(c, cl, stop);
    else
        relink(vc, te);
    if (stop == LC_STOP_SMC)
        STAT_INC(vc->stats.smc_stops);
    if (v->insns)
        STAT_INC(vc->stats.exits_translated);
    c->res->translated = 1;
    finish(vc, v, stop, c->first_done, c->res);
    return v->error;
}

/* ---- chained runs ----------------------------------------------------------
 *
 * A translation lays out one path from its exit (translator/: the
 * fall-through of each conditional branch unless a line ends, the return
 * address predicted when it was made). A run that leaves it through a side
 * not laid out ends cleanly at that RIP: a taken branch to code outside
 * (a PCI scan's `if (vendor == 0xffff) continue;`), a RET to another call
 * site than the one predicted (an accessor such as `out 0xcf8; in 0xcfc;
 * ret` called from many places), an indirect jump elsewhere. It also ends
 * at its last exit when its window was full. Clusters beyond the paper
 * (LC_TECH_CALLS, paper section 11) go on there: the engine looks up the
 * translation that starts at that RIP with no exit behind it (the key of
 * an exit reported past its instruction, first_done), forms it at once if
 * there is none (static formation finds its exiting instructions by
 * decoding: no exit history is needed), and runs it in the same call when
 * its first exiting instruction lies within the window of the last exit
 * that ran. A place with nothing worth running gets the usual empty
 * translation, so the next time costs a lookup. Each side a run really
 * takes thus gets its own translation, laid out from that side, and a
 * side never taken costs nothing. The chained run is an ordinary run:
 * coherency check first, its own SMC watch, the run's instruction budget;
 * deliverable interrupts end the chain (the guest resumes and takes
 * them). */

static unsigned chain_none_slot(uint64_t rip, uint64_t val)
{
    uint64_t h = (rip ^ (val * 0x9e3779b97f4a7c15ull)) * 0xff51afd7ed558ccdull;

    return (unsigned)(h >> 60);
}

static int chain_none_has(const lc_vcpu *vc, uint64_t rip, uint64_t val)
{
    unsigned i = chain_none_slot(rip, val);

    return vc->chain_none[i].used && vc->chain_none[i].rip == rip &&
           vc->chain_none[i].val == val;
}

static void chain_none_put(lc_vcpu *vc, uint64_t rip, uint64_t val)
{
    unsigned i = chain_none_slot(rip, val);

    vc->chain_none[i].rip = rip;
    vc->chain_none[i].val = val;
    vc->chain_none[i].used = 1;
}

/* The translation starting at the current RIP with no exit behind it:
 * cached, or formed now (an empty one when nothing there is worth
 * running). NULL when there is none and none could be made. */
static tc_entry *chain_lookup(exit_ctx *c, const tc_key *key, int *formed)
{
    lc_vcpu *vc = c->vc;
    lcr_vcpu *v = c->v;
    tc_entry *te = tc_lookup(&vc->tc, key);
    uint8_t code[LCX_MAX_INSNS * LC_INSN_MAX_LEN];
    size_t got, want = (size_t)c->vc->engine->window * LC_INSN_MAX_LEN;
    uint64_t gfn[2];
    unsigned ngfn = 0;
    lcx_cluster *cl = &vc->scratch;
    lcx_form_in in = {
        .cfg = c->cfg, .mode = v->mode, .rip = key->rip, .code = code,
        .first_done = 1, .predict = predict,
        .predict_ctx = &vc->engine->track, .v = v, .extra = &vc->xcode,
    };

    /* Nothing worth running there was found with a return address or an
     * indirect target read from the guest's state then: when it reads
     * otherwise now and that target is not known to lead nowhere too,
     * look again (an inline cache's check, calls.c). An accessor's end
     * reached from several call sites would otherwise form again at every
     * visit. */
    if (te && te->cl->ninsn == 0 && te->cl->guessed) {
        uint64_t val;

        if (lcx_guess_read(te->cl, v, &val) < 0 ||
            val == te->cl->guess_val || chain_none_has(vc, key->rip, val))
            return te;
        chain_none_put(vc, key->rip, te->cl->guess_val);
        tc_remove(&vc->tc, te);
        te = NULL;
    }
    if (te)
        return te;
    *formed = 1;               /* an insert may evict any other entry */
    if (want > sizeof code)
        want = sizeof code;
    /* Fetched as at an exit there (the miss path): the guest resumes at
     * this RIP anyway, so the walk's accessed bits are the CPU's own, and
     * code the runs reach on other pages is followed only into pages whose
     * bits are set already (calls.c). A fetch that faults reports nothing:
     * the guest raises the fault itself on resume. */
    got = lcr_fetch_at_rec(v, key->rip, code, want, gfn, &ngfn, &vc->rec);
    lcr_stop_forget(v);
    if (got == 0)
        return NULL;
    in.code_len = got;
    if (lcx_form(&in, cl) != LC_OK) {
        if (cl->ninsn != 0 || cl->nbytes == 0)
            return NULL;
        te = tc_insert(&vc->tc, key, cl, code, NULL);
    } else {
        STAT_INC(vc->stats.translations);
        te = tc_insert(&vc->tc, key, cl, code, &vc->xcode);
    }
    if (te)
        te->rec = vc->rec;
    return te;
}

/* After a run that ended at `stop`: go on through chained translations
 * while each ends cleanly (LC_STOP_END) with another exit near. Returns
 * the stop reason of the last run. Out of line: the hit path of a
 * cluster that simply ends takes only chain()'s first test. */
__attribute__((noinline))
static lc_stop_reason chain_on(exit_ctx *c, lcx_cluster *ran,
                               lc_stop_reason stop)
{
    const lc_config *cfg = c->cfg;
    lcr_vcpu *v = c->v;
    lc_cpu_state *st = c->state;

    /* Called only where chains() holds: going on at a taken branch's
     * target may go backward, a loop, which only method 3 allows (section
     * 6.3; the interrupt check below is its loop-head check). The chain's
     * length bounds the lookups of a run that keeps leaving
     * (lc_engine.chain_max, engine.c; each chained run is also bounded by
     * the instruction budget). */
    for (unsigned k = 0; k < c->vc->engine->chain_max; k++) {
        tc_key key;
        tc_entry *te;
        uint64_t gfn[LCR_WATCH_MAX];
        unsigned ngfn = 0;
        int formed = 0, at_end;

        if (stop != LC_STOP_END || v->error != LC_OK)
            break;
        /* The run reached its end, where nothing worth running was
         * found before: no lookup, tested first (the hit path of a
         * cluster that simply ends stays what it was). */
        at_end = st->rip == ran->end_rip;
        if ((ran->end_none && at_end) || v->insns >= v->insn_budget ||
            v->mode != lcr_cpu_mode(st))
            break;
        if ((st->rflags & LC_RFLAGS_IF) && v->ops->irq_pending &&
            v->ops->irq_pending(v->opaque, st))
            break;
        /* The run before is over; the lookup may evict its translation,
         * whose watch the runtime was reading, and whose routed
         * instruction's route a formation's peeks would read (and
         * teach) otherwise. */
        v->watching = NULL;
        v->route = NULL;
        key = c->key;
        key.rip = st->rip;
        key.cs_base = st->seg[LC_CS].base;
        key.cr3 = (st->cr0 & LC_CR0_PG) ? st->cr3 : 0;
        key.first_done = 1;
        te = chain_lookup(c, &key, &formed);
        if (!te || te->cl->ninsn == 0) {
            /* Nothing there, whatever the guest's state: remember it in
             * the translation that ended there (still cached unless this
             * lookup formed and inserted: then the next visit does). */
            if (te && !te->cl->guessed && at_end && !formed)
                ran->end_none = 1;
            break;
        }
        /* Only when its first exit is as near the last one as the window
         * lets a formation reach (tc_entry.first_exit, counted once when
         * the translation was cached). */
        if (te->first_exit == TC_NO_EXIT ||
            v->insns - v->exit_insns + te->first_exit >
                c->vc->engine->window)
            break;
        if (!lci_coherent(v, te, key.rip, gfn, &ngfn)) {
            STAT_INC(c->vc->stats.coherency_failures);
            tc_remove(&c->vc->tc, te);
            break;
        }
        if (cfg->techniques & LC_TECH_SMC)
            arm_watch(v, te, gfn, ngfn);
        stop = lci_run(v, te, cfg->weak_backedge_cap, 0);
        ran = te->cl;
    }
    return stop;
}

static lc_stop_reason chain(exit_ctx *c, lcx_cluster *ran,
                            lc_stop_reason stop)
{
    /* A run that ended otherwise, or at its end where nothing worth
     * running was found before, goes no further. */
    if (stop != LC_STOP_END || c->v->error != LC_OK ||
        (ran->end_none && c->state->rip == ran->end_rip))
        return stop;
    return chain_on(c, ran, stop);
}

/* The translation cache's key for the translation starting at c->at. */
static void set_key(exit_ctx *c)
{
    const lc_cpu_state *s = c->state;

    c->key.rip = c->at;
    c->key.cs_base = s->seg[LC_CS].base;
    c->key.cr3 = (s->cr0 & LC_CR0_PG) ? s->cr3 : 0;
    c->key.mode = (uint8_t)c->v->mode;
    c->key.first_done = (uint8_t)(c->start ? 2 : c->first_done);
}

static void exit_begin(exit_ctx *c, lc_vcpu *vc, lc_cpu_state *state,
                       const lc_exit *exit, lc_result *res)
{
    uint64_t insn_rip = exit->insn_rip;

    c->vc = vc;
    c->cfg = &vc->engine->cfg;
    c->state = state;
    c->exit = exit;
    c->res = res;
    c->first_done = exit->rip == LC_EXIT_RIP_PAST;
    c->v = &vc->rv;
    c->v->insn_budget = c->cfg->insn_budget;  /* lcr_begin clears the rest */
    c->v->rep_budget = c->cfg->rep_budget;
    c->v->irq_check = 0;
    c->v->watching = NULL;
    /* The runtime context persists: its page-walk cache is kept across
     * runs and revalidated (section 11; runtime/rt.h), dropped when the
     * guest-physical map changes (lc_engine_flush bumps the generation). */
    lcr_begin_keep(c->v, state, &vc->engine->ops, vc->opaque,
                   &vc->engine->gen);

    /* The VMM completed the exiting instruction and says where it was
     * (or how long it was): anchor the translation on it, so a loop back
     * to it can stay inside the cluster; the run starts at instruction 1
     * (the current RIP). The miss path checks the claim. */
    c->at = state->rip;
    c->start = 0;
    if (c->first_done && !insn_rip && exit->insn_len &&
        exit->insn_len <= state->rip)
        insn_rip = state->rip - exit->insn_len;
    if (c->first_done && insn_rip && insn_rip < state->rip &&
        state->rip - insn_rip <= LC_INSN_MAX_LEN) {
        c->at = insn_rip;
        c->start = 1;
    }
    set_key(c);
}

/* Section 2: the cached translation for this exit, if there is one that
 * starts with the instruction the hypervisor reported. */
static tc_entry *lookup(exit_ctx *c)
{
    tc_entry *te;
    const lcx_insn *first;

    if (!(c->cfg->techniques & LC_TECH_SINGLE))
        return NULL;
    te = tc_lookup(&c->vc->tc, &c->key);
    if (!te || (c->first_done && !c->start) || te->cl->ninsn == 0)
        return te;
    /* It starts with the exiting instruction: the same cross-check as a
     * decode would get (a mismatch goes to the miss path, which
     * declines or drops the anchor). */
    first = &te->cl->insn[0];
    if (c->start && c->at + first->d.info.length != c->state->rip)
        return NULL;
    if (!lci_exit_matches_inl(&first->d, c->exit, c->state))
        return NULL;
    return te;
}

static lc_status miss(exit_ctx *c, int incoherent);


/* Lookup and coherency; a hit runs, anything else is a miss.
 * `incoherent`: an earlier lookup of this exit failed the check. */
static lc_status serve(exit_ctx *c, int incoherent)
{
    lc_vcpu *vc = c->vc;
    tc_entry *te = lookup(c);
    uint64_t gfn[LCR_WATCH_MAX];
    unsigned ngfn = 0;

    if (!te)
        return miss(c, incoherent);
    if (lci_coherent(c->v, te, c->at, gfn, &ngfn))
        return run_translation(c, te, gfn, ngfn);
    /* The code changed: drop the translation; this exit runs only its
     * own instruction; a later exit retranslates (section 7). */
    STAT_INC(vc->stats.coherency_failures);
    vc->invalidated[vc->ninval++ % 8] = c->at;
    tc_remove(&vc->tc, te);
    return miss(c, 1);
}

lc_status lc_vcpu_handle_exit(lc_vcpu *vc, lc_cpu_state *state,
                              const lc_exit *exit, lc_result *res)
{
    exit_ctx c;

    if (res)
        memset(res, 0, sizeof(*res));
    if (!vc || !state || !exit || !res || !lci_exit_valid(exit))
        return LC_ERR_INVAL;
    lci_vcpu_sync(vc);               /* a flush request from any thread */
    STAT_INC(vc->stats.exits_seen);
    exit_begin(&c, vc, state, exit, res);
    return serve(&c, 0);
}

/* ---- the miss path -------------------------------------------------------- */

/* Below the threshold (section 5), or after a coherency failure: run the
 * exiting instruction alone (nothing to run with RIP already past it). */
static lc_status interpret(exit_ctx *c, const lcd_insn *first)
{
    lc_stop_reason stop;

    if (c->first_done) {
        finish(c->vc, c->v, LC_STOP_NONE, c->first_done, c->res);
        return LC_OK;
    }
    if (lcr_exec(c->v, first) == LCR_DONE) {
        STAT_INC(c->vc->stats.exits_interpreted);
        stop = c->v->stop != LC_STOP_NONE ? c->v->stop : LC_STOP_END;
    } else {
        stop = c->v->stop;
    }
    finish(c->vc, c->v, stop, c->first_done, c->res);
    return c->v->error;
}

/* Nothing runs here: the exit is declined, and remembered as an empty
 * translation `cl` (ninsn 0) checked like any other (section 7), so later
 * exits at this site cost a lookup instead of a decode of the whole
 * window. */
static lc_status decline_empty(exit_ctx *c, const lcx_cluster *cl,
                               const uint8_t *code)
{
    lc_vcpu *vc = c->vc;

    if (cl->ninsn == 0 && cl->nbytes > 0 &&
        (c->cfg->techniques & LC_TECH_SINGLE)) {
        tc_entry *te = tc_insert(&vc->tc, &c->key, cl, code, NULL);

        if (te)
            te->rec = vc->rec;
    }
    finish(vc, c->v, LC_STOP_TERMINATOR, c->first_done, c->res);
    return LC_OK;
}

/* At the threshold: form the cluster from the `got` bytes of `code`,
 * cache it, run it. */
static lc_status translate(exit_ctx *c, const uint8_t *code, size_t got,
                           uint8_t first_props, const uint64_t gfn[2],
                           unsigned ngfn)
{
    lc_vcpu *vc = c->vc;
    lct_table *track = &vc->engine->track;
    lcx_form_in in = {
        .cfg = c->cfg, .mode = c->v->mode, .rip = c->at, .code = code,
        .code_len = got, .first_done = c->start ? 0 : c->first_done,
        .predict = predict, .predict_ctx = track,
        .first_pred = pred_bits(first_props),
        .v = c->v, .extra = &vc->xcode,
    };
    lcx_cluster *cl = &vc->scratch;
    tc_entry *te;
    uint64_t watch[LCR_WATCH_MAX];
    unsigned nwatch = 0;

    if (lcx_form(&in, cl) != LC_OK)
        return decline_empty(c, cl, code);
    STAT_INC(vc->stats.translations);
    if (was_invalidated(vc, c->at))
        STAT_INC(vc->stats.retranslations);
    te = tc_insert(&vc->tc, &c->key, cl, code, &vc->xcode);
    if (!te) {
        /* Not kept: larger than the cache's whole cap (a cap of a few
         * KiB), or no memory. Nothing runs, as where nothing was worth
         * running. */
        cl->ninsn = 0;
        cl->nrange = 1;
        cl->range[0].len = cl->nbytes;
        return decline_empty(c, cl, code);
    }
    te->rec = vc->rec;
    /* Watch every frame the cluster's code came from (calls.c: callees
     * may lie on other pages). */
    lci_watch_add(watch, &nwatch, gfn, ngfn);
    for (unsigned r = 1; r < cl->nrange; r++)
        if (cl->range[r].len)
            lci_watch_add(watch, &nwatch, vc->xcode.r[r - 1].gfn,
                          vc->xcode.r[r - 1].ngfn);
    return run_translation(c, te, watch, nwatch);
}

/* Miss: decode what is there now, check it is what exited, record the
 * exit (section 5), then interpret or translate. */
static lc_status miss(exit_ctx *c, int incoherent)
{
    lc_vcpu *vc = c->vc;
    uint8_t code[LCX_MAX_INSNS * LC_INSN_MAX_LEN];
    lcd_insn *first = &vc->scratch.insn[0].d;
    uint64_t gfn[2];
    unsigned ngfn = 0;
    uint8_t first_props = 0;
    size_t got, want = (size_t)c->vc->engine->window * LC_INSN_MAX_LEN;
    lc_status st;
    lct_verdict verdict;

    if (want > sizeof code)
        want = sizeof code;
    got = lcr_fetch_at_rec(c->v, c->at, code, want, gfn, &ngfn, &vc->rec);
    st = lcd_decode(c->v->mode, code, got, first);
    if (c->start && (st != LC_OK ||
                     c->at + first->info.length != c->state->rip ||
                     !lci_exit_matches(first, c->exit, c->state))) {
        /* Not the exiting instruction after all: no anchor. */
        c->at = c->state->rip;
        c->start = 0;
        set_key(c);
        return serve(c, incoherent);
    }
    if (st != LC_OK ||
        (!c->first_done && !lci_exit_matches(first, c->exit, c->state))) {
        finish(vc, c->v, LC_STOP_UNSUPPORTED, c->first_done, c->res);
        return LC_OK;
    }
    /* The exiting instruction's identity. With RIP past it and no anchor,
     * the instruction at RIP did not exit: track the exit *site* in its
     * own hash domain, so the predictor never takes that next instruction
     * for an exiting one. */
    verdict = lct_record(&vc->engine->track,
                         lct_hash(c->at, first->info.bytes,
                                  first->info.length) ^
                         (c->first_done && !c->start ? LC_PAST_SITE_SALT : 0),
                         lci_exit_props(c->exit), now_ns(), &first_props);
    if (verdict == LCT_INTERPRET || incoherent ||
        !(c->cfg->techniques & LC_TECH_SINGLE)) {
        c->res->learning = verdict == LCT_INTERPRET || incoherent;
        return interpret(c, first);
    }
    if (verdict == LCT_TRANSLATE_FORCED)
        STAT_INC(vc->stats.forced_translations);
    return translate(c, code, got, first_props, gfn, ngfn);
}
