/* SPDX-License-Identifier: MIT */
/*
 * What a device model of the reference VMM may use of the platform.
 *
 * Device models are pure register and ring logic (as in Firecracker's
 * devices/): they never touch guest memory directly, never issue a
 * syscall and never see KVM or Unicorn. Guest memory is reached through
 * vm_dma (bounds-checked copies), the interrupt line through vm_irq, and
 * frames leave and arrive through a net_backend (backends/net.h).
 *
 * Everything that comes from the guest (register values, descriptor
 * rings, buffer addresses and lengths) is hostile: every ring walk is
 * bounded, every copy clamped, every loop must make progress. A guest
 * error is reported with dev_guest_error() and the device then behaves as
 * the real chip does (stops, sets an error bit, or ignores the write).
 */
#ifndef VMM_DEV_H
#define VMM_DEV_H

#include <stddef.h>
#include <stdint.h>

/* Copies between guest-physical memory and host buffers. Both return 0,
 * or -1 when any byte of [gpa, gpa + len) is not guest RAM or the range
 * wraps; nothing is copied then. */
typedef struct vm_dma {
    void *opaque;
    int (*read)(void *opaque, uint64_t gpa, void *buf, size_t len);
    int (*write)(void *opaque, uint64_t gpa, const void *buf, size_t len);
} vm_dma;

static inline int dma_read(const vm_dma *d, uint64_t gpa, void *buf,
                           size_t len)
{
    return d->read(d->opaque, gpa, buf, len);
}

static inline int dma_write(const vm_dma *d, uint64_t gpa, const void *buf,
                            size_t len)
{
    return d->write(d->opaque, gpa, buf, len);
}

/* A level-triggered interrupt line (a PCI INTx pin routed to a GSI).
 * set() may be called with an unchanged level; the platform decides
 * whether that costs anything (see the NIC option `irq_coalesce`). */
typedef struct vm_irq {
    void *opaque;
    void (*set)(void *opaque, unsigned gsi, int level);
    unsigned gsi;
} vm_irq;

/* Log a guest error once per (device, message) burst: rate limited so a
 * hostile guest cannot flood the log. `dev` names the device ("pcnet"). */
void dev_guest_error(const char *dev, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Number of guest errors logged (or suppressed by the rate limit) so far,
 * over all devices; tests read it. */
uint64_t dev_guest_errors(void);

#endif /* VMM_DEV_H */
