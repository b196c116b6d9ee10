/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_engine_run.c: the exit path through the public API only
 * (lc_vcpu_handle_exit), against the fake VMM: the paper's examples save
 * the exits the paper counts; first exits are interpreted; translations
 * are reused, checked for coherency, retranslated; self-modifying clusters
 * stop; the leak guard forces translation and memory stays bounded.
 */
#include <string.h>

#include <cluster/cluster.h>

#include "../../examples/paper/paper_examples.h"
#include "../../examples/paper/paper_run.h"
#include "../../libcluster/adapter.h"
#include "fakevm.h"
#include "harness.h"

typedef struct rig {
    fvm f;
    lc_engine *e;
    lc_vcpu *v;
} rig;

static void rig_up(rig *r, const lc_config *cfg)
{
    fvm_init(&r->f);
    ck_assert_int_eq(lc_engine_create(cfg, &fvm_ops, &r->e), LC_OK);
    ck_assert_int_eq(lc_vcpu_create(r->e, 0, &r->f, &r->v), LC_OK);
}

static void rig_down(rig *r)
{
    lc_vcpu_destroy(r->v);
    ck_assert_int_eq(lc_engine_destroy(r->e), LC_OK);
    fvm_fini(&r->f);
}

static lc_exit io_exit(uint16_t port, uint8_t size, int out)
{
    lc_exit x;
    memset(&x, 0, sizeof x);
    x.kind = LC_EXIT_IO;
    x.rip = LC_EXIT_RIP_AT;
    x.u.io.port = port;
    x.u.io.size = size;
    x.u.io.is_out = (uint8_t)out;
    return x;
}

/* The BIOS block of section 4 at 0x7000 in real mode, DX = 0xcf8. */
static void bios_rig(rig *r, lc_cpu_state *s0)
{
    rig_up(r, NULL);
    fvm_state_real(s0);
    s0->rip = 0x7000;
    s0->gpr[LC_RDX] = 0xcf8;
    fvm_load_example(&r->f, "bios-pci", 0x7000);
}

/* Section 4, the BIOS block: two interpreted exits, then one exit does
 * three, every time (saves 2 of 3). */
START_TEST(bios_saves_two_of_three)
{
    rig r; lc_cpu_state s, s0; lc_result res; lc_stats st;
    lc_exit x = io_exit(0xcf8, 4, 1);

    bios_rig(&r, &s0);
    for (int i = 0; i < 5; i++) {
        s = s0;
        ck_assert_int_eq(lc_vcpu_handle_exit(r.v, &s, &x, &res), LC_OK);
        ck_assert_int_eq(res.disposition, LC_HANDLED);
        if (i < 2) {          /* interpreted: the OUT alone */
            ck_assert_uint_eq(res.insns, 1);
            ck_assert_uint_eq(res.exits_saved, 0);
            ck_assert_uint_eq(s.rip, 0x7002);
            ck_assert(!res.translated);
        } else {              /* the cluster: OUT, OUT, 6 gap fillers, IN */
            ck_assert_uint_eq(res.insns, 9);
            ck_assert_uint_eq(res.exits_done, 3);
            ck_assert_uint_eq(res.exits_saved, 2);
            ck_assert_uint_eq(s.rip, 0x7012);
            ck_assert(res.translated);
            ck_assert_int_eq(res.stop, LC_STOP_END);
        }
        ck_assert(res.dirty & LC_DIRTY_RIP);
    }
    ck_assert_int_eq(lc_vcpu_get_stats(r.v, &st), LC_OK);
    ck_assert_uint_eq(st.exits_seen, 5);
    ck_assert_uint_eq(st.exits_interpreted, 2);
    ck_assert_uint_eq(st.exits_translated, 3);
    ck_assert_uint_eq(st.translations, 1);
    ck_assert_uint_eq(st.exits_saved, 6);
    ck_assert_uint_eq(st.cluster_len[3], 3);
    ck_assert_uint_gt(st.tcache_bytes, 0);
    /* A destroyed vCPU's cache is freed with it: the engine's figures keep
     * its counters but no longer its bytes held (a VMM that makes its
     * vCPUs anew at each guest reboot, lcvmm --reboot, saw them grow). */
    lc_vcpu_destroy(r.v);
    r.v = NULL;
    ck_assert_int_eq(lc_engine_get_stats(r.e, &st), LC_OK);
    ck_assert_uint_eq(st.translations, 1);
    ck_assert_uint_eq(st.exits_saved, 6);
    ck_assert_uint_eq(st.tcache_bytes, 0);
    rig_down(&r);
}
END_TEST

/* Section 8: Hyper-V saves two of three; VMware at least seven. */
START_TEST(vmread_blocks)
{
    rig r; lc_cpu_state s, s0; lc_result res;
    lc_exit x;

    memset(&x, 0, sizeof x);
    x.kind = LC_EXIT_VMREAD;
    rig_up(&r, NULL);
    fvm_state_long64(&r.f, &s0);
    s0.rip = 0x300000;
    fvm_load_example(&r.f, "hyperv-vmread", 0x300000);
    for (int i = 0; i < 3; i++) {
        s = s0;
        ck_assert_int_eq(lc_vcpu_handle_exit(r.v, &s, &x, &res), LC_OK);
    }
    ck_assert_uint_eq(res.exits_done, 3);
    ck_assert_uint_eq(res.exits_saved, 2);

    fvm_state_long64(&r.f, &s0);
    s0.rip = 0x310000;
    s0.gpr[LC_RDI] = 0x55555555;     /* fake VMCS: EDI reads back as 0 */
    fvm_load_example(&r.f, "vmware-vmread", 0x310000);
    for (int i = 0; i < 3; i++) {
        s = s0;
        ck_assert_int_eq(lc_vcpu_handle_exit(r.v, &s, &x, &res), LC_OK);
    }
    ck_assert_uint_ge(res.exits_saved, 7);
    ck_assert_uint_eq(res.exits_done, 9);
    rig_down(&r);
}
END_TEST

/* Section 7: code replaced between executions fails the coherency check,
 * runs only the exiting instruction, and is retranslated. */
START_TEST(coherency_and_retranslation)
{
    rig r; lc_cpu_state s, s0; lc_result res; lc_stats st;
    lc_exit x = io_exit(0xcf8, 4, 1);

    bios_rig(&r, &s0);
    for (int i = 0; i < 3; i++) {
        s = s0;
        lc_vcpu_handle_exit(r.v, &s, &x, &res);
    }
    ck_assert_uint_eq(res.insns, 9);
    r.f.ram[0x7008] = 0x01;           /* AND al,3 -> AND al,1 */
    s = s0;
    ck_assert_int_eq(lc_vcpu_handle_exit(r.v, &s, &x, &res), LC_OK);
    ck_assert_uint_eq(res.insns, 1);  /* only the exiting OUT */
    s = s0;
    ck_assert_int_eq(lc_vcpu_handle_exit(r.v, &s, &x, &res), LC_OK);
    ck_assert_uint_eq(res.insns, 9);  /* retranslated at once */
    ck_assert_uint_eq(s.gpr[LC_RDX], 0xcfc + (0 & 1));
    lc_vcpu_get_stats(r.v, &st);
    ck_assert_uint_eq(st.coherency_failures, 1);
    ck_assert_uint_eq(st.retranslations, 1);
    ck_assert_uint_eq(st.translations, 2);
    rig_down(&r);
}
END_TEST

/* Three exits at x from `from` (interpreted, formed, then a hit of the
 * cached translation), the last one's state in *s: handled by it. */
static void third_exit_handled(rig *r, const lc_cpu_state *from,
                               const lc_exit *x, lc_cpu_state *s,
                               lc_result *res)
{
    for (int i = 0; i < 3; i++) {
        r->f.nlog = 0;
        r->f.in_pos = 0;
        *s = *from;
        ck_assert_int_eq(lc_vcpu_handle_exit(r->v, s, x, res), LC_OK);
    }
    ck_assert_int_eq(res->disposition, LC_HANDLED);
    ck_assert(res->translated);
    ck_assert_uint_eq(res->exits_done, 1);
}

/* A translation of one exiting instruction runs it outside the run loop
 * (translator/run.c); its outcomes must be the loop's: handled with RIP
 * past it; declined with nothing changed when the device refuses it
 * (LC_CB_STOP), or with the error when it fails (LC_CB_ERROR); declined
 * under single-stepping (the CPU steps it); an IN writes AL; a MOV to a
 * device, whose inline form declines, goes through the loop. */
START_TEST(single_exit_translation_outcomes)
{
    /* each alone in its window: nothing after it but a jump to itself */
    static const uint8_t out_code[] = { 0xe6, 0x80,     /* out 0x80, al */
                                        0xeb, 0xfe };   /* jmp $ */
    static const uint8_t in_code[] = { 0xe4, 0x71,      /* in al, 0x71 */
                                       0xeb, 0xfe };
    rig r; lc_cpu_state s, s0, s1; lc_result res; lc_stats st;
    lc_exit xo = io_exit(0x80, 1, 1), xi = io_exit(0x71, 1, 0);

    rig_up(&r, NULL);
    fvm_state_long64(&r.f, &s0);
    s0.rip = 0x100000;
    s0.gpr[LC_RAX] = 0x1234;
    memcpy(r.f.ram + 0x100000, out_code, sizeof out_code);
    memcpy(r.f.ram + 0x100100, in_code, sizeof in_code);
    third_exit_handled(&r, &s0, &xo, &s, &res);
    ck_assert_uint_eq(res.insns, 1);
    ck_assert_uint_eq(s.rip, 0x100002);
    ck_assert_uint_eq(r.f.nlog, 1);
    ck_assert_uint_eq(r.f.log[0].value, 0x34);
    lc_vcpu_get_stats(r.v, &st);
    ck_assert_uint_eq(st.exits_translated, 1);

    /* refused: nothing ran, nothing changed */
    r.f.pio_answer = LC_CB_STOP;
    s = s0;
    ck_assert_int_eq(lc_vcpu_handle_exit(r.v, &s, &xo, &res), LC_OK);
    ck_assert_int_eq(res.disposition, LC_DECLINED);
    ck_assert_int_eq(res.stop, LC_STOP_CALLBACK);
    ck_assert_mem_eq(&s, &s0, sizeof s);
    /* failed: the error is the call's */
    r.f.pio_answer = LC_CB_ERROR;
    s = s0;
    ck_assert_int_eq(lc_vcpu_handle_exit(r.v, &s, &xo, &res),
                     LC_ERR_CALLBACK);
    ck_assert_int_eq(res.disposition, LC_DECLINED);
    ck_assert_mem_eq(&s, &s0, sizeof s);
    r.f.pio_answer = LC_CB_OK;

    /* single-stepping: left to the CPU */
    s1 = s0;
    s1.rflags |= LC_RFLAGS_TF;
    s = s1;
    ck_assert_int_eq(lc_vcpu_handle_exit(r.v, &s, &xo, &res), LC_OK);
    ck_assert_int_eq(res.disposition, LC_DECLINED);
    ck_assert_mem_eq(&s, &s1, sizeof s);

    /* IN: AL from the device, the rest of RAX kept */
    s1 = s0;
    s1.rip = 0x100100;
    r.f.nin_seq = 1;
    r.f.in_seq[0] = 0xa2;
    third_exit_handled(&r, &s1, &xi, &s, &res);
    ck_assert_uint_eq(s.gpr[LC_RAX], 0x12a2);
    ck_assert_uint_eq(s.rip, 0x100102);

    rig_down(&r);

    /* MOV to a device, without learned routes (LC_TECH_DYNAMIC off): the
     * inline form declines (not RAM) and the loop's lcr_exec() makes the
     * access. */
    {
        static const uint8_t mov_code[] = { 0x89, 0x03,  /* mov [rbx], eax */
                                            0xeb, 0xfe };
        lc_config cfg;
        lc_exit xm;

        lc_config_init(&cfg);
        cfg.techniques &= ~(uint32_t)LC_TECH_DYNAMIC;
        rig_up(&r, &cfg);
        fvm_state_long64(&r.f, &s0);
        s0.gpr[LC_RAX] = 0x1234;
        memcpy(r.f.ram + 0x100200, mov_code, sizeof mov_code);
        memset(&xm, 0, sizeof xm);
        xm.kind = LC_EXIT_MMIO;
        xm.rip = LC_EXIT_RIP_AT;
        xm.u.mmio.gpa = FVM_MMIO + 0x10;
        xm.u.mmio.len = 4;
        xm.u.mmio.is_write = 1;
        s1 = s0;
        s1.rip = 0x100200;
        s1.gpr[LC_RBX] = FVM_MMIO + 0x10;
        third_exit_handled(&r, &s1, &xm, &s, &res);
        ck_assert_uint_eq(s.rip, 0x100202);
        ck_assert_uint_eq(r.f.nlog, 1);
        ck_assert_uint_eq(r.f.log[0].value, 0x1234);
    }
    rig_down(&r);
}
END_TEST

/* A site with nothing worth running (RIP past an exit, a RET next) is
 * remembered as an empty translation: later exits there cost a lookup,
 * not a decode of the window, and it is checked for coherency like any
 * translation, so new code there gets a real cluster. */
START_TEST(empty_translation_cached)
{
    rig r; lc_cpu_state s, s0; lc_result res; lc_stats st;
    lc_exit x = io_exit(0x80, 1, 1);

    x.rip = LC_EXIT_RIP_PAST;         /* the OUT at 0x7000 is done */
    rig_up(&r, NULL);
    fvm_state_real(&s0);
    s0.rip = 0x7002;
    r.f.ram[0x7000] = 0xe6;           /* out 0x80, al */
    r.f.ram[0x7001] = 0x80;
    r.f.ram[0x7002] = 0xc3;           /* ret: a terminator */
    for (int i = 0; i < 10; i++) {
        s = s0;
        ck_assert_int_eq(lc_vcpu_handle_exit(r.v, &s, &x, &res), LC_OK);
        ck_assert_int_eq(res.disposition, LC_DECLINED);
        /* the first two exits are learnt (threshold 3), then decided */
        ck_assert_int_eq(res.learning, i < 2);
    }
    lc_vcpu_get_stats(r.v, &st);
    ck_assert_uint_gt(st.tcache_bytes, 0);
    ck_assert_uint_eq(st.translations, 0);
    ck_assert_uint_eq(st.coherency_failures, 0);

    memcpy(&r.f.ram[0x7002], "\xe6\x80\xc3", 3);   /* out 0x80, al; ret */
    s = s0;
    lc_vcpu_handle_exit(r.v, &s, &x, &res);          /* coherency fails */
    ck_assert_int_eq(res.disposition, LC_DECLINED);
    /* new bytes, a new identity for exit tracking: learnt again (s5) */
    for (int i = 0; i < 4 && res.disposition != LC_HANDLED; i++) {
        s = s0;
        ck_assert_int_eq(lc_vcpu_handle_exit(r.v, &s, &x, &res), LC_OK);
    }
    ck_assert_int_eq(res.disposition, LC_HANDLED);
    ck_assert_uint_eq(res.exits_saved, 1);
    ck_assert_uint_eq(s.rip, 0x7004);
    lc_vcpu_get_stats(r.v, &st);
    ck_assert_uint_eq(st.coherency_failures, 1);
    ck_assert_uint_eq(st.translations, 1);
    rig_down(&r);
}
END_TEST

/* Section 7: a cluster that writes into its own code page stops right
 * after the write; the next exit fails coherency and retranslates. */
