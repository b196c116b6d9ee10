/* SPDX-License-Identifier: MIT */
/*
 * The transmit path every backend shares (net.h, "Transmit accounting"),
 * and the faults a test can inject into it.
 *
 * A frame the NIC hands over ends in exactly one of three counters:
 * tx_frames (the host took it whole), tx_dropped (lost, and counted), or
 * tx_queued (waiting here now). A send that finds the host busy
 * (EAGAIN: the TAP queue or socket buffer is full; ENOBUFS: the kernel
 * is short of buffers) is not a loss: the frame waits in a bounded
 * backlog and is sent again, in order, before the next frame and each
 * time the NIC polls for received frames (after every register access),
 * as QEMU's network queue holds a packet the TAP refused until the
 * descriptor is writable again. Only a full backlog drops. A short write
 * (the host took part of the frame) drops it: the wire got a fragment
 * no receiver accepts. Each kind of loss is reported once on stderr.
 *
 * Injected faults (fault=KIND:P%, fault-seed=N) are drawn per send
 * attempt from a xorshift64* generator seeded by fault-seed, so a run
 * is reproducible: eagain and enobufs answer the attempt as the syscall
 * would, without making it; short answers with half the frame written;
 * drop loses the frame as a wire would (counted: the VMM cannot see
 * what a real wire loses, but a test must be able to add it up); reorder
 * holds the frame back and sends it after the next one (or after two
 * receive polls when no other frame comes).
 *
 * The receive stage (net_rxq_rx) is the same on the other direction:
 * every frame the host offers is handed to the NIC, dropped (counted) or
 * held back (reorder, behind the frame that overtakes it), and the
 * rxfault= kinds drop, reorder and eagain are drawn per frame from a
 * generator of their own (per receive attempt while a frame waits: an
 * empty poll draws nothing, so how often the NIC polls does not move
 * which frames a seed hits).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net.h"
#include "net_util.h"

static const char *const kind_names[NET_FAULT_KINDS] = {
    [NET_FAULT_EAGAIN] = "eagain",
    [NET_FAULT_ENOBUFS] = "enobufs",
    [NET_FAULT_SHORT] = "short",
    [NET_FAULT_DROP] = "drop",
    [NET_FAULT_REORDER] = "reorder",
};

#define PPM 1000000u

int net_fault_add(net_fault *f, const char *item, char *err, size_t errlen)
{
    const char *colon = item ? strchr(item, ':') : NULL;
    char *end;
    double pct;
    uint32_t sum = 0, ppm;
    int kind = -1;

    if (!colon) {
        net_set_err(err, errlen, "fault '%s': expected KIND:PERCENT "
                    "(eagain, enobufs, short, drop, reorder; e.g. "
                    "eagain:10%%)", item ? item : "");
        return -1;
    }
    for (int k = 1; k < NET_FAULT_KINDS; k++)
        if (strlen(kind_names[k]) == (size_t)(colon - item) &&
            !strncmp(kind_names[k], item, (size_t)(colon - item)))
            kind = k;
    if (kind < 0) {
        net_set_err(err, errlen, "fault '%.*s': unknown kind (valid: eagain, "
                    "enobufs, short, drop, reorder)", (int)(colon - item),
                    item);
        return -1;
    }
    errno = 0;
    pct = strtod(colon + 1, &end);
    if (end == colon + 1 || errno || (*end && strcmp(end, "%")) ||
        !(pct >= 0 && pct <= 100)) {
        net_set_err(err, errlen, "fault '%s': the rate must be a percentage "
                    "from 0 to 100 (e.g. %s:2.5%%)", item, kind_names[kind]);
        return -1;
    }
    if (f->ppm[kind]) {
        net_set_err(err, errlen, "fault '%s': %s given twice", item,
                    kind_names[kind]);
        return -1;
    }
    ppm = (uint32_t)(pct * (PPM / 100) + 0.5);
    for (int k = 1; k < NET_FAULT_KINDS; k++)
        sum += f->ppm[k];
    if (sum + ppm > PPM) {
        net_set_err(err, errlen, "fault '%s': the rates add up to more than "
                    "100%%", item);
        return -1;
    }
    f->ppm[kind] = ppm;
    f->on = true;
    return 0;
}

int net_fault_seed(net_fault *f, const char *s, char *err, size_t errlen)
{
    char *end;
    unsigned long long v;

    errno = 0;
    v = s && *s >= '0' && *s <= '9' ? strtoull(s, &end, 10) : 0;
    if (!s || *s < '0' || *s > '9' || errno || *end) {
        net_set_err(err, errlen, "fault-seed '%s': expected a decimal "
                    "number", s ? s : "");
        return -1;
    }
    f->seed = v;
    f->seeded = true;
    return 0;
}

/* xorshift64* (Marsaglia; Vigna's multiplier): deterministic per seed. */
static uint64_t fault_rand(net_fault *f)
{
    uint64_t x = f->state;

    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    f->state = x;
    return x * 0x2545f4914f6cdd1dull;
}

