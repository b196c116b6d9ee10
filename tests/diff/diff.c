/* SPDX-License-Identifier: MIT */
/*
 * tests/diff/diff.c: lc-diff, the differential tester of runtime/ against
 * Unicorn (and, for host-runnable 64-bit cases, against this CPU).
 *
 *   lc-diff --mode real|prot32|pae|long64|all --count N --seed S
 *           [--soak SECONDS] [--verbose] [--case I] [--groups G]
 *           [--native] [--max-report K]
 *   lc-diff --engine ...    whole clusters through the public engine API
 *                           (cdiff.c)
 *   lc-diff --engine --code FILE ...
 *                           the same on code nobody here wrote: each case
 *                           starts at an exiting instruction of FILE (an
 *                           ELF object's executable sections, or a raw
 *                           image such as a PC firmware; code_src.c)
 *
 * For each case both sides start from the same registers, RAM (page
 * tables included) and device answer stream; at the end they must agree
 * on the executed instruction addresses, all GPRs (16 in long64, the low
 * 32 bits of 8 otherwise), RIP, the defined RFLAGS bits (status flags left
 * undefined by the last instruction that wrote them on the executed path
 * are masked: see flag_effect() in common.c), DF and IF, every RAM byte
 * (accessed/dirty bits in the page tables included), the harness MSRs and
 * the ordered log of port, MMIO, CPUID, RDTSC, HLT, VMREAD, VMWRITE and
 * VMCALL accesses (the last four against the fake VMM of common.c). A
 * case may end early on both sides: after a HLT, or before an instruction
 * the library must decline (GI_STOP). Exit status 0 only if nothing
 * differed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "diff.h"
#include "progress.h"

static struct {
    int      mode;            /* -1: all */
    uint64_t count;
    uint64_t seed;
    double   soak;
    int      verbose;
    int64_t  one_case;
    unsigned groups;
    int      native;
    unsigned max_report;
    unsigned max_insns;
} opt = { -1, 1000, 1, 0, 0, -1, 12, 0, 5, 2000 };

static uint64_t exec_cov[DM_COUNT][LC_OP_COUNT_][4];
/* Agreed cases that ended at the decline they expected (GI_STOP), per
 * operation, and VMREAD/VMWRITEs the fake VMM failed and emulated on the
 * exit (GI_VMFAIL). */
static uint64_t declined_ok[DM_COUNT][LC_OP_COUNT_];
static uint64_t vmfail_ok[DM_COUNT];

/* Comparing with the host CPU: no trace, no page-table/code RAM (the
 * host's page tables are not the guest's), no MSRs, IF not comparable. */
static int cmp_native;

/* Status flags undefined at the end of the executed path. */
static uint32_t undefined_flags(const dcase *c, const run_result *r)
{
    uint32_t undef = 0;
    unsigned n = r->ntrace < TRACE_MAX ? r->ntrace : TRACE_MAX;

    for (unsigned i = 0; i < n; i++) {
        int k = dcase_insn_at(c, r->trace[i]);
        if (k < 0)
            return FL_STATUS;   /* off the generated code: mask nothing useful */
        const gen_insn *gi = &c->insn[k];
        unsigned mask = gi->bits == 64 ? 0x3f : 0x1f;
        int count = 1;
        if (gi->cnt_kind == CNT_IMM)
            count = gi->cnt_imm & mask;
        else if (gi->cnt_kind == CNT_CL)
            count = (int)(r->trace_cl[i] & mask);
        uint32_t def, und;
        flag_effect(gi->op, gi->bits, count, &def, &und);
        undef = (undef & ~def) | und;
    }
    return undef;
}

static const char *ak_name(int k)
{
    switch (k) {
    case AK_PIO: return "pio";
    case AK_MMIO: return "mmio";
    case AK_CPUID: return "cpuid";
    case AK_RDTSC: return "rdtsc";
    case AK_HLT: return "hlt";
    case AK_VMREAD: return "vmread";
    case AK_VMWRITE: return "vmwrite";
    case AK_VMCALL: return "vmcall";
    default: return "?";
    }
}

