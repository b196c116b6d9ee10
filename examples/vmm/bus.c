/* SPDX-License-Identifier: MIT */
/* Port and MMIO buses (bus.h). */
#include <stdio.h>
#include <string.h>

#include "bus.h"

void bus_init(bus *b, const char *name)
{
    memset(b, 0, sizeof *b);
    b->name = name;
    pthread_rwlock_init(&b->lock, NULL);
}

void bus_clear(bus *b)
{
    pthread_rwlock_wrlock(&b->lock);
    memset(b->r, 0, sizeof b->r);
    b->n = 0;
    pthread_rwlock_unlock(&b->lock);
}

/* Add a range; `quiet` leaves reporting to the caller (a guest moving a
 * BAR onto another device must not be able to flood the log). */
static int add(bus *b, uint64_t base, uint64_t len, bus_handler fn,
               void *opaque, const char *name, bool quiet)
{
    unsigned i;

    if (!len || !fn || base + len - 1 < base) {
        if (!quiet)
            fprintf(stderr, "lcvmm: %s bus: bad range %#llx+%#llx for %s\n",
                    b->name, (unsigned long long)base,
                    (unsigned long long)len, name);
        return -1;
    }
    if (b->n == BUS_MAX_RANGES) {
        if (!quiet)
            fprintf(stderr, "lcvmm: %s bus: full, cannot add %s\n", b->name,
                    name);
        return -1;
    }
    for (i = 0; i < b->n; i++) {
        const bus_range *r = &b->r[i];
        if (base <= r->base + r->len - 1 && r->base <= base + len - 1) {
            if (!quiet)
                fprintf(stderr, "lcvmm: %s bus: %s [%#llx, %#llx] overlaps "
                        "%s\n", b->name, name, (unsigned long long)base,
                        (unsigned long long)(base + len - 1), r->name);
            return -1;
        }
    }
    for (i = 0; i < b->n && b->r[i].base < base; i++)
        ;
    memmove(&b->r[i + 1], &b->r[i], (b->n - i) * sizeof b->r[0]);
    b->r[i] = (bus_range){ base, len, fn, opaque, name };
    b->n++;
    return 0;
}

int bus_register(bus *b, uint64_t base, uint64_t len, bus_handler fn,
                 void *opaque, const char *name)
{
    pthread_rwlock_wrlock(&b->lock);
    int rc = add(b, base, len, fn, opaque, name, false);
    pthread_rwlock_unlock(&b->lock);
    return rc;
}

int bus_move(bus *b, uint64_t old_base, uint64_t new_base)
{
    int rc = -1;

    pthread_rwlock_wrlock(&b->lock);
    for (unsigned i = 0; i < b->n; i++) {
        if (b->r[i].base == old_base) {
            bus_range r = b->r[i];
            memmove(&b->r[i], &b->r[i + 1], (b->n - i - 1) * sizeof r);
            b->n--;
            rc = add(b, new_base, r.len, r.fn, r.opaque, r.name, true);
            break;
        }
    }
    pthread_rwlock_unlock(&b->lock);
    return rc;
}

const bus_range *bus_find(const bus *b, uint64_t addr, unsigned size)
{
    unsigned lo = 0, hi = b->n;

    while (lo < hi) {           /* the last range with base <= addr */
        unsigned mid = (lo + hi) / 2;
        if (b->r[mid].base <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (!lo)
        return NULL;
    const bus_range *r = &b->r[lo - 1];
    /* the whole access must lie inside the range */
    if (addr - r->base >= r->len || size > r->len - (addr - r->base))
        return NULL;
    return r;
}

bool bus_claims(bus *b, uint64_t addr, unsigned size)
{
    pthread_rwlock_rdlock(&b->lock);
    bool found = bus_find(b, addr, size) != NULL;
    pthread_rwlock_unlock(&b->lock);
    return found;
}

bool bus_access(bus *b, uint64_t addr, unsigned size, bool is_write,
                uint64_t *val)
{
    bus_range copy, *r = NULL;

    pthread_rwlock_rdlock(&b->lock);
    const bus_range *found = bus_find(b, addr, size);
    if (found) {
        copy = *found;
        r = &copy;
    }
    pthread_rwlock_unlock(&b->lock);
    if (!r) {
        /* relaxed: --stats-interval reads it while vCPUs run */
        if (__atomic_fetch_add(&b->unclaimed, 1, __ATOMIC_RELAXED) < 8)
            fprintf(stderr, "lcvmm: unclaimed %s %s of %u bytes at %#llx\n",
                    b->name, is_write ? "write" : "read", size,
                    (unsigned long long)addr);
        if (!is_write)
            *val = size >= 8 ? ~0ull : (1ull << (size * 8)) - 1;
        return false;
    }
    if (!is_write)
        *val = 0;
    r->fn(r->opaque, addr - r->base, size, is_write, val);
    return true;
}
