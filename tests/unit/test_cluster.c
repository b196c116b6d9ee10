/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_cluster.c: cluster formation and running (translator/),
 * on the paper's examples: each forms the cluster the paper describes and,
 * run against the fake VMM, does the exits the paper counts.
 */
#include <string.h>

#include "../../examples/paper/paper_examples.h"
#include "../../translator/translator.h"
#include "../../translator/form.h"
#include "../../runtime/alu.h"
#include "fakevm.h"
#include "harness.h"

/* The exit-tracking stand-in: instructions at the listed RIPs exit. */
typedef struct predictor {
    uint64_t rip[16];
    unsigned n;
} predictor;

static uint8_t predict(void *ctx, uint64_t rip, const lcd_insn *d)
{
    const predictor *p = ctx;
    (void)d;
    for (unsigned i = 0; i < p->n; i++)
        if (p->rip[i] == rip)
            return 2;
    return 0;
}

static lcx_cluster cl;   /* large: keep it off the stack */

static lc_status form(const char *name, uint64_t rip, const lc_config *cfg,
                      predictor *p)
{
    const paper_example *ex = paper_example_find(name);
    uint8_t buf[512];
    size_t n;

    ck_assert_msg(ex != NULL, "no paper example %s", name);
    n = paper_example_bytes(ex, buf, sizeof buf);
    lcx_form_in in = {
        .cfg = cfg, .mode = ex->mode, .rip = rip, .code = buf, .code_len = n,
        .predict = p ? predict : NULL, .predict_ctx = p,
    };
    return lcx_form(&in, &cl);
}

static void expect(const char *name, lc_cflow_method m, unsigned ninsn,
                   unsigned nexits)
{
    lc_config c;
    lc_config_init(&c);
    c.cflow = m;
    ck_assert_int_eq(form(name, 0x1000, &c, NULL), LC_OK);
    ck_assert_msg(cl.ninsn == ninsn, "%s: %u instructions, want %u", name,
                  cl.ninsn, ninsn);
    ck_assert_msg(cl.nexits == nexits, "%s: %u exits, want %u", name,
                  cl.nexits, nexits);
}

/* Section 4: "the optimal translation covers the first nine instructions
 * but omits the last three". */
START_TEST(static_clusters)
{
    expect("bios-pci", LC_CFLOW_M3, 9, 3);
    ck_assert_uint_eq(cl.end_rip - cl.rip, 0x12);
    expect("out80", LC_CFLOW_M3, 8, 6);
    expect("passmark-dr", LC_CFLOW_M3, 6, 4);   /* two memory gap fillers */
    expect("hyperv-vmread", LC_CFLOW_M3, 5, 3);
    expect("vmware-vmread", LC_CFLOW_M3, 13, 9);
}
END_TEST

/* Section 5: with the table predicting the four stores, the cluster
 * covers them and excludes the last (non-exiting) instruction. Without a
 * prediction only the exiting instruction is translated. */
START_TEST(dynamic_cluster)
{
    lc_config c;
    predictor p = { { 0x1015, 0x102f, 0x1044 }, 3 };

    lc_config_init(&c);
    ck_assert_int_eq(form("sles-weak", 0x1000, &c, &p), LC_OK);
    ck_assert_uint_eq(cl.ninsn, 14);
    ck_assert_uint_eq(cl.nexits, 4);
    ck_assert_uint_eq(cl.end_rip, 0x104a);
    ck_assert_uint_eq(cl.insn[13].props, 2);
    ck_assert_int_eq(form("sles-weak", 0x1000, &c, NULL), LC_OK);
    ck_assert_uint_eq(cl.ninsn, 1);
    c.techniques &= ~LC_TECH_DYNAMIC;
    ck_assert_int_eq(form("sles-weak", 0x1000, &c, &p), LC_OK);
    ck_assert_uint_eq(cl.ninsn, 1);
}
END_TEST

/* Section 4: at most four memory-accessing gap fillers between exits
 * that each walk the page tables (here: five different base registers). */
START_TEST(memory_gap_cap)
{
    lc_config c;
    /* out 0x80,al; mov eax,[ebx]/[esi]/[edi]/[ecx]/[edx]; out 0x80,al */
    const uint8_t code[] = { 0xe6, 0x80, 0x8b, 0x03, 0x8b, 0x06, 0x8b, 0x07,
                             0x8b, 0x01, 0x8b, 0x02, 0xe6, 0x80 };
    lcx_form_in in = { .cfg = &c, .mode = LC_MODE_PROT32, .rip = 0x1000,
                       .code = code, .code_len = sizeof code };

    lc_config_init(&c);
    ck_assert_int_eq(lcx_form(&in, &cl), LC_OK);
    ck_assert_uint_eq(cl.ninsn, 1);
    c.max_mem_gap_fillers = 5;
    ck_assert_int_eq(lcx_form(&in, &cl), LC_OK);
    ck_assert_uint_eq(cl.ninsn, 7);
    ck_assert_uint_eq(cl.nexits, 2);
    /* The window bounds it too. */
    c.max_cluster_insns = 6;
    ck_assert_int_eq(lcx_form(&in, &cl), LC_OK);
    ck_assert_uint_eq(cl.ninsn, 1);
}
END_TEST

/* Section 11: accesses that will find their page in the run's page-walk
 * cache (the same register, near the same address) cost half a walk, so
 * one walk and six of them fit the default cap; seven do not. */
