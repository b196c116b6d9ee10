/* SPDX-License-Identifier: MIT */
/*
 * bench/bench_engine.c: the engine's cost per exit, through the public API
 * against the fake VMM of tests/common/fakevm.h with its lean callbacks
 * (fvm_ops_lean: as cheap as a VMM's own, nothing logged or checked). Medians over repeated runs, all in one process:
 *
 *   hit          a cached single-exit translation (lookup, coherency check,
 *                dispatch, return) for `out 0x80,al` in 64-bit mode; it
 *                runs its one instruction without the run loop
 *                (translator/run.c), which the clusters below go through,
 *                so their per-instruction figures (cluster - hit) also
 *                carry the loop's own cost
 *   gap filler   (cluster OUT + 12 register gap fillers + OUT) minus
 *                (cluster OUT + OUT), divided by 12
 *   mem filler   the same with 4 memory gap fillers, divided by 4 (one
 *                page: the first walks, the page-walk cache serves the
 *                other three, paper section 11)
 *   mem walk     the same on 4 different pages: every one walks
 *   mem unpaged  the mem filler's cluster in 32-bit protected mode with
 *                paging off, minus (OUT + OUT) there, divided by 4: what a
 *                memory gap filler costs when there is no walk to make
 *   interpreted  an exit with all techniques off (fetch, decode, execute)
 *   translation  an exit that forms and caches a translation (threshold 1,
 *                cache flushed before each), minus a hit. Since the runs
 *                chain (handle_exit.c), such an exit forms twice: the
 *                site, and where its run ends (here an empty translation,
 *                nothing worth running there), each about 43,500
 *                instructions (callgrind, `--only form`), two thirds of
 *                them decoding
 *   call+ret     per instruction after the first, (cluster - hit) / 5, of
 *                `out; call f; out` with f: `add; add; ret` (the stack in
 *                RAM), against the straight `out; 4 x add; out` of as many
 *                instructions (translator/calls.c). f lies before the
 *                cluster, so both are followed by the same bytes and the
 *                engine's look past their end costs the same.
 *   push+pop     per instruction, (cluster - hit) / 5, of
 *                `out; push rax; 2 x add; pop rax; out`: the same stack
 *                accesses as call+ret without the transfers
 *   call, tail   the same cluster with f right after it, as before
 *                2026-11-24: the code after the run falls into f and its
 *                RET, so every exit also checks the return address there
 *                (the chain's inline-cache check, handle_exit.c); shown
 *                for that cost, no goal
 *
 *   paired       call+ret against straight by time, the goal's figure:
 *                the hit, the straight and the call cluster set up at
 *                once and run in turn, 5% of the iterations each, 4 x
 *                runs + 1 times (at most 99); the median of the rounds'
 *                (call - hit) / (straight - hit). `--only paired` prints
 *                it with the three medians.
 *
 *   accessor     per exit, `out; call f; out` with f: `in al, 0x80; ret`:
 *                a port accessor (SeaBIOS's PCI configuration reads,
 *                Linux's pcnet32 CSR reads), the RET's slot read after
 *                the IN's callback; shown for that cost, no goal
 *
 * Goals (issue: clustering engine): hit <= 100 ns, gap filler <= 10 ns,
 * interpreted <= 1 us.   bench_engine [--runs N] [--json] [--small-pages]
 * [--only hit|two|gap|mem|walk|straight|call|pushpop|calltail|flat|interp|
 *  form|accessor|paired]
 * --small-pages: 64-bit code's first 2 MiB (code, stack) mapped in 4 KiB
 * pages instead of one 2 MiB page, so the stack's paging entries are not
 * all the code's (the engine's stack stamp then reads one back itself).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cluster/cluster.h>

#include "../tests/common/fakevm.h"
#include "bench_util.h"


typedef struct rig {
    fvm f;
    lc_engine *e;
    lc_vcpu *v;
    lc_cpu_state s0;
    lc_exit x;
} rig;

/* The rigs run in long mode, or with `flat` in 32-bit protected mode
 * with paging off (flat segments: a memory operand needs no page walk).
 * The code is at 0x100000, the exit at 0x100000 + rig_entry. */
static int rig_flat;
static int rig_small_pages;     /* --small-pages */
static unsigned rig_entry;

