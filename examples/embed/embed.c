/* SPDX-License-Identifier: MIT */
/*
 * embed: the smallest KVM program that uses libcluster. A real-mode guest
 * prints a line through a 16550-style UART (poll LSR.THRE on 0x3fd, write
 * THR on 0x3f8). Every exit is offered to lc_kvm_handle_exit() first.
 *
 *   embed [--no-cluster]
 */
#include <fcntl.h>
#include <linux/kvm.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cluster/cluster.h>
#include <cluster/kvm.h>

static const uint8_t guest[] = {
    0xbe, 0x30, 0x10,       /* 1000: mov si, msg */
    0xba, 0xfd, 0x03,       /* 1003: mov dx, 0x3fd (LSR) */
    0xec,                   /* 1006: in al, dx */
    0xa8, 0x20,             /* 1007: test al, 0x20 (THRE) */
    0x74, 0xfb,             /* 1009: jz 1006 */
    0x8a, 0x04,             /* 100b: mov al, [si] */
    0x84, 0xc0,             /* 100d: test al, al */
    0x74, 0x0a,             /* 100f: jz 101b */
    0xba, 0xf8, 0x03,       /* 1011: mov dx, 0x3f8 (THR) */
    0xee,                   /* 1014: out dx, al */
    0x46,                   /* 1015: inc si */
    0xba, 0xfd, 0x03,       /* 1016: mov dx, 0x3fd */
    0xeb, 0xeb,             /* 1019: jmp 1006 */
    0xf4,                   /* 101b: hlt */
};
static const char msg[] = "Hello from inside a cluster!\n";   /* at 0x1030 */

static uint8_t *ram;

static void gpa_map(void *o, uint64_t gpa, int w, lc_gpa_map *m)
{
    (void)o; (void)w;
    memset(m, 0, sizeof *m);
    if (gpa < 0x10000) {
        m->kind = LC_GPA_RAM;
        m->hva = ram + gpa;
        m->span = 0x10000 - gpa;
    }
}

/* The UART: always ready; THR writes go to stdout. */
static lc_cb_result uart(void *o, uint16_t port, uint8_t size, int w,
                         uint32_t *v)
{
    (void)o; (void)size;
    if (w && port == 0x3f8)
        putchar((int)(*v & 0xff));
    else if (!w)
        *v = port == 0x3fd ? 0x60 : 0;
    return LC_CB_OK;
}

static const lc_vm_ops ops = { .size = sizeof ops, .gpa_map = gpa_map,
                               .pio = uart };

int main(int argc, char **argv)
{
    int cluster = !(argc > 1 && !strcmp(argv[1], "--no-cluster"));
    int kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC), vm, vcpu;
    struct kvm_userspace_memory_region region;
    struct kvm_sregs sregs;
    struct kvm_regs regs = { .rip = 0x1000, .rflags = 2 };
    struct kvm_run *run;
    lc_kvm_caps caps;
    lc_engine *engine = NULL;
    lc_vcpu *ctx = NULL;
    lc_kvm_vcpu *kv = NULL;
    unsigned exits = 0;

    if (kvm < 0 || (vm = ioctl(kvm, KVM_CREATE_VM, 0)) < 0) {
        perror("embed: /dev/kvm");
        return 1;
    }
    ram = mmap(NULL, 0x10000, PROT_READ | PROT_WRITE,
               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    memcpy(ram + 0x1000, guest, sizeof guest);
    memcpy(ram + 0x1030, msg, sizeof msg);
    region = (struct kvm_userspace_memory_region){
        .memory_size = 0x10000, .userspace_addr = (uint64_t)(uintptr_t)ram };
    vcpu = ioctl(vm, KVM_CREATE_VCPU, 0);
    run = mmap(NULL, (size_t)ioctl(kvm, KVM_GET_VCPU_MMAP_SIZE, 0),
               PROT_READ | PROT_WRITE, MAP_SHARED, vcpu, 0);
    if (ioctl(vm, KVM_SET_USER_MEMORY_REGION, &region) < 0 || vcpu < 0 ||
        run == MAP_FAILED || ioctl(vcpu, KVM_GET_SREGS, &sregs) < 0) {
        perror("embed: KVM setup");
        return 1;
    }
    sregs.cs.base = 0;
    sregs.cs.selector = 0;
    ioctl(vcpu, KVM_SET_SREGS, &sregs);
    ioctl(vcpu, KVM_SET_REGS, &regs);

    /* libcluster: one engine per VM, one context per vCPU, the adapter. */
    if (cluster && (lc_kvm_probe(&caps) != LC_OK ||
                    lc_engine_create(NULL, &ops, &engine) != LC_OK ||
                    lc_vcpu_create(engine, 0, NULL, &ctx) != LC_OK ||
                    lc_kvm_vcpu_attach(ctx, vcpu, run, &caps, &kv) != LC_OK)) {
        fprintf(stderr, "embed: libcluster setup failed\n");
        return 1;
    }

    for (;;) {
        lc_result res;
        uint8_t *data = (uint8_t *)run + run->io.data_offset;
        uint32_t v = 0;

        if (ioctl(vcpu, KVM_RUN, 0) < 0) {
            perror("embed: KVM_RUN");
            return 1;
        }
        exits++;
        if (kv && lc_kvm_handle_exit(kv, &res) == LC_OK &&
            res.disposition == LC_HANDLED)
            continue;                   /* done by the engine */
        if (run->exit_reason == KVM_EXIT_HLT)
            break;
        if (run->exit_reason != KVM_EXIT_IO) {
            fprintf(stderr, "embed: unexpected exit %u\n", run->exit_reason);
            return 1;
        }
        memcpy(&v, data, run->io.size);
        uart(NULL, run->io.port, run->io.size,
             run->io.direction == KVM_EXIT_IO_OUT, &v);
        memcpy(data, &v, run->io.size);
    }
    fflush(stdout);
    fprintf(stderr, "embed: %u exits (%s)\n", exits,
            cluster ? "with libcluster" : "without libcluster");
    lc_kvm_vcpu_detach(kv);
    lc_vcpu_destroy(ctx);
    lc_engine_destroy(engine);
    return 0;
}
