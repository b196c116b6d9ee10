/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_threads.c: several vCPU threads exit into one engine at
 * once (shared exit-tracking table, per-vCPU translation caches), while
 * another thread reads statistics. Every result must be exactly what one
 * vCPU alone gets. Run under ThreadSanitizer by scripts/test.sh.
 */
#include <pthread.h>
#include <string.h>

#include <cluster/cluster.h>

#include "../../examples/paper/paper_examples.h"
#include "fakevm.h"
#include "harness.h"

#define NTHREADS 4
#define ITERS 3000

typedef struct worker {
    lc_engine *e;
    int index;
    int failures;
    uint64_t saved;
} worker;

static volatile int stop_reader;

/* One vCPU over its own fake VMM with the shared guest code: "bios-pci"
 * (its OUT to 0xCF8 exits) at 0x7000 and "out80" at 0x9000, real mode,
 * DX = 0xCF8; *x is that OUT's exit. 0, or -1 if the vCPU could not be
 * created (the fake VMM is then released). */
static int vcpu_up(lc_engine *e, uint32_t index, fvm *f, lc_vcpu **v,
                   lc_cpu_state *s0, lc_exit *x)
{
    fvm_init(f);
    if (lc_vcpu_create(e, index, f, v) != LC_OK) {
        fvm_fini(f);
        return -1;
    }
    fvm_load_example(f, "bios-pci", 0x7000);
    fvm_load_example(f, "out80", 0x9000);
    fvm_state_real(s0);
    s0->gpr[LC_RDX] = 0xcf8;
    memset(x, 0, sizeof *x);
    x->kind = LC_EXIT_IO;
    x->u.io.size = 4;
    x->u.io.is_out = 1;
    return 0;
}

static void *run(void *arg)
{
    worker *w = arg;
    fvm f;                       /* each vCPU its own RAM and devices */
    lc_vcpu *v;
    lc_cpu_state s0;
    lc_exit x;

    /* Same guest code at the same address on every vCPU: they contend
     * on the same tracking entries. Half also run a private block. */
    if (vcpu_up(w->e, (uint32_t)w->index, &f, &v, &s0, &x)) {
        w->failures++;
        return NULL;
    }
    for (int i = 0; i < ITERS; i++) {
        lc_cpu_state s = s0;
        lc_result r;
        int bios = (i + w->index) % 3 != 0;

        s.rip = bios ? 0x7000 : 0x9000;
        x.u.io.is_out = bios;
        x.u.io.size = bios ? 4 : 1;
        f.nlog = 0;
        if (lc_vcpu_handle_exit(v, &s, &x, &r) != LC_OK ||
            r.disposition != LC_HANDLED)
            w->failures++;
        /* Translated runs do the whole block; interpreted ones one. */
        if (r.translated && r.insns != (bios ? 9u : 8u))
            w->failures++;
        if (!r.translated && r.insns != 1)
            w->failures++;
        w->saved += r.exits_saved;
    }
    lc_vcpu_destroy(v);
    fvm_fini(&f);
    return NULL;
}

static void *reader(void *arg)
{
    lc_engine *e = arg;
    lc_stats s;
    while (!__atomic_load_n(&stop_reader, __ATOMIC_RELAXED))
        lc_engine_get_stats(e, &s);
    return NULL;
}

START_TEST(concurrent_vcpus)
{
    lc_engine *e;
    pthread_t t[NTHREADS], rd;
    worker w[NTHREADS];
    lc_stats st;
    uint64_t saved = 0;

    ck_assert_int_eq(lc_engine_create(NULL, &fvm_ops, &e), LC_OK);
    ck_assert_int_eq(pthread_create(&rd, NULL, reader, e), 0);
    for (int i = 0; i < NTHREADS; i++) {
        w[i] = (worker){ .e = e, .index = i };
        ck_assert_int_eq(pthread_create(&t[i], NULL, run, &w[i]), 0);
    }
    for (int i = 0; i < NTHREADS; i++) {
        pthread_join(t[i], NULL);
        ck_assert_int_eq(w[i].failures, 0);
        saved += w[i].saved;
    }
    __atomic_store_n(&stop_reader, 1, __ATOMIC_RELAXED);
    pthread_join(rd, NULL);
    ck_assert_int_eq(lc_engine_get_stats(e, &st), LC_OK);
    ck_assert_uint_eq(st.exits_seen, (uint64_t)NTHREADS * ITERS);
    ck_assert_uint_eq(st.exits_saved, saved);
    /* Every vCPU translated each block once (per-vCPU caches). */
    ck_assert_uint_eq(st.translations, 2 * NTHREADS);
    ck_assert_uint_gt(saved, (uint64_t)NTHREADS * ITERS);
    ck_assert_int_eq(lc_engine_destroy(e), LC_OK);
}
END_TEST

