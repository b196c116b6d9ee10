/* SPDX-License-Identifier: MIT */
/*
 * tests/kvm/test_kvm_adapter.c: the KVM adapter on real KVM.
 *
 * A real-mode guest runs the paper's BIOS pattern in a loop (OUT 0xcf8,
 * OUT 0xed, gap fillers, IN 0xcfc) 50 times, then HLT; the loop's head is
 * the first OUT, so once translated (anchored on that OUT) the remaining
 * iterations run inside one exit through the strong backedge. The same
 * minimal VMM loop runs it twice: handling every exit itself, and with
 * lc_kvm_handle_exit() first. The ordered device log and the final
 * registers must be identical; the exits must drop.
 *
 * A second guest reads a port and then meets a terminator (RDTSC) on
 * every iteration: running ahead of that IN saves nothing, so after
 * learning the site the adapter must decline it at once instead of
 * paying the completion KVM_RUN each time (lc_kvm_stats), with the same
 * log and registers. A third guest stores 16-bit values as MMIO pairs
 * (section 3); with only pairs enabled, every second store must run in
 * the first one's exit, although KVM reports the first with RIP already
 * past it. Exit code 77 (skip) with the reason when /dev/kvm is not
 * usable.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cluster/cluster.h>
#include <cluster/kvm.h>

#include "fakevm.h"

#define MEM 0x10000
#define ITER 50

static const uint8_t guest[] = {
    0xb9, ITER, 0x00,                   /* 1000: mov cx, ITER */
    0x66, 0xb8, 0x10, 0x00, 0x00, 0x80, /* 1003: mov eax, 0x80000010 */
    0xba, 0xf8, 0x0c,                   /* 1009: mov dx, 0xcf8 */
    0x66, 0xef,                         /* 100c: out dx, eax  <- loop */
    0xe6, 0xed,                         /* 100e: out 0xed, al */
    0xba, 0xfc, 0x0c,                   /* 1010: mov dx, 0xcfc */
    0x88, 0xc8,                         /* 1013: mov al, cl */
    0x24, 0x03,                         /* 1015: and al, 3 */
    0x00, 0xc2,                         /* 1017: add dl, al */
    0xec,                               /* 1019: in al, dx */
    0x00, 0xc3,                         /* 101a: add bl, al */
    0xba, 0xf8, 0x0c,                   /* 101c: mov dx, 0xcf8 */
    0x66, 0xb8, 0x10, 0x00, 0x00, 0x80, /* 101f: mov eax, 0x80000010 */
    0x49,                               /* 1025: dec cx */
    0x75, 0xe4,                         /* 1026: jnz 100c */
    0xf4,                               /* 1028: hlt */
};

/* IN, then a terminator, in a loop: nothing to run ahead. */
static const uint8_t guest_skip[] = {
    0xb9, ITER, 0x00,                   /* 1000: mov cx, ITER */
    0xba, 0x60, 0x00,                   /* 1003: mov dx, 0x60  <- loop */
    0xec,                               /* 1006: in al, dx */
    0x00, 0xc3,                         /* 1007: add bl, al */
    0x0f, 0x31,                         /* 1009: rdtsc (a terminator) */
    0x49,                               /* 100b: dec cx */
    0x75, 0xf5,                         /* 100c: jnz 1003 */
    0xf4,                               /* 100e: hlt */
};

/* A read at the loop head whose port moves each iteration: when a run
 * ends back at the head, the adapter must complete KVM's pending IN with
 * a read of the port DX names now, not the one the first exit named. */
static const uint8_t guest_port_moves[] = {
    0xb9, ITER, 0x00,                   /* 1000: mov cx, ITER */
    0xba, 0x60, 0x00,                   /* 1003: mov dx, 0x60 */
    0xec,                               /* 1006: in al, dx  <- loop */
    0x00, 0xc3,                         /* 1007: add bl, al */
    0x42,                               /* 1009: inc dx */
    0x80, 0xe2, 0x63,                   /* 100a: and dl, 0x63 */
    0x49,                               /* 100d: dec cx */
    0x75, 0xf6,                         /* 100e: jnz 1006 */
    0xf4,                               /* 1010: hlt */
};

