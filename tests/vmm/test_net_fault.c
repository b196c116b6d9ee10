/* SPDX-License-Identifier: MIT */
/*
 * tests/vmm/test_net_fault.c: the backends' shared transmit path and its
 * fault injection (examples/vmm/backends/fault.c) against a scripted
 * host: every frame handed over ends delivered, dropped (counted) or
 * queued, in order, whatever the host answers.
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
    return lc_test_run(s);
}