static void fmt_access(char *b, size_t n, const dev_access *a)
{
    if (a->kind == AK_CPUID)
        snprintf(b, n, "cpuid leaf 0x%x subleaf 0x%x", (unsigned)a->addr,
                 (unsigned)(a->addr >> 32));
    else if (a->kind == AK_VMREAD || a->kind == AK_VMWRITE)
        snprintf(b, n, "%s field 0x%llx value 0x%llx %s", ak_name(a->kind),
                 (unsigned long long)a->addr, (unsigned long long)a->value,
                 a->size == 0 ? "VMsucceed" : a->size == 0xff
                 ? "VMfailInvalid" : "VMfailValid");
    else
        snprintf(b, n, "%s %s size %u addr 0x%llx value 0x%llx",
                 ak_name(a->kind), a->is_write == DEV_WIDE_WRITE
                 ? "write (or a merged pair)" : a->is_write ? "write"
                 : "read", a->size,
                 (unsigned long long)a->addr, (unsigned long long)a->value);
}

unsigned long long diff_merged_pairs;

static int same_access(const dev_access *x, const dev_access *y)
{
    return x->kind == y->kind && x->is_write == y->is_write &&
           x->size == y->size && x->addr == y->addr && x->value == y->value;
}

/* How many of the accesses at `x` (of `left`, Unicorn's, each tagged with
 * the instruction that made it) make the wide write `w` (DEV_WIDE_WRITE):
 * one plain write of its size, address and value; or two plain writes of
 * half its size, one at each half, in either order, made by two
 * instructions in a row (an exit pair, paper section 3, delivered as one
 * access) or by one 8-byte access (which Unicorn's side sees as two
 * 4-byte ones); 0 for none. */
static unsigned wide_match(const dev_access *w, const dev_access *x,
                           unsigned left)
{
    unsigned h = w->size / 2u;
    uint64_t mask = (1ull << (8 * h)) - 1, lo = w->value & mask,
             hi = w->value >> (8 * h);

    if (left >= 1 && x[0].kind == w->kind && x[0].is_write == 1 &&
        x[0].size == w->size && x[0].addr == w->addr &&
        x[0].value == w->value)
        return 1;
    if (left < 2)
        return 0;
    if (x[0].insn == x[1].insn ? w->size != 8 : x[1].insn != x[0].insn + 1)
        return 0;
    for (int k = 0; k < 2; k++) {
        const dev_access *a = &x[k], *b = &x[1 - k];    /* a: low half */
        if (a->kind == w->kind && b->kind == w->kind && a->is_write == 1 &&
            b->is_write == 1 && a->size == h && b->size == h &&
            a->addr == w->addr && b->addr == w->addr + h &&
            a->value == lo && b->value == hi)
            return 2;
    }
    return 0;
}

static const char *const gpr_names[16] = {
    "rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi",
    "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15",
};

static const char *ram_what(uint64_t pa)
{
    if (pa >= GDT_PA && pa < GDT_PA + 0x100) return "GDT";
    if (pa >= CODE_PA && pa < CODE_PA + 0x1000) return "code page";
    if (pa >= STACK_PA && pa < STACK_PA + 0x1000) return "stack page";
    if (pa >= PT_PML4_PA && pa < PT_PML4_PA + 0x1000) return "PML4";
    if (pa >= PT_PDPT_PA && pa < PT_PDPT_PA + 0x1000) return "PDPT";
    if (pa >= PT_PDLO_PA && pa < PT_PDLO_PA + 0x1000) return "PD(lo)";
    if (pa >= PT_PDHI_PA && pa < PT_PDHI_PA + 0x1000) return "PD(hi)";
    if (pa >= PT_PT0_PA && pa < PT_PT0_PA + 0x1000) return "PT0 (identity)";
    if (pa >= PT_PT1_PA && pa < PT_PT1_PA + 0x1000) return "PT1 (window)";
    return "data";
}

