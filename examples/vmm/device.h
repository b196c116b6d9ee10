/* SPDX-License-Identifier: MIT */
/*
 * The VMM's devices: each one a descriptor (vmm_device_ops) with its name,
 * its init and exit, the port and MMIO ranges it decodes at fixed
 * addresses, and the optional hooks the core calls at run time. The board
 * (board.c) lists the descriptors in the order they are initialised
 * (kvmtool's device init lists in spirit: the buses devices attach to come
 * first); the core walks that list and registers every declared range on
 * the port or MMIO bus with the device's state as opaque. A device whose
 * address is programmable (a PCI BAR) maps it itself with bus_register
 * and bus_move. The core never names a device: nothing in struct vmm is
 * specific to one.
 */
#ifndef VMM_DEVICE_H
#define VMM_DEVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bus.h"
#include "devices/dev.h"

typedef struct vmm vmm;
typedef struct vmm_device vmm_device;

/* A range a device decodes, in port space or in guest-physical memory. */
typedef struct vmm_io_range {
    bool mmio;                  /* false: port space */
    uint64_t base, len;
    bus_handler fn;             /* NULL in vmm_device_ops.coalesced */
} vmm_io_range;

/* Host memory a device lets the guest access as RAM (vmm_device_ops.direct). */
typedef struct vmm_ram_range {
    uint64_t gpa, len;
    void *hva;
} vmm_ram_range;

#define VMM_DEVICE_MAX_RANGES 4
#define VMM_MAX_DEVICES 16

/* The statistics sink of vmm_device_ops.stats: one counter per call. */
typedef void (*vmm_stat_fn)(void *ctx, const char *section, const char *key,
                            uint64_t value);

/* init's result besides 0 (ready) and -1 (error, message in err). */
#define VMM_DEVICE_ABSENT 1     /* not part of this configuration */

typedef struct vmm_device_ops {
    const char *name;
    /* Ranges at fixed addresses (len 0 ends the list), registered after
     * init succeeds, with dev->state as the handler's opaque. */
    vmm_io_range ranges[VMM_DEVICE_MAX_RANGES];
    /* Create the state (dev->state); 0, VMM_DEVICE_ABSENT, or -1 with the
     * reason in err. NULL: a stateless device (opaque = the vmm). */
    int  (*init)(vmm *vm, vmm_device *dev, char *err, size_t errlen);
    /* Undo init, also one that failed half way (called in the reverse
     * order of the list). */
    void (*exit)(vmm *vm, vmm_device *dev);

    /* Optional run-time hooks; all but pending are called with
     * vm->dev_lock held. */
    /* Work the device queued for the next exit (send combining, Sugerman
     * et al., "Virtualizing I/O Devices on VMware Workstation's Hosted
     * Virtual Machine Monitor", section 3.3): checked without the lock at
     * the beginning of every exit. */
    bool (*pending)(vmm_device *dev);
    /* The same at the end of every exit, before the guest runs again
     * (adaptive send combining's "next world switch", vmm_exit_done):
     * true if flush is to run now. Without the lock. */
    bool (*exit_done)(vmm_device *dev);
    /* Do what pending or exit_done reported: at exits, timer ticks, and
     * the end of the run. */
    void (*flush)(vmm_device *dev);
    /* Something waits for the I/O thread's tick (held transmits, a
     * received frame waiting for descriptors): the tick is armed only
     * while a device says so (vmm_io_update). */
    bool (*waits)(vmm_device *dev);
    /* A descriptor the I/O thread polls, asked before every poll (-1: none
     * for now, e.g. while the device cannot take more input), and what to
     * do when it is readable; poll also runs at each tick, after flush. */
    int  (*poll_fd)(vmm_device *dev);
    void (*poll)(vmm_device *dev);
    /* Ranges whose writes only store (latches, deferred writes): the KVM
     * back end may queue them in the coalesced ring. Absolute addresses;
     * returns the count. */
    unsigned (*coalesced)(vmm_device *dev, vmm_io_range *out, unsigned max);
    /* Changes whenever coalesced would answer differently (not for a BAR
     * move, which the core sees itself); read without the lock at every
     * exit. NULL: the set changes only with the BAR. */
    unsigned (*coalesced_gen)(vmm_device *dev);
    /* Register pages with memory semantics backed by host memory, at
     * their absolute addresses, that the KVM back end maps into the guest
     * as memory slots (devices/nic.h, "direct"), asked whenever the map
     * changed (vmm_map_changed(): a device calls it when its answer
     * changes, as for a BAR move). Accesses through the bus there keep
     * working, with the same semantics (the Unicorn back end, libcluster's
     * runs). Returns the count. */
    unsigned (*direct)(vmm_device *dev, vmm_ram_range *out, unsigned max);
    /* Counters for --stats. */
    void (*stats)(vmm_device *dev, vmm_stat_fn put, void *ctx);
    /* A system reset leaves the device as it is (the battery-backed
     * RTC/CMOS of a PC, a host file): vmm_devices_reset keeps its state
     * and registers its ranges again instead of exit + init. */
    bool keep_on_reset;
} vmm_device_ops;

