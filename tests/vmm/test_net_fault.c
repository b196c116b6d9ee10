/* SPDX-License-Identifier: MIT */
/*
 * tests/vmm/test_net_fault.c: the backends' shared transmit path and its
 * fault injection (examples/vmm/backends/fault.c) against a scripted
 * host: every frame handed over ends delivered, dropped (counted) or
 * queued, in order, whatever the host answers; and the shared receive
 * stage: every frame the host offers ends handed to the NIC once,
 * dropped (counted) or held, whatever faults are injected.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../unit/harness.h"
#include "net.h"

#define MAXLOG 20000

/* A backend whose host answers from a script (then `dflt`) and logs the
 * sequence number (first 4 bytes) of every frame it takes. */
typedef struct fake {
    net_backend be;
    net_txq txq;
    long script[64];
    unsigned nscript, pos;
    long dflt;                  /* 0: take the whole frame */
    uint32_t log[MAXLOG];
    unsigned nlog;
    unsigned calls;
} fake;

static long fake_send(net_backend *be, const uint8_t *f, size_t len)
{
    fake *k = (fake *)be;
    long r = k->pos < k->nscript ? k->script[k->pos++] : k->dflt;

    k->calls++;
    if (r == 0)
        r = (long)len;
    if (r == (long)len && k->nlog < MAXLOG)
        memcpy(&k->log[k->nlog++], f, 4);
    return r;
}

static const net_backend_ops fake_ops = { .name = "fake" };

static fake *fake_new(void)
{
    fake *k = calloc(1, sizeof *k);
    ck_assert_ptr_nonnull(k);
    k->be.ops = &fake_ops;
    k->be.txq = &k->txq;
    return k;
}

static void invariant(const fake *k)
{
    const net_stats *s = &k->be.stats;
    ck_assert_uint_eq(s->tx_offered, s->tx_frames + s->tx_dropped +
                      s->tx_queued);
}

static int tx(fake *k, uint32_t seq)
{
    uint8_t f[64] = { 0 };
    int r;

    memcpy(f, &seq, 4);
    r = net_txq_tx(&k->be, &k->txq, fake_send, f, sizeof f);
    invariant(k);
    return r;
}

static void poll_n(fake *k, unsigned n)
{
    while (n--) {
        net_txq_poll(&k->be, &k->txq, fake_send);
        invariant(k);
    }
}

START_TEST(busy_host_delays_in_order)
{
    fake *k = fake_new();
    long busy[] = { -EAGAIN, -EAGAIN, -ENOBUFS, 0, -EAGAIN };

    memcpy(k->script, busy, sizeof busy);
    k->nscript = 5;
    for (uint32_t i = 1; i <= 5; i++)
        ck_assert_int_eq(tx(k, i), 0);        /* taken or queued */
    poll_n(k, 4);
    ck_assert_uint_eq(k->be.stats.tx_frames, 5);
    ck_assert_uint_eq(k->be.stats.tx_dropped, 0);
    ck_assert_uint_eq(k->be.stats.tx_queued, 0);
    ck_assert_uint_ge(k->be.stats.tx_retries, 3);
    ck_assert_uint_eq(k->nlog, 5);
    for (uint32_t i = 0; i < 5; i++)
        ck_assert_uint_eq(k->log[i], i + 1);  /* the order sent */
    free(k);
}
END_TEST

START_TEST(full_backlog_drops_counted)
{
    fake *k = fake_new();

    k->dflt = -ENOBUFS;
    for (uint32_t i = 0; i < 100; i++)
        tx(k, i);
    ck_assert_uint_eq(k->be.stats.tx_queued, NET_TXQ_MAX);
    ck_assert_uint_eq(k->be.stats.tx_dropped, 100 - NET_TXQ_MAX);
    /* the host recovers: the backlog goes out, oldest first */
    k->dflt = 0;
    poll_n(k, 1);
    ck_assert_uint_eq(k->be.stats.tx_frames, NET_TXQ_MAX);
    ck_assert_uint_eq(k->log[0], 0);
    ck_assert_uint_eq(k->log[NET_TXQ_MAX - 1], NET_TXQ_MAX - 1);
    /* and what is left at the end is counted */
    k->dflt = -EAGAIN;
    tx(k, 1000);
    net_txq_fini(&k->be, &k->txq);
    invariant(k);
    ck_assert_uint_eq(k->be.stats.tx_queued, 0);
    ck_assert_uint_eq(k->be.stats.tx_dropped, 100 - NET_TXQ_MAX + 1);
    free(k);
}
END_TEST

