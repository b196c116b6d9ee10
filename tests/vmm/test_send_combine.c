/* SPDX-License-Identifier: MIT */
/*
 * tests/vmm/test_send_combine.c: the adaptive send-combining policy
 * (examples/vmm/devices/send_combine.h) alone, as a pure function of the
 * transmit requests, the batches sent and a clock. Period 1000 clock
 * units throughout (the 1 ms tick in microseconds).
 */
#include "../unit/harness.h"
#include "send_combine.h"

#define P 1000u

static sc_config cfg(void)
{
    sc_config c;
    sc_config_default(&c, P);
    return c;
}

/* One period of `k` requests, each sent at once (the rate is 0 before
 * the first period ends): how a guest looks before combining. Returns
 * the start of the next period, where the decayed rate is k / 2. */
static uint64_t warm(sc_state *s, const sc_config *c, uint64_t t, unsigned k)
{
    for (unsigned i = 0; i < k; i++)
        ck_assert_int_eq(sc_request(s, c, 0, t + i * (P / k)), SC_SEND);
    return t + P;
}

START_TEST(low_rate_never_holds)
{
    sc_config c = cfg();
    sc_state s;
    uint64_t t = 0;

    sc_init(&s, 0);
    /* 3 requests a period: the decayed rate stays below min_rate 4 */
    for (unsigned i = 0; i < 300; i++, t += P / 3)
        ck_assert_int_eq(sc_request(&s, &c, 0, t), SC_SEND);
    ck_assert_uint_eq(s.tries, 0);
    ck_assert(!s.active);
}
END_TEST

START_TEST(the_first_requests_go_at_once)
{
    sc_config c = cfg();
    sc_state s;

    sc_init(&s, 0);
    /* no history: the rate is 0 until a period has ended */
    for (unsigned i = 0; i < 50; i++)
        ck_assert_int_eq(sc_request(&s, &c, 0, i), SC_SEND);
    ck_assert(sc_request(&s, &c, 0, P + 1) == SC_HOLD);
    ck_assert_uint_eq(s.tries, 1);
}
END_TEST

/* A streaming sender: three requests before any other world switch. */
START_TEST(streaming_keeps_combining)
{
    sc_config c = cfg();
    sc_state s;
    uint64_t t;
    unsigned held = 0, batches = 0;

    sc_init(&s, 0);
    t = warm(&s, &c, 0, 10);
    for (unsigned i = 0; i < 3000; i++, t += 50) {
        sc_action a = sc_request(&s, &c, held, t);
        if (a == SC_HOLD) {
            held++;
        } else {
            ck_assert_uint_eq(held, i < 1 ? 0 : 2);  /* full batches */
            held = 0;
            batches++;
        }
        ck_assert_uint_le(held, c.max_held - 1);
    }
    ck_assert_uint_eq(s.tries, 1);
    ck_assert_uint_eq(s.failures, 0);
    ck_assert(s.active);
    ck_assert_uint_ge(batches, 999);
}
END_TEST

/* A request/response guest: after each request its next world switch
 * is not a request (it waits for the reply), so a held frame is sent
 * alone. The first such batch ends the try; tries then back off, each
 * time twice as long, up to backoff_max periods. */
START_TEST(request_response_backs_off)
{
    sc_config c = cfg();
    sc_state s;
    uint64_t t, last_try = 0, gap = 0;
    unsigned held_total = 0, sent = 0;

    sc_init(&s, 0);
    t = warm(&s, &c, 0, 10);
    for (unsigned i = 0; i < 200000; i++, t += 100) {      /* 10 a period */
        if (sc_request(&s, &c, 0, t) == SC_HOLD) {
            held_total++;
            sc_sent(&s, &c, 1, t + 50);
            ck_assert(!s.active);                   /* one batch of one */
            if (last_try)
                ck_assert_uint_ge(t - last_try, gap);
            gap = t - last_try;
            last_try = t;
        } else {
            sent++;
        }
    }
    /* 20 s of exchanges: tries at doubling gaps (1, 2, ... 1024 periods),
     * then every 1024 periods */
    ck_assert_uint_eq(held_total, s.tries);
    ck_assert_uint_eq(s.failures, s.tries);
    ck_assert_uint_le(s.tries, 11 + 20);
    ck_assert_uint_ge(s.tries, 10);
    ck_assert_uint_le(gap, (uint64_t)c.backoff_max * P + 100);
    ck_assert_uint_ge(gap, (uint64_t)c.backoff_max * P);
    ck_assert_uint_gt(sent, 199000);
}
END_TEST

/* A guest that turns from request/response to streaming is combined
 * again at its next try, and the back-off starts over. */
