/* SPDX-License-Identifier: MIT */
/*
 * libcluster/translation_cache.c: the per-vCPU translation cache. See translation_cache.h.
 */
#include <stdlib.h>
#include <string.h>

#include "translation_cache.h"

#define TC_BUCKETS 1024u

lc_status tc_init(tc_cache *c, uint64_t max_bytes)
{
    memset(c, 0, sizeof(*c));
    c->nbuckets = TC_BUCKETS;
    c->max_bytes = max_bytes;
    c->bucket = calloc(c->nbuckets, sizeof(*c->bucket));
    return c->bucket ? LC_OK : LC_ERR_NOMEM;
}

static void entry_free(tc_entry *e)
{
    free(e->xcode);
    free(e->xrec);
    free(e->code);
    free(e->cl);
    free(e);
}

void tc_remove(tc_cache *c, tc_entry *e)
{
    tc_entry **pp = &c->bucket[tc_bucket_of(c, &e->key)];

    while (*pp && *pp != e)
        pp = &(*pp)->chain;
    if (*pp)
        *pp = e->chain;
    if (e->older)
        e->older->newer = e->newer;
    else
        c->oldest = e->newer;
    if (e->newer)
        e->newer->older = e->older;
    else
        c->newest = e->older;
    /* Read by other threads for statistics: single-writer atomic. */
    __atomic_store_n(&c->bytes, c->bytes - e->size, __ATOMIC_RELAXED);
    c->count--;
    entry_free(e);
}

void tc_flush(tc_cache *c)
{
    while (c->oldest)
        tc_remove(c, c->oldest);
}

void tc_fini(tc_cache *c)
{
    if (c->bucket)
        tc_flush(c);
    free(c->bucket);
    c->bucket = NULL;
}

tc_entry *tc_insert(tc_cache *c, const tc_key *k, const lcx_cluster *cl,
                    const uint8_t *code, const lcx_code *xc)
{
    size_t clsize = offsetof(lcx_cluster, insn) +
                    (size_t)cl->ninsn * sizeof(lcx_insn);
    size_t xbytes = 0;
    tc_entry *e = calloc(1, sizeof(*e)), *old;
    unsigned nx = cl->nrange > 1 && xc ? cl->nrange - 1u : 0;
    uint32_t b;

    if (!e)
        return NULL;
    for (unsigned r = 1; r <= nx; r++)
        xbytes += cl->range[r].len;
    e->cl = malloc(clsize);
    e->code = malloc(cl->nbytes ? cl->nbytes : 1);
    if (nx) {
        e->xcode = malloc(xbytes ? xbytes : 1);
        e->xrec = malloc(nx * sizeof(*e->xrec));
    }
    if (!e->cl || !e->code || (nx && (!e->xcode || !e->xrec))) {
        entry_free(e);
        return NULL;
    }
    memcpy(e->cl, cl, clsize);
    memcpy(e->code, code, cl->nbytes);
    if (!nx)
        e->cl->nrange = 1;
    xbytes = 0;
    for (unsigned r = 1; r <= nx; r++) {
        memcpy(e->xcode + xbytes, xc->r[r - 1].buf, cl->range[r].len);
        e->xrec[r - 1] = xc->r[r - 1].rec;
        xbytes += cl->range[r].len;
    }
    e->key = *k;
    e->first_exit = TC_NO_EXIT;
    for (unsigned i = 0, reach = 0; i < cl->ninsn; i++) {
        if (cl->insn[i].exiting) {
            e->first_exit = (uint8_t)reach;
            break;
        }
        reach += !cl->insn[i].follow;
    }
    e->size = sizeof(*e) + clsize + cl->nbytes + xbytes +
              nx * sizeof(*e->xrec);

    /* A translation larger than the whole cap (a cap of a few KiB and a
     * cluster with callees) is not kept: evicting everything would not
     * make room for it. */
    if (e->size > c->max_bytes) {
        entry_free(e);
        return NULL;
    }
    old = tc_lookup(c, k);
    if (old)
        tc_remove(c, old);
    while (c->oldest && c->bytes + e->size > c->max_bytes) {
        tc_remove(c, c->oldest);
        __atomic_store_n(&c->evictions, c->evictions + 1, __ATOMIC_RELAXED);
    }
    b = tc_bucket_of(c, k);
    e->chain = c->bucket[b];
    c->bucket[b] = e;
    e->older = c->newest;
    if (c->newest)
        c->newest->newer = e;
    else
        c->oldest = e;
    c->newest = e;
    __atomic_store_n(&c->bytes, c->bytes + e->size, __ATOMIC_RELAXED);
    c->count++;
    return e;
}
