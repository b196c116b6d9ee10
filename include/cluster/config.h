/* SPDX-License-Identifier: MIT */
/** @file
 * libcluster: engine configuration (lc_config) and the techniques it
 * switches.
 *
 * Its own header, included by engine.h, because the translator (cluster
 * formation) reads the same configuration and must not see the engine's
 * API: the layers below the engine include only the public headers that
 * describe data (cpu.h, ops.h, decode.h, config.h, stop.h).
 */
#ifndef CLUSTER_CONFIG_H
#define CLUSTER_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Techniques, each switchable on its own so its effect can be measured
 * alone (paper sections 2-7). */
#define LC_TECH_SINGLE   (1u << 0)  /**< cached single-exit translations (s2) */
#define LC_TECH_PAIRS    (1u << 1)  /**< exit pairs (s3) */
#define LC_TECH_STATIC   (1u << 2)  /**< static clusters (s4) */
#define LC_TECH_DYNAMIC  (1u << 3)  /**< dynamic clusters from exit tracking (s5) */
#define LC_TECH_SMC      (1u << 4)  /**< self-modifying-code stops (s7) */
#define LC_TECH_CALLS    (1u << 5)  /**< clusters follow CALL, RET and JMP
                                     * (s11's future work) */
/** every technique (the default); clear LC_TECH_CALLS for the paper's
 * five alone */
#define LC_TECH_ALL      (LC_TECH_SINGLE | LC_TECH_PAIRS | LC_TECH_STATIC | \
                          LC_TECH_DYNAMIC | LC_TECH_SMC | LC_TECH_CALLS)

/** Control flow inside clusters (paper section 6). */
typedef enum lc_cflow_method {
    LC_CFLOW_NONE = 0,  /**< a branch ends the cluster before it */
    LC_CFLOW_M1,        /**< branches inside; a taken branch ends the run */
    LC_CFLOW_M2,        /**< forward branches inside the cluster */
    LC_CFLOW_M3,        /**< forward branches and loops (backedges) */
} lc_cflow_method;

/**
 * Configuration. Call lc_config_init() first: it sets `size` and the
 * paper's values; then change what you need. Every constant of the paper
 * is here rather than in the code.
 */
typedef struct lc_config {
    size_t   size;                /**< sizeof(lc_config), set by init */
    uint32_t techniques;          /**< LC_TECH_* mask; default LC_TECH_ALL */
    lc_cflow_method cflow;        /**< default LC_CFLOW_M3 */

    /* Static clusters (s4). */
    uint32_t max_cluster_insns;   /**< decode-ahead window; default 16,
                                   * at most 64; grows with exit_cost_ns */
    uint32_t max_mem_gap_fillers; /**< memory-accessing gap fillers between
                                   * two exiting instructions; default 4 */

    /* Exit tracking (s5, figure 1). hash_bits = index_bits + tag_bits. */
    uint32_t track_index_bits;    /**< 9: 512 FIFOs */
    uint32_t track_tag_bits;      /**< 26 */
    uint32_t track_depth;         /**< 8 entries per FIFO */
    uint32_t translate_threshold; /**< translate on this exit; default 3 */
    uint64_t leak_age_ns;         /**< an entry pushed out younger than this
                                   * forces translation; default 10 s */

    /* Control flow (s6). */
    uint32_t weak_backedge_cap;   /**< weak backedges per run; default 10 */

    /* Run control. */
    uint32_t insn_budget;         /**< instructions per run; default 16384 */
    uint32_t rep_budget;          /**< string iterations per run; 4096 */

    /** Translation cache: memory cap in bytes (default 4 MiB); past it
     * translations are evicted. */
    uint64_t tcache_max_bytes;

    /** What one exit costs the guest in ns, as the VMM measured it at
     * power-on (a round trip: the exit, the VMM's dispatch, the
     * re-entry); 0, the default: not known. The paper caps memory gap
     * fillers at four (s4) against an exit of 3,000 cycles, 0.9 us (s9);
     * its s11 proposes a cost/benefit model calibrated at power-on
     * instead. With a cost here, the cap and the window scale with it:
     * max_mem_gap_fillers walks and max_cluster_insns instructions per
     * 0.9 us of exit, never fewer than configured (the window at most 64).
     * Leave it 0 for the paper's fixed limits. Added after
     * tcache_max_bytes: a caller built with the lc_config that ended there
     * (its `size` says so) gets 0. */
    uint32_t exit_cost_ns;
} lc_config;

/** Fill `cfg` with the defaults above. */
void lc_config_init(lc_config *cfg);

/** LC_OK if `cfg` is usable; LC_ERR_INVAL (size mismatch, zero window,
 * index_bits + tag_bits > 64, ...) or LC_ERR_RANGE otherwise. */
lc_status lc_config_validate(const lc_config *cfg);

#ifdef __cplusplus
}
#endif

#endif /* CLUSTER_CONFIG_H */
