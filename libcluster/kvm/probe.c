/* SPDX-License-Identifier: MIT */
/*
 * libcluster/kvm/probe.c: lc_kvm_probe(), what this kernel's KVM does at
 * I/O and MMIO exits (where RIP points; whether moving RIP cancels a
 * pending completion), measured once on a throwaway VM.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kvm_int.h"

/* Real-mode probe guest at 0x1000; DS = 0x1000 puts DS:0 at 0x10000, past
 * the 64 KiB of RAM: MMIO. The landing pad at 0x1020 reports AL on port
 * 0x81, so a cancelled completion (AL unchanged) can be told from an
 * applied one. */
static const uint8_t probe_code[] = {
    0xba, 0x80, 0x00,           /* 1000: mov dx, 0x80 */
    0xec,                       /* 1003: in al, dx */
    0xee,                       /* 1004: out dx, al */
    0x8a, 0x06, 0x00, 0x00,     /* 1005: mov al, [0] (MMIO read) */
    0x88, 0x06, 0x00, 0x00,     /* 1009: mov [0], al (MMIO write) */
    0xf4,                       /* 100d: hlt */
};
static const uint8_t probe_landing[] = { 0xe6, 0x81, 0xf4 };  /* 1020 */

typedef struct probe_vm {
    int kvm, vm, vcpu;
    struct kvm_run *run;
    size_t run_size;
    uint8_t *mem;
} probe_vm;

static void probe_close(probe_vm *p)
{
    if (p->run && p->run != MAP_FAILED)
        munmap(p->run, p->run_size);
    if (p->mem && p->mem != MAP_FAILED)
        munmap(p->mem, 0x10000);
    if (p->vcpu >= 0) close(p->vcpu);
    if (p->vm >= 0) close(p->vm);
    if (p->kvm >= 0) close(p->kvm);
}

static lc_status probe_open(probe_vm *p)
{
    struct kvm_userspace_memory_region region;
    int mmap_size;

    memset(p, 0, sizeof(*p));
    p->kvm = p->vm = p->vcpu = -1;
    p->kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
    if (p->kvm < 0)
        return LC_ERR_UNSUPPORTED;
    if (ioctl(p->kvm, KVM_GET_API_VERSION, 0) != 12)
        return LC_ERR_UNSUPPORTED;
    p->vm = ioctl(p->kvm, KVM_CREATE_VM, 0);
    if (p->vm < 0)
        return LC_ERR_CALLBACK;
    p->mem = mmap(NULL, 0x10000, PROT_READ | PROT_WRITE,
                  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p->mem == MAP_FAILED)
        return LC_ERR_NOMEM;
    memcpy(p->mem + 0x1000, probe_code, sizeof probe_code);
    memcpy(p->mem + 0x1020, probe_landing, sizeof probe_landing);
    memset(&region, 0, sizeof region);
    region.guest_phys_addr = 0;
    region.memory_size = 0x10000;
    region.userspace_addr = (uint64_t)(uintptr_t)p->mem;
    if (ioctl(p->vm, KVM_SET_USER_MEMORY_REGION, &region) < 0)
        return LC_ERR_CALLBACK;
    p->vcpu = ioctl(p->vm, KVM_CREATE_VCPU, 0);
    mmap_size = ioctl(p->kvm, KVM_GET_VCPU_MMAP_SIZE, 0);
    if (p->vcpu < 0 || mmap_size <= 0)
        return LC_ERR_CALLBACK;
    p->run_size = (size_t)mmap_size;
    p->run = mmap(NULL, p->run_size, PROT_READ | PROT_WRITE, MAP_SHARED,
                  p->vcpu, 0);
    if (p->run == MAP_FAILED)
        return LC_ERR_CALLBACK;
    return LC_OK;
}

/* Start at `rip` in real mode with AL = 0x11 (setup ioctls are fine here:
 * the probe is not on any exit path). */
static lc_status probe_start(probe_vm *p, uint64_t rip)
{
    struct kvm_sregs sregs;
    struct kvm_regs regs;

    if (ioctl(p->vcpu, KVM_GET_SREGS, &sregs) < 0)
        return LC_ERR_CALLBACK;
    sregs.cs.base = 0;
    sregs.cs.selector = 0;
    sregs.ds.base = 0x10000;
    sregs.ds.selector = 0x1000;
    if (ioctl(p->vcpu, KVM_SET_SREGS, &sregs) < 0)
        return LC_ERR_CALLBACK;
    memset(&regs, 0, sizeof regs);
    regs.rip = rip;
    regs.rflags = 2;
    regs.rax = 0x11;
    regs.rdx = 0x80;
    if (ioctl(p->vcpu, KVM_SET_REGS, &regs) < 0)
        return LC_ERR_CALLBACK;
    p->run->kvm_valid_regs = LCK_SYNC_RS;
    p->run->kvm_dirty_regs = 0;
    return LC_OK;
}