START_TEST(memory_gap_cap_cached)
{
    lc_config c;
    /* out 0x80,al; mov eax,[ebx] x5 (then x8); out 0x80,al */
    uint8_t code[2 + 8 * 3 + 2];
    size_t n = 0;
    lcx_form_in in = { .cfg = &c, .mode = LC_MODE_PROT32, .rip = 0x1000,
                       .code = code };

    code[n++] = 0xe6; code[n++] = 0x80;
    for (unsigned i = 0; i < 5; i++) {
        code[n++] = 0x8b; code[n++] = 0x43; code[n++] = (uint8_t)(4 * i);
    }
    code[n++] = 0xe6; code[n++] = 0x80;
    in.code_len = n;
    lc_config_init(&c);
    ck_assert_int_eq(lcx_form(&in, &cl), LC_OK);
    ck_assert_uint_eq(cl.ninsn, 7);
    ck_assert_uint_eq(cl.nexits, 2);

    n = 2;
    for (unsigned i = 0; i < 8; i++) {
        code[n++] = 0x8b; code[n++] = 0x43; code[n++] = (uint8_t)(4 * i);
    }
    code[n++] = 0xe6; code[n++] = 0x80;
    in.code_len = n;
    ck_assert_int_eq(lcx_form(&in, &cl), LC_OK);
    ck_assert_uint_eq(cl.ninsn, 1);
    /* the paper's cap alone (0) still allows none */
    c.max_mem_gap_fillers = 0;
    in.code_len = 2 + 3 + 2;
    code[5] = 0xe6; code[6] = 0x80;
    ck_assert_int_eq(lcx_form(&in, &cl), LC_OK);
    ck_assert_uint_eq(cl.ninsn, 1);
}
END_TEST

/* Section 11's cost/benefit model: with the exit cost the VMM measured
 * (lc_config.exit_cost_ns), the cap keeps the paper's ratio, four walks
 * per 0.9 us of exit; an exit cheaper than the paper's keeps the cap. */
START_TEST(memory_gap_cap_scales_with_exit_cost)
{
    lc_config c;
    /* out 0x80,al; mov eax,[ebx]/[esi]/[edi]/[ecx]/[edx]; out 0x80,al */
    const uint8_t code[] = { 0xe6, 0x80, 0x8b, 0x03, 0x8b, 0x06, 0x8b, 0x07,
                             0x8b, 0x01, 0x8b, 0x02, 0xe6, 0x80 };
    lcx_form_in in = { .cfg = &c, .mode = LC_MODE_PROT32, .rip = 0x1000,
                       .code = code, .code_len = sizeof code };

    lc_config_init(&c);
    ck_assert_uint_eq(c.exit_cost_ns, 0);
    c.exit_cost_ns = 500;                   /* cheaper than the paper's */
    ck_assert_int_eq(lcx_form(&in, &cl), LC_OK);
    ck_assert_uint_eq(cl.ninsn, 1);
    c.exit_cost_ns = 1000;                  /* 4.4 walks: still four */
    ck_assert_int_eq(lcx_form(&in, &cl), LC_OK);
    ck_assert_uint_eq(cl.ninsn, 1);
    c.exit_cost_ns = 1125;                  /* five walks */
    ck_assert_int_eq(lcx_form(&in, &cl), LC_OK);
    ck_assert_uint_eq(cl.ninsn, 7);
    ck_assert_uint_eq(cl.nexits, 2);
    /* the window binds before the cap: a window of 6 at the paper's exit
     * cost (scaled: window_scales_with_exit_cost) */
    c.exit_cost_ns = 900;
    c.max_mem_gap_fillers = 8;
    c.max_cluster_insns = 6;
    ck_assert_int_eq(lcx_form(&in, &cl), LC_OK);
    ck_assert_uint_eq(cl.ninsn, 1);
    /* a cap of 0 (no memory gap fillers) stays 0 at any exit cost */
    c.max_cluster_insns = 16;
    c.max_mem_gap_fillers = 0;
    c.exit_cost_ns = UINT32_MAX;
    ck_assert_int_eq(lcx_form(&in, &cl), LC_OK);
    ck_assert_uint_eq(cl.ninsn, 1);
    /* no overflow at the largest cap and cost */
    c.max_mem_gap_fillers = UINT32_MAX;
    ck_assert_int_eq(lcx_form(&in, &cl), LC_OK);
    ck_assert_uint_eq(cl.ninsn, 7);
}
END_TEST

/* The window scales as the cap does (form_static.c, lcx_window()):
 * max_cluster_insns instructions per 0.9 us of exit, never fewer than
 * configured, at most LCX_MAX_INSNS. Two OUTs 20 instructions apart. */
START_TEST(window_scales_with_exit_cost)
{
    lc_config c;
    uint8_t code[64];
    size_t n = 0;
    lcx_form_in in = { .cfg = &c, .mode = LC_MODE_PROT32, .rip = 0x1000,
                       .code = code };

    code[n++] = 0xe6; code[n++] = 0x80;             /* out 0x80, al */
    for (unsigned i = 0; i < 19; i++) {
        code[n++] = 0x01; code[n++] = 0xc8;         /* add eax, ecx */
    }
    code[n++] = 0xe6; code[n++] = 0x80;
    in.code_len = n;

    lc_config_init(&c);
    ck_assert_uint_eq(lcx_window(&c), 16);          /* the paper's */
    ck_assert_int_eq(lcx_form(&in, &cl), LC_OK);
    ck_assert_uint_eq(cl.ninsn, 1);
    c.exit_cost_ns = 500;                           /* cheaper: still 16 */
    ck_assert_uint_eq(lcx_window(&c), 16);
    c.exit_cost_ns = 1125;                          /* 20 */
    ck_assert_uint_eq(lcx_window(&c), 20);
    ck_assert_int_eq(lcx_form(&in, &cl), LC_OK);
    ck_assert_uint_eq(cl.ninsn, 1);                 /* the OUT is the 21st */
    c.exit_cost_ns = 1200;                          /* 21 */
    ck_assert_int_eq(lcx_form(&in, &cl), LC_OK);
    ck_assert_uint_eq(cl.ninsn, 21);
    ck_assert_uint_eq(cl.nexits, 2);
    c.exit_cost_ns = 9000;                          /* KVM here: the cap */
    ck_assert_uint_eq(lcx_window(&c), LCX_MAX_INSNS);
    c.exit_cost_ns = UINT32_MAX;                    /* no overflow */
    ck_assert_uint_eq(lcx_window(&c), LCX_MAX_INSNS);
    c.max_cluster_insns = 1;                        /* configured 1: 10 */
    c.exit_cost_ns = 9000;
    ck_assert_uint_eq(lcx_window(&c), 10);
    c.max_cluster_insns = 32;                       /* never past the cap */
    ck_assert_uint_eq(lcx_window(&c), LCX_MAX_INSNS);
    c.exit_cost_ns = 0;
    ck_assert_uint_eq(lcx_window(&c), 32);
}
END_TEST