START_TEST(streaming_after_backoff)
{
    sc_config c = cfg();
    sc_state s;
    uint64_t t;
    unsigned held = 0;

    sc_init(&s, 0);
    t = warm(&s, &c, 0, 10);
    for (unsigned i = 0; i < 3; i++) {          /* three failed tries */
        while (sc_request(&s, &c, 0, t) == SC_SEND)
            t += 100;
        sc_sent(&s, &c, 1, t);
        t += 100;
    }
    ck_assert_uint_eq(s.failures, 3);
    ck_assert_uint_eq(s.backoff, 8);
    for (unsigned i = 0; i < 30000; i++, t += 30) {
        if (sc_request(&s, &c, held, t) == SC_HOLD)
            held++;
        else
            held = 0;
    }
    ck_assert(s.active);
    ck_assert_uint_eq(s.backoff, 1);
    ck_assert_uint_eq(s.failures, 3);
}
END_TEST

/* Partial batches sent by other world switches: two frames a batch still
 * pay (the average stays at or above 1.5), one frame a batch does not. */
START_TEST(partial_batches)
{
    sc_config c = cfg();
    sc_state s;
    uint64_t t;

    sc_init(&s, 0);
    t = warm(&s, &c, 0, 10);
    for (unsigned i = 0; i < 1000; i++, t += 100) {
        ck_assert(sc_request(&s, &c, 0, t) == SC_HOLD);
        ck_assert(sc_request(&s, &c, 1, t + 10) == SC_HOLD);
        sc_sent(&s, &c, 2, t + 20);
        ck_assert(s.active);
    }
    ck_assert(sc_request(&s, &c, 0, t) == SC_HOLD);
    sc_sent(&s, &c, 1, t + 1);
    ck_assert(s.active);                /* one single after many pairs */
    ck_assert(sc_request(&s, &c, 0, t + 2) == SC_HOLD);
    sc_sent(&s, &c, 1, t + 3);
    ck_assert(s.active);                /* 2.0 -> 1.75 -> 1.56 */
    ck_assert(sc_request(&s, &c, 0, t + 4) == SC_HOLD);
    sc_sent(&s, &c, 1, t + 5);
    ck_assert(!s.active);               /* -> 1.42: below 1.5 */
    ck_assert(sc_request(&s, &c, 0, t + 6) == SC_SEND);
}
END_TEST

/* At most max_held requests wait, whatever the caller passes. */
START_TEST(never_more_than_max_held)
{
    sc_config c = cfg();
    sc_state s;
    uint64_t t;

    for (unsigned max = 1; max <= 5; max++) {
        c.max_held = max;
        sc_init(&s, 0);
        t = warm(&s, &c, 0, 10);
        for (unsigned held = max - 1; held < max + 3; held++)
            ck_assert_int_eq(sc_request(&s, &c, held, t), SC_SEND);
        if (max > 1)
            ck_assert_int_eq(sc_request(&s, &c, 0, t), SC_HOLD);
    }
}
END_TEST

/* Time that stops, jumps or runs back does not break it: a long idle
 * gap forgets the rate, a clock that goes back restarts the period. */
START_TEST(clock_edges)
{
    sc_config c = cfg();
    sc_state s;
    uint64_t t;

    sc_init(&s, 0);
    t = warm(&s, &c, 0, 10);
    (void)sc_request(&s, &c, 0, t);     /* folds the period in */
    ck_assert_uint_ge(s.rate, c.min_rate * SC_ONE);
    t += 1000ull * P;                   /* idle for 1000 periods */
    ck_assert_int_eq(sc_request(&s, &c, 0, t), SC_SEND);
    ck_assert_uint_eq(s.rate, 0);
    ck_assert_int_eq(sc_request(&s, &c, 0, 5), SC_SEND);   /* went back */
    ck_assert_uint_eq(s.period_start, 5);
    sc_init(&s, UINT64_MAX - 10);       /* near the end of the clock */
    for (unsigned i = 0; i < 10; i++)
        (void)sc_request(&s, &c, 0, UINT64_MAX - 10 + i);
    c.period = 0;                       /* a zero period is one unit */
    sc_init(&s, 0);
    for (unsigned i = 0; i < 100; i++)
        (void)sc_request(&s, &c, 0, i);
    sc_sent(&s, &c, 0, 100);            /* nothing held: nothing */
}
END_TEST

/* Question 3 (count_switches): a streaming guest whose kicks cost one
 * world switch in six (a VMM running its transmit loop in one exit, as
 * libcluster's clusters do) is never combined: a full batch of 3 would
 * cost more switches than it already takes. */
START_TEST(cheap_kicks_are_not_combined)
{
    sc_config c = cfg();
    sc_state s;
    uint64_t t = 0;

    c.count_switches = true;
    sc_init(&s, 0);
    for (unsigned i = 0; i < 60000; i++, t += 50) {     /* 20 a period */
        if (i % 6 == 0)
            sc_switches(&s, &c, 1, t);
        ck_assert_int_eq(sc_request(&s, &c, 0, t), SC_SEND);
    }
    ck_assert_uint_eq(s.tries, 0);
    ck_assert_uint_gt(s.cheap, 50000);
    /* the same guest where each kick is a switch is combined */
    sc_init(&s, 0);
    t = 0;
    for (unsigned i = 0; i < 100; i++, t += 50) {
        sc_switches(&s, &c, 1, t);
        (void)sc_request(&s, &c, 0, t);
    }
    ck_assert_uint_eq(s.tries, 1);
    ck_assert(s.active);
    ck_assert_uint_eq(s.cheap, 0);
}
END_TEST

