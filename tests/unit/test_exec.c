/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_exec.c: runtime/exec.c and alu.c.
 *
 * The paper's examples run instruction by instruction against a fake VMM
 * (tests/common/fakevm.h) with hand-computed results; then the contract that
 * matters to clusters: a stop leaves the state exactly as it was before the
 * instruction. Exhaustive semantics are the differential tests' job
 * (tests/diff/, against Unicorn).
 */
#include <stdio.h>
#include <string.h>

#include "../../examples/paper/paper_examples.h"
#include "../../runtime/alu.h"
#include "../../runtime/rt.h"
#include "fakevm.h"
#include "harness.h"

static void begin(lcr_vcpu *v, fvm *f, lc_cpu_state *s)
{
    memset(v, 0, sizeof *v);
    v->insn_budget = 1000;
    v->rep_budget = 1000;
    lcr_begin(v, s, &fvm_ops, f);
}

/* One step from *s that must stop before the instruction for `why`,
 * leaving the state as it was (line: the caller's, for the report). */
static void step_stops(fvm *f, lc_cpu_state *s, lc_stop_reason why,
                       int line)
{
    lc_cpu_state before = *s;
    lcr_vcpu v;
    lcd_insn in;

    begin(&v, f, s);
    ck_assert_msg(lcr_step(&v, &in) == LCR_STOP && v.stop == why,
                  "line %d: stop %d, wanted %d", line, v.stop, why);
    ck_assert_msg(!memcmp(&before, s, sizeof *s), "line %d: state changed",
                  line);
}

/* Step until RIP == end; every step must complete. */
static void run_to(lcr_vcpu *v, uint64_t end, unsigned max)
{
    lcd_insn in;
    for (unsigned i = 0; i < max && v->st->rip != end; i++) {
        int r = lcr_step(v, &in);
        ck_assert_msg(r == LCR_DONE, "stopped at %#llx: %s (vector %u)",
                      (unsigned long long)v->st->rip,
                      lc_stop_reason_name(v->stop), v->fault_vector);
    }
    ck_assert_uint_eq(v->st->rip, end);
}

/* Section 4: OUT, OUT, six gap fillers, IN; exits 3. */
START_TEST(bios_sequence)
{
    fvm f; lc_cpu_state s; lcr_vcpu v;
    uint64_t end;

    fvm_init(&f);
    fvm_state_real(&s);
    s.seg[LC_CS].selector = 0xf000;
    s.seg[LC_CS].base = 0xf0000;
    s.rip = 0x100;
    end = fvm_load_example(&f, "bios-pci", 0xf0100) - 0xf0000;
    end -= 6;   /* stop after the IN, before XCHG, XOR, JMP (6 bytes) */
    s.gpr[LC_RAX] = 0x80000010;
    s.gpr[LC_RCX] = 0x12;
    s.gpr[LC_RDX] = 0xcf8;
    begin(&v, &f, &s);
    run_to(&v, end, 20);
    ck_assert_uint_eq(v.insns, 9);
    ck_assert_uint_eq(v.exits_done, 3);
    ck_assert_uint_eq(f.nlog, 3);
    ck_assert(f.log[0].kind == 'o' && f.log[0].addr == 0xcf8 &&
              f.log[0].size == 4 && f.log[0].value == 0x80000010);
    ck_assert(f.log[1].kind == 'o' && f.log[1].addr == 0xed &&
              f.log[1].size == 1 && f.log[1].value == 0x10);
    /* DX = 0xcfc + (CL & 3) = 0xcfe; EAX/ECX swapped; AH/AL swapped. */
    ck_assert(f.log[2].kind == 'i' && f.log[2].addr == 0xcfe &&
              f.log[2].size == 1);
    ck_assert_uint_eq(s.gpr[LC_RDX], 0xcfe);
    ck_assert_uint_eq(s.gpr[LC_RCX], 0x80000002);
    ck_assert_uint_eq(s.gpr[LC_RAX], 0x1200 | fvm_answer(0xcfe, 1));
    fvm_fini(&f);
}
END_TEST

/* Section 4: debug registers and two loads, at CPL 0. */
START_TEST(passmark_debug_registers)
{
    fvm f; lc_cpu_state s; lcr_vcpu v;
    uint64_t end;

    fvm_init(&f);
    fvm_state_prot32(&s, 0);
    s.rip = 0x10000;
    end = fvm_load_example(&f, "passmark-dr", s.rip);
    s.gpr[LC_RBX] = 0x1111; s.gpr[LC_RCX] = 0x2222; s.gpr[LC_RDI] = 0x20000;
    memcpy(f.ram + 0x20308, &(uint32_t){ 0xffff0ff0 }, 4);
    memcpy(f.ram + 0x2030c, &(uint32_t){ 0x00000401 }, 4);
    begin(&v, &f, &s);
    run_to(&v, end, 10);
    ck_assert_uint_eq(f.dr[2], 0x1111);
    ck_assert_uint_eq(f.dr[3], 0x2222);
    ck_assert_uint_eq(f.dr[6], 0xffff0ff0);
    ck_assert_uint_eq(f.dr[7], 0x401);
    ck_assert_uint_eq(v.exits_done, 4);
    /* The same code at CPL 3 faults (#GP) on the first MOV DR, untouched. */
    fvm_state_prot32(&s, 3);
    s.rip = 0x10000;
    begin(&v, &f, &s);
    {
        lcd_insn in;
        lc_cpu_state before = s;
        ck_assert_int_eq(lcr_step(&v, &in), LCR_STOP);
        ck_assert_int_eq(v.stop, LC_STOP_FAULT);
        ck_assert_uint_eq(v.fault_vector, LC_VEC_GP);
        ck_assert_mem_eq(&before, &s, sizeof s);
    }
    fvm_fini(&f);
}
END_TEST

/* VMREAD and VMWRITE are #UD with CR0.PE = 0 and in compatibility mode
 * (SDM vol. 2, VMREAD "Operation": before the VM exit), so they never
 * reach the VMM there: the runtime stops before them, state untouched and
 * no VMCS access made (lc-diff found the runtime running them in real
 * mode through the VMM's vmcs_write). */
START_TEST(vmx_ud_outside_protected_mode)
{
    static const uint8_t code[2][3] = {
        { 0x0f, 0x78, 0xd8 },   /* vmread eax, ebx */
        { 0x0f, 0x79, 0xc3 },   /* vmwrite eax, ebx */
    };
    fvm f; lc_cpu_state s, before; lcr_vcpu v; lcd_insn in;

    fvm_init(&f);
    for (int mode = 0; mode < 2; mode++)
        for (int k = 0; k < 2; k++) {
            if (mode == 0) {
                fvm_state_real(&s);
            } else {                /* long mode, CS.L = 0, CS.D = 1 */
                fvm_state_long64(&f, &s);
                s.seg[LC_CS].l = 0;
                s.seg[LC_CS].db = 1;
            }
            s.rip = 0x8000;
            s.gpr[LC_RBX] = 0x6800;
            memcpy(f.ram + 0x8000, code[k], 3);
            f.nlog = 0;
            before = s;
            begin(&v, &f, &s);
            ck_assert_int_eq(lcr_step(&v, &in), LCR_STOP);
            /* Zydis does not decode 0F 78 in 16-bit code: a terminator
             * there, which is as good */
            if (!(mode == 0 && k == 0)) {
                ck_assert_int_eq(v.stop, LC_STOP_FAULT);
                ck_assert_uint_eq(v.fault_vector, LC_VEC_UD);
            }
            ck_assert_mem_eq(&before, &s, sizeof s);
            ck_assert_uint_eq(f.nlog, 0);
        }
    fvm_fini(&f);
}
END_TEST

/* A VMM that fails every VMREAD ('v') or every VMWRITE ('V'), as the
 * test sets vmx_fail_kind (LC_CB_STOP: it emulates VMfailInvalid or
 * VMfailValid on the real exit). */
static char vmx_fail_kind;

static lc_cb_result vmx_fails(fvm *f, fvm_access *a)
{
    if (a->kind == vmx_fail_kind)
        return LC_CB_STOP;
    return fvm_default_device(f, a);
}

/* A failing VMREAD to memory writes nothing, and its destination is only
 * accessed once the field is known good (SDM, VMREAD: "faults resulting
 * from accessing a memory destination operand can occur only after
 * determining ... that the specified VMCS field is supported"): the stop
 * before it leaves the page tables' accessed and dirty bits alone (lc-diff
 * found the runtime translating the destination, A and D set, before the
 * VMM's answer). When the VMM answers, the store sets them. */
START_TEST(vmread_fail_leaves_no_dirty_bit)
{
    static const uint8_t code[] = { 0x0f, 0x78, 0x1f };  /* vmread [rdi], rbx */
    fvm f; lc_cpu_state s; lcr_vcpu v; lcd_insn in;
    uint64_t pde, pde0;
    const uint64_t pd = 0x3000 + (0x200000 >> 21) * 8;  /* maps 2..4 MiB */

    fvm_init(&f);
    fvm_state_long64(&f, &s);
    s.rip = 0x8000;
    s.gpr[LC_RBX] = 0x6800;
    s.gpr[LC_RDI] = 0x200100;
    memcpy(f.ram + 0x8000, code, sizeof code);
    memcpy(&pde0, f.ram + pd, 8);
    ck_assert_uint_eq(pde0 & 0x60, 0);            /* A and D clear */
    vmx_fail_kind = 'v';
    f.device = vmx_fails;
    step_stops(&f, &s, LC_STOP_CALLBACK, __LINE__);
    memcpy(&pde, f.ram + pd, 8);
    ck_assert_uint_eq(pde, pde0);
    /* the VMM answers: the value is stored, A and D set */
    f.device = NULL;
    begin(&v, &f, &s);
    ck_assert_int_eq(lcr_step(&v, &in), LCR_DONE);
    memcpy(&pde, f.ram + pd, 8);
    ck_assert_uint_eq(pde & 0x60, 0x60);
    uint64_t got;
    memcpy(&got, f.ram + 0x200100, 8);
    ck_assert_uint_eq(got, 0x6800 * 3 + 1);
    fvm_fini(&f);
}
END_TEST

/* The VMWRITE analogue: the VMM needs the source's value to answer, but
 * the CPU reads a memory source only after the check for a current VMCS
 * (SDM, VMWRITE "Operation": VMfailInvalid first), so the runtime peeks at
 * it (no accessed bit) and reads it for real only once the VMM completed
 * the instruction. Before, the stop left the PDE's accessed bit set,
 * which the CPU does not under VMfailInvalid (lc-diff's known
 * difference). A source in MMIO cannot be peeked at (a device read): the
 * run stops before it with no device access. */
START_TEST(vmwrite_fail_leaves_no_accessed_bit)
{
    static const uint8_t code[] = { 0x0f, 0x79, 0x1f };  /* vmwrite rbx, [rdi] */
    fvm f; lc_cpu_state s; lcr_vcpu v; lcd_insn in;
    uint64_t pde, pde0, src = 0x1122334455667788ull;
    const uint64_t pd = 0x3000 + (0x200000 >> 21) * 8;  /* maps 2..4 MiB */

    fvm_init(&f);
    fvm_state_long64(&f, &s);
    s.rip = 0x8000;
    s.gpr[LC_RBX] = 0x6800;
    s.gpr[LC_RDI] = 0x200100;
    memcpy(f.ram + 0x8000, code, sizeof code);
    memcpy(f.ram + 0x200100, &src, 8);
    memcpy(&pde0, f.ram + pd, 8);
    ck_assert_uint_eq(pde0 & 0x60, 0);            /* A and D clear */
    vmx_fail_kind = 'V';
    f.device = vmx_fails;
    step_stops(&f, &s, LC_STOP_CALLBACK, __LINE__);
    memcpy(&pde, f.ram + pd, 8);
    ck_assert_uint_eq(pde, pde0);
    ck_assert_uint_eq(f.nlog, 0);
    /* the VMM answers: it got the value, A set by the read, D not */
    f.device = NULL;
    begin(&v, &f, &s);
    ck_assert_int_eq(lcr_step(&v, &in), LCR_DONE);
    memcpy(&pde, f.ram + pd, 8);
    ck_assert_uint_eq(pde & 0x60, 0x20);
    ck_assert_uint_eq(f.nlog, 1);
    ck_assert_int_eq(f.log[0].kind, 'V');
    ck_assert_uint_eq(f.log[0].addr, 0x6800);
    ck_assert_uint_eq(f.log[0].value, src);
    ck_assert_uint_eq(s.rip, 0x8003);
    /* a source in MMIO: no device read, no VMM call, state untouched */
    f.nlog = 0;
    s.rip = 0x8000;
    s.gpr[LC_RDI] = FVM_MMIO + 0x100;
    step_stops(&f, &s, LC_STOP_TERMINATOR, __LINE__);
    ck_assert_uint_eq(f.nlog, 0);
    /* the source's PDE, its A bit clear, in a traced page (a shadow-paging
     * VMM's copy of the page directory): the read could not set it, so
     * the peek ends the run before the VMM is asked, not after (lc-diff
     * --engine --mode pae --seed 11 --case 2995) */
    memcpy(f.ram + pd, &pde0, 8);
    f.traced_gfn = pd >> 12;
    s.gpr[LC_RDI] = 0x200100;
    step_stops(&f, &s, LC_STOP_TERMINATOR, __LINE__);
    ck_assert_uint_eq(f.nlog, 0);
    memcpy(&pde, f.ram + pd, 8);
    ck_assert_uint_eq(pde, pde0);
    fvm_fini(&f);
}
END_TEST

/* The peek itself (runtime/mmu.c, LCR_PROBE_PEEK): the translation of a
 * page whose walk would set an accessed bit succeeds, sets none, and the
 * page-walk cache does not remember it (its entries say the bits are
 * set): the real access after it in the same run walks and sets them. A
 * strict look fails instead. */
START_TEST(peek_sets_no_accessed_bit)
{
    fvm f; lc_cpu_state s; lcr_vcpu v; lcr_xlat x;
    uint64_t pde, pde0;
    const uint64_t pd = 0x3000 + (0x200000 >> 21) * 8;

    fvm_init(&f);
    fvm_state_long64(&f, &s);
    memcpy(&pde0, f.ram + pd, 8);
    ck_assert_uint_eq(pde0 & 0x60, 0);
    begin(&v, &f, &s);
    v.probe = LCR_PROBE_STRICT;
    ck_assert_int_eq(lcr_translate(&v, 0x200100, 8, LCR_ACC_READ, &x), -1);
    ck_assert_int_eq(v.stop, LC_STOP_TERMINATOR);
    v.stop = LC_STOP_NONE;
    v.probe = LCR_PROBE_PEEK;
    ck_assert_int_eq(lcr_translate(&v, 0x200100, 8, LCR_ACC_READ, &x), 0);
    ck_assert_uint_eq(x.nfrag, 1);
    ck_assert_uint_eq(x.frag[0].gpa, 0x200100);
    ck_assert_ptr_eq(x.frag[0].hva, f.ram + 0x200100);
    memcpy(&pde, f.ram + pd, 8);
    ck_assert_uint_eq(pde, pde0);
    ck_assert_uint_eq(v.pwc.n, 0);
    v.probe = LCR_PROBE_NONE;
    ck_assert_int_eq(lcr_translate(&v, 0x200108, 8, LCR_ACC_READ, &x), 0);
    memcpy(&pde, f.ram + pd, 8);
    ck_assert_uint_eq(pde & 0x60, 0x20);
    ck_assert_uint_eq(v.pwc.n, 1);
    /* once walked for real, a peek may use the cache: nothing to set */
    v.probe = LCR_PROBE_PEEK;
    ck_assert_int_eq(lcr_translate(&v, 0x200110, 8, LCR_ACC_READ, &x), 0);
    ck_assert_uint_eq(x.frag[0].gpa, 0x200110);
    fvm_fini(&f);
}
END_TEST

/* Section 5: SLES. The device store goes to MMIO; the table load that
 * follows it is plain RAM and takes no exit. */
