/* SPDX-License-Identifier: MIT */
/*
 * bench/kvm_costs.c: what this machine's KVM charges, measured on a
 * throwaway VM, printed as one JSON object (the benchmark suite's machine
 * description and the nested model's "this machine" exit-cost profile).
 *
 *   round trips   one KVM_RUN that ends in an exit to user space, with the
 *                 guest in a two-instruction loop (`out dx,al; jmp`, `in`,
 *                 a store or a load to an unmapped address), at CPL 0 and
 *                 at CPL 3, in 64-bit mode with identity-mapped paging (the
 *                 NIC guests' mode; this KVM runs CPL 3 code natively only
 *                 with paging on, and allows paging only in long mode);
 *                 and the OUT exit again with sync regs (REGS | SREGS), and
 *                 with the registers written back through them
 *   traps         a write into a coalesced MMIO zone (KVM_REGISTER_COALESCED_
 *                 MMIO) against the same store into RAM, per store, at CPL
 *                 0 and 3: it never reaches user space, but traps into the
 *                 host kernel (what lcvmm's latch writes cost, and what its
 *                 direct page saves)
 *   ioctls        KVM_GET_REGS, KVM_GET_SREGS, KVM_RUN with immediate_exit
 *                 set (the adapter's completion trick, docs/kvm.md), and a
 *                 plain syscall for scale
 *   insn          guest time per instruction (`dec ecx; jnz`) at CPL 0 and
 *                 CPL 3: this host emulates CPL 0 code (docs/platform.md)
 *   caps          KVM_CHECK_EXTENSION for the capabilities lcvmm and the
 *                 adapter use, and lc_kvm_probe()'s findings
 *
 * CPL 3 port I/O: this KVM ignores RFLAGS.IOPL at CPL 3, so the guest gets
 * its ports the architectural way, through an all-zero I/O permission
 * bitmap in its TSS (TR is loaded through KVM_SET_SREGS).
 *
 * Each figure is the median of --reps repeats (default 7) of a batch sized
 * to take about --batch-ms milliseconds (default 40), with min and max.
 *
 *   kvm_costs [--reps N] [--batch-ms MS] [--quick]
 *
 * --quick measures only what a demo quotes, in about a second: the OUT
 * round trip at CPL 0 and CPL 3 and the guest time per CPL 0 instruction
 * (3 repeats of 5 ms batches unless --reps/--batch-ms say otherwise).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cluster/kvm.h>

#include "bench_util.h"

/* Guest physical layout: 64 KiB of RAM at 0; the rest of the first 2 MiB
 * is mapped by the page tables but backed by nothing, so it is MMIO. */
#define RAM_SIZE   0x10000u
#define GDT_GPA    0x0500u
#define TSS_GPA    0x1000u
#define TSS_IOMAP  0x68u                    /* I/O bitmap offset in the TSS */
#define TSS_LIMIT  (TSS_IOMAP + 65536 / 8)  /* bitmap + the 0xff end byte */
#define CODE_GPA   0x4000u
#define PML4_GPA   0x6000u
#define PDPT_GPA   0x7000u
#define PD_GPA     0x8000u
#define MMIO_GPA   0x100000u                /* unbacked: every access exits */
#define PORT       0x500u                   /* nothing claims it in-kernel */
#define STORE_GPA  0x9000u                  /* RAM the store loop may write */
#define COAL_COUNT 64u      /* stores a run: well within the ring (~170) */

/* The guest's loops, each at its own entry (64-bit code). */
enum { L_OUT = 0x00, L_IN = 0x10, L_MMIO_W = 0x20, L_MMIO_R = 0x30,
       L_INSN = 0x40, L_STORES = 0x50 };
