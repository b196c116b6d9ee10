/* SPDX-License-Identifier: MIT */
/*
 * libcluster/kvm/kvm_int.h: what the KVM adapter's files share. The
 * adapter sees the engine only through the public API and
 * libcluster/adapter.h.
 */
#ifndef LC_LIBCLUSTER_KVM_INT_H
#define LC_LIBCLUSTER_KVM_INT_H

#include <linux/kvm.h>
#include <stdint.h>

#include <cluster/kvm.h>

/* State travels through the sync regs only (docs/kvm.md). */
#define LCK_SYNC_RS (KVM_SYNC_X86_REGS | KVM_SYNC_X86_SREGS)

/* The data of a KVM_EXIT_IO, inside the kvm_run mapping. */
static inline uint8_t *lck_io_data(struct kvm_run *run)
{
    return (uint8_t *)run + run->io.data_offset;
}

#endif /* LC_LIBCLUSTER_KVM_INT_H */