START_TEST(self_modifying_cluster)
{
    rig r; lc_cpu_state s, s0; lc_result res; lc_stats st;
    lc_exit x = io_exit(0x80, 1, 1);
    /* out 0x80,al; mov byte [0x7009],0x81; out 0x80,al; out 0x80,al */
    const uint8_t code[] = { 0xe6, 0x80, 0xc6, 0x05, 0x09, 0x70, 0x00, 0x00,
                             0x81, 0xe6, 0x80, 0xe6, 0x80 };

    rig_up(&r, NULL);
    fvm_state_prot32(&s0, 0);
    s0.rip = 0x7000;
    memcpy(r.f.ram + 0x7000, code, sizeof code);
    for (int i = 0; i < 2; i++) {
        s = s0;
        lc_vcpu_handle_exit(r.v, &s, &x, &res);
    }
    s = s0;
    ck_assert_int_eq(lc_vcpu_handle_exit(r.v, &s, &x, &res), LC_OK);
    ck_assert_int_eq(res.stop, LC_STOP_SMC);
    ck_assert_uint_eq(res.insns, 2);
    ck_assert_uint_eq(s.rip, 0x7009);
    ck_assert_uint_eq(r.f.ram[0x7009], 0x81);
    lc_vcpu_get_stats(r.v, &st);
    ck_assert_uint_eq(st.smc_stops, 1);
    /* The guest's own code now differs from the translation. */
    s = s0;
    ck_assert_int_eq(lc_vcpu_handle_exit(r.v, &s, &x, &res), LC_OK);
    lc_vcpu_get_stats(r.v, &st);
    ck_assert_uint_eq(st.coherency_failures, 1);
    rig_down(&r);
}
END_TEST

/* The SMC watch covers the code's bytes, not its page: a store to data
 * beside the code (real-mode firmware keeps its variables there) does not
 * stop the run; self_modifying_cluster above still stops on one into the
 * code itself. */
START_TEST(store_beside_code_goes_on)
{
    rig r; lc_cpu_state s, s0; lc_result res; lc_stats st;
    lc_exit x = io_exit(0x80, 1, 1);
    /* out 0x80,al; mov byte [0x7100],0x81; out 0x80,al; out 0x80,al */
    const uint8_t code[] = { 0xe6, 0x80, 0xc6, 0x05, 0x00, 0x71, 0x00, 0x00,
                             0x81, 0xe6, 0x80, 0xe6, 0x80 };

    rig_up(&r, NULL);
    fvm_state_prot32(&s0, 0);
    s0.rip = 0x7000;
    memcpy(r.f.ram + 0x7000, code, sizeof code);
    for (int i = 0; i < 3; i++) {
        s = s0;
        ck_assert_int_eq(lc_vcpu_handle_exit(r.v, &s, &x, &res), LC_OK);
    }
    ck_assert_int_eq(res.stop, LC_STOP_END);
    ck_assert_uint_eq(res.insns, 4);
    ck_assert_uint_eq(res.exits_done, 3);
    ck_assert_uint_eq(s.rip, 0x700d);
    ck_assert_uint_eq(r.f.ram[0x7100], 0x81);
    lc_vcpu_get_stats(r.v, &st);
    ck_assert_uint_eq(st.smc_stops, 0);
    ck_assert_uint_eq(st.coherency_failures, 0);
    rig_down(&r);
}
END_TEST

/* One exit from state *s: it must run `insns` instructions and stop for
 * `stop`. */
static void exit_expect(rig *r, lc_cpu_state *s, const lc_exit *x,
                        lc_stop_reason stop, unsigned insns)
{
    lc_result res;

    ck_assert_int_eq(lc_vcpu_handle_exit(r->v, s, x, &res), LC_OK);
    ck_assert_int_eq(res.stop, stop);
    ck_assert_uint_eq(res.insns, insns);
}

/* Long mode with 2 MB pages (fvm_state_long64: the page directory at
 * 0x3000), translated at the first exit, `code` at 0x200100 and RBX at
 * `rbx`: the page directory, for a test to remap the code. */
static uint64_t *long64_code_rig(rig *r, lc_cpu_state *s0,
                                 const uint8_t *code, size_t n, uint64_t rbx)
{
    lc_config c;

    lc_config_init(&c);
    c.translate_threshold = 1;
    rig_up(r, &c);
    fvm_state_long64(&r->f, s0);
    s0->rip = 0x200100;
    s0->gpr[LC_RBX] = rbx;
    memcpy(r->f.ram + 0x200100, code, n);
    return (uint64_t *)(void *)(r->f.ram + 0x3000);
}

/* The watch's byte spans are computed once per fetch record and kept in
 * the translation (coherency.c, lci_watch_narrow): after the guest remaps
 * the code's page to another frame holding the same bytes, the coherency
 * check records the new frame and the spans follow it: a store beside the
 * code on the new frame goes on, one into the code on it stops. */
START_TEST(watch_follows_remapped_code)
{
    rig r; lc_cpu_state s, s0; lc_stats st;
    lc_exit x = io_exit(0x80, 1, 1);
    /* out 0x80,al; mov byte [rbx],0x81; out 0x80,al; out 0x80,al */
    const uint8_t code[] = { 0xe6, 0x80, 0xc6, 0x03, 0x81, 0xe6, 0x80,
                             0xe6, 0x80 };
    uint64_t *pd = long64_code_rig(&r, &s0, code, sizeof code,
                                   0x200180);    /* beside the code */

    for (int i = 0; i < 3; i++) {
        s = s0;
        exit_expect(&r, &s, &x, LC_STOP_END, 4);
    }
    memcpy(r.f.ram + 0x100, code, sizeof code);
    pd[1] = 0x87;                    /* the same bytes, at frame 0 */
    s = s0;
    exit_expect(&r, &s, &x, LC_STOP_END, 4);
    ck_assert_uint_eq(r.f.ram[0x180], 0x81);
    s = s0;
    s.gpr[LC_RBX] = 0x200106;      /* the second OUT's port byte */
    exit_expect(&r, &s, &x, LC_STOP_SMC, 2);
    ck_assert_uint_eq(s.rip, 0x200105);
    ck_assert_uint_eq(r.f.ram[0x106], 0x81);
    ck_assert_uint_eq(r.f.ram[0x200106], 0x80);
    lc_vcpu_get_stats(r.v, &st);
    ck_assert_uint_eq(st.smc_stops, 1);
    ck_assert_uint_eq(st.coherency_failures, 0);
    rig_down(&r);
}
END_TEST

/* After the guest changed the byte its callee stores to `val`: the next
 * hits store what the new bytes say, or do not run that far (the
 * translation made again); the last runs all five instructions (out,
 * call, mov, ret, out). */
static void expect_callee_stores(rig *r, const lc_cpu_state *s0,
                                 const lc_exit *x, uint8_t *at, uint8_t val)
{
    lc_cpu_state s;
    lc_result res;

    for (int i = 0; i < 3; i++) {
        s = *s0;
        *at = 0;
        ck_assert_int_eq(lc_vcpu_handle_exit(r->v, &s, x, &res), LC_OK);
        ck_assert_uint_eq(*at, res.insns >= 3 ? val : 0);
    }
    ck_assert_uint_eq(res.insns, 5);
}

/* A translation that pushes keeps its stack's TLB page from run to run
 * (engine_int.h, lci_stack_vouch()): its hit's coherency check reads back
 * the paging entries the stack shares with the code, and the stamp its
 * last run left the others (here the stack's page directory entry, the
 * code's being another). The guest remaps the stack between two exits:
 * the next CALL pushes to the new frame, and the old one is untouched. */
START_TEST(call_follows_remapped_stack)
{
    rig r; lc_cpu_state s, s0;
    lc_exit x = io_exit(0x80, 1, 1);
    /* out 0x80,al; call 0x200900; out 0x80,al; ud2 */
    const uint8_t code[] = { 0xe6, 0x80, 0xe8, 0xf9, 0x07, 0x00, 0x00,
                             0xe6, 0x80, 0x0f, 0x0b };
    const uint8_t ret[] = { 0xc3 };
    uint64_t *pd = long64_code_rig(&r, &s0, code, sizeof code, 0);
    uint64_t slot;

    s0.gpr[LC_RSP] = 0x108000;       /* 2 MB page 0; the code is on 1 */
    memcpy(r.f.ram + 0x200900, ret, sizeof ret);
    for (int i = 0; i < 4; i++) {
        s = s0;
        memset(r.f.ram + 0x107ff8, 0, 8);
        exit_expect(&r, &s, &x, LC_STOP_END, 4);    /* out, call, ret, out */
        memcpy(&slot, r.f.ram + 0x107ff8, 8);
        ck_assert_uint_eq(slot, 0x200107);
    }
    memset(r.f.ram + 0x107ff8, 0, 8);
    pd[0] = 0x200000 | 0x87;         /* linear 0..2 MB at frame 0x200000 */
    s = s0;
    exit_expect(&r, &s, &x, LC_STOP_END, 4);
    ck_assert_uint_eq(s.gpr[LC_RSP], 0x108000);
    memcpy(&slot, r.f.ram + 0x307ff8, 8);
    ck_assert_uint_eq(slot, 0x200107);
    memcpy(&slot, r.f.ram + 0x107ff8, 8);
    ck_assert_uint_eq(slot, 0);
    /* and back: the page of before is stamped no more */
    pd[0] = 0x87;
    memset(r.f.ram + 0x307ff8, 0, 8);
    s = s0;
    exit_expect(&r, &s, &x, LC_STOP_END, 4);
    memcpy(&slot, r.f.ram + 0x107ff8, 8);
    ck_assert_uint_eq(slot, 0x200107);
    memcpy(&slot, r.f.ram + 0x307ff8, 8);
    ck_assert_uint_eq(slot, 0);
    rig_down(&r);
}
END_TEST

/* A callee a few bytes before its caller (a range of its own; one after
 * it lies in the caller's range, calls.c): the hit compares the caller's
 * code, the callee's and the bytes between in one span (tc_entry.span).
 * A store between them (data beside the code) does not end the
 * translation: the span differs once, the ranges are then compared one
 * by one. A change to the callee is seen by the next hit. */
START_TEST(callee_span_sees_callee_not_gap)
{
    rig r; lc_cpu_state s, s0; lc_stats st;
    lc_exit x = io_exit(0x80, 1, 1);
    /* 0x200100: mov byte [rbx],0x5a; ret; 12 bytes of data;
     * 0x200110: out 0x80,al; call 0x200100; out 0x80,al; ud2 */
    const uint8_t code[] = { 0xc6, 0x03, 0x5a, 0xc3,
                             1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12,
                             0xe6, 0x80, 0xe8, 0xe9, 0xff, 0xff, 0xff,
                             0xe6, 0x80, 0x0f, 0x0b };

    long64_code_rig(&r, &s0, code, sizeof code, 0x200c00);
    s0.rip = 0x200110;
    s0.gpr[LC_RSP] = 0x208000;
    for (int i = 0; i < 3; i++) {
        s = s0;
        exit_expect(&r, &s, &x, LC_STOP_END, 5);  /* out, call, mov, ret, out */
    }
    r.f.ram[0x200108] = 0x99;        /* data between callee and caller */
    for (int i = 0; i < 2; i++) {
        s = s0;
        r.f.ram[0x200c00] = 0;
        exit_expect(&r, &s, &x, LC_STOP_END, 5);
        ck_assert_uint_eq(r.f.ram[0x200c00], 0x5a);
    }
    lc_vcpu_get_stats(r.v, &st);
    ck_assert_uint_eq(st.coherency_failures, 0);
    r.f.ram[0x200102] = 0x77;        /* mov byte [rbx],0x77 */
    expect_callee_stores(&r, &s0, &x, &r.f.ram[0x200c00], 0x77);
    rig_down(&r);
}
END_TEST

/* The same for a callee on its caller's page but a range of its own
 * (once checked, compared at the host address kept with its record,
 * tc_entry.xhva, engine_int.h): after the remap, what a hit compares and
 * what the run watches are the new frame's. The callee stores the byte
 * its own RET holds, so the code stays the same: beside the code it runs
 * on, into the RET on the new frame it stops (a watch left on the old
 * frame would let the run go on); then a change to the callee's bytes on
 * the new frame is what the next runs execute (the old frame's bytes,
 * still the same, would let the old translation run). */
START_TEST(watch_follows_remapped_callee)
{
    rig r; lc_cpu_state s, s0; lc_stats st;
    lc_exit x = io_exit(0x80, 1, 1);
    /* out 0x80,al; call 0x200900; out 0x80,al; ud2 */
    const uint8_t code[] = { 0xe6, 0x80, 0xe8, 0xf9, 0x07, 0x00, 0x00,
                             0xe6, 0x80, 0x0f, 0x0b };
    /* mov byte [rbx],0xc3; ret */
    const uint8_t callee[] = { 0xc6, 0x03, 0xc3, 0xc3 };
    uint64_t *pd = long64_code_rig(&r, &s0, code, sizeof code,
                                   0x200c00);    /* beside the code */

    s0.gpr[LC_RSP] = 0x208000;
    memcpy(r.f.ram + 0x200900, callee, sizeof callee);
    for (int i = 0; i < 3; i++) {
        s = s0;
        /* out, call, mov, ret, out */
        exit_expect(&r, &s, &x, LC_STOP_END, 5);
    }
    memcpy(r.f.ram + 0x100, code, sizeof code);
    memcpy(r.f.ram + 0x900, callee, sizeof callee);
    pd[1] = 0x87;                    /* the same bytes, at frame 0 */
    s = s0;
    exit_expect(&r, &s, &x, LC_STOP_END, 5);
    ck_assert_uint_eq(r.f.ram[0xc00], 0xc3);
    s = s0;
    s.gpr[LC_RBX] = 0x200903;        /* the callee's RET, new frame */
    exit_expect(&r, &s, &x, LC_STOP_SMC, 3);    /* out, call, mov */
    ck_assert_uint_eq(s.rip, 0x200903);
    lc_vcpu_get_stats(r.v, &st);
    ck_assert_uint_eq(st.smc_stops, 1);
    ck_assert_uint_eq(st.coherency_failures, 0);

    /* A change to the callee on the new frame is seen by the next hit:
     * the mov stores what the new bytes say, or does not run. */
    r.f.ram[0x902] = 0x5a;           /* mov byte [rbx],0x5a */
    expect_callee_stores(&r, &s0, &x, &r.f.ram[0xc00], 0x5a);
    rig_down(&r);
}
END_TEST

/* A translation's fetch record holds each paging entry as the walk left
 * it, its A bit set (mmu.c): a guest that clears the code page's A bit
 * after the first run (an OS ageing its pages) fails the next hit's
 * check, and the fetch made again sets the bit, as the CPU fetching the
 * code does. A record of the values read before the walk set the bit
 * passed then, and the run left the bit clear. */
START_TEST(hit_sets_cleared_accessed_bit)
{
    rig r; lc_cpu_state s, s0;
    lc_exit x = io_exit(0x80, 1, 1);
    /* out 0x80,al; add rax,rcx; out 0x80,al; ud2 */
    const uint8_t code[] = { 0xe6, 0x80, 0x48, 0x01, 0xc8, 0xe6, 0x80,
                             0x0f, 0x0b };
    uint64_t *pd = long64_code_rig(&r, &s0, code, sizeof code, 0);

    s = s0;
    exit_expect(&r, &s, &x, LC_STOP_END, 3);
    ck_assert_uint_ne(pd[1] & 0x20, 0);
    for (int i = 0; i < 2; i++) {
        pd[1] &= ~0x20ull;
        s = s0;
        exit_expect(&r, &s, &x, LC_STOP_END, 3);
        ck_assert_uint_ne(pd[1] & 0x20, 0);
    }
    rig_down(&r);
}
END_TEST