static const struct { unsigned off; uint8_t code[16]; unsigned len; } loops[] = {
    { L_OUT,    { 0xee, 0xeb, 0xfd }, 3 },            /* out dx,al; jmp */
    { L_IN,     { 0xec, 0xeb, 0xfd }, 3 },            /* in al,dx; jmp */
    { L_MMIO_W, { 0x89, 0x03, 0xeb, 0xfc }, 4 },      /* mov [rbx],eax; jmp */
    { L_MMIO_R, { 0x8b, 0x03, 0xeb, 0xfc }, 4 },      /* mov eax,[rbx]; jmp */
    /* mov ecx,imm32 (patched); 1: dec ecx; jnz 1b; out dx,al; jmp start */
    { L_INSN,   { 0xb9, 0, 0, 0, 0, 0xff, 0xc9, 0x75, 0xfc, 0xee, 0xeb,
                  0xf4 }, 12 },
    /* mov ecx,imm32 (patched); 1: mov [rbx],eax; dec ecx; jnz 1b;
     * out dx,al; jmp start: COAL_COUNT stores between two exits */
    { L_STORES, { 0xb9, 0, 0, 0, 0, 0x89, 0x03, 0xff, 0xc9, 0x75, 0xfa,
                  0xee, 0xeb, 0xf2 }, 14 },
};

typedef struct kvm {
    int sys, vm, vcpu;
    struct kvm_run *run;
    struct kvm_coalesced_mmio_ring *ring;   /* NULL: no coalesced MMIO */
    uint8_t *ram;
} kvm;

static int reps = 7;
static double batch_ms = 40;

static void die(const char *what)
{
    fprintf(stderr, "kvm_costs: %s: %s\n", what, strerror(errno));
    exit(1);
}

/* ---- the VM ---------------------------------------------------------- */

/* A segment descriptor; `l` marks 64-bit code (then D/B must be 0). */
static uint64_t descriptor(uint32_t base, uint32_t limit, unsigned type,
                           unsigned s, unsigned dpl, unsigned l)
{
    uint64_t d = (limit & 0xffffu) | (uint64_t)(base & 0xffffffu) << 16;
    d |= (uint64_t)(type | s << 4 | dpl << 5 | 1u << 7) << 40;   /* present */
    d |= (uint64_t)((limit >> 16) & 0xf) << 48;
    d |= (uint64_t)l << 53;
    d |= (uint64_t)(s && !l) << 54;                             /* D/B */
    d |= (uint64_t)s << 55;                                     /* 4 KiB */
    d |= (uint64_t)(base >> 24) << 56;
    return d;
}

/* The memory image: a GDT matching the segment caches set below (KVM may
 * consult it), a 64-bit TSS whose I/O bitmap grants every port, identity
 * page tables (one user-accessible 2 MiB page), the loops. */
static void build_memory(uint8_t *ram)
{
    uint64_t *gdt = (uint64_t *)(ram + GDT_GPA);
    uint64_t *pml4 = (uint64_t *)(ram + PML4_GPA);
    uint64_t *pdpt = (uint64_t *)(ram + PDPT_GPA);
    uint64_t *pd = (uint64_t *)(ram + PD_GPA);

    memset(ram, 0, RAM_SIZE);
    gdt[1] = descriptor(0, 0xfffff, 0xb, 1, 0, 1);  /* 0x08 code, DPL 0 */
    gdt[2] = descriptor(0, 0xfffff, 0x3, 1, 0, 0);  /* 0x10 data, DPL 0 */
    gdt[3] = descriptor(0, 0xfffff, 0xb, 1, 3, 1);  /* 0x18 code, DPL 3 */
    gdt[4] = descriptor(0, 0xfffff, 0x3, 1, 3, 0);  /* 0x20 data, DPL 3 */
    gdt[5] = descriptor(TSS_GPA, TSS_LIMIT, 0xb, 0, 0, 0);  /* 0x28 TSS */
    gdt[6] = 0;                                     /* its upper half */
    *(uint16_t *)(ram + TSS_GPA + 0x66) = TSS_IOMAP;
    ram[TSS_GPA + TSS_LIMIT] = 0xff;                /* the bitmap's end */
    pml4[0] = PDPT_GPA | 7;                         /* present, RW, user */
    pdpt[0] = PD_GPA | 7;
    pd[0] = 0x87;                                   /* 2 MiB page at 0 */
    for (size_t i = 0; i < sizeof loops / sizeof loops[0]; i++)
        memcpy(ram + CODE_GPA + loops[i].off, loops[i].code, loops[i].len);
}

