/* SPDX-License-Identifier: MIT */
/** @file
 * libcluster: how a run ended (lc_stop_reason) and what it changed
 * (LC_DIRTY_*).
 *
 * Its own header, included by engine.h, because the runtime and the
 * translator produce these values and must not see the engine's API.
 */
#ifndef CLUSTER_STOP_H
#define CLUSTER_STOP_H

#ifdef __cplusplus
extern "C" {
#endif

/** How a run ended. */
typedef enum lc_stop_reason {
    LC_STOP_NONE = 0,     /**< the run did not start (see disposition) */
    LC_STOP_END,          /**< reached the end of its cluster */
    LC_STOP_TERMINATOR,   /**< next instruction cannot run in the VMM */
    LC_STOP_FAULT,        /**< next instruction would fault (\#PF, \#GP):
                           * the guest raises it itself on resume */
    LC_STOP_IRQ,          /**< an interrupt is deliverable */
    LC_STOP_BUDGET,       /**< instruction or string budget spent */
    LC_STOP_BACKEDGES,    /**< weak-backedge cap reached (s6.3) */
    LC_STOP_SMC,          /**< the run wrote into its own code pages (s7) */
    LC_STOP_COHERENCY,    /**< the guest-physical map changed during the
                           * run (a callback called lc_engine_flush()):
                           * the run ended after that instruction, since
                           * its code was checked against the old map
                           * (s7) */
    LC_STOP_CALLBACK,     /**< a callback answered LC_CB_STOP */
    LC_STOP_HALT,         /**< ran HLT */
    LC_STOP_UNSUPPORTED,  /**< the engine cannot yet handle this exit */
    LC_STOP_REASON_COUNT_
} lc_stop_reason;

/** Short name of a stop reason ("end", "fault", ...); never NULL. */
const char *lc_stop_reason_name(lc_stop_reason reason);

/**@{*/
/** Parts of lc_cpu_state a handled run changed (lc_result.dirty). */
#define LC_DIRTY_GPRS    (1u << 0)
#define LC_DIRTY_RIP     (1u << 1)
#define LC_DIRTY_RFLAGS  (1u << 2)
#define LC_DIRTY_SREGS   (1u << 3)
/**@}*/

#ifdef __cplusplus
}
#endif

#endif /* CLUSTER_STOP_H */
