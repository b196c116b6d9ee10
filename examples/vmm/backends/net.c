/* SPDX-License-Identifier: MIT */
/*
 * Network backend selection (--net) and the helpers the backends share.
 *
 * The argument syntax follows kvmtool and QEMU: a backend name, then
 * comma-separated key=value options:
 *
 *   peer                 the built-in peer at 10.0.2.2
 *   peer,ip=A.B.C.D      the built-in peer at another address
 *   peer,tftp=DIR,boot=F the peer as network-boot server too (DHCP, TFTP)
 *   tap,ifname=NAME      a TAP device (ifname required)
 *
 * and, on either, the test hook of fault.c, as QEMU repeats hostfwd=:
 *
 *   ...,fault=eagain:10%,fault=drop:0.5%,rxfault=reorder:5%,fault-seed=7
 *
 * Unknown backends and options are rejected with a message that lists
 * the valid ones, so a typo never silently selects a default.
 */
#include <arpa/inet.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net.h"
#include "net_util.h"

uint32_t net_csum_add(uint32_t sum, const uint8_t *p, size_t len)
{
    size_t i;

    for (i = 0; i + 1 < len; i += 2)
        sum += net_get16(p + i);
    if (len & 1)
        sum += (uint32_t)p[len - 1] << 8;   /* RFC 1071: pad with zero */
    /* Fold now so that long chains of pieces cannot overflow 32 bits. */
    while (sum >> 16)
        sum = (sum & 0xffff) + (sum >> 16);
    return sum;
}

uint16_t net_csum_fold(uint32_t sum)
{
    while (sum >> 16)
        sum = (sum & 0xffff) + (sum >> 16);
    return (uint16_t)~sum;
}

bool net_parse_ipv4(const char *s, uint8_t out[4])
{
    struct in_addr a;

    /* inet_pton() takes only the strict dotted-quad form (no "10.2",
     * no hex, no octal), unlike inet_aton(). */
    if (!s || inet_pton(AF_INET, s, &a) != 1)
        return false;
    memcpy(out, &a.s_addr, 4);
    return true;
}

