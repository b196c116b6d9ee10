/* SPDX-License-Identifier: MIT */
/*
 * libcluster/coherency.c: paper section 7, the coherency check. Before a
 * cached translation runs, every guest byte it covers must still be what
 * it was made from: the guest (or DMA, or another vCPU) may have
 * rewritten its code, or remapped it, since. The self-modifying-code stop
 * during a run is the runtime's (lcr_watch in runtime/rt.h); the engine
 * arms it with the frames found here (handle_exit.c).
 */
#include <string.h>

#include "engine_int.h"

void lci_watch_add(uint64_t gfn[LCR_WATCH_MAX], unsigned *ngfn,
                   const uint64_t *add, unsigned nadd)
{
    for (unsigned i = 0; i < nadd; i++) {
        unsigned j = 0;

        while (j < *ngfn && gfn[j] != add[i])
            j++;
        if (j == *ngfn && *ngfn < LCR_WATCH_MAX)
            gfn[(*ngfn)++] = add[i];
    }
}

/* Widen frame `gfn`'s span in watch `w` to cover [lo, hi). 0 when the
 * frame is not watched (the watch list was cut at LCR_WATCH_MAX). */
static int span_add(lcr_watch *w, uint64_t gfn, unsigned lo, unsigned hi)
{
    for (unsigned i = 0; i < w->n; i++) {
        if (w->gfn[i] != gfn)
            continue;
        if (w->lo[i] >= w->hi[i] || lo < w->lo[i])
            w->lo[i] = (uint16_t)lo;
        if (hi > w->hi[i])
            w->hi[i] = (uint16_t)hi;
        return 1;
    }
    return 0;
}

/* Section 7's stop is for a write into the code being run. Watching
 * whole frames also stops on data that shares a page with the code
 * (real-mode firmware keeps its variables beside its code: SeaBIOS, our
 * BIOS guest's counters and checksum), ending a cluster at every such
 * store although its translation does not depend on those bytes. The
 * coherency check above covers exactly the bytes of the code ranges, so
 * the watch can too: a frame's span is the bytes of the ranges in it, as
 * their fetch records say (page offset of the first byte, bytes per
 * page). A record that cannot say leaves whole frames. */
__attribute__((noinline))
static void narrow(lcr_watch *w, const tc_entry *te)
{
    const lcx_cluster *cl = te->cl;

    w->bytes = 0;
    for (unsigned i = 0; i < LCR_WATCH_MAX; i++)
        w->lo[i] = w->hi[i] = 0;
    for (unsigned r = 0; r < cl->nrange; r++) {
        const lcr_fetch_rec *rec = r == 0 ? &te->rec : &te->xrec[r - 1];
        size_t left = r == 0 ? cl->nbytes : cl->range[r].len;
        unsigned lo = lcr_fetch_page_off(rec);

        if (left == 0)
            continue;
        if (!rec->valid || rec->npages > 2)
            return;
        for (unsigned p = 0; p < rec->npages && left > 0; p++) {
            size_t n = rec->code_len[p] < left ? rec->code_len[p] : left;

            if (n == 0 || lo + n > 4096 ||
                !span_add(w, rec->gfn[p], lo, lo + (unsigned)n))
                return;
            left -= n;
            lo = 0;
        }
        if (left > 0)
            return;
    }
    w->bytes = 1;
}

void lci_watch_narrow_full(tc_entry *te, const uint64_t *gfn, unsigned ngfn)
{
    lcr_watch *w = &te->watch;

    w->n = (uint8_t)ngfn;
    for (unsigned i = 0; i < LCR_WATCH_MAX; i++)
        w->gfn[i] = i < ngfn ? gfn[i] : 0;
    narrow(w, te);
    te->wvalid = 1;
}

/* One code range: by its fetch record (1), else by a full fetch that
 * re-records (2). Adds its frames to the watch list. 0: not coherent.
 * `same_walk`: the first range's record, made through the same entries
 * in the same state, has just passed. `look`: code the run may never
 * reach (a callee, a predicted return site: ranges after the first), so
 * the full fetch sets no accessed bit; a page whose bits are still clear
 * makes the range incoherent, as formation does not follow into one
 * (translator/calls.c). */
static int range_coherent(lcr_vcpu *v, uint64_t rip, lcr_fetch_rec *rec,
                          int same_walk, int look, const uint8_t *expect,
                          size_t n, uint64_t gfn[LCR_WATCH_MAX],
                          unsigned *ngfn)
{
    uint8_t code[LCX_MAX_INSNS * LC_INSN_MAX_LEN];
    uint64_t g[2];
    unsigned ng = 0;
    size_t got;

    /* First by the fetch record: the paging entries and code bytes the
     * translation was made from, read directly, no walk, no callback.
     * `same_walk`: the first range's record, made through the same
     * entries in the same state, has just passed: the code is left. */
    if (same_walk ? rec->rip == rip && lcr_fetch_code_equal(rec, expect, n)
                  : lcr_fetch_check(v, rip, rec, expect, n)) {
        lci_watch_add(gfn, ngfn, rec->gfn, rec->npages < 2 ? rec->npages : 2);
        return 1;
    }
    /* Else by a full fetch through the guest's page tables, which also
     * re-records for the next check. */
    if (n > sizeof code)
        return 0;
    got = look ? lcr_fetch_look_rec(v, rip, code, n, g, &ng, rec)
               : lcr_fetch_at_rec(v, rip, code, n, g, &ng, rec);
    if (got != n || memcmp(code, expect, n))
        return 0;
    lci_watch_add(gfn, ngfn, g, ng);
    return 2;
}

