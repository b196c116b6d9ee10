/* SPDX-License-Identifier: MIT */
/*
 * The device list: initialising the board's devices in order, registering
 * the ranges each declares, and the run-time hooks over all of them
 * (device.h).
 */
#include <stdio.h>
#include <string.h>

#include "vmm.h"

static int register_ranges(vmm *vm, vmm_device *d)
{
    const vmm_device_ops *o = d->ops;

    for (unsigned i = 0; i < VMM_DEVICE_MAX_RANGES && o->ranges[i].len; i++) {
        const vmm_io_range *r = &o->ranges[i];
        if (bus_register(r->mmio ? &vm->mmio : &vm->pio, r->base, r->len,
                         r->fn, o->init ? d->state : vm, o->name))
            return -1;
    }
    return 0;
}

/* The states vmm_devices_reset keeps (keep_on_reset devices), by
 * descriptor. */
typedef struct kept_state {
    const vmm_device_ops *ops;
    void *state;
} kept_state;

static int devices_build(vmm *vm, const kept_state *kept, unsigned nkept,
                         char *err, size_t errlen)
{
    vm->dma = vmm_dma_template;
    vm->dma.opaque = vm;
    vm->ndev = 0;
    vm->io_timer_fd = -1;       /* vmm_io_start creates them */
    vm->io_wake_fd = -1;
    for (const vmm_device_ops *const *o = vmm_board; *o; o++) {
        vmm_device *d;
        int rc = 0;
        unsigned k;

        if (vm->ndev == VMM_MAX_DEVICES) {
            snprintf(err, errlen, "too many devices");
            return -1;
        }
        d = &vm->dev[vm->ndev];
        *d = (vmm_device){ .ops = *o, .vm = vm };
        for (k = 0; k < nkept && kept[k].ops != *o; k++)
            ;
        if (k < nkept)
            d->state = kept[k].state;       /* through the reset as it was */
        else if ((*o)->init)
            rc = (*o)->init(vm, d, err, errlen);
        if (rc == VMM_DEVICE_ABSENT)
            continue;
        vm->ndev++;             /* fini undoes init, even a partial one */
        if (rc)
            return -1;
        if (register_ranges(vm, d)) {
            snprintf(err, errlen, "cannot register the ports of %s",
                     (*o)->name);
            return -1;
        }
    }
    return 0;
}

int vmm_devices_init(vmm *vm, char *err, size_t errlen)
{
    bus_init(&vm->pio, "pio");
    bus_init(&vm->mmio, "mmio");
    return devices_build(vm, NULL, 0, err, errlen);
}

/* A reset as a PC's RESET# line: every device back to its power-on state
 * by undoing it and making it again from the board's list (the models
 * themselves have no reset entry points of their own), except the
 * keep_on_reset ones, which a reset does not reach. The buses lose their
 * ranges but keep their counts of unclaimed accesses (the run's, not a
 * boot's; --stats-interval reads them meanwhile). */
int vmm_devices_reset(vmm *vm, char *err, size_t errlen)
{
    kept_state kept[VMM_MAX_DEVICES];
    unsigned nkept = 0;
    int rc;

    vmm_devices_flush(vm);      /* held transmits: delivered, not lost */
    /* --stats-interval reads the devices' counters under it meanwhile */
    pthread_mutex_lock(&vm->dev_lock);
    while (vm->ndev) {
        vmm_device *d = &vm->dev[--vm->ndev];
        if (d->ops->keep_on_reset)
            kept[nkept++] = (kept_state){ d->ops, d->state };
        else if (d->ops->exit)
            d->ops->exit(vm, d);
        d->state = NULL;
    }
    bus_clear(&vm->pio);
    bus_clear(&vm->mmio);
    rc = devices_build(vm, kept, nkept, err, errlen);
    pthread_mutex_unlock(&vm->dev_lock);
    return rc;
}

