/* SPDX-License-Identifier: MIT */
/*
 * libcluster/engine_int.h: the engine's objects as the files of the
 * engine layer share them (engine.c, handle_exit.c, coherency.c, exit.c).
 * Not installed, not exported (names without lc_), not for the KVM
 * adapter, which sees only adapter.h.
 */
#ifndef LC_LIBCLUSTER_ENGINE_INT_H
#define LC_LIBCLUSTER_ENGINE_INT_H

#include <pthread.h>
#include <string.h>
#include <stdint.h>

#include <cluster/cluster.h>

#include "../runtime/rt.h"
#include "../translator/translator.h"
#include "exit_tracking.h"
#include "translation_cache.h"

struct lc_vcpu {
    lc_engine *engine;
    uint32_t id;
    void *opaque;
    uint64_t gen;                /* engine generation this vCPU's cache
                                  * belongs to (lci_vcpu_sync) */
    lc_stats stats;
    tc_cache tc;                 /* this vCPU's translations */
    uint64_t invalidated[8];     /* RIPs whose translation failed the
                                  * coherency check, for "retranslations" */
    unsigned ninval;
    lcx_cluster scratch;         /* formation workspace */
    lcr_fetch_rec rec;           /* the last window fetch's record */
    lcx_code xcode;              /* code of a cluster's other ranges, as
                                  * formation fetched it (calls.c) */
    /* Chained runs (handle_exit.c): places where a continuation whose
     * walk read a RET's or indirect transfer's target from the guest
     * found nothing worth running, with that target; direct-mapped. */
    struct { uint64_t rip, val; uint8_t used; } chain_none[16];
    lcr_vcpu rv;                 /* the runtime context of every exit:
                                  * persists for its page-walk cache */
    struct lc_vcpu *next;        /* engine's list, under engine->lock */
    struct lc_vcpu **pprev;
};

/* Chained runs in one exit per 16 instructions of the decode-ahead window
 * (lc_engine.chain_max). */
#define LCI_CHAIN_BASE 8u

struct lc_engine {
    lc_config cfg;
    size_t    cfg_size;    /* the creator's sizeof(lc_config) (engine.c) */
    unsigned  window;      /* lcx_window(&cfg): the decode-ahead window as
                            * the exit cost scales it, computed once */
    unsigned  chain_max;   /* chained runs in one exit (handle_exit.c):
                            * LCI_CHAIN_BASE per 16 instructions of window,
                            * never fewer than LCI_CHAIN_BASE */
    lc_vm_ops ops;               /* the VMM's table, copied up to its size;
                                  * callbacks it does not have are NULL */
    uint64_t gen;                /* bumped by lc_engine_flush (atomic) */
    pthread_mutex_t lock;        /* vCPU list only: never on the hit path */
    lc_vcpu *vcpus;
    unsigned nr_vcpus;
    lc_stats retired;            /* counters of destroyed vCPUs */
    lct_table track;             /* shared; per-row locks */
};

/* Counters have one writer (the vCPU's thread) and may be read from any
 * thread (lc_engine_get_stats): single-writer relaxed atomic stores and
 * atomic loads keep that race-free without a locked instruction. */
#define STAT_ADD(field, n) \
    __atomic_store_n(&(field), (field) + (uint64_t)(n), __ATOMIC_RELAXED)
#define STAT_INC(field) STAT_ADD(field, 1)

/* Flush requests (engine.c), as KVM's vCPU requests: lc_engine_flush()
 * bumps the engine's generation; a vCPU that finds itself behind on
 * entry to the exit path drops its private translations first. Called
 * on the vCPU's own thread only. */
static inline void lci_vcpu_sync(lc_vcpu *vc)
{
    uint64_t g = __atomic_load_n(&vc->engine->gen, __ATOMIC_ACQUIRE);

    if (__builtin_expect(g != vc->gen, 0)) {
        tc_flush(&vc->tc);
        memset(vc->chain_none, 0, sizeof vc->chain_none);
        vc->ninval = 0;
        vc->gen = g;
    }
}

/* ---- exit.c: what the exit was ------------------------------------------ */

/* Is the description well formed (kind, sizes, lengths in range)? On
 * every exit: inline. */
static inline int lci_exit_valid(const lc_exit *x)
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

/* Is `d`, an instruction at `rip`, the one the hypervisor says exited,
 * with everything the description reports (kind, width, port, value,
 * length, repeat count) agreeing with what the decoded instruction and
 * the registers in `st` say? `st` is the state with RIP at `d` or, for
 * an exit reported past it, after it (the reported facts an instruction
 * changes are then not compared). */
int lci_exit_matches(const lcd_insn *d, const lc_exit *x,
                     const lc_cpu_state *st);

/* Why it exited, for the tracking table's property bits (section 5). */
uint8_t lci_exit_props(const lc_exit *x);

/* ---- coherency.c: section 7 --------------------------------------------- */

/* Are the guest bytes a cached translation `te` covers at `at` (and in its
 * other code ranges) still what it was made from? On yes, gfn[] and *ngfn
 * are the code's frames (for the SMC watch, at most LCR_WATCH_MAX).
 * Re-records a range's fetch record when it had to do a full fetch. */
