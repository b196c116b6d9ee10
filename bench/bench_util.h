/* SPDX-License-Identifier: MIT */
/* bench/bench_util.h: timing and medians shared by the benchmarks. */
#ifndef LC_BENCH_UTIL_H
#define LC_BENCH_UTIL_H

#include <stdlib.h>
#include <time.h>

static inline double bench_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static inline int bench_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Sorts `v` in place; returns its median. */
static inline double bench_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof v[0], bench_cmp);
    return v[n / 2];
}

#endif /* LC_BENCH_UTIL_H */