START_TEST(short_writes_and_errors_drop)
{
    fake *k = fake_new();
    long answers[] = { 10, -EIO, -EMSGSIZE, 0 };

    memcpy(k->script, answers, sizeof answers);
    k->nscript = 4;
    ck_assert_int_eq(tx(k, 1), -1);
    ck_assert_int_eq(tx(k, 2), -1);
    ck_assert_int_eq(tx(k, 3), -1);
    ck_assert_int_eq(tx(k, 4), 0);
    ck_assert_uint_eq(k->be.stats.tx_short, 1);
    ck_assert_uint_eq(k->be.stats.tx_dropped, 3);
    ck_assert_uint_eq(k->be.stats.tx_frames, 1);
    /* frames outside 14..1514 bytes are refused before any send */
    ck_assert_int_eq(net_txq_tx(&k->be, &k->txq, fake_send,
                                (const uint8_t *)"x", 1), -1);
    ck_assert_int_eq(net_txq_tx(&k->be, &k->txq, fake_send, NULL, 60), -1);
    invariant(k);
    ck_assert_uint_eq(k->calls, 4);
    free(k);
}
END_TEST

static void set_faults(fake *k, const char *const *items, const char *seed)
{
    net_fault f = { 0 };
    char err[128];

    for (; *items; items++)
        ck_assert_msg(net_fault_add(&f, *items, err, sizeof err) == 0,
                      "%s", err);
    if (seed)
        ck_assert_int_eq(net_fault_seed(&f, seed, err, sizeof err), 0);
    net_txq_set_faults(&k->txq, &f);
}

/* Every kind at once over many frames: each frame delivered once or
 * counted dropped, the sums hold after every call. */
START_TEST(injected_faults_account_for_every_frame)
{
    static const char *const all[] = { "eagain:20%", "enobufs:5%",
                                       "short:2%", "drop:3%",
                                       "reorder:10%", NULL };
    fake *k = fake_new();
    static uint8_t seen[10000];

    set_faults(k, all, "42");
    for (uint32_t i = 0; i < 10000; i++) {
        tx(k, i);
        if (i % 7 == 0)
            poll_n(k, 1);
    }
    poll_n(k, 50);
    ck_assert_uint_eq(k->be.stats.tx_queued, 0);
    ck_assert_uint_eq(k->be.stats.tx_offered, 10000);
    ck_assert_uint_eq(k->be.stats.tx_frames + k->be.stats.tx_dropped, 10000);
    ck_assert_uint_gt(k->be.stats.faults, 2000);
    ck_assert_uint_gt(k->be.stats.tx_short, 0);
    ck_assert_uint_gt(k->be.stats.tx_dropped, k->be.stats.tx_short);
    ck_assert_uint_eq(k->nlog, k->be.stats.tx_frames);
    memset(seen, 0, sizeof seen);
    unsigned reordered = 0;
    for (unsigned i = 0; i < k->nlog; i++) {
        ck_assert_uint_lt(k->log[i], 10000);
        ck_assert_msg(!seen[k->log[i]], "frame %u delivered twice",
                      k->log[i]);
        seen[k->log[i]] = 1;
        if (i && k->log[i] < k->log[i - 1])
            reordered++;
    }
    ck_assert_uint_gt(reordered, 100);
    free(k);
}
END_TEST

static void run_seeded(fake *k, const char *seed)
{
    static const char *const some[] = { "eagain:30%", "drop:5%",
                                        "reorder:5%", NULL };
    set_faults(k, some, seed);
    for (uint32_t i = 0; i < 2000; i++) {
        tx(k, i);
        poll_n(k, 1);
    }
}

START_TEST(same_seed_same_faults)
{
    fake *a = fake_new(), *b = fake_new(), *c = fake_new();

    run_seeded(a, "7");
    run_seeded(b, "7");
    run_seeded(c, "8");
    ck_assert_uint_eq(a->nlog, b->nlog);
    ck_assert_mem_eq(a->log, b->log, a->nlog * sizeof a->log[0]);
    ck_assert_uint_eq(a->be.stats.faults, b->be.stats.faults);
    ck_assert(a->nlog != c->nlog ||
              memcmp(a->log, c->log, a->nlog * sizeof a->log[0]));
    free(a);
    free(b);
    free(c);
}
END_TEST