static void open_vm(kvm *k)
{
    struct kvm_userspace_memory_region region = { 0 };
    long mmap_size;

    k->sys = open("/dev/kvm", O_RDWR | O_CLOEXEC);
    if (k->sys < 0)
        die("/dev/kvm");
    k->vm = ioctl(k->sys, KVM_CREATE_VM, 0);
    if (k->vm < 0)
        die("KVM_CREATE_VM");
    (void)ioctl(k->vm, KVM_SET_TSS_ADDR, 0xfffbd000ul);  /* VMX wants it */
    k->ram = mmap(NULL, RAM_SIZE, PROT_READ | PROT_WRITE,
                  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (k->ram == MAP_FAILED)
        die("mmap");
    build_memory(k->ram);
    region.memory_size = RAM_SIZE;
    region.userspace_addr = (uint64_t)(uintptr_t)k->ram;
    if (ioctl(k->vm, KVM_SET_USER_MEMORY_REGION, &region) < 0)
        die("KVM_SET_USER_MEMORY_REGION");
    k->vcpu = ioctl(k->vm, KVM_CREATE_VCPU, 0);
    if (k->vcpu < 0)
        die("KVM_CREATE_VCPU");
    mmap_size = ioctl(k->sys, KVM_GET_VCPU_MMAP_SIZE, 0);
    if (mmap_size <= 0)
        die("KVM_GET_VCPU_MMAP_SIZE");
    k->run = mmap(NULL, (size_t)mmap_size, PROT_READ | PROT_WRITE,
                  MAP_SHARED, k->vcpu, 0);
    if (k->run == MAP_FAILED)
        die("mmap kvm_run");
    /* The coalesced ring: the page of the vCPU mapping at the offset the
     * capability gives (KVM API documentation, KVM_CAP_COALESCED_MMIO). */
    int page = ioctl(k->sys, KVM_CHECK_EXTENSION, KVM_CAP_COALESCED_MMIO);
    if (page > 0 && (long)page * getpagesize() < mmap_size)
        k->ring = (void *)((uint8_t *)k->run + (long)page * getpagesize());
}

static struct kvm_segment flat(uint16_t sel, unsigned type, unsigned dpl,
                               unsigned l)
{
    struct kvm_segment s = { .base = 0, .limit = 0xffffffff, .selector = sel,
                             .type = (uint8_t)type, .present = 1,
                             .dpl = (uint8_t)dpl, .db = !l, .s = 1, .l = l,
                             .g = 1 };
    return s;
}

/* Let KVM finish a pending IN or MMIO-read completion now: here it would
 * otherwise apply its RIP advance to the next loop's entry (docs/kvm.md,
 * "moving RIP cancels: no"). */
static void settle(kvm *k)
{
    k->run->immediate_exit = 1;
    (void)ioctl(k->vcpu, KVM_RUN, 0);
    k->run->immediate_exit = 0;
}

/* 64-bit mode, identity paging, at `cpl`, entering loop `entry`. */
static void enter(kvm *k, int cpl, unsigned entry)
{
    struct kvm_sregs sr;
    struct kvm_regs r = { 0 };
    uint16_t rpl = cpl ? 3 : 0;

    settle(k);
    if (ioctl(k->vcpu, KVM_GET_SREGS, &sr) < 0)
        die("KVM_GET_SREGS");
    sr.cs = flat((cpl ? 0x18 : 0x08) | rpl, 0xb, (unsigned)cpl, 1);
    sr.ds = sr.es = sr.fs = sr.gs = sr.ss =
        flat((cpl ? 0x20 : 0x10) | rpl, 0x3, (unsigned)cpl, 0);
    sr.tr = (struct kvm_segment){ .base = TSS_GPA, .limit = TSS_LIMIT,
                                  .selector = 0x28, .type = 0xb,
                                  .present = 1 };
    sr.gdt.base = GDT_GPA;
    sr.gdt.limit = 7 * 8 - 1;
    sr.cr0 = 0x80000011;                /* PG | ET | PE */
    sr.cr3 = PML4_GPA;
    sr.cr4 = 0x20;                      /* PAE */
    sr.efer = 0x500;                    /* LME | LMA */
    if (ioctl(k->vcpu, KVM_SET_SREGS, &sr) < 0)
        die("KVM_SET_SREGS");
    r.rip = CODE_GPA + entry;
    r.rflags = 2;                       /* IOPL 0: ports via the bitmap */
    r.rdx = PORT;
    r.rbx = MMIO_GPA;
    r.rsp = 0x8000;
    if (ioctl(k->vcpu, KVM_SET_REGS, &r) < 0)
        die("KVM_SET_REGS");
}

static int expected_exit(const struct kvm_run *r, unsigned entry)
{
    switch (entry) {
    case L_OUT: case L_INSN: case L_STORES:
        return !(r->exit_reason == KVM_EXIT_IO && r->io.port == PORT &&
                 r->io.direction == KVM_EXIT_IO_OUT);
    case L_IN:
        return !(r->exit_reason == KVM_EXIT_IO && r->io.port == PORT &&
                 r->io.direction == KVM_EXIT_IO_IN);
    default:
        return !(r->exit_reason == KVM_EXIT_MMIO &&
                 r->mmio.phys_addr == MMIO_GPA &&
                 r->mmio.is_write == (entry == L_MMIO_W));
    }
}

/* One KVM_RUN; 0 if it ended in the exit the loop makes. A failure is
 * reported (the figure becomes null) rather than fatal. */
static int run_once(kvm *k, unsigned entry)
{
    if (ioctl(k->vcpu, KVM_RUN, 0) < 0) {
        fprintf(stderr, "kvm_costs: KVM_RUN (loop %#x): %s\n", entry,
                strerror(errno));
        return -1;
    }
    if (expected_exit(k->run, entry)) {
        fprintf(stderr, "kvm_costs: loop %#x: unexpected exit reason %u\n",
                entry, k->run->exit_reason);
        return -1;
    }
    return 0;
}

/* ---- measuring ------------------------------------------------------- */

typedef struct figure { double med, min, max; long iters; int ok; } figure;

typedef int (*op_fn)(kvm *k, unsigned arg);   /* one operation; 0 = ok */

/* ns per op: calibrate a batch to ~batch_ms, then `reps` batches. */
static figure measure(kvm *k, op_fn op, unsigned arg)
{
    double v[64], t0;
    figure f = { 0 };
    long n = 16;

    for (;;) {                                  /* calibrate (and warm) */
        t0 = bench_now_ns();
        for (long i = 0; i < n; i++)
            if (op(k, arg))
                return f;
        double ms = (bench_now_ns() - t0) / 1e6;
        if (ms > batch_ms / 4 || n > (1l << 26)) {
            n = (long)(n * batch_ms / (ms > 0.001 ? ms : 0.001)) + 1;
            break;
        }
        n *= 4;
    }
    for (int r = 0; r < reps; r++) {
        t0 = bench_now_ns();
        for (long i = 0; i < n; i++)
            if (op(k, arg))
                return f;
        v[r] = (bench_now_ns() - t0) / n;
    }
    f.med = bench_median(v, reps);              /* sorts v */
    f.min = v[0];
    f.max = v[reps - 1];
    f.iters = n;
    f.ok = 1;
    return f;
}

static int op_run(kvm *k, unsigned entry) { return run_once(k, entry); }

/* One KVM_RUN that also writes the registers back through the sync regs
 * (unchanged), as the adapter does after the engine ran ahead. */
static int op_run_dirty(kvm *k, unsigned entry)
{
    k->run->kvm_dirty_regs = KVM_SYNC_X86_REGS;
    return run_once(k, entry);
}

static int op_get_regs(kvm *k, unsigned a)
{
    struct kvm_regs r;
    (void)a;
    return ioctl(k->vcpu, KVM_GET_REGS, &r) < 0;
}

static int op_get_sregs(kvm *k, unsigned a)
{
    struct kvm_sregs s;
    (void)a;
    return ioctl(k->vcpu, KVM_GET_SREGS, &s) < 0;
}

/* KVM_RUN with immediate_exit: returns EINTR without entering the guest. */
static int op_immediate_exit(kvm *k, unsigned a)
{
    int rc;
    (void)a;
    k->run->immediate_exit = 1;
    rc = ioctl(k->vcpu, KVM_RUN, 0);
    k->run->immediate_exit = 0;
    return !(rc < 0 && errno == EINTR);
}

static int op_syscall(kvm *k, unsigned a)
{
    (void)k;
    (void)a;
    return syscall(SYS_getppid) < 0;
}

/* ---- output ---------------------------------------------------------- */

static void put_figure(const char *name, figure f, int last)
{
    if (f.ok)
        printf("    \"%s\": {\"median\": %.1f, \"min\": %.1f, \"max\": %.1f, "
               "\"iters\": %ld}%s\n", name, f.med, f.min, f.max, f.iters,
               last ? "" : ",");
    else
        printf("    \"%s\": null%s\n", name, last ? "" : ",");
}

/* The round trips: one exit per KVM_RUN, per loop and CPL. */
static void round_trips(kvm *k)
{
    static const struct { const char *name; unsigned entry; } t[] = {
        { "pio_out", L_OUT }, { "pio_in", L_IN },
        { "mmio_write", L_MMIO_W }, { "mmio_read", L_MMIO_R },
    };
    char name[64];
    int n = (int)(sizeof t / sizeof t[0]);

    printf("  \"round_trip_ns\": {\n");
    for (int cpl = 0; cpl <= 3; cpl += 3)
        for (int i = 0; i < n; i++) {
            enter(k, cpl, t[i].entry);
            snprintf(name, sizeof name, "%s_cpl%d", t[i].name, cpl);
            put_figure(name, measure(k, op_run, t[i].entry), 0);
        }
    /* The same OUT exit with KVM_CAP_SYNC_REGS filling kvm_run with the
     * registers and segment registers at every exit, as the libcluster
     * adapter asks (lcvmm with clustering on); the difference is what
     * that costs per exit. */
    k->run->kvm_valid_regs = KVM_SYNC_X86_REGS | KVM_SYNC_X86_SREGS;
    for (int cpl = 0; cpl <= 3; cpl += 3) {
        enter(k, cpl, L_OUT);
        snprintf(name, sizeof name, "pio_out_cpl%d_sync_regs", cpl);
        put_figure(name, measure(k, op_run, L_OUT), 0);
        /* ... and with the registers written back through them */
        snprintf(name, sizeof name, "pio_out_cpl%d_dirty_regs", cpl);
        put_figure(name, measure(k, op_run_dirty, L_OUT), cpl == 3);
    }
    k->run->kvm_valid_regs = 0;
    k->run->kvm_dirty_regs = 0;
    printf("  },\n");
}

/* Guest ns per instruction: a run of the counted loop minus one OUT round
 * trip, over its 2*count instructions. */
static figure insn_cost(kvm *k, int cpl, uint32_t count)
{
    figure loop, exit_only;

    memcpy(k->ram + CODE_GPA + L_INSN + 1, &count, 4);
    enter(k, cpl, L_OUT);
    exit_only = measure(k, op_run, L_OUT);
    enter(k, cpl, L_INSN);
    loop = measure(k, op_run, L_INSN);
    if (loop.ok && exit_only.ok) {
        double per = 2.0 * count;
        loop.med = (loop.med - exit_only.med) / per;
        loop.min = (loop.min - exit_only.med) / per;
        loop.max = (loop.max - exit_only.med) / per;
    }
    return loop;
}

/* One run of the store loop, then the coalesced ring emptied as a VMM
 * drains it (the entries are not read: only the trap is timed). */
static int op_run_drain(kvm *k, unsigned entry)
{
    int r = run_once(k, entry);

    if (k->ring)
        __atomic_store_n(&k->ring->first,
                         __atomic_load_n(&k->ring->last, __ATOMIC_ACQUIRE),
                         __ATOMIC_RELEASE);
    return r;
}

/* What one write into a coalesced MMIO zone costs beyond the same store
 * into RAM, at `cpl`: the store loop run against a zone registered at
 * MMIO_GPA, and against RAM (what a register page mapped as memory costs,
 * lcvmm's --nic-opt direct), per store. The write does not reach user
 * space, but it still traps into the kernel. */
static figure trap_cost(kvm *k, int cpl)
{
    struct kvm_coalesced_mmio_zone z = { .addr = MMIO_GPA, .size = 4 };
    struct kvm_regs r;
    uint32_t count = COAL_COUNT;
    figure zone = { 0 }, ram;

    if (!k->ring || ioctl(k->vm, KVM_REGISTER_COALESCED_MMIO, &z) < 0)
        return zone;
    memcpy(k->ram + CODE_GPA + L_STORES + 1, &count, 4);
    enter(k, cpl, L_STORES);
    zone = measure(k, op_run_drain, L_STORES);
    enter(k, cpl, L_STORES);
    if (ioctl(k->vcpu, KVM_GET_REGS, &r) < 0)
        die("KVM_GET_REGS");
    r.rbx = STORE_GPA;
    if (ioctl(k->vcpu, KVM_SET_REGS, &r) < 0)
        die("KVM_SET_REGS");
    ram = measure(k, op_run_drain, L_STORES);
    (void)ioctl(k->vm, KVM_UNREGISTER_COALESCED_MMIO, &z);
    if (zone.ok && ram.ok) {
        zone.med = (zone.med - ram.med) / count;
        zone.min = (zone.min - ram.med) / count;
        zone.max = (zone.max - ram.med) / count;
    } else {
        zone.ok = 0;
    }
    return zone;
}

static void capabilities(kvm *k)
{
    /* used: 1 if lcvmm or the adapter relies on it (docs/vmm.md, kvm.md) */
    static const struct { const char *name; int cap, used; } caps[] = {
        { "SYNC_REGS", KVM_CAP_SYNC_REGS, 1 },
        { "IRQCHIP", KVM_CAP_IRQCHIP, 1 },
        { "PIT2", KVM_CAP_PIT2, 1 },
        { "IMMEDIATE_EXIT", KVM_CAP_IMMEDIATE_EXIT, 1 },
        { "COALESCED_MMIO", KVM_CAP_COALESCED_MMIO, 1 },
        { "COALESCED_PIO", KVM_CAP_COALESCED_PIO, 1 },
        { "SET_TSS_ADDR", KVM_CAP_SET_TSS_ADDR, 1 },
        { "USER_MEMORY", KVM_CAP_USER_MEMORY, 1 },
        { "EXT_CPUID", KVM_CAP_EXT_CPUID, 1 },
        { "NR_VCPUS", KVM_CAP_NR_VCPUS, 1 },
        { "SPLIT_IRQCHIP", KVM_CAP_SPLIT_IRQCHIP, 0 },
        { "IOEVENTFD", KVM_CAP_IOEVENTFD, 0 },
        { "IRQFD", KVM_CAP_IRQFD, 0 },
        { "SET_GUEST_DEBUG", KVM_CAP_SET_GUEST_DEBUG, 0 },
        { "X86_USER_SPACE_MSR", KVM_CAP_X86_USER_SPACE_MSR, 0 },
        { "READONLY_MEM", KVM_CAP_READONLY_MEM, 0 },
        { "NESTED_STATE", KVM_CAP_NESTED_STATE, 0 },
    };
    int n = (int)(sizeof caps / sizeof caps[0]);

    printf("  \"api_version\": %d,\n", ioctl(k->sys, KVM_GET_API_VERSION, 0));
    printf("  \"caps\": {\n");
    for (int i = 0; i < n; i++)
        printf("    \"%s\": {\"value\": %d, \"used_by_lcvmm\": %s}%s\n",
               caps[i].name, ioctl(k->sys, KVM_CHECK_EXTENSION, caps[i].cap),
               caps[i].used ? "true" : "false", i == n - 1 ? "" : ",");
    printf("  },\n");
}

static void probe(void)
{
    lc_kvm_caps c;
    char buf[512];

    if (lc_kvm_probe(&c) != LC_OK) {
        printf("  \"probe\": null,\n");
        return;
    }
    lc_kvm_caps_describe(&c, buf, sizeof buf);
    printf("  \"probe\": \"");
    for (const char *p = buf; *p; p++)          /* a JSON string */
        if (*p == '"' || *p == '\\')
            printf("\\%c", *p);
        else if ((unsigned char)*p >= 0x20)
            putchar(*p);
    printf("\",\n");
}

int main(int argc, char **argv)
{
    kvm k;
    int quick = 0;

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) {
            quick = 1;
            if (reps == 7)
                reps = 3;
            if (batch_ms == 40)
                batch_ms = 5;
        } else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--batch-ms") && i + 1 < argc)
            batch_ms = atof(argv[++i]);
        else {
            fprintf(stderr, "usage: kvm_costs [--reps N] [--batch-ms MS] "
                            "[--quick]\n");
            return 2;
        }
    }
    if (reps < 1 || reps > 64)
        reps = 7;
    if (batch_ms < 1)
        batch_ms = 40;

    open_vm(&k);
    printf("{\n  \"unit\": \"ns\",\n  \"reps\": %d,\n", reps);
    if (quick) {
        printf("  \"round_trip_ns\": {\n");
        enter(&k, 0, L_OUT);
        put_figure("pio_out_cpl0", measure(&k, op_run, L_OUT), 0);
        enter(&k, 3, L_OUT);
        put_figure("pio_out_cpl3", measure(&k, op_run, L_OUT), 1);
        printf("  },\n  \"insn_ns\": {\n");
        put_figure("cpl0", insn_cost(&k, 0, 2000), 1);
        printf("  }\n}\n");
        return 0;
    }
    capabilities(&k);
    probe();
    round_trips(&k);

    printf("  \"trap_ns\": {\n");
    put_figure("coalesced_mmio_write_cpl0", trap_cost(&k, 0), 0);
    put_figure("coalesced_mmio_write_cpl3", trap_cost(&k, 3), 1);
    printf("  },\n");

    printf("  \"ioctl_ns\": {\n");
    enter(&k, 0, L_OUT);
    put_figure("KVM_GET_REGS", measure(&k, op_get_regs, 0), 0);
    put_figure("KVM_GET_SREGS", measure(&k, op_get_sregs, 0), 0);
    put_figure("KVM_RUN_immediate_exit", measure(&k, op_immediate_exit, 0), 0);
    put_figure("syscall_getppid", measure(&k, op_syscall, 0), 1);
    printf("  },\n");

    /* CPL 0 is emulated here (~0.6 us per instruction), CPL 3 native:
     * size the loops so one run is a few milliseconds either way. */
    printf("  \"insn_ns\": {\n");
    put_figure("cpl0", insn_cost(&k, 0, 2000), 0);
    put_figure("cpl3", insn_cost(&k, 3, 2000000), 1);
    printf("  }\n}\n");
    return 0;
}