static int draw(net_fault *f)
{
    uint32_t r, acc = 0;

    if (!f->on)
        return NET_FAULT_NONE;
    r = (uint32_t)((fault_rand(f) >> 32) % PPM);
    for (int k = 1; k < NET_FAULT_KINDS; k++) {
        acc += f->ppm[k];
        if (r < acc)
            return k;
    }
    return NET_FAULT_NONE;
}

static int fault_draw(net_txq *q)
{
    return draw(&q->fault);
}

/* The generator's start for a seed; `stream` keeps the directions apart
 * (one seed, two independent sequences). xorshift must not start at 0. */
static void seed_state(net_fault *f, uint64_t stream)
{
    f->state = ((f->seeded ? f->seed : 1) ^ stream) * 0x9e3779b97f4a7c15ull + 1;
    if (!f->state)
        f->state = 1;
}

void net_txq_set_faults(net_txq *q, const net_fault *f)
{
    q->fault = *f;
    seed_state(&q->fault, 0);
}

const char *net_fault_kind_name(int kind)
{
    return kind > 0 && kind < NET_FAULT_KINDS ? kind_names[kind] : "none";
}

/* Once per backend and kind of loss: what happened and where it counts. */
static void report(net_backend *be, net_txq *q, unsigned bit,
                   const char *what)
{
    if (q->reported & bit)
        return;
    q->reported |= bit;
    fprintf(stderr, "lcvmm: net %s: %s; frames lost this way are counted in "
            "the statistics (net tx_dropped)\n", be->ops->name, what);
}

enum { SENT, BUSY, LOST };

static void count_lost(net_backend *be)
{
    be->stats.tx_dropped++;
}

/* One attempt with the verdict already drawn. */
static int attempt(net_backend *be, net_txq *q, net_send_fn *send,
                   const uint8_t *f, size_t len, int verdict)
{
    long r;
    char what[96];

    if (verdict != NET_FAULT_NONE && verdict != NET_FAULT_REORDER)
        be->stats.faults++;
    switch (verdict) {
    case NET_FAULT_EAGAIN:
        r = -EAGAIN;
        break;
    case NET_FAULT_ENOBUFS:
        r = -ENOBUFS;
        break;
    case NET_FAULT_SHORT:
        r = (long)(len / 2);
        break;
    case NET_FAULT_DROP:
        count_lost(be);
        report(be, q, 1u << 0, "frame lost on the wire (injected)");
        return LOST;
    default:
        r = send(be, f, len);
        break;
    }
    if (r == (long)len) {
        be->stats.tx_frames++;
        be->stats.tx_bytes += len;
        return SENT;
    }
    if (r == -EAGAIN || r == -ENOBUFS || r == -EINTR)
        return BUSY;
    count_lost(be);
    if (r >= 0) {
        be->stats.tx_short++;
        report(be, q, 1u << 1, "short write, frame dropped");
    } else {
        snprintf(what, sizeof what, "send failed (%s), frame dropped",
                 strerror((int)-r));
        /* one report per errno value that fits the mask */
        report(be, q, 1u << (4 + ((unsigned)-r % 24)), what);
    }
    return LOST;
}

static void update_queued(net_backend *be, net_txq *q)
{
    be->stats.tx_queued = q->count + (q->held ? 1u : 0u);
}

/* Put a frame at the backlog's tail: false (and counted lost) if full. */
static bool backlog_push(net_backend *be, net_txq *q, const uint8_t *f,
                         size_t len)
{
    net_txq_frame *slot;

    if (q->count == NET_TXQ_MAX) {
        count_lost(be);
        report(be, q, 1u << 2, "the host stayed busy (EAGAIN/ENOBUFS) and "
               "the backlog of " NET_TXQ_MAX_STR " frames is full, frame "
               "dropped");
        return false;
    }
    slot = &q->q[(q->head + q->count) % NET_TXQ_MAX];
    memcpy(slot->data, f, len);
    slot->len = (uint16_t)len;
    q->count++;
    return true;
}

/* Send from the backlog's head while the host takes frames. */
static void backlog_drain(net_backend *be, net_txq *q, net_send_fn *send)
{
    while (q->count) {
        net_txq_frame *slot = &q->q[q->head];
        int v = fault_draw(q);
        int rc = attempt(be, q, send, slot->data, slot->len,
                         v == NET_FAULT_REORDER ? NET_FAULT_NONE : v);

        if (rc == BUSY) {
            be->stats.tx_retries++;
            break;
        }
        q->head = (q->head + 1) % NET_TXQ_MAX;
        q->count--;
    }
}

/* Send one frame (from the NIC, or the held one): queued when busy. */
static int send_or_queue(net_backend *be, net_txq *q, net_send_fn *send,
                         const uint8_t *f, size_t len, int verdict)
{
    if (q->count)               /* keep the order: behind the backlog */
        return backlog_push(be, q, f, len) ? 0 : -1;
    switch (attempt(be, q, send, f, len, verdict)) {
    case SENT:
        return 0;
    case BUSY:
        be->stats.tx_retries++;
        return backlog_push(be, q, f, len) ? 0 : -1;
    default:
        return -1;
    }
}