START_TEST(fault_spec_parsing)
{
    static const char *const bad[] = {
        "", "eagain", "eagain:", "eagain:x", "eagain:-1", "eagain:100.5%",
        "eagain:10%%", "nope:1%", "eagain:nan", ":5", "eagain:1e999",
    };
    net_fault f = { 0 };
    char err[160];

    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        net_fault g = { 0 };
        ck_assert_msg(net_fault_add(&g, bad[i], err, sizeof err) < 0,
                      "'%s' accepted", bad[i]);
        ck_assert_ptr_nonnull(strstr(err, "fault"));
    }
    ck_assert_int_eq(net_fault_add(&f, "eagain:10%", err, sizeof err), 0);
    ck_assert_int_eq(net_fault_add(&f, "drop:0.5", err, sizeof err), 0);
    ck_assert_uint_eq(f.ppm[NET_FAULT_EAGAIN], 100000);
    ck_assert_uint_eq(f.ppm[NET_FAULT_DROP], 5000);
    ck_assert_int_lt(net_fault_add(&f, "eagain:1%", err, sizeof err), 0);
    ck_assert_int_lt(net_fault_add(&f, "short:90%", err, sizeof err), 0);
    ck_assert_int_eq(net_fault_add(&f, "short:89.5%", err, sizeof err), 0);
    ck_assert_int_lt(net_fault_seed(&f, "-1", err, sizeof err), 0);
    ck_assert_int_lt(net_fault_seed(&f, "12a", err, sizeof err), 0);
    ck_assert_int_eq(net_fault_seed(&f, "18446744073709551615", err,
                                    sizeof err), 0);
}
END_TEST

/* Through --net: the built-in peer with its frames all lost on the wire
 * answers nothing and counts each one. */
START_TEST(peer_with_faults)
{
    char err[160];
    uint8_t frame[60] = { 0 }, buf[NET_FRAME_MAX];
    net_backend *be = net_backend_from_arg("peer,fault=drop:100%,"
                                           "fault-seed=3", err, sizeof err);

    ck_assert_msg(be != NULL, "%s", err);
    ck_assert_ptr_nonnull(be->txq);
    memset(frame, 0xff, 6);
    for (int i = 0; i < 10; i++)
        net_tx(be, frame, sizeof frame);
    ck_assert_uint_eq(net_rx(be, buf, sizeof buf), 0);
    ck_assert_uint_eq(be->stats.tx_offered, 10);
    ck_assert_uint_eq(be->stats.tx_dropped, 10);
    ck_assert_uint_eq(be->stats.tx_frames, 0);
    ck_assert_uint_eq(be->stats.ignored, 0);
    ck_assert_uint_eq(be->stats.faults, 10);
    net_destroy(be);
    /* without fault= nothing is injected */
    be = net_backend_from_arg("peer", err, sizeof err);
    ck_assert_ptr_nonnull(be);
    for (int i = 0; i < 10; i++)
        net_tx(be, frame, sizeof frame);
    ck_assert_uint_eq(be->stats.tx_frames, 10);
    ck_assert_uint_eq(be->stats.faults, 0);
    net_destroy(be);
    ck_assert_ptr_null(net_backend_from_arg("peer,fault=drop", err,
                                            sizeof err));
    ck_assert_ptr_nonnull(strstr(err, "fault"));
}
END_TEST

/* --- the receive stage ---------------------------------------------- */

/* A host with frames waiting in order: sequence numbers first..last. */
typedef struct rxhost {
    net_backend be;
    net_rxq rxq;
    uint32_t next, last;
} rxhost;

static size_t rxhost_recv(net_backend *be, uint8_t *buf, size_t cap)
{
    rxhost *h = (rxhost *)be;

    if (h->next >= h->last || cap < 64)
        return 0;
    be->stats.rx_offered++;
    memset(buf, 0, 64);
    memcpy(buf, &h->next, 4);
    h->next++;
    return 64;
}

static bool rxhost_ready(net_backend *be)
{
    const rxhost *h = (const rxhost *)be;

    return h->next < h->last;
}

static void rx_invariant(const rxhost *h)
{
    const net_stats *s = &h->be.stats;
    ck_assert_uint_eq(s->rx_offered, s->rx_frames + s->rx_dropped +
                      s->rx_queued);
}

