/* SPDX-License-Identifier: MIT */
/** @file
 * libcluster: statistics.
 *
 * Counters live per vCPU (no shared cache lines on the hit path) and are
 * summed on demand. Reads may run concurrently with handle_exit on other
 * threads: each counter is then exact for itself, not a snapshot of all.
 */
#ifndef CLUSTER_STATS_H
#define CLUSTER_STATS_H

#include <stdint.h>

#include "engine.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Cluster length histogram: bucket N counts runs that executed N exiting
 * instructions, the last bucket everything at or above it. */
#define LC_STATS_CLUSTER_BUCKETS 17
/** Instructions between consecutive exits: bucket N counts distances in
 * [2^(N-1), 2^N) (bucket 0: distance 0), the last one everything above. */
#define LC_STATS_DISTANCE_BUCKETS 16

/** Counters of one vCPU (lc_vcpu_get_stats()) or of the whole engine
 * (lc_engine_get_stats()). */
typedef struct lc_stats {
    uint64_t exits_seen;         /**< calls to lc_vcpu_handle_exit */
    uint64_t exits_declined;     /**< answered LC_DECLINED */
    uint64_t exits_interpreted;  /**< handled by interpretation (first exits) */
    uint64_t exits_translated;   /**< handled by a cached translation */
    uint64_t exits_saved;        /**< exiting instructions run without an exit */
    uint64_t insns;              /**< guest instructions executed */
    uint64_t translations;       /**< translations made */
    uint64_t retranslations;     /**< made again after a coherency failure */
    uint64_t coherency_failures; /**< translations whose code changed (s7) */
    uint64_t smc_stops;          /**< runs stopped by a write to their code (s7) */
    uint64_t forced_translations;/**< forced by the leak guard (s5) */
    uint64_t evictions;          /**< translations evicted by the memory cap */
    uint64_t routed_accesses;    /**< device accesses sent by a learned route,
                                  * without a gpa_map lookup (s5) */
    uint64_t tcache_bytes;       /**< bytes held by translations now */
    uint64_t stops[LC_STOP_REASON_COUNT_];  /**< runs by lc_stop_reason */
    uint64_t cluster_len[LC_STATS_CLUSTER_BUCKETS];       /**< see LC_STATS_CLUSTER_BUCKETS */
    uint64_t exit_distance[LC_STATS_DISTANCE_BUCKETS];    /**< see LC_STATS_DISTANCE_BUCKETS */
} lc_stats;

/** Counters of one vCPU. */
lc_status lc_vcpu_get_stats(const lc_vcpu *vcpu, lc_stats *out);

/** Sum over all vCPUs of the engine, live and destroyed, plus engine-wide
 * counters (translations, evictions, tcache_bytes). */
lc_status lc_engine_get_stats(const lc_engine *engine, lc_stats *out);

/** Zero the counters of one vCPU (engine-wide gauges are kept). */
lc_status lc_vcpu_reset_stats(lc_vcpu *vcpu);

#ifdef __cplusplus
}
#endif

#endif /* CLUSTER_STATS_H */