/* First difference between `a` (reference) and `b`; "" if none. */
static int compare(const dcase *c, const run_result *a, const char *an,
                   const run_result *b, const char *bn, char *out, size_t n)
{
    int m = c->mode;
    out[0] = 0;
    if (!a->ok || !b->ok) {
        if (!a->ok && !b->ok && !strcmp(a->why, b->why))
            return 0;
        snprintf(out, n, "completion: %s: %.200s | %s: %.200s", an,
                 a->ok ? "reached the end" : a->why, bn,
                 b->ok ? "reached the end" : b->why);
        return 1;
    }
    unsigned nt = a->ntrace < b->ntrace ? a->ntrace : b->ntrace;
    if (cmp_native)
        nt = 0;
    if (nt > TRACE_MAX)
        nt = TRACE_MAX;
    for (unsigned i = 0; i < nt; i++)
        if (a->trace[i] != b->trace[i]) {
            snprintf(out, n, "executed path: instruction #%u at 0x%llx (%s) vs "
                     "0x%llx (%s)", i, (unsigned long long)a->trace[i], an,
                     (unsigned long long)b->trace[i], bn);
            return 1;
        }
    if (!cmp_native && a->ntrace != b->ntrace) {
        snprintf(out, n, "instructions executed: %u (%s) vs %u (%s)",
                 a->ntrace, an, b->ntrace, bn);
        return 1;
    }
    for (int i = 0; i < (m == DM_LONG64 ? 16 : 8); i++) {
        uint64_t x = a->gpr[i], y = b->gpr[i];
        if (m != DM_LONG64) {
            x = (uint32_t)x;
            y = (uint32_t)y;
        }
        if (x != y) {
            snprintf(out, n, "%s: 0x%llx (%s) vs 0x%llx (%s)", gpr_names[i],
                     (unsigned long long)x, an, (unsigned long long)y, bn);
            return 1;
        }
    }
    if (a->rip != b->rip) {
        snprintf(out, n, "rip: 0x%llx (%s) vs 0x%llx (%s)",
                 (unsigned long long)a->rip, an, (unsigned long long)b->rip,
                 bn);
        return 1;
    }
    static const char *const sn[6] = { "es", "cs", "ss", "ds", "fs", "gs" };
    for (int i = 0; i < 6 && !cmp_native; i++)
        if (a->sel[i] != b->sel[i]) {
            snprintf(out, n, "%s selector: 0x%x (%s) vs 0x%x (%s)", sn[i],
                     a->sel[i], an, b->sel[i], bn);
            return 1;
        }
    if (m == DM_LONG64 && !cmp_native &&
        (a->fs_base != b->fs_base || a->gs_base != b->gs_base)) {
        snprintf(out, n, "fs/gs base: 0x%llx/0x%llx (%s) vs 0x%llx/0x%llx (%s)",
                 (unsigned long long)a->fs_base, (unsigned long long)a->gs_base,
                 an, (unsigned long long)b->fs_base,
                 (unsigned long long)b->gs_base, bn);
        return 1;
    }
    for (int i = 0; i < 4 && !cmp_native; i++)
        if (a->dr[i] != b->dr[i]) {
            snprintf(out, n, "dr%d: 0x%llx (%s) vs 0x%llx (%s)", i,
                     (unsigned long long)a->dr[i], an,
                     (unsigned long long)b->dr[i], bn);
            return 1;
        }
    uint32_t und = undefined_flags(c, b);
    uint64_t fm = (FL_STATUS & ~und) | LC_RFLAGS_DF |
                  (cmp_native ? 0 : LC_RFLAGS_IF);
    if ((a->rflags ^ b->rflags) & fm) {
        snprintf(out, n, "rflags: 0x%llx (%s) vs 0x%llx (%s), compared bits "
                 "0x%llx (undefined: 0x%x), differing 0x%llx",
                 (unsigned long long)a->rflags, an,
                 (unsigned long long)b->rflags, bn, (unsigned long long)fm,
                 und, (unsigned long long)((a->rflags ^ b->rflags) & fm));
        return 1;
    }
    for (uint64_t pa = 0; pa < RAM_SIZE; pa++) {
        if (pa == MMIO_PA)
            pa += MMIO_SIZE;
        if (!(pa & 0xfff) && !memcmp(a->ram + pa, b->ram + pa, 0x1000)) {
            pa += 0xfff;
            continue;
        }
        if (cmp_native && pa < DATA0_PA && !(pa >= STACK_PA && pa < STACK_PA + 0x1000))
            continue;
        if (a->ram[pa] != b->ram[pa]) {
            uint64_t q = pa & ~7ull, x, y, i0;
            if (opt.verbose) {
                /* list every differing qword */
                for (uint64_t p2 = 0; p2 < RAM_SIZE; p2 += 8) {
                    if (p2 == MMIO_PA || !memcmp(a->ram + p2, b->ram + p2, 8))
                        continue;
                    memcpy(&x, a->ram + p2, 8);
                    memcpy(&y, b->ram + p2, 8);
                    memcpy(&i0, c->ram + p2, 8);
                    printf("  RAM qword 0x%05llx (%s): %s 0x%016llx %s 0x%016llx "
                           "initial 0x%016llx\n", (unsigned long long)p2,
                           ram_what(p2), an, (unsigned long long)x, bn,
                           (unsigned long long)y, (unsigned long long)i0);
                }
            }
            memcpy(&x, a->ram + q, 8);
            memcpy(&y, b->ram + q, 8);
            memcpy(&i0, c->ram + q, 8);
            snprintf(out, n, "RAM at gpa 0x%llx (%s): qword 0x%llx: 0x%016llx "
                     "(%s) vs 0x%016llx (%s), initially 0x%016llx",
                     (unsigned long long)pa, ram_what(pa),
                     (unsigned long long)q, (unsigned long long)x, an,
                     (unsigned long long)y, bn, (unsigned long long)i0);
            return 1;
        }
    }
    for (int i = 0; i < N_MSRS && !cmp_native; i++)
        if (a->msr[i] != b->msr[i]) {
            snprintf(out, n, "MSR 0x%x: 0x%llx (%s) vs 0x%llx (%s)",
                     diff_msr_ids[i], (unsigned long long)a->msr[i], an,
                     (unsigned long long)b->msr[i], bn);
            return 1;
        }
    /* In order; a wide write on `b`'s side (the engine's, with merged
     * pairs) takes one or two of `a`'s (wide_match()). */
    unsigned i = 0, j = 0;
    while (i < a->dev.nlog && j < b->dev.nlog) {
        const dev_access *x = &a->dev.log[i], *y = &b->dev.log[j];
        unsigned took = y->is_write == DEV_WIDE_WRITE
                        ? wide_match(y, x, a->dev.nlog - i)
                        : (unsigned)same_access(x, y);
        if (!took) {
            char s1[96], s2[96];
            fmt_access(s1, sizeof s1, x);
            fmt_access(s2, sizeof s2, y);
            snprintf(out, n, "device access #%u: %s (%s) vs %s (%s)", i, s1,
                     an, s2, bn);
            return 1;
        }
        /* two of Unicorn's writes, from two instructions: a pair the
         * engine merged (a 64-bit MOV also makes two, from one) */
        if (took == 2 && x[0].insn != x[1].insn)
            diff_merged_pairs++;
        i += took;
        j++;
    }
    /* a log that overflowed (DEV_LOG_MAX) ends where it ends: with merged
     * writes the two sides stop at different accesses */
    if ((i != a->dev.nlog || j != b->dev.nlog) &&
        !(a->dev.overflow || b->dev.overflow)) {
        char s1[96] = "-";
        const dev_access *extra = i < a->dev.nlog ? &a->dev.log[i]
                                                  : &b->dev.log[j];
        fmt_access(s1, sizeof s1, extra);
        snprintf(out, n, "device accesses: %u (%s) vs %u (%s); first extra: "
                 "%s (%s)", a->dev.nlog, an, b->dev.nlog, bn, s1,
                 i < a->dev.nlog ? an : bn);
        return 1;
    }
    return 0;
}

