/* SPDX-License-Identifier: MIT */
/*
 * KVM's per-vCPU binary statistics (KVM_GET_STATS_FD, Linux 5.14+): what
 * a guest access costs counted by KVM itself rather than guessed by the
 * VMM. lcvmm reads a handful of cumulative counters at the start and the
 * end of a run; docs/vmm.md ("Exits and traps") defines what it derives
 * from them.
 */
#ifndef VMM_KVM_STATS_H
#define VMM_KVM_STATS_H

#include <stdbool.h>
#include <stdint.h>

/* The counters lcvmm reports, by KVM's names. */
typedef enum kvm_stat_id {
    KVM_STAT_EXITS,             /* every exit from the guest, kernel or not */
    KVM_STAT_IO_EXITS,
    KVM_STAT_MMIO_EXITS,
    KVM_STAT_HALT_EXITS,
    KVM_STAT_IRQ_EXITS,
    KVM_STAT_SIGNAL_EXITS,
    KVM_STAT_IRQ_WINDOW_EXITS,
    KVM_STAT_INSN_EMULATION,
    KVM_STAT_COUNT_
} kvm_stat_id;

extern const char *const kvm_stat_names[KVM_STAT_COUNT_];

typedef struct kvm_stats {
    int fd;                                 /* -1: not available */
    uint64_t offset[KVM_STAT_COUNT_];       /* in the fd; ~0: absent */
} kvm_stats;

/* Open the statistics of a vCPU (its fd). Returns false, with s->fd = -1,
 * where the kernel has no binary statistics. */
bool kvm_stats_open(kvm_stats *s, int vcpu_fd);
/* Read every counter into v (absent ones read 0). */
void kvm_stats_read(const kvm_stats *s, uint64_t v[KVM_STAT_COUNT_]);
void kvm_stats_close(kvm_stats *s);

#endif /* VMM_KVM_STATS_H */