static void up(rig *r, uint32_t techniques, uint32_t threshold,
               const uint8_t *code, size_t n)
{
    lc_config c;
    lc_config_init(&c);
    c.techniques = techniques;
    c.translate_threshold = threshold;
    fvm_init(&r->f);
    memcpy(r->f.ram + 0x100000, code, n);
    if (rig_flat)
        fvm_state_prot32(&r->s0, 0);
    else {
        fvm_state_long64(&r->f, &r->s0);
        if (rig_small_pages) {
            /* the first 2 MiB in 4 KiB pages (a table at 0x5000): the
             * code and the stack on pages of their own, so a stack
             * access's page table entry is not the code's */
            uint64_t *pd = (uint64_t *)(void *)(r->f.ram + 0x3000);
            uint64_t *pt = (uint64_t *)(void *)(r->f.ram + 0x5000);
            for (int i = 0; i < 512; i++)
                pt[i] = ((uint64_t)i << 12) | 0x7;
            pd[0] = 0x5000 | 0x7;
        }
    }
    r->s0.rip = 0x100000 + rig_entry;
    r->s0.gpr[LC_RBX] = 0x200000;
    r->s0.gpr[LC_RSP] = 0x180000;
    if (lc_engine_create(&c, &fvm_ops_lean, &r->e) != LC_OK ||
        lc_vcpu_create(r->e, 0, &r->f, &r->v) != LC_OK) {
        fprintf(stderr, "bench_engine: engine setup failed\n");
        exit(1);
    }
    memset(&r->x, 0, sizeof r->x);
    r->x.kind = LC_EXIT_IO;
    r->x.u.io.port = 0x80;
    r->x.u.io.size = 1;
    r->x.u.io.is_out = 1;
}

static void down(rig *r)
{
    lc_vcpu_destroy(r->v);
    lc_engine_destroy(r->e);
    fvm_fini(&r->f);
}

/* ns per handle_exit call, `flush` before each call if set. */
static double per_exit(rig *r, int iters, int flush)
{
    lc_result res;
    double t0 = bench_now_ns(), flush_ns = 0;

    for (int i = 0; i < iters; i++) {
        lc_cpu_state s = r->s0;
        if (flush) {
            double f0 = bench_now_ns();
            lc_engine_flush(r->e);
            flush_ns += bench_now_ns() - f0;
        }
        r->f.nlog = 0;
        lc_vcpu_handle_exit(r->v, &s, &r->x, &res);
    }
    return (bench_now_ns() - t0 - flush_ns) / iters;
}

/* The call+ret goal compared in time by pairs: a hit, the straight
 * cluster and the call cluster set up at once (three engines) and run in
 * turn, `batch` exits each, `rounds` times; per round, (call - hit) /
 * (straight - hit), the hit's and the straight's time taken next to the
 * call's, so the machine's drift (on a shared host, by a factor of 2 over
 * seconds) falls on all three alike. Returns the median of the rounds'
 * ratios. The runs of main() measure each variant in a block of its own,
 * and their per-instruction ratio carries the drift between blocks. */
static double call_over_straight(const uint8_t *hit, size_t nh,
                                 const uint8_t *straight, size_t ns,
                                 const uint8_t *call, size_t nc,
                                 unsigned call_entry, int rounds, int batch,
                                 double med[3])
{
    static rig rs[3];
    double ratio[100], each[3][100];

    if (rounds > 100)
        rounds = 100;
    rig_entry = 0;
    up(&rs[0], LC_TECH_ALL, 3, hit, nh);
    up(&rs[1], LC_TECH_ALL, 3, straight, ns);
    rig_entry = call_entry;
    up(&rs[2], LC_TECH_ALL, 3, call, nc);
    rig_entry = 0;
    for (int i = 0; i < 3; i++)
        per_exit(&rs[i], 3, 0);
    for (int k = 0; k < rounds; k++) {
        double t[3];
        for (int i = 0; i < 3; i++) {
            per_exit(&rs[i], 3, 0);     /* its lines back in the cache */
            t[i] = per_exit(&rs[i], batch, 0);
            each[i][k] = t[i];
        }
        ratio[k] = (t[2] - t[0]) / (t[1] - t[0]);
    }
    for (int i = 0; i < 3; i++) {
        down(&rs[i]);
        if (med)
            med[i] = bench_median(each[i], rounds);
    }
    return bench_median(ratio, rounds);
}

