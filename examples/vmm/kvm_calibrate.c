/* SPDX-License-Identifier: MIT */
/*
 * What one exit costs on this host, measured at power-on on a throwaway
 * VM, for libcluster's cost/benefit budget (lc_config.exit_cost_ns).
 *
 * Agesen et al., Software Techniques for Avoiding Hardware Virtualization
 * Exits (USENIX ATC 2012), cap memory gap fillers at four against an exit
 * of 3,000 cycles (sections 4 and 9), and propose in section 11 a cost
 * model whose calibration is "done dynamically, e.g., during VMM
 * power-on". The engine scales its cap with the cost measured here.
 *
 * The probe: a real-mode vCPU looping on `out 0xf6, al`, no irqchip; after
 * a few warm-up exits, five batches of 64 KVM_RUN round trips, each timed
 * with CLOCK_MONOTONIC; the cost is the median batch's mean. A CPL 0 exit
 * is the cheapest kind (a CPL 3 exit costs more), so the budget is the
 * smallest the guest's exits justify. About 3 ms on a host whose exits
 * cost 9 us.
 */
#include <fcntl.h>
#include <linux/kvm.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "vmm.h"

#define CAL_MEM    0x10000u
#define CAL_CODE   0x1000u
#define CAL_PORT   0xf6
#define CAL_WARMUP 8
#define CAL_BATCH  64
#define CAL_BATCHES 5

static double now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

/* One KVM_RUN that must come back at the loop's OUT. */
static int one_exit(int cpu, const struct kvm_run *run)
{
    return ioctl(cpu, KVM_RUN, 0) == 0 && run->exit_reason == KVM_EXIT_IO &&
           run->io.port == CAL_PORT ? 0 : -1;
}

uint32_t vmm_kvm_exit_cost_ns(void)
{
    static const uint8_t loop[] = { 0xe6, CAL_PORT, 0xeb, 0xfc };
    struct kvm_userspace_memory_region r;
    struct kvm_sregs sr;
    struct kvm_regs regs = { .rip = CAL_CODE, .rflags = 2 };
    struct kvm_run *run = NULL;
    double batch[CAL_BATCHES], t;
    uint8_t *mem;
    uint32_t cost = 0;
    long run_size = 0;
    int kvm = -1, vm = -1, cpu = -1;

    mem = mmap(NULL, CAL_MEM, PROT_READ | PROT_WRITE,
               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED)
        return 0;
    memcpy(mem + CAL_CODE, loop, sizeof loop);
    r = (struct kvm_userspace_memory_region){ .slot = 0,
        .memory_size = CAL_MEM, .userspace_addr = (uint64_t)(uintptr_t)mem };
    if ((kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC)) < 0 ||
        (vm = ioctl(kvm, KVM_CREATE_VM, 0)) < 0 ||
        ioctl(vm, KVM_SET_USER_MEMORY_REGION, &r) < 0 ||
        ioctl(vm, KVM_SET_TSS_ADDR, 0xfffbd000u) < 0 ||
        (cpu = ioctl(vm, KVM_CREATE_VCPU, 0)) < 0 ||
        (run_size = ioctl(kvm, KVM_GET_VCPU_MMAP_SIZE, 0)) <= 0)
        goto out;
    run = mmap(NULL, (size_t)run_size, PROT_READ | PROT_WRITE, MAP_SHARED,
               cpu, 0);
    if (run == MAP_FAILED) {
        run = NULL;
        goto out;
    }
    /* Real mode at 0:CAL_CODE (the reset state but for CS). */
    if (ioctl(cpu, KVM_GET_SREGS, &sr) < 0)
        goto out;
    sr.cs.base = 0;
    sr.cs.selector = 0;
    if (ioctl(cpu, KVM_SET_SREGS, &sr) < 0 ||
        ioctl(cpu, KVM_SET_REGS, &regs) < 0)
        goto out;
    for (int i = 0; i < CAL_WARMUP; i++)
        if (one_exit(cpu, run))
            goto out;
    for (int b = 0; b < CAL_BATCHES; b++) {
        t = now_ns();
        for (int i = 0; i < CAL_BATCH; i++)
            if (one_exit(cpu, run))
                goto out;
        batch[b] = (now_ns() - t) / CAL_BATCH;
    }
    qsort(batch, CAL_BATCHES, sizeof batch[0], cmp_double);
    t = batch[CAL_BATCHES / 2];
    cost = t < 1 ? 1 : t > 1e9 ? 1000000000u : (uint32_t)(t + 0.5);
out:
    if (run)
        munmap(run, (size_t)run_size);
    if (cpu >= 0)
        close(cpu);
    if (vm >= 0)
        close(vm);
    if (kvm >= 0)
        close(kvm);
    munmap(mem, CAL_MEM);
    return cost;
}
