/* SPDX-License-Identifier: MIT */
/*
 * Faults of the host's KVM that real firmware meets (docs/platform.md,
 * "Real firmware on this KVM"), each found by a probe on a throwaway VM
 * at start and worked around only where found; on an ordinary KVM the
 * probe finds nothing and nothing here runs.
 *
 *  (a) IRET: a 32-bit IRET in protected mode is not emulated; KVM_RUN
 *      returns KVM_EXIT_INTERNAL_ERROR (emulation failure) at it. The
 *      fix-up completes the IRET (same privilege level: EIP, CS, EFLAGS
 *      from the stack, CS reloaded from the GDT) and resumes.
 *  (b) SS.base: an interrupt delivered in protected mode pushes its frame
 *      at linear ESP, ignoring SS.base. The IRET fix-up then reads the
 *      frame there (and checks it is a frame before believing it).
 *  (c) short interrupt windows: an interrupt pending while the guest runs
 *      with IF=0 is rarely delivered in a window of a few instructions
 *      (`sti; nop; nop; cli`, iPXE's timer poll), so the BIOS tick count
 *      (0x46C) stalls for seconds and iPXE's time-outs with it. The
 *      work-around watches the tick count at exits; when a tick is overdue
 *      it puts a hardware breakpoint (KVM_SET_GUEST_DEBUG) on the CLI of
 *      each such window in guest memory: the vCPU exits there with IF=1,
 *      the breakpoint is removed, and KVM injects the pending interrupt as
 *      it re-enters. One exit per late tick, none while ticks come.
 *
 * Also the firmware map's memory-slot setter (firmware.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "vmm.h"

int vmm_kvm_set_slot(void *vm_fd, unsigned slot, uint64_t gpa,
                     uint64_t size, void *hva, bool ro)
{
    struct kvm_userspace_memory_region r = {
        .slot = slot, .flags = ro ? KVM_MEM_READONLY : 0,
        .guest_phys_addr = gpa, .memory_size = size,
        .userspace_addr = (uint64_t)(uintptr_t)hva };
    return ioctl(*(int *)vm_fd, KVM_SET_USER_MEMORY_REGION, &r) < 0 ? -1 : 0;
}

/* ---- the probe --------------------------------------------------------- */

typedef struct kvm_quirks {
    bool probed;
    bool hw_bp;         /* KVM_SET_GUEST_DEBUG hardware breakpoints work */
    bool iret;          /* (a) */
    bool ss_base;       /* (b) */
    bool short_window;  /* (c) */
    unsigned window_tries;
} kvm_quirks;

static kvm_quirks quirks;
static pthread_once_t quirks_once = PTHREAD_ONCE_INIT;

#define PM 0x10000u     /* probe VM: 64 KiB */
#define P_GDT 0x0100u
#define P_IDT 0x0200u
#define P_CODE 0x1000u
#define P_HANDLER 0x1800u
#define P_SSBASE 0x8000u
#define P_ESP 0x1000u   /* SS-relative: linear 0x9000, or 0x1000 if broken */
#define P_PORT_DONE 0xf4
#define P_PORT_LOOP 0xf6

static void gdt_entry(uint8_t *g, unsigned i, uint32_t base, uint32_t limit,
                      uint8_t access, uint8_t flags)
{
    uint8_t *e = g + i * 8;
    e[0] = (uint8_t)limit; e[1] = (uint8_t)(limit >> 8);
    e[2] = (uint8_t)base; e[3] = (uint8_t)(base >> 8);
    e[4] = (uint8_t)(base >> 16); e[5] = access;
    e[6] = (uint8_t)((flags << 4) | ((limit >> 16) & 0xf));
    e[7] = (uint8_t)(base >> 24);
}

static void seg(struct kvm_segment *s, uint16_t sel, uint32_t base,
                uint8_t type, bool code)
{
    *s = (struct kvm_segment){ .base = base, .limit = 0xffffffff,
        .selector = sel, .type = type, .present = 1, .db = 1, .s = 1,
        .g = 1 };
    (void)code;
}

typedef struct probe_vm {
    int kvm, vm, cpu;
    uint8_t *mem;
    struct kvm_run *run;
    size_t run_size;
} probe_vm;

static void probe_close(probe_vm *p)
{
    if (p->run)
        munmap(p->run, p->run_size);
    if (p->cpu >= 0)
        close(p->cpu);
    if (p->vm >= 0)
        close(p->vm);
    if (p->kvm >= 0)
        close(p->kvm);
    if (p->mem)
        munmap(p->mem, PM);
}