/* A 32-bit MMIO read across a page boundary: KVM asks for it in two
 * pieces, two exits. Completing the first (immediate_exit) stops at the
 * second: the adapter must hand that exit back, not call it handled. */
static const uint8_t guest_split_read[] = {
    0xb9, ITER, 0x00,                   /* 1000: mov cx, ITER */
    0xb8, 0x00, 0x20,                   /* 1003: mov ax, 0x2000 */
    0x8e, 0xd8,                         /* 1006: mov ds, ax */
    0x66, 0xa1, 0xfe, 0x0f,             /* 1008: mov eax, [0xffe] <- loop */
    0x66, 0x01, 0xc3,                   /* 100c: add ebx, eax */
    0x49,                               /* 100f: dec cx */
    0x75, 0xf6,                         /* 1010: jnz 1008 */
    0xf4,                               /* 1012: hlt */
};

/* An exit pair (paper section 3): two adjacent 16-bit MMIO stores, high
 * half first, in a loop. This KVM reports MMIO writes with RIP already
 * past the store, so the pair can only form if the adapter finds where
 * the first store began (store_start in libcluster/kvm.c). */
#define MMIO_SEG 0x2000                 /* DS base 0x20000: no memory slot */
static const uint8_t guest_pair[] = {
    0xb9, ITER, 0x00,                   /* 1000: mov cx, ITER */
    0xb8, 0x00, 0x20,                   /* 1003: mov ax, 0x2000 */
    0x8e, 0xd8,                         /* 1006: mov ds, ax */
    0x89, 0x36, 0x02, 0x00,             /* 1008: mov [2], si  <- loop */
    0x89, 0x1e, 0x00, 0x00,             /* 100c: mov [0], bx */
    0x46,                               /* 1010: inc si */
    0x43,                               /* 1011: inc bx */
    0x49,                               /* 1012: dec cx */
    0x75, 0xf3,                         /* 1013: jnz 1008 */
    0xf4,                               /* 1015: hlt */
};

/* The devices both runs use are the shared fake VMM's over the KVM
 * memory slot (tests/common/fakevm.h), with reads answering a running
 * counter (fresh_reads), so any reordering or extra/missing access shows
 * in the log and in what the guest computes. Without the adapter the
 * loop below calls its callbacks itself; with it libcluster calls them,
 * only the device ones (the engine stops before anything else). */
typedef struct vmm {
    int kvm, vm, vcpu;
    struct kvm_run *run;
    size_t run_size;
    uint8_t *mem;
    unsigned exits;
    fvm f;
} vmm;

static const lc_vm_ops ops = { FVM_OPS_DEVICES };

static int vmm_open(vmm *m, const uint8_t *code, size_t len)
{
    struct kvm_userspace_memory_region r;
    struct kvm_sregs s;
    struct kvm_regs g;

    memset(m, 0, sizeof *m);
    m->kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
    if (m->kvm < 0)
        return -1;
    m->vm = ioctl(m->kvm, KVM_CREATE_VM, 0);
    m->mem = mmap(NULL, MEM, PROT_READ | PROT_WRITE,
                  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m->vm < 0 || m->mem == MAP_FAILED)
        return -1;
    fvm_init_layout(&m->f, m->mem, MEM, MMIO_SEG * 16u, 0x1000);
    m->f.fresh_reads = 1;
    memcpy(m->mem + 0x1000, code, len);
    r = (struct kvm_userspace_memory_region){ 0, 0, 0, MEM,
                                              (uint64_t)(uintptr_t)m->mem };
    if (ioctl(m->vm, KVM_SET_USER_MEMORY_REGION, &r) < 0)
        return -1;
    m->vcpu = ioctl(m->vm, KVM_CREATE_VCPU, 0);
    m->run_size = (size_t)ioctl(m->kvm, KVM_GET_VCPU_MMAP_SIZE, 0);
    m->run = mmap(NULL, m->run_size, PROT_READ | PROT_WRITE, MAP_SHARED,
                  m->vcpu, 0);
    if (m->vcpu < 0 || m->run == MAP_FAILED)
        return -1;
    if (ioctl(m->vcpu, KVM_GET_SREGS, &s) < 0)
        return -1;
    s.cs.base = 0;
    s.cs.selector = 0;
    if (ioctl(m->vcpu, KVM_SET_SREGS, &s) < 0)
        return -1;
    memset(&g, 0, sizeof g);
    g.rip = 0x1000;
    g.rflags = 2;
    return ioctl(m->vcpu, KVM_SET_REGS, &g);
}