/* Section 6: the forward-branch example under each method. */
START_TEST(control_flow_methods)
{
    expect("fwd-branch", LC_CFLOW_NONE, 1, 1);   /* ends before the JNZ */
    expect("fwd-branch", LC_CFLOW_M1, 7, 2);
    ck_assert_uint_eq(cl.insn[3].target, LCX_NO_TARGET);
    expect("fwd-branch", LC_CFLOW_M2, 7, 2);
    ck_assert_uint_eq(cl.insn[3].target, 5);     /* JNZ -> MOV cx,0xff */
    /* Section 6.3: two polling loops with strong backedges. */
    expect("poll-loops", LC_CFLOW_M3, 14, 5);
    ck_assert_uint_eq(cl.insn[2].backedge, LCX_BE_STRONG);
    ck_assert_uint_eq(cl.insn[2].target, 0);
    ck_assert_uint_eq(cl.insn[5].backedge, LCX_BE_STRONG);
    ck_assert_uint_eq(cl.insn[5].target, 3);
    ck_assert(cl.insn[0].irq_check && cl.insn[3].irq_check);
    expect("poll-loops", LC_CFLOW_M2, 14, 5);
    ck_assert_uint_eq(cl.insn[2].backedge, LCX_BE_NONE);
    /* Windows 7: a single exiting store and a weak backedge to it; the
     * cluster ends in the backedge. */
    expect("win7-loop", LC_CFLOW_M3, 4, 1);
    ck_assert_uint_eq(cl.insn[3].backedge, LCX_BE_WEAK);
    expect("win7-loop", LC_CFLOW_M2, 1, 1);
}
END_TEST

/* An `if (!status) return;` between two exits (Linux's e1000_intr: ICR
 * read, return IRQ_NONE if zero, IMC write): the window goes on at the
 * target of the branch over the RET (methods 2 and 3), and the memory gap
 * count on the taken path leaves the RET's stack read out. */
/* Four different base registers: each access is expected to walk (no
 * page-walk cache hit, form_static.c gap_cost), so each counts fully
 * against the memory gap cap. */
static const uint8_t skip_ret[] = {
    0xec,               /* 0x1000 in al,dx */
    0x8b, 0x0b,         /* 0x1001 mov ecx,[ebx]   gap 1 */
    0x8b, 0x0e,         /* 0x1003 mov ecx,[esi]   gap 2 */
    0x84, 0xc0,         /* 0x1005 test al,al */
    0x75, 0x01,         /* 0x1007 jnz 0x100a */
    0xc3,               /* 0x1009 ret             (gap 3 on this path) */
    0x8b, 0x0f,         /* 0x100a mov ecx,[edi]   gap 3 */
    0x8b, 0x08,         /* 0x100c mov ecx,[eax]   gap 4 */
    0xee,               /* 0x100e out dx,al */
};

START_TEST(branch_over_return)
{
    lc_config c;
    lcx_form_in in = { .cfg = &c, .mode = LC_MODE_PROT32, .rip = 0x1000,
                       .code = skip_ret, .code_len = sizeof skip_ret };

    lc_config_init(&c);
    for (int m = LC_CFLOW_M2; m <= LC_CFLOW_M3; m++) {
        c.cflow = (lc_cflow_method)m;
        ck_assert_int_eq(lcx_form(&in, &cl), LC_OK);
        /* The RET is the fall-through path's: no exit follows it there,
         * so the walk keeps that path only up to its last instruction
         * that may exit (calls.c lcx_trace_end): the RET is left out. */
        ck_assert_uint_eq(cl.ninsn, 8);
        ck_assert_uint_eq(cl.nexits, 2);
        ck_assert_uint_eq(cl.insn[5].rip, 0x100a); /* JNZ's target next */
        ck_assert_uint_eq(cl.end_rip, 0x100f);
    }
    /* Method 1 leaves the cluster on the taken branch: nothing beyond
     * the RET is worth decoding. */
    c.cflow = LC_CFLOW_M1;
    ck_assert_int_eq(lcx_form(&in, &cl), LC_OK);
    ck_assert_uint_eq(cl.ninsn, 1);
    /* One more memory gap filler on the taken path is over the cap. */
    c.cflow = LC_CFLOW_M3;
    c.max_mem_gap_fillers = 3;
    ck_assert_int_eq(lcx_form(&in, &cl), LC_OK);
    ck_assert_uint_eq(cl.ninsn, 1);
}
END_TEST

/* Both paths at run time: status 0 leaves the cluster at the RET (the
 * guest runs it), status non-zero reaches the OUT. */
START_TEST(run_branch_over_return)
{
    lc_config c;
    lcx_form_in in = { .cfg = &c, .mode = LC_MODE_PROT32, .rip = 0x7000,
                       .code = skip_ret, .code_len = sizeof skip_ret };

    lc_config_init(&c);
    ck_assert_int_eq(lcx_form(&in, &cl), LC_OK);
    for (uint32_t status = 0; status < 2; status++) {
        fvm f; lc_cpu_state s; lcr_vcpu v;
        uint32_t ret_to = 0x7400;

        fvm_init(&f);
        fvm_state_prot32(&s, 0);
        memcpy(f.ram + 0x7000, skip_ret, sizeof skip_ret);
        memcpy(f.ram + 0x8000, &ret_to, 4);
        s.gpr[LC_RSP] = 0x8000;
        s.gpr[LC_RBX] = 0x9000;
        s.rip = 0x7000;
        f.nin_seq = 1;
        f.in_seq[0] = status;
        memset(&v, 0, sizeof v);
        v.insn_budget = 10000;
        v.rep_budget = 100;
        lcr_begin(&v, &s, &fvm_ops, &f);
        ck_assert_int_eq(lcx_run(&cl, &v, 10, 0), LC_STOP_END);
        if (status == 0) {
            ck_assert_uint_eq(v.exits_done, 1);
            ck_assert_uint_eq(s.rip, 0x7009);
            ck_assert_uint_eq(s.gpr[LC_RSP], 0x8000);
        } else {
            ck_assert_uint_eq(v.exits_done, 2);
            ck_assert_uint_eq(v.insns, 8);
            ck_assert_uint_eq(s.rip, 0x700f);
            ck_assert_uint_eq(s.gpr[LC_RSP], 0x8000);
        }
        fvm_fini(&f);
    }
}
END_TEST

