/* SPDX-License-Identifier: MIT */
/** @file
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
 * objects they create or destroy; lc_engine_flush() may run at any time.
 */
#ifndef CLUSTER_ENGINE_H
#define CLUSTER_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "cpu.h"
#include "error.h"
#include "exit.h"
#include "ops.h"
#include "stop.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The engine of one VM (opaque; lc_engine_create()). */
typedef struct lc_engine lc_engine;
/** The context of one vCPU (opaque; lc_vcpu_create()). */
typedef struct lc_vcpu lc_vcpu;

/**
 * Create an engine for one VM. `cfg` is copied (NULL means defaults);
 * so is `ops`, up to ops->size bytes: callbacks beyond a smaller (older)
 * table are NULL, fields of a larger (newer) one are ignored. On success *out owns a
 * new engine the caller frees with lc_engine_destroy().
 * Errors: LC_ERR_INVAL, LC_ERR_NOMEM.
 */
lc_status lc_engine_create(const lc_config *cfg, const lc_vm_ops *ops,
                           lc_engine **out);

/** Free an engine. LC_ERR_BUSY (and nothing freed) while any vCPU context
 * created from it is alive. NULL is accepted and ignored. */
lc_status lc_engine_destroy(lc_engine *engine);

/** The configuration in force (a copy), as large as the lc_config the
 * engine was created with (its `size`: a caller built with an older, smaller
 * lc_config gets that much). */
lc_status lc_engine_get_config(const lc_engine *engine, lc_config *out);

/**
 * Drop every translation and every exit-tracking entry: on guest reset,
 * and whenever the guest-physical map changes (translations remember
 * which device frame an instruction hits). Safe to call from any thread
 * while vCPUs handle exits, as KVM's vCPU requests: it clears the shared
 * tracking table and bumps the engine's generation; each vCPU compares
 * its own generation on entry to lc_vcpu_handle_exit() and drops its
 * translations when behind. Every exit that starts after this returns
 * sees the flush. A run already going ends after its instruction whose
 * callback this flush happened in, or a later one (LC_STOP_COHERENCY):
 * the rest of the translation was checked against the old map; call it
 * from inside the callback that changes the map. A run on another thread
 * notices the flush at its next callback; until every
 * lc_vcpu_handle_exit() that began before the flush has returned, it may
 * still use the old map (its chained runs included), so the host memory
 * the old map answered with must stay mapped until then (as KVM keeps an
 * old memslot array until its SRCU readers are done).
 */
lc_status lc_engine_flush(lc_engine *engine);

/**
 * Create a vCPU context. `opaque` is passed to every callback made on
 * behalf of this vCPU. Errors: LC_ERR_INVAL, LC_ERR_NOMEM.
 */
lc_status lc_vcpu_create(lc_engine *engine, uint32_t vcpu_id, void *opaque,
                         lc_vcpu **out);

/** Free a vCPU context. NULL is accepted and ignored. */
void lc_vcpu_destroy(lc_vcpu *vcpu);

/** What lc_vcpu_handle_exit() did with an exit. */
typedef enum lc_disposition {
    LC_DECLINED = 0,  /**< the engine did nothing: state untouched; handle
                       * the exit exactly as without the library */
    LC_HANDLED,       /**< the exit and possibly more was done: write the
                       * `dirty` parts of the state back and resume */
} lc_disposition;

/** The outcome of lc_vcpu_handle_exit(). */
typedef struct lc_result {
    lc_disposition disposition;  /**< handled, or declined */
    lc_stop_reason stop;     /**< how the run ended */
    uint32_t dirty;          /**< LC_DIRTY_* */
    uint32_t insns;          /**< guest instructions executed, the exiting
                              * one included */
    uint32_t exits_done;     /**< exiting instructions executed */
    uint32_t exits_saved;    /**< exits_done minus the one taken */
    uint8_t  halted;         /**< the run ended with HLT */
    uint8_t  translated;     /**< served by a cached translation */
    uint8_t  learning;       /**< the engine has not decided about this exit
                              * site yet: one of its first exits (section
                              * 5), or the first after its code changed */
    uint8_t  pad_[5];
} lc_result;

/**
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