static void vmm_close(vmm *m)
{
    munmap(m->run, m->run_size);
    munmap(m->mem, MEM);
    close(m->vcpu);
    close(m->vm);
    close(m->kvm);
}

/* Run to HLT; with `kv`, offer every exit to the adapter first. */
static int vmm_run(vmm *m, lc_kvm_vcpu *kv, struct kvm_regs *final)
{
    for (unsigned guard = 0; guard < 10000; guard++) {
        lc_result res;
        if (ioctl(m->vcpu, KVM_RUN, 0) < 0)
            return -1;
        m->exits++;
        if (kv && lc_kvm_handle_exit(kv, &res) == LC_OK &&
            res.disposition == LC_HANDLED)
            continue;
        switch (m->run->exit_reason) {
        case KVM_EXIT_HLT:
            return ioctl(m->vcpu, KVM_GET_REGS, final);
        case KVM_EXIT_IO: {
            uint8_t *d = (uint8_t *)m->run + m->run->io.data_offset;
            uint32_t v = 0;
            if (m->run->io.count != 1)
                return -1;
            memcpy(&v, d, m->run->io.size);
            if (fvm_pio(&m->f, m->run->io.port, m->run->io.size,
                        m->run->io.direction == KVM_EXIT_IO_OUT,
                        &v) != LC_CB_OK)
                return -1;
            if (m->run->io.direction == KVM_EXIT_IO_IN)
                memcpy(d, &v, m->run->io.size);
            break;
        }
        case KVM_EXIT_MMIO: {
            uint64_t v = 0;
            if (m->run->mmio.len > 4)
                return -1;
            memcpy(&v, m->run->mmio.data, m->run->mmio.len);
            if (fvm_mmio(&m->f, m->run->mmio.phys_addr, m->run->mmio.len,
                         m->run->mmio.is_write, &v) != LC_CB_OK)
                return -1;
            if (!m->run->mmio.is_write)
                memcpy(m->run->mmio.data, &v, m->run->mmio.len);
            break;
        }
        default:
            fprintf(stderr, "unexpected exit %u\n", m->run->exit_reason);
            return -1;
        }
    }
    return -1;
}

/* Run `code` without and with the adapter; compare the device logs and
 * the registers the guest computes (`all_regs`: also RAX/RDX, which RDTSC
 * makes differ). Returns nonzero on failure. */