/* The switches are counted only while combining is off, so combining is
 * set aside now and then to count them again: first SC_RECHECK_FIRST
 * periods after it went on, then at gaps four times as long while the
 * kicks still cost switches (up to SC_RECHECK), going on from the
 * batches it had: no new try, no failure. A guest whose kicks stop costing switches (the
 * VMM learned to run them in clusters) is left uncombined at the next
 * recheck. */
START_TEST(rechecks_find_kicks_got_cheap)
{
    sc_config c = cfg();
    sc_state s;
    uint64_t t = 0, on_at = 0;
    unsigned held = 0, gaps = 0;

    c.count_switches = true;
    sc_init(&s, 0);
    /* kicks that exit: combined, rechecked at 8, 16, 32, ... periods */
    for (unsigned i = 0; i < 20 * 2000; i++, t += 50) {
        sc_action a;

        if (!s.active)
            sc_switches(&s, &c, 1, t);  /* each uncombined kick exits */
        a = sc_request(&s, &c, held, t);
        held = a == SC_HOLD ? held + 1 : 0;
        if (s.active && s.active_since != on_at) {
            if (on_at)
                gaps++;
            on_at = s.active_since;
        }
    }
    ck_assert_uint_ge(s.rechecks, 8);
    ck_assert_uint_eq(s.rechecks, gaps + (s.active ? 0 : 1));
    ck_assert_uint_eq(s.recheck_gap, SC_RECHECK);
    ck_assert_uint_eq(s.failures, 0);
    ck_assert_uint_eq(s.cheap, 0);
    /* 16, 64, 256, then every 256 periods: 9 in 2000 periods */
    ck_assert_uint_le(s.rechecks, 3 + 2000 / SC_RECHECK);
    ck_assert_uint_eq(s.tries, 1);
    /* now the kicks cost one switch in six: off at the next recheck */
    for (unsigned i = 0; i < 20 * 1000; i++, t += 50) {
        if (!s.active && i % 6 == 0)
            sc_switches(&s, &c, 1, t);
        held = sc_request(&s, &c, held, t) == SC_HOLD ? held + 1 : 0;
    }
    ck_assert(!s.active);
    ck_assert_uint_gt(s.cheap, 1000);
}
END_TEST

/* The kicks a recheck sees before its first switch were deferred before
 * it began (replayed from the coalesced ring at the next exit, before the
 * VMM re-registers its zones): they cost no switch but say nothing, and
 * must not make the kicks look cheap. */
START_TEST(recheck_skips_replayed_kicks)
{
    sc_config c = cfg();
    sc_state s;
    uint64_t t = 0;
    unsigned held = 0;

    c.count_switches = true;
    sc_init(&s, 0);
    while (!s.active) {                 /* kicks that exit: combined */
        sc_switches(&s, &c, 1, t);
        (void)sc_request(&s, &c, 0, t);
        t += 50;
    }
    /* combined until the first recheck (SC_RECHECK_FIRST periods) */
    while (s.rechecks == 0) {
        held = sc_request(&s, &c, held, t) == SC_HOLD ? held + 1 : 0;
        t += 50;
    }
    ck_assert(!s.active);
    /* a burst replayed from the ring: 30 kicks, no switch */
    for (unsigned i = 0; i < 30; i++, t += 10)
        ck_assert_int_eq(sc_request(&s, &c, 0, t), SC_SEND);
    ck_assert_uint_eq(s.m_requests, 0);
    {
        /* a long idle gap forgets a recheck under way with the rates */
        sc_state idle = s;
        ck_assert(idle.rechecking);
        ck_assert_int_eq(sc_request(&idle, &c, 0, t + 1000ull * P), SC_SEND);
        ck_assert(!idle.rechecking && !idle.active);
    }
    /* then the exit that re-registers the zones, and kicks that exit */
    for (unsigned i = 0; i < 200; i++, t += 50) {
        sc_switches(&s, &c, 1, t);
        held = sc_request(&s, &c, held, t) == SC_HOLD ? held + 1 : 0;
    }
    ck_assert(s.active);                /* still needed: combined again */
    ck_assert_uint_eq(s.cheap, 0);
    ck_assert_uint_eq(s.tries, 1);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("send_combine");
    TCase *t = tcase_create("policy");
    tcase_add_test(t, low_rate_never_holds);
    tcase_add_test(t, the_first_requests_go_at_once);
    tcase_add_test(t, streaming_keeps_combining);
    tcase_add_test(t, request_response_backs_off);
    tcase_add_test(t, streaming_after_backoff);
    tcase_add_test(t, partial_batches);
    tcase_add_test(t, never_more_than_max_held);
    tcase_add_test(t, clock_edges);
    tcase_add_test(t, cheap_kicks_are_not_combined);
    tcase_add_test(t, rechecks_find_kicks_got_cheap);
    tcase_add_test(t, recheck_skips_replayed_kicks);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return lc_test_run(suite());
}