/* Section 3: pairs, with static clusters off (pairs alone) and on. */
START_TEST(exit_pairs)
{
    lc_config c;
    lcd_insn a, b;
    const uint8_t hi[] = { 0x89, 0x71, 0x04 }, lo[] = { 0x89, 0x19 };
    const uint8_t far[] = { 0x89, 0x71, 0x08 }, other[] = { 0x89, 0x1a };
    const uint8_t r1[] = { 0x89, 0x05, 0x00, 0x10, 0x00, 0x00 };  /* [rip+0x1000] */
    const uint8_t r2[] = { 0x89, 0x05, 0xfe, 0x0f, 0x00, 0x00 };  /* next dword */

    lc_config_init(&c);
    c.techniques = LC_TECH_SINGLE | LC_TECH_PAIRS;
    ck_assert_int_eq(form("pae-pte-pair", 0x1000, &c, NULL), LC_OK);
    ck_assert_uint_eq(cl.ninsn, 2);
    ck_assert(cl.pair);
    c.techniques = LC_TECH_SINGLE;
    ck_assert_int_eq(form("pae-pte-pair", 0x1000, &c, NULL), LC_OK);
    ck_assert_uint_eq(cl.ninsn, 1);

    lcd_decode(LC_MODE_PROT32, hi, sizeof hi, &a);
    lcd_decode(LC_MODE_PROT32, lo, sizeof lo, &b);
    ck_assert(lcx_is_pair(&a, &b));
    lcd_decode(LC_MODE_PROT32, far, sizeof far, &a);
    ck_assert(!lcx_is_pair(&a, &b));
    lcd_decode(LC_MODE_PROT32, other, sizeof other, &a);
    ck_assert(!lcx_is_pair(&a, &b));                 /* [edx] vs [ecx] */
    lcd_decode(LC_MODE_LONG64, r1, sizeof r1, &a);
    lcd_decode(LC_MODE_LONG64, r2, sizeof r2, &b);
    ck_assert(lcx_is_pair(&a, &b));                  /* RIP-relative */
}
END_TEST

/* ---- running clusters -------------------------------------------------- */

/* A VMM that refuses 8-byte traced writes and takes narrower ones. */
static lc_cb_result refuse_wide(fvm *f, fvm_access *a)
{
    (void)f;
    return a->kind == 't' && a->size == 8 ? LC_CB_STOP : LC_CB_OK;
}

/* Section 3, the double-width delivery (translator/pair.c): the PAE pair
 * runs as one naturally aligned 8-byte store when the VMM takes that
 * width; it does nothing (the caller runs the stores one by one) when the
 * VMM does not, when the addresses turn out misaligned at run time, or
 * when the VMM refuses the merged store (LC_CB_STOP: it may take the
 * halves; found by lc-diff --engine's refused MMIO, --mode pae --seed
 * 391131 --case 9113). */
START_TEST(pair_delivery)
{
    fvm f; lc_cpu_state s; lcr_vcpu v; lc_config c;
    lc_vm_ops ops = fvm_ops;
    lc_stop_reason why = LC_STOP_NONE;
    uint64_t q = 0;
    int done = 0;

    lc_config_init(&c);
    c.techniques = LC_TECH_SINGLE | LC_TECH_PAIRS;
    ck_assert_int_eq(form("pae-pte-pair", 0x7000, &c, NULL), LC_OK);
    ck_assert(cl.pair);
    fvm_init(&f);
    fvm_load_example(&f, "pae-pte-pair", 0x7000);
    fvm_state_prot32(&s, 0);
    s.rip = 0x7000;
    s.gpr[LC_RSI] = 0x80000000;         /* top half: NX */
    s.gpr[LC_RBX] = 0x12345067;         /* bottom half */
    for (int k = 0; k < 4; k++) {
        /* k 0: the VMM takes no 8-byte access; 1: misaligned; 2: the
         * page traced, the VMM refusing the merged store; 3: merged */
        ops.accepts_wide = k ? LC_WIDE_8 : 0;
        s.gpr[LC_RCX] = k == 1 ? 0x5000c : 0x50008;
        f.traced_gfn = k == 2 ? 0x50 : FVM_NONE;
        f.device = k == 2 ? refuse_wide : NULL;
        memset(&v, 0, sizeof v);
        v.insn_budget = 100;
        v.rep_budget = 1;
        lcr_begin(&v, &s, &ops, &f);
        if (k < 3) {
            ck_assert_int_eq(lcx_pair_run(&cl, &v, &done, &why), -1);
            ck_assert_uint_eq(s.rip, 0x7000);
            ck_assert_uint_eq(v.insns, 0);
            ck_assert_int_eq(v.stop, LC_STOP_NONE);
            ck_assert_uint_eq(v.exits_done, 0);
            memcpy(&q, f.ram + 0x50008, 8);
            ck_assert_uint_eq(q, 0);
            continue;
        }
        ck_assert_int_eq(lcx_pair_run(&cl, &v, &done, &why), 0);
        ck_assert(done);                /* the cluster is just the pair */
        ck_assert_int_eq(why, LC_STOP_END);
        ck_assert_uint_eq(s.rip, 0x7005);
        ck_assert_uint_eq(v.insns, 2);
        ck_assert_uint_eq(v.exits_done, 2);
    }
    memcpy(&q, f.ram + 0x50008, 8);
    ck_assert_uint_eq(q, 0x8000000012345067ull);
    memcpy(&q, f.ram + 0x50010, 8);
    ck_assert_uint_eq(q, 0);            /* the misaligned try wrote nothing */
    fvm_fini(&f);
}
END_TEST