START_TEST(sles_mmio_stores)
{
    fvm f; lc_cpu_state s; lcr_vcpu v; lcd_insn in;
    uint64_t la = 0x10000000ull * 8 - 0x7fc4215cull;

    fvm_init(&f);
    fvm_state_long64(&f, &s);
    s.rip = 0x100000;
    fvm_load_example(&f, "sles-weak", s.rip);
    s.gpr[LC_RAX] = FVM_MMIO + 0x201300;   /* -0x201000 -> MMIO + 0x300 */
    s.gpr[LC_RSI] = 0x10000000;            /* 8*rsi - 0x7fc4215c: RAM */
    s.gpr[LC_RDX] = 0xaaaa;
    ck_assert_uint_lt(la, FVM_RAM_SIZE);
    memcpy(f.ram + la, &(uint32_t){ 0x12345678 }, 4);
    begin(&v, &f, &s);
    ck_assert_int_eq(lcr_step(&v, &in), LCR_DONE);
    ck_assert_uint_eq(f.nlog, 1);
    ck_assert(f.log[0].kind == 'w' && f.log[0].addr == FVM_MMIO + 0x300 &&
              f.log[0].size == 4 && f.log[0].value == 0xaaaa);
    ck_assert_uint_eq(v.exits_done, 1);
    ck_assert_int_eq(lcr_step(&v, &in), LCR_DONE);
    ck_assert_uint_eq(v.exits_done, 1);
    ck_assert_uint_eq(f.nlog, 1);
    ck_assert_uint_eq(s.gpr[LC_RAX], 0x12345678);   /* 32-bit load zero-extends */
    fvm_fini(&f);
}
END_TEST

/* Section 8: the VMware block, nine VMREADs, RIP-relative stores. */
START_TEST(vmware_vmreads)
{
    fvm f; lc_cpu_state s; lcr_vcpu v;
    uint64_t end, base = 0x300000;

    fvm_init(&f);
    fvm_state_long64(&f, &s);
    s.rip = base;
    end = fvm_load_example(&f, "vmware-vmread", s.rip);
    for (int i = 0; i < 16; i++)
        s.gpr[i] = 0x100 + (uint64_t)i;
    /* The fake VMCS answers 3*field+1: for field 0x55555555 that is
     * 2^32, so EDI is 0 and the JNZ falls through to the last VMREAD. */
    s.gpr[LC_RDI] = 0x55555555;
    s.rflags = 0x2 | LC_RFLAGS_CF | LC_RFLAGS_ZF;
    begin(&v, &f, &s);
    run_to(&v, end, 20);
    ck_assert_uint_eq(v.insns, 13);
    ck_assert_uint_eq(v.exits_done, 9);
    /* RIP-relative destinations, relative to the next instruction. */
    {
        uint64_t q;
        memcpy(&q, f.ram + base + 7 - 0x22222a, 8);
        ck_assert_uint_eq(q, 0x103 * 3 + 1);          /* field in RBX */
        memcpy(&q, f.ram + base + 14 - 0x222209, 8);
        ck_assert_uint_eq(q, 0x101 * 3 + 1);          /* field in RCX */
        memcpy(&q, f.ram + base + 24 - 0x1f229b, 8);
        ck_assert_uint_eq(q, 0x105 * 3 + 1);          /* field in RBP */
    }
    ck_assert_uint_eq(s.gpr[LC_RDI], 0x100000000ull);
    /* VMsucceed clears the status flags. */
    ck_assert_uint_eq(s.rflags & (LC_RFLAGS_CF | LC_RFLAGS_OF), 0);
    fvm_fini(&f);
}
END_TEST

/* Section 6.3: the Windows 7 loop stores 4 qwords and falls out. */
START_TEST(win7_loop_traced)
{
    fvm f; lc_cpu_state s; lcr_vcpu v;
    uint64_t end;

    fvm_init(&f);
    fvm_state_long64(&f, &s);
    s.rip = 0x200000;
    end = fvm_load_example(&f, "win7-loop", s.rip);
    f.traced_gfn = 0x250;
    s.gpr[LC_RCX] = 0x250000;
    s.gpr[LC_RDX] = 0x8000000000000063ull;
    s.gpr[LC_R9] = 4;
    begin(&v, &f, &s);
    run_to(&v, end, 64);
    ck_assert_uint_eq(v.insns, 16);
    ck_assert_uint_eq(v.exits_done, 4);
    ck_assert_uint_eq(f.nlog, 4);
    for (unsigned i = 0; i < 4; i++)
        ck_assert(f.log[i].kind == 't' && f.log[i].addr == 0x250000 + 8 * i &&
                  f.log[i].size == 8 && f.log[i].value == s.gpr[LC_RDX]);
    ck_assert_uint_eq(s.gpr[LC_R9], 0);
    fvm_fini(&f);
}
END_TEST

/* ---- stops leave the state untouched --------------------------------- */

typedef struct stop_case {
    int line;
    const char *hex;
    unsigned mode;          /* 0 real, 1 prot32 cpl0, 2 prot32 cpl3, 3 long64 */
    lc_stop_reason why;
    uint8_t vector;
} stop_case;

static const stop_case stops[] = {
    { __LINE__, "0f 31",   3, LC_STOP_TERMINATOR, 0 }, /* rdtsc */
    /* not present */
    { __LINE__, "8b 04 25 00 00 00 40", 3, LC_STOP_FAULT, LC_VEC_PF },
    /* 0xffffffff80000000 */
    { __LINE__, "48 8b 04 25 00 00 00 80", 3, LC_STOP_FAULT, LC_VEC_PF },
    /* [rbp] non-canonical: #SS */
    { __LINE__, "48 8b 45 00", 3, LC_STOP_FAULT, LC_VEC_SS },
    /* [rbx] non-canonical: #GP */
    { __LINE__, "48 8b 03", 3, LC_STOP_FAULT, LC_VEC_GP },
    /* word at SS:0xffff > limit */
    { __LINE__, "8b 86 ff ff", 0, LC_STOP_FAULT, LC_VEC_SS },
    /* word at DS:0xffff > limit */
    { __LINE__, "8b 87 ff ff", 0, LC_STOP_FAULT, LC_VEC_GP },
    { __LINE__, "ee",      2, LC_STOP_TERMINATOR, 0 }, /* CPL3 IOPL0 */
    { __LINE__, "0f 32",   2, LC_STOP_FAULT, LC_VEC_GP }, /* rdmsr CPL3 */
    { __LINE__, "f4",      2, LC_STOP_FAULT, LC_VEC_GP }, /* hlt CPL3 */
    /* vmread/vmwrite CPL3: they exit, and the VMM raises the #GP */
    { __LINE__, "0f 78 d8", 2, LC_STOP_FAULT, LC_VEC_GP },
    { __LINE__, "0f 79 c3", 2, LC_STOP_FAULT, LC_VEC_GP },
    { __LINE__, "0f 23 e0", 1, LC_STOP_NONE, 0 }, /* mov dr4: aliases dr6 */
    /* jmp rbx, non-canonical */
    { __LINE__, "ff e3",   3, LC_STOP_FAULT, LC_VEC_GP },
    /* jmp rbp, non-canonical */
    { __LINE__, "ff e5",   3, LC_STOP_FAULT, LC_VEC_GP },
    /* call rbx, call rbp: non-canonical target, #GP before the push */
    { __LINE__, "ff d3",   3, LC_STOP_FAULT, LC_VEC_GP },
    { __LINE__, "ff d5",   3, LC_STOP_FAULT, LC_VEC_GP },
    { __LINE__, "cb",      3, LC_STOP_TERMINATOR, 0 }, /* retf: far */
    { __LINE__, "0f 0b",   3, LC_STOP_TERMINATOR, 0 },
    { __LINE__, "0f ff",   3, LC_STOP_FAULT, 0 }, /* truncated at end */
};

START_TEST(stop_before_instruction)
{
    const stop_case *c = &stops[_i];
    fvm f; lc_cpu_state s, before; lcr_vcpu v; lcd_insn in;
    uint8_t b[16];
    size_t n = lc_test_hex(c->hex, b, sizeof b);
    uint64_t at;

    fvm_init(&f);
    switch (c->mode) {
    case 0: fvm_state_real(&s); at = 0x7000; break;
    case 1: fvm_state_prot32(&s, 0); at = 0x7000; break;
    case 2: fvm_state_prot32(&s, 3); at = 0x7000; break;
    default: fvm_state_long64(&f, &s); at = 0x7000; break;
    }
    s.rip = at;
    memcpy(f.ram + at, b, n);
    if (!strcmp(c->hex, "0f ff")) {
        /* Put the opcode at the very end of RAM so the ModRM byte is not
         * fetchable: the fetch is cut short and the decode truncated. */
        fvm_state_prot32(&s, 0);
        at = FVM_RAM_SIZE - 2;
        memcpy(f.ram + at, b, 2);
        s.rip = at;
    }
    /* Non-canonical in long mode; zero elsewhere. */
    s.gpr[LC_RBP] = c->mode == 3 ? 0x0000800000000000ull : 0;
    s.gpr[LC_RBX] = c->mode == 3 ? 0xffff7fffffffffffull : 0;
    before = s;
    begin(&v, &f, &s);
    if (c->why == LC_STOP_NONE) {
        ck_assert_int_eq(lcr_step(&v, &in), LCR_DONE);
        fvm_fini(&f);
        return;
    }
    ck_assert_msg(lcr_step(&v, &in) == LCR_STOP, "line %d: did not stop",
                  c->line);
    ck_assert_msg(v.stop == c->why, "line %d: stop %s, want %s", c->line,
                  lc_stop_reason_name(v.stop), lc_stop_reason_name(c->why));
    if (c->why == LC_STOP_FAULT && c->vector)
        ck_assert_msg(v.fault_vector == c->vector, "line %d: vector %u",
                      c->line, v.fault_vector);
    ck_assert_msg(!memcmp(&before, &s, sizeof s), "line %d: state changed",
                  c->line);
    ck_assert_uint_eq(f.nlog, 0);
    ck_assert_uint_eq(v.insns, 0);
    fvm_fini(&f);
}
END_TEST

/* ---- the TSS I/O permission bit map (SDM vol. 1 19.5.2) ---------------- */

typedef struct iomap_case {
    int line;
    const char *hex;        /* one I/O instruction */
    uint16_t port;          /* DX */
    uint32_t iopl;
    uint8_t  tr_type;       /* 0xb busy 32-bit TSS, 0x2 an LDT: not a TSS */
    uint32_t tr_limit;
    uint16_t map_base;
    uint16_t deny[2];       /* ports whose bit is set (0: none) */
    int allowed;
} iomap_case;

static const iomap_case iomaps[] = {
    { __LINE__, "ee",    0x3f8, 0, 0xb, 0x2068 + 0x81, 0x68, { 0x3f9, 0 }, 1 },
    { __LINE__, "ee",    0x3f9, 0, 0xb, 0x2068 + 0x81, 0x68, { 0x3f9, 0 }, 0 },
    { __LINE__, "66 ef", 0x3f8, 0, 0xb, 0x2068 + 0x81, 0x68, { 0x3f9, 0 }, 0 },
    { __LINE__, "ec",    0x3f8, 0, 0x9, 0x2068 + 0x81, 0x68, { 0 },        1 },
    /* a word access across a map byte: ports 0x3ff and 0x400 */
    { __LINE__, "66 ed", 0x3ff, 0, 0xb, 0x2068 + 0x81, 0x68, { 0x400, 0 }, 0 },
    { __LINE__, "66 ed", 0x3ff, 0, 0xb, 0x2068 + 0x81, 0x68, { 0x3fe, 0x401 }, 1 },
    /* both bytes read (0x68 + 0x7f and the next) must lie within the limit */
    { __LINE__, "ee",    0x3f8, 0, 0xb, 0x68 + 0x80,   0x68, { 0 },        1 },
    { __LINE__, "ee",    0x3f8, 0, 0xb, 0x68 + 0x7f,   0x68, { 0 },        0 },
    { __LINE__, "ee",    0x3f8, 0, 0xb, 0x66,          0x68, { 0 },        0 },
    /* a map base beyond the limit: no bit map, nothing allowed */
    { __LINE__, "ee",    0x10,  0, 0xb, 0x67,          0xdfff, { 0 },      0 },
    { __LINE__, "ee",    0x3f8, 0, 0x2, 0x2068 + 0x81, 0x68, { 0 },        0 },
    /* CPL <= IOPL: the map is not consulted */
    { __LINE__, "ee",    0x3f9, 3, 0xb, 0x2068 + 0x81, 0x68, { 0x3f9, 0 }, 1 },
    /* string I/O: the element size decides the ports */
    { __LINE__, "6e",    0x3f8, 0, 0xb, 0x2068 + 0x81, 0x68, { 0x3f9, 0 }, 1 },
    { __LINE__, "6f",    0x3f8, 0, 0xb, 0x2068 + 0x81, 0x68, { 0x3f9, 0 }, 0 },
};

START_TEST(io_permission_bitmap)
{
    const iomap_case *c = &iomaps[_i];
    fvm f; lc_cpu_state s, before; lcr_vcpu v; lcd_insn in;
    const uint64_t tss = 0x9000;
    uint8_t b[16];
    size_t n = lc_test_hex(c->hex, b, sizeof b);

    fvm_init(&f);
    fvm_state_prot32(&s, 3);
    s.rflags = 0x2 | (c->iopl << 12);
    s.tr = (lc_segment){ .base = tss, .limit = c->tr_limit, .type = c->tr_type,
                         .present = 1 };
    memcpy(f.ram + tss + 0x66, &c->map_base, 2);
    for (int i = 0; i < 2; i++)
        if (c->deny[i])
            f.ram[tss + c->map_base + c->deny[i] / 8] |=
                (uint8_t)(1u << (c->deny[i] % 8));
    s.rip = 0x7000;
    memcpy(f.ram + s.rip, b, n);
    s.gpr[LC_RDX] = c->port;
    s.gpr[LC_RSI] = 0x8000;
    s.gpr[LC_RCX] = 1;
    before = s;
    begin(&v, &f, &s);
    if (c->allowed) {
        ck_assert_msg(lcr_step(&v, &in) == LCR_DONE, "line %d: stopped (%s)",
                      c->line, lc_stop_reason_name(v.stop));
        ck_assert_msg(f.nlog >= 1 && f.log[0].addr == c->port,
                      "line %d: no access to the port", c->line);
    } else {
        ck_assert_msg(lcr_step(&v, &in) == LCR_STOP, "line %d: ran",
                      c->line);
        ck_assert_msg(v.stop == LC_STOP_TERMINATOR, "line %d: stop %s",
                      c->line, lc_stop_reason_name(v.stop));
        ck_assert_msg(!memcmp(&before, &s, sizeof s), "line %d: state changed",
                      c->line);
        ck_assert_uint_eq(f.nlog, 0);
    }
    fvm_fini(&f);
}
END_TEST

/* lcr_mem_gpa: where an instruction's memory operand points, for a given
 * instruction address (RIP-relative operands use it), with no effect. */
START_TEST(mem_gpa_probe)
{
    fvm f; lc_cpu_state s, before; lcr_vcpu v; lcd_insn in;
    uint8_t b[16];
    uint64_t gpa = 0;
    size_t n;

    fvm_init(&f);
    fvm_state_long64(&f, &s);
    s.rip = 0x9000;                       /* not the instruction's address */
    s.gpr[LC_RBX] = 0x5000;
    before = s;
    begin(&v, &f, &s);
    n = lc_test_hex("89 05 10 00 00 00", b, sizeof b);  /* mov [rip+0x10], eax */
    ck_assert_int_eq(lcd_decode(v.mode, b, n, &in), LC_OK);
    ck_assert_int_eq(lcr_mem_gpa(&v, &in, 0x7000, &gpa), 0);
    ck_assert_uint_eq(gpa, 0x7000 + 6 + 0x10);
    n = lc_test_hex("89 43 08", b, sizeof b);            /* mov [rbx+8], eax */
    ck_assert_int_eq(lcd_decode(v.mode, b, n, &in), LC_OK);
    ck_assert_int_eq(lcr_mem_gpa(&v, &in, 0x7000, &gpa), 0);
    ck_assert_uint_eq(gpa, 0x5008);
    n = lc_test_hex("01 c8", b, sizeof b);               /* add eax, ecx */
    ck_assert_int_eq(lcd_decode(v.mode, b, n, &in), LC_OK);
    ck_assert_int_eq(lcr_mem_gpa(&v, &in, 0x7000, &gpa), -1);
    n = lc_test_hex("8d 43 08", b, sizeof b);            /* lea: no access */
    ck_assert_int_eq(lcd_decode(v.mode, b, n, &in), LC_OK);
    ck_assert_int_eq(lcr_mem_gpa(&v, &in, 0x7000, &gpa), -1);
    /* a non-canonical address faults: -1, and nothing is left to report */
    s.gpr[LC_RBX] = 0x0000800000000000ull;
    n = lc_test_hex("89 03", b, sizeof b);
    ck_assert_int_eq(lcd_decode(v.mode, b, n, &in), LC_OK);
    ck_assert_int_eq(lcr_mem_gpa(&v, &in, 0x7000, &gpa), -1);
    ck_assert_int_eq(v.stop, LC_STOP_NONE);
    s.gpr[LC_RBX] = before.gpr[LC_RBX];
    ck_assert_uint_eq(s.rip, 0x9000);
    ck_assert_uint_eq(f.nlog, 0);
    fvm_fini(&f);
}
END_TEST