struct vmm_device {
    const vmm_device_ops *ops;
    vmm *vm;
    void *state;
    bool wants_tick;            /* may need the I/O thread's tick (waits) */
    bool has_fd;                /* poll_fd may give a descriptor (set at
                                 * init): only then can one be left out */
};

/* The board (board.c): the devices of the platform in init order,
 * NULL-terminated. */
extern const vmm_device_ops *const vmm_board[];
extern const vmm_device_ops vmm_nic_device;     /* nic_dev.c */
/* fw_board.c: present only with --bios */
extern const vmm_device_ops vmm_cmos_device, vmm_fw_cfg_device,
       vmm_i8042_device, vmm_debugcon_device;
void vmm_fw_host_cfg_write(void *opaque, unsigned reg, uint32_t val);

/* Initialise the buses and every device of the board; 0, or -1 with the
 * reason in err (the devices initialised so far stay for fini). */
int  vmm_devices_init(vmm *vm, char *err, size_t errlen);
void vmm_devices_fini(vmm *vm);
/* A system reset (--reboot): flush what devices hold (frames the guest
 * handed over go out), undo every device but the keep_on_reset ones, and
 * build the board again from its init list: power-on state. The I/O
 * thread must be stopped. 0, or -1 with the reason in err. */
int  vmm_devices_reset(vmm *vm, char *err, size_t errlen);

/* The run-time hooks over all devices. */
void vmm_devices_flush_pending(vmm *vm);   /* at every exit: cheap */
void vmm_devices_exit_done(vmm *vm);       /* end of every exit: cheap */
void vmm_devices_flush(vmm *vm);           /* end of run, reset */
/* The I/O thread's tick (and Unicorn's), under dev_lock: flush, then
 * poll, each device. */
void vmm_devices_tick(vmm *vm);
bool vmm_devices_want_tick(const vmm *vm);
bool vmm_devices_waiting(vmm *vm);         /* under dev_lock */
unsigned vmm_devices_coalesced(vmm *vm, vmm_io_range *out, unsigned max);
unsigned vmm_devices_coalesced_gen(vmm *vm);
unsigned vmm_devices_direct(vmm *vm, vmm_ram_range *out, unsigned max);
void vmm_devices_stats(vmm *vm, vmm_stat_fn put, void *ctx);

/* The interrupt line `gsi` as devices get it: setting it high also
 * makes clusters stop for the guest to take it (vm.c). */
vm_irq vmm_irq_line(vmm *vm, unsigned gsi);

/* A device's state changed (a register access, a receive, a flush): arm
 * the I/O thread's tick if a device waits for it, wake the thread if a
 * descriptor it left out of its poll set is back (vm.c). Under dev_lock;
 * called by the device and by the core after a flush. */
void vmm_io_update(vmm *vm);

#endif /* VMM_DEVICE_H */
