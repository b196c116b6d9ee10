/* SPDX-License-Identifier: MIT */
/*
 * tests/diff/native.c: run a host-runnable long64 case on this CPU, to
 * decide between Unicorn and the runtime when they disagree.
 *
 * A host-runnable case (gen_opts.native) touches only the window at
 * WIN_LA (code, stack, 16 shuffled data frames, DATA0) and the 2 MiB page
 * at BIG_LA, with no I/O, no CPUID/MSR and no FS/GS override. Guest
 * "physical" RAM is a memfd; every 4 KiB page of those linear ranges is
 * mapped from it at the same address in this process (MAP_SHARED|
 * MAP_FIXED), with the frame the case's page tables give, so aliasing is
 * exactly the guest's. A stub page at NAT_STUB_LA loads all 16 GPRs and
 * RFLAGS (arithmetic flags and DF; IF cannot change at CPL 3), jumps to
 * the code, and at the end takes them back via a `jmp [rip+x]` placed at
 * end_la (in the code page; the page is restored afterwards). Faults
 * (SIGSEGV, SIGBUS, SIGILL, SIGFPE) end the run through siglongjmp.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "diff.h"

#if defined(__x86_64__) && defined(__linux__)

#define NAT_STUB_LA 0x40400000ull
#define NAT_RESERVE (NAT_STUB_LA + 0x1000 - WIN_LA)

/* The stub, position independent, copied to NAT_STUB_LA. */
__asm__(
    ".text\n"
    ".globl lcdiff_nat_begin\n"
    "lcdiff_nat_begin:\n"
    "    push %rbx\n push %rbp\n push %r12\n push %r13\n push %r14\n push %r15\n"
    "    mov %rsp, lcdiff_nat_host(%rip)\n"
    "    push lcdiff_nat_in+128(%rip)\n"
    "    popfq\n"
    "    mov lcdiff_nat_in+0(%rip), %rax\n"
    "    mov lcdiff_nat_in+8(%rip), %rcx\n"
    "    mov lcdiff_nat_in+16(%rip), %rdx\n"
    "    mov lcdiff_nat_in+24(%rip), %rbx\n"
    "    mov lcdiff_nat_in+40(%rip), %rbp\n"
    "    mov lcdiff_nat_in+48(%rip), %rsi\n"
    "    mov lcdiff_nat_in+56(%rip), %rdi\n"
    "    mov lcdiff_nat_in+64(%rip), %r8\n"
    "    mov lcdiff_nat_in+72(%rip), %r9\n"
    "    mov lcdiff_nat_in+80(%rip), %r10\n"
    "    mov lcdiff_nat_in+88(%rip), %r11\n"
    "    mov lcdiff_nat_in+96(%rip), %r12\n"
    "    mov lcdiff_nat_in+104(%rip), %r13\n"
    "    mov lcdiff_nat_in+112(%rip), %r14\n"
    "    mov lcdiff_nat_in+120(%rip), %r15\n"
    "    mov lcdiff_nat_in+32(%rip), %rsp\n"
    "    jmp *lcdiff_nat_entry(%rip)\n"
    ".globl lcdiff_nat_exit\n"
    "lcdiff_nat_exit:\n"
    "    mov %rax, lcdiff_nat_out+0(%rip)\n"
    "    mov %rcx, lcdiff_nat_out+8(%rip)\n"
    "    mov %rdx, lcdiff_nat_out+16(%rip)\n"
    "    mov %rbx, lcdiff_nat_out+24(%rip)\n"
    "    mov %rsp, lcdiff_nat_out+32(%rip)\n"
    "    mov %rbp, lcdiff_nat_out+40(%rip)\n"
    "    mov %rsi, lcdiff_nat_out+48(%rip)\n"
    "    mov %rdi, lcdiff_nat_out+56(%rip)\n"
    "    mov %r8, lcdiff_nat_out+64(%rip)\n"
    "    mov %r9, lcdiff_nat_out+72(%rip)\n"
    "    mov %r10, lcdiff_nat_out+80(%rip)\n"
    "    mov %r11, lcdiff_nat_out+88(%rip)\n"
    "    mov %r12, lcdiff_nat_out+96(%rip)\n"
    "    mov %r13, lcdiff_nat_out+104(%rip)\n"
    "    mov %r14, lcdiff_nat_out+112(%rip)\n"
    "    mov %r15, lcdiff_nat_out+120(%rip)\n"
    "    lea lcdiff_nat_stack_top(%rip), %rsp\n"
    "    pushfq\n"
    "    pop %rax\n"
    "    mov %rax, lcdiff_nat_out+128(%rip)\n"
    "    cld\n"
    "    mov lcdiff_nat_host(%rip), %rsp\n"
    "    pop %r15\n pop %r14\n pop %r13\n pop %r12\n pop %rbp\n pop %rbx\n"
    "    ret\n"
    "    .balign 16\n"
    ".globl lcdiff_nat_exit_ptr\n"
    "lcdiff_nat_exit_ptr: .quad 0\n"
    "lcdiff_nat_entry: .quad 0\n"
    "lcdiff_nat_host: .quad 0\n"
    ".globl lcdiff_nat_in\n"
    "lcdiff_nat_in: .fill 17, 8, 0\n"
    ".globl lcdiff_nat_out\n"
    "lcdiff_nat_out: .fill 17, 8, 0\n"
    "    .fill 32, 8, 0\n"
    "lcdiff_nat_stack_top:\n"
    ".globl lcdiff_nat_end\n"
    "lcdiff_nat_end:\n");

