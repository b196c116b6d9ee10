/* SPDX-License-Identifier: MIT */
/*
 * bench/bench_runtime.c: the runtime's cost per executed instruction.
 *
 * A microbenchmark of an internal layer, so it links the static library
 * and uses runtime/ directly (the engine benchmarks use the public API).
 * Measures, as medians over repeated runs in one process:
 *   exec      a pre-decoded instruction (the translator's path: no fetch,
 *             no decode), for register-only and memory gap fillers;
 *   step      fetch + decode + execute (the interpreter's path);
 *   decode    lcd_decode alone.
 *
 *   bench_runtime [--runs N] [--json]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../runtime/rt.h"
#include "../tests/common/fakevm.h"
#include "bench_util.h"


typedef struct bcase {
    const char *name;
    const char *hex;      /* one instruction, 64-bit mode */
} bcase;

static const bcase cases[] = {
    { "add rax, rcx",        "48 01 c8" },
    { "xor eax, 0x1234",     "35 34 12 00 00" },
    { "shl rdx, cl",         "48 d3 e2" },
    { "imul rax, rcx, 7",    "48 6b c1 07" },
    { "jnz +0 (taken)",      "75 00" },
    { "mov rax, [rbx+8]",    "48 8b 43 08" },
    { "mov [rbx+8], rax",    "48 89 43 08" },
    { "add [rbx], eax",      "01 03" },
    { "push rax",            "50" },
    { "out 0x80, al",        "e6 80" },
};

static size_t hex(const char *h, uint8_t *o)
{
    size_t n = 0;
    unsigned v;
    while (*h) {
        if (sscanf(h, "%2x", &v) == 1) {
            o[n++] = (uint8_t)v;
            h += 2;
        } else {
            h++;
        }
        while (*h == ' ')
            h++;
    }
    return n;
}

int main(int argc, char **argv)
{
    int runs = 15, json = 0;
    const int iters = 200000;
    fvm f;

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--runs") && i + 1 < argc)
            runs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--json"))
            json = 1;
    }
    if (runs < 1 || runs > 1000)
        runs = 15;
    fvm_init(&f);
    if (json)
        printf("{\"unit\": \"ns/instruction\", \"results\": [\n");
    else
        printf("%-22s %10s %10s %10s\n", "instruction (64-bit)", "exec",
               "step", "decode");
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        uint8_t b[16];
        size_t n = hex(cases[c].hex, b);
        double ex[1000], st[1000], de[1000];
        lc_cpu_state s;
        lcr_vcpu v;
        lcd_insn in;

        fvm_state_long64(&f, &s);
        memcpy(f.ram + 0x100000, b, n);
        lcd_decode(LC_MODE_LONG64, b, n, &in);
        for (int r = 0; r < runs; r++) {
            double t0;
            s.gpr[LC_RBX] = 0x200000;
            s.gpr[LC_RCX] = 3;
            s.gpr[LC_RSP] = 0x300000;
            memset(&v, 0, sizeof v);
            v.insn_budget = 0xffffffffu;
            v.rep_budget = 1;
            lcr_begin(&v, &s, &fvm_ops_lean, &f);
            t0 = bench_now_ns();
            for (int i = 0; i < iters; i++) {
                s.rip = 0x100000;
                s.gpr[LC_RSP] = 0x300000;
                f.nlog = 0;
                lcr_exec(&v, &in);
            }
            ex[r] = (bench_now_ns() - t0) / iters;
            t0 = bench_now_ns();
            for (int i = 0; i < iters; i++) {
                s.rip = 0x100000;
                s.gpr[LC_RSP] = 0x300000;
                f.nlog = 0;
                lcr_step(&v, &in);
            }
            st[r] = (bench_now_ns() - t0) / iters;
            t0 = bench_now_ns();
            for (int i = 0; i < iters; i++)
                lcd_decode(LC_MODE_LONG64, b, n, &in);
            de[r] = (bench_now_ns() - t0) / iters;
        }
        bench_median(ex, runs);
        bench_median(st, runs);
        bench_median(de, runs);
        if (json)
            printf("  {\"insn\": \"%s\", \"exec\": %.1f, \"exec_p10\": %.1f, "
                   "\"exec_p90\": %.1f, \"step\": %.1f, \"decode\": %.1f}%s\n",
                   cases[c].name, ex[runs / 2], ex[runs / 10],
                   ex[runs * 9 / 10], st[runs / 2], de[runs / 2],
                   c + 1 < sizeof cases / sizeof cases[0] ? "," : "");
        else
            printf("%-22s %8.1f ns %8.1f ns %8.1f ns\n", cases[c].name,
                   ex[runs / 2], st[runs / 2], de[runs / 2]);
    }
    if (json)
        printf("]}\n");
    else
        printf("medians of %d runs x %d instructions; exec = pre-decoded "
               "(translator path), step = fetch+decode+exec (interpreter)\n",
               runs, iters);
    fvm_fini(&f);
    return 0;
}