/* A range after the first (a callee, a predicted return site) is code
 * the run may never reach: when its record no longer holds, its fetch
 * again is a look that sets no accessed bit (coherency.c), as formation's
 * is (calls.c). Here the guest cleared the callee page's A bit (as an OS
 * ageing its pages does) and the run stops at a #PF before the CALL: the
 * bit stays clear, as on the CPU, which never fetched from that page. */
START_TEST(callee_refetch_sets_no_accessed_bit)
{
    rig r; lc_cpu_state s, s0; lc_result res;
    lc_exit x = io_exit(0x80, 1, 1);
    /* out 0x80,al; mov [rbx],al; call 0x100100; out 0x80,al; ud2 */
    const uint8_t code[] = { 0xe6, 0x80, 0x88, 0x03, 0xe8, 0xf7, 0xff, 0xef,
                             0xff, 0xe6, 0x80, 0x0f, 0x0b };
    /* add rax,rcx; ret */
    const uint8_t callee[] = { 0x48, 0x01, 0xc8, 0xc3 };
    uint64_t *pd = long64_code_rig(&r, &s0, code, sizeof code, 0x200800);

    s0.gpr[LC_RSP] = 0x208000;
    memcpy(r.f.ram + 0x100100, callee, sizeof callee);
    pd[0] |= 0x20;                   /* the guest ran there before */
    for (int i = 0; i < 3; i++) {
        s = s0;
        /* out, mov, call, add, ret, out */
        exit_expect(&r, &s, &x, LC_STOP_END, 6);
    }
    ck_assert_uint_ne(pd[0] & 0x20, 0);
    pd[0] &= ~0x20ull;
    s = s0;
    s.gpr[LC_RBX] = 0x40000000;      /* not present: #PF at the mov */
    ck_assert_int_eq(lc_vcpu_handle_exit(r.v, &s, &x, &res), LC_OK);
    ck_assert_uint_eq(res.insns, 1);
    ck_assert_uint_eq(s.rip, 0x200102);
    ck_assert_uint_eq(pd[0] & 0x20, 0);
    rig_down(&r);
}
END_TEST

/* Chained runs (libcluster/handle_exit.c): an accessor called from two
 * places, `mov dx,0xcf8; out dx,al; mov dl,0xfc; in al,dx; ret`, is
 * translated while called from the first, so its RET predicts that
 * return address. Called from the second, the RET goes elsewhere and the
 * run leaves the translation there; the engine goes on with the
 * translation of the second caller's code, whose OUT then runs in the
 * same exit. Without LC_TECH_CALLS nothing is chained (the paper's
 * clusters end at the RET). */
static void accessor_code(rig *r)
{
    static const uint8_t site_a[] = { 0xe8, 0xfd, 0x00,   /* call 7100 */
                                      0xe6, 0x80,         /* out 0x80,al */
                                      0x0f, 0x0b };       /* ud2 */
    static const uint8_t site_b[] = { 0xe8, 0xed, 0x00,   /* call 7100 */
                                      0xe6, 0x81,         /* out 0x81,al */
                                      0x0f, 0x0b };       /* ud2 */
    static const uint8_t acc[] = { 0xba, 0xf8, 0x0c,      /* mov dx,0xcf8 */
                                   0xee,                  /* out dx,al */
                                   0xb2, 0xfc,            /* mov dl,0xfc */
                                   0xec,                  /* in al,dx */
                                   0xc3 };                /* ret */

    memcpy(r->f.ram + 0x7000, site_a, sizeof site_a);
    memcpy(r->f.ram + 0x7010, site_b, sizeof site_b);
    memcpy(r->f.ram + 0x7100, acc, sizeof acc);
}

/* The state at the accessor's OUT, called from the site at `ret - 3`. */
static void at_accessor_out(rig *r, lc_cpu_state *s, uint16_t ret)
{
    fvm_state_real(s);
    s->rip = 0x7103;
    s->gpr[LC_RDX] = 0xcf8;
    s->gpr[LC_RSP] = 0x5ffe;
    r->f.ram[0x5ffe] = (uint8_t)ret;
    r->f.ram[0x5fff] = (uint8_t)(ret >> 8);
}

START_TEST(chain_after_mispredicted_ret)
{
    rig r; lc_cpu_state s; lc_result res; lc_stats st;
    lc_exit x = io_exit(0xcf8, 1, 1);

    rig_up(&r, NULL);
    accessor_code(&r);
    for (int i = 0; i < 3; i++) {            /* translated at the third */
        at_accessor_out(&r, &s, 0x7003);
        ck_assert_int_eq(lc_vcpu_handle_exit(r.v, &s, &x, &res), LC_OK);
    }
    ck_assert_uint_eq(res.insns, 5);         /* out, mov, in, ret, out */
    ck_assert_uint_eq(res.exits_done, 3);
    ck_assert_uint_eq(s.rip, 0x7005);
    /* From the other caller: the RET leaves the translation at 0x7013;
     * the chained translation there runs its OUT in the same exit. */
    at_accessor_out(&r, &s, 0x7013);
    r.f.nlog = 0;
    ck_assert_int_eq(lc_vcpu_handle_exit(r.v, &s, &x, &res), LC_OK);
    ck_assert_int_eq(res.disposition, LC_HANDLED);
    ck_assert_int_eq(res.stop, LC_STOP_END);
    ck_assert_uint_eq(res.insns, 5);
    ck_assert_uint_eq(res.exits_done, 3);
    ck_assert_uint_eq(res.exits_saved, 2);
    ck_assert_uint_eq(s.rip, 0x7015);
    ck_assert_uint_eq(s.gpr[LC_RSP], 0x6000);
    ck_assert_uint_eq(r.f.nlog, 3);
    ck_assert_uint_eq(r.f.log[2].addr, 0x81);
    lc_vcpu_get_stats(r.v, &st);
    ck_assert_uint_eq(st.coherency_failures, 0);
    rig_down(&r);
}
END_TEST

/* A guard that misses inside a straight chain of gap fillers (run.c: a
 * CALL or RET the cluster follows, with the instruction the translation
 * predicted after it run in the same chain): the transfer completes and
 * the run leaves there; nothing listed after it runs. First a RET whose
 * caller differs from the one the translation was made for (each caller
 * sets AL before its OUT), then a CALL through a register that now holds
 * another function. */
START_TEST(chain_leaves_at_guard_miss)
{
    rig r; lc_cpu_state s; lc_result res;
    lc_exit x = io_exit(0xcf8, 1, 1);
    static const uint8_t site_a[] = { 0xe8, 0xfd, 0x00,   /* call 7100 */
                                      0xb0, 0x11,         /* mov al,0x11 */
                                      0xe6, 0x80,         /* out 0x80,al */
                                      0x0f, 0x0b };       /* ud2 */
    static const uint8_t site_b[] = { 0xe8, 0xed, 0x00,   /* call 7100 */
                                      0xb0, 0x22,         /* mov al,0x22 */
                                      0xe6, 0x81,         /* out 0x81,al */
                                      0x0f, 0x0b };       /* ud2 */
    static const uint8_t caller[] = { 0xe6, 0x80,         /* out 0x80,al */
                                      0xff, 0xd3,         /* call bx */
                                      0xe6, 0x83,         /* out 0x83,al */
                                      0x0f, 0x0b };       /* ud2 */
    static const uint8_t f1[] = { 0xb0, 0x11,             /* mov al,0x11 */
                                  0xe6, 0x81,             /* out 0x81,al */
                                  0xc3 };                 /* ret */
    static const uint8_t f2[] = { 0xb0, 0x22,             /* mov al,0x22 */
                                  0xe6, 0x82,             /* out 0x82,al */
                                  0xc3 };                 /* ret */

    rig_up(&r, NULL);
    accessor_code(&r);
    memcpy(r.f.ram + 0x7000, site_a, sizeof site_a);
    memcpy(r.f.ram + 0x7010, site_b, sizeof site_b);
    for (int i = 0; i < 4; i++) {            /* translated at the third */
        at_accessor_out(&r, &s, 0x7003);
        ck_assert_int_eq(lc_vcpu_handle_exit(r.v, &s, &x, &res), LC_OK);
    }
    ck_assert_uint_eq(res.insns, 6);         /* out, mov, in, ret, mov, out */
    ck_assert_uint_eq(s.gpr[LC_RAX] & 0xff, 0x11);
    /* from site B: the RET leaves the translation at 0x7013, where the
     * MOV listed after it (site A's) must not run */
    at_accessor_out(&r, &s, 0x7013);
    r.f.nlog = 0;
    ck_assert_int_eq(lc_vcpu_handle_exit(r.v, &s, &x, &res), LC_OK);
    ck_assert_int_eq(res.disposition, LC_HANDLED);
    ck_assert_uint_eq(s.gpr[LC_RSP], 0x6000);
    ck_assert(s.rip == 0x7013 || s.rip == 0x7017);
    if (s.rip == 0x7017) {                   /* a translation at 0x7013 ran */
        ck_assert_uint_eq(r.f.nlog, 3);
        ck_assert_uint_eq(r.f.log[2].addr, 0x81);
        ck_assert_uint_eq(r.f.log[2].value, 0x22);
    } else {
        ck_assert_uint_eq(res.insns, 4);     /* out, mov, in, ret */
        ck_assert_uint_eq(r.f.nlog, 2);
    }
    rig_down(&r);

    rig_up(&r, NULL);
    memcpy(r.f.ram + 0x7000, caller, sizeof caller);
    memcpy(r.f.ram + 0x7100, f1, sizeof f1);
    memcpy(r.f.ram + 0x7200, f2, sizeof f2);
    x = io_exit(0x80, 1, 1);
    for (int i = 0; i < 4; i++) {
        fvm_state_real(&s);
        s.rip = 0x7000;
        s.gpr[LC_RSP] = 0x6000;
        s.gpr[LC_RBX] = 0x7100;
        ck_assert_int_eq(lc_vcpu_handle_exit(r.v, &s, &x, &res), LC_OK);
    }
    ck_assert_uint_eq(res.insns, 6);         /* out, call, mov, out, ret, out */
    ck_assert_uint_eq(s.rip, 0x7006);
    /* BX now names f2: the CALL completes (to 0x7200, its return address
     * pushed) and the run leaves; f1's MOV, listed after it, must not run
     * (the engine may go on at 0x7200, in f2) */
    fvm_state_real(&s);
    s.rip = 0x7000;
    s.gpr[LC_RSP] = 0x6000;
    s.gpr[LC_RBX] = 0x7200;
    s.gpr[LC_RAX] = 0x5a;
    r.f.nlog = 0;
    ck_assert_int_eq(lc_vcpu_handle_exit(r.v, &s, &x, &res), LC_OK);
    ck_assert_int_eq(res.disposition, LC_HANDLED);
    ck_assert(r.f.nlog >= 1 && r.f.log[0].addr == 0x80);
    if (s.rip == 0x7200) {                   /* the run left, nothing more */
        ck_assert_uint_eq(res.insns, 2);     /* out, call */
        ck_assert_uint_eq(s.gpr[LC_RSP], 0x5ffe);
        ck_assert_uint_eq(s.gpr[LC_RAX] & 0xff, 0x5a);
        ck_assert_uint_eq(r.f.ram[0x5ffe] | (r.f.ram[0x5fff] << 8), 0x7004);
        ck_assert_uint_eq(r.f.nlog, 1);
    } else {                                 /* and went on in f2 */
        ck_assert_uint_eq(s.rip, 0x7006);
        ck_assert_uint_eq(s.gpr[LC_RSP], 0x6000);
        ck_assert_uint_eq(r.f.nlog, 3);
        ck_assert_uint_eq(r.f.log[1].addr, 0x82);
        ck_assert_uint_eq(r.f.log[1].value, 0x22);
        ck_assert_uint_eq(r.f.log[2].addr, 0x83);
        ck_assert_uint_eq(r.f.log[2].value, 0x22);
    }
    rig_down(&r);
}
END_TEST

/* Real mode, `out 0x80; call 0x7800; out 0x81; ud2` at 0x7000 with the
 * stack at 0x6000, and `callee` (n bytes) at 0x7800. */
static void caller_rig(rig *r, lc_cpu_state *s0, const uint8_t *callee,
                       size_t n)
{
    static const uint8_t code[] = { 0xe6, 0x80,         /* out 0x80,al */
                                    0xe8, 0xfb, 0x07,   /* call 7800 */
                                    0xe6, 0x81,         /* out 0x81,al */
                                    0x0f, 0x0b };       /* ud2 */

    rig_up(r, NULL);
    memcpy(r->f.ram + 0x7000, code, sizeof code);
    memcpy(r->f.ram + 0x7800, callee, n);
    fvm_state_real(s0);
    s0->rip = 0x7000;
    s0->gpr[LC_RSP] = 0x6000;
}

/* A callee on its caller's page, a range of its own (too far to share the
 * caller's bytes): once its record is known to share the
 * caller's walk, a hit checks the callee's code alone (engine_int.h,
 * lci_coherent's inline case). A change to one byte of the callee must
 * still fail the check: only the exiting OUT runs, then the new code is
 * translated and runs. */
START_TEST(callee_change_caught_inline)
{
    rig r; lc_cpu_state s, s0; lc_result res; lc_stats st;
    lc_exit x = io_exit(0x80, 1, 1);
    static const uint8_t callee[] = { 0xb0, 0x11,       /* mov al,0x11 */
                                      0xc3 };           /* ret */

    caller_rig(&r, &s0, callee, sizeof callee);
    for (int i = 0; i < 6; i++) {     /* translated at the third */
        s = s0;
        r.f.nlog = 0;
        ck_assert_int_eq(lc_vcpu_handle_exit(r.v, &s, &x, &res), LC_OK);
    }
    ck_assert_uint_eq(res.insns, 5);  /* out, call, mov, ret, out */
    ck_assert_uint_eq(r.f.nlog, 2);
    ck_assert_uint_eq(r.f.log[1].value, 0x11);
    r.f.ram[0x7801] = 0x22;           /* mov al,0x22 */
    s = s0;
    r.f.nlog = 0;
    ck_assert_int_eq(lc_vcpu_handle_exit(r.v, &s, &x, &res), LC_OK);
    ck_assert_uint_eq(res.insns, 1);  /* only the exiting OUT */
    s = s0;
    r.f.nlog = 0;
    ck_assert_int_eq(lc_vcpu_handle_exit(r.v, &s, &x, &res), LC_OK);
    ck_assert_uint_eq(res.insns, 5);  /* retranslated at once */
    ck_assert_uint_eq(r.f.log[1].value, 0x22);
    lc_vcpu_get_stats(r.v, &st);
    ck_assert_uint_eq(st.coherency_failures, 1);
    ck_assert_uint_eq(st.translations, 2);
    rig_down(&r);
}
END_TEST

/* The hit of a cluster whose callee shares its caller's page arms the
 * translation's SMC watch as it was computed (LCI_WATCH_KEPT, no frame
 * list rebuilt): every hit still stops after a store into the callee's
 * code (here its own RET, rewritten with the byte it holds, so the code
 * stays coherent and each exit hits), and never after one beside it. */