/* A protected-mode vCPU without an in-kernel irqchip (so the probe can
 * inject with KVM_INTERRUPT), flat CS/DS, SS based at P_SSBASE. */
static int probe_open(probe_vm *p, const uint8_t *code, size_t len)
{
    struct kvm_userspace_memory_region r;
    struct kvm_sregs sr;
    struct kvm_regs regs = { 0 };
    long sz;

    *p = (probe_vm){ .kvm = -1, .vm = -1, .cpu = -1 };
    p->mem = mmap(NULL, PM, PROT_READ | PROT_WRITE,
                  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p->mem == MAP_FAILED) {
        p->mem = NULL;
        return -1;
    }
    if ((p->kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC)) < 0 ||
        (p->vm = ioctl(p->kvm, KVM_CREATE_VM, 0)) < 0)
        return -1;
    r = (struct kvm_userspace_memory_region){ .slot = 0, .memory_size = PM,
        .userspace_addr = (uint64_t)(uintptr_t)p->mem };
    if (ioctl(p->vm, KVM_SET_USER_MEMORY_REGION, &r) < 0 ||
        ioctl(p->vm, KVM_SET_TSS_ADDR, 0xfffbd000u) < 0 ||
        (p->cpu = ioctl(p->vm, KVM_CREATE_VCPU, 0)) < 0 ||
        (sz = ioctl(p->kvm, KVM_GET_VCPU_MMAP_SIZE, 0)) <= 0)
        return -1;
    p->run_size = (size_t)sz;
    p->run = mmap(NULL, p->run_size, PROT_READ | PROT_WRITE, MAP_SHARED,
                  p->cpu, 0);
    if (p->run == MAP_FAILED) {
        p->run = NULL;
        return -1;
    }
    gdt_entry(p->mem + P_GDT, 1, 0, 0xfffff, 0x9b, 0xc);         /* 0x08 */
    gdt_entry(p->mem + P_GDT, 2, 0, 0xfffff, 0x93, 0xc);         /* 0x10 */
    gdt_entry(p->mem + P_GDT, 3, P_SSBASE, 0xfffff, 0x93, 0xc);  /* 0x18 */
    /* IDT vector 0x20: a 32-bit interrupt gate to P_HANDLER */
    uint8_t *g = p->mem + P_IDT + 0x20 * 8;
    g[0] = (uint8_t)P_HANDLER; g[1] = (uint8_t)(P_HANDLER >> 8);
    g[2] = 0x08; g[5] = 0x8e;
    memcpy(p->mem + P_CODE, code, len);
    if (ioctl(p->cpu, KVM_GET_SREGS, &sr) < 0)
        return -1;
    seg(&sr.cs, 0x08, 0, 0xb, true);
    seg(&sr.ds, 0x10, 0, 0x3, false);
    sr.es = sr.fs = sr.gs = sr.ds;
    seg(&sr.ss, 0x18, P_SSBASE, 0x3, false);
    sr.gdt.base = P_GDT; sr.gdt.limit = 4 * 8 - 1;
    sr.idt.base = P_IDT; sr.idt.limit = 0x21 * 8 - 1;
    sr.cr0 = 0x11;
    regs.rip = P_CODE;
    regs.rsp = P_ESP;
    regs.rflags = 2;
    if (ioctl(p->cpu, KVM_SET_SREGS, &sr) < 0 ||
        ioctl(p->cpu, KVM_SET_REGS, &regs) < 0)
        return -1;
    return 0;
}

/* (a): push a frame (EFLAGS, CS, EIP of the `out` after it) and IRET. */
static void probe_iret(void)
{
    static const uint8_t code[] = {
        0x6a, 0x02,                         /* push 2 (EFLAGS) */
        0x6a, 0x08,                         /* push 0x08 (CS) */
        0x68, 0x0b, 0x10, 0x00, 0x00,       /* push 0x100b */
        0xcf,                               /* iret */
        0xf4,                               /* (hlt: not reached) */
        0xe6, P_PORT_DONE,                  /* 0x100b: out 0xf4, al */
        0xf4,
    };
    probe_vm p;

    if (probe_open(&p, code, sizeof code) == 0 &&
        ioctl(p.cpu, KVM_RUN, 0) == 0)
        quirks.iret = p.run->exit_reason == KVM_EXIT_INTERNAL_ERROR;
    probe_close(&p);
}

/* (b): `sti; hlt` with SS based at P_SSBASE; at the HLT exit the probe
 * injects vector 0x20, whose handler reports through `out 0xf4`. Where
 * the interrupt frame landed (its EIP is the one after the HLT) says. */
