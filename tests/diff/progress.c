/* SPDX-License-Identifier: MIT */
/*
 * tests/diff/progress.c: see progress.h. The estimate of what is left is
 * exact for --soak (every mode runs the same number of seconds) and, for
 * --count, the cases left at the rate measured so far.
 */
#include "progress.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* "1:02:03" or "2:03" */
static const char *hms(double s, char *buf, size_t n)
{
    unsigned long t = s > 0 ? (unsigned long)(s + 0.5) : 0;
    if (t >= 3600)
        snprintf(buf, n, "%lu:%02lu:%02lu", t / 3600, t / 60 % 60, t % 60);
    else
        snprintf(buf, n, "%lu:%02lu", t / 60, t % 60);
    return buf;
}

void diff_progress_init(diff_progress *p, const char *what, unsigned nsteps,
                        double soak, uint64_t count)
{
    const char *env = getenv("LC_PROGRESS");

    memset(p, 0, sizeof *p);
    p->on = env && *env ? strcmp(env, "0") != 0 : isatty(STDERR_FILENO);
    p->what = what;
    p->nsteps = nsteps ? nsteps : 1;
    p->soak = soak > 0 ? soak : 0;
    p->count = count;
    p->t0 = now();
}

/* Seconds left for the whole run, or a negative value if unknown yet. */
static double left(const diff_progress *p, double t, uint64_t cases)
{
    unsigned after = p->nsteps - p->step - 1;   /* modes after this one */
    if (p->soak > 0) {
        double in_step = p->soak - (t - p->step_t0);
        return (in_step > 0 ? in_step : 0) + after * p->soak;
    }
    uint64_t done = p->done_before + cases;
    uint64_t total = p->count * p->nsteps;
    if (done == 0 || t - p->t0 < 0.5)
        return -1;
    return (t - p->t0) / (double)done * (double)(total > done ? total - done : 0);
}

static void line(diff_progress *p, const char *state, uint64_t cases,
                 uint64_t bad)
{
    double t = now(), l = left(p, t, cases);
    char e[32], r[48];

    if (l < 0)
        snprintf(r, sizeof r, "estimating the time left");
    else
        snprintf(r, sizeof r, "about %s left", hms(l, e, sizeof e));
    fprintf(stderr, "lc-diff %s: [%u/%u %s] %s %llu cases, %llu mismatches; "
            "elapsed %s, %s\n", p->what, p->step + 1, p->nsteps,
            p->step_name ? p->step_name : "", state,
            (unsigned long long)cases, (unsigned long long)bad,
            hms(t - p->t0, e, sizeof e), r);
    fflush(stderr);
}

void diff_progress_begin(diff_progress *p, const char *step_name)
{
    p->step_name = step_name;
    p->step_t0 = now();
    p->next = p->step_t0 + PROGRESS_EVERY_S;
    if (p->on)
        line(p, "start,", 0, 0);
}

void diff_progress_tick(diff_progress *p, uint64_t cases, uint64_t bad)
{
    /* Reading the clock costs about 20 ns; a case costs microseconds. */
    if (!p->on || (cases & 63) != 0)
        return;
    double t = now();
    if (t < p->next)
        return;
    p->next = t + PROGRESS_EVERY_S;
    line(p, "running,", cases, bad);
}

void diff_progress_end(diff_progress *p, uint64_t cases, uint64_t bad)
{
    if (p->on)
        line(p, "done,", cases, bad);
    p->done_before += cases;
    if (p->step + 1 < p->nsteps)
        p->step++;
}