static void prepare(fvm *f, lc_cpu_state *s, lcr_vcpu *v, const char *name,
                    uint64_t at)
{
    const paper_example *ex = paper_example_find(name);
    uint8_t buf[512];
    size_t n;

    ck_assert_msg(ex != NULL, "no paper example %s", name);
    n = paper_example_bytes(ex, buf, sizeof buf);
    lc_config c;
    lcx_form_in in = { .cfg = &c, .mode = ex->mode, .rip = at, .code = buf,
                       .code_len = n };

    memcpy(f->ram + at, buf, n);
    lc_config_init(&c);
    ck_assert_int_eq(lcx_form(&in, &cl), LC_OK);
    s->rip = at;
    memset(v, 0, sizeof *v);
    v->insn_budget = 10000;
    v->rep_budget = 100;
    lcr_begin(v, s, &fvm_ops, f);
}

/* The BIOS cluster: one exit does three (saves two of three). */
START_TEST(run_bios)
{
    fvm f; lc_cpu_state s; lcr_vcpu v;

    fvm_init(&f);
    fvm_state_real(&s);
    s.gpr[LC_RDX] = 0xcf8;
    prepare(&f, &s, &v, "bios-pci", 0x7000);
    ck_assert_int_eq(lcx_run(&cl, &v, 10, 0), LC_STOP_END);
    ck_assert_uint_eq(v.insns, 9);
    ck_assert_uint_eq(v.exits_done, 3);
    ck_assert_uint_eq(s.rip, 0x7012);
    fvm_fini(&f);
}
END_TEST

/* The polling loops spin while the device says busy (bit 3), then fall
 * through to the OUTs; interrupts are checked on each iteration. */
START_TEST(run_poll_loops)
{
    fvm f; lc_cpu_state s; lcr_vcpu v;

    fvm_init(&f);
    fvm_state_prot32(&s, 0);
    s.gpr[LC_RSP] = 0x8000;
    f.nin_seq = 6;
    memcpy(f.in_seq, (uint32_t[]){ 8, 8, 0, 8, 0, 0 }, 6 * sizeof(uint32_t));
    prepare(&f, &s, &v, "poll-loops", 0x7000);
    ck_assert_int_eq(lcx_run(&cl, &v, 10, 0), LC_STOP_END);
    ck_assert_uint_eq(v.exits_done, 5 + 3);   /* 5 INs, 3 OUTs */
    ck_assert_uint_eq(s.rip, cl.end_rip);
    /* A pending interrupt stops the loop at its head, before the IN. */
    f.in_pos = 0;
    s.rflags |= LC_RFLAGS_IF;
    f.irq = 1;
    prepare(&f, &s, &v, "poll-loops", 0x7000);
    ck_assert_int_eq(lcx_run(&cl, &v, 10, 0), LC_STOP_IRQ);
    ck_assert_uint_eq(s.rip, 0x7000);
    ck_assert_uint_eq(v.insns, 3);
    fvm_fini(&f);
}
END_TEST

/* Windows 7: the weak backedge is taken at most weak_backedge_cap times
 * per run (s6.3), then the run stops with the guest at the loop head. */
START_TEST(run_weak_backedge_cap)
{
    fvm f; lc_cpu_state s; lcr_vcpu v;

    fvm_init(&f);
    fvm_state_long64(&f, &s);
    f.traced_gfn = 0x250;
    s.gpr[LC_RCX] = 0x250000;
    s.gpr[LC_R9] = 100;
    prepare(&f, &s, &v, "win7-loop", 0x200000);
    ck_assert_int_eq(lcx_run(&cl, &v, 10, 0), LC_STOP_BACKEDGES);
    ck_assert_uint_eq(v.insns, 44);
    ck_assert_uint_eq(v.exits_done, 11);
    ck_assert_uint_eq(s.rip, 0x200000);
    ck_assert_uint_eq(s.gpr[LC_R9], 89);
    /* With 5 iterations left it runs to the end. */
    s.gpr[LC_R9] = 5;
    prepare(&f, &s, &v, "win7-loop", 0x200000);
    ck_assert_int_eq(lcx_run(&cl, &v, 10, 0), LC_STOP_END);
    ck_assert_uint_eq(v.exits_done, 5);
    ck_assert_uint_eq(s.rip, cl.end_rip);
    fvm_fini(&f);
}
END_TEST

/* The inline path for specialized gap fillers must agree with the
 * runtime's generic path (which tests/diff proves against Unicorn): each
 * encoding sits between two OUTs, runs once as a cluster (inline) and once
 * stepped by the runtime, from the same random states. */
static const char *const fast_cases[] = {
    "48 01 c8", "01 c8", "66 01 c8", "00 c8", "4d 11 c8", "29 d3",
    "48 19 f7", "21 c0", "09 d2", "31 f6", "48 39 c8", "85 c0", "48 85 db",
    "83 c0 7f", "48 83 e8 80", "48 81 f1 ff ff ff 7f", "66 25 34 12",
    "24 0f", "a8 01", "48 a9 00 00 00 80", "66 83 d0 ff", "80 db 01",
    "89 c8", "48 89 c8", "66 89 c8", "88 c8", "40 88 f7", "b8 78 56 34 12",
    "48 c7 c0 ff ff ff ff", "48 b8 88 77 66 55 44 33 22 11", "45 31 ff",
    "66 b9 ff ff", "b1 80", "45 38 c1", "41 84 c0",
};