static void release_held(net_backend *be, net_txq *q, net_send_fn *send)
{
    int v;

    if (!q->held)
        return;
    q->held = false;
    v = fault_draw(q);
    send_or_queue(be, q, send, q->held_frame.data, q->held_frame.len,
                  v == NET_FAULT_REORDER ? NET_FAULT_NONE : v);
}

int net_txq_tx(net_backend *be, net_txq *q, net_send_fn *send,
               const uint8_t *f, size_t len)
{
    int v, rc;

    be->stats.tx_offered++;
    if (!f || len < NET_FRAME_MIN || len > NET_FRAME_MAX) {
        count_lost(be);
        return -1;
    }
    backlog_drain(be, q, send);
    v = fault_draw(q);
    if (v == NET_FAULT_REORDER && !q->held) {
        be->stats.faults++;
        memcpy(q->held_frame.data, f, len);
        q->held_frame.len = (uint16_t)len;
        q->held = true;
        q->held_polls = 0;
        update_queued(be, q);
        return 0;
    }
    rc = send_or_queue(be, q, send, f, len,
                       v == NET_FAULT_REORDER ? NET_FAULT_NONE : v);
    release_held(be, q, send);      /* after the frame that overtook it */
    update_queued(be, q);
    return rc;
}

void net_txq_poll(net_backend *be, net_txq *q, net_send_fn *send)
{
    if (!q->count && !q->held)
        return;
    backlog_drain(be, q, send);
    if (q->held && ++q->held_polls >= 2)
        release_held(be, q, send);
    update_queued(be, q);
}

void net_txq_fini(net_backend *be, net_txq *q)
{
    /* what never left is lost now: counted, so the sums still hold for
     * whoever reads the statistics after the backend is gone */
    be->stats.tx_dropped += q->count + (q->held ? 1u : 0u);
    q->count = 0;
    q->held = false;
    update_queued(be, q);
}

/* --- the receive stage ---------------------------------------------- */

int net_rxq_check(const net_fault *f, bool has_fd, char *err, size_t errlen)
{
    static const int not_rx[] = { NET_FAULT_ENOBUFS, NET_FAULT_SHORT };

    for (size_t i = 0; i < sizeof not_rx / sizeof not_rx[0]; i++)
        if (f->ppm[not_rx[i]]) {
            net_set_err(err, errlen, "rxfault '%s': not a receive fault "
                        "(valid: eagain, drop, reorder)",
                        kind_names[not_rx[i]]);
            return -1;
        }
    /* a poll answered "nothing" must be asked again by someone: the I/O
     * thread does, while the frame keeps the descriptor readable; the
     * peer's frames wait for the NIC's next pull, which may never come */
    if (f->ppm[NET_FAULT_EAGAIN] && !has_fd) {
        net_set_err(err, errlen, "rxfault 'eagain': only for a backend whose "
                    "frames wait in a file descriptor (tap)");
        return -1;
    }
    return 0;
}

void net_rxq_set_faults(net_rxq *q, const net_fault *f)
{
    q->fault = *f;
    seed_state(&q->fault, 0x5258ull);           /* "RX" */
}

static void rx_count_delivered(net_backend *be, size_t len)
{
    be->stats.rx_frames++;
    be->stats.rx_bytes += len;
}

size_t net_rxq_rx(net_backend *be, net_rxq *q, net_recv_fn *recv,
                  net_ready_fn *ready, uint8_t *buf, size_t cap)
{
    size_t len, next;

    if (q->held) {              /* the frame that was overtaken goes now */
        if (!buf || q->held_frame.len > cap)
            return 0;
        len = q->held_frame.len;
        memcpy(buf, q->held_frame.data, len);
        q->held = false;
        be->stats.rx_queued = 0;
        rx_count_delivered(be, len);
        return len;
    }
    for (;;) {
        int v;

        if (q->fault.on && !ready(be))
            return 0;           /* nothing waits: no draw */
        v = draw(&q->fault);
        if (v == NET_FAULT_EAGAIN) {
            be->stats.rx_faults++;
            return 0;
        }
        len = recv(be, buf, cap);
        if (!len)
            return 0;
        if (v == NET_FAULT_DROP) {
            be->stats.rx_faults++;
            be->stats.rx_dropped++;
            continue;           /* as if it never arrived: the next one */
        }
        if (v != NET_FAULT_REORDER || len > sizeof q->held_frame.data)
            break;
        /* hold this one if another waits behind it, which goes first */
        memcpy(q->held_frame.data, buf, len);
        q->held_frame.len = (uint16_t)len;
        next = recv(be, buf, cap);
        if (!next) {            /* nothing to overtake it: no reorder */
            memcpy(buf, q->held_frame.data, len);
            break;
        }
        be->stats.rx_faults++;
        q->held = true;
        be->stats.rx_queued = 1;
        len = next;
        break;
    }
    rx_count_delivered(be, len);
    return len;
}

void net_rxq_fini(net_backend *be, net_rxq *q)
{
    if (q->held)
        be->stats.rx_dropped++;
    q->held = false;
    be->stats.rx_queued = 0;
}
