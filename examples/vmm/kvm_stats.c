/* SPDX-License-Identifier: MIT */
/*
 * Reading KVM's per-vCPU binary statistics (Documentation/virt/kvm/api.rst,
 * "KVM_GET_STATS_FD"): a header, then descriptors of name_size-byte names,
 * then the data; every counter lcvmm reads is a cumulative u64. The
 * descriptors are read once at open; a read is one pread per counter
 * (about 0.1 us each: never on the exit path, only at start and end).
 */
#include <linux/kvm.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "kvm_stats.h"

const char *const kvm_stat_names[KVM_STAT_COUNT_] = {
    [KVM_STAT_EXITS] = "exits",
    [KVM_STAT_IO_EXITS] = "io_exits",
    [KVM_STAT_MMIO_EXITS] = "mmio_exits",
    [KVM_STAT_HALT_EXITS] = "halt_exits",
    [KVM_STAT_IRQ_EXITS] = "irq_exits",
    [KVM_STAT_SIGNAL_EXITS] = "signal_exits",
    [KVM_STAT_IRQ_WINDOW_EXITS] = "irq_window_exits",
    [KVM_STAT_INSN_EMULATION] = "insn_emulation",
};

bool kvm_stats_open(kvm_stats *s, int vcpu_fd)
{
#ifdef KVM_GET_STATS_FD
    struct kvm_stats_header h;
    size_t dsz;
    char *descs;

    for (unsigned i = 0; i < KVM_STAT_COUNT_; i++)
        s->offset[i] = ~0ull;
    s->fd = ioctl(vcpu_fd, KVM_GET_STATS_FD, NULL);
    if (s->fd < 0) {
        s->fd = -1;
        return false;
    }
    /* The header and descriptors are the kernel's, but bound them anyway:
     * a name must be terminated within name_size. */
    if (pread(s->fd, &h, sizeof h, 0) != (ssize_t)sizeof h ||
        h.name_size == 0 || h.name_size > 4096 || h.num_desc > 4096)
        goto fail;
    dsz = sizeof(struct kvm_stats_desc) + h.name_size;
    descs = malloc(dsz * h.num_desc);
    if (!descs)
        goto fail;
    if (pread(s->fd, descs, dsz * h.num_desc, h.desc_offset) !=
        (ssize_t)(dsz * h.num_desc)) {
        free(descs);
        goto fail;
    }
    for (uint32_t d = 0; d < h.num_desc; d++) {
        const struct kvm_stats_desc *k =
            (const struct kvm_stats_desc *)(descs + d * dsz);
        if (k->size != 1 || memchr(k->name, 0, h.name_size) == NULL ||
            (k->flags & KVM_STATS_TYPE_MASK) != KVM_STATS_TYPE_CUMULATIVE)
            continue;
        for (unsigned i = 0; i < KVM_STAT_COUNT_; i++)
            if (!strcmp(k->name, kvm_stat_names[i]))
                s->offset[i] = h.data_offset + k->offset;
    }
    free(descs);
    return true;
fail:
    close(s->fd);
    s->fd = -1;
    return false;
#else
    (void)vcpu_fd;
    s->fd = -1;
    return false;
#endif
}

void kvm_stats_read(const kvm_stats *s, uint64_t v[KVM_STAT_COUNT_])
{
    for (unsigned i = 0; i < KVM_STAT_COUNT_; i++) {
        v[i] = 0;
        if (s->fd >= 0 && s->offset[i] != ~0ull &&
            pread(s->fd, &v[i], sizeof v[i], (off_t)s->offset[i]) !=
            (ssize_t)sizeof v[i])
            v[i] = 0;
    }
}

void kvm_stats_close(kvm_stats *s)
{
    if (s->fd >= 0)
        close(s->fd);
    s->fd = -1;
}