START_TEST(fast_path_matches_runtime)
{
    fvm f;
    uint64_t seed = 0x1234567 + (uint64_t)_i;
    uint8_t code[32] = { 0xe6, 0x80 };
    size_t n = 2 + lc_test_hex(fast_cases[_i], code + 2, 20);
    lc_config c;
    lcx_form_in in = { .cfg = &c, .mode = LC_MODE_LONG64, .rip = 0x100000,
                       .code = code };

    code[n++] = 0xe6;
    code[n++] = 0x80;
    in.code_len = n;
    lc_config_init(&c);
    fvm_init(&f);
    memcpy(f.ram + 0x100000, code, n);
    ck_assert_int_eq(lcx_form(&in, &cl), LC_OK);
    ck_assert_uint_eq(cl.ninsn, 3);
    ck_assert_msg(cl.insn[1].fast.kind != LCR_FAST_NONE, "%s not specialized",
                  fast_cases[_i]);
    for (int k = 0; k < 400; k++) {
        lc_cpu_state a, b;
        lcr_vcpu va, vb;
        lcd_insn d;

        fvm_state_long64(&f, &a);
        for (int g = 0; g < 16; g++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            a.gpr[g] = (k & 3) == 0 ? seed >> 60 : seed ^ (seed >> 29);
        }
        a.rflags = 0x2 | ((seed >> 7) & LCR_FL_STATUS);
        a.rip = 0x100000;
        b = a;
        memset(&va, 0, sizeof va);
        va.insn_budget = 10;
        va.rep_budget = 1;
        vb = va;
        lcr_begin(&va, &a, &fvm_ops, &f);
        lcr_begin(&vb, &b, &fvm_ops, &f);
        ck_assert_int_eq(lcx_run(&cl, &va, 10, 0), LC_STOP_END);
        for (int i = 0; i < 3; i++)
            ck_assert_int_eq(lcr_step(&vb, &d), LCR_DONE);
        ck_assert_msg(!memcmp(&a, &b, sizeof a),
                      "%s: inline and runtime disagree (state %d)",
                      fast_cases[_i], k);
        ck_assert_uint_eq(va.insns, vb.insns);
    }
    fvm_fini(&f);
}
END_TEST

/* Chains of inline gap fillers with lazy flags: ALU after ALU, ADC/SBB
 * needing CF, MOV between (no flags), SETcc/Jcc reading the flags through
 * the runtime. 300 random chains, each from 50 random states. */
START_TEST(fast_chains_match_runtime)
{
    static const char *const readers[] = { "0f 92 c1", "72 00", "0f 94 c2",
                                           "7c 00", "0f 9a c3" };
    uint64_t seed = 0x9e3779b97f4a7c15ull;
    fvm f;
    lc_config c;

    lc_config_init(&c);
    fvm_init(&f);
    for (int chain = 0; chain < 300; chain++) {
        uint8_t code[128] = { 0xe6, 0x80 };
        size_t n = 2;
        unsigned k;
        lcx_form_in in = { .cfg = &c, .mode = LC_MODE_LONG64,
                           .rip = 0x100000, .code = code };

        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        k = 2 + (unsigned)(seed >> 60) % 5;
        for (unsigned j = 0; j < k; j++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            n += lc_test_hex(fast_cases[(seed >> 33) % (sizeof fast_cases /
                                                        sizeof fast_cases[0])],
                             code + n, 20);
        }
        if (seed & 1)
            n += lc_test_hex(readers[(seed >> 20) % 5], code + n, 8);
        code[n++] = 0xe6;
        code[n++] = 0x80;
        in.code_len = n;
        memcpy(f.ram + 0x100000, code, n);
        ck_assert_int_eq(lcx_form(&in, &cl), LC_OK);
        for (int k2 = 0; k2 < 50; k2++) {
            lc_cpu_state a, b;
            lcr_vcpu va, vb;
            lcd_insn d;

            fvm_state_long64(&f, &a);
            for (int g = 0; g < 16; g++) {
                seed = seed * 6364136223846793005ull + 1442695040888963407ull;
                a.gpr[g] = (k2 & 3) == 0 ? seed >> 61 : seed ^ (seed >> 29);
            }
            a.rflags = 0x2 | ((seed >> 7) & LCR_FL_STATUS);
            a.rip = 0x100000;
            b = a;
            memset(&va, 0, sizeof va);
            va.insn_budget = 100;
            va.rep_budget = 1;
            vb = va;
            lcr_begin(&va, &a, &fvm_ops, &f);
            lcr_begin(&vb, &b, &fvm_ops, &f);
            ck_assert_int_eq(lcx_run(&cl, &va, 10, 0), LC_STOP_END);
            while (b.rip != cl.end_rip)
                ck_assert_int_eq(lcr_step(&vb, &d), LCR_DONE);
            ck_assert_msg(!memcmp(&a, &b, sizeof a),
                          "chain %d state %d: inline and runtime disagree",
                          chain, k2);
        }
    }
    fvm_fini(&f);
}
END_TEST

/* ---- the walk beyond one straight line (translator/calls.c, cflow.c) ---- */

static lcx_code xcode;

/* Lay `code` at guest 0x7000 (32-bit flat, CPL 0), start the run context
 * at `at` and form there as the engine does: with the run context, so
 * code outside the first range can be fetched. */
static lc_status form_at(fvm *f, lc_cpu_state *s, lcr_vcpu *v,
                         const lc_config *c, const uint8_t *code, size_t len,
                         uint64_t at)
{
    memcpy(f->ram + 0x7000, code, len);
    s->rip = at;
    memset(v, 0, sizeof *v);
    v->insn_budget = 10000;
    v->rep_budget = 100;
    lcr_begin(v, s, &fvm_ops, f);
    lcx_form_in in = { .cfg = c, .mode = LC_MODE_PROT32, .rip = at,
                       .code = f->ram + at, .code_len = 0x7000 + len - at,
                       .v = v, .extra = &xcode };
    return lcx_form(&in, &cl);
}