START_TEST(callback_stop_leaves_state)
{
    fvm f; lc_cpu_state s, before; lcr_vcpu v; lcd_insn in;

    fvm_init(&f);
    fvm_state_real(&s);
    s.rip = 0x7000;
    f.ram[0x7000] = 0xec;                  /* in al, dx */
    s.gpr[LC_RAX] = 0x1234;
    f.pio_answer = LC_CB_STOP;
    before = s;
    begin(&v, &f, &s);
    ck_assert_int_eq(lcr_step(&v, &in), LCR_STOP);
    ck_assert_int_eq(v.stop, LC_STOP_CALLBACK);
    ck_assert_int_eq(v.error, LC_OK);
    ck_assert_mem_eq(&before, &s, sizeof s);
    f.pio_answer = LC_CB_ERROR;
    begin(&v, &f, &s);
    ck_assert_int_eq(lcr_step(&v, &in), LCR_STOP);
    ck_assert_int_eq(v.error, LC_ERR_CALLBACK);
    ck_assert_mem_eq(&before, &s, sizeof s);
    fvm_fini(&f);
}
END_TEST

/* Section 7: a write into the code's own frame completes, then stops. */
START_TEST(smc_stops_after_write)
{
    fvm f; lc_cpu_state s; lcr_vcpu v; lcd_insn in;
    /* mov byte [0x7005], 0xeb ; nop (patched) */
    const uint8_t code[] = { 0xc6, 0x05, 0x05, 0x70, 0x00, 0x00, 0xeb, 0x90 };

    fvm_init(&f);
    fvm_state_prot32(&s, 0);
    s.rip = 0x7000;
    memcpy(f.ram + 0x7000, code, sizeof code);
    memset(&v, 0, sizeof v);
    v.insn_budget = 10;
    v.rep_budget = 10;
    static const lcr_watch w = { .n = 1, .gfn = { 0x7 } };
    v.watching = &w;
    lcr_begin(&v, &s, &fvm_ops, &f);
    ck_assert_int_eq(lcr_step(&v, &in), LCR_DONE);
    ck_assert_int_eq(v.stop, LC_STOP_SMC);
    ck_assert_uint_eq(s.rip, 0x7007);
    ck_assert_uint_eq(f.ram[0x7005], 0xeb);
    fvm_fini(&f);
}
END_TEST

/* REP OUTSB stops between iterations on the string budget, exactly as an
 * interrupted REP: RCX and RSI advanced, RIP still at the instruction. */
START_TEST(rep_budget)
{
    fvm f; lc_cpu_state s; lcr_vcpu v; lcd_insn in;

    fvm_init(&f);
    fvm_state_prot32(&s, 0);
    s.rip = 0x7000;
    f.ram[0x7000] = 0xf3; f.ram[0x7001] = 0x6e;    /* rep outsb */
    memcpy(f.ram + 0x9000, "abcdefghij", 10);
    s.gpr[LC_RCX] = 10; s.gpr[LC_RSI] = 0x9000; s.gpr[LC_RDX] = 0x3f8;
    memset(&v, 0, sizeof v);
    v.insn_budget = 10;
    v.rep_budget = 3;
    lcr_begin(&v, &s, &fvm_ops, &f);
    ck_assert_int_eq(lcr_step(&v, &in), LCR_STOP);
    ck_assert_int_eq(v.stop, LC_STOP_BUDGET);
    ck_assert_uint_eq(s.gpr[LC_RCX], 7);
    ck_assert_uint_eq(s.gpr[LC_RSI], 0x9003);
    ck_assert_uint_eq(s.rip, 0x7000);
    ck_assert_uint_eq(f.nlog, 3);
    ck_assert(f.log[2].kind == 'o' && f.log[2].value == 'c');
    /* A later run finishes it. */
    v.rep_budget = 100;
    lcr_begin(&v, &s, &fvm_ops, &f);
    ck_assert_int_eq(lcr_step(&v, &in), LCR_DONE);
    ck_assert_uint_eq(s.gpr[LC_RCX], 0);
    ck_assert_uint_eq(s.gpr[LC_RSI], 0x900a);
    ck_assert_uint_eq(s.rip, 0x7002);
    ck_assert_uint_eq(f.nlog, 10);
    fvm_fini(&f);
}
END_TEST

/* An instruction whose accesses would reach two devices, the first of
 * which could not be taken back if the second refused (ops.h, LC_CB_STOP):
 * a port and MMIO or a traced page (INS, OUTS), MMIO and an MMIO or
 * traced stack (PUSH, POP with a memory operand). The CPU does it: the
 * step stops before it with no callback made; a REP stops between
 * iterations, as an interrupted REP. */
static int step_io(fvm *f, lc_cpu_state *s, lcr_vcpu *v)
{
    lcd_insn in;

    memset(v, 0, sizeof *v);
    v->insn_budget = 10;
    v->rep_budget = 10;
    f->nlog = 0;
    lcr_begin(v, s, &fvm_ops, f);
    return lcr_step(v, &in);
}

START_TEST(two_devices_not_run)
{
    fvm f; lc_cpu_state s; lcr_vcpu v;
    const uint32_t mmio = (uint32_t)FVM_MMIO + 0x10;

    fvm_init(&f);
    f.traced_gfn = 0x9;
    fvm_state_prot32(&s, 0);
    s.rip = 0x7000;
    s.gpr[LC_RDX] = 0x3f8;
    s.gpr[LC_RSP] = 0x8000;

    f.ram[0x7000] = 0x6c;                       /* insb */
    s.gpr[LC_RDI] = mmio;
    ck_assert_int_eq(step_io(&f, &s, &v), LCR_STOP);
    ck_assert_int_eq(v.stop, LC_STOP_TERMINATOR);
    ck_assert_uint_eq(f.nlog, 0);               /* the port was not read */
    ck_assert_uint_eq(s.gpr[LC_RDI], mmio);
    ck_assert_uint_eq(s.rip, 0x7000);
    s.gpr[LC_RDI] = 0x9010;                     /* into a traced page */
    ck_assert_int_eq(step_io(&f, &s, &v), LCR_STOP);
    ck_assert_int_eq(v.stop, LC_STOP_TERMINATOR);
    ck_assert_uint_eq(f.nlog, 0);
    s.gpr[LC_RDI] = 0x8010;                     /* plain RAM: runs */
    ck_assert_int_eq(step_io(&f, &s, &v), LCR_DONE);
    ck_assert_uint_eq(f.nlog, 1);
    ck_assert_int_eq(f.log[0].kind, 'i');

    f.ram[0x7000] = 0x6e;                       /* outsb */
    s.rip = 0x7000;
    s.gpr[LC_RSI] = mmio;
    ck_assert_int_eq(step_io(&f, &s, &v), LCR_STOP);
    ck_assert_int_eq(v.stop, LC_STOP_TERMINATOR);
    ck_assert_uint_eq(f.nlog, 0);               /* MMIO was not read */
    s.gpr[LC_RSI] = 0x9010;     /* reading a traced page is plain RAM */
    ck_assert_int_eq(step_io(&f, &s, &v), LCR_DONE);
    ck_assert_uint_eq(f.nlog, 1);
    ck_assert_int_eq(f.log[0].kind, 'o');

    /* rep insb from 0x8ffe: two bytes into RAM, then the traced page */
    f.ram[0x7000] = 0xf3; f.ram[0x7001] = 0x6c;
    s.rip = 0x7000;
    s.gpr[LC_RDI] = 0x8ffe;
    s.gpr[LC_RCX] = 5;
    ck_assert_int_eq(step_io(&f, &s, &v), LCR_STOP);
    ck_assert_int_eq(v.stop, LC_STOP_TERMINATOR);
    ck_assert_uint_eq(f.nlog, 2);
    ck_assert_uint_eq(s.gpr[LC_RCX], 3);
    ck_assert_uint_eq(s.gpr[LC_RDI], 0x9000);
    ck_assert_uint_eq(s.rip, 0x7000);

    /* push dword [mmio]: onto a stack in MMIO no, onto RAM yes */
    memcpy(f.ram + 0x7000, (uint8_t[]){ 0xff, 0x35 }, 2);
    memcpy(f.ram + 0x7002, &mmio, 4);
    s.gpr[LC_RSP] = mmio + 0x100;
    ck_assert_int_eq(step_io(&f, &s, &v), LCR_STOP);
    ck_assert_int_eq(v.stop, LC_STOP_TERMINATOR);
    ck_assert_uint_eq(f.nlog, 0);
    ck_assert_uint_eq(s.gpr[LC_RSP], mmio + 0x100);
    s.gpr[LC_RSP] = 0x9100;                     /* a traced stack: no */
    ck_assert_int_eq(step_io(&f, &s, &v), LCR_STOP);
    ck_assert_uint_eq(f.nlog, 0);
    s.gpr[LC_RSP] = 0x8100;
    ck_assert_int_eq(step_io(&f, &s, &v), LCR_DONE);
    ck_assert_uint_eq(f.nlog, 1);
    ck_assert_int_eq(f.log[0].kind, 'r');
    ck_assert_uint_eq(s.gpr[LC_RSP], 0x80fc);

    /* pop dword [mmio] from a stack in MMIO: no; from RAM: yes */
    memcpy(f.ram + 0x7000, (uint8_t[]){ 0x8f, 0x05 }, 2);
    s.rip = 0x7000;
    s.gpr[LC_RSP] = mmio + 0x100;
    ck_assert_int_eq(step_io(&f, &s, &v), LCR_STOP);
    ck_assert_int_eq(v.stop, LC_STOP_TERMINATOR);
    ck_assert_uint_eq(f.nlog, 0);
    s.gpr[LC_RSP] = 0x8100;
    ck_assert_int_eq(step_io(&f, &s, &v), LCR_DONE);
    ck_assert_uint_eq(f.nlog, 1);
    ck_assert_int_eq(f.log[0].kind, 'w');
    fvm_fini(&f);
}
END_TEST

/* A refusal is the engine's, not a CPU event: it leaves the state as it
 * was before the instruction, with no accessed or dirty bit set by an
 * access the instruction looked at before the one that refused it (a
 * fault keeps what the CPU sets before it faults). lc-diff's traced
 * pages found the PUSH case. */
START_TEST(refusal_sets_no_accessed_bit)
{
    fvm f; lc_cpu_state s; lcr_vcpu v;
    uint64_t pd3e_gpa = 0x4000 + ((FVM_MMIO >> 21) & 511) * 8, e;

    fvm_init(&f);
    f.traced_gfn = 0x9;
    fvm_state_long64(&f, &s);

    /* push qword [rbx]: the source MMIO, the slot in the traced page */
    memcpy(f.ram + 0x7000, (uint8_t[]){ 0xff, 0x33 }, 2);
    s.rip = 0x7000;
    s.gpr[LC_RBX] = FVM_MMIO + 0x10;
    s.gpr[LC_RSP] = 0x9100;
    ck_assert_int_eq(step_io(&f, &s, &v), LCR_STOP);
    ck_assert_int_eq(v.stop, LC_STOP_TERMINATOR);
    ck_assert_uint_eq(f.nlog, 0);
    ck_assert_uint_eq(s.gpr[LC_RSP], 0x9100);
    memcpy(&e, f.ram + pd3e_gpa, 8);
    ck_assert_uint_eq(e & 0x20, 0);     /* the MMIO's PDE: no A bit */
    s.gpr[LC_RSP] = 0x8100;             /* onto plain RAM: it runs */
    ck_assert_int_eq(step_io(&f, &s, &v), LCR_DONE);
    memcpy(&e, f.ram + pd3e_gpa, 8);
    ck_assert_uint_eq(e & 0x20, 0x20);
    e &= ~0x20ull;
    memcpy(f.ram + pd3e_gpa, &e, 8);

    /* pop qword [rbx]: the slot MMIO, the destination traced */
    memcpy(f.ram + 0x7000, (uint8_t[]){ 0x8f, 0x03 }, 2);
    s.rip = 0x7000;
    s.gpr[LC_RBX] = 0x9010;
    s.gpr[LC_RSP] = FVM_MMIO + 0x100;
    ck_assert_int_eq(step_io(&f, &s, &v), LCR_STOP);
    ck_assert_int_eq(v.stop, LC_STOP_TERMINATOR);
    ck_assert_uint_eq(f.nlog, 0);
    memcpy(&e, f.ram + pd3e_gpa, 8);
    ck_assert_uint_eq(e & 0x20, 0);

    /* pushad under PAE paging (the PD at 0x3000, 2 MiB pages, A and D
     * clear): two slots on plain RAM, six on the traced page below */
    fvm_state_prot32(&s, 0);
    e = 0x3000 | 1;                     /* PDPTE 0 */
    memcpy(f.ram + 0x5000, &e, 8);
    f.ram[0x3000] &= (uint8_t)~0x60;    /* the pushes above set A, D */
    s.cr0 |= LC_CR0_PG;
    s.cr3 = 0x5000;
    s.cr4 = LC_CR4_PAE;
    f.ram[0x7000] = 0x60;
    s.rip = 0x7000;
    s.gpr[LC_RSP] = 0xa008;
    ck_assert_int_eq(step_io(&f, &s, &v), LCR_STOP);
    ck_assert_int_eq(v.stop, LC_STOP_TERMINATOR);
    ck_assert_uint_eq(f.nlog, 0);
    ck_assert_uint_eq(s.gpr[LC_RSP], 0xa008);
    memcpy(&e, f.ram + 0x3000, 8);
    ck_assert_uint_eq(e & 0x40, 0);     /* no D bit (the fetch sets A) */
    s.gpr[LC_RSP] = 0xa100;             /* all on plain RAM: it runs */
    ck_assert_int_eq(step_io(&f, &s, &v), LCR_DONE);
    memcpy(&e, f.ram + 0x3000, 8);
    ck_assert_uint_eq(e & 0x40, 0x40);
    fvm_fini(&f);
}
END_TEST

START_TEST(budget_and_irq)
{
    fvm f; lc_cpu_state s; lcr_vcpu v; lcd_insn in;

    fvm_init(&f);
    fvm_state_real(&s);
    s.rip = 0x7000;
    memset(f.ram + 0x7000, 0x90, 8);
    memset(&v, 0, sizeof v);
    v.insn_budget = 2;
    v.rep_budget = 1;
    lcr_begin(&v, &s, &fvm_ops, &f);
    ck_assert_int_eq(lcr_step(&v, &in), LCR_DONE);
    ck_assert_int_eq(lcr_step(&v, &in), LCR_DONE);
    ck_assert_int_eq(lcr_step(&v, &in), LCR_STOP);
    ck_assert_int_eq(v.stop, LC_STOP_BUDGET);
    /* An interrupt is only deliverable with IF set. */
    v.insn_budget = 10;
    v.irq_check = 1;
    f.irq = 1;
    lcr_begin(&v, &s, &fvm_ops, &f);
    ck_assert_int_eq(lcr_step(&v, &in), LCR_DONE);     /* IF=0 */
    s.rflags |= LC_RFLAGS_IF;
    ck_assert_int_eq(lcr_step(&v, &in), LCR_STOP);
    ck_assert_int_eq(v.stop, LC_STOP_IRQ);
    ck_assert_uint_eq(s.rip, 0x7003);
    fvm_fini(&f);
}
END_TEST