void vmm_devices_fini(vmm *vm)
{
    while (vm->ndev) {
        vmm_device *d = &vm->dev[--vm->ndev];
        if (d->ops->exit)
            d->ops->exit(vm, d);
        d->state = NULL;
    }
}

/* Send combining's "next world switch" (Sugerman et al., section 3.3,
 * device.h): nearly every
 * exit has nothing queued, so the lock is taken only when a device says
 * it has. */
void vmm_devices_flush_pending(vmm *vm)
{
    for (unsigned i = 0; i < vm->ndev; i++) {
        vmm_device *d = &vm->dev[i];
        if (d->ops->pending && d->ops->pending(d)) {
            pthread_mutex_lock(&vm->dev_lock);
            d->ops->flush(d);
            vmm_io_update(vm);        /* a reply may wait for descriptors */
            pthread_mutex_unlock(&vm->dev_lock);
        }
    }
}

/* Adaptive send combining flushes at the end of an exit instead
 * (vmm_exit_done): again the lock only when a device asks. */
void vmm_devices_exit_done(vmm *vm)
{
    for (unsigned i = 0; i < vm->ndev; i++) {
        vmm_device *d = &vm->dev[i];
        if (d->ops->exit_done && d->ops->exit_done(d)) {
            pthread_mutex_lock(&vm->dev_lock);
            d->ops->flush(d);
            vmm_io_update(vm);
            pthread_mutex_unlock(&vm->dev_lock);
        }
    }
}

void vmm_devices_flush(vmm *vm)
{
    pthread_mutex_lock(&vm->dev_lock);
    for (unsigned i = 0; i < vm->ndev; i++)
        if (vm->dev[i].ops->flush)
            vm->dev[i].ops->flush(&vm->dev[i]);
    pthread_mutex_unlock(&vm->dev_lock);
}

void vmm_devices_tick(vmm *vm)
{
    for (unsigned i = 0; i < vm->ndev; i++) {
        vmm_device *d = &vm->dev[i];
        if (d->ops->flush)
            d->ops->flush(d);
        if (d->ops->poll)
            d->ops->poll(d);        /* a held frame may go in now */
    }
}

bool vmm_devices_waiting(vmm *vm)
{
    for (unsigned i = 0; i < vm->ndev; i++)
        if (vm->dev[i].ops->waits && vm->dev[i].ops->waits(&vm->dev[i]))
            return true;
    return false;
}

bool vmm_devices_want_tick(const vmm *vm)
{
    for (unsigned i = 0; i < vm->ndev; i++)
        if (vm->dev[i].wants_tick)
            return true;
    return false;
}

unsigned vmm_devices_coalesced(vmm *vm, vmm_io_range *out, unsigned max)
{
    unsigned n = 0;

    for (unsigned i = 0; i < vm->ndev && n < max; i++)
        if (vm->dev[i].ops->coalesced)
            n += vm->dev[i].ops->coalesced(&vm->dev[i], out + n, max - n);
    return n;
}

/* A sum: it changes when any device's generation does. */
unsigned vmm_devices_coalesced_gen(vmm *vm)
{
    unsigned g = 0;

    for (unsigned i = 0; i < vm->ndev; i++)
        if (vm->dev[i].ops->coalesced_gen)
            g += vm->dev[i].ops->coalesced_gen(&vm->dev[i]);
    return g;
}

unsigned vmm_devices_direct(vmm *vm, vmm_ram_range *out, unsigned max)
{
    unsigned n = 0;

    for (unsigned i = 0; i < vm->ndev && n < max; i++)
        if (vm->dev[i].ops->direct)
            n += vm->dev[i].ops->direct(&vm->dev[i], out + n, max - n);
    return n;
}

void vmm_devices_stats(vmm *vm, vmm_stat_fn put, void *ctx)
{
    for (unsigned i = 0; i < vm->ndev; i++)
        if (vm->dev[i].ops->stats)
            vm->dev[i].ops->stats(&vm->dev[i], put, ctx);
}