/* lc_engine_flush() from another thread while a vCPU keeps handling
 * exits (a VMM moving a BAR cannot stop its vCPUs): the flush is a
 * request each vCPU honours on its next exit (KVM's vCPU requests). The
 * vCPU thread never pauses: while it waits for the flush it handles
 * exits at another site, so the flush races with the exit path. After
 * the flush returned, the next exit at the translated site must find
 * nothing cached and nothing learned. */
#define FLUSH_ROUNDS 200

typedef struct flush_rig {
    lc_engine *e;
    int phase;          /* 0 run, 1 flush wanted, 2 flushed */
    int failures;
} flush_rig;

static int handle(lc_vcpu *v, const lc_cpu_state *s0, uint64_t rip,
                  const lc_exit *x, lc_result *r)
{
    lc_cpu_state s = *s0;

    s.rip = rip;
    return lc_vcpu_handle_exit(v, &s, x, r) == LC_OK &&
           r->disposition == LC_HANDLED;
}

static void *flushed_vcpu(void *arg)
{
    flush_rig *fr = arg;
    fvm f;
    lc_vcpu *v;
    lc_cpu_state s0;
    lc_exit out, in;
    lc_result r;

    if (vcpu_up(fr->e, 0, &f, &v, &s0, &out)) {
        fr->failures++;
        return NULL;
    }
    in = out;
    in.u.io.size = 1;
    in.u.io.is_out = 0;
    for (int round = 0; round < FLUSH_ROUNDS; round++) {
        for (int i = 0; i < 4; i++)         /* learn, translate, hit */
            if (!handle(v, &s0, 0x7000, &out, &r))
                fr->failures++;
        if (!r.translated)
            fr->failures++;
        __atomic_store_n(&fr->phase, 1, __ATOMIC_RELEASE);
        while (__atomic_load_n(&fr->phase, __ATOMIC_ACQUIRE) != 2) {
            f.nlog = 0;
            if (!handle(v, &s0, 0x9000, &in, &r))
                fr->failures++;
        }
        if (!handle(v, &s0, 0x7000, &out, &r) || r.translated ||
            !r.learning || r.insns != 1)
            fr->failures++;                 /* the flush was not seen */
        __atomic_store_n(&fr->phase, 0, __ATOMIC_RELEASE);
    }
    lc_vcpu_destroy(v);
    fvm_fini(&f);
    return NULL;
}

START_TEST(flush_while_running)
{
    flush_rig fr = { 0 };
    pthread_t t;
    lc_stats st;

    ck_assert_int_eq(lc_engine_create(NULL, &fvm_ops, &fr.e), LC_OK);
    ck_assert_int_eq(pthread_create(&t, NULL, flushed_vcpu, &fr), 0);
    for (int round = 0; round < FLUSH_ROUNDS; round++) {
        while (__atomic_load_n(&fr.phase, __ATOMIC_ACQUIRE) != 1)
            ;
        ck_assert_int_eq(lc_engine_flush(fr.e), LC_OK);
        __atomic_store_n(&fr.phase, 2, __ATOMIC_RELEASE);
    }
    pthread_join(t, NULL);
    ck_assert_int_eq(fr.failures, 0);
    ck_assert_int_eq(lc_engine_get_stats(fr.e, &st), LC_OK);
    ck_assert_uint_ge(st.translations, FLUSH_ROUNDS);  /* one per round */
    ck_assert_int_eq(lc_engine_destroy(fr.e), LC_OK);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("threads");
    TCase *t = tcase_create("vcpus");
    tcase_add_test(t, concurrent_vcpus);
    tcase_add_test(t, flush_while_running);
    tcase_set_timeout(t, 120);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return lc_test_run(suite());
}
