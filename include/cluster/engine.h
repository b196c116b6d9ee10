/* SPDX-License-Identifier: MIT */
/*
 * libcluster: engine (one per VM) and vCPU context (one per vCPU).
 *
 * The engine owns what all vCPUs of a VM share: configuration, the
 * exit-tracking table and the translation cache. A vCPU context owns what
 * one vCPU thread touches on its hit path. There is no global state: two
 * engines in one process are independent.
 *
 * Threading: lc_vcpu_handle_exit() may run on many vCPU threads at once,
 * one call per context at a time. lc_engine_create()/lc_engine_destroy()
 * and lc_vcpu_create()/lc_vcpu_destroy() must not race with calls on the
 * objects they create or destroy.
 */
#ifndef CLUSTER_ENGINE_H
#define CLUSTER_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "cpu.h"
#include "error.h"
#include "exit.h"
#include "ops.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct lc_engine lc_engine;
typedef struct lc_vcpu lc_vcpu;

/* Techniques, each switchable on its own so its effect can be measured
 * alone (paper sections 2-7). */
#define LC_TECH_SINGLE   (1u << 0)  /* cached single-exit translations (s2) */
#define LC_TECH_PAIRS    (1u << 1)  /* exit pairs (s3) */
#define LC_TECH_STATIC   (1u << 2)  /* static clusters (s4) */
#define LC_TECH_DYNAMIC  (1u << 3)  /* dynamic clusters from exit tracking (s5) */
#define LC_TECH_SMC      (1u << 4)  /* self-modifying-code stops (s7) */
#define LC_TECH_ALL      (LC_TECH_SINGLE | LC_TECH_PAIRS | LC_TECH_STATIC | \
                          LC_TECH_DYNAMIC | LC_TECH_SMC)

/* Control flow inside clusters (paper section 6). */
typedef enum lc_cflow_method {
    LC_CFLOW_NONE = 0,  /* a branch ends the cluster before it */
    LC_CFLOW_M1,        /* branches inside; a taken branch ends the run */
    LC_CFLOW_M2,        /* forward branches inside the cluster */
    LC_CFLOW_M3,        /* forward branches and loops (backedges) */
} lc_cflow_method;

/*
 * Configuration. Call lc_config_init() first: it sets `size` and the
 * paper's values; then change what you need. Every constant of the paper
 * is here rather than in the code.
 */
typedef struct lc_config {
    size_t   size;                /* sizeof(lc_config), set by init */
    uint32_t techniques;          /* LC_TECH_* mask; default LC_TECH_ALL */
    lc_cflow_method cflow;        /* default LC_CFLOW_M3 */

    /* Static clusters (s4). */
    uint32_t max_cluster_insns;   /* decode-ahead window; default 16,
                                   * at most 32 */
    uint32_t max_mem_gap_fillers; /* memory-accessing gap fillers between
                                   * two exiting instructions; default 4 */

    /* Exit tracking (s5, figure 1). hash_bits = index_bits + tag_bits. */
    uint32_t track_index_bits;    /* 9: 512 FIFOs */
    uint32_t track_tag_bits;      /* 26 */
    uint32_t track_depth;         /* 8 entries per FIFO */
    uint32_t translate_threshold; /* translate on this exit; default 3 */
    uint64_t leak_age_ns;         /* an entry pushed out younger than this
                                   * forces translation; default 10 s */

    /* Control flow (s6). */
    uint32_t weak_backedge_cap;   /* weak backedges per run; default 10 */

    /* Run control. */
    uint32_t insn_budget;         /* instructions per run; default 16384 */
    uint32_t rep_budget;          /* string iterations per run; 4096 */

    /* Translation cache: memory cap in bytes (default 4 MiB); past it
     * translations are evicted. */
    uint64_t tcache_max_bytes;
} lc_config;

/* Fill `cfg` with the defaults above. */
void lc_config_init(lc_config *cfg);

/* LC_OK if `cfg` is usable; LC_ERR_INVAL (size mismatch, zero window,
 * index_bits + tag_bits > 64, ...) or LC_ERR_RANGE otherwise. */
lc_status lc_config_validate(const lc_config *cfg);

/*
 * Create an engine for one VM. `cfg` is copied (NULL means defaults);
 * `ops` is borrowed and must outlive the engine. On success *out owns a
 * new engine the caller frees with lc_engine_destroy().
 * Errors: LC_ERR_INVAL, LC_ERR_NOMEM.
 */