START_TEST(callee_watch_kept_on_hit)
{
    rig r; lc_cpu_state s, s0; lc_result res; lc_stats st;
    lc_exit x = io_exit(0x80, 1, 1);
    /* mov byte [0x7805],0xc3 (its own RET); ret; then the same with
     * [0x7900], beside the code, at 0x7840 */
    static const uint8_t callee[] = { 0xc6, 0x06, 0x05, 0x78, 0xc3, 0xc3 };
    static const uint8_t beside[] = { 0xc6, 0x06, 0x00, 0x79, 0xc3, 0xc3 };

    caller_rig(&r, &s0, callee, sizeof callee);
    memcpy(r.f.ram + 0x7840, beside, sizeof beside);
    for (int i = 0; i < 6; i++) {     /* translated at the third */
        s = s0;
        r.f.nlog = 0;
        ck_assert_int_eq(lc_vcpu_handle_exit(r.v, &s, &x, &res), LC_OK);
        if (i < 2)
            continue;
        ck_assert_int_eq(res.stop, LC_STOP_SMC);
        ck_assert_uint_eq(res.insns, 3);          /* out, call, mov */
        ck_assert_uint_eq(s.rip, 0x7805);
    }
    lc_vcpu_get_stats(r.v, &st);
    ck_assert_uint_eq(st.smc_stops, 4);
    ck_assert_uint_eq(st.coherency_failures, 0);
    ck_assert_uint_eq(st.translations, 1);

    /* the same caller calling the one that stores beside its code */
    r.f.ram[0x7003] = 0x3b;                       /* call 7840 */
    r.f.ram[0x7004] = 0x08;
    for (int i = 0; i < 6; i++) {
        s = s0;
        r.f.nlog = 0;
        ck_assert_int_eq(lc_vcpu_handle_exit(r.v, &s, &x, &res), LC_OK);
    }
    ck_assert_int_ne(res.stop, LC_STOP_SMC);
    ck_assert_uint_eq(res.insns, 5);              /* out, call, mov, ret, out */
    ck_assert_uint_eq(r.f.nlog, 2);
    lc_vcpu_get_stats(r.v, &st);
    ck_assert_uint_eq(st.smc_stops, 4);
    rig_down(&r);
}
END_TEST

/* A device that, on a write to port 0x82, writes 0x7840 over the return
 * address the CALL at 0x7002 pushed (at 0x5ffe): a DMA into the stack. */
static lc_cb_result dma_into_stack(fvm *f, fvm_access *a)
{
    if (a->kind == 'o' && a->addr == 0x82) {
        f->ram[0x5ffe] = 0x40;
        f->ram[0x5fff] = 0x78;
    }
    return fvm_default_device(f, a);
}

/* Store forwarding (runtime/rt.h): a RET takes its return address from
 * the CALL's push only while nothing observed memory between them. A
 * callee whose OUT lets the device write the slot, or whose own store
 * rewrites it, returns where the slot now says (0x7840, off the
 * prediction: the run ends there, the OUT after the CALL not run); a
 * callee of register instructions alone returns as predicted (that case
 * checks the outcome only: a forwarded and a loaded value agree). Fails
 * if the IN/OUT or the MOV store did not forget the push (both run
 * inline here). */
START_TEST(ret_forwarding_stops_at_observers)
{
    static const struct {
        uint8_t code[8];
        size_t  n;
        int     dma;
        uint64_t rip;      /* where the run ends */
        unsigned insns, nlog;
    } c[] = {
        /* out 0x82,al; ret */
        { { 0xe6, 0x82, 0xc3 }, 3, 1, 0x7840, 4, 2 },
        /* mov word [0x5ffe],0x7840; ret */
        { { 0xc7, 0x06, 0xfe, 0x5f, 0x40, 0x78, 0xc3 }, 7, 0, 0x7840, 4, 1 },
        /* add sp,2; sub sp,2; ret: no observer, the slot as pushed */
        { { 0x83, 0xc4, 0x02, 0x83, 0xec, 0x02, 0xc3 }, 7, 0, 0x7007, 6, 2 },
    };

    for (unsigned k = 0; k < sizeof c / sizeof c[0]; k++) {
        rig r; lc_cpu_state s, s0; lc_result res;
        lc_exit x = io_exit(0x80, 1, 1);

        caller_rig(&r, &s0, c[k].code, c[k].n);
        r.f.device = c[k].dma ? dma_into_stack : NULL;
        for (int i = 0; i < 5; i++) {     /* translated at the third */
            s = s0;
            r.f.nlog = 0;
            ck_assert_int_eq(lc_vcpu_handle_exit(r.v, &s, &x, &res), LC_OK);
            if (i < 2)
                continue;
            ck_assert_msg(s.rip == c[k].rip, "case %u: rip %#llx", k,
                          (unsigned long long)s.rip);
            ck_assert_uint_eq(res.insns, c[k].insns);
            ck_assert_uint_eq(r.f.nlog, c[k].nlog);
            ck_assert_uint_eq(s.gpr[LC_RSP], 0x6000);
        }
        rig_down(&r);
    }
}
END_TEST

/* A device whose write to port 0x82, or a WRMSR to MSR 0x40000000 (a
 * paravirtual MSR), once armed (*f->ctx), points the page-directory entry
 * of linear 0x400000 (the stack's 2 MB page) at frame 0x200000: a DMA
 * into a paging-structure entry, or the VMM editing the guest's tables
 * for it. */
static lc_cb_result pde_writer(fvm *f, fvm_access *a)
{
    int *armed = f->ctx;

    if (*armed && ((a->kind == 'o' && a->addr == 0x82) ||
                   (a->kind == 'W' && a->addr == 0x40000000))) {
        uint64_t pde = 0x200000 | 0x87;                 /* P RW US PS */

        *armed = 0;
        memcpy(f->ram + 0x3000 + 2 * 8, &pde, 8);
    }
    return fvm_default_device(f, a);
}

/* The page-walk cache's epoch lasts a run across a device's callbacks
 * (runtime/rt.h), as a CPU's TLB outlives a DMA: the OUT in the callee
 * remaps the stack's page by a DMA into its PDE, and the RET after it
 * (no forwarded store: the OUT forgot it) still reads the return address
 * through the translation its CALL used, returns as predicted and the
 * caller's last OUT runs (a walk would have returned to 0x200180, the
 * slot on the new frame). A WRMSR whose callback makes the same change
 * (a paravirtual MSR: the VMM's own effect, runtime/exec.h,
 * lcr_cb_result_cpu) ends the epoch: the RET reads the new frame and
 * leaves there. Either way the next exit (the guest ran) pushes onto the
 * new frame. */
START_TEST(pwc_epoch_outlives_callback)
{
    /* 0x200100: out 0x80,al; call 0x200140; out 0x80,al; ud2 */
    static const uint8_t code[] = { 0xe6, 0x80, 0xe8, 0x39, 0, 0, 0,
                                    0xe6, 0x80, 0x0f, 0x0b };
    static const struct {
        uint8_t  callee[3];
        uint64_t rip;           /* where the remapping exit's run ends */
        unsigned insns;
    } c[] = {
        { { 0xe6, 0x82, 0xc3 }, 0x200109, 5 },  /* out 0x82,al; ret */
        { { 0x0f, 0x30, 0xc3 }, 0x200180, 4 },  /* wrmsr; ret */
    };

    for (unsigned k = 0; k < sizeof c / sizeof c[0]; k++) {
        rig r; lc_cpu_state s, s0; lc_result res;
        lc_exit x = io_exit(0x80, 1, 1);
        uint64_t *pd = long64_code_rig(&r, &s0, code, sizeof code, 0);
        uint64_t slot, stale = 0x200180;
        int armed = 0;

        memcpy(r.f.ram + 0x200140, c[k].callee, sizeof c[k].callee);
        pd[2] = 0x000000 | 0x87;      /* linear 0x400000 -> frame 0 */
        memcpy(r.f.ram + 0x2800f8, &stale, 8);
        s0.gpr[LC_RSP] = 0x480100;    /* the slot: frame 0 + 0x800f8 */
        s0.gpr[LC_RCX] = 0x40000000;
        r.f.device = pde_writer;
        r.f.ctx = &armed;
        for (int i = 0; i < 3; i++) {
            s = s0;
            exit_expect(&r, &s, &x, LC_STOP_END, 5);
            ck_assert_uint_eq(s.rip, 0x200109);
        }
        armed = 1;
        s = s0;
        ck_assert_int_eq(lc_vcpu_handle_exit(r.v, &s, &x, &res), LC_OK);
        ck_assert_uint_eq(armed, 0);
        ck_assert_msg(s.rip == c[k].rip && res.insns == c[k].insns,
                      "case %u: rip %#llx after %u", k,
                      (unsigned long long)s.rip, (unsigned)res.insns);
        ck_assert_uint_eq(s.gpr[LC_RSP], 0x480100);
        memcpy(&slot, r.f.ram + 0x800f8, 8);
        ck_assert_uint_eq(slot, 0x200107);     /* the CALL's frame */
        memcpy(&slot, r.f.ram + 0x2800f8, 8);
        ck_assert_uint_eq(slot, stale);        /* not written yet */
        s = s0;
        ck_assert_int_eq(lc_vcpu_handle_exit(r.v, &s, &x, &res), LC_OK);
        ck_assert_uint_ge(res.insns, 2);       /* the OUT and the CALL */
        memcpy(&slot, r.f.ram + 0x2800f8, 8);
        ck_assert_uint_eq(slot, 0x200107);     /* the new mapping's frame */
        rig_down(&r);
    }
}
END_TEST

/* A device whose write to port 0x81 (armed 1), or to FVM_MMIO + 0x20
 * (armed 2), changes the guest-physical map once: it calls
 * lc_engine_flush() from inside the callback, as lc_vm_ops.gpa_map's
 * contract asks. */
typedef struct remap_dev {
    lc_engine *e;
    int        armed;
} remap_dev;

static lc_cb_result remap_device(fvm *f, fvm_access *a)
{
    remap_dev *d = f->ctx;

    if ((d->armed == 1 && a->kind == 'o' && a->addr == 0x81) ||
        (d->armed == 2 && a->kind == 'w' && a->addr == FVM_MMIO + 0x20)) {
        d->armed = 0;
        ck_assert_int_eq(lc_engine_flush(d->e), LC_OK);
    }
    return fvm_default_device(f, a);
}

/* A callback that changes the guest-physical map ends the run after its
 * instruction (LC_STOP_COHERENCY): the rest of the cluster was checked
 * against the old map. Through the inline OUT and through the
 * dispatcher's MMIO store alike; the next exit finds its translations
 * flushed. */
START_TEST(map_change_in_callback_ends_run)
{
    rig r; lc_cpu_state s, s0; lc_result res;
    lc_exit x = io_exit(0x80, 1, 1);
    remap_dev d;
    /* out 0x80,al; out 0x81,al; mov [ebx],al; out 0x82,al; ud2 */
    static const uint8_t code[] = { 0xe6, 0x80, 0xe6, 0x81, 0x88, 0x03,
                                    0xe6, 0x82, 0x0f, 0x0b };

    rig_up(&r, NULL);
    d.e = r.e;
    d.armed = 0;
    r.f.device = remap_device;
    r.f.ctx = &d;
    memcpy(r.f.ram + 0x7000, code, sizeof code);
    fvm_state_prot32(&s0, 0);
    s0.rip = 0x7000;
    s0.gpr[LC_RBX] = FVM_MMIO + 0x20;
    for (int i = 0; i < 5; i++) {       /* translated at the third */
        s = s0;
        r.f.nlog = 0;
        ck_assert_int_eq(lc_vcpu_handle_exit(r.v, &s, &x, &res), LC_OK);
    }
    ck_assert_uint_eq(res.insns, 4);
    ck_assert_int_eq(res.stop, LC_STOP_END);

    d.armed = 1;                        /* OUT 0x81 remaps */
    s = s0;
    r.f.nlog = 0;
    ck_assert_int_eq(lc_vcpu_handle_exit(r.v, &s, &x, &res), LC_OK);
    ck_assert_int_eq(res.stop, LC_STOP_COHERENCY);
    ck_assert_uint_eq(res.insns, 2);    /* out 0x80, out 0x81: done */
    ck_assert_uint_eq(s.rip, 0x7004);
    ck_assert_uint_eq(r.f.nlog, 2);
    ck_assert_uint_eq(r.f.log[1].addr, 0x81);

    for (int i = 0; i < 3; i++) {       /* flushed: counted afresh */
        s = s0;
        r.f.nlog = 0;
        ck_assert_int_eq(lc_vcpu_handle_exit(r.v, &s, &x, &res), LC_OK);
    }
    ck_assert_uint_eq(res.insns, 4);
    ck_assert_int_eq(res.stop, LC_STOP_END);

    d.armed = 2;                        /* now the MMIO store remaps */
    s = s0;
    r.f.nlog = 0;
    ck_assert_int_eq(lc_vcpu_handle_exit(r.v, &s, &x, &res), LC_OK);
    ck_assert_int_eq(res.stop, LC_STOP_COHERENCY);
    ck_assert_uint_eq(res.insns, 3);    /* ... and the store: done */
    ck_assert_uint_eq(s.rip, 0x7006);
    ck_assert_uint_eq(r.f.nlog, 3);
    ck_assert_uint_eq(r.f.log[2].addr, FVM_MMIO + 0x20);
    rig_down(&r);
}
END_TEST

START_TEST(ret_on_16bit_stack_with_esp_high_bits)
{
    /* Real mode, a 16-bit stack: the RET's slot is at SS:SP, whatever
     * ESP's bits above SP hold (firmware leaves them set). Method 2: no
     * chained run may stand in for the walk following the RET. */
    rig r; lc_cpu_state s; lc_result res; lc_config cfg;
    lc_exit x = io_exit(0xcf8, 1, 1);

    lc_config_init(&cfg);
    cfg.cflow = LC_CFLOW_M2;
    rig_up(&r, &cfg);
    accessor_code(&r);
    for (int i = 0; i < 3; i++) {            /* translated at the third */
        at_accessor_out(&r, &s, 0x7003);
        s.gpr[LC_RSP] = 0x00105ffe;
        ck_assert_int_eq(lc_vcpu_handle_exit(r.v, &s, &x, &res), LC_OK);
    }
    ck_assert_uint_eq(res.insns, 5);         /* out, mov, in, ret, out */
    ck_assert_uint_eq(res.exits_done, 3);
    ck_assert_uint_eq(s.rip, 0x7005);
    ck_assert_uint_eq(s.gpr[LC_RSP], 0x00106000);
    rig_down(&r);
}
END_TEST

/* SeaBIOS's serial input check, in shape (real mode): `in` of the line
 * status, a call to a flush whose common path jumps over output it has
 * nothing to send, an epilogue that reloads ES before its RET, `in`
 * again. The translation from the first IN lays out the flush's
 * fall-through (it exits where the window of 16 ends, so the taken side
 * finds no room in it); the run leaves at the taken branch and
 * goes on with the translation there, whose walk must read the RET's slot
 * through SS although it wrote ES (values.c: a segment write makes only
 * reads through that segment unknown). Before that, the tail's walk
 * stopped at the RET and the two INs took an exit each.
 * The flush is first reached from another caller, whose RET after the
 * call reads a second return address: the tail's translation made then
 * is empty and rests on two reads. Reached from the first caller, the
 * first read differs, so it is made again (calls.c, note_guess()). */