extern const char lcdiff_nat_begin[], lcdiff_nat_exit[], lcdiff_nat_exit_ptr[],
    lcdiff_nat_in[], lcdiff_nat_out[], lcdiff_nat_end[];

#define STUB_OFF(sym) ((uint64_t)((sym) - lcdiff_nat_begin))

static int nat_state;          /* 0 untried, 1 ready, -1 unavailable */
static int nat_fd = -1;
static uint8_t *nat_phys;
static sigjmp_buf nat_jb;
static volatile sig_atomic_t nat_sig;

static void nat_handler(int sig)
{
    nat_sig = sig;
    siglongjmp(nat_jb, 1);
}

static int nat_map(uint64_t la, uint64_t pa, int prot)
{
    void *p;
    if (pa == MMIO_PA || pa >= RAM_SIZE)
        p = mmap((void *)la, 0x1000, PROT_NONE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    else
        p = mmap((void *)la, 0x1000, prot, MAP_SHARED | MAP_FIXED, nat_fd,
                 (off_t)pa);
    return p == (void *)la ? 0 : -1;
}

static int nat_init(void)
{
    void *p = mmap((void *)WIN_LA, NAT_RESERVE, PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (p != (void *)WIN_LA) {
        if (p != MAP_FAILED)
            munmap(p, NAT_RESERVE);
        return -1;
    }
    nat_fd = memfd_create("lc-diff-ram", 0);
    if (nat_fd < 0 || ftruncate(nat_fd, RAM_SIZE) < 0)
        return -1;
    nat_phys = mmap(NULL, RAM_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
                    nat_fd, 0);
    if (nat_phys == MAP_FAILED)
        return -1;
    /* the 2 MiB page maps physical 0: its first 128 KiB */
    for (uint64_t pa = 0; pa < RAM_SIZE; pa += 0x1000)
        if (nat_map(BIG_LA + pa, pa, PROT_READ | PROT_WRITE) < 0)
            return -1;
    size_t n = (size_t)(lcdiff_nat_end - lcdiff_nat_begin);
    if (n > 0x1000)
        return -1;
    p = mmap((void *)NAT_STUB_LA, 0x1000, PROT_READ | PROT_WRITE | PROT_EXEC,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    if (p != (void *)NAT_STUB_LA)
        return -1;
    memcpy(p, lcdiff_nat_begin, n);
    uint64_t exit_la = NAT_STUB_LA + STUB_OFF(lcdiff_nat_exit);
    memcpy((uint8_t *)NAT_STUB_LA + STUB_OFF(lcdiff_nat_exit_ptr), &exit_la, 8);

    static uint8_t altstack[64 * 1024];
    stack_t ss = { .ss_sp = altstack, .ss_size = sizeof altstack };
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = nat_handler;
    sa.sa_flags = SA_ONSTACK | SA_NODEFER;
    if (sigaltstack(&ss, NULL) < 0)
        return -1;
    sigaction(SIGSEGV, &sa, NULL);
    sigaction(SIGBUS, &sa, NULL);
    sigaction(SIGILL, &sa, NULL);
    sigaction(SIGFPE, &sa, NULL);
    sigaction(SIGTRAP, &sa, NULL);
    return 0;
}

int native_run(const dcase *c, run_result *r)
{
    if (!c->native_ok)
        return -1;
    if (nat_state == 0)
        nat_state = nat_init() == 0 ? 1 : -1;
    if (nat_state < 0)
        return -1;

    r->ok = 0;
    r->why[0] = 0;
    r->ntrace = 0;
    dev_init(&r->dev, c);
    memcpy(nat_phys, c->ram, RAM_SIZE);
    /* the window, from the case's PT1 */
    for (unsigned i = 0; i < 64; i++) {
        uint64_t e;
        memcpy(&e, c->ram + PT_PT1_PA + i * 8, 8);
        uint64_t pa = (e & 1) ? e & 0x000ffffffffff000ull : ~0ull;
        if (nat_map(WIN_LA + i * 0x1000ull, pa,
                    PROT_READ | PROT_WRITE | PROT_EXEC) < 0)
            return -1;
    }
    /* the exit: jmp [rip + to lcdiff_nat_exit_ptr] at end_la */
    uint64_t ptr_la = NAT_STUB_LA + STUB_OFF(lcdiff_nat_exit_ptr);
    uint64_t end_pa = CODE_PA + c->code_len;
    int32_t d = (int32_t)(ptr_la - (c->end_la + 6));
    nat_phys[end_pa] = 0xff;
    nat_phys[end_pa + 1] = 0x25;
    memcpy(nat_phys + end_pa + 2, &d, 4);

    uint8_t *stub = (uint8_t *)NAT_STUB_LA;
    uint64_t in[17];
    memcpy(in, c->st.gpr, 16 * 8);
    in[16] = (c->st.rflags & (FL_STATUS | LC_RFLAGS_DF)) | 0x202;
    memcpy(stub + STUB_OFF(lcdiff_nat_in), in, sizeof in);
    uint64_t entry = c->code_la;
    memcpy(stub + STUB_OFF(lcdiff_nat_exit_ptr) + 8, &entry, 8);
    __builtin___clear_cache((char *)WIN_LA, (char *)(WIN_LA + 0x22000));

    nat_sig = 0;
    if (sigsetjmp(nat_jb, 1) == 0) {
        ((void (*)(void))NAT_STUB_LA)();
        uint64_t out[17];
        memcpy(out, stub + STUB_OFF(lcdiff_nat_out), sizeof out);
        memcpy(r->gpr, out, 16 * 8);
        r->rflags = out[16];
        r->rip = c->end_la;
        r->ok = 1;
    } else {
        snprintf(r->why, sizeof r->why, "cpu: signal %d", (int)nat_sig);
    }
    memcpy(r->ram, nat_phys, RAM_SIZE);
    memcpy(r->ram + CODE_PA, c->ram + CODE_PA, 0x1000);
    memcpy(r->msr, c->msr, sizeof r->msr);
    return 0;
}

#else /* not x86-64 Linux: no host CPU to ask */

int native_run(const dcase *c, run_result *r)
{
    (void)c;
    (void)r;
    return -1;
}

#endif