static void probe_frame(void)
{
    static const uint8_t code[] = { 0xfb, 0xf4, 0xeb, 0xfe };
    static const uint8_t handler[] = { 0xe6, P_PORT_DONE, 0xf4 };
    uint32_t at_base, at_linear;
    probe_vm p;

    if (probe_open(&p, code, sizeof code))
        goto out;
    memcpy(p.mem + P_HANDLER, handler, sizeof handler);
    if (ioctl(p.cpu, KVM_RUN, 0) < 0 || p.run->exit_reason != KVM_EXIT_HLT)
        goto out;
    struct kvm_interrupt irq = { .irq = 0x20 };
    if (ioctl(p.cpu, KVM_INTERRUPT, &irq) < 0 || ioctl(p.cpu, KVM_RUN, 0) < 0 ||
        p.run->exit_reason != KVM_EXIT_IO || p.run->io.port != P_PORT_DONE)
        goto out;
    memcpy(&at_base, p.mem + P_SSBASE + P_ESP - 12, 4);
    memcpy(&at_linear, p.mem + P_ESP - 12, 4);
    quirks.ss_base = at_base != P_CODE + 2 && at_linear == P_CODE + 2;
out:
    probe_close(&p);
}

/* (c): the guest loops `sti; nop; nop; cli; out 0xf6` with a handler at
 * vector 0x20 that reports through `out 0xf4`; the probe asks for an
 * interrupt window and injects vector 0x20 when it opens. How many loop
 * exits pass before the window opens says. */
static void probe_window(void)
{
    static const uint8_t code[] = {
        0xfb, 0x90, 0x90, 0xfa,             /* sti; nop; nop; cli */
        0xe6, P_PORT_LOOP,                  /* out 0xf6, al */
        0xeb, 0xf8,                         /* jmp back */
    };
    static const uint8_t handler[] = { 0xe6, P_PORT_DONE, 0xf4 };
    probe_vm p;
    unsigned loops = 0;

    if (probe_open(&p, code, sizeof code))
        goto out;
    memcpy(p.mem + P_HANDLER, handler, sizeof handler);
    p.run->request_interrupt_window = 1;
    while (loops < 2000) {
        if (ioctl(p.cpu, KVM_RUN, 0) < 0)
            goto out;
        if (p.run->exit_reason == KVM_EXIT_IRQ_WINDOW_OPEN ||
            (p.run->exit_reason == KVM_EXIT_IO &&
             p.run->io.port == P_PORT_LOOP)) {
            if (p.run->ready_for_interrupt_injection) {
                struct kvm_interrupt irq = { .irq = 0x20 };
                p.run->request_interrupt_window = 0;
                if (ioctl(p.cpu, KVM_INTERRUPT, &irq) < 0)
                    goto out;
                continue;
            }
            loops++;
            continue;
        }
        break;
    }
    quirks.window_tries = loops;
    quirks.short_window = loops > 10;
out:
    probe_close(&p);
}

/* Does a hardware breakpoint on the CLI of `sti; nop; nop; cli` stop the
 * vCPU there, with IF=1? (The work-around for (c) needs it.) */
static void probe_hw_bp(void)
{
    static const uint8_t code[] = {
        0xfb, 0x90, 0x90, 0xfa,             /* sti; nop; nop; cli */
        0xe6, P_PORT_DONE, 0xf4,
    };
    struct kvm_guest_debug dbg = {
        .control = KVM_GUESTDBG_ENABLE | KVM_GUESTDBG_USE_HW_BP };
    struct kvm_regs r;
    probe_vm p;

    dbg.arch.debugreg[0] = P_CODE + 3;
    dbg.arch.debugreg[7] = 0x1;             /* L0, execute, 1 byte */
    if (probe_open(&p, code, sizeof code) == 0 &&
        ioctl(p.cpu, KVM_SET_GUEST_DEBUG, &dbg) == 0 &&
        ioctl(p.cpu, KVM_RUN, 0) == 0 &&
        p.run->exit_reason == KVM_EXIT_DEBUG &&
        ioctl(p.cpu, KVM_GET_REGS, &r) == 0)
        quirks.hw_bp = r.rip == P_CODE + 3 && (r.rflags & 0x200);
    probe_close(&p);
}

static void probe(void)
{
    probe_iret();
    probe_frame();
    probe_window();
    if (quirks.short_window)
        probe_hw_bp();
    quirks.probed = true;
}