/* ---- ALU spot checks (the differential tests cover the rest) ---------- */

START_TEST(alu_flags)
{
    uint64_t fl, r, lo, hi;

    fl = 0x2;
    r = lcr_alu_bin(LCR_ADD, 1, 0x7f, 1, &fl);
    ck_assert_uint_eq(r, 0x80);
    ck_assert_uint_eq(fl & LCR_FL_STATUS, LC_RFLAGS_OF | LC_RFLAGS_SF | LC_RFLAGS_AF);
    fl = 0x2 | LC_RFLAGS_CF;
    r = lcr_alu_bin(LCR_ADC, 4, 0xffffffff, 0, &fl);
    ck_assert_uint_eq(r, 0);
    ck_assert_uint_eq(fl & LCR_FL_STATUS, LC_RFLAGS_CF | LC_RFLAGS_ZF |
                      LC_RFLAGS_PF | LC_RFLAGS_AF);
    fl = 0x2 | LC_RFLAGS_CF;
    r = lcr_alu_bin(LCR_SBB, 8, 0, 0, &fl);
    ck_assert_uint_eq(r, ~0ull);
    ck_assert(fl & LC_RFLAGS_CF);
    fl = 0x2 | LC_RFLAGS_CF;
    r = lcr_alu_inc(2, 0xffff, &fl);
    ck_assert_uint_eq(r, 0);
    ck_assert(fl & LC_RFLAGS_CF);        /* INC keeps CF */
    ck_assert(fl & LC_RFLAGS_ZF);
    /* Shift count masking: 8-bit SHL by 33 is SHL by 1. */
    fl = 0x2;
    r = lcr_alu_shift(LCR_SHL, 1, 0x81, 33, &fl);
    ck_assert_uint_eq(r, 0x02);
    ck_assert(fl & LC_RFLAGS_CF);
    ck_assert(fl & LC_RFLAGS_OF);        /* MSB(r) ^ CF = 0 ^ 1 */
    /* Count 0 (after masking) changes nothing. */
    fl = 0x2 | LC_RFLAGS_ZF;
    r = lcr_alu_shift(LCR_SHR, 4, 0x10, 32, &fl);
    ck_assert_uint_eq(r, 0x10);
    ck_assert_uint_eq(fl, 0x2 | LC_RFLAGS_ZF);
    /* RCL on 8 bits rotates through 9 bits: by 9 is the identity. */
    fl = 0x2 | LC_RFLAGS_CF;
    r = lcr_alu_shift(LCR_RCL, 1, 0x5a, 9, &fl);
    ck_assert_uint_eq(r, 0x5a);
    ck_assert(fl & LC_RFLAGS_CF);
    /* IMUL overflow and MUL high half. */
    fl = 0x2;
    lcr_alu_imul(1, 0x80, 0xff, &lo, &hi, &fl);    /* -128 * -1 = 128 */
    ck_assert_uint_eq(lo, 0x80);
    ck_assert_uint_eq(hi, 0x00);
    ck_assert(fl & LC_RFLAGS_OF);
    fl = 0x2;
    lcr_alu_mul(8, ~0ull, ~0ull, &lo, &hi, &fl);
    ck_assert_uint_eq(lo, 1);
    ck_assert_uint_eq(hi, ~0ull - 1);
    ck_assert(fl & LC_RFLAGS_CF);
    /* Conditions. */
    ck_assert(lcr_cond(LC_CC_L, LC_RFLAGS_SF));
    ck_assert(!lcr_cond(LC_CC_L, LC_RFLAGS_SF | LC_RFLAGS_OF));
    ck_assert(lcr_cond(LC_CC_LE, LC_RFLAGS_ZF));
    ck_assert(lcr_cond(LC_CC_NBE, 0));
}
END_TEST

/* ---- the operation table and named architectural facts ---------------- */

/* The decoder says which operations the runtime runs (LCD_F_EXEC); the
 * runtime's rows say how. They must agree row for row, and only gap
 * fillers the translator can run inline carry a fast-path kind. */
START_TEST(op_rows_match_decoder)
{
    for (unsigned op = 0; op < LC_OP_COUNT_; op++) {
        const lcr_op_row *r = &lcr_op_rows[op];
        unsigned f = lcd_op_table[op].flags;

        ck_assert_msg(((f & LCD_F_EXEC) != 0) == (r->ex != NULL),
                      "%s: decoder EXEC %u, runtime executor %s",
                      lc_op_name((lc_op)op), f & LCD_F_EXEC,
                      r->ex ? "set" : "NULL");
        if (r->fast != LCR_FAST_NONE)
            ck_assert_msg((f & LCD_F_EXEC) &&
                          !(f & (LCD_F_STRONG | LCD_F_CFLOW)),
                          "%s: fast path on a non-gap-filler",
                          lc_op_name((lc_op)op));
        if (r->fast == LCR_FAST_ALU)
            ck_assert_uint_le(r->alu, LCR_XOR);
    }
    /* CMP and TEST compute without storing; the rest of the ALU rows
     * store (the inline path relies on it). */
    ck_assert(!(lcr_op_rows[LC_OP_CMP].flags & LCR_ROW_STORE));
    ck_assert(!(lcr_op_rows[LC_OP_TEST].flags & LCR_ROW_STORE));
    ck_assert(lcr_op_rows[LC_OP_SUB].flags & LCR_ROW_STORE);
    ck_assert_uint_eq(lcr_op_rows[LC_OP_CMP].alu, LCR_SUB);
    ck_assert_uint_eq(lcr_op_rows[LC_OP_TEST].alu, LCR_AND);
    ck_assert_uint_eq(lcr_op_rows[LC_OP_MOV].fast, LCR_FAST_MOV);
}
END_TEST

/* The one canonical-address check (SDM vol. 1 3.3.7.1): bits 63:N-1 all
 * equal, N = 48, or 57 with LA57. Edges on both sides of both halves,
 * then random values against sign extension done with unsigned
 * arithmetic only; lcr_canonical_v() (48 bits first, then CR4.LA57's
 * width) answers the same for the vCPU's CR4. */
START_TEST(canonical_edges)
{
    static const struct { uint64_t la; unsigned bits; int ok; } e[] = {
        { 0, 48, 1 },
        { 0x00007fffffffffffull, 48, 1 },
        { 0x0000800000000000ull, 48, 0 },
        { 0xffff7fffffffffffull, 48, 0 },
        { 0xffff800000000000ull, 48, 1 },
        { ~0ull, 48, 1 },
        { 0x8000000000000000ull, 48, 0 },
        { 0x0000000100000000ull, 48, 1 },
        { 0x00ffffffffffffffull, 57, 1 },
        { 0x0100000000000000ull, 57, 0 },
        { 0xff00000000000000ull, 57, 1 },
        { 0xfeffffffffffffffull, 57, 0 },
        { 0x0000800000000000ull, 57, 1 },   /* canonical only with LA57 */
        { 0xffff7fffffffffffull, 57, 1 },
    };
    uint64_t x = 0x9e3779b97f4a7c15ull;
    lc_cpu_state st;
    lcr_vcpu v;

    memset(&st, 0, sizeof st);
    memset(&v, 0, sizeof v);
    v.st = &st;
    for (unsigned i = 0; i < sizeof e / sizeof e[0]; i++)
        ck_assert_msg(lcr_canonical(e[i].la, e[i].bits) == e[i].ok,
                      "%#llx/%u", (unsigned long long)e[i].la, e[i].bits);
    for (unsigned i = 0; i < 100000; i++) {
        unsigned bits = (i & 1) ? 57 : 48;
        uint64_t low, ext;

        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        /* Half the values near a boundary, half anywhere. */
        if (i & 2)
            x = (x & 0xfff) ^ ((x >> 12 & 1) ? ~0ull << (bits - 1)
                                              : 1ull << (bits - 1));
        low = x & ((1ull << bits) - 1);
        ext = (low >> (bits - 1)) ? low | ~((1ull << bits) - 1) : low;
        ck_assert_int_eq(lcr_canonical(x, bits), ext == x);
        /* the inline paths' form: the 48-bit test first, CR4 after */
        st.cr4 = bits == 57 ? LC_CR4_LA57 : 0;
        ck_assert_int_eq(lcr_canonical_v(&v, x), ext == x);
    }
    for (unsigned i = 0; i < sizeof e / sizeof e[0]; i++) {
        st.cr4 = e[i].bits == 57 ? LC_CR4_LA57 : 0;
        ck_assert_msg(lcr_canonical_v(&v, e[i].la) == e[i].ok,
                      "%#llx/%u", (unsigned long long)e[i].la, e[i].bits);
    }
}
END_TEST

/* MOV DR4 aliases DR6 unless CR4.DE, where it is #UD (SDM vol. 3 18.2.2);
 * the stop leaves the state untouched. */
START_TEST(mov_dr4_with_cr4_de)
{
    fvm f; lc_cpu_state s, before; lcr_vcpu v; lcd_insn in;

    fvm_init(&f);
    fvm_state_prot32(&s, 0);
    s.cr4 |= LC_CR4_DE;
    s.rip = 0x7000;
    memcpy(f.ram + 0x7000, "\x0f\x23\xe0", 3);        /* mov dr4, eax */
    before = s;
    begin(&v, &f, &s);
    ck_assert_int_eq(lcr_step(&v, &in), LCR_STOP);
    ck_assert_int_eq(v.stop, LC_STOP_FAULT);
    ck_assert_uint_eq(v.fault_vector, LC_VEC_UD);
    ck_assert_mem_eq(&before, &s, sizeof s);
    fvm_fini(&f);
}
END_TEST

/* ---- issue 14's gap fillers ------------------------------------------- */

/* `hex` at 0x7000 in state `s`; one lcr_step with `ops`. */
static int step_ops(fvm *f, lc_cpu_state *s, lcr_vcpu *v, const char *hex,
                    const lc_vm_ops *ops)
{
    uint8_t b[32];
    size_t n = lc_test_hex(hex, b, sizeof b);
    lcd_insn in;

    s->rip = 0x7000;
    memcpy(f->ram + 0x7000, b, n);
    memset(v, 0, sizeof *v);
    v->insn_budget = 1000;
    v->rep_budget = 1000;
    lcr_begin(v, s, ops, f);
    return lcr_step(v, &in);
}

static int step1(fvm *f, lc_cpu_state *s, lcr_vcpu *v, const char *hex)
{
    return step_ops(f, s, v, hex, &fvm_ops);
}

/* The step stopped before the instruction with `why` (and `vec`), and
 * nothing changed. */
static void stopped(lcr_vcpu *v, const lc_cpu_state *before,
                    const lc_cpu_state *s, lc_stop_reason why, uint8_t vec,
                    int line)
{
    ck_assert_msg(v->stop == why, "line %d: stop %s, want %s", line,
                  lc_stop_reason_name(v->stop), lc_stop_reason_name(why));
    if (why == LC_STOP_FAULT)
        ck_assert_msg(v->fault_vector == vec, "line %d: vector %u, want %u",
                      line, v->fault_vector, vec);
    ck_assert_msg(!memcmp(before, s, sizeof *s), "line %d: state changed",
                  line);
    ck_assert_uint_eq(v->insns, 0);
}

#define STOPS(hex, why, vec) do { \
    lc_cpu_state b_ = s; \
    ck_assert_int_eq(step1(&f, &s, &v, hex), LCR_STOP); \
    b_.rip = s.rip; \
    stopped(&v, &b_, &s, why, vec, __LINE__); \
} while (0)

/* DIV and IDIV: quotient and remainder at every width, #DE for a zero
 * divisor and for a quotient that does not fit (including the one signed
 * case whose magnitude fits unsigned), flags left as they were. */
START_TEST(div_idiv)
{
    fvm f; lc_cpu_state s; lcr_vcpu v;

    fvm_init(&f);
    fvm_state_real(&s);
    s.rflags = 0x2 | LC_RFLAGS_ZF | LC_RFLAGS_CF;
    s.gpr[LC_RAX] = 1000;
    s.gpr[LC_RBX] = 7;
    ck_assert_int_eq(step1(&f, &s, &v, "f6 f3"), LCR_DONE);   /* div bl */
    ck_assert_uint_eq(s.gpr[LC_RAX], 0x068e);                 /* 142 r 6 */
    ck_assert_uint_eq(s.rflags, 0x2 | LC_RFLAGS_ZF | LC_RFLAGS_CF);

    fvm_state_prot32(&s, 0);
    s.gpr[LC_RDX] = 1;
    s.gpr[LC_RAX] = 5;
    s.gpr[LC_RCX] = 0x10;
    ck_assert_int_eq(step1(&f, &s, &v, "f7 f1"), LCR_DONE);   /* div ecx */
    ck_assert_uint_eq(s.gpr[LC_RAX], 0x10000000);
    ck_assert_uint_eq(s.gpr[LC_RDX], 5);
    s.gpr[LC_RDX] = 0xffff;
    s.gpr[LC_RAX] = 0xfff9;                                   /* -7 */
    s.gpr[LC_RCX] = 2;
    ck_assert_int_eq(step1(&f, &s, &v, "66 f7 f9"), LCR_DONE); /* idiv cx */
    ck_assert_uint_eq(s.gpr[LC_RAX], 0xfffd);                 /* -3 */
    ck_assert_uint_eq(s.gpr[LC_RDX], 0xffff);                 /* -1 */
    s.gpr[LC_RAX] = 0xff80;                                   /* -128 / 1 */
    s.gpr[LC_RBX] = 1;
    ck_assert_int_eq(step1(&f, &s, &v, "f6 fb"), LCR_DONE);   /* idiv bl */
    ck_assert_uint_eq(s.gpr[LC_RAX] & 0xffff, 0x0080);
    s.gpr[LC_RAX] = 0x0080;                                   /* 128 / 1 */
    STOPS("f6 fb", LC_STOP_FAULT, LC_VEC_DE);
    s.gpr[LC_RAX] = 0x1000;                                   /* 4096 / 1 */
    STOPS("f6 f3", LC_STOP_FAULT, LC_VEC_DE);
    s.gpr[LC_RCX] = 0;
    STOPS("f7 f1", LC_STOP_FAULT, LC_VEC_DE);
    STOPS("f7 f9", LC_STOP_FAULT, LC_VEC_DE);

    fvm_state_long64(&f, &s);
    s.gpr[LC_RDX] = ~0ull;
    s.gpr[LC_RAX] = (uint64_t)-100;
    s.gpr[LC_RCX] = 7;
    ck_assert_int_eq(step1(&f, &s, &v, "48 f7 f9"), LCR_DONE); /* idiv rcx */
    ck_assert_uint_eq(s.gpr[LC_RAX], (uint64_t)-14);
    ck_assert_uint_eq(s.gpr[LC_RDX], (uint64_t)-2);
    s.gpr[LC_RDX] = ~0ull;                      /* -2^63 / -1 */
    s.gpr[LC_RAX] = 0x8000000000000000ull;
    s.gpr[LC_RCX] = ~0ull;
    STOPS("48 f7 f9", LC_STOP_FAULT, LC_VEC_DE);
    s.gpr[LC_RDX] = 0x7;                        /* 7:2^64-1 / 8 fits */
    s.gpr[LC_RAX] = ~0ull;
    s.gpr[LC_RCX] = 8;
    ck_assert_int_eq(step1(&f, &s, &v, "48 f7 f1"), LCR_DONE);
    ck_assert_uint_eq(s.gpr[LC_RAX], ~0ull);
    ck_assert_uint_eq(s.gpr[LC_RDX], 7);
    /* 32-bit DIV zero-extends both results */
    s.gpr[LC_RDX] = 0xdead000000000000ull;
    s.gpr[LC_RAX] = 0xbeef000000000009ull;
    s.gpr[LC_RCX] = 2;
    ck_assert_int_eq(step1(&f, &s, &v, "f7 f1"), LCR_DONE);
    ck_assert_uint_eq(s.gpr[LC_RAX], 4);
    ck_assert_uint_eq(s.gpr[LC_RDX], 1);
    /* a divisor in MMIO is read before the #DE check: left to the CPU */
    s.gpr[LC_RBX] = FVM_MMIO;
    STOPS("f7 33", LC_STOP_TERMINATOR, 0);
    ck_assert_uint_eq(f.nlog, 0);
    fvm_fini(&f);
}
END_TEST