int lci_coherent_full(lcr_vcpu *v, tc_entry *te, uint64_t at,
                      uint64_t gfn[LCR_WATCH_MAX], unsigned *ngfn);

/* lci_coherent()'s frame count when the frames are those te->watch was
 * last computed for (gfn[] not filled): the watch is armed as it is. */
#define LCI_WATCH_KEPT (~0u)

/* The hit path's common cases in the caller: one code range whose record
 * still holds; or several, all on the first one's pages (an accessor on
 * its caller's page), whose code alone is compared once the first record
 * holds (all of it in one span when close: tc_entry.span), their frames
 * those the SMC watch's spans were computed for (*ngfn =
 * LCI_WATCH_KEPT). */
static inline int lci_coherent(lcr_vcpu *v, tc_entry *te, uint64_t at,
                               uint64_t gfn[LCR_WATCH_MAX], unsigned *ngfn)
{
    const lcx_cluster *cl = te->cl;

    if (cl->nrange <= 1) {
        if (!lcr_fetch_check(v, at, &te->rec, te->code, cl->nbytes))
            return lci_coherent_full(v, te, at, gfn, ngfn);
        *ngfn = te->rec.npages < 2 ? te->rec.npages : 2;
        gfn[0] = te->rec.gfn[0];
        gfn[1] = te->rec.gfn[1];
        return 1;
    }
    if (te->xvalid && te->xall && te->wvalid && te->span_len) {
        if (lcr_fetch_check_walk(v, at, &te->rec) &&
            lcr_ram_equal(te->span_hva, te->span, te->span_len)) {
            *ngfn = LCI_WATCH_KEPT;
            return 1;
        }
        te->span_len = 0;       /* range by range from now on */
    } else if (te->xvalid && te->xall && te->wvalid &&
               lcr_fetch_check(v, at, &te->rec, te->code, cl->nbytes)) {
        size_t off = 0;
        unsigned r;

        for (r = 1; r < cl->nrange; r++) {
            unsigned n = cl->range[r].len;

            if (n && !lcr_ram_equal(te->xhva[r - 1], te->xcode + off, n))
                break;
            off += n;
        }
        if (r == cl->nrange) {
            *ngfn = LCI_WATCH_KEPT;
            return 1;
        }
    }
    return lci_coherent_full(v, te, at, gfn, ngfn);
}

/* A translation that pushes or pops (lcx_cluster.stack; a CALL or RET it
 * follows, PUSH, POP), once its coherency check passed in this epoch:
 * its stack's TLB page made current from the stamp its last run left
 * (runtime/rt.h, lcr_pwc_tlb_vouch(): the check read back most of the
 * page's paging entries already). */
static inline int lci_stack_vouch(lcr_vcpu *v, const tc_entry *te)
{
    if (te->stk.serial && lcr_pwc_tlb_vouch(v, &te->stk))
        return 1;
    /* else the page of the run before renewed here, once, so the stack's
     * inline forms run as leaves (runtime/exec.c) instead of the first
     * of them calling out for it */
    lcr_pwc_tlb_renew(v, te->cl->stack - 1u);
    return 0;
}

/* The run of a translation whose coherency check has just passed, with
 * its stack's TLB page made current first when it pushes or pops, and
 * stamped after a run that began without the stamp (the page since
 * another, or none yet). */
static inline lc_stop_reason lci_run(lcr_vcpu *v, tc_entry *te,
                                     uint32_t weak_backedge_cap,
                                     unsigned start)
{
    lc_stop_reason stop;
    int vouched;

    if (__builtin_expect(!te->cl->stack, 1))
        return lcx_run(te->cl, v, weak_backedge_cap, start);
    vouched = lci_stack_vouch(v, te);
    stop = lcx_run(te->cl, v, weak_backedge_cap, start);
    if (!vouched)
        (void)lcr_pwc_tlb_stamp(v, te->cl->stack - 1u, &te->rec, &te->stk);
    return stop;
}

/* The SMC watch of `te` for its code in frames gfn[0 .. ngfn) (ngfn at
 * most LCR_WATCH_MAX), from the coherency check: te->watch, narrowed to
 * the bytes of its code ranges by their fetch records, or whole frames
 * when a record cannot say. Computed once per record and frame list (the
 * hit path runs the same frames every time): kept in `te` while they
 * agree. 1 when te->watch was made again (its content may differ). */
void lci_watch_narrow_full(tc_entry *te, const uint64_t *gfn, unsigned ngfn);

static inline int lci_watch_narrow(tc_entry *te, const uint64_t *gfn,
                                   unsigned ngfn)
{
    unsigned i;

    if (__builtin_expect(te->wvalid && te->watch.n == ngfn, 1)) {
        for (i = 0; i < ngfn && te->watch.gfn[i] == gfn[i]; i++)
            ;
        if (i == ngfn)
            return 0;
    }
    lci_watch_narrow_full(te, gfn, ngfn);
    return 1;
}

/* Add frames to a watch list without repeats (at most LCR_WATCH_MAX). */
void lci_watch_add(uint64_t gfn[LCR_WATCH_MAX], unsigned *ngfn,
                   const uint64_t *add, unsigned nadd);

#endif /* LC_LIBCLUSTER_ENGINE_INT_H */