static int compare(const char *name, const uint8_t *code, size_t len,
                   const lc_kvm_caps *caps, const lc_config *cfg,
                   unsigned want_accesses,
                   int all_regs, vmm *plain, vmm *fast, lc_stats *stats,
                   lc_kvm_stats *kstats)
{
    struct kvm_regs r1, r2;
    lc_engine *e;
    lc_vcpu *v;
    lc_kvm_vcpu *kv;
    int fail = 0;

    if (vmm_open(plain, code, len) < 0 || vmm_run(plain, NULL, &r1) < 0) {
        printf("%s: plain run failed: %s\n", name, strerror(errno));
        return 1;
    }
    if (vmm_open(fast, code, len) < 0 ||
        lc_engine_create(cfg, &ops, &e) != LC_OK ||
        lc_vcpu_create(e, 0, &fast->f, &v) != LC_OK ||
        lc_kvm_vcpu_attach(v, fast->vcpu, fast->run, caps, &kv) != LC_OK ||
        vmm_run(fast, kv, &r2) < 0) {
        printf("%s: adapter run failed: %s\n", name, strerror(errno));
        return 1;
    }
    lc_vcpu_get_stats(v, stats);
    lc_kvm_vcpu_get_stats(kv, kstats);
    printf("%s: exits: %u without the adapter, %u with it (%llu saved, "
           "%llu translations, %llu completions, %llu exits skipped)\n",
           name, plain->exits, fast->exits,
           (unsigned long long)stats->exits_saved,
           (unsigned long long)stats->translations,
           (unsigned long long)kstats->completions,
           (unsigned long long)kstats->exits_skipped);
    if (!fvm_log_equal(&plain->f, &fast->f)) {
        printf("FAIL: %s: device logs differ (%u vs %u accesses)\n", name,
               plain->f.nlog, fast->f.nlog);
        fail = 1;
    }
    if (plain->f.nlog != want_accesses) {
        printf("FAIL: %s: %u device accesses, want %u\n", name,
               plain->f.nlog, want_accesses);
        fail = 1;
    }
    if (r1.rip != r2.rip || r1.rbx != r2.rbx || r1.rcx != r2.rcx ||
        (all_regs && (r1.rax != r2.rax || r1.rdx != r2.rdx ||
                      r1.rflags != r2.rflags))) {
        printf("FAIL: %s: final registers differ (rip %llx/%llx rbx "
               "%llx/%llx)\n", name, (unsigned long long)r1.rip,
               (unsigned long long)r2.rip, (unsigned long long)r1.rbx,
               (unsigned long long)r2.rbx);
        fail = 1;
    }
    lc_kvm_vcpu_detach(kv);
    lc_vcpu_destroy(v);
    lc_engine_destroy(e);
    vmm_close(plain);
    vmm_close(fast);
    return fail;
}

int main(void)
{
    lc_kvm_caps caps;
    lc_status st = lc_kvm_probe(&caps);
    char desc[300];
    vmm plain, fast;
    lc_stats stats;
    lc_kvm_stats ks;
    int fail;

    if (st == LC_ERR_UNSUPPORTED) {
        printf("SKIP: KVM not usable here (/dev/kvm: %s)\n", strerror(errno));
        return 77;
    }
    if (st != LC_OK) {
        printf("probe failed: %s (%s)\n", lc_strerror(st), strerror(errno));
        return 1;
    }
    printf("probe: %s\n", lc_kvm_caps_describe(&caps, desc, sizeof desc));

    fail = compare("bios loop", guest, sizeof guest, &caps, NULL, 3 * ITER, 1,
                   &plain, &fast, &stats, &ks);
    if (!fail && fast.exits * 2 > plain.exits) {
        printf("FAIL: the adapter did not halve the exits\n");
        fail = 1;
    }

    if (compare("read then terminator", guest_skip, sizeof guest_skip,
                &caps, NULL, ITER, 0, &plain, &fast, &stats, &ks))
        fail = 1;
    else if (!caps.cancel_in && !caps.in_rip_past &&
             (ks.exits_skipped < ITER - 10 || ks.completions > 10)) {
        /* a kernel that completes IN only on entry: the site must be
         * learnt as worthless and then skipped */
        printf("FAIL: the adapter kept paying completions for nothing\n");
        fail = 1;
    }
    if (compare("read whose port moves", guest_port_moves,
                sizeof guest_port_moves, &caps, NULL, ITER, 1, &plain, &fast,
                &stats, &ks))
        fail = 1;
    if (compare("mmio read across pages", guest_split_read,
                sizeof guest_split_read, &caps, NULL, 2 * ITER, 1, &plain,
                &fast, &stats, &ks))
        fail = 1;
    /* Pairs alone (no static clusters, no tracking predictions): only the
     * pair can save the second store's exit. */
    lc_config pairs_only;
    lc_config_init(&pairs_only);
    pairs_only.techniques = LC_TECH_SINGLE | LC_TECH_PAIRS;
    if (compare("mmio store pairs", guest_pair, sizeof guest_pair, &caps,
                &pairs_only, 2 * ITER, 1, &plain, &fast, &stats, &ks))
        fail = 1;
    else if (stats.exits_saved < ITER - 5) {
        printf("FAIL: the pairs saved %llu exits of %u\n",
               (unsigned long long)stats.exits_saved, ITER);
        fail = 1;
    }
    printf("%s\n", fail ? "FAIL" : "ok: identical device logs and registers");
    return fail;
}
