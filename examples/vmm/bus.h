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

#include <pthread.h>
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

/* Several vCPU threads dispatch on a bus while one of them may move a
 * range (a PCI BAR write): the table is read under `lock` (shared) and
 * changed under it (exclusive). Handlers run outside it, so a handler may
 * move a range of its own bus. */
typedef struct bus {
    const char *name;            /* "pio" or "mmio" */
    pthread_rwlock_t lock;       /* the table below */
    bus_range r[BUS_MAX_RANGES]; /* sorted by base */
    unsigned n;
    uint64_t unclaimed;
} bus;

void bus_init(bus *b, const char *name);
/* Remove every range (a system reset: the devices register theirs again),
 * keeping the lock and the count of unclaimed accesses, which other
 * threads may read meanwhile (--stats-interval). */
void bus_clear(bus *b);
/* 0, or -1 with a message on stderr (zero length, overflow, overlap,
 * full). */
int bus_register(bus *b, uint64_t base, uint64_t len, bus_handler fn,
                 void *opaque, const char *name);
/* Move the range registered at `old_base` to `new_base` (a PCI BAR
 * write). 0, or -1 (nothing at old_base, or the new range is invalid or
 * overlaps: the range is then left unmapped, as a BAR programmed onto
 * another device decodes nothing useful). */
int bus_move(bus *b, uint64_t old_base, uint64_t new_base);

/* The range containing [addr, addr + size), or NULL. Without the lock:
 * for a bus nothing moves ranges on meanwhile (set-up, tests). */
const bus_range *bus_find(const bus *b, uint64_t addr, unsigned size);
/* Is [addr, addr + size) claimed by a device now? (any thread) */
bool bus_claims(bus *b, uint64_t addr, unsigned size);
/* Dispatch (any thread): the range is looked up under the lock and its
 * handler called after it is released, so an access that races a move
 * goes to the map before or after the move, never to a torn table.
 * Returns true if a device claimed the access. */
bool bus_access(bus *b, uint64_t addr, unsigned size, bool is_write,
                uint64_t *val);

#endif /* VMM_BUS_H */
