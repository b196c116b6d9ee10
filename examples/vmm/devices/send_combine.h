/* SPDX-License-Identifier: MIT */
/*
 * Adaptive send combining: the decision of section 3.3 of the NIC paper
 * (Sugerman et al., "Virtualizing I/O Devices on VMware Workstation's
 * Hosted Virtual Machine Monitor") as a pure function of what the NIC
 * saw and a clock, so it can be tested alone and runs deterministically
 * on the Unicorn back end (whose clock counts guest instructions).
 *
 * The paper holds a transmit back only "if the rate [of world switches,
 * recalculated periodically with an exponentially decaying counter] is
 * high enough", holds at most 3, and sends at the next world switch or
 * the next timer tick at the latest. Its guests are interrupt driven:
 * the world switch a held frame waits for comes anyway. A guest that
 * waits for the reply by polling makes that switch itself, for the held
 * frame: holding costs it an exit per frame instead of saving one. So
 * here the policy asks two things:
 *
 *   1. Is the transmit rate high? A decaying count of transmit requests
 *      (each one a world switch when sent at once), recomputed every
 *      period (the timer tick): rate = rate / 2 + requests of the period.
 *      Below `min_rate` nothing is held.
 *   2. Does holding pay? A decaying average of the frames each batch
 *      carried: a batch filled by the guest's own transmit requests
 *      (max_held of them) saved world switches; a batch sent by an
 *      unrelated world switch with a single frame saved nothing. When
 *      the average falls below 1.5 frames, combining stops and is tried
 *      again only after a back-off that doubles with every failed try
 *      (up to backoff_max periods) and resets when a try pays.
 *
 * A request/response guest therefore sends at once except during a try
 * (one or two exchanges, exponentially rarer); a streaming guest fills
 * its batches and keeps combining.
 *
 *   3. Do the requests cost world switches at all? When the caller
 *      reports them (sc_switches(), with count_switches set), a decaying
 *      count of world switches is kept beside the rate of requests,
 *      while combining is off. A full batch makes max_held requests cost
 *      one switch; when the requests already cost fewer than that (a
 *      VMM that runs the guest's transmit loop in one exit, as
 *      libcluster's clusters do), nothing is tried: holding could only
 *      add what deferring the kicks costs (coalesced writes still trap
 *      on some hosts). Since the switches can only be counted while
 *      combining is off, combining that pays is set aside now and then
 *      (for SC_MEASURE periods, at growing gaps) to count them again: a guest whose transmit loop the VMM learned to run in one
 *      exit after combining began (libcluster forms clusters on a site's
 *      third exit) is then left uncombined. Without count_switches every
 *      request is taken to be a switch, as in the paper.
 */
#ifndef VMM_SEND_COMBINE_H
#define VMM_SEND_COMBINE_H

#include <stdbool.h>
#include <stdint.h>

/* Fixed point for the decaying averages: SC_ONE is 1.0. */
#define SC_ONE 256u
/* With count_switches: combining that pays is set aside for SC_MEASURE
 * periods, whose switches and requests decide alone, SC_RECHECK_FIRST
 * periods after it went on, then at gaps four times as long while it is
 * still needed, up to SC_RECHECK (then 0.8% of the time). */
#define SC_RECHECK_FIRST 16u
#define SC_RECHECK 256u
#define SC_MEASURE 2u

typedef struct sc_config {
    uint64_t period;            /* clock units per period (the tick) */
    unsigned max_held;          /* requests per batch; the paper's 3 */
    unsigned min_rate;          /* decayed requests per period to try */
    unsigned backoff_max;       /* periods, the cap of the back-off */
    bool count_switches;        /* the caller reports world switches
                                 * (sc_switches()): question 3 above */
} sc_config;

/* The defaults: max_held 3, min_rate 4, backoff_max 1024 (about 1 s of
 * 1 ms ticks), count_switches off. `period` is the caller's. */
void sc_config_default(sc_config *c, uint64_t period);

typedef struct sc_state {
    uint64_t period_start;
    uint32_t requests;          /* transmit requests this period */
    uint32_t rate;              /* decayed requests per period, SC_ONE */
    /* question 3, counted only while not combining: */
    uint32_t switches;          /* world switches this period */
    uint32_t switch_rate;       /* decayed switches per period, SC_ONE */
    uint32_t requests_off;      /* requests this period */
    uint32_t rate_off;          /* decayed requests per period, SC_ONE */
    uint32_t per_batch;         /* decayed frames per batch, SC_ONE */
    bool     active;            /* combining is being tried or pays */
    uint64_t active_since;      /* when it last went on */
    uint32_t recheck_gap;       /* periods from then to the next recheck */
    bool     rechecking;        /* off for a recheck */
    bool     m_started;         /* a switch came since the recheck began:
                                 * kicks replayed from the coalesced ring
                                 * (deferred before it) are behind */
    uint32_t m_switches, m_requests;    /* counted during the recheck */
    uint32_t backoff;           /* periods to wait after the next failure */
    uint64_t retry_at;          /* no new try before this time */
    /* counters for the statistics */
    uint64_t tries, failures;
    uint64_t cheap;             /* tries not made: the requests cost fewer
                                 * switches than a full batch would */
    uint64_t rechecks;          /* combining set aside to count switches */
} sc_state;

typedef enum sc_action {
    SC_SEND,                    /* send now, with whatever is held */
    SC_HOLD,                    /* leave it in the ring */
} sc_action;

void sc_init(sc_state *s, uint64_t now);

/* The guest requested a transmit while `held` earlier requests wait:
 * hold this one too, or send all now (SC_SEND with held > 0 is a full
 * batch, which the policy counts as one that paid). */
sc_action sc_request(sc_state *s, const sc_config *c, unsigned held,
                     uint64_t now);

/* The `held` waiting requests were sent by a world switch that was not
 * a transmit request (the next exit, the timer tick, the VM ending). */
void sc_sent(sc_state *s, const sc_config *c, unsigned held, uint64_t now);

/* `n` world switches happened (exits reached the VMM) since the last
 * call, for question 3; counted only while combining is off (while it is
 * on, the deferred requests make none). Call it before each sc_request()
 * with the switches since the last one. */
void sc_switches(sc_state *s, const sc_config *c, uint64_t n, uint64_t now);

#endif /* VMM_SEND_COMBINE_H */
