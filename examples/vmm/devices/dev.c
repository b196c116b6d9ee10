/* SPDX-License-Identifier: MIT */
/*
 * Guest error reporting for the device models (dev.h).
 *
 * A hostile or buggy guest can provoke an error on every register access,
 * so the log is rate limited per device: the first DEV_ERR_LOGGED messages
 * of a device are printed, then one "further errors suppressed" line, then
 * nothing; every error is still counted. Device names are compared by
 * content and must have static storage (they are string literals in the
 * models). Lock-free: slots are claimed with a compare-and-swap, counters
 * are C11 atomics, and each message leaves in one stdio call so lines
 * from several vCPU threads do not interleave.
 */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "dev.h"

#define DEV_ERR_LOGGED 20       /* messages printed per device */
#define DEV_ERR_SLOTS  16       /* devices tracked by name */

typedef struct dev_err_slot {
    _Atomic(const char *) name;
    atomic_uint_fast64_t count;
} dev_err_slot;

static dev_err_slot slots[DEV_ERR_SLOTS];
static dev_err_slot overflow;   /* devices beyond the table share this */
static atomic_uint_fast64_t total;

/* The slot for `dev`, claiming a free one on first use. */
static dev_err_slot *slot_of(const char *dev)
{
    for (unsigned i = 0; i < DEV_ERR_SLOTS; i++) {
        const char *cur = atomic_load(&slots[i].name);
        if (!cur) {
            const char *expected = NULL;
            if (atomic_compare_exchange_strong(&slots[i].name, &expected, dev))
                return &slots[i];
            cur = expected;     /* another thread claimed it first */
        }
        if (cur == dev || strcmp(cur, dev) == 0)
            return &slots[i];
    }
    return &overflow;
}

void dev_guest_error(const char *dev, const char *fmt, ...)
{
    char line[320];
    uint_fast64_t seen;
    int n;
    va_list ap;

    if (!dev)
        dev = "device";
    atomic_fetch_add(&total, 1);
    seen = atomic_fetch_add(&slot_of(dev)->count, 1);
    if (seen > DEV_ERR_LOGGED)
        return;
    if (seen == DEV_ERR_LOGGED) {
        fprintf(stderr, "%s: guest error: further errors suppressed\n", dev);
        return;
    }
    n = snprintf(line, sizeof line, "%s: guest error: ", dev);
    if (n < 0 || (size_t)n >= sizeof line)
        return;
    va_start(ap, fmt);
    vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    va_end(ap);
    /* One newline, whether or not the format ended with one. */
    n = (int)strlen(line);
    if (n > 0 && line[n - 1] == '\n')
        line[n - 1] = '\0';
    fprintf(stderr, "%s\n", line);
}

uint64_t dev_guest_errors(void)
{
    return atomic_load(&total);
}