static void sercon_code(rig *r)
{
    static const uint8_t site_a[] = { 0xec,               /* in al,dx */
                                      0xe8, 0xfc, 0x00,   /* call 7100 */
                                      0xec,               /* in al,dx */
                                      0x0f, 0x0b };       /* ud2 */
    static const uint8_t site_b[] = { 0xec,               /* in al,dx */
                                      0xe8, 0xdc, 0x00,   /* call 7100 */
                                      0xc3 };             /* ret */
    static const uint8_t flush[] = {
        0x8e, 0xc6,                 /* 7100 mov es,si */
        0x26, 0xa0, 0x10, 0x00,     /* 7102 mov al,[es:0x10] */
        0x84, 0xc0,                 /* 7106 test al,al */
        0x74, 0x36,                 /* 7108 je 7140 */
        0x90, 0x90, 0x90, 0x90, 0x90,   /* 710a 10 x nop */
        0x90, 0x90, 0x90, 0x90, 0x90,
        0xe6, 0x80,                 /* 7114 out 0x80,al */
        0x8e, 0xc6,                 /* 7116 mov es,si */
        0xc3 };                     /* 7118 ret */
    static const uint8_t tail[] = {
        0x8e, 0xc6,                 /* 7140 mov es,si */
        0xc3 };                     /* 7142 ret */

    memcpy(r->f.ram + 0x7000, site_a, sizeof site_a);
    memcpy(r->f.ram + 0x7020, site_b, sizeof site_b);
    memcpy(r->f.ram + 0x7030, "\x0f\x0b", 2);           /* ud2 */
    memcpy(r->f.ram + 0x7140, tail, sizeof tail);
    memcpy(r->f.ram + 0x7100, flush, sizeof flush);
    r->f.ram[0x5ffe] = 0x30;        /* site B's caller: 0x7030 */
    r->f.ram[0x5fff] = 0x70;
}

static void at_sercon_in(lc_cpu_state *s, uint64_t rip, uint64_t sp)
{
    fvm_state_real(s);
    s->rip = rip;
    s->gpr[LC_RSP] = sp;
    s->gpr[LC_RDX] = 0x3fd;
    s->gpr[LC_RSI] = 0x0050;        /* ES = 0x50: [es:0x10] is 0 */
}

START_TEST(ret_after_segment_reload_followed)
{
    rig r; lc_cpu_state s; lc_result res; lc_stats st;
    lc_exit x = io_exit(0x3fd, 1, 0);

    for (int from_b = 0; from_b < 2; from_b++) {
        rig_up(&r, NULL);
        sercon_code(&r);
        for (int i = 0; from_b && i < 4; i++) {
            at_sercon_in(&s, 0x7020, 0x5ffe);
            ck_assert_int_eq(lc_vcpu_handle_exit(r.v, &s, &x, &res), LC_OK);
            ck_assert_int_eq(res.disposition, LC_HANDLED);
        }
        if (from_b) {   /* left at the taken branch; nothing after it */
            ck_assert_uint_eq(s.rip, 0x7140);
            ck_assert_uint_eq(res.exits_done, 1);
        }
        for (int i = 0; i < 4; i++) {   /* translated at the third */
            at_sercon_in(&s, 0x7000, 0x6000);
            r.f.nlog = 0;
            ck_assert_int_eq(lc_vcpu_handle_exit(r.v, &s, &x, &res), LC_OK);
            ck_assert_int_eq(res.disposition, LC_HANDLED);
        }
        /* in, call, mov es, mov al, test, je; mov es, ret, in */
        ck_assert_int_eq(res.stop, LC_STOP_END);
        ck_assert_uint_eq(res.insns, 9);
        ck_assert_uint_eq(res.exits_done, 2);
        ck_assert_uint_eq(res.exits_saved, 1);
        ck_assert_uint_eq(s.rip, 0x7005);
        ck_assert_uint_eq(s.gpr[LC_RSP], 0x6000);
        ck_assert_uint_eq(s.seg[LC_ES].base, 0x500);
        ck_assert_uint_eq(r.f.nlog, 2);
        ck_assert_int_eq(r.f.log[1].kind, 'i');
        ck_assert_uint_eq(r.f.log[1].addr, 0x3fd);
        lc_vcpu_get_stats(r.v, &st);
        ck_assert_uint_eq(st.coherency_failures, 0);
        rig_down(&r);
    }
}
END_TEST

/* SeaBIOS's debug printf, in shape (32-bit flat): each character goes
 * through putc(), an indirect JMP through the output's function pointer,
 * to a putc of the debug port that lies before its OUT, and back through
 * RETs and JMPs between stretches of code that lie apart. From one OUT to
 * the next the walk meets six stretches, each a code range of its own:
 * the OUT's, the caller's after the CALL, the loop's head, the CALL, the
 * indirect JMP and the putc before the OUT. With four ranges at most the
 * walk stopped at the fifth, so the translation after the OUT held
 * nothing worth running (120 exits in a boot's banner, one a character);
 * with eight, the runs go on by chained runs from character to character
 * (the window of 64 an exit of 9 us gives). */
static void debug_printf_code(rig *r)
{
    static const uint8_t putc_out[] = {
        0x88, 0xd0,                         /* 7000 mov al,dl */
        0x66, 0x8b, 0x15, 0x10, 0xc0, 0, 0, /* 7002 mov dx,[0xc010] */
        0xee,                               /* 7009 out dx,al */
        0xc3 };                             /* 700a ret */
    static const uint8_t call_putc[] = {
        0xb8, 0x00, 0xc0, 0x00, 0x00,       /* 8ff6 mov eax,0xc000 */
        0xe8, 0x00, 0x20, 0x00, 0x00,       /* 8ffb call b000 */
        0xe9, 0xfb, 0x0f, 0x00, 0x00 };     /* 9000 jmp a000 */
    static const uint8_t head[] = {
        0x0f, 0xbe, 0x17,                   /* a000 movsx edx,byte [edi] */
        0x47,                               /* a003 inc edi */
        0x84, 0xd2,                         /* a004 test dl,dl */
        0x74, 0x05,                         /* a006 je a00d */
        0xe9, 0xe9, 0xef, 0xff, 0xff,       /* a008 jmp 8ff6 */
        0x0f, 0x0b };                       /* a00d ud2 */
    static const uint8_t putc_fn[] = {
        0xff, 0x20 };                       /* b000 jmp [eax] */

    memcpy(r->f.ram + 0x7000, putc_out, sizeof putc_out);
    memcpy(r->f.ram + 0x8ff6, call_putc, sizeof call_putc);
    memcpy(r->f.ram + 0xa000, head, sizeof head);
    memcpy(r->f.ram + 0xb000, putc_fn, sizeof putc_fn);
    memcpy(r->f.ram + 0xc000, "\x00\x70\x00\x00", 4);  /* -> 7000 */
    memcpy(r->f.ram + 0xc010, "\x02\x04", 2);           /* port 0x402 */
    memcpy(r->f.ram + 0x6000, "ab", 3);                  /* the string */
}

START_TEST(debug_printf_spans_six_ranges)
{
    rig r; lc_cpu_state s; lc_result res; lc_stats st; lc_config cfg;
    lc_exit x = io_exit(0x402, 1, 1);

    lc_config_init(&cfg);
    cfg.exit_cost_ns = 9000;            /* this host's: a window of 64 */
    rig_up(&r, &cfg);
    debug_printf_code(&r);
    for (int i = 0; i < 4; i++) {       /* translated at the third */
        fvm_state_prot32(&s, 0);
        s.rip = 0x7009;
        s.gpr[LC_RAX] = 'S';
        s.gpr[LC_RDX] = 0x402;
        s.gpr[LC_RDI] = 0x6000;
        s.gpr[LC_RSP] = 0x5ff0;
        memcpy(r.f.ram + 0x5ff0, "\x00\x90\x00\x00", 4);   /* -> 9000 */
        r.f.nlog = 0;
        ck_assert_int_eq(lc_vcpu_handle_exit(r.v, &s, &x, &res), LC_OK);
        ck_assert_int_eq(res.disposition, LC_HANDLED);
    }
    /* The OUT's translation ends after it: the next OUT is the same
     * instruction. The translation after it runs ret, jmp, movsx, inc,
     * test, je, jmp, mov eax, call, jmp [eax], mov al, mov dx, out, by
     * chained runs once a character ('a', 'b'), and the NUL's run leaves
     * at the JE for the end of the string: 1 + 13 + 13 + 6. */
    ck_assert_uint_eq(res.insns, 33);
    ck_assert_uint_eq(res.exits_done, 3);
    ck_assert_uint_eq(res.exits_saved, 2);
    ck_assert_uint_eq(s.rip, 0xa00d);
    ck_assert_uint_eq(s.gpr[LC_RDI], 0x6003);
    ck_assert_uint_eq(s.gpr[LC_RSP], 0x5ff4);
    ck_assert_uint_eq(r.f.nlog, 3);
    ck_assert_int_eq(r.f.log[1].kind, 'o');
    ck_assert_uint_eq(r.f.log[1].addr, 0x402);
    ck_assert_uint_eq(r.f.log[1].value, 'a');
    ck_assert_uint_eq(r.f.log[2].value, 'b');
    lc_vcpu_get_stats(r.v, &st);
    ck_assert_uint_eq(st.coherency_failures, 0);
    rig_down(&r);
}
END_TEST

/* The bound on chained runs per exit keeps its ratio to the window
 * (engine.c: 8 per 16 instructions). 40 blocks in real mode, each
 * `in al,0x80; test al,al; jnz <next block>` and a fall-through of OUTs
 * that fills any window, so no block's translation lays out its taken
 * side: the device answers 1, every run leaves at its JNZ and goes on by
 * a chained run of the next block's translation. One exit then does the
 * IN of as many blocks as the bound lets it: 1 + 8 with the paper's
 * window of 16 (--exit-cost 0), 1 + 32 with the window of 64 an exit of
 * 9 us gives. */
static lc_cb_result answer_one(fvm *f, fvm_access *a)
{
    if (a->kind == 'i' && a->addr == 0x80) {
        a->value = 1;
        return LC_CB_OK;
    }
    return fvm_default_device(f, a);
}

START_TEST(chain_bound_follows_window)
{
    static const uint32_t cost[2] = { 0, 9000 };
    static const unsigned runs[2] = { 1 + 8, 1 + 32 };

    for (int k = 0; k < 2; k++) {
        rig r; lc_cpu_state s; lc_result res; lc_config cfg;
        lc_exit x = io_exit(0x80, 1, 0);

        lc_config_init(&cfg);
        cfg.exit_cost_ns = cost[k];
        rig_up(&r, &cfg);
        r.f.device = answer_one;
        for (unsigned b = 0; b < 40; b++) {
            uint8_t *p = r.f.ram + 0x1000 + b * 128;
            p[0] = 0xe4; p[1] = 0x80;       /* in al,0x80 */
            p[2] = 0x84; p[3] = 0xc0;       /* test al,al */
            p[4] = 0x75; p[5] = 128 - 6;    /* jnz <next block> */
            for (unsigned i = 6; i + 1 < 128; i += 2) {
                p[i] = 0xe6; p[i + 1] = 0x81;       /* out 0x81,al */
            }
        }
        for (int i = 0; i < 3; i++) {       /* translated at the third */
            fvm_state_real(&s);
            s.rip = 0x1000;
            ck_assert_int_eq(lc_vcpu_handle_exit(r.v, &s, &x, &res), LC_OK);
            ck_assert_int_eq(res.disposition, LC_HANDLED);
        }
        ck_assert_uint_eq(res.exits_done, runs[k]);
        ck_assert_uint_eq(res.insns, 3 * runs[k]);
        ck_assert_uint_eq(s.rip, 0x1000 + runs[k] * 128);
        rig_down(&r);
    }
}
END_TEST

/* Under CR4.CET the translation ends before the accessor's RET, which
 * the runtime does not run (the shadow stack, lcr_cet_guards()): out,
 * mov, in, as with LC_TECH_CALLS off. */
START_TEST(cet_ends_cluster_before_ret)
{
    rig r; lc_cpu_state s; lc_result res;
    lc_exit x = io_exit(0xcf8, 1, 1);

    rig_up(&r, NULL);
    accessor_code(&r);
    for (int i = 0; i < 4; i++) {
        at_accessor_out(&r, &s, 0x7003);
        s.cr4 |= LC_CR4_CET;
        ck_assert_int_eq(lc_vcpu_handle_exit(r.v, &s, &x, &res), LC_OK);
        ck_assert_uint_eq(res.insns, i < 2 ? 1 : 3);   /* out, mov, in */
    }
    ck_assert_uint_eq(s.rip, 0x7107);
    ck_assert_uint_eq(s.gpr[LC_RSP], 0x5ffe);
    rig_down(&r);
}
END_TEST

/* RF (a #DB handler's IRET sets it to pass an instruction breakpoint)
 * is clear after a run that completed instructions, the inline forms'
 * among them, and reported as a dirty RFLAGS. */
START_TEST(rf_cleared_after_run)
{
    rig r; lc_cpu_state s; lc_result res;
    lc_exit x = io_exit(0xcf8, 1, 1);

    rig_up(&r, NULL);
    accessor_code(&r);
    for (int i = 0; i < 3; i++) {
        at_accessor_out(&r, &s, 0x7003);
        s.rflags |= LC_RFLAGS_RF;
        ck_assert_int_eq(lc_vcpu_handle_exit(r.v, &s, &x, &res), LC_OK);
        ck_assert_int_eq(res.disposition, LC_HANDLED);
        ck_assert(!(s.rflags & LC_RFLAGS_RF));
        ck_assert(res.dirty & LC_DIRTY_RFLAGS);
    }
    ck_assert_uint_eq(res.insns, 5);         /* out, mov, in, ret, out */
    rig_down(&r);
}
END_TEST

/* An exit reported with RIP past the instruction (KVM's MMIO writes):
 * the adapter finds its length by looking at the bytes before RIP. The
 * CPU never fetched those of the page before, so their walk may set no
 * accessed bit (SDM 4.8): the look is strict, the page before (A clear:
 * never used) is not the instruction's, and the 2-byte MOV is found in
 * the page it is on (whose entries the CPU's fetch left A set). */
START_TEST(insn_len_sets_no_accessed_bit_before_rip)
{
    rig r; lc_cpu_state s;
    lc_exit x;
    uint64_t *pml4, *pdpt, *pd, *pd3, *pt;
    static const uint8_t store[] = { 0x89, 0x03 };  /* mov [rbx],eax */

    rig_up(&r, NULL);
    fvm_state_long64(&r.f, &s);
    pml4 = (uint64_t *)(void *)(r.f.ram + 0x1000);
    pdpt = (uint64_t *)(void *)(r.f.ram + 0x2000);
    pd = (uint64_t *)(void *)(r.f.ram + 0x3000);
    pd3 = (uint64_t *)(void *)(r.f.ram + 0x4000);
    pt = (uint64_t *)(void *)(r.f.ram + 0x5000);
    for (int i = 0; i < 512; i++)             /* the first 2 MiB, 4 KiB */
        pt[i] = ((uint64_t)i << 12) | 0x7;
    pd[0] = 0x5000 | 0x7;
    /* what the CPU's fetch of the MOV and its store used: A set */
    pml4[0] |= 0x20;
    pdpt[0] |= 0x20;
    pdpt[3] |= 0x20;
    pd[0] |= 0x20;
    pd3[(FVM_MMIO >> 21) & 511] |= 0x60;
    pt[0x101] |= 0x20;
    memcpy(r.f.ram + 0x101001, store, sizeof store);
    s.rip = 0x101003;
    s.gpr[LC_RBX] = FVM_MMIO;
    memset(&x, 0, sizeof x);
    x.kind = LC_EXIT_MMIO;
    x.rip = LC_EXIT_RIP_PAST;
    x.u.mmio.gpa = FVM_MMIO;
    x.u.mmio.len = 4;
    x.u.mmio.is_write = 1;
    ck_assert_uint_eq(lci_adapter_insn_len(r.v, &s, &x, 0), 2);
    ck_assert_uint_eq(pt[0x100] & 0x20, 0);   /* the page before: no A */
    rig_down(&r);
}
END_TEST