/* tc_entry.span, once xall is found: every range on the first range's
 * frame, where the host holds that frame's bytes in one piece, within
 * TC_SPAN_MAX with at most TC_SPAN_GAP bytes that are no range's; the
 * bytes read now (the records have just passed, nothing ran since) and
 * kept only when each range's part is its code. */
static void span_make(tc_entry *te)
{
    const lcx_cluster *cl = te->cl;
    const lcr_fetch_rec *rec = &te->rec;
    unsigned off0 = lcr_fetch_page_off(rec), lo = off0,
             hi = off0 + cl->nbytes, code = cl->nbytes;
    const uint8_t *base;
    size_t off = 0;

    te->span_len = 0;
    if (!te->xall || rec->npages != 1 || rec->code_len[0] < cl->nbytes)
        return;
    for (unsigned r = 1; r < cl->nrange; r++) {
        const lcr_fetch_rec *x = &te->xrec[r - 1];
        unsigned o = lcr_fetch_page_off(x), n = cl->range[r].len;

        if (!n)
            continue;
        if (x->gfn[0] != rec->gfn[0] ||
            (uintptr_t)te->xhva[r - 1] - (uintptr_t)rec->code[0] !=
                (uintptr_t)o - off0)
            return;
        lo = o < lo ? o : lo;
        hi = o + n > hi ? o + n : hi;
        code += n;
    }
    if (hi - lo > TC_SPAN_MAX || hi - lo > code + TC_SPAN_GAP)
        return;
    base = rec->code[0] - (off0 - lo);
    lcr_ram_read(te->span, base, hi - lo);
    if (memcmp(te->span + (off0 - lo), te->code, cl->nbytes))
        return;
    for (unsigned r = 1; r < cl->nrange; r++) {
        unsigned n = cl->range[r].len;

        if (n && memcmp(te->span + (lcr_fetch_page_off(&te->xrec[r - 1]) - lo),
                        te->xcode + off, n))
            return;
        off += n;
    }
    te->span_hva = base;
    te->span_len = (uint16_t)(hi - lo);
}

int lci_coherent_full(lcr_vcpu *v, tc_entry *te, uint64_t at,
                      uint64_t gfn[LCR_WATCH_MAX], unsigned *ngfn)
{
    const lcx_cluster *cl = te->cl;
    unsigned same = 0, all = 1;
    size_t off = 0;
    int how;

    /* The first range by its record: the hit path of the common cluster
     * (one range) is what it was before clusters followed calls. */
    if (lcr_fetch_check(v, at, &te->rec, te->code, cl->nbytes)) {
        *ngfn = te->rec.npages < 2 ? te->rec.npages : 2;
        gfn[0] = te->rec.gfn[0];
        gfn[1] = te->rec.gfn[1];
        if (te->xvalid)
            same = te->xsame;
    } else {
        *ngfn = 0;
        te->wvalid = 0;          /* its record is made again (or fails) */
        te->xvalid = 0;
        te->stk.serial = 0;      /* and the stamp read the entries off it */
        if (!range_coherent(v, at, &te->rec, 0, 0, te->code, cl->nbytes,
                            gfn, ngfn))
            return 0;
    }
    if (cl->nrange <= 1)
        return 1;
    /* A cluster that follows calls covers its callees too (calls.c):
     * every byte it executes is checked, wherever it lies. */
    for (unsigned r = 1; r < cl->nrange; r++) {
        size_t n = cl->range[r].len;

        if (n) {
            how = range_coherent(v, cl->range[r].rip, &te->xrec[r - 1],
                                 (same >> (r - 1)) & 1, 1, te->xcode + off,
                                 n, gfn, ngfn);
            if (how != 1) {
                te->wvalid = 0;
                te->xvalid = 0;
                all = 0;
            }
            if (!how)
                return 0;
        }
        off += n;
    }
    /* Every record as checked: which of them share the first's walk. */
    if (all && !te->xvalid) {
        te->xsame = 0;
        te->xall = 1;
        for (unsigned r = 1; r < cl->nrange; r++) {
            const lcr_fetch_rec *x = &te->xrec[r - 1];

            te->xhva[r - 1] = NULL;
            if (!cl->range[r].len)
                continue;
            if (lcr_fetch_same_walk(&te->rec, x))
                te->xsame |= (uint8_t)(1u << (r - 1));
            else
                te->xall = 0;
            if (x->npages >= 1 && x->code_len[0] >= cl->range[r].len)
                te->xhva[r - 1] = x->code[0];   /* all on its first page */
            else
                te->xall = 0;
        }
        te->xvalid = 1;
        span_make(te);
    }
    return 1;
}