static int probe_run(probe_vm *p)
{
    return ioctl(p->vcpu, KVM_RUN, 0) < 0 ? -1 : (int)p->run->exit_reason;
}

/* At a pending exit, feed 0x5a as its data, move RIP to the landing pad
 * and see what AL is when it reports: 0x11 means the completion was
 * cancelled; anything else (or another exit) means it was not. */
static int probe_cancels(probe_vm *p, int mmio)
{
    int reason;

    if (mmio)
        p->run->mmio.data[0] = 0x5a;
    else
        lck_io_data(p->run)[0] = 0x5a;
    p->run->s.regs.regs.rip = 0x1020;
    p->run->s.regs.regs.rax = 0x11;
    p->run->kvm_dirty_regs = KVM_SYNC_X86_REGS;
    reason = probe_run(p);
    return reason == KVM_EXIT_IO && p->run->io.port == 0x81 &&
           p->run->io.direction == KVM_EXIT_IO_OUT &&
           lck_io_data(p->run)[0] == 0x11;
}

lc_status lc_kvm_probe(lc_kvm_caps *caps)
{
    probe_vm p;
    lc_status st;
    int r;

    if (!caps)
        return LC_ERR_INVAL;
    memset(caps, 0, sizeof(*caps));
    st = probe_open(&p);
    if (st != LC_OK)
        goto out;
    r = ioctl(p.kvm, KVM_CHECK_EXTENSION, KVM_CAP_SYNC_REGS);
    caps->sync_regs = r > 0 && (r & LCK_SYNC_RS) == LCK_SYNC_RS;
    if (!caps->sync_regs) {
        st = LC_ERR_UNSUPPORTED;
        goto out;
    }

    /* Where RIP is at each kind of exit (run straight through). */
    st = LC_ERR_CALLBACK;
    if (probe_start(&p, 0x1000) != LC_OK ||
        probe_run(&p) != KVM_EXIT_IO || p.run->io.direction != KVM_EXIT_IO_IN)
        goto out;
    caps->in_rip_past = p.run->s.regs.regs.rip == 0x1004;
    lck_io_data(p.run)[0] = 0x42;
    if (probe_run(&p) != KVM_EXIT_IO || p.run->io.direction != KVM_EXIT_IO_OUT)
        goto out;
    caps->out_rip_past = p.run->s.regs.regs.rip == 0x1005;
    if (probe_run(&p) != KVM_EXIT_MMIO || p.run->mmio.is_write)
        goto out;
    caps->mmio_read_rip_past = p.run->s.regs.regs.rip == 0x1009;
    p.run->mmio.data[0] = 0x42;
    if (probe_run(&p) != KVM_EXIT_MMIO || !p.run->mmio.is_write)
        goto out;
    caps->mmio_write_rip_past = p.run->s.regs.regs.rip == 0x100d;

    /* Does moving RIP cancel each pending completion? */
    if (probe_start(&p, 0x1003) != LC_OK || probe_run(&p) != KVM_EXIT_IO)
        goto out;
    caps->cancel_in = (uint8_t)probe_cancels(&p, 0);
    if (probe_start(&p, 0x1004) != LC_OK || probe_run(&p) != KVM_EXIT_IO)
        goto out;
    caps->cancel_out = (uint8_t)probe_cancels(&p, 0);
    if (probe_start(&p, 0x1005) != LC_OK || probe_run(&p) != KVM_EXIT_MMIO)
        goto out;
    caps->cancel_mmio_read = (uint8_t)probe_cancels(&p, 1);
    if (probe_start(&p, 0x1009) != LC_OK || probe_run(&p) != KVM_EXIT_MMIO)
        goto out;
    caps->cancel_mmio_write = (uint8_t)probe_cancels(&p, 1);
    st = LC_OK;
out:
    probe_close(&p);
    return st;
}

const char *lc_kvm_caps_describe(const lc_kvm_caps *c, char *buf,
                                 unsigned size)
{
    if (!buf || size == 0)
        return "";
    if (!c) {
        snprintf(buf, size, "(no probe)");
        return buf;
    }
    snprintf(buf, size,
             "sync regs %s; RIP at exit: IN %s, OUT %s, MMIO read %s, MMIO "
             "write %s; moving RIP cancels: IN %s, OUT %s, MMIO read %s, "
             "MMIO write %s",
             c->sync_regs ? "yes" : "no",
             c->in_rip_past ? "past" : "at", c->out_rip_past ? "past" : "at",
             c->mmio_read_rip_past ? "past" : "at",
             c->mmio_write_rip_past ? "past" : "at",
             c->cancel_in ? "yes" : "no", c->cancel_out ? "yes" : "no",
             c->cancel_mmio_read ? "yes" : "no",
             c->cancel_mmio_write ? "yes" : "no");
    return buf;
}