/* A run that comes back to the exiting read (an IN or MMIO read KVM
 * completes at that RIP): the read the guest makes there now is of the
 * port DX names now, or the address its pointer holds now
 * (lci_adapter_exit_now(), which the KVM adapter reports and performs);
 * anything else at RIP is not that read. */
START_TEST(exit_now_follows_moved_registers)
{
    rig r; lc_cpu_state s;
    lc_exit x;

    rig_up(&r, NULL);
    fvm_state_real(&s);
    s.rip = 0x7000;
    s.gpr[LC_RDX] = 0x61;
    memcpy(r.f.ram + 0x7000, "\xec", 1);                  /* in al,dx */
    x = io_exit(0x60, 1, 0);
    ck_assert_int_eq(lci_adapter_exit_now(r.v, &s, &x), 0);
    ck_assert_uint_eq(x.u.io.port, 0x61);
    memcpy(r.f.ram + 0x7000, "\xe4\x71", 2);             /* in al,0x71 */
    ck_assert_int_eq(lci_adapter_exit_now(r.v, &s, &x), 0);
    ck_assert_uint_eq(x.u.io.port, 0x71);
    x = io_exit(0x60, 2, 0);                              /* another size */
    ck_assert_int_eq(lci_adapter_exit_now(r.v, &s, &x), -1);
    ck_assert_uint_eq(x.u.io.port, 0x60);
    memcpy(r.f.ram + 0x7000, "\xe6\x80", 2);             /* an OUT */
    x = io_exit(0x60, 1, 0);
    ck_assert_int_eq(lci_adapter_exit_now(r.v, &s, &x), -1);
    /* mov eax,[ebx]: the pointer moved on */
    fvm_state_prot32(&s, 0);
    s.rip = 0x7000;
    s.gpr[LC_RBX] = FVM_MMIO + 8;
    memcpy(r.f.ram + 0x7000, "\x8b\x03", 2);
    memset(&x, 0, sizeof x);
    x.kind = LC_EXIT_MMIO;
    x.rip = LC_EXIT_RIP_AT;
    x.u.mmio.gpa = FVM_MMIO;
    x.u.mmio.len = 4;
    ck_assert_int_eq(lci_adapter_exit_now(r.v, &s, &x), 0);
    ck_assert_uint_eq(x.u.mmio.gpa, FVM_MMIO + 8);
    x.u.mmio.len = 2;                                     /* another width */
    ck_assert_int_eq(lci_adapter_exit_now(r.v, &s, &x), -1);
    rig_down(&r);
}
END_TEST

/* A translation larger than the translation cache's whole cap (4 KiB,
 * the least lc_config_validate() takes; a cluster of 16 instructions,
 * out, 14 adds, out, about 4.4 KiB):
 * not kept, and the exit declined, not an LC_ERR_NOMEM; an empty
 * translation in its place, so later exits here form nothing again. */
START_TEST(translation_over_cache_cap)
{
    rig r; lc_cpu_state s, s0; lc_result res; lc_config cfg; lc_stats st;
    lc_exit x = io_exit(0x80, 1, 1);
    uint8_t code[2 + 14 * 2 + 2 + 2];
    size_t n = 0;

    code[n++] = 0xe6; code[n++] = 0x80;              /* out 0x80,al */
    for (int i = 0; i < 14; i++) {
        code[n++] = 0x01; code[n++] = 0xc8;          /* add eax,ecx */
    }
    code[n++] = 0xe6; code[n++] = 0x81;
    code[n++] = 0x0f; code[n++] = 0x0b;              /* ud2 */
    lc_config_init(&cfg);
    cfg.tcache_max_bytes = 4096;
    rig_up(&r, &cfg);
    fvm_state_prot32(&s0, 0);
    s0.rip = 0x7000;
    memcpy(r.f.ram + 0x7000, code, n);
    for (int i = 0; i < 6; i++) {
        s = s0;
        ck_assert_int_eq(lc_vcpu_handle_exit(r.v, &s, &x, &res), LC_OK);
        ck_assert_int_eq(res.disposition, i < 2 ? LC_HANDLED : LC_DECLINED);
    }
    lc_vcpu_get_stats(r.v, &st);
    ck_assert_uint_eq(st.translations, 1);
    ck_assert_uint_le(st.tcache_bytes, 4096);
    rig_down(&r);
}
END_TEST

START_TEST(no_chain_without_calls)
{
    rig r; lc_cpu_state s; lc_result res; lc_config cfg;
    lc_exit x = io_exit(0xcf8, 1, 1);

    lc_config_init(&cfg);
    cfg.techniques = LC_TECH_ALL & ~LC_TECH_CALLS;
    rig_up(&r, &cfg);
    accessor_code(&r);
    for (int i = 0; i < 4; i++) {
        at_accessor_out(&r, &s, i < 3 ? 0x7003 : 0x7013);
        ck_assert_int_eq(lc_vcpu_handle_exit(r.v, &s, &x, &res), LC_OK);
        ck_assert_uint_eq(res.insns, i < 2 ? 1 : 3);   /* out, mov, in */
    }
    ck_assert_uint_eq(s.rip, 0x7107);
    rig_down(&r);
}
END_TEST

/* A conditional branch whose fall-through runs the window out without an
 * exit (`in al,dx; cmp al,0xff; je absent; <32 instructions>` and at
 * `absent` the next port access): the formation lays out the taken side
 * (translator/calls.c), so an absent device costs one exit for both port
 * accesses. When the branch is not taken the run leaves the translation
 * cleanly at the fall-through, the side not laid out, and nothing there
 * is worth running. */
static void absent_branch(uint32_t value, unsigned insns, unsigned exits,
                          uint64_t rip)
{
    rig r; lc_cpu_state s, s0; lc_result res;
    lc_exit x = io_exit(0xcfc, 1, 0);
    uint8_t code[0x40];

    memset(code, 0x90, sizeof code);                 /* nop */
    code[0x00] = 0xec;                               /* in al,dx */
    code[0x01] = 0x3c; code[0x02] = 0xff;            /* cmp al,0xff */
    code[0x03] = 0x74; code[0x04] = 0x2b;            /* je 0x7030 */
    code[0x25] = 0x0f; code[0x26] = 0x0b;            /* ud2 */
    code[0x30] = 0xe6; code[0x31] = 0x80;            /* out 0x80,al */
    code[0x32] = 0x0f; code[0x33] = 0x0b;            /* ud2 */
    rig_up(&r, NULL);
    fvm_state_real(&s0);
    s0.rip = 0x7000;
    s0.gpr[LC_RDX] = 0xcfc;
    memcpy(r.f.ram + 0x7000, code, sizeof code);
    r.f.nin_seq = 1;
    r.f.in_seq[0] = value;
    for (int i = 0; i < 3; i++) {
        s = s0;
        ck_assert_int_eq(lc_vcpu_handle_exit(r.v, &s, &x, &res), LC_OK);
    }
    ck_assert_int_eq(res.disposition, LC_HANDLED);
    ck_assert_int_eq(res.stop, LC_STOP_END);
    ck_assert_uint_eq(res.insns, insns);
    ck_assert_uint_eq(res.exits_done, exits);
    ck_assert_uint_eq(s.rip, rip);
    ck_assert_uint_eq(s.gpr[LC_RAX] & 0xff, value);
    rig_down(&r);
}

START_TEST(absent_device_branch)
{
    absent_branch(0xff, 4, 2, 0x7032);   /* in, cmp, je, out */
    absent_branch(0x12, 3, 1, 0x7005);   /* in, cmp, je: leaves */
}
END_TEST

/* The engine does not act on an instruction that is not the one the
 * hypervisor reported. */
START_TEST(mismatched_exit_declines)
{
    rig r; lc_cpu_state s; lc_result res;
    lc_exit x;

    memset(&x, 0, sizeof x);
    x.kind = LC_EXIT_CPUID;
    rig_up(&r, NULL);
    fvm_state_real(&s);
    s.rip = 0x7000;
    r.f.ram[0x7000] = 0xee;            /* out dx, al */
    ck_assert_int_eq(lc_vcpu_handle_exit(r.v, &s, &x, &res), LC_OK);
    ck_assert_int_eq(res.disposition, LC_DECLINED);
    ck_assert_uint_eq(s.rip, 0x7000);
    x = io_exit(0, 1, 0);              /* IN, but the code is OUT */
    ck_assert_int_eq(lc_vcpu_handle_exit(r.v, &s, &x, &res), LC_OK);
    ck_assert_int_eq(res.disposition, LC_DECLINED);
    ck_assert_uint_eq(r.f.nlog, 0);
    rig_down(&r);
}
END_TEST

/* Every fact the VMM reports about the exit is checked against the
 * instruction decoded there and its registers, on a miss and on a hit
 * alike; any disagreement declines the exit with nothing done. */
static void expect_declined(rig *r, const lc_cpu_state *s0, const lc_exit *x)
{
    lc_cpu_state s = *s0;
    lc_result res;

    r->f.nlog = 0;
    ck_assert_int_eq(lc_vcpu_handle_exit(r->v, &s, x, &res), LC_OK);
    ck_assert_int_eq(res.disposition, LC_DECLINED);
    ck_assert_int_eq(res.stop, LC_STOP_UNSUPPORTED);
    ck_assert_uint_eq(s.rip, s0->rip);
    ck_assert_uint_eq(r->f.nlog, 0);
}

START_TEST(exit_facts_cross_checked)
{
    rig r; lc_cpu_state s, s0; lc_result res;
    lc_exit good = io_exit(0xcf8, 4, 1), x;

    bios_rig(&r, &s0);                 /* 66 ef: out dx, eax */
    s0.gpr[LC_RAX] = 0x80000010;
    good.insn_len = 2;
    good.reported = LC_EXIT_HAS_PORT | LC_EXIT_HAS_VALUE;
    good.u.io.value = 0x80000010;
    good.u.io.count = 1;
    for (int hit = 0; hit < 2; hit++) {
        x = good; x.insn_len = 1;                 expect_declined(&r, &s0, &x);
        x = good; x.u.io.port = 0xcfc;            expect_declined(&r, &s0, &x);
        x = good; x.u.io.value = 0x80000014;      expect_declined(&r, &s0, &x);
        x = good; x.u.io.size = 1;                expect_declined(&r, &s0, &x);
        x = good; x.u.io.count = 2;               expect_declined(&r, &s0, &x);
        x = good; x.u.io.is_rep = 1;              expect_declined(&r, &s0, &x);
        /* unreported facts are not compared */
        x = good; x.reported = 0; x.u.io.port = 1; x.u.io.value = 2;
        x.insn_len = 0;
        for (int i = 0; i < (hit ? 1 : 3); i++) {  /* the third translates */
            s = s0;
            ck_assert_int_eq(lc_vcpu_handle_exit(r.v, &s, &x, &res), LC_OK);
            ck_assert_int_eq(res.disposition, LC_HANDLED);
        }
        ck_assert(res.translated);     /* the cases above now meet a hit */
    }
    s = s0;
    ck_assert_int_eq(lc_vcpu_handle_exit(r.v, &s, &good, &res), LC_OK);
    ck_assert_int_eq(res.disposition, LC_HANDLED);
    ck_assert_uint_eq(res.exits_saved, 2);

    /* RDMSR: ECX against the reported MSR */
    memset(&x, 0, sizeof x);
    x.kind = LC_EXIT_RDMSR;
    x.reported = LC_EXIT_HAS_MSR;
    x.u.msr = 0x1b;
    s0.rip = 0x7100;
    s0.gpr[LC_RCX] = 0x10;
    r.f.ram[0x7100] = 0x0f;
    r.f.ram[0x7101] = 0x32;            /* rdmsr */
    expect_declined(&r, &s0, &x);
    s0.gpr[LC_RCX] = 0x1b;
    s = s0;
    ck_assert_int_eq(lc_vcpu_handle_exit(r.v, &s, &x, &res), LC_OK);
    ck_assert_int_eq(res.disposition, LC_HANDLED);
    rig_down(&r);
}
END_TEST

/* MMIO: the direction, the width and the value of a MOV store. */
START_TEST(mmio_facts_cross_checked)
{
    rig r; lc_cpu_state s, s0; lc_result res;
    lc_exit x;

    rig_up(&r, NULL);
    fvm_state_prot32(&s0, 0);
    s0.rip = 0x7000;
    s0.gpr[LC_RBX] = FVM_MMIO + 0x10;
    s0.gpr[LC_RAX] = 0x12345678;
    r.f.ram[0x7000] = 0x89;
    r.f.ram[0x7001] = 0x03;            /* mov [ebx], eax */
    memset(&x, 0, sizeof x);
    x.kind = LC_EXIT_MMIO;
    x.u.mmio.gpa = FVM_MMIO + 0x10;
    x.u.mmio.len = 4;
    x.u.mmio.is_write = 1;
    x.reported = LC_EXIT_HAS_VALUE;
    x.u.mmio.value = 0x12345679;
    expect_declined(&r, &s0, &x);
    x.u.mmio.value = 0x12345678;
    x.u.mmio.len = 8;                  /* wider than the store */
    expect_declined(&r, &s0, &x);
    x.u.mmio.len = 4;
    x.u.mmio.is_write = 0;             /* a read, but the code stores */
    expect_declined(&r, &s0, &x);
    x.u.mmio.is_write = 1;
    s = s0;
    ck_assert_int_eq(lc_vcpu_handle_exit(r.v, &s, &x, &res), LC_OK);
    ck_assert_int_eq(res.disposition, LC_HANDLED);
    ck_assert_uint_eq(s.rip, 0x7002);
    rig_down(&r);
}
END_TEST

/* lc_vm_ops.size: a table from an older (smaller) header has fewer
 * callbacks; the engine must treat the ones beyond its size as NULL,
 * never read them. And the table is copied: the VMM's may go away. */
START_TEST(vm_ops_size_is_honoured)
{
    static const size_t sizes[] = {
        offsetof(lc_vm_ops, dr_write),          /* ends before dr_write */
        offsetof(lc_vm_ops, dr_write) + 4,      /* ends inside it */
    };
    rig r; lc_cpu_state s; lc_result res;
    lc_exit x;
    lc_vm_ops ops;

    for (unsigned i = 0; i < 2; i++) {
        ops = fvm_ops;                 /* dr_write is set beyond the size */
        ops.size = sizes[i];
        fvm_init(&r.f);
        ck_assert_int_eq(lc_engine_create(NULL, &ops, &r.e), LC_OK);
        ck_assert_int_eq(lc_vcpu_create(r.e, 0, &r.f, &r.v), LC_OK);
        fvm_state_prot32(&s, 0);
        s.rip = 0x7000;
        fvm_load_example(&r.f, "passmark-dr", 0x7000);
        memset(&x, 0, sizeof x);
        x.kind = LC_EXIT_DR_ACCESS;
        ck_assert_int_eq(lc_vcpu_handle_exit(r.v, &s, &x, &res), LC_OK);
        ck_assert_int_eq(res.disposition, LC_DECLINED);   /* no dr_write */
        ck_assert_uint_eq(r.f.nlog, 0);
        ck_assert_uint_eq(s.rip, 0x7000);
        rig_down(&r);
    }

    /* Copied: clearing the VMM's table after creation changes nothing. */
    ops = fvm_ops;
    fvm_init(&r.f);
    ck_assert_int_eq(lc_engine_create(NULL, &ops, &r.e), LC_OK);
    ck_assert_int_eq(lc_vcpu_create(r.e, 0, &r.f, &r.v), LC_OK);
    memset(&ops, 0, sizeof ops);
    fvm_state_real(&s);
    s.rip = 0x7000;
    s.gpr[LC_RDX] = 0xcf8;
    fvm_load_example(&r.f, "bios-pci", 0x7000);
    x = io_exit(0xcf8, 4, 1);
    ck_assert_int_eq(lc_vcpu_handle_exit(r.v, &s, &x, &res), LC_OK);
    ck_assert_int_eq(res.disposition, LC_HANDLED);
    ck_assert_uint_eq(r.f.nlog, 1);
    rig_down(&r);
}
END_TEST

