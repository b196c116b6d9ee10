/* SPDX-License-Identifier: MIT */
/*
 * One snapshot of lcvmm's statistics as (section, counter, value) rows:
 * the end-of-run table and JSON (stats.c) and the live rates of
 * --stats-interval (stats_live.c) print the same rows.
 */
#ifndef VMM_STATS_H
#define VMM_STATS_H

#include <stdbool.h>
#include <stdint.h>

#include "kvm_stats.h"

typedef struct vmm vmm;

typedef struct kv {
    const char *section, *key;
    double val;
    bool is_float;
} kv;

#define MAX_KV 192   /* the firmware phases add rows */

/* Fill t (MAX_KV rows) with the counters now and return how many: lcvmm's
 * own, read with relaxed loads (the vCPU threads update them as the
 * engine does its own, VMM_STAT_INC), KVM's `kvm` (summed over the vCPUs;
 * NULL: no kvm section), the engine's and the devices'. */
unsigned vmm_stats_collect(vmm *vm, const uint64_t *kvm, kv *t);

#endif /* VMM_STATS_H */
