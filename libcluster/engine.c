/* SPDX-License-Identifier: MIT */
/*
 * libcluster/engine.c: engine and vCPU objects, configuration, statistics.
 *
 * State of this build: the objects, configuration and counters are
 * complete; execution is not. lc_vcpu_handle_exit() validates its input,
 * counts the exit and declines it (LC_DECLINED, stop reason
 * LC_STOP_UNSUPPORTED) until the runtime (runtime/) and the translator
 * (translator/) land. Declining is always correct: the VMM then handles
 * the exit exactly as it would without the library.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <cluster/cluster.h>

struct lc_vcpu {
    lc_engine *engine;
    uint32_t id;
    void *opaque;
    lc_stats stats;
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
};

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
    if (pthread_mutex_init(&e->lock, NULL) != 0) {
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
    /* Nothing is cached yet: no translations, no tracking entries. */
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
    stats_add(&e->retired, &v->stats);
    pthread_mutex_unlock(&e->lock);
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

lc_status lc_vcpu_handle_exit(lc_vcpu *v, lc_cpu_state *state,
                              const lc_exit *exit, lc_result *res)
{
    if (res)
        memset(res, 0, sizeof(*res));
    if (!v || !state || !exit || !res || !exit_valid(exit))
        return LC_ERR_INVAL;

    v->stats.exits_seen++;
    /* No runtime in this build: decline, so the VMM handles the exit as
     * it always did. See the README, "What is not done yet". */
    res->disposition = LC_DECLINED;
    res->stop = LC_STOP_UNSUPPORTED;
    v->stats.exits_declined++;
    v->stats.stops[LC_STOP_UNSUPPORTED]++;
    return LC_OK;
}

lc_status lc_vcpu_get_stats(const lc_vcpu *v, lc_stats *out)
{
    if (!v || !out)
        return LC_ERR_INVAL;
    *out = v->stats;
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
    for (const lc_vcpu *v = e->vcpus; v; v = v->next)
        stats_add(out, &v->stats);
    pthread_mutex_unlock((pthread_mutex_t *)&e->lock);
    return LC_OK;
}