/* One pull; the sequence number taken, or -1 when none came. */
static long rx_pull(rxhost *h)
{
    uint8_t buf[NET_FRAME_MAX];
    uint32_t seq;
    size_t n = net_rxq_rx(&h->be, &h->rxq, rxhost_recv, rxhost_ready, buf,
                          sizeof buf);

    rx_invariant(h);
    if (!n)
        return -1;
    ck_assert_uint_eq(n, 64);
    memcpy(&seq, buf, 4);
    return seq;
}

static void rx_setup(rxhost *h, const char *const *items, unsigned seed)
{
    net_fault f = { 0 };
    char err[160];

    memset(h, 0, sizeof *h);
    h->be.ops = &fake_ops;
    h->be.rxq = &h->rxq;
    for (; items && *items; items++)
        ck_assert_int_eq(net_fault_add(&f, *items, err, sizeof err), 0);
    f.seed = seed;
    f.seeded = true;
    net_rxq_set_faults(&h->rxq, &f);
}

START_TEST(rx_reorder_needs_a_frame_behind)
{
    static const char *const reorder[] = { "reorder:100%", NULL };
    rxhost h;

    rx_setup(&h, reorder, 1);
    /* one frame waiting: nothing can overtake it */
    h.last = 1;
    ck_assert_int_eq(rx_pull(&h), 0);
    ck_assert_uint_eq(h.be.stats.rx_faults, 0);
    /* two waiting: the second goes first, the first right after */
    h.last = 3;
    ck_assert_int_eq(rx_pull(&h), 2);
    ck_assert_uint_eq(h.be.stats.rx_queued, 1);
    ck_assert_int_eq(rx_pull(&h), 1);
    ck_assert_uint_eq(h.be.stats.rx_queued, 0);
    ck_assert_uint_eq(h.be.stats.rx_faults, 1);
    ck_assert_int_eq(rx_pull(&h), -1);
    ck_assert_uint_eq(h.be.stats.rx_frames, 3);
}
END_TEST

START_TEST(rx_faults_account_for_every_frame)
{
    static const char *const all[] = { "eagain:10%", "drop:5%",
                                       "reorder:20%", NULL };
    static uint8_t seen[20000];
    rxhost h;
    unsigned reordered = 0, empties = 0;
    long prev = -1;

    rx_setup(&h, all, 7);
    memset(seen, 0, sizeof seen);
    /* frames arrive in bursts of 1-5; the NIC pulls until told none */
    while (h.last < sizeof seen || h.rxq.held || h.next < h.last) {
        long seq;

        if (h.next == h.last && h.last < sizeof seen)
            h.last += 1 + h.last % 5;
        if (h.last > sizeof seen)
            h.last = sizeof seen;
        seq = rx_pull(&h);
        if (seq < 0) {
            ck_assert_uint_lt(++empties, 100000);
            continue;
        }
        ck_assert_uint_lt(seq, sizeof seen);
        ck_assert_uint_eq(seen[seq], 0);       /* never twice */
        seen[seq] = 1;
        reordered += seq < prev;
        prev = seq;
    }
    rx_invariant(&h);
    ck_assert_uint_eq(h.be.stats.rx_offered, sizeof seen);
    ck_assert_uint_eq(h.be.stats.rx_queued, 0);
    /* every frame handed over once, or counted as dropped */
    {
        unsigned got = 0;
        for (size_t i = 0; i < sizeof seen; i++)
            got += seen[i];
        ck_assert_uint_eq(got, h.be.stats.rx_frames);
        ck_assert_uint_eq(got + h.be.stats.rx_dropped, sizeof seen);
    }
    ck_assert_uint_gt(h.be.stats.rx_dropped, 500);      /* ~5% of 20000 */
    ck_assert_uint_gt(reordered, 500);
    ck_assert_uint_gt(empties, 1000);                   /* eagain answers */
    /* a held frame when the backend goes is counted as dropped */
    rx_setup(&h, (const char *const[]){ "reorder:100%", NULL }, 1);
    h.next = 0;
    h.last = 2;
    ck_assert_int_eq(rx_pull(&h), 1);
    net_rxq_fini(&h.be, &h.rxq);
    ck_assert_uint_eq(h.be.stats.rx_dropped, 1);
    rx_invariant(&h);
}
END_TEST

/* The verdicts are drawn per frame: a poll that finds nothing draws
 * nothing, so a seed drops the same frames however often the NIC polls
 * (its ticks, a frame it holds in the chip). */