/* BT, BTS, BTR, BTC: the register forms take the offset modulo the
 * width; the memory form with a register offset addresses beyond the
 * operand, downwards too; CF is the bit, ZF and the other flags stay. */
START_TEST(bit_tests)
{
    fvm f; lc_cpu_state s; lcr_vcpu v;
    uint32_t w;

    fvm_init(&f);
    fvm_state_prot32(&s, 0);
    s.rflags = 0x2 | LC_RFLAGS_ZF;
    s.gpr[LC_RAX] = 0x8;
    s.gpr[LC_RCX] = 35;                                 /* bit 3 */
    ck_assert_int_eq(step1(&f, &s, &v, "0f a3 c8"), LCR_DONE);  /* bt eax, ecx */
    ck_assert_uint_eq(s.rflags, 0x2 | LC_RFLAGS_ZF | LC_RFLAGS_CF);
    ck_assert_int_eq(step1(&f, &s, &v, "0f b3 c8"), LCR_DONE);  /* btr */
    ck_assert_uint_eq(s.gpr[LC_RAX], 0);
    ck_assert_int_eq(step1(&f, &s, &v, "0f bb c8"), LCR_DONE);  /* btc */
    ck_assert_uint_eq(s.gpr[LC_RAX], 0x8);
    ck_assert(!(s.rflags & LC_RFLAGS_CF));
    /* bt [eax], ecx with ecx = -1: bit 31 of the dword at eax - 4 */
    s.gpr[LC_RAX] = 0x9004;
    s.gpr[LC_RCX] = 0xffffffff;
    w = 0x80000000u;
    memcpy(f.ram + 0x9000, &w, 4);
    ck_assert_int_eq(step1(&f, &s, &v, "0f a3 08"), LCR_DONE);
    ck_assert(s.rflags & LC_RFLAGS_CF);
    /* bts [eax], ecx with ecx = 33: bit 1 of the dword at eax + 4 */
    s.gpr[LC_RCX] = 33;
    ck_assert_int_eq(step1(&f, &s, &v, "0f ab 08"), LCR_DONE);
    memcpy(&w, f.ram + 0x9008, 4);
    ck_assert_uint_eq(w & 2, 2);
    ck_assert(!(s.rflags & LC_RFLAGS_CF));
    /* 16-bit, offset -17: bit 15 of the word at eax - 4 */
    s.gpr[LC_RCX] = 0xffef;
    memset(f.ram + 0x9000, 0, 2);
    ck_assert_int_eq(step1(&f, &s, &v, "66 0f ab 08"), LCR_DONE); /* bts */
    ck_assert_uint_eq(f.ram[0x9001], 0x80);
    /* immediate offsets are taken modulo the width, no displacement */
    ck_assert_int_eq(step1(&f, &s, &v, "0f ba 30 21"), LCR_DONE); /* btr [eax], 33 */
    memcpy(&w, f.ram + 0x9004, 4);
    ck_assert_uint_eq(w & 2, 0);
    /* beyond the segment: #GP before it, nothing changed */
    s.seg[LC_DS].limit = 0x9005;
    s.gpr[LC_RCX] = 64;
    STOPS("0f a3 08", LC_STOP_FAULT, LC_VEC_GP);
    fvm_fini(&f);
}
END_TEST

/* CLI/STI need CPL <= IOPL; STI with IF clear runs the next instruction
 * inside its shadow in the same step (no interrupt check between them),
 * or is taken back if that one cannot run. */
START_TEST(cli_sti_shadow)
{
    fvm f; lc_cpu_state s, before; lcr_vcpu v;
    lcd_insn in;

    fvm_init(&f);
    fvm_state_prot32(&s, 3);
    s.rflags = 0x2 | LC_RFLAGS_IF;
    STOPS("fa", LC_STOP_TERMINATOR, 0);                 /* CPL 3 > IOPL 0 */
    s.rflags |= LC_RFLAGS_IOPL;
    ck_assert_int_eq(step1(&f, &s, &v, "fa"), LCR_DONE);
    ck_assert(!(s.rflags & LC_RFLAGS_IF));
    ck_assert_uint_eq(s.rip, 0x7001);

    fvm_state_real(&s);
    s.rflags = 0x2 | LC_RFLAGS_IF;                      /* no shadow */
    ck_assert_int_eq(step1(&f, &s, &v, "fb 90"), LCR_DONE);
    ck_assert_uint_eq(s.rip, 0x7001);
    ck_assert_uint_eq(v.insns, 1);
    s.rflags = 0x2;                                     /* sti; inc ax */
    s.gpr[LC_RAX] = 1;
    ck_assert_int_eq(step1(&f, &s, &v, "fb 40"), LCR_DONE);
    ck_assert_uint_eq(s.rip, 0x7002);
    ck_assert_uint_eq(v.insns, 2);
    ck_assert_uint_eq(s.gpr[LC_RAX], 2);
    ck_assert(s.rflags & LC_RFLAGS_IF);
    s.rflags = 0x2;                                     /* sti; ud2 */
    STOPS("fb 0f 0b", LC_STOP_TERMINATOR, 0);
    STOPS("fb 8e d0", LC_STOP_TERMINATOR, 0);           /* a shadow in one */
    /* a second STI sees IF set: it opens no shadow of its own */
    ck_assert_int_eq(step1(&f, &s, &v, "fb fb"), LCR_DONE);
    ck_assert_uint_eq(v.insns, 2);
    s.rflags = 0x2;
    STOPS("fb 8b 87 ff ff", LC_STOP_FAULT, LC_VEC_GP);  /* its fault */
    /* sti; hlt: the classic idle loop halts with the shadow honoured */
    ck_assert_int_eq(step1(&f, &s, &v, "fb f4"), LCR_DONE);
    ck_assert_int_eq(v.stop, LC_STOP_HALT);
    ck_assert_uint_eq(s.rip, 0x7002);
    ck_assert_uint_eq(f.nlog, 1);
    ck_assert_int_eq(f.log[0].kind, 'h');
    /* no budget for both: stop before the STI */
    s.rflags = 0x2;
    s.rip = 0x7000;
    before = s;
    memset(&v, 0, sizeof v);
    v.insn_budget = 1;
    v.rep_budget = 1;
    lcr_begin(&v, &s, &fvm_ops, &f);
    ck_assert_int_eq(lcr_step(&v, &in), LCR_STOP);
    ck_assert_int_eq(v.stop, LC_STOP_BUDGET);
    ck_assert_mem_eq(&before, &s, sizeof s);
    /* an interrupt pending: not taken between STI and the next one */
    memcpy(f.ram + 0x7000, "\xfb\x40\x40", 3);
    f.irq = 1;
    memset(&v, 0, sizeof v);
    v.insn_budget = 10;
    v.irq_check = 1;
    lcr_begin(&v, &s, &fvm_ops, &f);
    ck_assert_int_eq(lcr_step(&v, &in), LCR_DONE);
    ck_assert_uint_eq(s.rip, 0x7002);
    ck_assert_int_eq(lcr_step(&v, &in), LCR_STOP);
    ck_assert_int_eq(v.stop, LC_STOP_IRQ);
    /* sti; rep outsb: a REP OUTS may stop between iterations with those
     * done standing, which could not be taken back with the STI: it is not
     * started in the shadow, the step stops before the STI and no byte
     * reaches the port (fuzz_engine found the state half changed) */
    memcpy(f.ram + 0x7000, "\xfb\xf3\x6e", 3);
    f.irq = 0;
    f.nlog = 0;
    s.rflags = 0x2;
    s.rip = 0x7000;
    s.gpr[LC_RCX] = 3;
    s.gpr[LC_RSI] = 0x100;
    s.gpr[LC_RDX] = 0x80;
    before = s;
    memset(&v, 0, sizeof v);
    v.insn_budget = 10;
    v.rep_budget = 1;
    lcr_begin(&v, &s, &fvm_ops, &f);
    ck_assert_int_eq(lcr_step(&v, &in), LCR_STOP);
    ck_assert_int_eq(v.stop, LC_STOP_TERMINATOR);
    ck_assert_mem_eq(&before, &s, sizeof s);
    ck_assert_uint_eq(f.nlog, 0);
    ck_assert_uint_eq(v.insns, 0);
    /* without the shadow the same REP OUTS runs, one iteration a step */
    s.rip = 0x7001;
    memset(&v, 0, sizeof v);
    v.insn_budget = 10;
    v.rep_budget = 1;
    lcr_begin(&v, &s, &fvm_ops, &f);
    ck_assert_int_eq(lcr_step(&v, &in), LCR_STOP);
    ck_assert_int_eq(v.stop, LC_STOP_BUDGET);
    ck_assert_uint_eq(s.gpr[LC_RCX], 2);
    ck_assert_uint_eq(f.nlog, 1);
    fvm_fini(&f);
}
END_TEST

/* PUSHA/POPA at both widths, LEAVE. */
START_TEST(pusha_popa_leave)
{
    fvm f; lc_cpu_state s; lcr_vcpu v;
    uint32_t d[8];
    uint16_t w[8];

    fvm_init(&f);
    fvm_state_prot32(&s, 0);
    for (unsigned i = 0; i < 8; i++)
        s.gpr[i] = 0x11111111u * (i + 1);
    s.gpr[LC_RSP] = 0x8000;
    ck_assert_int_eq(step1(&f, &s, &v, "60"), LCR_DONE);     /* pushad */
    ck_assert_uint_eq(s.gpr[LC_RSP], 0x8000 - 32);
    memcpy(d, f.ram + 0x8000 - 32, 32);
    ck_assert_uint_eq(d[7], 0x11111111);                     /* eax first */
    ck_assert_uint_eq(d[3], 0x8000);                         /* original esp */
    ck_assert_uint_eq(d[0], 0x88888888);                     /* edi last */
    for (unsigned i = 0; i < 8; i++)
        if (i != LC_RSP)
            s.gpr[i] = 0;
    ck_assert_int_eq(step1(&f, &s, &v, "61"), LCR_DONE);     /* popad */
    ck_assert_uint_eq(s.gpr[LC_RSP], 0x8000);
    for (unsigned i = 0; i < 8; i++)
        if (i != LC_RSP)
            ck_assert_uint_eq(s.gpr[i], 0x11111111u * (i + 1));
    ck_assert_int_eq(step1(&f, &s, &v, "66 60"), LCR_DONE);  /* pusha */
    ck_assert_uint_eq(s.gpr[LC_RSP], 0x8000 - 16);
    memcpy(w, f.ram + 0x8000 - 16, 16);
    ck_assert_uint_eq(w[7], 0x1111);
    ck_assert_uint_eq(w[3], 0x8000);
    s.gpr[LC_RAX] = 0xabcd0000;
    ck_assert_int_eq(step1(&f, &s, &v, "66 61"), LCR_DONE);  /* popa */
    ck_assert_uint_eq(s.gpr[LC_RAX], 0xabcd1111);            /* 16 bits */
    /* a stack slot in MMIO: left to the CPU, nothing done */
    s.gpr[LC_RSP] = FVM_MMIO + 0x10;
    s.seg[LC_SS].limit = 0xffffffff;
    STOPS("60", LC_STOP_TERMINATOR, 0);
    STOPS("61", LC_STOP_TERMINATOR, 0);
    ck_assert_uint_eq(f.nlog, 0);
    /* leave: esp = ebp, pop ebp; 16-bit operand size pops bp only */
    s.gpr[LC_RBP] = 0x8100;
    d[0] = 0xcafef00d;
    memcpy(f.ram + 0x8100, d, 4);
    ck_assert_int_eq(step1(&f, &s, &v, "c9"), LCR_DONE);
    ck_assert_uint_eq(s.gpr[LC_RSP], 0x8104);
    ck_assert_uint_eq(s.gpr[LC_RBP], 0xcafef00d);
    s.gpr[LC_RBP] = 0x8100;                             /* beyond SS: #SS */
    s.seg[LC_SS].limit = 0x8000;
    STOPS("c9", LC_STOP_FAULT, LC_VEC_SS);
    fvm_fini(&f);
}
END_TEST

/* CR4.CET: a near CALL or RET (the shadow stack) and an indirect JMP or
 * CALL (indirect branch tracking) stop before as terminators, nothing
 * done; a direct JMP, PUSH and POP still run. Without CET the same CALL
 * runs. */
START_TEST(cet_guards_transfers)
{
    fvm f; lc_cpu_state s; lcr_vcpu v;

    fvm_init(&f);
    fvm_state_prot32(&s, 0);
    s.gpr[LC_RSP] = 0x8000;
    s.gpr[LC_RAX] = 0x1000;
    s.cr4 |= LC_CR4_CET;
    STOPS("e8 10 00 00 00", LC_STOP_TERMINATOR, 0);         /* call rel32 */
    STOPS("ff d0", LC_STOP_TERMINATOR, 0);                  /* call eax */
    STOPS("c3", LC_STOP_TERMINATOR, 0);                     /* ret */
    STOPS("c2 08 00", LC_STOP_TERMINATOR, 0);               /* ret 8 */
    STOPS("ff e0", LC_STOP_TERMINATOR, 0);                  /* jmp eax */
    ck_assert_uint_eq(f.nlog, 0);
    ck_assert_int_eq(step1(&f, &s, &v, "eb 10"), LCR_DONE);  /* jmp rel8 */
    ck_assert_int_eq(step1(&f, &s, &v, "50"), LCR_DONE);     /* push eax */
    ck_assert_int_eq(step1(&f, &s, &v, "5b"), LCR_DONE);     /* pop ebx */
    ck_assert_uint_eq(s.gpr[LC_RBX], 0x1000);
    s.cr4 &= ~LC_CR4_CET;
    ck_assert_int_eq(step1(&f, &s, &v, "e8 10 00 00 00"), LCR_DONE);
    ck_assert_uint_eq(s.gpr[LC_RSP], 0x7ffc);
    fvm_fini(&f);
}
END_TEST

/* Alignment checking (#AC): at CPL 3 with CR0.AM and RFLAGS.AC, a data
 * access not aligned to its size stops before the instruction with
 * vector 17, nothing done; aligned ones, byte ones, and misaligned ones
 * without either bit or at CPL 0 run. */
START_TEST(alignment_check)
{
    fvm f; lc_cpu_state s; lcr_vcpu v;

    fvm_init(&f);
    fvm_state_prot32(&s, 3);
    s.cr0 |= LC_CR0_AM;
    s.rflags |= LC_RFLAGS_AC;
    s.gpr[LC_RSP] = 0x8002;
    s.gpr[LC_RBX] = 0x9001;
    STOPS("50", LC_STOP_FAULT, LC_VEC_AC);                  /* push eax */
    STOPS("58", LC_STOP_FAULT, LC_VEC_AC);                  /* pop eax */
    STOPS("c3", LC_STOP_FAULT, LC_VEC_AC);                  /* ret */
    STOPS("8b 03", LC_STOP_FAULT, LC_VEC_AC);               /* mov eax,[ebx] */
    STOPS("66 89 03", LC_STOP_FAULT, LC_VEC_AC);            /* mov [ebx],ax */
    ck_assert_uint_eq(f.nlog, 0);
    ck_assert_int_eq(step1(&f, &s, &v, "8a 03"), LCR_DONE);  /* mov al,[ebx] */
    s.gpr[LC_RBX] = 0x9002;
    ck_assert_int_eq(step1(&f, &s, &v, "66 89 03"), LCR_DONE);
    STOPS("89 03", LC_STOP_FAULT, LC_VEC_AC);               /* 4 at 2 mod 4 */
    s.gpr[LC_RSP] = 0x8004;
    ck_assert_int_eq(step1(&f, &s, &v, "50"), LCR_DONE);     /* aligned */
    s.gpr[LC_RSP] = 0x8002;
    s.rflags &= ~LC_RFLAGS_AC;
    ck_assert_int_eq(step1(&f, &s, &v, "50"), LCR_DONE);     /* AC clear */
    s.rflags |= LC_RFLAGS_AC;
    s.cr0 &= ~LC_CR0_AM;
    ck_assert_int_eq(step1(&f, &s, &v, "89 03"), LCR_DONE);  /* AM clear */
    fvm_state_prot32(&s, 0);
    s.cr0 |= LC_CR0_AM;
    s.rflags |= LC_RFLAGS_AC;
    s.gpr[LC_RBX] = 0x9001;
    ck_assert_int_eq(step1(&f, &s, &v, "8b 03"), LCR_DONE);  /* CPL 0 */
    fvm_fini(&f);
}
END_TEST

