/* SPDX-License-Identifier: MIT */
/*
 * Adaptive send combining (send_combine.h): no I/O, no globals, no time
 * source of its own; every decision depends only on the arguments.
 */
#include "send_combine.h"

/* The average a try starts from: one batch of a single frame takes it
 * below the threshold, one full batch of 3 keeps it above. */
#define SC_START     (SC_ONE * 13 / 8)
#define SC_THRESHOLD (SC_ONE * 3 / 2)
/* After this many idle periods the rate is 0 whatever it was. */
#define SC_FORGET    32

void sc_config_default(sc_config *c, uint64_t period)
{
    c->period = period ? period : 1;
    c->max_held = 3;
    c->min_rate = 4;
    c->backoff_max = 1024;
    c->count_switches = false;
}

void sc_init(sc_state *s, uint64_t now)
{
    *s = (sc_state){ .period_start = now, .backoff = 1,
                     .recheck_gap = SC_RECHECK_FIRST };
}

/* Fold the periods that ended before `now` into the decaying rate. */
static void advance(sc_state *s, const sc_config *c, uint64_t now)
{
    uint64_t period = c->period ? c->period : 1;

    if (now < s->period_start) {        /* a clock that went back: restart */
        s->period_start = now;
        return;
    }
    if ((now - s->period_start) / period >= SC_FORGET) {
        s->rate = s->rate_off = s->switch_rate = 0;
        s->requests = s->requests_off = s->switches = 0;
        s->rechecking = false;          /* its counts are stale too */
        s->period_start = now;
        return;
    }
    while (now - s->period_start >= period) {
        s->rate = (s->rate + s->requests * SC_ONE) / 2;
        s->requests = 0;
        /* question 3's pair, both over the periods without combining
         * (while it is on, the deferred requests make no switch) */
        if (!s->active) {
            s->switch_rate = (s->switch_rate + s->switches * SC_ONE) / 2;
            s->rate_off = (s->rate_off + s->requests_off * SC_ONE) / 2;
        }
        s->switches = s->requests_off = 0;
        s->period_start += period;
    }
}

static void batch_done(sc_state *s, const sc_config *c, unsigned frames,
                       uint64_t now)
{
    uint64_t period = c->period ? c->period : 1;

    s->per_batch = (3 * s->per_batch + frames * SC_ONE) / 4;
    if (frames >= c->max_held) {        /* the guest filled it: it pays */
        s->backoff = 1;
        return;
    }
    if (s->per_batch >= SC_THRESHOLD)
        return;
    s->active = false;
    s->failures++;
    s->retry_at = now + s->backoff * period;
    if (s->backoff < c->backoff_max)
        s->backoff = s->backoff * 2 > c->backoff_max ? c->backoff_max
                                                     : s->backoff * 2;
}

sc_action sc_request(sc_state *s, const sc_config *c, unsigned held,
                     uint64_t now)
{
    unsigned max = c->max_held ? c->max_held : 1;
    uint64_t period = c->period ? c->period : 1;

    advance(s, c, now);
    if (s->requests < UINT32_MAX / SC_ONE)
        s->requests++;
    if (!s->active && s->requests_off < UINT32_MAX / SC_ONE)
        s->requests_off++;
    if (s->rechecking && s->m_started && s->m_requests < UINT32_MAX)
        s->m_requests++;
    if (held + 1 >= max) {              /* a full batch goes now */
        if (held)
            batch_done(s, c, held + 1, now);
        return SC_SEND;
    }
    if (held)                           /* a batch is open: keep filling */
        return SC_HOLD;
    if (s->active && c->count_switches && now >= s->active_since &&
        now - s->active_since >= (uint64_t)s->recheck_gap * period) {
        /* count the switches again, combining off for a while */
        s->active = false;
        s->rechecking = true;
        s->m_started = false;
        s->m_switches = s->m_requests = 0;
        s->retry_at = now + (uint64_t)SC_MEASURE * period;
        s->rechecks++;
        return SC_SEND;
    }
    if (s->rate < c->min_rate * SC_ONE)
        return SC_SEND;                 /* too few transmits to bother */
    if (!s->active) {
        if (now < s->retry_at)
            return SC_SEND;             /* backing off after a failed try */
        /* a recheck that saw no switch yet (the guest made none, or its
         * kicks were still deferred) goes on measuring */
        if (s->rechecking && !s->m_requests)
            return SC_SEND;
        /* fewer switches than a full batch would cost: during a recheck
         * by its own counts, else by the decayed rates */
        if (c->count_switches &&
            (s->rechecking
                 ? (uint64_t)s->m_switches * max < s->m_requests
                 : (uint64_t)s->switch_rate * max < s->rate_off)) {
            s->cheap++;
            s->rechecking = false;
            return SC_SEND;
        }
        /* after a recheck that found it still needed, recheck later and
         * go on from the batches it had (not a new try) */
        s->active = true;
        s->active_since = now;
        if (s->rechecking) {
            s->rechecking = false;
            s->recheck_gap = s->recheck_gap * 4 < SC_RECHECK
                             ? s->recheck_gap * 4 : SC_RECHECK;
            return SC_HOLD;
        }
        s->recheck_gap = SC_RECHECK_FIRST;
        s->per_batch = SC_START;
        s->tries++;
    }
    return SC_HOLD;
}

void sc_switches(sc_state *s, const sc_config *c, uint64_t n, uint64_t now)
{
    const uint64_t cap = UINT32_MAX / SC_ONE;

    advance(s, c, now);
    if (s->active || !n)
        return;
    s->switches = (uint32_t)(s->switches + n < cap ? s->switches + n : cap);
    if (!s->rechecking)
        return;
    if (!s->m_started) {
        /* the first switch since the recheck began: its exit re-registers
         * the VMM's coalesced zones; the kicks after it are the guest's
         * without deferral */
        s->m_started = true;
        n--;
    }
    s->m_switches = (uint32_t)(s->m_switches + n < UINT32_MAX
                               ? s->m_switches + n : UINT32_MAX);
}

void sc_sent(sc_state *s, const sc_config *c, unsigned held, uint64_t now)
{
    advance(s, c, now);
    if (held)
        batch_done(s, c, held, now);
}
