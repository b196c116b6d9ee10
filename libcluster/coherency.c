/* SPDX-License-Identifier: MIT */
/*
 * libcluster/coherency.c: paper section 7, the coherency check. Before a
 * cached translation runs, every guest byte it covers must still be what
 * it was made from: the guest (or DMA, or another vCPU) may have
 * rewritten its code, or remapped it, since. The self-modifying-code stop
 * during a run is the runtime's (watch_gfn in runtime/rt.h); the engine
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

/* One code range: by its fetch record, else by a full fetch that
 * re-records. Adds its frames to the watch list. */
static int range_coherent(lcr_vcpu *v, uint64_t rip, lcr_fetch_rec *rec,
                          const uint8_t *expect, size_t n,
                          uint64_t gfn[LCR_WATCH_MAX], unsigned *ngfn)
{
    uint8_t code[LCX_MAX_INSNS * LC_INSN_MAX_LEN];
    uint64_t g[2];
    unsigned ng = 0;
    size_t got;

    /* First by the fetch record: the paging entries and code bytes the
     * translation was made from, read directly, no walk, no callback. */
    if (lcr_fetch_check(v, rip, rec, expect, n)) {
        lci_watch_add(gfn, ngfn, rec->gfn, rec->npages < 2 ? rec->npages : 2);
        return 1;
    }
    /* Else by a full fetch through the guest's page tables, which also
     * re-records for the next check. */
    if (n > sizeof code)
        return 0;
    got = lcr_fetch_at_rec(v, rip, code, n, g, &ng, rec);
    if (got != n || memcmp(code, expect, n))
        return 0;
    lci_watch_add(gfn, ngfn, g, ng);
    return 1;
}

int lci_coherent(lcr_vcpu *v, tc_entry *te, uint64_t at,
                 uint64_t gfn[LCR_WATCH_MAX], unsigned *ngfn)
{
    const lcx_cluster *cl = te->cl;
    size_t off = 0;

    /* The first range by its record: the hit path of the common cluster
     * (one range) is what it was before clusters followed calls. */
    if (lcr_fetch_check(v, at, &te->rec, te->code, cl->nbytes)) {
        *ngfn = te->rec.npages < 2 ? te->rec.npages : 2;
        gfn[0] = te->rec.gfn[0];
        gfn[1] = te->rec.gfn[1];
    } else {
        *ngfn = 0;
        if (!range_coherent(v, at, &te->rec, te->code, cl->nbytes, gfn,
                            ngfn))
            return 0;
    }
    if (cl->nrange <= 1)
        return 1;
    /* A cluster that follows calls covers its callees too (calls.c):
     * every byte it executes is checked, wherever it lies. */
    for (unsigned r = 1; r < cl->nrange; r++) {
        size_t n = cl->range[r].len;

        if (n && !range_coherent(v, cl->range[r].rip, &te->xrec[r - 1],
                                 te->xcode + off, n, gfn, ngfn))
            return 0;
        off += n;
    }
    return 1;
}