/* A poll whose exit test comes before the port read, entered at its IN
 * (the loop head lies before the exit):
 *   7000 1: dec ecx          7006    jnz 1b
 *   7001    jz 2f            7008    out dx,al
 *   7003    in al,dx         7009 2: out 0x80,al
 *   7004    test al,1        700b    ud2
 * The walk follows the JNZ back to the head, so the cluster holds the
 * loop: in test jnz | dec jz in test jnz(backedge, strong) | out out.
 * Section 6.3's straight run from the head goes past the JZ, which leaves
 * the loop. Before, the JNZ left the cluster: one exit per iteration. */
static const uint8_t poll_first_test[] = {
    0x49, 0x74, 0x06, 0xec, 0xa8, 0x01, 0x75, 0xf8, 0xee, 0xe6, 0x80,
    0x0f, 0x0b,
};

/* A branch that leaves the loop before its exit, to code laid out after
 * the loop that jumps back into it past the head: an iteration can skip
 * the exit every time. Section 6.3's straight run from the head must not
 * go past that branch, so no backedge is strong, and the run stops at the
 * weak-backedge cap instead of spinning to the instruction budget:
 *   7000    out 0x80,al      700a    jnz t1
 *   7002 t1: xor ecx,ecx     700c    out 0x82,al
 *   7004    jz L             700e L: nop
 *   7006    out 0x81,al      700f    jmp t2
 *   7008 t2: or al,1         7011    ud2 */
static const uint8_t loop_reentered[] = {
    0xe6, 0x80, 0x31, 0xc9, 0x74, 0x08, 0xe6, 0x81, 0x0c, 0x01, 0x75, 0xf6,
    0xe6, 0x82, 0x90, 0xeb, 0xf7, 0x0f, 0x0b,
};

START_TEST(loop_reentered_past_exit_is_weak)
{
    fvm f; lc_cpu_state s; lcr_vcpu v; lc_config c;
    lc_stop_reason why;

    fvm_init(&f);
    fvm_state_prot32(&s, 0);
    lc_config_init(&c);
    ck_assert_int_eq(form_at(&f, &s, &v, &c, loop_reentered,
                             sizeof loop_reentered, 0x7000), LC_OK);
    for (unsigned i = 0; i < cl.ninsn; i++)
        ck_assert_msg(cl.insn[i].backedge != LCX_BE_STRONG,
                      "insn %u at %#llx: a strong backedge", i,
                      (unsigned long long)cl.insn[i].rip);
    lcr_begin(&v, &s, &fvm_ops, &f);
    why = lcx_run(&cl, &v, 10, 0);
    ck_assert_msg(v.insns < 200, "%u instructions, stop %s",
                  (unsigned)v.insns, lc_stop_reason_name(why));
    fvm_fini(&f);
}
END_TEST

START_TEST(loop_test_before_read)
{
    fvm f; lc_cpu_state s; lcr_vcpu v; lc_config c;

    fvm_init(&f);
    fvm_state_prot32(&s, 0);
    lc_config_init(&c);
    ck_assert_int_eq(form_at(&f, &s, &v, &c, poll_first_test,
                             sizeof poll_first_test, 0x7003), LC_OK);
    ck_assert_uint_eq(cl.ninsn, 10);
    ck_assert_uint_eq(cl.nexits, 4);
    ck_assert_uint_eq(cl.insn[3].rip, 0x7000);      /* the head, range 1 */
    ck_assert_uint_eq(cl.insn[3].range, 1);
    ck_assert_uint_eq(cl.insn[3].irq_check, 1);
    ck_assert_uint_eq(cl.insn[2].target, 8);        /* not taken: after */
    ck_assert_uint_eq(cl.insn[4].target, 9);        /* timeout */
    ck_assert_uint_eq(cl.insn[7].target, 3);
    ck_assert_uint_eq(cl.insn[7].backedge, LCX_BE_STRONG);
    ck_assert_uint_eq(cl.nrange, 2);

    /* Busy twice, then ready: one run does the three reads and the two
     * OUTs after the loop. */
    s.gpr[LC_RCX] = 5;
    s.gpr[LC_RDX] = 0x1f7;
    f.nin_seq = 3;
    memcpy(f.in_seq, (uint32_t[]){ 1, 1, 0 }, 3 * sizeof(uint32_t));
    lcr_begin(&v, &s, &fvm_ops, &f);
    ck_assert_int_eq(lcx_run(&cl, &v, 10, 0), LC_STOP_END);
    ck_assert_uint_eq(v.exits_done, 5);
    ck_assert_uint_eq(s.gpr[LC_RCX], 3);
    ck_assert_uint_eq(s.rip, 0x700b);

    /* The count runs out: the JZ leaves for the timeout path. */
    s.gpr[LC_RCX] = 1;
    s.rip = 0x7003;
    f.nin_seq = 1;
    f.in_pos = 0;
    f.in_seq[0] = 1;
    lcr_begin(&v, &s, &fvm_ops, &f);
    ck_assert_int_eq(lcx_run(&cl, &v, 10, 0), LC_STOP_END);
    ck_assert_uint_eq(v.exits_done, 2);
    ck_assert_uint_eq(s.gpr[LC_RCX], 0);
    ck_assert_uint_eq(s.rip, 0x700b);

    /* An interrupt stops the loop at its head, before the DEC. */
    s.gpr[LC_RCX] = 5;
    s.rip = 0x7003;
    s.rflags |= LC_RFLAGS_IF;
    f.irq = 1;
    f.in_pos = 0;
    lcr_begin(&v, &s, &fvm_ops, &f);
    ck_assert_int_eq(lcx_run(&cl, &v, 10, 0), LC_STOP_IRQ);
    ck_assert_uint_eq(s.rip, 0x7000);
    ck_assert_uint_eq(s.gpr[LC_RCX], 5);

    /* Method 2 keeps no loops: no speculation, the old cluster. */
    c.cflow = LC_CFLOW_M2;
    ck_assert_int_eq(form_at(&f, &s, &v, &c, poll_first_test,
                             sizeof poll_first_test, 0x7003), LC_OK);
    ck_assert_uint_eq(cl.ninsn, 5);
    ck_assert_uint_eq(cl.nrange, 1);
    fvm_fini(&f);
}
END_TEST