/* POP to memory addressed through ESP on a 16-bit stack (SS.B clear) in
 * 32-bit code: the slot is at SS:SP, and the address is computed after
 * the increment, which moves SP alone (SDM POP): at ESP 0x1fffc the
 * value comes from 0xfffc and goes to 0x10000, not 0x20000. */
START_TEST(pop_mem_esp_16bit_stack)
{
    fvm f; lc_cpu_state s; lcr_vcpu v;
    uint32_t w = 0x12345678, got;

    fvm_init(&f);
    fvm_state_prot32(&s, 0);
    s.seg[LC_SS].db = 0;
    s.gpr[LC_RSP] = 0x1fffc;
    memcpy(f.ram + 0xfffc, &w, 4);             /* the slot: SS:SP */
    ck_assert_int_eq(step1(&f, &s, &v, "8f 04 24"), LCR_DONE); /* pop [esp] */
    ck_assert_uint_eq(s.gpr[LC_RSP], 0x10000);
    memcpy(&got, f.ram + 0x10000, 4);
    ck_assert_uint_eq(got, 0x12345678);
    memcpy(&got, f.ram + 0x20000, 4);
    ck_assert_uint_eq(got, 0);
    fvm_fini(&f);
}
END_TEST

/* Real mode keeps the attributes protected mode left in the segment
 * registers' hidden parts (SDM vol. 3, "Switching Back to Real-Address
 * Mode"): a 32-bit SS pushes at ESP; an expand-down SS checks its limit
 * as such; a 32-bit CS (before the far jump that reloads it) is not
 * fetched from, so nothing runs. */
START_TEST(real_mode_cached_attributes)
{
    fvm f; lc_cpu_state s; lcr_vcpu v;
    uint16_t w;

    fvm_init(&f);
    fvm_state_real(&s);
    s.seg[LC_SS].db = 1;
    s.seg[LC_SS].limit = 0xffffffff;
    s.gpr[LC_RSP] = 0x12346;
    s.gpr[LC_RAX] = 0xbeef;
    ck_assert_int_eq(step1(&f, &s, &v, "50"), LCR_DONE);     /* push ax */
    ck_assert_uint_eq(s.gpr[LC_RSP], 0x12344);
    memcpy(&w, f.ram + 0x12344, 2);
    ck_assert_uint_eq(w, 0xbeef);
    ck_assert_int_eq(step1(&f, &s, &v, "5b"), LCR_DONE);     /* pop bx */
    ck_assert_uint_eq(s.gpr[LC_RSP], 0x12346);
    ck_assert_uint_eq(s.gpr[LC_RBX], 0xbeef);
    /* expand-down, 16-bit: offsets 0x8000-0xffff are the valid ones */
    s.seg[LC_SS].db = 0;
    s.seg[LC_SS].limit = 0x7fff;
    s.seg[LC_SS].type = 0x7;
    s.gpr[LC_RSP] = 0x8000;
    STOPS("50", LC_STOP_FAULT, LC_VEC_SS);
    s.gpr[LC_RSP] = 0x9000;
    ck_assert_int_eq(step1(&f, &s, &v, "50"), LCR_DONE);
    ck_assert_uint_eq(s.gpr[LC_RSP], 0x8ffe);
    /* a 32-bit CS: nothing fetched, nothing run */
    s.seg[LC_CS].db = 1;
    {
        lc_cpu_state b = s;

        ck_assert_int_eq(step1(&f, &s, &v, "50"), LCR_STOP);
        b.rip = s.rip;
        ck_assert(!memcmp(&b, &s, sizeof s));
    }
    fvm_fini(&f);
}
END_TEST

/* RF is clear once an instruction completes (SDM vol. 3 18.3.1.1) and
 * stays as it was when the step stops before one. */
START_TEST(rf_cleared_on_completion)
{
    fvm f; lc_cpu_state s; lcr_vcpu v;

    fvm_init(&f);
    fvm_state_prot32(&s, 0);
    s.rflags |= LC_RFLAGS_RF;
    s.seg[LC_DS].limit = 0xfff;
    s.gpr[LC_RBX] = 0x2000;
    STOPS("8b 03", LC_STOP_FAULT, LC_VEC_GP);               /* beyond DS */
    ck_assert(s.rflags & LC_RFLAGS_RF);
    ck_assert_int_eq(step1(&f, &s, &v, "01 c8"), LCR_DONE);  /* add eax,ecx */
    ck_assert(!(s.rflags & LC_RFLAGS_RF));
    ck_assert(v.dirty & LC_DIRTY_RFLAGS);
    fvm_fini(&f);
}
END_TEST

/* XCHG with memory is locked: on RAM the runtime exchanges atomically,
 * which it can only at a naturally aligned address; a misaligned one
 * (a split lock, within a page or across two) is left to the CPU. */
START_TEST(xchg_split_lock_left_to_cpu)
{
    fvm f; lc_cpu_state s; lcr_vcpu v;
    uint32_t w = 0x11223344, got;

    fvm_init(&f);
    fvm_state_prot32(&s, 0);
    s.gpr[LC_RAX] = 0xaabbccdd;
    s.gpr[LC_RBX] = 0x9002;
    STOPS("87 03", LC_STOP_TERMINATOR, 0);                  /* xchg [ebx],eax */
    s.gpr[LC_RBX] = 0x9ffe;
    STOPS("87 03", LC_STOP_TERMINATOR, 0);                  /* across pages */
    s.gpr[LC_RBX] = 0x9004;
    memcpy(f.ram + 0x9004, &w, 4);
    ck_assert_int_eq(step1(&f, &s, &v, "87 03"), LCR_DONE);
    memcpy(&got, f.ram + 0x9004, 4);
    ck_assert_uint_eq(got, 0xaabbccdd);
    ck_assert_uint_eq(s.gpr[LC_RAX], 0x11223344);
    s.gpr[LC_RBX] = 0x9007;
    ck_assert_int_eq(step1(&f, &s, &v, "86 03"), LCR_DONE);  /* a byte */
    fvm_fini(&f);
}
END_TEST

/* REP INS/OUTS with a 32-bit address size in 64-bit mode and ECX 0: the
 * vendors differ on rCX's and the index's upper halves; left to the CPU.
 * With ECX not 0 it runs. */
START_TEST(rep_string_io_addr32_count0)
{
    fvm f; lc_cpu_state s; lcr_vcpu v;

    fvm_init(&f);
    fvm_state_long64(&f, &s);
    s.gpr[LC_RDX] = 0x80;
    s.gpr[LC_RDI] = 0x0000000100200000ull;
    s.gpr[LC_RCX] = 0xffffffff00000000ull;
    STOPS("67 f3 6c", LC_STOP_TERMINATOR, 0);              /* rep insb */
    STOPS("67 f3 6e", LC_STOP_TERMINATOR, 0);              /* rep outsb */
    s.gpr[LC_RDI] = 0x200000;
    s.gpr[LC_RCX] = 1;
    ck_assert_int_eq(step1(&f, &s, &v, "67 f3 6c"), LCR_DONE);
    ck_assert_uint_eq(s.gpr[LC_RCX], 0);
    ck_assert_uint_eq(s.gpr[LC_RDI], 0x200001);
    fvm_fini(&f);
}
END_TEST

static lc_cb_result tsc_cb(void *o, uint64_t *tsc)
{
    fvm *f = o;
    fvm_log(f, 'T', 0, 8, 0x1122334455667788ull);
    *tsc = 0x1122334455667788ull;
    return LC_CB_OK;
}

/* RDTSC through the VMM's callback; CR4.TSD at CPL 3 is #GP before the
 * callback; a table without the callback (an older VMM's smaller size)
 * leaves RDTSC a terminator. */
START_TEST(rdtsc_callback)
{
    fvm f; lc_cpu_state s; lcr_vcpu v;
    lc_vm_ops ops = fvm_ops;

    ops.rdtsc = tsc_cb;
    fvm_init(&f);
    fvm_state_long64(&f, &s);
    s.gpr[LC_RAX] = s.gpr[LC_RDX] = ~0ull;
    ck_assert_int_eq(step_ops(&f, &s, &v, "0f 31", &ops), LCR_DONE);
    ck_assert_uint_eq(s.gpr[LC_RAX], 0x55667788);
    ck_assert_uint_eq(s.gpr[LC_RDX], 0x11223344);
    ck_assert_uint_eq(v.exits_done, 0);                 /* not an exit */
    fvm_state_prot32(&s, 3);
    s.cr4 |= LC_CR4_TSD;
    f.nlog = 0;
    ck_assert_int_eq(step_ops(&f, &s, &v, "0f 31", &ops), LCR_STOP);
    ck_assert_int_eq(v.stop, LC_STOP_FAULT);
    ck_assert_uint_eq(v.fault_vector, LC_VEC_GP);
    ck_assert_uint_eq(f.nlog, 0);
    fvm_state_prot32(&s, 0);                            /* TSD at CPL 0 */
    ck_assert_int_eq(step_ops(&f, &s, &v, "0f 31", &ops), LCR_DONE);
    ck_assert_int_eq(step1(&f, &s, &v, "0f 31"), LCR_STOP);
    ck_assert_int_eq(v.stop, LC_STOP_TERMINATOR);
    fvm_fini(&f);
}
END_TEST

/* A GDT at 0x8000 for the segment-load tests. */
static void put_desc(fvm *f, unsigned idx, uint32_t base, uint32_t limit,
                     unsigned type, unsigned s, unsigned dpl, unsigned p,
                     unsigned db, unsigned g)
{
    uint32_t lo = (limit & 0xffff) | (base & 0xffff) << 16;
    uint32_t hi = ((base >> 16) & 0xff) | type << 8 | s << 12 | dpl << 13 |
                  p << 15 | (limit & 0xf0000) | db << 22 | g << 23 |
                  (base & 0xff000000u);
    memcpy(f->ram + 0x8000 + idx * 8, &lo, 4);
    memcpy(f->ram + 0x8000 + idx * 8 + 4, &hi, 4);
}

static void gdt_setup(fvm *f, lc_cpu_state *s)
{
    memset(f->ram + 0x8000, 0, 0x100);
    put_desc(f, 1, 0, 0xfffff, 0xb, 1, 0, 1, 1, 1);     /* 0x08 code */
    put_desc(f, 2, 0, 0xfffff, 0x3, 1, 0, 1, 1, 1);     /* 0x10 data */
    put_desc(f, 3, 0x5000, 0xff, 0x2, 1, 3, 1, 0, 0);   /* 0x18 not accessed */
    put_desc(f, 4, 0, 0xfffff, 0x3, 1, 0, 0, 1, 1);     /* 0x20 not present */
    put_desc(f, 5, 0, 0xfffff, 0x3, 1, 0, 1, 1, 1);     /* 0x28 DPL 0 */
    put_desc(f, 6, 0, 0xfffff, 0x9, 1, 0, 1, 1, 1);     /* 0x30 exec-only */
    put_desc(f, 7, 0x9000, 0xff, 0x2, 0, 0, 1, 0, 0);   /* 0x38 system: LDT */
    put_desc(f, 8, 0, 0xfffff, 0x1, 1, 0, 1, 1, 1);     /* 0x40 read-only */
    put_desc(f, 9, 0x6000, 0xfff, 0x3, 1, 3, 1, 1, 0);  /* 0x48 DPL 3 */
    put_desc(f, 10, 0, 0xfffff, 0x2, 1, 0, 1, 1, 1);    /* 0x50 not accessed */
    s->gdtr.base = 0x8000;
    s->gdtr.limit = 11 * 8 - 1;
}

/* Compatibility mode (EFER.LMA, CS.L clear): the GDT's base is 64-bit,
 * as Linux's fixmap GDT above 4 GiB; the descriptor is read there, not
 * at the base cut to 32 bits (which here maps other memory, zeros: a
 * null descriptor and #GP). A null FS is left to the CPU in IA-32e mode
 * (Intel and AMD differ on its base). */
START_TEST(segment_load_compat_gdt_above_4g)
{
    fvm f; lc_cpu_state s; lcr_vcpu v;
    uint64_t *pml4, *pdpt2, *pd2;

    fvm_init(&f);
    fvm_state_long64(&f, &s);
    pml4 = (uint64_t *)(void *)(f.ram + 0x1000);
    pdpt2 = (uint64_t *)(void *)(f.ram + 0xa000);
    pd2 = (uint64_t *)(void *)(f.ram + 0xb000);
    memset(pdpt2, 0, 0x2000);
    pml4[1] = 0xa000 | 0x7;                 /* 512 GiB: */
    pdpt2[0] = 0xb000 | 0x7;
    pd2[0] = 0x200000 | 0x87;               /* its first 2 MiB at 2 MiB */
    gdt_setup(&f, &s);                      /* the table at 0x8000... */
    memcpy(f.ram + 0x208000, f.ram + 0x8000, 0x100);  /* ...and at 2 MiB */
    memset(f.ram + 0x8000, 0, 0x100);       /* what the cut base reaches */
    s.gdtr.base = 0x8000008000ull;          /* linear 512 GiB + 0x8000 */
    s.seg[LC_CS].l = 0;
    s.seg[LC_CS].db = 1;                    /* compatibility mode */
    s.gpr[LC_RAX] = 0x10;
    ck_assert_int_eq(step1(&f, &s, &v, "8e d8"), LCR_DONE);  /* mov ds, ax */
    ck_assert_uint_eq(s.seg[LC_DS].selector, 0x10);
    ck_assert_uint_eq(s.seg[LC_DS].limit, 0xffffffff);
    s.gpr[LC_RAX] = 0;
    STOPS("8e e0", LC_STOP_TERMINATOR, 0);                  /* mov fs, null */
    fvm_fini(&f);
}
END_TEST

/* MOV Sreg in real mode (base = selector << 4, limit kept) and with the
 * protected-mode checks in the CPU's order: every failing check stops
 * before the instruction with the CPU's vector and nothing written (the
 * accessed bit included); a good load fills the hidden part and sets the
 * descriptor's accessed bit. */