lc_status lc_engine_create(const lc_config *cfg, const lc_vm_ops *ops,
                           lc_engine **out);

/* Free an engine. LC_ERR_BUSY (and nothing freed) while any vCPU context
 * created from it is alive. NULL is accepted and ignored. */
lc_status lc_engine_destroy(lc_engine *engine);

/* The configuration in force (a copy). */
lc_status lc_engine_get_config(const lc_engine *engine, lc_config *out);

/*
 * Drop every translation and every exit-tracking entry: on guest reset,
 * and whenever the guest-physical map changes (translations remember
 * which device frame an instruction hits). Must not race with
 * lc_vcpu_handle_exit() on any vCPU.
 */
lc_status lc_engine_flush(lc_engine *engine);

/*
 * Create a vCPU context. `opaque` is passed to every callback made on
 * behalf of this vCPU. Errors: LC_ERR_INVAL, LC_ERR_NOMEM.
 */
lc_status lc_vcpu_create(lc_engine *engine, uint32_t vcpu_id, void *opaque,
                         lc_vcpu **out);

/* Free a vCPU context. NULL is accepted and ignored. */
void lc_vcpu_destroy(lc_vcpu *vcpu);

/* How a run ended. */
typedef enum lc_stop_reason {
    LC_STOP_NONE = 0,     /* the run did not start (see disposition) */
    LC_STOP_END,          /* reached the end of its cluster */
    LC_STOP_TERMINATOR,   /* next instruction cannot run in the VMM */
    LC_STOP_FAULT,        /* next instruction would fault (#PF, #GP):
                           * the guest raises it itself on resume */
    LC_STOP_IRQ,          /* an interrupt is deliverable */
    LC_STOP_BUDGET,       /* instruction or string budget spent */
    LC_STOP_BACKEDGES,    /* weak-backedge cap reached (s6.3) */
    LC_STOP_SMC,          /* the run wrote into its own code pages (s7) */
    LC_STOP_COHERENCY,    /* guest code changed since translation (s7) */
    LC_STOP_CALLBACK,     /* a callback answered LC_CB_STOP */
    LC_STOP_HALT,         /* ran HLT */
    LC_STOP_UNSUPPORTED,  /* the engine cannot yet handle this exit */
    LC_STOP_REASON_COUNT_
} lc_stop_reason;

/* Short name of a stop reason ("end", "fault", ...); never NULL. */
const char *lc_stop_reason_name(lc_stop_reason reason);

typedef enum lc_disposition {
    LC_DECLINED = 0,  /* the engine did nothing: state untouched; handle
                       * the exit exactly as without the library */
    LC_HANDLED,       /* the exit and possibly more was done: write the
                       * `dirty` parts of the state back and resume */
} lc_disposition;

/* Parts of lc_cpu_state a handled run changed (lc_result.dirty). */
#define LC_DIRTY_GPRS    (1u << 0)
#define LC_DIRTY_RIP     (1u << 1)
#define LC_DIRTY_RFLAGS  (1u << 2)
#define LC_DIRTY_SREGS   (1u << 3)

typedef struct lc_result {
    lc_disposition disposition;
    lc_stop_reason stop;
    uint32_t dirty;          /* LC_DIRTY_* */
    uint32_t insns;          /* guest instructions executed, the exiting
                              * one included */
    uint32_t exits_done;     /* exiting instructions executed */
    uint32_t exits_saved;    /* exits_done minus the one taken */
    uint8_t  halted;         /* the run ended with HLT */
    uint8_t  translated;     /* served by a cached translation */
    uint8_t  learning;       /* the engine has not decided about this exit
                              * site yet: one of its first exits (section
                              * 5), or the first after its code changed */
    uint8_t  pad_[5];
} lc_result;

/*
 * Handle one exit. `state` is the vCPU state at the exit (in) and, when
 * the result is LC_HANDLED, the state to resume with (out). `exit` says
 * what the hypervisor reported. `res` receives the outcome.
 *
 * LC_OK with LC_DECLINED means nothing happened and the VMM goes on as it
 * would without the library; LC_OK with LC_HANDLED means resume with the
 * new state. An error means the run stopped early with all completed
 * effects kept and `res` describing them.
 */
lc_status lc_vcpu_handle_exit(lc_vcpu *vcpu, lc_cpu_state *state,
                              const lc_exit *exit, lc_result *res);

#ifdef __cplusplus
}
#endif

#endif /* CLUSTER_ENGINE_H */