/* A backward branch whose head does not lead back to it: the speculation
 * is undone and the walk goes on after the branch, as before.
 *   7000 ud2; 7002 in al,dx; test al,1; jnz 7000; out dx,al; ud2 */
START_TEST(loop_speculation_undone)
{
    static const uint8_t code[] = { 0x0f, 0x0b, 0xec, 0xa8, 0x01, 0x75,
                                    0xf9, 0xee, 0x0f, 0x0b };
    fvm f; lc_cpu_state s; lcr_vcpu v; lc_config c;

    fvm_init(&f);
    fvm_state_prot32(&s, 0);
    lc_config_init(&c);
    ck_assert_int_eq(form_at(&f, &s, &v, &c, code, sizeof code, 0x7002),
                     LC_OK);
    ck_assert_uint_eq(cl.ninsn, 4);
    ck_assert_uint_eq(cl.nrange, 1);
    ck_assert_uint_eq(cl.insn[3].rip, 0x7007);
    ck_assert_uint_eq(cl.insn[2].target, LCX_NO_TARGET);
    fvm_fini(&f);
}
END_TEST

/* A conditional branch over a JMP (or CALL) to a later exiting
 * instruction:
 *   7000 in al,dx; 7001 test al,1; 7003 jz 700a; 7005 jmp/call 7100;
 *   700a out dx,al; 700b ud2;  7100 ud2
 * The walk resumes at the JZ's target when the line ends at the transfer
 * (or in the code it followed to), so the OUT is in the cluster. The
 * other side (the transfer, and where it led) holds no exiting
 * instruction: it is dropped, and a run down it ends at the JZ. Before,
 * the cluster was the IN alone. */
START_TEST(branch_over_transfer)
{
    uint8_t code[0x102] = { 0xec, 0xa8, 0x01, 0x74, 0x05, 0xe9, 0xf6, 0x00,
                            0x00, 0x00, 0xee, 0x0f, 0x0b };
    fvm f; lc_cpu_state s; lcr_vcpu v; lc_config c;

    code[0x100] = 0x0f;
    code[0x101] = 0x0b;
    fvm_init(&f);
    fvm_state_prot32(&s, 0);
    s.gpr[LC_RSP] = 0x8000;
    lc_config_init(&c);
    for (int variant = 0; variant < 4; variant++) {
        code[5] = variant & 1 ? 0xe8 : 0xe9;        /* CALL or JMP */
        c.techniques = variant & 2 ? LC_TECH_ALL
                                   : LC_TECH_ALL & ~LC_TECH_CALLS;
        ck_assert_int_eq(form_at(&f, &s, &v, &c, code, sizeof code, 0x7000),
                         LC_OK);
        ck_assert_msg(cl.ninsn == 4, "variant %d: %u instructions", variant,
                      cl.ninsn);
        ck_assert_uint_eq(cl.nexits, 2);
        ck_assert_uint_eq(cl.insn[3].rip, 0x700a);
        ck_assert_uint_eq(cl.insn[2].target, LCX_NO_TARGET);

        /* Ready (bit 0 clear): the JZ skips the transfer, the OUT runs. */
        s.rip = 0x7000;
        f.nin_seq = 1;
        f.in_pos = 0;
        f.in_seq[0] = 0;
        lcr_begin(&v, &s, &fvm_ops, &f);
        ck_assert_int_eq(lcx_run(&cl, &v, 10, 0), LC_STOP_END);
        ck_assert_uint_eq(v.exits_done, 2);
        ck_assert_uint_eq(s.rip, 0x700b);
        /* Busy: the run ends at the transfer, which the guest runs. */
        s.rip = 0x7000;
        f.in_pos = 0;
        f.in_seq[0] = 1;
        lcr_begin(&v, &s, &fvm_ops, &f);
        ck_assert_int_eq(lcx_run(&cl, &v, 10, 0), LC_STOP_END);
        ck_assert_uint_eq(v.exits_done, 1);
        ck_assert_uint_eq(s.rip, 0x7005);
    }
    /* Method 1 records no in-cluster targets: nothing to resume for. */
    c.cflow = LC_CFLOW_M1;
    ck_assert_int_eq(form_at(&f, &s, &v, &c, code, sizeof code, 0x7000),
                     LC_OK);
    ck_assert_uint_eq(cl.ninsn, 1);
    fvm_fini(&f);
}
END_TEST

static Suite *cluster_suite(void)
{
    Suite *s = suite_create("cluster");
    TCase *t = tcase_create("form");

    tcase_add_test(t, static_clusters);
    tcase_add_test(t, dynamic_cluster);
    tcase_add_test(t, memory_gap_cap);
    tcase_add_test(t, memory_gap_cap_cached);
    tcase_add_test(t, memory_gap_cap_scales_with_exit_cost);
    tcase_add_test(t, window_scales_with_exit_cost);
    tcase_add_test(t, control_flow_methods);
    tcase_add_test(t, branch_over_return);
    tcase_add_test(t, run_branch_over_return);
    tcase_add_test(t, exit_pairs);
    suite_add_tcase(s, t);
    t = tcase_create("run");
    tcase_add_test(t, pair_delivery);
    tcase_add_test(t, run_bios);
    tcase_add_test(t, run_poll_loops);
    tcase_add_test(t, run_weak_backedge_cap);
    tcase_add_test(t, fast_chains_match_runtime);
    tcase_add_test(t, loop_test_before_read);
    tcase_add_test(t, loop_reentered_past_exit_is_weak);
    tcase_add_test(t, loop_speculation_undone);
    tcase_add_test(t, branch_over_transfer);
    tcase_add_loop_test(t, fast_path_matches_runtime, 0,
                        (int)(sizeof fast_cases / sizeof fast_cases[0]));
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return lc_test_run(cluster_suite());
}