START_TEST(segment_loads)
{
    fvm f; lc_cpu_state s; lcr_vcpu v;

    fvm_init(&f);
    fvm_state_real(&s);
    s.seg[LC_DS].limit = 0xfffff;                       /* big real mode */
    s.gpr[LC_RAX] = 0x1234;
    ck_assert_int_eq(step1(&f, &s, &v, "8e d8"), LCR_DONE);  /* mov ds, ax */
    ck_assert_uint_eq(s.seg[LC_DS].selector, 0x1234);
    ck_assert_uint_eq(s.seg[LC_DS].base, 0x12340);
    ck_assert_uint_eq(s.seg[LC_DS].limit, 0xfffff);
    ck_assert(v.dirty & LC_DIRTY_SREGS);
    ck_assert_int_eq(step1(&f, &s, &v, "8c da"), LCR_DONE);  /* mov dx, ds */
    ck_assert_uint_eq(s.gpr[LC_RDX], 0x1234);

    fvm_state_prot32(&s, 0);
    gdt_setup(&f, &s);
    s.gpr[LC_RAX] = 0x1b;                               /* RPL 3, DPL 3 */
    ck_assert_int_eq(step1(&f, &s, &v, "8e d8"), LCR_DONE);
    ck_assert_uint_eq(s.seg[LC_DS].base, 0x5000);
    ck_assert_uint_eq(s.seg[LC_DS].limit, 0xff);
    ck_assert_uint_eq(s.seg[LC_DS].type, 0x3);          /* accessed now */
    ck_assert_uint_eq(s.seg[LC_DS].dpl, 3);
    ck_assert_uint_eq(s.seg[LC_DS].db, 0);
    ck_assert_uint_eq(f.ram[0x8000 + 3 * 8 + 5] & 0x1, 1);
    f.ram[0x8000 + 3 * 8 + 5] &= 0xfe;
    s.gpr[LC_RAX] = 0x08;                               /* readable code */
    ck_assert_int_eq(step1(&f, &s, &v, "8e c0"), LCR_DONE);  /* mov es */
    ck_assert_uint_eq(s.seg[LC_ES].type, 0xb);
    s.gpr[LC_RAX] = 0x3;                                /* null: unusable */
    ck_assert_int_eq(step1(&f, &s, &v, "8e e0"), LCR_DONE);  /* mov fs */
    ck_assert(s.seg[LC_FS].unusable);
    ck_assert_uint_eq(s.seg[LC_FS].selector, 3);
    STOPS("64 8b 00", LC_STOP_FAULT, LC_VEC_GP);        /* then use it */
    s.gpr[LC_RAX] = 0x20;
    STOPS("8e d8", LC_STOP_FAULT, LC_VEC_NP);           /* not present */
    s.gpr[LC_RAX] = 0x2b;
    STOPS("8e d8", LC_STOP_FAULT, LC_VEC_GP);           /* RPL 3 > DPL 0 */
    s.gpr[LC_RAX] = 0x30;
    STOPS("8e d8", LC_STOP_FAULT, LC_VEC_GP);           /* execute-only */
    s.gpr[LC_RAX] = 0x38;
    STOPS("8e d8", LC_STOP_FAULT, LC_VEC_GP);           /* system */
    s.gpr[LC_RAX] = 0x58;
    STOPS("8e d8", LC_STOP_FAULT, LC_VEC_GP);           /* beyond the GDT */
    /* SS from a descriptor whose accessed bit is clear: the CPU's (a
     * load taken back with its shadow must leave memory alone) */
    s.gpr[LC_RAX] = 0x50;
    STOPS("8e d0 90", LC_STOP_TERMINATOR, 0);
    ck_assert_uint_eq(f.ram[0x8000 + 10 * 8 + 5] & 0x1, 0);
    s.gpr[LC_RAX] = 0x1c;
    STOPS("8e d8", LC_STOP_FAULT, LC_VEC_GP);           /* LDT unusable */
    s.gpr[LC_RAX] = 0x18;                               /* DPL 3, for SS */
    STOPS("8e d0", LC_STOP_FAULT, LC_VEC_GP);           /* DPL != CPL */
    s.gpr[LC_RAX] = 0x40;
    STOPS("8e d0", LC_STOP_FAULT, LC_VEC_GP);           /* read-only SS */
    s.gpr[LC_RAX] = 0x20;
    STOPS("8e d0", LC_STOP_FAULT, LC_VEC_SS);           /* not present */
    s.gpr[LC_RAX] = 0;
    STOPS("8e d0", LC_STOP_FAULT, LC_VEC_GP);           /* null SS */
    ck_assert_uint_eq(f.ram[0x8000 + 3 * 8 + 5] & 0x1, 0);
    /* mov ss, ax opens the shadow: the next instruction runs with it */
    s.gpr[LC_RAX] = 0x28;
    s.gpr[LC_RCX] = 0;
    ck_assert_int_eq(step1(&f, &s, &v, "8e d0 41"), LCR_DONE);
    ck_assert_uint_eq(v.insns, 2);
    ck_assert_uint_eq(s.seg[LC_SS].selector, 0x28);
    ck_assert_uint_eq(s.gpr[LC_RCX], 1);
    ck_assert_uint_eq(s.rip, 0x7003);
    s.gpr[LC_RAX] = 0x10;
    STOPS("8e d0 0f 0b", LC_STOP_TERMINATOR, 0);        /* taken back */
    /* a selector from memory (RAM only) */
    s.seg[LC_DS] = s.seg[LC_ES];                        /* flat again */
    memcpy(f.ram + 0x9000, "\x48\x00", 2);
    s.gpr[LC_RBX] = 0x9000;
    ck_assert_int_eq(step1(&f, &s, &v, "8e 2b"), LCR_DONE);  /* mov gs, [ebx] */
    ck_assert_uint_eq(s.seg[LC_GS].base, 0x6000);
    s.gpr[LC_RBX] = FVM_MMIO;
    STOPS("8e 2b", LC_STOP_TERMINATOR, 0);
    ck_assert_uint_eq(f.nlog, 0);

    /* 64-bit mode: FS gets the descriptor's base; a null FS or SS is the
     * CPU's (vendor-dependent hidden state) */
    fvm_state_long64(&f, &s);
    gdt_setup(&f, &s);
    s.gpr[LC_RAX] = 0x48;
    ck_assert_int_eq(step1(&f, &s, &v, "8e e0"), LCR_DONE);
    ck_assert_uint_eq(s.seg[LC_FS].base, 0x6000);
    s.gpr[LC_RAX] = 0;
    STOPS("8e e0", LC_STOP_TERMINATOR, 0);
    STOPS("8e d0", LC_STOP_TERMINATOR, 0);
    ck_assert_int_eq(step1(&f, &s, &v, "8e d8"), LCR_DONE);  /* null DS */
    ck_assert(s.seg[LC_DS].unusable);
    ck_assert_int_eq(step1(&f, &s, &v, "8b 03"), LCR_DONE);  /* still usable */
    fvm_fini(&f);
}
END_TEST

/* The inline forms' segment summary (lcr_linear_fast()) lives no longer
 * than the segment registers it describes: a MOV to DS that loads a
 * read-only segment, run by lcr_exec() between two inline stores of one
 * run, makes the second decline (lcr_exec() then faults) rather than
 * write with the rights DS had before. */
START_TEST(inline_segment_summary_forgotten)
{
    fvm f; lc_cpu_state s; lcr_vcpu v; lcd_insn st, ld; lcr_xlat x;
    static const uint8_t store[] = { 0x89, 0x03 };      /* mov [ebx],eax */
    static const uint8_t load_ds[] = { 0x8e, 0xd8 };    /* mov ds,ax */
    unsigned kind;

    fvm_init(&f);
    fvm_state_prot32(&s, 0);
    gdt_setup(&f, &s);
    s.rip = 0x7000;
    s.gpr[LC_RBX] = 0x200000;
    s.gpr[LC_RAX] = 0x40;                               /* read-only data */
    memset(&v, 0, sizeof v);
    v.insn_budget = 10;
    v.rep_budget = 1;
    lcr_begin(&v, &s, &fvm_ops, &f);
    ck_assert_int_eq(lcd_decode(v.mode, store, sizeof store, &st), LC_OK);
    ck_assert_int_eq(lcd_decode(v.mode, load_ds, sizeof load_ds, &ld), LC_OK);
    kind = lcr_inline_kind(&st);
    lcr_translate(&v, 0x200000, 4, LCR_ACC_WRITE, &x);
    v.stop = LC_STOP_NONE;
    ck_assert_int_eq(lcr_inline_ram_fn(kind, v.mode)(&v, &st), 1);
    ck_assert_uint_eq(f.ram[0x200000], 0x40);
    ck_assert_int_eq(lcr_exec(&v, &ld), LCR_DONE);
    ck_assert_uint_eq(s.seg[LC_DS].type & 0x2, 0);
    s.gpr[LC_RAX] = 0x41;
    ck_assert_int_eq(lcr_inline_ram_fn(kind, v.mode)(&v, &st), 0);
    ck_assert_int_eq(lcr_exec(&v, &st), LCR_STOP);
    ck_assert_int_eq(v.stop, LC_STOP_FAULT);
    ck_assert_uint_eq(v.fault_vector, LC_VEC_GP);
    ck_assert_uint_eq(f.ram[0x200000], 0x40);
    fvm_fini(&f);
}
END_TEST

/* PUSH/POP Sreg: a 32-bit push runs only where both of the CPU's
 * behaviours agree (the slot's upper half already zero); POP SS opens the
 * shadow. */
START_TEST(push_pop_sreg)
{
    fvm f; lc_cpu_state s; lcr_vcpu v;
    uint32_t d;

    fvm_init(&f);
    fvm_state_prot32(&s, 0);
    gdt_setup(&f, &s);
    s.gpr[LC_RSP] = 0x8800;
    memset(f.ram + 0x87fc, 0, 4);
    ck_assert_int_eq(step1(&f, &s, &v, "1e"), LCR_DONE);     /* push ds */
    memcpy(&d, f.ram + 0x87fc, 4);
    ck_assert_uint_eq(d, 0x10);
    ck_assert_uint_eq(s.gpr[LC_RSP], 0x87fc);
    memset(f.ram + 0x87f8, 0xff, 4);
    STOPS("06", LC_STOP_TERMINATOR, 0);                       /* push es */
    ck_assert_int_eq(step1(&f, &s, &v, "66 06"), LCR_DONE);  /* 16-bit */
    ck_assert_uint_eq(s.gpr[LC_RSP], 0x87fa);
    ck_assert_uint_eq(f.ram[0x87fa], 0x10);
    ck_assert_uint_eq(f.ram[0x87f9], 0xff);                  /* untouched */
    ck_assert_int_eq(step1(&f, &s, &v, "66 07"), LCR_DONE);  /* pop es */
    ck_assert_uint_eq(s.gpr[LC_RSP], 0x87fc);
    d = 0x48;
    memcpy(f.ram + 0x87fc, &d, 4);
    ck_assert_int_eq(step1(&f, &s, &v, "0f a9"), LCR_DONE);  /* pop gs */
    ck_assert_uint_eq(s.seg[LC_GS].base, 0x6000);
    ck_assert_uint_eq(s.gpr[LC_RSP], 0x8800);
    s.gpr[LC_RSP] = 0x87fc;
    d = 0x20;                                                 /* not present */
    memcpy(f.ram + 0x87fc, &d, 4);
    STOPS("1f", LC_STOP_FAULT, LC_VEC_NP);
    d = 0x28;
    memcpy(f.ram + 0x87fc, &d, 4);
    ck_assert_int_eq(step1(&f, &s, &v, "17 90"), LCR_DONE);  /* pop ss; nop */
    ck_assert_uint_eq(v.insns, 2);
    ck_assert_uint_eq(s.seg[LC_SS].selector, 0x28);
    ck_assert_uint_eq(s.gpr[LC_RSP], 0x8800);
    s.gpr[LC_RSP] = 0x87fc;
    STOPS("17 17", LC_STOP_TERMINATOR, 0);                    /* pop ss twice */
    fvm_fini(&f);
}
END_TEST

/* An SS load whose shadow's instruction is a terminator stops before the
 * load reads anything, before its descriptor walk or its source's sets
 * an accessed bit in the page tables (the run would take the load back:
 * runtime/exec.c, ss_load_check()); lc-diff --mode pae --seed 11 --case
 * 186 before the fix, `mov ss, dx; mov cr4, ebx`, the GDT page's entry
 * left accessed. With a gap filler after it, the load runs and sets it.
 * And a load from memory, whose source's page is not accessed yet. */
START_TEST(ss_load_before_terminator_sets_no_accessed_bit)
{
    fvm f; lc_cpu_state s; lcr_vcpu v; lcd_insn in;
    uint64_t pde, pde0;
    const uint64_t pd = 0x3000 + (0x200000 >> 21) * 8;  /* maps 2..4 MiB */

    fvm_init(&f);
    fvm_state_long64(&f, &s);
    gdt_setup(&f, &s);
    memcpy(f.ram + 0x200000, f.ram + 0x8000, 0x100);    /* the GDT there */
    s.gdtr.base = 0x200000;
    s.rip = 0x7000;
    s.gpr[LC_RAX] = 0x10;
    memcpy(&pde0, f.ram + pd, 8);
    ck_assert_uint_eq(pde0 & 0x60, 0);
    memcpy(f.ram + 0x7000, "\x8e\xd0\x0f\x22\xc0", 5); /* mov ss; mov cr0 */
    step_stops(&f, &s, LC_STOP_TERMINATOR, __LINE__);
    memcpy(&pde, f.ram + pd, 8);
    ck_assert_uint_eq(pde, pde0);
    memcpy(f.ram + 0x7000, "\x8e\xd0\x90", 3);        /* mov ss; nop */
    begin(&v, &f, &s);
    ck_assert_int_eq(lcr_step(&v, &in), LCR_DONE);
    ck_assert_uint_eq(v.insns, 2);
    ck_assert_uint_eq(s.rip, 0x7003);
    memcpy(&pde, f.ram + pd, 8);
    ck_assert_uint_eq(pde & 0x20, 0x20);
    /* mov ss, [rbx]; mov cr0: the GDT back low, the source in 2..4 MiB,
     * read before the descriptor */
    memcpy(f.ram + pd, &pde0, 8);
    s.gdtr.base = 0x8000;
    s.rip = 0x7000;
    s.gpr[LC_RBX] = 0x200800;
    memcpy(f.ram + 0x200800, "\x10\0", 2);
    memcpy(f.ram + 0x7000, "\x8e\x13\x0f\x22\xc0", 5);
    step_stops(&f, &s, LC_STOP_TERMINATOR, __LINE__);
    memcpy(&pde, f.ram + pd, 8);
    ck_assert_uint_eq(pde, pde0);
    memcpy(f.ram + 0x7000, "\x8e\x13\x90", 3);   /* mov ss, [rbx]; nop */
    begin(&v, &f, &s);
    ck_assert_int_eq(lcr_step(&v, &in), LCR_DONE);
    ck_assert_uint_eq(s.rip, 0x7003);
    memcpy(&pde, f.ram + pd, 8);
    ck_assert_uint_eq(pde & 0x20, 0x20);
    fvm_fini(&f);
}
END_TEST

/* A 32-bit PUSH of a selector runs only where the slot's upper half is 0
 * (the CPU keeps it or zeroes it); where it is not, the run stops before
 * the PUSH with the stack page's paging entry as it was: the look at the
 * slot sets no accessed bit (runtime/exec.c, ex_push_sreg(); found on
 * SeaBIOS's code by lc-diff --engine --code, `--mode pae --seed 1
 * --case 127`). PAE paging, the stack in the second 2 MiB page. */
START_TEST(push_sreg_refused_sets_no_accessed_bit)
{
    fvm f; lc_cpu_state s; lcr_vcpu v; lcd_insn in;
    uint64_t pde, pde0, e = 0x3000 | 1;
    const uint64_t pd1 = 0x3000 + 8;    /* maps 2..4 MiB */

    fvm_init(&f);
    fvm_state_long64(&f, &s);           /* its page directory at 0x3000 */
    fvm_state_prot32(&s, 0);
    memcpy(f.ram + 0x5000, &e, 8);      /* PDPTE 0 */
    s.cr0 |= LC_CR0_PG;
    s.cr3 = 0x5000;
    s.cr4 = LC_CR4_PAE;
    s.rip = 0x7000;
    s.gpr[LC_RSP] = 0x200104;
    f.ram[0x7000] = 0x06;                               /* push es */
    memcpy(f.ram + 0x200100, "\x00\x00\x34\x12", 4);   /* upper half set */
    memcpy(&pde0, f.ram + pd1, 8);
    ck_assert_uint_eq(pde0 & 0x60, 0);
    step_stops(&f, &s, LC_STOP_TERMINATOR, __LINE__);
    memcpy(&pde, f.ram + pd1, 8);
    ck_assert_uint_eq(pde, pde0);
    memset(f.ram + 0x200102, 0, 2);                     /* now it runs */
    begin(&v, &f, &s);
    ck_assert_int_eq(lcr_step(&v, &in), LCR_DONE);
    ck_assert_uint_eq(s.gpr[LC_RSP], 0x200100);
    ck_assert_uint_eq(f.ram[0x200100], 0x10);
    memcpy(&pde, f.ram + pd1, 8);
    ck_assert_uint_eq(pde & 0x60, 0x60);
    fvm_fini(&f);
}
END_TEST

/* The run loop's inline forms (lcr_exec_inline: MOV to and from RAM, near
 * CALL and RET, PUSH and POP, IN and OUT; the function lcr_inline_ram_fn()
 * gives for one of them but IN and OUT, called directly without the
 * budget and TF checks, as the translator's chains call it) must do exactly what the dispatcher does (lcr_exec, which
 * tests/diff proves against Unicorn), or nothing at all. Each case runs from random states on two identical machines: one
 * through the inline form, one through lcr_exec. Both contexts first
 * translate the data and stack pages, as an earlier access of the run
 * would, so the page-walk cache can answer; addresses near page ends,
 * unaligned slots, refused ports, CPL above IOPL and a single-step flag
 * make some attempts decline (0: nothing changed) or stop (-1: as
 * lcr_exec stops). Every case must take the inline form at least once. */
