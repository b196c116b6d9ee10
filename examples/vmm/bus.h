/* SPDX-License-Identifier: MIT */
/*
 * Port and MMIO buses: one registry per address space, one handler
 * signature for every device (kvmtool's ioport/mmio traps in spirit).
 * Ranges are checked for zero length, overflow and overlap at
 * registration. An access nobody claims reads as all ones, is dropped on
 * write, and is counted (and logged the first few times).
 */
#ifndef VMM_BUS_H
#define VMM_BUS_H

#include <stdbool.h>
#include <stdint.h>

/* `offset` is relative to the range's base; `size` is 1, 2, 4 or 8;
 * on a read the handler stores into *val (which arrives zeroed). */
typedef void (*bus_handler)(void *opaque, uint64_t offset, unsigned size,
                            bool is_write, uint64_t *val);

typedef struct bus_range {
    uint64_t base, len;
    bus_handler fn;
    void *opaque;
    const char *name;
} bus_range;

#define BUS_MAX_RANGES 32

typedef struct bus {
    const char *name;            /* "pio" or "mmio" */
    bus_range r[BUS_MAX_RANGES]; /* sorted by base */
    unsigned n;
    uint64_t unclaimed;
} bus;

void bus_init(bus *b, const char *name);
/* 0, or -1 with a message on stderr (zero length, overflow, overlap,
 * full). */
int bus_register(bus *b, uint64_t base, uint64_t len, bus_handler fn,
                 void *opaque, const char *name);
/* Move the range registered at `old_base` to `new_base` (a PCI BAR
 * write). 0, or -1 (nothing at old_base, or the new range is invalid or
 * overlaps: the range is then left unmapped, as a BAR programmed onto
 * another device decodes nothing useful). */
int bus_move(bus *b, uint64_t old_base, uint64_t new_base);

/* The range containing [addr, addr + size), or NULL. */
const bus_range *bus_find(const bus *b, uint64_t addr, unsigned size);
/* Dispatch; returns true if a device claimed the access. */
bool bus_access(bus *b, uint64_t addr, unsigned size, bool is_write,
                uint64_t *val);

#endif /* VMM_BUS_H */