static void print_case(const dcase *c, const run_result *r)
{
    const lc_cpu_state *st = &c->st;
    printf("  code: %u bytes at 0x%llx, %u instructions ('*' executed by the "
           "runtime, 's' address helper):\n", c->code_len,
           (unsigned long long)c->code_la, c->ninsns);
    for (uint32_t i = 0; i < c->ninsns; i++) {
        const gen_insn *gi = &c->insn[i];
        lc_insn_info info;
        char txt[128] = "?", hex[64] = "";
        uint64_t la = c->code_la + gi->off;
        if (lc_decode(dmode_cpu_mode(c->mode), c->code + gi->off, gi->len,
                      &info) == LC_OK)
            lc_insn_format(&info, la, txt, sizeof txt);
        for (unsigned k = 0; k < gi->len; k++)
            snprintf(hex + k * 3, sizeof hex - k * 3, "%02x ",
                     c->code[gi->off + k]);
        int ex = 0;
        for (unsigned t = 0; r && t < r->ntrace && t < TRACE_MAX; t++)
            if (r->trace[t] == la)
                ex = 1;
        printf("    %c%c +0x%03x  %-45s %s\n", ex ? '*' : ' ',
               gi->setup ? 's' : ' ', gi->off, hex, txt);
    }
    printf("  bytes:");
    for (uint32_t i = 0; i < c->code_len; i++)
        printf("%s%02x", i % 32 ? "" : "\n    ", c->code[i]);
    printf("\n  initial registers:\n");
    for (int i = 0; i < (c->mode == DM_LONG64 ? 16 : 8); i++)
        printf("    %-3s 0x%016llx%s", gpr_names[i],
               (unsigned long long)st->gpr[i], i % 4 == 3 ? "\n" : "");
    printf("    rip 0x%llx rflags 0x%llx cr0 0x%llx cr3 0x%llx cr4 0x%llx "
           "efer 0x%llx\n", (unsigned long long)st->rip,
           (unsigned long long)st->rflags, (unsigned long long)st->cr0,
           (unsigned long long)st->cr3, (unsigned long long)st->cr4,
           (unsigned long long)st->efer);
    static const char *sn[6] = { "es", "cs", "ss", "ds", "fs", "gs" };
    printf("   ");
    for (int s = 0; s < 6; s++)
        printf(" %s=%04x(base 0x%llx lim 0x%x%s%s)", sn[s], st->seg[s].selector,
               (unsigned long long)st->seg[s].base, st->seg[s].limit,
               st->seg[s].db ? " B" : "", st->seg[s].unusable ? " unusable" : "");
    printf("\n");
}