/* Run the probe once per process (the first firmware boot asks). */
bool vmm_kvm_quirks_probe(vmm *vm)
{
    pthread_once(&quirks_once, probe);
    if (!vm->opt.quiet)
        fprintf(stderr, "lcvmm: KVM probe: iret %s, interrupt frame %s, "
                "short interrupt windows %s\n",
                quirks.iret ? "NOT EMULATED (fixed up)" : "ok",
                quirks.ss_base ? "IGNORES SS.base (fixed up)" : "ok",
                !quirks.short_window ? "ok" : quirks.hw_bp ?
                "MISSED (late ticks delivered at a breakpoint)" :
                "MISSED (no hardware breakpoints: not worked around)");
    return quirks.short_window;
}

/* ---- (a) + (b): completing an IRET ------------------------------------ */

static bool read_lin(vmm *vm, uint64_t lin, void *buf, size_t len)
{
    /* paging is off where this runs (checked by the caller): linear is
     * physical; only RAM is read */
    void *p = vmm_gpa(vm, lin, len);
    if (!p)
        return false;
    memcpy(buf, p, len);
    return true;
}

/* The code-segment descriptor `sel` in the GDT, as KVM wants it. */
static bool load_cs(vmm *vm, const struct kvm_sregs *sr, uint16_t sel,
                    struct kvm_segment *cs)
{
    uint8_t d[8];
    uint32_t limit;

    if (sel & 4 || (sel | 7u) > sr->gdt.limit || !(sel & ~7u))
        return false;       /* LDT, beyond the GDT, or null */
    if (!read_lin(vm, sr->gdt.base + (sel & ~7u), d, 8))
        return false;
    if (!(d[5] & 0x80) || !(d[5] & 0x10) || !(d[5] & 0x08))
        return false;       /* not present, system, or not code */
    limit = (uint32_t)(d[0] | d[1] << 8 | (d[6] & 0xf) << 16);
    if (d[6] & 0x80)
        limit = limit << 12 | 0xfff;
    *cs = (struct kvm_segment){
        .base = (uint32_t)(d[2] | d[3] << 8 | d[4] << 16 |
                           (uint32_t)d[7] << 24),
        .limit = limit, .selector = sel, .type = (uint8_t)(d[5] & 0xf),
        .present = 1, .dpl = (uint8_t)((d[5] >> 5) & 3),
        .db = (uint8_t)((d[6] >> 6) & 1), .s = 1,
        .l = (uint8_t)((d[6] >> 5) & 1), .g = (uint8_t)(d[6] >> 7),
        .avl = (uint8_t)((d[6] >> 4) & 1) };
    return true;
}

/* Read an IRET frame (osz 2 or 4) at linear `at`; a frame is believed
 * only if it returns to a present code segment at CPL 0 within its limit
 * with EFLAGS' always-one bit set and no virtual-8086 return. */
static bool read_frame(vmm *vm, const struct kvm_sregs *sr, uint64_t at,
                       unsigned osz, uint32_t f[3], struct kvm_segment *cs)
{
    uint8_t b[12];

    if (!read_lin(vm, at, b, 3 * osz))
        return false;
    for (unsigned i = 0; i < 3; i++) {
        f[i] = 0;
        memcpy(&f[i], b + i * osz, osz);
    }
    if ((f[1] & 3) || !load_cs(vm, sr, (uint16_t)f[1], cs) || cs->dpl)
        return false;
    if (osz == 4 && ((f[2] & 0x20000) || !(f[2] & 2)))
        return false;
    return f[0] <= cs->limit;
}

static bool fix_iret(vmm *vm, int fd)
{
    struct kvm_regs r;
    struct kvm_sregs sr;
    struct kvm_segment cs;
    uint8_t insn[4];
    unsigned osz, i = 0;
    uint32_t f[3];
    uint64_t esp, lin = 0;
    bool found = false;

    if (ioctl(fd, KVM_GET_REGS, &r) < 0 || ioctl(fd, KVM_GET_SREGS, &sr) < 0)
        return false;
    if (!(sr.cr0 & 1) || (sr.cr0 & 0x80000000u) || (r.rflags & 0x20000) ||
        (r.rflags & 0x4000) || sr.cs.dpl)
        return false;       /* real, paged, v86, nested task, CPL > 0 */
    if (!read_lin(vm, sr.cs.base + (uint32_t)r.rip, insn, sizeof insn))
        return false;
    osz = sr.cs.db ? 4 : 2;
    if (insn[0] == 0x66) {
        osz ^= 6;
        i = 1;
    }
    if (insn[i] != 0xcf)
        return false;       /* not an IRET: a fault of its own */
    esp = sr.ss.db ? (uint32_t)r.rsp : (uint16_t)r.rsp;
    /* (b): where this KVM put the frame first, the architectural place
     * second; each only if it holds a frame */
    if (quirks.ss_base && read_frame(vm, &sr, esp, osz, f, &cs)) {
        lin = esp;
        found = true;
    } else if (read_frame(vm, &sr, (uint32_t)(sr.ss.base + esp), osz, f,
                          &cs)) {
        lin = sr.ss.base + esp;
        found = true;
    }
    (void)lin;
    if (!found)
        return false;
    r.rip = f[0];
    if (osz == 4)           /* at CPL 0 every flag but VM is writable */
        r.rflags = (f[2] & 0x3f7fd5u) | 2;
    else
        r.rflags = (r.rflags & ~0xffffull) | (f[2] & 0x7fd5u) | 2;
    esp += 3 * osz;
    r.rsp = sr.ss.db ? (uint32_t)esp : ((r.rsp & ~0xffffull) | (uint16_t)esp);
    sr.cs = cs;
    if (ioctl(fd, KVM_SET_SREGS, &sr) < 0 || ioctl(fd, KVM_SET_REGS, &r) < 0)
        return false;
    vm->stats.quirk_irets++;
    return true;
}