/* lc_vm_ops.rdtsc is the one callback after accepts_wide: a size that
 * ends inside it must leave it out (NULL: RDTSC ends the cluster), never
 * keep half a pointer. With the whole table, RDTSC is a gap filler. */
static unsigned rdtsc_calls;
static lc_cb_result count_rdtsc(void *opaque, uint64_t *tsc)
{
    (void)opaque;
    rdtsc_calls++;
    *tsc = 0x1122334455667788ull;
    return LC_CB_OK;
}

START_TEST(vm_ops_size_inside_rdtsc)
{
    static const uint8_t code[] = { 0xe6, 0x80, 0x0f, 0x31, 0xe6, 0x80 };
    static const size_t sizes[] = {
        sizeof(lc_vm_ops),
        offsetof(lc_vm_ops, rdtsc) + 4,         /* ends inside rdtsc */
    };
    rig r; lc_cpu_state s; lc_result res;
    lc_exit x;
    lc_vm_ops ops;

    for (unsigned i = 0; i < 2; i++) {
        ops = fvm_ops;
        ops.rdtsc = count_rdtsc;
        ops.size = sizes[i];
        rdtsc_calls = 0;
        fvm_init(&r.f);
        ck_assert_int_eq(lc_engine_create(NULL, &ops, &r.e), LC_OK);
        ck_assert_int_eq(lc_vcpu_create(r.e, 0, &r.f, &r.v), LC_OK);
        memcpy(r.f.ram + 0x7000, code, sizeof code);
        x = io_exit(0x80, 1, 1);
        for (int k = 0; k < 3; k++) {   /* translated once the site is hot */
            fvm_state_prot32(&s, 0);
            s.rip = 0x7000;
            r.f.nlog = 0;
            rdtsc_calls = 0;
            ck_assert_int_eq(lc_vcpu_handle_exit(r.v, &s, &x, &res), LC_OK);
            ck_assert_int_eq(res.disposition, LC_HANDLED);
        }
        if (i == 0) {               /* out; rdtsc; out in one exit */
            ck_assert_uint_eq(rdtsc_calls, 1);
            ck_assert_uint_eq(r.f.nlog, 2);
            ck_assert_uint_eq(s.rip, 0x7006);
            ck_assert_uint_eq(s.gpr[LC_RAX], 0x55667788u);
            ck_assert_uint_eq(s.gpr[LC_RDX], 0x11223344u);
        } else {                    /* no rdtsc: the run ends before it */
            ck_assert_uint_eq(rdtsc_calls, 0);
            ck_assert_uint_eq(r.f.nlog, 1);
            ck_assert_uint_eq(s.rip, 0x7002);
        }
        rig_down(&r);
    }
}
END_TEST

/* Section 5: a stream of ever-new exiting instructions (an address-space
 * randomized reboot loop, a JIT) makes the FIFOs leak; the leak guard
 * forces translation, and the cache's cap keeps memory bounded. */
START_TEST(leak_guard_and_memory_cap)
{
    rig r; lc_cpu_state s; lc_result res; lc_stats st;
    lc_exit x = io_exit(0x80, 1, 1);
    lc_config c;
    const unsigned n = 20000;

    lc_config_init(&c);
    c.tcache_max_bytes = 64 << 10;
    rig_up(&r, &c);
    memset(r.f.ram + 0x10000, 0xe6, 2 * n);    /* n x "out 0x80? ..." */
    for (unsigned i = 0; i < n; i++) {
        r.f.ram[0x10000 + 2 * i] = 0xe6;
        r.f.ram[0x10000 + 2 * i + 1] = 0x80;
    }
    for (unsigned i = 0; i < n; i++) {
        fvm_state_prot32(&s, 0);
        s.rip = 0x10000 + 2 * i;
        ck_assert_int_eq(lc_vcpu_handle_exit(r.v, &s, &x, &res), LC_OK);
        ck_assert_int_eq(res.disposition, LC_HANDLED);
    }
    lc_vcpu_get_stats(r.v, &st);
    ck_assert_uint_gt(st.forced_translations, n / 2);
    ck_assert_uint_le(st.tcache_bytes, c.tcache_max_bytes);
    ck_assert_uint_gt(st.evictions, 0);
    rig_down(&r);
}
END_TEST

/* Techniques switch off: without LC_TECH_SINGLE nothing is translated. */
START_TEST(techniques_switch)
{
    rig r; lc_cpu_state s, s0; lc_result res; lc_stats st;
    lc_exit x = io_exit(0xcf8, 4, 1);
    lc_config c;

    lc_config_init(&c);
    c.techniques = 0;
    rig_up(&r, &c);
    fvm_state_real(&s0);
    s0.rip = 0x7000;
    fvm_load_example(&r.f, "bios-pci", 0x7000);
    for (int i = 0; i < 5; i++) {
        s = s0;
        ck_assert_int_eq(lc_vcpu_handle_exit(r.v, &s, &x, &res), LC_OK);
        ck_assert_uint_eq(res.insns, 1);
    }
    lc_vcpu_get_stats(r.v, &st);
    ck_assert_uint_eq(st.translations, 0);
    ck_assert_uint_eq(st.exits_interpreted, 5);
    rig_down(&r);

    /* Single-exit translations only: cached, but one instruction each. */
    c.techniques = LC_TECH_SINGLE;
    rig_up(&r, &c);
    fvm_load_example(&r.f, "bios-pci", 0x7000);
    for (int i = 0; i < 5; i++) {
        s = s0;
        lc_vcpu_handle_exit(r.v, &s, &x, &res);
        ck_assert_uint_eq(res.insns, 1);
    }
    lc_vcpu_get_stats(r.v, &st);
    ck_assert_uint_eq(st.translations, 1);
    ck_assert_uint_eq(st.exits_translated, 3);
    rig_down(&r);
}
END_TEST

/* Section 3: the PAE PTE pair, two 32-bit stores to a traced page table,
 * after the first exit: one exit does both. Delivered as one 64-bit write
 * when the VMM accepts that width, else as two writes. */
static void pae_pair(int wide)
{
    rig r; lc_cpu_state s, s0; lc_result res;
    lc_vm_ops ops = fvm_ops;
    lc_exit x;

    ops.accepts_wide = wide ? LC_WIDE_8 : 0;
    fvm_init(&r.f);
    ck_assert_int_eq(lc_engine_create(NULL, &ops, &r.e), LC_OK);
    ck_assert_int_eq(lc_vcpu_create(r.e, 0, &r.f, &r.v), LC_OK);
    fvm_state_prot32(&s0, 0);
    s0.rip = 0x7000;
    s0.gpr[LC_RCX] = 0x50008;           /* the PTE */
    s0.gpr[LC_RSI] = 0x80000000;        /* top half: NX */
    s0.gpr[LC_RBX] = 0x12345067;        /* bottom half */
    r.f.traced_gfn = 0x50;
    fvm_load_example(&r.f, "pae-pte-pair", 0x7000);
    memset(&x, 0, sizeof x);
    x.kind = LC_EXIT_TRACED;
    x.u.mmio.gpa = 0x5000c;
    x.u.mmio.len = 4;
    x.u.mmio.is_write = 1;
    for (int i = 0; i < 3; i++) {
        s = s0;
        r.f.nlog = 0;
        ck_assert_int_eq(lc_vcpu_handle_exit(r.v, &s, &x, &res), LC_OK);
    }
    ck_assert(res.translated);
    ck_assert_uint_eq(res.insns, 2);
    ck_assert_uint_eq(res.exits_saved, 1);
    ck_assert_uint_eq(s.rip, 0x7005);
    if (wide) {
        ck_assert_uint_eq(r.f.nlog, 1);
        ck_assert(r.f.log[0].kind == 't' && r.f.log[0].addr == 0x50008 &&
                  r.f.log[0].size == 8 &&
                  r.f.log[0].value == 0x8000000012345067ull);
    } else {
        ck_assert_uint_eq(r.f.nlog, 2);
        ck_assert(r.f.log[0].addr == 0x5000c && r.f.log[0].size == 4 &&
                  r.f.log[1].addr == 0x50008 && r.f.log[1].size == 4);
    }
    ck_assert_uint_eq(*(uint64_t *)(void *)(r.f.ram + 0x50008),
                      0x8000000012345067ull);
    rig_down(&r);
}

START_TEST(pae_pair_two_writes) { pae_pair(0); }
END_TEST

START_TEST(pae_pair_one_wide_write) { pae_pair(1); }
END_TEST

/* Found by fuzz_engine: a REP OUTS that completes some iterations and
 * then stops before the next (here a fault at the end of RAM) changed
 * the state; the engine must say so (LC_HANDLED, registers dirty, RIP
 * still at the instruction), never LC_DECLINED. */
START_TEST(partial_rep_is_handled)
{
    rig r; lc_cpu_state s, before; lc_result res;
    lc_exit x = io_exit(0x3f8, 1, 1);

    x.u.io.is_string = 1;
    x.u.io.is_rep = 1;
    rig_up(&r, NULL);
    fvm_state_prot32(&s, 0);
    s.rip = 0x7000;
    r.f.ram[0x7000] = 0xf3;
    r.f.ram[0x7001] = 0x6e;                    /* rep outsb */
    s.gpr[LC_RSI] = FVM_RAM_SIZE - 2;           /* two bytes, then nothing */
    s.gpr[LC_RCX] = 5;
    before = s;
    ck_assert_int_eq(lc_vcpu_handle_exit(r.v, &s, &x, &res), LC_OK);
    ck_assert_int_eq(res.disposition, LC_HANDLED);
    ck_assert(res.dirty & LC_DIRTY_GPRS);
    ck_assert_uint_eq(s.gpr[LC_RCX], 3);
    ck_assert_uint_eq(s.gpr[LC_RSI], FVM_RAM_SIZE);
    ck_assert_uint_eq(s.rip, before.rip);
    ck_assert_uint_eq(r.f.nlog, 2);
    rig_down(&r);
}
END_TEST

/* Section 5, reasons: the SLES stores have been seen exiting to a device,
 * so their accesses get routes. The first translated run learns each
 * store's device frame; later runs send those accesses straight to the
 * device without asking the VMM's gpa_map, and nothing else changes. */
static unsigned device_lookups;

static void counting_map(void *o, uint64_t gpa, int w, lc_gpa_map *m)
{
    if (gpa >= FVM_MMIO && gpa < FVM_MMIO + FVM_MMIO_SIZE)
        device_lookups++;
    fvm_gpa_map(o, gpa, w, m);
}

START_TEST(device_routes)
{
    rig r; lc_cpu_state s, s0; lc_result res; lc_stats st;
    lc_vm_ops ops = fvm_ops;
    lc_exit x;
    static const uint64_t stores[] = { 0x300015, 0x30002f, 0x300044 };

    ops.gpa_map = counting_map;
    fvm_init(&r.f);
    ck_assert_int_eq(lc_engine_create(NULL, &ops, &r.e), LC_OK);
    ck_assert_int_eq(lc_vcpu_create(r.e, 0, &r.f, &r.v), LC_OK);
    fvm_state_long64(&r.f, &s0);
    s0.rip = 0x300000;
    s0.gpr[LC_RAX] = FVM_MMIO + 0x201000;
    s0.gpr[LC_RCX] = 0 - (FVM_MMIO + 0x201000);  /* AND/SUB recompute RAX */
    s0.gpr[LC_RSI] = 0x10000000;                 /* table load: RAM */
    fvm_load_example(&r.f, "sles-weak", 0x300000);
    memset(&x, 0, sizeof x);
    x.kind = LC_EXIT_MMIO;
    x.u.mmio.len = 4;
    x.u.mmio.is_write = 1;
    for (unsigned i = 0; i < 3; i++) {          /* the later stores exit */
        s = s0;
        s.rip = stores[i];
        lc_vcpu_handle_exit(r.v, &s, &x, &res);
    }
    for (int i = 0; i < 3; i++) {               /* 2 interpreted, 1 learns */
        s = s0;
        lc_vcpu_handle_exit(r.v, &s, &x, &res);
    }
    ck_assert_uint_eq(res.insns, 14);
    lc_vcpu_get_stats(r.v, &st);
    ck_assert_uint_eq(st.routed_accesses, 0);
    device_lookups = 0;
    r.f.nlog = 0;
    s = s0;
    ck_assert_int_eq(lc_vcpu_handle_exit(r.v, &s, &x, &res), LC_OK);
    ck_assert_uint_eq(res.insns, 14);
    ck_assert_uint_eq(res.exits_done, 4);
    ck_assert_uint_eq(device_lookups, 0);
    ck_assert_uint_eq(r.f.nlog, 4);
    ck_assert(r.f.log[0].addr == FVM_MMIO && r.f.log[1].addr == FVM_MMIO + 0x10 &&
              r.f.log[2].addr == FVM_MMIO && r.f.log[3].addr == FVM_MMIO + 0x10);
    lc_vcpu_get_stats(r.v, &st);
    ck_assert_uint_eq(st.routed_accesses, 4);
    /* A flush (the VMM changed its guest-physical map) forgets routes:
     * the next exit at the same site is not a cache hit, the translation
     * that held them is gone by then (the flush is seen by each vCPU on
     * its next exit, as KVM's vCPU requests are, so the bytes are counted
     * after that exit) and that exit asks the VMM's gpa_map again for the
     * device frames, with the same accesses in the same order. Each check
     * fails if the flush did nothing. */
    {
        lc_stats before, after, est;
        lc_vcpu_get_stats(r.v, &before);
        ck_assert_uint_gt(before.exits_translated, 0);
        ck_assert_int_eq(lc_engine_flush(r.e), LC_OK);
        device_lookups = 0;
        r.f.nlog = 0;
        s = s0;
        ck_assert_int_eq(lc_vcpu_handle_exit(r.v, &s, &x, &res), LC_OK);
        lc_engine_get_stats(r.e, &est);
        ck_assert_uint_eq(est.tcache_bytes, 0);
        lc_vcpu_get_stats(r.v, &after);
        ck_assert_uint_eq(after.exits_translated, before.exits_translated);
        ck_assert_uint_eq(after.routed_accesses, before.routed_accesses);
        ck_assert_uint_gt(device_lookups, 0);
        ck_assert_uint_ge(r.f.nlog, 1);
        ck_assert_uint_eq(r.f.log[0].addr, FVM_MMIO);
    }
    rig_down(&r);
}
END_TEST

/* The VMM completed the exiting IN (RIP past it, as the KVM adapter does
 * on kernels that do not cancel completions) and says where it was: the
 * translation is anchored on the IN, so the polling loop back to it runs
 * inside one exit (section 6.3). Without insn_rip the loop head is
 * outside the cluster: with method 2 every iteration exits; with method
 * 3 the walk follows the JNZ back to the head it has not seen
 * (translator/calls.c), so the loop runs inside one exit all the same. */