static void print_result(const char *name, const dcase *c, const run_result *r)
{
    printf("  %s: %s, %u instructions, rip 0x%llx rflags 0x%llx\n", name,
           r->ok ? "reached the end" : r->why, r->ntrace,
           (unsigned long long)r->rip, (unsigned long long)r->rflags);
    for (int i = 0; i < (c->mode == DM_LONG64 ? 16 : 8); i++)
        printf("    %-3s 0x%016llx%s", gpr_names[i],
               (unsigned long long)r->gpr[i], i % 4 == 3 ? "\n" : "");
    for (unsigned i = 0; i < r->dev.nlog && i < 16; i++) {
        char s[96];
        fmt_access(s, sizeof s, &r->dev.log[i]);
        printf("    dev[%u] %s\n", i, s);
    }
}

int diff_compare(const dcase *c, const run_result *a, const char *an,
                 const run_result *b, const char *bn, char *out, size_t n)
{
    return compare(c, a, an, b, bn, out, n);
}

void diff_print_case(const dcase *c, const run_result *r)
{
    print_case(c, r);
}

void diff_print_result(const char *name, const dcase *c, const run_result *r)
{
    print_result(name, c, r);
}

int diff_verbose(void)
{
    return opt.verbose;
}

static void usage(void)
{
    fprintf(stderr,
            "usage: lc-diff --mode real|prot32|pae|long64|all --count N "
            "--seed S [--soak SECONDS]\n"
            "               [--verbose] [--case I] [--groups G] [--native] "
            "[--max-report K]\n"
            "       lc-diff --engine [same options]: whole clusters through "
            "lc_vcpu_handle_exit\n"
            "       lc-diff --engine --code FILE [same options]: the same, "
            "each case\n"
            "               starting at an exiting instruction of FILE (ELF "
            "or raw)\n");
    exit(2);
}