START_TEST(rx_faults_drawn_per_frame)
{
    static const char *const drop[] = { "drop:30%", NULL };
    uint8_t got[2][200];
    unsigned dropped = 0;

    for (int run = 0; run < 2; run++) {
        rxhost h;

        rx_setup(&h, drop, 9);
        memset(got[run], 0, sizeof got[run]);
        while (h.last < sizeof got[run]) {
            long seq;

            for (int k = 0; run && k < 3; k++)     /* empty polls */
                ck_assert_int_eq(rx_pull(&h), -1);
            h.last++;
            seq = rx_pull(&h);
            if (seq >= 0)
                got[run][seq] = 1;
        }
        if (run)
            dropped = (unsigned)h.be.stats.rx_dropped;
    }
    ck_assert_mem_eq(got[0], got[1], sizeof got[0]);
    ck_assert_uint_gt(dropped, 30);
    ck_assert_uint_lt(dropped, 90);
}
END_TEST

START_TEST(peer_with_rx_faults)
{
    char err[200];
    uint8_t frame[60] = { 0 }, buf[NET_FRAME_MAX];
    net_backend *be;
    /* an ARP request for the peer's 10.0.2.2 from 10.0.2.15 */
    static const uint8_t arp[42] = {
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x52, 0x54, 0, 0x12, 0x34, 0x56,
        0x08, 0x06, 0, 1, 0x08, 0, 6, 4, 0, 1,
        0x52, 0x54, 0, 0x12, 0x34, 0x56, 10, 0, 2, 15,
        0, 0, 0, 0, 0, 0, 10, 0, 2, 2 };

    memcpy(frame, arp, sizeof arp);
    be = net_backend_from_arg("peer,rxfault=drop:100%", err, sizeof err);
    ck_assert_msg(be != NULL, "%s", err);
    for (int i = 0; i < 10; i++) {
        net_tx(be, frame, sizeof frame);
        ck_assert_uint_eq(net_rx(be, buf, sizeof buf), 0);
    }
    ck_assert_uint_eq(be->stats.arp_replies, 10);
    ck_assert_uint_eq(be->stats.rx_offered, 10);
    ck_assert_uint_eq(be->stats.rx_dropped, 10);
    ck_assert_uint_eq(be->stats.rx_faults, 10);
    ck_assert_uint_eq(be->stats.rx_frames, 0);
    net_destroy(be);
    /* without rxfault= the replies arrive */
    be = net_backend_from_arg("peer,fault-seed=3", err, sizeof err);
    ck_assert_msg(be != NULL, "%s", err);
    net_tx(be, frame, sizeof frame);
    ck_assert_uint_eq(net_rx(be, buf, sizeof buf), 60);
    ck_assert_uint_eq(be->stats.rx_frames, 1);
    ck_assert_uint_eq(be->stats.rx_offered, 1);
    net_destroy(be);
    /* kinds that are not receive faults, and eagain without a descriptor */
    ck_assert_ptr_null(net_backend_from_arg("peer,rxfault=short:5%", err,
                                            sizeof err));
    ck_assert_ptr_nonnull(strstr(err, "not a receive fault"));
    ck_assert_ptr_null(net_backend_from_arg("peer,rxfault=eagain:5%", err,
                                            sizeof err));
    ck_assert_ptr_nonnull(strstr(err, "file descriptor"));
    ck_assert_ptr_null(net_backend_from_arg("peer,rxfault=", err,
                                            sizeof err));
    ck_assert_ptr_nonnull(strstr(err, "rxfault"));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("net_fault");
    TCase *t = tcase_create("txq");

    tcase_add_test(t, busy_host_delays_in_order);
    tcase_add_test(t, full_backlog_drops_counted);
    tcase_add_test(t, short_writes_and_errors_drop);
    tcase_add_test(t, injected_faults_account_for_every_frame);
    tcase_add_test(t, same_seed_same_faults);
    tcase_add_test(t, fault_spec_parsing);
    tcase_add_test(t, peer_with_faults);
    suite_add_tcase(s, t);
    t = tcase_create("rxq");
    tcase_add_test(t, rx_reorder_needs_a_frame_behind);
    tcase_add_test(t, rx_faults_account_for_every_frame);
    tcase_add_test(t, rx_faults_drawn_per_frame);
    tcase_add_test(t, peer_with_rx_faults);
    suite_add_tcase(s, t);
    return lc_test_run(s);
}
