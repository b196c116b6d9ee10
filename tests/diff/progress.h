/* SPDX-License-Identifier: MIT */
/*
 * tests/diff/progress.h: progress lines for long lc-diff runs (--soak, big
 * --count): one line when each mode starts and ends, and one every
 * PROGRESS_EVERY_S seconds in between, each with the elapsed time and an
 * estimate of what is left. Written to stderr only when stderr is a
 * terminal, so logs and CI output stay as they were; LC_PROGRESS=1 forces
 * the lines on, LC_PROGRESS=0 off.
 */
#ifndef LC_DIFF_PROGRESS_H
#define LC_DIFF_PROGRESS_H

#include <stdint.h>

#define PROGRESS_EVERY_S 30.0

typedef struct diff_progress {
    int on;
    const char *what;       /* "runtime" or "engine" */
    unsigned nsteps, step;  /* modes to run, the current one (0-based) */
    double soak;            /* seconds per mode, or 0 with count */
    uint64_t count;         /* cases per mode without soak */
    double t0, step_t0, next;
    uint64_t done_before;   /* cases of the finished modes */
    const char *step_name;
} diff_progress;

/* Set up for `nsteps` modes of `soak` seconds each or `count` cases each. */
void diff_progress_init(diff_progress *p, const char *what, unsigned nsteps,
                        double soak, uint64_t count);
/* A mode starts. */
void diff_progress_begin(diff_progress *p, const char *step_name);
/* Called once per case with the mode's cases and mismatches so far: prints
 * a line when PROGRESS_EVERY_S have passed (cheap otherwise). */
void diff_progress_tick(diff_progress *p, uint64_t cases, uint64_t bad);
/* The mode ended after `cases` cases. */
void diff_progress_end(diff_progress *p, uint64_t cases, uint64_t bad);

#endif