static void print_coverage(int m)
{
    printf("  covered (%s, executed and agreed, op:widths):", dmode_name(m));
    static const unsigned wb[4] = { 8, 16, 32, 64 };
    int col = 0;
    for (unsigned op = 1; op < LC_OP_COUNT_; op++) {
        int any = 0;
        char buf[64];
        size_t k = 0;
        for (int w = 0; w < 4; w++)
            if (exec_cov[m][op][w]) {
                k += (size_t)snprintf(buf + k, sizeof buf - k, "%s%u",
                                      any ? "," : "", wb[w]);
                any = 1;
            }
        if (!any)
            continue;
        if (col % 6 == 0)
            printf("\n   ");
        printf(" %s:%s", lc_op_name((lc_op)op), buf);
        col++;
    }
    printf("\n  not covered (%s):", dmode_name(m));
    for (unsigned op = 1; op < LC_OP_COUNT_; op++) {
        uint64_t t = 0;
        for (int w = 0; w < 4; w++)
            t += exec_cov[m][op][w];
        if (!t)
            printf(" %s", lc_op_name((lc_op)op));
    }
    printf("\n");
    printf("  declines agreed (the run stopped before it):");
    for (unsigned op = 0; op < LC_OP_COUNT_; op++)
        if (declined_ok[m][op])
            printf(" %s:%llu", lc_op_name((lc_op)op),
                   (unsigned long long)declined_ok[m][op]);
    printf("; VMREAD/VMWRITE failed by the VMM and emulated on the exit: "
           "%llu\n", (unsigned long long)vmfail_ok[m]);
    int sk = 0;
    for (unsigned op = 0; op < LC_OP_COUNT_; op++)
        if (gen_skipped[m][op]) {
            if (!sk++)
                printf("  generated but classed terminator by the decoder "
                       "(dropped):");
            printf(" %s:%llu", lc_op_name((lc_op)op),
                   (unsigned long long)gen_skipped[m][op]);
        }
    if (sk)
        printf("\n");
}

