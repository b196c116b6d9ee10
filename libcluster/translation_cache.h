/* SPDX-License-Identifier: MIT */
/*
 * libcluster/translation_cache.h: the translation cache (paper section 2).
 *
 * One cache per vCPU: the hit path takes no lock and shares no cache line
 * with other vCPUs (a documented choice; translations are cheap to make
 * and vCPUs of one VM mostly exit on the same few hundred instructions).
 * A translation is found by (RIP, CS base, mode, CR3, whether the exiting
 * instruction was already completed) and keeps a copy of the guest bytes
 * it covers for the coherency check (section 7). Memory is capped: past
 * the cap the oldest translations are evicted (FIFO), so a guest that
 * keeps changing its code cannot grow the cache without bound.
 */
#ifndef LC_LIBCLUSTER_TRANSLATION_CACHE_H
#define LC_LIBCLUSTER_TRANSLATION_CACHE_H

#include <stdint.h>

#include "../translator/translator.h"

typedef struct tc_key {
    uint64_t rip;
    uint64_t cs_base;
    uint64_t cr3;
    uint8_t  mode;
    uint8_t  first_done;
} tc_key;

#define TC_NO_EXIT 0xff

/* The longest code span a translation compares in one go (tc_entry.span),
 * and the most bytes between its ranges it takes in: about what a second
 * compare of its own costs (a call, the alignment steps). */
#define TC_SPAN_MAX 96
#define TC_SPAN_GAP 32

typedef struct tc_entry {
    struct tc_entry *chain;     /* bucket list */
    struct tc_entry *older, *newer;
    tc_key   key;
    size_t   size;              /* bytes accounted */
    uint8_t *code;              /* guest bytes at translation time */
    lcx_cluster *cl;            /* ninsn entries only */
    lcr_fetch_rec rec;          /* how those bytes were fetched, to
                                 * revalidate without a walk */
    /* The cluster's other code ranges (cl->range[1..], calls.c): their
     * bytes, one after the other, and fetch records. */
    uint8_t *xcode;
    lcr_fetch_rec *xrec;
    /* The SMC watch (coherency.c, lci_watch_narrow): the frames of the
     * code and the byte spans in them, as last computed from the fetch
     * records; a run points the runtime at it (lcr_vcpu.watching). A hit
     * whose coherency check reports the same frames uses it as it is.
     * wvalid is cleared whenever a record is made again. */
    uint8_t  wvalid;
    /* Bit r - 1: xrec[r - 1] was made in rec's state through rec's paging
     * entries (lcr_fetch_same_walk), so once rec passed its check only
     * its code is compared. xall: every other range with code is such a
     * range, its code on one page (a callee on its caller's page:
     * lci_coherent's inline case).
     * Valid while xvalid; cleared with wvalid. */
    uint8_t  xvalid, xsame, xall;
    /* With xall: where each other range's code is in the host, all of it
     * on its record's first page (so, once rec passed, the range is
     * coherent when these bytes are its own: lci_coherent()). */
    const uint8_t *xhva[LCX_MAX_RANGES - 1];
    /* With xall, when every range's code lies on one frame close enough
     * that the bytes between cost less to compare than a compare of its
     * own (a callee a few bytes from its caller): the bytes from the
     * lowest range's first to the highest's last, as they were when
     * xall was found, and where they are (lci_coherent()). span_len 0:
     * none; cleared when the span differed once (the bytes between may be
     * data), made again with xall. */
    const uint8_t *span_hva;
    uint16_t span_len;
    uint8_t  span[TC_SPAN_MAX];
    /* Instructions before the first exiting one, counted as the window
     * counts them (without the transfers the cluster follows, calls.c's
     * lcx_trace_room): how far a chained run must reach to get to an
     * exit (handle_exit.c). TC_NO_EXIT: none exits. */
    uint8_t  first_exit;
    lcr_watch watch;
    /* A cluster that pushes or pops (lcx_cluster.stack): its stack's TLB
     * page as its last run left it (runtime/rt.h, lcr_tlb_stamp), made
     * current by the next hit's coherency check (engine_int.h,
     * lci_stack_vouch()). Dropped whenever `rec` is made again. */
    lcr_tlb_stamp stk;
} tc_entry;

typedef struct tc_cache {
    tc_entry **bucket;
    uint32_t   nbuckets;        /* power of two */
    tc_entry  *oldest, *newest;
    uint64_t   bytes, max_bytes;
    uint64_t   evictions;
    uint32_t   count;
} tc_cache;

/* The bucket of a key: its fields folded into 64 bits, the high half
 * folded onto the low one, then one multiplication by 2^64 / phi
 * (Fibonacci hashing) whose high bits pick the bucket: every input bit
 * reaches them. It runs on every exit of the hit path, where a keyed XXH3
 * of the same bytes cost several times more and SplitMix64's two
 * dependent multiplications were a tenth of a hit's cycles (perf); the
 * chains compare whole keys, so the mix only has to spread RIPs well. */
static inline uint32_t tc_bucket_of(const tc_cache *c, const tc_key *k)
{
    uint64_t h = k->rip ^ (k->cs_base << 7) ^ (k->cr3 << 1) ^
                 ((uint64_t)k->mode << 56) ^ ((uint64_t)k->first_done << 60);

    h = (h ^ (h >> 32)) * 0x9e3779b97f4a7c15ull;
    return (uint32_t)(h >> 32) & (c->nbuckets - 1);
}

static inline int tc_key_eq(const tc_key *a, const tc_key *b)
{
    return a->rip == b->rip && a->cs_base == b->cs_base &&
           a->cr3 == b->cr3 && a->mode == b->mode &&
           a->first_done == b->first_done;
}

/* On every exit of the hit path: inline. */
static inline tc_entry *tc_lookup(const tc_cache *c, const tc_key *k)
{
    for (tc_entry *e = c->bucket[tc_bucket_of(c, k)]; e; e = e->chain)
        if (tc_key_eq(&e->key, k))
            return e;
    return NULL;
}

lc_status tc_init(tc_cache *c, uint64_t max_bytes);
void tc_fini(tc_cache *c);
void tc_flush(tc_cache *c);
/* Copies `cl` (its used part) and `code` (range 0), and for its other
 * ranges their bytes and records from `xc` (NULL when cl->nrange <= 1);
 * evicts to stay under the cap. NULL on allocation failure, or when the
 * translation alone is larger than the cap (nothing changed). */
tc_entry *tc_insert(tc_cache *c, const tc_key *k, const lcx_cluster *cl,
                    const uint8_t *code, const lcx_code *xc);
void tc_remove(tc_cache *c, tc_entry *e);

#endif /* LC_LIBCLUSTER_TRANSLATION_CACHE_H */