int main(int argc, char **argv)
{
    int runs = 11, json = 0, iters = 100000, prounds, pbatch;
    const char *only = NULL;
    if (getenv("LC_BENCH_ITERS"))
        iters = atoi(getenv("LC_BENCH_ITERS"));
    static const uint8_t out1[] = { 0xe6, 0x80 };
    uint8_t outs2[64], outs12[64], outsm[64], outsw[64];
    size_t n2 = 0, n12 = 0, nm = 0, nw = 0;
    double hit[100], c2[100], c12[100], cm[100], cw[100], interp[100];
    double trans[100], cstraight[100], ccall[100], ctail[100], f2[100];
    double cpush[100], cacc[100];
    double fm[100];
    /* out 0x80; 4 x add rax,rcx; out 0x80   and
     * out 0x80; call f; out 0x80; ...; f: add rax,rcx; add rax,rcx; ret */
    static const uint8_t straight6[] = {
        0xe6, 0x80, 0x48, 0x01, 0xc8, 0x48, 0x01, 0xc8, 0x48, 0x01, 0xc8,
        0x48, 0x01, 0xc8, 0xe6, 0x80 };
    /* out 0x80; push rax; 2 x add rax,rcx; pop rax; out 0x80 */
    static const uint8_t pushpop6[] = {
        0xe6, 0x80, 0x50, 0x48, 0x01, 0xc8, 0x48, 0x01, 0xc8, 0x58,
        0xe6, 0x80 };
    /* paging off: out; [4 x mov eax,[ebx]]; out   and   out; out */
    static const uint8_t flatm[] = {
        0xe6, 0x80, 0x8b, 0x03, 0x8b, 0x03, 0x8b, 0x03, 0x8b, 0x03,
        0xe6, 0x80 };
    static const uint8_t flat2[] = { 0xe6, 0x80, 0xe6, 0x80 };
    /* f: add; add; ret, then at CALL6_ENTRY: out; call f; out */
    static const uint8_t call6[] = {
        0x48, 0x01, 0xc8, 0x48, 0x01, 0xc8, 0xc3, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        0xe6, 0x80, 0xe8, 0xe9, 0xff, 0xff, 0xff, 0xe6, 0x80 };
    enum { CALL6_ENTRY = 16 };
    /* f: in al, 0x80; ret, then at CALL6_ENTRY: out; call f; out */
    static const uint8_t accessor[] = {
        0xe4, 0x80, 0xc3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        0xe6, 0x80, 0xe8, 0xe9, 0xff, 0xff, 0xff, 0xe6, 0x80 };
    static const uint8_t calltail[] = {
        0xe6, 0x80, 0xe8, 0x03, 0x00, 0x00, 0x00, 0xe6, 0x80, 0x90,
        0x48, 0x01, 0xc8, 0x48, 0x01, 0xc8, 0xc3 };
    rig r;

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--runs") && i + 1 < argc)
            runs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--json"))
            json = 1;
        else if (!strcmp(argv[i], "--only") && i + 1 < argc)
            only = argv[++i];
        else if (!strcmp(argv[i], "--small-pages"))
            rig_small_pages = 1;
    }
    if (runs < 1 || runs > 100)
        runs = 11;
    /* the paired figure's rounds and batch (call_over_straight()) */
    prounds = 4 * runs + 1 > 99 ? 99 : 4 * runs + 1;
    pbatch = iters / 20 > 0 ? iters / 20 : 1;

    /* out; [12 x add rax,rcx]; out   and   out; [4 x mov rax,[rbx]]; out */
    outs2[n2++] = 0xe6; outs2[n2++] = 0x80; outs2[n2++] = 0xe6; outs2[n2++] = 0x80;
    outs12[n12++] = 0xe6; outs12[n12++] = 0x80;
    for (int i = 0; i < 12; i++) {
        outs12[n12++] = 0x48; outs12[n12++] = 0x01; outs12[n12++] = 0xc8;
    }
    outs12[n12++] = 0xe6; outs12[n12++] = 0x80;
    outsm[nm++] = 0xe6; outsm[nm++] = 0x80;
    for (int i = 0; i < 4; i++) {
        outsm[nm++] = 0x48; outsm[nm++] = 0x8b; outsm[nm++] = 0x03;
    }
    outsm[nm++] = 0xe6; outsm[nm++] = 0x80;
    /* out; [mov rax,[rbx + k * 0x1000], k = 0..3]; out */
    outsw[nw++] = 0xe6; outsw[nw++] = 0x80;
    for (int i = 0; i < 4; i++) {
        outsw[nw++] = 0x48; outsw[nw++] = 0x8b; outsw[nw++] = 0x83;
        outsw[nw++] = 0; outsw[nw++] = (uint8_t)(0x10 * i);
        outsw[nw++] = 0; outsw[nw++] = 0;
    }
    outsw[nw++] = 0xe6; outsw[nw++] = 0x80;

    if (only && !strcmp(only, "paired")) {
        double med[3];
        double p = call_over_straight(out1, sizeof out1, straight6,
                                      sizeof straight6, call6, sizeof call6,
                                      CALL6_ENTRY, prounds, pbatch, med);
        printf("hit %.1f, straight %.1f, call %.1f ns per exit (medians); "
               "call+ret / straight, paired: %.3f\n",
               med[0], med[1], med[2], p);
        return 0;
    }
    if (only) {
        /* One variant alone, for a profiler (perf record, callgrind):
         * LC_BENCH_ITERS exits per run, nothing printed but its time. */
        const uint8_t *code = out1;
        size_t n = sizeof out1;
        uint32_t techniques = LC_TECH_ALL;
        unsigned threshold = 3;
        int flush = 0;
        double t = 0;

        if (!strcmp(only, "mem")) {
            code = outsm;
            n = nm;
        } else if (!strcmp(only, "two")) {
            code = outs2;
            n = n2;
        } else if (!strcmp(only, "walk")) {
            code = outsw;
            n = nw;
        } else if (!strcmp(only, "gap")) {
            code = outs12;
            n = n12;
        } else if (!strcmp(only, "straight")) {
            code = straight6;
            n = sizeof straight6;
        } else if (!strcmp(only, "call")) {
            code = call6;
            n = sizeof call6;
            rig_entry = CALL6_ENTRY;
        } else if (!strcmp(only, "accessor")) {
            code = accessor;
            n = sizeof accessor;
            rig_entry = CALL6_ENTRY;
        } else if (!strcmp(only, "pushpop")) {
            code = pushpop6;
            n = sizeof pushpop6;
        } else if (!strcmp(only, "calltail")) {
            code = calltail;
            n = sizeof calltail;
        } else if (!strcmp(only, "flat")) {
            code = flatm;
            n = sizeof flatm;
            rig_flat = 1;
        } else if (!strcmp(only, "interp")) {
            techniques = 0;
        } else if (!strcmp(only, "form")) {
            threshold = 1;      /* the translation row: form at every exit */
            flush = 1;
        } else if (strcmp(only, "hit")) {
            fprintf(stderr, "bench_engine: --only "
                    "hit|two|gap|mem|walk|straight|call|pushpop|calltail|"
                    "flat|interp|form|accessor|paired\n");
            return 2;
        }
        for (int k = 0; k < runs; k++) {
            up(&r, techniques, threshold, code, n);
            per_exit(&r, 3, flush);
            t += per_exit(&r, iters, flush);
            down(&r);
        }
        printf("%s: %.1f ns per exit\n", only, t / runs);
        return 0;
    }
    for (int k = 0; k < runs; k++) {
        /* Interleave the variants inside each run (noisy machines). */
        up(&r, LC_TECH_ALL, 3, out1, sizeof out1);
        per_exit(&r, 3, 0);                      /* warm: translate */
        hit[k] = per_exit(&r, iters, 0);
        down(&r);
        up(&r, LC_TECH_ALL, 3, outs2, n2);
        per_exit(&r, 3, 0);
        c2[k] = per_exit(&r, iters, 0);
        down(&r);
        up(&r, LC_TECH_ALL, 3, outs12, n12);
        per_exit(&r, 3, 0);
        c12[k] = per_exit(&r, iters, 0);
        down(&r);
        up(&r, LC_TECH_ALL, 3, outsm, nm);
        per_exit(&r, 3, 0);
        cm[k] = per_exit(&r, iters, 0);
        down(&r);
        up(&r, LC_TECH_ALL, 3, outsw, nw);
        per_exit(&r, 3, 0);
        cw[k] = per_exit(&r, iters, 0);
        down(&r);
        up(&r, 0, 3, out1, sizeof out1);
        interp[k] = per_exit(&r, iters, 0);
        down(&r);
        up(&r, LC_TECH_ALL, 1, out1, sizeof out1);
        trans[k] = per_exit(&r, iters / 10, 1) - hit[k];
        down(&r);
        up(&r, LC_TECH_ALL, 3, straight6, sizeof straight6);
        per_exit(&r, 3, 0);
        cstraight[k] = (per_exit(&r, iters, 0) - hit[k]) / 5;
        down(&r);
        rig_entry = CALL6_ENTRY;
        up(&r, LC_TECH_ALL, 3, call6, sizeof call6);
        per_exit(&r, 3, 0);
        ccall[k] = (per_exit(&r, iters, 0) - hit[k]) / 5;
        down(&r);
        up(&r, LC_TECH_ALL, 3, accessor, sizeof accessor);
        per_exit(&r, 3, 0);
        cacc[k] = per_exit(&r, iters, 0);
        down(&r);
        rig_entry = 0;
        up(&r, LC_TECH_ALL, 3, pushpop6, sizeof pushpop6);
        per_exit(&r, 3, 0);
        cpush[k] = (per_exit(&r, iters, 0) - hit[k]) / 5;
        down(&r);
        up(&r, LC_TECH_ALL, 3, calltail, sizeof calltail);
        per_exit(&r, 3, 0);
        ctail[k] = (per_exit(&r, iters, 0) - hit[k]) / 5;
        down(&r);
        rig_flat = 1;
        up(&r, LC_TECH_ALL, 3, flat2, sizeof flat2);
        per_exit(&r, 3, 0);
        f2[k] = per_exit(&r, iters, 0);
        down(&r);
        up(&r, LC_TECH_ALL, 3, flatm, sizeof flatm);
        per_exit(&r, 3, 0);
        fm[k] = per_exit(&r, iters, 0);
        down(&r);
        rig_flat = 0;
    }
    {
        double paired = call_over_straight(out1, sizeof out1, straight6,
                                           sizeof straight6, call6,
                                           sizeof call6, CALL6_ENTRY,
                                           prounds, pbatch, NULL);
        double h = bench_median(hit, runs), g2 = bench_median(c2, runs);
        double g12 = bench_median(c12, runs), gm = bench_median(cm, runs);
        double in = bench_median(interp, runs), tr = bench_median(trans, runs);
        double gw = bench_median(cw, runs);
        double gap = (g12 - g2) / 12, mem = (gm - g2) / 4, walk = (gw - g2) / 4;
        double pst = bench_median(cstraight, runs);
        double pcall = bench_median(ccall, runs);
        double ptail = bench_median(ctail, runs);
        double ppush = bench_median(cpush, runs);
        double acc = bench_median(cacc, runs);
        double flat = (bench_median(fm, runs) - bench_median(f2, runs)) / 4;
        if (json) {
            printf("{\"unit\": \"ns\", \"hit\": %.1f, \"gap_filler\": %.2f, "
                   "\"mem_gap_filler\": %.2f, \"mem_gap_walk\": %.2f, "
                   "\"interpreted\": %.1f, "
                   "\"translation\": %.1f, \"straight_per_insn\": %.2f, "
                   "\"call_ret_per_insn\": %.2f, "
                   "\"push_pop_per_insn\": %.2f, "
                   "\"call_tail_per_insn\": %.2f, "
                   "\"mem_gap_unpaged\": %.2f, \"accessor\": %.1f, "
                   "\"call_ret_over_straight_paired\": %.3f, "
                   "\"runs\": %d, \"iters\": %d}\n",
                   h, gap, mem, walk, in, tr, pst, pcall, ppush, ptail, flat,
                   acc, paired, runs, iters);
        } else {
            printf("engine cost per exit (medians of %d runs x %d exits)\n",
                   runs, iters);
            printf("  hit (single-exit translation)  %8.1f ns   goal <= 45 ns%s\n",
                   h, h <= 45 ? "" : "  MISSED");
            printf("  per register gap filler        %8.2f ns   goal <= 10 ns%s\n",
                   gap, gap <= 10 ? "" : "  MISSED");
            printf("  per memory gap filler          %8.2f ns   goal <= 25 ns%s\n",
                   mem, mem <= 25 ? "" : "  MISSED");
            printf("  per memory gap filler, walking %8.2f ns\n", walk);
            printf("  per memory gap filler, paging off %5.2f ns\n", flat);
            printf("  interpreted exit               %8.1f ns   goal <= 1000 ns%s\n",
                   in, in <= 1000 ? "" : "  MISSED");
            printf("  translation made               %8.1f ns\n", tr);
            printf("  per instruction, straight      %8.2f ns\n", pst);
            printf("  per instruction, call+ret      %8.2f ns\n", pcall);
            printf("  call+ret / straight, paired     %7.3f      goal <= 1%s\n",
                   paired, paired <= 1 ? "" : "  MISSED");
            printf("  per instruction, push+pop      %8.2f ns\n", ppush);
            printf("  per instruction, call, RET after %6.2f ns\n", ptail);
            printf("  accessor (out; call f; out, f: in; ret) %6.1f ns per exit\n",
                   acc);
        }
    }
    return 0;
}