int main(int argc, char **argv)
{
    int engine = 0;
    const char *code = NULL;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--mode") && v) {
            opt.mode = -2;
            if (!strcmp(v, "all"))
                opt.mode = -1;
            for (int m = 0; m < DM_COUNT; m++)
                if (!strcmp(v, dmode_name(m)))
                    opt.mode = m;
            if (opt.mode == -2)
                usage();
            i++;
        } else if (!strcmp(a, "--count") && v) {
            opt.count = strtoull(v, NULL, 0);
            i++;
        } else if (!strcmp(a, "--seed") && v) {
            opt.seed = strtoull(v, NULL, 0);
            i++;
        } else if (!strcmp(a, "--soak") && v) {
            opt.soak = strtod(v, NULL);
            i++;
        } else if (!strcmp(a, "--case") && v) {
            opt.one_case = strtoll(v, NULL, 0);
            i++;
        } else if (!strcmp(a, "--groups") && v) {
            opt.groups = (unsigned)strtoul(v, NULL, 0);
            i++;
        } else if (!strcmp(a, "--max-report") && v) {
            opt.max_report = (unsigned)strtoul(v, NULL, 0);
            i++;
        } else if (!strcmp(a, "--verbose")) {
            opt.verbose = 1;
        } else if (!strcmp(a, "--native")) {
            opt.native = 1;
        } else if (!strcmp(a, "--engine")) {
            engine = 1;
        } else if (!strcmp(a, "--code") && v) {
            code = v;
            i++;
        } else {
            usage();
        }
    }
    if (engine) {
        cdiff_opts co = {
            .mode = opt.mode, .count = opt.count, .seed = opt.seed,
            .soak = opt.soak, .one_case = opt.one_case, .groups = opt.groups,
            .max_report = opt.max_report, .verbose = opt.verbose,
        };
        static code_src src;
        char err[512];
        int rc;

        if (opt.native) {
            fprintf(stderr, "lc-diff: --native is not for --engine\n");
            return 2;
        }
        if (code) {
            if (code_src_load(&src, code, err, sizeof err) < 0) {
                fprintf(stderr, "lc-diff: --code %s\n", err);
                return 2;
            }
            co.code = &src;
        }
        rc = cdiff_main(&co);
        if (code)
            code_src_free(&src);
        return rc;
    }
    if (code) {
        fprintf(stderr, "lc-diff: --code is for --engine\n");
        return 2;
    }
    if (opt.native && opt.mode != DM_LONG64 && opt.mode != -1) {
        fprintf(stderr, "lc-diff: --native is for long64 only\n");
        return 2;
    }

    dcase *c = malloc(sizeof *c);
    run_result *ru = malloc(sizeof *ru), *rr = malloc(sizeof *rr);
    run_result *rn = malloc(sizeof *rn);
    if (!c || !ru || !rr || !rn)
        return 2;
    gen_opts go = { .max_groups = opt.groups };
    uint64_t total_bad = 0, total_setup_err = 0;
    diff_progress pg;   /* progress lines on a terminal (progress.h) */
    diff_progress_init(&pg, "runtime", opt.mode >= 0 || opt.native ? 1 : DM_COUNT,
                       opt.soak, opt.count);
    if (opt.one_case >= 0)
        pg.on = 0;

    for (int m = 0; m < DM_COUNT; m++) {
        if (opt.mode >= 0 && m != opt.mode)
            continue;
        if (opt.native && m != DM_LONG64)
            continue;
        go.native = opt.native;
        diff_perm(opt.seed, go.perm);
        uc_side *u = ucs_open(m, go.perm, 0);
        if (!u) {
            fprintf(stderr, "lc-diff: cannot set up Unicorn for %s\n",
                    dmode_name(m));
            return 2;
        }
        double t0 = diff_now(), soak_end = opt.soak > 0 ? t0 + opt.soak : 0;
        diff_progress_begin(&pg, dmode_name(m));
        uint64_t ncases = 0, ninsns = 0, bad = 0, native_runs = 0, uc_wrong = 0;
        uint64_t first = opt.one_case >= 0 ? (uint64_t)opt.one_case : 0;
        for (uint64_t idx = first;; idx++) {
            if (opt.one_case >= 0 && idx != (uint64_t)opt.one_case)
                break;
            if (soak_end ? diff_now() >= soak_end : idx - first >= opt.count)
                break;
            diff_progress_tick(&pg, ncases, bad);
            gen_case(c, m, opt.seed, idx, &go);
            /* Unicorn 2.0.1 corrupts its translated-block chaining after
             * about a million cases of per-case TB invalidation in one
             * instance (SIGSEGV in tb_set_jmp_target; UNICORN_BUGS.md):
             * give each instance a bounded life. Cases are independent,
             * so results do not depend on where the reopen falls. */
            if (ncases && ncases % UC_REOPEN_CASES == 0) {
                ucs_close(u);
                u = ucs_open(m, go.perm, 0);
                if (!u) {
                    fprintf(stderr, "lc-diff: cannot set up Unicorn for %s\n",
                            dmode_name(m));
                    return 2;
                }
            }
            if (ucs_run(u, c, ru, opt.max_insns) < 0) {
                total_setup_err++;
                printf("SETUP ERROR mode=%s seed=%llu case=%llu: %s\n",
                       dmode_name(m), (unsigned long long)opt.seed,
                       (unsigned long long)idx, ru->why);
                continue;
            }
            rts_run(c, rr, opt.max_insns);
            ncases++;
            ninsns += rr->ntrace;
            char what[512];
            int d = compare(c, ru, "unicorn", rr, "runtime", what, sizeof what);
            const char *verdict = NULL;
            char nwhat[512] = "";
            int unicorn_wrong = 0;
            if (c->native_ok && native_run(c, rn) == 0) {
                char w1[512], w2[512];
                native_runs++;
                cmp_native = 1;
                int dn = compare(c, rn, "cpu", rr, "runtime", w1, sizeof w1);
                int du = compare(c, rn, "cpu", ru, "unicorn", w2, sizeof w2);
                cmp_native = 0;
                if (dn) {
                    verdict = du ? "the host CPU disagrees with both"
                                 : "the host CPU agrees with Unicorn, not the runtime";
                    snprintf(nwhat, sizeof nwhat, "%s", w1);
                    if (!d) {
                        d = 1;
                        snprintf(what, sizeof what, "%s", w1);
                    }
                } else if (d) {
                    verdict = "the host CPU agrees with the runtime: Unicorn is wrong";
                    snprintf(nwhat, sizeof nwhat, "%s", w2);
                    unicorn_wrong = 1;
                }
            }
            if (unicorn_wrong) {
                uc_wrong++;
                if (opt.verbose || uc_wrong <= opt.max_report) {
                    printf("UNICORN-ONLY mode=%s seed=%llu case=%llu: %s\n",
                           dmode_name(m), (unsigned long long)opt.seed,
                           (unsigned long long)idx, what);
                    if (opt.verbose)
                        print_case(c, rr);
                }
                continue;
            }
            if (!d) {
                unsigned n = rr->ntrace < TRACE_MAX ? rr->ntrace : TRACE_MAX;
                for (unsigned t = 0; t < n; t++) {
                    int k = dcase_insn_at(c, rr->trace[t]);
                    if (k >= 0)
                        exec_cov[m][c->insn[k].op][width_index(c->insn[k].bits)]++;
                    if (k >= 0 && (c->insn[k].flags & GI_VMFAIL))
                        vmfail_ok[m]++;
                }
                int ks = dcase_insn_at(c, rr->rip);
                if (ks >= 0 && (c->insn[ks].flags & GI_STOP))
                    declined_ok[m][c->insn[ks].op]++;
                if (opt.verbose && opt.one_case >= 0) {
                    printf("case %llu agrees\n", (unsigned long long)idx);
                    print_case(c, rr);
                    print_result("unicorn", c, ru);
                    print_result("runtime", c, rr);
                }
                continue;
            }
            bad++;
            if (bad <= opt.max_report || opt.verbose) {
                printf("MISMATCH mode=%s seed=%llu case=%llu\n", dmode_name(m),
                       (unsigned long long)opt.seed, (unsigned long long)idx);
                printf("  reproduce: lc-diff --mode %s --seed %llu --case %llu "
                       "--groups %u%s --verbose\n", dmode_name(m),
                       (unsigned long long)opt.seed, (unsigned long long)idx,
                       opt.groups, opt.native ? " --native" : "");
                printf("  first difference: %s\n", what);
                if (verdict)
                    printf("  native check: %s%s%s\n", verdict,
                           nwhat[0] ? ": " : "", nwhat);
                print_case(c, rr);
                print_result("unicorn", c, ru);
                print_result("runtime", c, rr);
            }
        }
        double dt = diff_now() - t0;
        diff_progress_end(&pg, ncases, bad);
        printf("mode %-6s: %llu sequences, %llu instructions executed, "
               "%llu mismatches (%.1f s)\n", dmode_name(m),
               (unsigned long long)ncases, (unsigned long long)ninsns,
               (unsigned long long)bad, dt);
        if (native_runs)
            printf("  native: %llu cases also run on the host CPU; %llu where "
                   "only Unicorn was wrong (not counted as mismatches)\n",
                   (unsigned long long)native_runs,
                   (unsigned long long)uc_wrong);
        print_coverage(m);
        total_bad += bad;
        ucs_close(u);
    }
    free(c);
    free(ru);
    free(rr);
    free(rn);
    return total_bad || total_setup_err ? 1 : 0;
}
