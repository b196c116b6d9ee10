/* SPDX-License-Identifier: MIT */
/*
 * Live statistics (--stats-interval SECONDS), in the manner of kvm_stat's
 * plain output: every interval a thread takes a snapshot of the counters
 * the end-of-run table shows (vmm_stats_collect, stats.c), subtracts the
 * previous one and prints, to stderr (stdout is the guest's console), a
 * block:
 *
 *   lcvmm stats  t=0.400s  interval=0.200s
 *     vmm          exits                        12345.0/s         2469
 *
 * one line per counter that moved: its rate per second and its delta.
 * The block of the last, partial interval, printed when the guest stops,
 * ends its header with "final": the deltas of all blocks add up to the
 * totals of the end-of-run table. KVM's own counters (exits, io_exits,
 * irq_exits, ..., and the traps derived from them, docs/vmm.md) are read
 * from KVM_GET_STATS_FD through the back end's reader, not counted again;
 * on Unicorn there are none and the kvm section is absent.
 *
 * Without the option there is no thread and nothing on any other path.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "stats.h"
#include "vmm.h"

typedef struct snap {
    kv t[MAX_KV];
    unsigned n;
    double at;                      /* seconds since start */
} snap;

struct vmm_live {
    vmm *vm;
    pthread_t thread;
    pthread_mutex_t lock;           /* stop, read */
    pthread_cond_t cond;            /* CLOCK_MONOTONIC */
    bool stop;
    vmm_kvm_read_fn *read;          /* KVM's counters, or NULL */
    struct timespec t0;
    snap prev, cur;
};

static double since(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0->tv_sec) +
           (double)(t.tv_nsec - t0->tv_nsec) * 1e-9;
}

/* Gauges, not counters: a rate means nothing. */
static bool is_gauge(const kv *e)
{
    return e->is_float || !strcmp(e->key, "exit_code") ||
           !strcmp(e->key, "tcache_bytes");
}

static void take(struct vmm_live *l, snap *s)
{
    uint64_t kvm[KVM_STAT_COUNT_];
    bool have;

    pthread_mutex_lock(&l->lock);
    have = l->read != NULL;
    if (have)
        l->read(l->vm, kvm);
    pthread_mutex_unlock(&l->lock);
    s->n = vmm_stats_collect(l->vm, have ? kvm : NULL, s->t);
    s->at = since(&l->t0);
}

/* The previous value of row e (0 if it was not there: a stop reason seen
 * for the first time, KVM's counters before the vCPUs existed). */
static double before(const snap *p, const kv *e)
{
    for (unsigned i = 0; i < p->n; i++)
        if (!strcmp(p->t[i].section, e->section) &&
            !strcmp(p->t[i].key, e->key))
            return p->t[i].val;
    return 0;
}

static void print(const snap *p, const snap *c, bool final)
{
    /* one write per block: stderr is unbuffered and shared with the
     * VMM's messages */
    char buf[MAX_KV * 80 + 128];
    size_t len = 0;
    double dt = c->at - p->at;

    len += (size_t)snprintf(buf, sizeof buf,
                            "lcvmm stats  t=%.3fs  interval=%.3fs%s\n",
                            c->at, dt, final ? "  final" : "");
    for (unsigned i = 0; i < c->n && len < sizeof buf; i++) {
        const kv *e = &c->t[i];
        double d;
        if (is_gauge(e))
            continue;
        d = e->val - before(p, e);
        /* every block names the exits, moving or not */
        if (d == 0 && (strcmp(e->section, "vmm") || strcmp(e->key, "exits")))
            continue;
        len += (size_t)snprintf(buf + len, sizeof buf - len,
                                "  %-12s %-26s %14.1f/s %12.0f\n",
                                e->section, e->key,
                                dt > 0 ? d / dt : 0.0, d);
    }
    if (len > sizeof buf - 1)
        len = sizeof buf - 1;
    fwrite(buf, 1, len, stderr);
}

static void *live_thread(void *arg)
{
    struct vmm_live *l = arg;
    double iv = l->vm->opt.stats_interval_s;
    struct timespec next = l->t0;
    unsigned long k = 0;

    for (;;) {
        bool stop;
        /* deadlines from the start, not from the last print: the
         * intervals do not drift by the time a print takes */
        k++;
        double at = iv * (double)k;
        next.tv_sec = l->t0.tv_sec + (time_t)at;
        next.tv_nsec = l->t0.tv_nsec +
                       (long)((at - (double)(time_t)at) * 1e9);
        if (next.tv_nsec >= 1000000000L) {
            next.tv_sec++;
            next.tv_nsec -= 1000000000L;
        }
        pthread_mutex_lock(&l->lock);
        while (!l->stop &&
               pthread_cond_timedwait(&l->cond, &l->lock, &next) != ETIMEDOUT)
            ;
        stop = l->stop;
        pthread_mutex_unlock(&l->lock);
        take(l, &l->cur);
        print(&l->prev, &l->cur, stop);
        l->prev = l->cur;
        if (stop)
            return NULL;
        /* behind (a print slower than the interval): skip the deadlines
         * already past rather than print a burst of tiny intervals */
        unsigned long now = (unsigned long)(since(&l->t0) / iv);
        if (now > k)
            k = now;
    }
}

int vmm_stats_live_start(vmm *vm)
{
    struct vmm_live *l;
    pthread_condattr_t ca;

    if (!(vm->opt.stats_interval_s > 0))
        return 0;
    if (!(l = calloc(1, sizeof *l)))
        return -1;
    l->vm = vm;
    pthread_mutex_init(&l->lock, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&l->cond, &ca);
    pthread_condattr_destroy(&ca);
    clock_gettime(CLOCK_MONOTONIC, &l->t0);
    take(l, &l->prev);
    if (pthread_create(&l->thread, NULL, live_thread, l)) {
        pthread_cond_destroy(&l->cond);
        pthread_mutex_destroy(&l->lock);
        free(l);
        return -1;
    }
    vm->live = l;
    return 0;
}

void vmm_stats_live_kvm(vmm *vm, vmm_kvm_read_fn *read)
{
    struct vmm_live *l = vm->live;
    if (!l)
        return;
    pthread_mutex_lock(&l->lock);
    l->read = read;
    pthread_mutex_unlock(&l->lock);
}

void vmm_stats_live_stop(vmm *vm)
{
    struct vmm_live *l = vm->live;
    if (!l)
        return;
    pthread_mutex_lock(&l->lock);
    l->stop = true;
    pthread_cond_signal(&l->cond);
    pthread_mutex_unlock(&l->lock);
    pthread_join(l->thread, NULL);
    pthread_cond_destroy(&l->cond);
    pthread_mutex_destroy(&l->lock);
    vm->live = NULL;
    free(l);
}