void net_set_err(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;

    if (!err || !errlen)
        return;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* --- --net parsing --------------------------------------------------- */

#define MAX_KEYS 3

typedef struct net_kind {
    const char *name;
    const char *keys[MAX_KEYS];     /* valid options */
    const char *usage;              /* shown when an option is wrong */
    net_backend *(*create)(const char *const *vals, char *err, size_t errlen);
} net_kind;

static net_backend *create_peer(const char *const *vals, char *err,
                                size_t errlen)
{
    return net_peer_create_boot(vals[0], vals[1], vals[2], err, errlen);
}

static net_backend *create_tap(const char *const *vals, char *err,
                               size_t errlen)
{
    if (!vals[0]) {
        net_set_err(err, errlen, "tap: missing ifname (use tap,ifname=NAME)");
        return NULL;
    }
    return net_tap_create(vals[0], err, errlen);
}

static net_backend *create_dgram(const char *const *vals, char *err,
                                 size_t errlen)
{
    if (!vals[0] || !vals[1]) {
        net_set_err(err, errlen, "dgram: missing %s (use dgram,local=HOST:"
                    "PORT,remote=HOST:PORT)", vals[0] ? "remote" : "local");
        return NULL;
    }
    return net_dgram_create(vals[0], vals[1], err, errlen);
}

static const net_kind kinds[] = {
    { "peer", { "ip", "tftp", "boot" },
      "peer[,ip=A.B.C.D][,tftp=DIR][,boot=FILE]", create_peer },
    { "tap", { "ifname" }, "tap,ifname=NAME", create_tap },
    { "dgram", { "local", "remote" },
      "dgram,local=HOST:PORT,remote=HOST:PORT", create_dgram },
};
#define NKINDS (sizeof kinds / sizeof kinds[0])
#define VALID_BACKENDS "peer, tap, dgram"

static const net_kind *find_kind(const char *name)
{
    for (size_t i = 0; i < NKINDS; i++)
        if (!strcmp(kinds[i].name, name))
            return &kinds[i];
    return NULL;
}

static int find_key(const net_kind *k, const char *key)
{
    for (int i = 0; i < MAX_KEYS && k->keys[i]; i++)
        if (!strcmp(k->keys[i], key))
            return i;
    return -1;
}

static void list_keys(const net_kind *k, char *buf, size_t len)
{
    size_t off = 0;

    buf[0] = 0;
    for (int i = 0; i < MAX_KEYS && k->keys[i]; i++) {
        int n = snprintf(buf + off, len - off, "%s%s", i ? ", " : "",
                         k->keys[i]);
        if (n < 0 || (size_t)n >= len - off)
            break;
        off += (size_t)n;
    }
}

/*
 * Split "key=value,key=value" (modified in place) into vals[] by the
 * kind's key list. 0 on success, -1 with the message in err.
 */
static int parse_options(const net_kind *k, char *opts, const char **vals,
                         net_fault *fault, net_fault *rxfault, char *err,
                         size_t errlen)
{
    char valid[128];
    bool seeded = false;

    list_keys(k, valid, sizeof valid);
    while (opts) {
        char *next = strchr(opts, ',');
        char *eq;
        int idx;

        if (next)
            *next++ = 0;
        eq = strchr(opts, '=');
        if (eq)
            *eq = 0;
        if (!*opts) {
            net_set_err(err, errlen, "%s: empty option (usage: %s)",
                        k->name, k->usage);
            return -1;
        }
        /* the fault injection options every backend takes */
        if (!strcmp(opts, "rxfault")) {
            if (!eq || !eq[1]) {
                net_set_err(err, errlen, "%s: option 'rxfault' needs a value "
                            "(rxfault=KIND:PERCENT)", k->name);
                return -1;
            }
            if (net_fault_add(rxfault, eq + 1, err, errlen) < 0)
                return -1;
            opts = next;
            continue;
        }
        if (!strcmp(opts, "fault") || !strcmp(opts, "fault-seed")) {
            bool seed = opts[5] != 0;
            if (!eq || !eq[1]) {
                net_set_err(err, errlen, "%s: option '%s' needs a value "
                            "(fault=KIND:PERCENT, fault-seed=N)", k->name,
                            opts);
                return -1;
            }
            if (seed && seeded) {
                net_set_err(err, errlen, "%s: option 'fault-seed' given "
                            "twice", k->name);
                return -1;
            }
            seeded |= seed;
            if ((seed ? net_fault_seed(fault, eq + 1, err, errlen)
                      : net_fault_add(fault, eq + 1, err, errlen)) < 0)
                return -1;
            opts = next;
            continue;
        }
        idx = find_key(k, opts);
        if (idx < 0) {
            /* fault= and fault-seed= are a test hook: not offered here */
            net_set_err(err, errlen, "%s: unknown option '%s' (valid: %s)",
                        k->name, opts, valid);
            return -1;
        }
        if (!eq || !eq[1]) {
            net_set_err(err, errlen, "%s: option '%s' needs a value (usage: %s)",
                        k->name, opts, k->usage);
            return -1;
        }
        if (vals[idx]) {
            net_set_err(err, errlen, "%s: option '%s' given twice",
                        k->name, opts);
            return -1;
        }
        vals[idx] = eq + 1;
        opts = next;
    }
    return 0;
}

net_backend *net_backend_from_arg(const char *arg, char *err, size_t errlen)
{
    const char *vals[MAX_KEYS] = { 0 };
    net_fault fault = { 0 }, rxfault = { 0 };
    const net_kind *k;
    net_backend *be = NULL;
    char *copy, *opts;

    if (!arg || !*arg) {
        net_set_err(err, errlen, "empty network backend (valid: "
                    VALID_BACKENDS ")");
        return NULL;
    }
    copy = strdup(arg);
    if (!copy) {
        net_set_err(err, errlen, "out of memory");
        return NULL;
    }
    opts = strchr(copy, ',');
    if (opts)
        *opts++ = 0;
    k = find_kind(copy);
    if (!k)
        net_set_err(err, errlen, "unknown network backend '%s' (valid: "
                    VALID_BACKENDS ")", copy);
    else if (parse_options(k, opts, vals, &fault, &rxfault, err,
                           errlen) == 0)
        be = k->create(vals, err, errlen);
    if (be && rxfault.on) {
        rxfault.seed = fault.seed;
        rxfault.seeded = fault.seeded;
        if (!be->rxq) {
            net_set_err(err, errlen, "%s: no receive fault injection in this "
                        "backend", copy);
            net_destroy(be);
            be = NULL;
        } else if (net_rxq_check(&rxfault, net_poll_fd(be) >= 0, err,
                                 errlen) < 0) {
            net_destroy(be);
            be = NULL;
        } else {
            net_rxq_set_faults(be->rxq, &rxfault);
        }
    }
    if (be && (fault.on || fault.seeded)) {
        if (!be->txq) {
            net_set_err(err, errlen, "%s: no fault injection in this "
                        "backend", copy);
            net_destroy(be);
            be = NULL;
        } else {
            net_txq_set_faults(be->txq, &fault);
        }
    }
    free(copy);
    return be;
}