bool vmm_kvm_quirk_fixup(vmm *vm, int vcpu_fd, void *kvm_run)
{
    struct kvm_run *run = kvm_run;

    if (!vm->fw || !quirks.iret ||
        run->internal.suberror != KVM_INTERNAL_ERROR_EMULATION)
        return false;
    return fix_iret(vm, vcpu_fd);
}

/* ---- (c): late timer ticks --------------------------------------------- */

#define TICK_LATE_S 0.070       /* a tick is every 54.9 ms */
#define MAX_WINDOWS 4           /* debug registers */

static double mono_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

typedef struct tick_watch {
    uint32_t ticks;
    double changed, scanned;
    bool armed;
    unsigned n;
    uint64_t cli[MAX_WINDOWS];  /* guest-physical = linear (paging off) */
} tick_watch;

static tick_watch tw;

/* Find `sti; nop; nop; cli` in guest RAM (iPXE relocates itself, so the
 * place is not known in advance; paging is off, so linear is physical). */
static unsigned find_windows(vmm *vm)
{
    static const uint8_t pat[4] = { 0xfb, 0x90, 0x90, 0xfa };
    const uint8_t *p = vm->ram, *end = vm->ram + vm->ram_size;
    unsigned n = 0;

    while (n < MAX_WINDOWS && p < end &&
           (p = memmem(p, (size_t)(end - p), pat, 4)) != NULL) {
        tw.cli[n++] = (uint64_t)(p - vm->ram) + 3;
        p += 4;
    }
    return n;
}

static void set_bps(int fd, bool on)
{
    struct kvm_guest_debug dbg = { 0 };

    if (on) {
        dbg.control = KVM_GUESTDBG_ENABLE | KVM_GUESTDBG_USE_HW_BP;
        for (unsigned i = 0; i < tw.n; i++) {
            dbg.arch.debugreg[i] = tw.cli[i];
            dbg.arch.debugreg[7] |= 1u << (i * 2);  /* Ln, execute, 1 byte */
        }
    }
    if (ioctl(fd, KVM_SET_GUEST_DEBUG, &dbg) == 0)
        tw.armed = on;
}

/* At every exit of the firmware's vCPU: is a tick late? */
void vmm_kvm_quirk_exit(vmm *vm, int vcpu_fd)
{
    uint32_t t;
    double now;

    if (!vm->fw || !quirks.short_window || !quirks.hw_bp)
        return;
    memcpy(&t, vm->ram + FW_BDA_TICKS, 4);
    now = mono_s();
    if (t != tw.ticks || tw.changed == 0) {
        tw.ticks = t;
        tw.changed = now;
        if (tw.armed)
            set_bps(vcpu_fd, false);
        return;
    }
    if (tw.armed || now - tw.changed < TICK_LATE_S)
        return;
    if (now - tw.scanned > 0.5) {   /* the code may have moved: look again */
        tw.scanned = now;
        tw.n = find_windows(vm);
    }
    if (tw.n) {
        set_bps(vcpu_fd, true);
        vm->stats.quirk_late_ticks++;
    }
}

/* The breakpoint hit: IF is 1 here; remove it and let KVM inject. */
bool vmm_kvm_quirk_debug(vmm *vm, int vcpu_fd)
{
    if (!vm->fw || !tw.armed)
        return false;
    set_bps(vcpu_fd, false);
    vm->stats.quirk_bp_exits++;
    return true;
}
