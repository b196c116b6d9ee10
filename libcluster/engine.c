/* SPDX-License-Identifier: MIT */
/*
 * libcluster/engine.c: the engine and vCPU objects, configuration, flush
 * requests and statistics. The exit path is handle_exit.c; the section
 * files are translation_cache.c (2), exit_tracking.c (5) and coherency.c
 * (7) (docs/engine.md has the table).
 */
#include <stdlib.h>
#include <string.h>

#include "engine_int.h"

static void stats_add(lc_stats *d, const lc_stats *s);

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

/* The size of the lc_config before exit_cost_ns was added: still taken
 * (config.h). */
#define LCI_CONFIG_SIZE_V1 offsetof(lc_config, exit_cost_ns)

lc_status lc_config_validate(const lc_config *cfg)
{
    if (!cfg ||
        (cfg->size != sizeof(*cfg) && cfg->size != LCI_CONFIG_SIZE_V1))
        return LC_ERR_INVAL;
    if (cfg->techniques & ~LC_TECH_ALL)
        return LC_ERR_INVAL;
    if ((unsigned)cfg->cflow > LC_CFLOW_M3)
        return LC_ERR_INVAL;
    if (cfg->max_cluster_insns == 0 || cfg->max_cluster_insns > LCX_MAX_INSNS)
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
    /* An older caller's lc_config ends before the fields added since:
     * those stay 0 (calloc), their "not known". */
    memcpy(&e->cfg, cfg, cfg->size);
    e->cfg.size = sizeof(e->cfg);
    e->cfg_size = cfg->size;
    e->window = lcx_window(&e->cfg);
    /* The chain's bound keeps its ratio to the window, as the window keeps
     * its to the exit cost: a loop whose iterations each leave their
     * translation (a PCI scan's absent function: a side not laid out) goes
     * on for as many lookups per exit as the window has instructions per
     * 16. With a window of 64 and a bound of 8, the BIOS guest's scan
     * took 10 exits a pass instead of 6 (2026-11-28, docs/engine.md). */
    e->chain_max = LCI_CHAIN_BASE * e->window / 16;
    if (e->chain_max < LCI_CHAIN_BASE)
        e->chain_max = LCI_CHAIN_BASE;
    /* The table may be older (smaller) or newer (larger) than this
     * library's lc_vm_ops: take what both know; what the VMM's table does
     * not have stays NULL (calloc), which every callback but gpa_map may
     * be (ops.h). Copied, so the VMM's table need not outlive the call.
     * Every field before accepts_wide is pointer-sized, and so is rdtsc
     * after it: a size that ends inside one of them leaves that one out
     * too. */
    {
        size_t n = ops->size < sizeof(e->ops) ? ops->size : sizeof(e->ops);
        if (n < offsetof(lc_vm_ops, accepts_wide))
            n &= ~(sizeof(ops->pio) - 1);
        else if (n > offsetof(lc_vm_ops, rdtsc) &&
                 n < offsetof(lc_vm_ops, rdtsc) + sizeof(ops->rdtsc))
            n = offsetof(lc_vm_ops, rdtsc);     /* half a pointer: none */
        memcpy(&e->ops, ops, n);
        e->ops.size = sizeof(e->ops);
    }
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
    /* As large as the creator's lc_config: an older caller's is smaller. */
    memcpy(out, &e->cfg, e->cfg_size);
    out->size = e->cfg_size;
    return LC_OK;
}

/*
 * A flush request, as KVM's vCPU requests (KVM_REQ_TLB_FLUSH): the shared
 * tracking table is cleared here under its row locks; each vCPU's private
 * translation cache, which only its own thread touches, is dropped by
 * that thread on its next exit when it sees the generation moved
 * (lci_vcpu_sync). Safe while vCPUs run: no exit that starts after this
 * returns uses a translation made before it.
 */
lc_status lc_engine_flush(lc_engine *e)
{
    if (!e)
        return LC_ERR_INVAL;
    lct_clear(&e->track);
    __atomic_add_fetch(&e->gen, 1, __ATOMIC_RELEASE);
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
    v->gen = __atomic_load_n(&e->gen, __ATOMIC_ACQUIRE);
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
        /* "held now": a destroyed vCPU's cache is freed below, its bytes
         * are no longer held (a VMM that makes its vCPUs anew at every
         * guest reboot would otherwise see the figure grow forever) */
        last.tcache_bytes = 0;
        stats_add(&e->retired, &last);
    }
    pthread_mutex_unlock(&e->lock);
    tc_fini(&v->tc);
    free(v);
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