static void anchored(int tell_rip, lc_cflow_method cflow)
{
    rig r; lc_cpu_state s, s0; lc_result res; lc_config cfg;
    lc_exit x = io_exit(0x64, 1, 0);
    /* 7000: in al,dx; test al,8; jnz 7000; out 0x80,al; nop */
    const uint8_t code[] = { 0xec, 0xa8, 0x08, 0x75, 0xfb, 0xe6, 0x80, 0x90 };

    x.rip = LC_EXIT_RIP_PAST;
    x.insn_rip = tell_rip ? 0x7000 : 0;
    lc_config_init(&cfg);
    cfg.cflow = cflow;
    rig_up(&r, &cfg);
    fvm_state_real(&s0);
    s0.rip = 0x7001;                 /* the IN is done: AL = busy */
    s0.gpr[LC_RAX] = 0x08;
    s0.gpr[LC_RDX] = 0x64;
    memcpy(r.f.ram + 0x7000, code, sizeof code);
    r.f.nin_seq = 8;                 /* busy 5 more times, then ready */
    memcpy(r.f.in_seq, (uint32_t[]){ 8, 8, 8, 8, 8, 0, 0, 0 },
           8 * sizeof(uint32_t));
    for (int i = 0; i < 3; i++) {
        s = s0;
        r.f.in_pos = 0;
        r.f.nlog = 0;
        ck_assert_int_eq(lc_vcpu_handle_exit(r.v, &s, &x, &res), LC_OK);
    }
    if (tell_rip || cflow == LC_CFLOW_M3) {
        ck_assert_int_eq(res.disposition, LC_HANDLED);
        ck_assert_uint_eq(s.rip, 0x7007);          /* polled out, then OUT */
        ck_assert_uint_eq(res.exits_done, 7);      /* 6 INs and the OUT */
        ck_assert_uint_eq(res.exits_saved, 7);
        ck_assert_uint_eq(r.f.nlog, 7);
    } else {
        /* Unanchored: TEST, JNZ back to the IN, which is outside. */
        ck_assert_uint_eq(s.rip, 0x7000);
        ck_assert_uint_eq(res.exits_saved, 0);
    }
    rig_down(&r);
}

START_TEST(anchored_polling_loop) { anchored(1, LC_CFLOW_M3); }
END_TEST

START_TEST(unanchored_polling_loop)
{
    anchored(0, LC_CFLOW_M2);
    anchored(0, LC_CFLOW_M3);
}
END_TEST

/* A driver's poll through accessor functions, iPXE's PCnet shape (32-bit
 * flat protected mode, register arguments): read CSR0 through
 * `priv->a->read_csr`, write it back through `priv->a->write_csr`, both
 * called indirectly through a table the poll loads between the calls.
 *   7000 read_csr:  mov ecx,eax; mov eax,edx; lea edx,[ecx+0x12];
 *                   out dx,ax (RAP); lea edx,[ecx+0x10]; in ax,dx; ret
 *   7010 write_csr: push ebx; mov ebx,eax; mov eax,edx; lea edx,[ebx+0x12];
 *                   out dx,ax (RAP); lea edx,[ebx+0x10]; mov eax,ecx;
 *                   out dx,ax (RDP); pop ebx; ret
 *   7100 poll:      mov ecx,[edi+0xfc]; xor edx,edx; mov eax,ebp;
 *                   call [ecx]; movzx ecx,ax; mov ebx,ecx;
 *                   mov edi,[edi+0xfc]; xor edx,edx; mov eax,ebp;
 *                   call [edi+4]; ud2
 *   7200 probe:     call 7000; out dx,ax; ud2
 * The read accessor gets hot from the probe first, so its translation
 * predicts the RET back into the probe. Then the poll's exits: the RET's
 * guard misses, and after LCX_RELINK_MISSES runs in a row the engine
 * forms the translation again from the poll's state. From the RAP write
 * in read_csr it then follows the RET into the poll, predicts `call
 * [edi+4]` with EDI as the cluster loads it (not as it was at the exit),
 * and reaches both accesses of write_csr: 18 instructions, of which the
 * window counts the 16 that are not CALL or RET. One exit for the poll's
 * four port accesses. Then the table changes: the CALL's guard misses and
 * the run ends after it, the return address pushed. */
#define RELINK_MISSES 4     /* translator.h's LCX_RELINK_MISSES */

START_TEST(accessor_poll_through_pointers)
{
    rig r; lc_cpu_state s, s0; lc_result res; lc_stats st;
    lc_exit x = io_exit(0xc012, 2, 1);
    static const uint8_t rd[] = { 0x89, 0xc1, 0x89, 0xd0, 0x8d, 0x51, 0x12,
                                  0x66, 0xef, 0x8d, 0x51, 0x10, 0x66, 0xed,
                                  0xc3 };
    static const uint8_t wr[] = { 0x53, 0x89, 0xc3, 0x89, 0xd0, 0x8d, 0x53,
                                  0x12, 0x66, 0xef, 0x8d, 0x53, 0x10, 0x89,
                                  0xc8, 0x66, 0xef, 0x5b, 0xc3 };
    static const uint8_t poll[] = { 0x8b, 0x8f, 0xfc, 0, 0, 0, 0x31, 0xd2,
                                    0x89, 0xe8, 0xff, 0x11, 0x0f, 0xb7, 0xc8,
                                    0x89, 0xcb, 0x8b, 0xbf, 0xfc, 0, 0, 0,
                                    0x31, 0xd2, 0x89, 0xe8, 0xff, 0x57, 0x04,
                                    0x0f, 0x0b };
    static const uint8_t probe[] = { 0xe8, 0xfb, 0xfd, 0xff, 0xff, 0x66,
                                     0xef, 0x0f, 0x0b };
    const uint32_t table[2] = { 0x7000, 0x7010 }, ptab = 0x6000;
    uint32_t ret;

    /* Method 2: no chained runs (they need method 3), so a RET that
     * misses its guard ends the run, and the re-link is what makes the
     * poll one exit (chain_repairs_mispredicted_accessor: method 3). */
    lc_config cfg;
    lc_config_init(&cfg);
    cfg.cflow = LC_CFLOW_M2;
    rig_up(&r, &cfg);
    memcpy(r.f.ram + 0x7000, rd, sizeof rd);
    memcpy(r.f.ram + 0x7010, wr, sizeof wr);
    memcpy(r.f.ram + 0x7100, poll, sizeof poll);
    memcpy(r.f.ram + 0x7200, probe, sizeof probe);
    memcpy(r.f.ram + 0x6000, table, sizeof table);
    memcpy(r.f.ram + 0x6100 + 0xfc, &ptab, 4);     /* priv->a */
    fvm_state_prot32(&s0, 0);
    s0.rip = 0x7007;                 /* read_csr's RAP write */
    s0.gpr[LC_RAX] = 0;              /* CSR0 */
    s0.gpr[LC_RCX] = 0xc000;         /* the I/O base */
    s0.gpr[LC_RDX] = 0xc012;
    s0.gpr[LC_RBP] = 0xc000;
    s0.gpr[LC_RDI] = 0x6100;         /* priv */
    s0.gpr[LC_RSP] = 0x8ffc;

    /* The probe makes the site hot: the RET back into it is followed. */
    ret = 0x7205;
    memcpy(r.f.ram + 0x8ffc, &ret, 4);
    for (int i = 0; i < 3; i++) {
        s = s0;
        ck_assert_int_eq(lc_vcpu_handle_exit(r.v, &s, &x, &res), LC_OK);
    }
    ck_assert(res.translated);
    ck_assert_uint_eq(s.rip, 0x7207);            /* after the probe's OUT */
    ck_assert_uint_eq(res.exits_done, 3);

    /* The poll: its return site is not the one predicted. */
    ret = 0x710c;
    memcpy(r.f.ram + 0x8ffc, &ret, 4);
    for (int i = 0; i < RELINK_MISSES; i++) {
        s = s0;
        ck_assert_int_eq(lc_vcpu_handle_exit(r.v, &s, &x, &res), LC_OK);
        ck_assert(res.translated);
        ck_assert_int_eq(res.stop, LC_STOP_END);
        ck_assert_uint_eq(s.rip, 0x710c);        /* the RET completed */
        ck_assert_uint_eq(s.gpr[LC_RSP], 0x9000);
        ck_assert_uint_eq(res.exits_done, 2);
    }
    /* Formed again from the poll's state: one exit, four accesses. */
    for (int i = 0; i < 2; i++) {
        s = s0;
        r.f.nlog = 0;
        memcpy(r.f.ram + 0x8ffc, &ret, 4);      /* the CALL wrote there */
        ck_assert_int_eq(lc_vcpu_handle_exit(r.v, &s, &x, &res), LC_OK);
        ck_assert_int_eq(res.disposition, LC_HANDLED);
        ck_assert_msg(res.exits_done == 4, "run %d: %u exits, %u insns, "
                      "stop %d, rip %#llx, translated %d", i, res.exits_done,
                      res.insns, res.stop, (unsigned long long)s.rip,
                      res.translated);
        ck_assert_uint_eq(res.exits_saved, 3);
        ck_assert_uint_eq(res.insns, 18);
        ck_assert_uint_eq(s.rip, 0x7021);        /* after the RDP write */
        ck_assert_uint_eq(s.gpr[LC_RDI], 0x6000);
        ck_assert_uint_eq(s.gpr[LC_RSP], 0x8ff8);  /* popped one, pushed
                                                    * two: ret, ebx */
        ck_assert_uint_eq(r.f.nlog, 4);
    }
    ck_assert_int_eq(lc_vcpu_get_stats(r.v, &st), LC_OK);
    ck_assert_uint_eq(st.retranslations, 1);

    /* The table now names another write accessor (the same code one byte
     * on, after a NOP): the CALL's guard misses; the run ends after the
     * CALL with its push done, at the real target. */
    r.f.ram[0x7030] = 0x90;
    memcpy(r.f.ram + 0x7031, wr, sizeof wr);
    memcpy(r.f.ram + 0x6004, &(uint32_t){ 0x7030 }, 4);
    s = s0;
    memcpy(r.f.ram + 0x8ffc, &ret, 4);
    ck_assert_int_eq(lc_vcpu_handle_exit(r.v, &s, &x, &res), LC_OK);
    ck_assert_int_eq(res.stop, LC_STOP_END);
    ck_assert_uint_eq(res.exits_done, 2);
    ck_assert_uint_eq(s.rip, 0x7030);
    ck_assert_uint_eq(s.gpr[LC_RSP], 0x8ffc);
    memcpy(&ret, r.f.ram + 0x8ffc, 4);
    ck_assert_uint_eq(ret, 0x711e);
    rig_down(&r);
}
END_TEST

/* Every example of the paper through the public API on the demo's
 * simulated machine (examples/paper/paper_run.c): after two interpreted
 * exits, one exit runs the cluster the paper describes. */
static const struct {
    const char *name;
    unsigned insns, exits, saved;
} paper_expect[] = {
    { "pae-pte-pair",  2, 2, 1 },   /* s3: the pair */
    { "bios-pci",      9, 3, 2 },   /* s4: "avoiding two out of three" */
    { "out80",         8, 6, 5 },   /* s4 */
    { "passmark-dr",   6, 4, 3 },   /* s4: two memory gap fillers */
    { "sles-weak",    14, 4, 3 },   /* s5: excludes the last instruction */
    { "fwd-branch",    7, 2, 1 },   /* s6.1/6.2 */
    { "poll-loops",   14, 5, 4 },   /* s6.3: device ready at once */
    { "win7-loop",    16, 4, 3 },   /* s6.3: four PTEs, one exit */
    { "hyperv-vmread", 5, 3, 2 },   /* s8: "save two of three" */
    { "vmware-vmread", 13, 9, 8 },  /* s8: "at least seven" */
};

START_TEST(paper_examples_through_engine)
{
    const paper_example *ex = paper_example_find(paper_expect[_i].name);
    paper_run_result r;

    ck_assert_ptr_nonnull(ex);
    ck_assert_int_eq(paper_run(ex, &r), 0);
    ck_assert_msg(r.insns_first == 1, "%s: first exit ran %u", ex->name,
                  r.insns_first);
    ck_assert_msg(r.insns == paper_expect[_i].insns &&
                  r.exits_done == paper_expect[_i].exits &&
                  r.exits_saved == paper_expect[_i].saved,
                  "%s: %u insns, %u exits, %u saved; want %u, %u, %u",
                  ex->name, r.insns, r.exits_done, r.exits_saved,
                  paper_expect[_i].insns, paper_expect[_i].exits,
                  paper_expect[_i].saved);
    ck_assert_str_eq(r.stop, "end");
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("engine_run");
    TCase *t = tcase_create("paper");

    tcase_add_test(t, bios_saves_two_of_three);
    tcase_add_test(t, vmread_blocks);
    tcase_add_test(t, coherency_and_retranslation);
    tcase_add_test(t, single_exit_translation_outcomes);
    tcase_add_test(t, accessor_poll_through_pointers);
    tcase_add_test(t, empty_translation_cached);
    tcase_add_test(t, self_modifying_cluster);
    tcase_add_test(t, store_beside_code_goes_on);
    tcase_add_test(t, watch_follows_remapped_code);
    tcase_add_test(t, watch_follows_remapped_callee);
    tcase_add_test(t, call_follows_remapped_stack);
    tcase_add_test(t, callee_span_sees_callee_not_gap);
    tcase_add_test(t, hit_sets_cleared_accessed_bit);
    tcase_add_test(t, callee_refetch_sets_no_accessed_bit);
    tcase_add_test(t, chain_after_mispredicted_ret);
    tcase_add_test(t, chain_leaves_at_guard_miss);
    tcase_add_test(t, callee_change_caught_inline);
    tcase_add_test(t, callee_watch_kept_on_hit);
    tcase_add_test(t, ret_forwarding_stops_at_observers);
    tcase_add_test(t, pwc_epoch_outlives_callback);
    tcase_add_test(t, map_change_in_callback_ends_run);
    tcase_add_test(t, ret_on_16bit_stack_with_esp_high_bits);
    tcase_add_test(t, ret_after_segment_reload_followed);
    tcase_add_test(t, debug_printf_spans_six_ranges);
    tcase_add_test(t, chain_bound_follows_window);
    tcase_add_test(t, no_chain_without_calls);
    tcase_add_test(t, cet_ends_cluster_before_ret);
    tcase_add_test(t, rf_cleared_after_run);
    tcase_add_test(t, insn_len_sets_no_accessed_bit_before_rip);
    tcase_add_test(t, exit_now_follows_moved_registers);
    tcase_add_test(t, translation_over_cache_cap);
    tcase_add_test(t, absent_device_branch);
    tcase_add_test(t, mismatched_exit_declines);
    tcase_add_test(t, exit_facts_cross_checked);
    tcase_add_test(t, mmio_facts_cross_checked);
    tcase_add_test(t, vm_ops_size_is_honoured);
    tcase_add_test(t, vm_ops_size_inside_rdtsc);
    tcase_add_test(t, leak_guard_and_memory_cap);
    tcase_add_test(t, techniques_switch);
    tcase_add_test(t, pae_pair_two_writes);
    tcase_add_test(t, pae_pair_one_wide_write);
    tcase_add_test(t, partial_rep_is_handled);
    tcase_add_test(t, device_routes);
    tcase_add_test(t, anchored_polling_loop);
    tcase_add_test(t, unanchored_polling_loop);
    tcase_add_loop_test(t, paper_examples_through_engine, 0,
                        (int)(sizeof paper_expect / sizeof paper_expect[0]));
    tcase_set_timeout(t, 60);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return lc_test_run(suite());
}