static const struct inline_case {
    lc_cpu_mode mode;
    const char *hex;
} inline_cases[] = {
    { LC_MODE_LONG64, "48 89 03" },             /* mov [rbx], rax */
    { LC_MODE_LONG64, "48 8b 0b" },             /* mov rcx, [rbx] */
    { LC_MODE_LONG64, "89 43 05" },             /* mov [rbx+5], eax */
    { LC_MODE_LONG64, "66 8b 53 fe" },          /* mov dx, [rbx-2] */
    { LC_MODE_LONG64, "44 88 43 01" },          /* mov [rbx+1], r8b */
    { LC_MODE_LONG64, "48 c7 43 08 ff ff ff ff" },
    { LC_MODE_LONG64, "c7 04 24 78 56 34 12" }, /* mov dword [rsp], imm */
    { LC_MODE_LONG64, "e8 10 00 00 00" },       /* call rel32 */
    { LC_MODE_LONG64, "ff d0" },                /* call rax */
    { LC_MODE_LONG64, "c3" },
    { LC_MODE_LONG64, "c2 10 00" },             /* ret 16 */
    { LC_MODE_LONG64, "50" },                   /* push rax */
    { LC_MODE_LONG64, "54" },                   /* push rsp */
    { LC_MODE_LONG64, "41 57" },                /* push r15 */
    { LC_MODE_LONG64, "66 50" },                /* push ax */
    { LC_MODE_LONG64, "6a f0" },                /* push -16 */
    { LC_MODE_LONG64, "68 78 56 34 92" },       /* push imm32 (negative) */
    { LC_MODE_LONG64, "59" },                   /* pop rcx */
    { LC_MODE_LONG64, "5c" },                   /* pop rsp */
    { LC_MODE_LONG64, "66 5a" },                /* pop dx */
    { LC_MODE_LONG64, "ff f0" },                /* push rax (FF /6) */
    { LC_MODE_LONG64, "8f c1" },                /* pop rcx (8F /0) */
    { LC_MODE_LONG64, "66 6a 80" },             /* push word -128 */
    { LC_MODE_LONG64, "e6 80" },                /* out 0x80, al */
    { LC_MODE_LONG64, "ed" },                   /* in eax, dx */
    { LC_MODE_LONG64, "66 ef" },                /* out dx, ax */
    { LC_MODE_PROT32, "89 03" },
    { LC_MODE_PROT32, "8b 4b 03" },
    { LC_MODE_PROT32, "e8 10 00 00 00" },
    { LC_MODE_PROT32, "ff d1" },                /* call ecx */
    { LC_MODE_PROT32, "c3" },
    { LC_MODE_PROT32, "53" },                   /* push ebx */
    { LC_MODE_PROT32, "54" },                   /* push esp */
    { LC_MODE_PROT32, "66 6a 80" },             /* push word -128 */
    { LC_MODE_PROT32, "5c" },                   /* pop esp */
    { LC_MODE_PROT32, "66 58" },                /* pop ax */
    { LC_MODE_PROT32, "e4 71" },                /* in al, 0x71 */
    { LC_MODE_PROT32, "ee" },                   /* out dx, al */
    { LC_MODE_REAL, "89 07" },                  /* mov [bx], ax */
    { LC_MODE_REAL, "8b 4f 02" },               /* mov cx, [bx+2] */
    { LC_MODE_REAL, "e8 10 00" },               /* call rel16 */
    { LC_MODE_REAL, "c3" },
    { LC_MODE_REAL, "c2 02 00" },
    { LC_MODE_REAL, "50" },                     /* push ax */
    { LC_MODE_REAL, "66 51" },                  /* push ecx */
    { LC_MODE_REAL, "6a ff" },                  /* push -1 */
    { LC_MODE_REAL, "5b" },                     /* pop bx */
    { LC_MODE_REAL, "66 6a 80" },               /* push dword -128 */
    { LC_MODE_REAL, "8f c6" },                  /* pop si (8F /0) */
    { LC_MODE_REAL, "66 5c" },                  /* pop esp */
    { LC_MODE_REAL, "ec" },                     /* in al, dx */
    { LC_MODE_REAL, "e6 80" },
};

/* The pages an inline form may touch: page tables, code, stack, data. */
static int inline_pages_equal(const fvm *fa, const fvm *fb,
                              const uint64_t *at, unsigned n, int copy)
{
    for (unsigned i = 0; i < n; i++) {
        if (copy)
            memcpy(fb->ram + at[i], fa->ram + at[i], 0x1000);
        else if (memcmp(fa->ram + at[i], fb->ram + at[i], 0x1000))
            return 0;
    }
    return 1;
}

/* One step of a 64-bit LCG, its high bits. */
static uint64_t inline_rand(uint64_t *seed)
{
    *seed = *seed * 6364136223846793005ull + 1442695040888963407ull;
    return *seed >> 17;
}

START_TEST(inline_forms_match_dispatcher)
{
    const struct inline_case *tc = &inline_cases[_i];
    uint64_t seed = 0x9e3779b97f4a7c15ull * (uint64_t)(_i + 1);
    unsigned taken = 0;
    fvm fa, fb;
    uint8_t code[16];
    size_t n = lc_test_hex(tc->hex, code, sizeof code);
    int real = tc->mode == LC_MODE_REAL;
    uint64_t code_at = real ? 0x1000 : 0x100000;
    uint64_t data = real ? 0x2000 : 0x200000, stack = real ? 0x3000 : 0x180000;
    const uint64_t pages[] = { 0x1000, 0x2000, 0x3000, 0x4000,
                               real ? 0 : code_at, real ? 0 : stack,
                               real ? 0 : data };

    fvm_init(&fa);
    fvm_init(&fb);
    for (int k = 0; k < 200; k++) {
        lc_cpu_state a, b, a0;
        lcr_vcpu va, vb;
        lcd_insn d;
        lcr_xlat x;
        unsigned kind;
        int r, rb;

#define NEXT() inline_rand(&seed)
        if (tc->mode == LC_MODE_LONG64)
            fvm_state_long64(&fa, &a);
        else if (tc->mode == LC_MODE_PROT32)
            fvm_state_prot32(&a, NEXT() % 4 == 0 ? 3 : 0);
        else
            fvm_state_real(&a);
        for (int g = 0; g < 16; g++)
            a.gpr[g] = NEXT() ^ (NEXT() << 40);
        /* data and stack slots anywhere in their page, now and then at its
         * very end (a page-crossing access walks) */
        a.gpr[LC_RBX] = data + (NEXT() % 4 ? NEXT() % 0x1000 : 0xffe);
        a.gpr[LC_RSP] = stack + (NEXT() % 4 ? (NEXT() % 0x200) * 8
                                            : NEXT() % 0x1000);
        if (real) {
            a.gpr[LC_RAX] &= 0xffff;
            a.gpr[LC_RCX] &= 0xffff;
        } else {
            a.gpr[LC_RAX] = code_at + NEXT() % 0x1000;
            a.gpr[LC_RCX] = code_at + NEXT() % 0x1000;
        }
        a.gpr[LC_RDX] = 0x70 + NEXT() % 0x20;
        if (tc->mode != LC_MODE_LONG64) {
            /* DS or SS now and then with a limit at the access, read
             * only, expand-down or not present: the inline forms' own
             * segment check (lcr_linear_fast()) must agree with
             * lcr_linear() */
            unsigned sg = NEXT() % 2 ? LC_DS : LC_SS;
            lc_segment *sr = &a.seg[sg];
            uint64_t at = sg == LC_SS ? a.gpr[LC_RSP] : a.gpr[LC_RBX];

            switch (NEXT() % 8) {
            case 0:
            case 1:
                sr->limit = (uint32_t)((at & (real ? 0xffff : 0xffffffff)) +
                                       NEXT() % 16 - 10);
                break;
            case 2:
                if (!real)
                    sr->type &= (uint8_t)~0x2;   /* read only */
                break;
            case 3:
                if (!real)
                    sr->type |= 0x4;             /* expand-down */
                break;
            case 4:
                if (!real)
                    sr->present = 0;
                break;
            default:
                break;
            }
        }
        a.rflags = 0x2 | (NEXT() & (LCR_FL_STATUS | LC_RFLAGS_IOPL));
        if (NEXT() % 16 == 0)
            a.rflags |= LC_RFLAGS_TF;
        if (NEXT() % 4 == 0) {
            /* alignment checking on (it applies at CPL 3): a misaligned
             * access must stop in both with #AC */
            a.cr0 |= LC_CR0_AM;
            a.rflags |= LC_RFLAGS_AC;
        }
        a.rip = code_at;
        fa.pio_answer = NEXT() % 8 ? LC_CB_OK : LC_CB_STOP;
        fb.pio_answer = fa.pio_answer;
        fa.nlog = fb.nlog = 0;
        /* the same memory on both: code, a random stack and data, the
         * page tables (fvm_state_long64 wrote them into fa) */
        for (uint64_t o = 0; o < 0x1000; o += 8) {
            uint64_t w = NEXT() ^ (NEXT() << 32);
            if (o % 16 == 0 && !real)
                w = code_at + NEXT() % 0x1000;   /* return addresses */
            memcpy(fa.ram + stack + o, &w, 8);
            w = NEXT() ^ (NEXT() << 32);
            memcpy(fa.ram + data + o, &w, 8);
        }
        memcpy(fa.ram + code_at, code, n);
        inline_pages_equal(&fa, &fb, pages, 7, 1);
        b = a;
        a0 = a;

        memset(&va, 0, sizeof va);
        va.insn_budget = 10;
        va.rep_budget = 1;
        vb = va;
        lcr_begin(&va, &a, &fvm_ops, &fa);
        lcr_begin(&vb, &b, &fvm_ops, &fb);
        ck_assert_int_eq(lcd_decode(va.mode, code, n, &d), LC_OK);
        kind = lcr_inline_kind(&d);
        ck_assert_msg(kind != LCR_INL_NONE, "%s: no inline form", tc->hex);
        /* an earlier access of the run: the pages' walks are cached */
        lcr_translate(&va, data, 8, LCR_ACC_WRITE, &x);
        lcr_translate(&vb, data, 8, LCR_ACC_WRITE, &x);
        lcr_translate(&va, stack, 8, LCR_ACC_WRITE, &x);
        lcr_translate(&vb, stack, 8, LCR_ACC_WRITE, &x);
        if (k & 4) {
            /* and served as RAM once: the TLB pages hold the stack's
             * page, so the stack's leaf forms (exec.c) take it */
            (void)lcr_pwc_ram(&va, stack, 8, LCR_ACC_WRITE);
            (void)lcr_pwc_ram(&vb, stack, 8, LCR_ACC_WRITE);
        }
        va.stop = vb.stop = LC_STOP_NONE;
        ck_assert(inline_pages_equal(&fa, &fb, pages, 7, 0));

        /* every other state through the translator chains' entry, which
         * leaves the budget and TF to its caller; every other one of
         * those through the form a translation at this RIP chooses
         * (lcr_inline_ram_fn_at(): a CALL whose target is known
         * canonical, a RET whose operand size is known) */
        if ((k & 1) && kind != LCR_INL_IN && kind != LCR_INL_OUT &&
            !(a.rflags & LC_RFLAGS_TF))
            r = ((k & 2) ? lcr_inline_ram_fn_at(kind, va.mode, &d, a.rip)
                         : lcr_inline_ram_fn(kind, va.mode))(&va, &d);
        else
            r = lcr_exec_inline(&va, &d, kind,
                                lcr_inline_ram_fn(kind, va.mode));
        if (r == 0) {
            ck_assert_msg(!memcmp(&a, &a0, sizeof a) && fa.nlog == 0 &&
                          va.insns == 0 &&
                          inline_pages_equal(&fa, &fb, pages, 7, 0),
                          "%s: declined but changed something (state %d)",
                          tc->hex, k);
            continue;
        }
        rb = lcr_exec(&vb, &d);
        if (r < 0) {
            ck_assert_msg(rb == LCR_STOP && va.stop == vb.stop,
                          "%s: inline stopped (%s), lcr_exec did not (%s)",
                          tc->hex, lc_stop_reason_name(va.stop),
                          lc_stop_reason_name(vb.stop));
        } else {
            taken++;
            ck_assert_msg(rb == LCR_DONE && vb.stop == LC_STOP_NONE,
                          "%s: inline ran, lcr_exec stopped (%s, state %d)",
                          tc->hex, lc_stop_reason_name(vb.stop), k);
        }
        ck_assert_msg(!memcmp(&a, &b, sizeof a),
                      "%s: inline and lcr_exec disagree (state %d)",
                      tc->hex, k);
        ck_assert_msg(inline_pages_equal(&fa, &fb, pages, 7, 0),
                      "%s: memory differs (state %d)", tc->hex, k);
        ck_assert(fvm_log_equal(&fa, &fb));
        ck_assert_uint_eq(va.insns, vb.insns);
        ck_assert_uint_eq(va.exits_done, vb.exits_done);
        ck_assert_uint_eq(va.dirty, vb.dirty);
#undef NEXT
    }
    ck_assert_msg(taken > 0, "%s: the inline form never ran", tc->hex);
    /* and nothing was written anywhere else (a stray store stays) */
    ck_assert(!memcmp(fa.ram, fb.ram, fa.ram_size));
    fvm_fini(&fa);
    fvm_fini(&fb);
}
END_TEST

static Suite *exec_suite(void)
{
    Suite *s = suite_create("exec");
    TCase *t = tcase_create("paper");

    tcase_add_test(t, bios_sequence);
    tcase_add_test(t, passmark_debug_registers);
    tcase_add_test(t, sles_mmio_stores);
    tcase_add_test(t, vmware_vmreads);
    tcase_add_test(t, vmx_ud_outside_protected_mode);
    tcase_add_test(t, vmread_fail_leaves_no_dirty_bit);
    tcase_add_test(t, vmwrite_fail_leaves_no_accessed_bit);
    tcase_add_test(t, peek_sets_no_accessed_bit);
    tcase_add_test(t, win7_loop_traced);
    suite_add_tcase(s, t);
    t = tcase_create("contract");
    tcase_add_loop_test(t, stop_before_instruction, 0,
                        (int)(sizeof stops / sizeof stops[0]));
    tcase_add_loop_test(t, io_permission_bitmap, 0,
                        (int)(sizeof iomaps / sizeof iomaps[0]));
    tcase_add_test(t, mem_gpa_probe);
    tcase_add_test(t, callback_stop_leaves_state);
    tcase_add_test(t, smc_stops_after_write);
    tcase_add_test(t, rep_budget);
    tcase_add_test(t, two_devices_not_run);
    tcase_add_test(t, refusal_sets_no_accessed_bit);
    tcase_add_test(t, budget_and_irq);
    tcase_add_test(t, alu_flags);
    suite_add_tcase(s, t);
    t = tcase_create("table");
    tcase_add_test(t, op_rows_match_decoder);
    tcase_add_test(t, canonical_edges);
    tcase_add_test(t, mov_dr4_with_cr4_de);
    suite_add_tcase(s, t);
    t = tcase_create("fillers");
    tcase_add_test(t, div_idiv);
    tcase_add_test(t, bit_tests);
    tcase_add_test(t, cli_sti_shadow);
    tcase_add_test(t, pusha_popa_leave);
    tcase_add_test(t, cet_guards_transfers);
    tcase_add_test(t, alignment_check);
    tcase_add_test(t, pop_mem_esp_16bit_stack);
    tcase_add_test(t, real_mode_cached_attributes);
    tcase_add_test(t, rf_cleared_on_completion);
    tcase_add_test(t, xchg_split_lock_left_to_cpu);
    tcase_add_test(t, rep_string_io_addr32_count0);
    tcase_add_test(t, rdtsc_callback);
    tcase_add_test(t, segment_loads);
    tcase_add_test(t, segment_load_compat_gdt_above_4g);
    tcase_add_test(t, push_pop_sreg);
    tcase_add_test(t, ss_load_before_terminator_sets_no_accessed_bit);
    tcase_add_test(t, push_sreg_refused_sets_no_accessed_bit);
    tcase_add_test(t, inline_segment_summary_forgotten);
    tcase_add_loop_test(t, inline_forms_match_dispatcher, 0,
                        (int)(sizeof inline_cases / sizeof inline_cases[0]));
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return lc_test_run(exec_suite());
}
