/* SPDX-License-Identifier: MIT */
/*
 * The KVM back end: VM and vCPUs, the in-kernel irqchip and PIT, the
 * coalesced ring for latch-only NIC registers, and the vCPU loop (one
 * switch on exit_reason, as kvmtool's kvm-cpu.c).
 *
 * Every exit is first offered to libcluster through the ready adapter
 * (lc_kvm_handle_exit): if the engine handled it, the loop simply
 * re-enters KVM_RUN. On these machines an exit costs about 8 us and any
 * other vCPU ioctl about 5 us (docs/kvm.md), so nothing on the exit path
 * issues an ioctl besides KVM_RUN itself; KVM_IRQ_LINE (a VM ioctl) is
 * issued only by device interrupts.
 *
 * With -c N the VM has N vCPUs, each on a thread of its own (vCPU 0 on
 * the main thread), each with its own libcluster context (lc_vcpu) on the
 * one engine. vCPUs other than 0 start, as on a PC, in the wait-for-SIPI
 * state of the in-kernel local APIC: the guest starts them with INIT and
 * STARTUP IPIs (examples/guests/smp). When the VM stops, every vCPU is
 * kicked out of KVM_RUN by a signal whose handler sets its own
 * kvm_run->immediate_exit (the pattern of the KVM API documentation,
 * section on immediate_exit): no thread writes another vCPU's kvm_run.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <cluster/kvm.h>

#include "kvm_stats.h"
#include "vmm.h"

#define TSS_ADDR 0xfffbd000u

typedef struct kvm_vcpu_ctx {
    vmm_vcpu core;
    int fd;
    struct kvm_run *run;
    size_t run_size;
    struct kvm_coalesced_mmio_ring *ring;
    lc_kvm_vcpu *kv;
    kvm_stats ks;                   /* KVM's own counters of this vCPU */
    uint64_t ks_start[KVM_STAT_COUNT_];
    pthread_t thread;
    bool started;                   /* thread is a vCPU thread (under
                                     * vm->kick_lock once the VM runs) */
} kvm_vcpu_ctx;

typedef struct kvm_vm {
    int kvm, fd;
    kvm_vcpu_ctx cpu[VMM_MAX_VCPUS];
    unsigned ncpu;
    lc_kvm_caps caps;
    bool coalesced;
    struct kvm_coalesced_mmio_zone zones[16];
    unsigned nzones;
    unsigned zones_gen;             /* vmm_devices_coalesced_gen() */
    vmm_ram_range direct[4];        /* device pages in memory slots */
    unsigned ndirect;
    unsigned map_applied;           /* vmm_map_gen() the slots and zones
                                     * follow */
    /* The coalesced ring is the VM's (one page, seen through every vCPU's
     * kvm_run mapping): the vCPUs drain it at each exit and the I/O
     * thread on its tick (vm->io_drain), one at a time, in order. */
    pthread_mutex_t ring_lock;
    /* zones[], nzones, zones_gen: re-registered by whichever vCPU finds
     * the map changed, one at a time */
    pthread_mutex_t zones_lock;
} kvm_vm;

bool vmm_kvm_available(char *why, size_t len)
{
    int fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        snprintf(why, len, "/dev/kvm: %s", strerror(errno));
        return false;
    }
    int api = ioctl(fd, KVM_GET_API_VERSION, 0);
    close(fd);
    if (api != KVM_API_VERSION) {
        snprintf(why, len, "/dev/kvm: API version %d, need %d", api,
                 KVM_API_VERSION);
        return false;
    }
    return true;
}

static void kvm_irq_line(void *opaque, unsigned gsi, int level)
{
    kvm_vm *k = opaque;
    struct kvm_irq_level l = { .irq = gsi, .level = (uint32_t)level };
    if (ioctl(k->fd, KVM_IRQ_LINE, &l) < 0)
        perror("lcvmm: KVM_IRQ_LINE");
}

/* ---- the coalesced ring (Sugerman et al. section 3.3: latch-only
 * accesses never leave the fast path) ---------------------------------- */

/* ---- device pages as memory (vmm_device_ops.direct) ------------------ */

/* Slots after the firmware's (firmware.h: FW_SLOT_ROM_BAR is the last) */
#define KVM_DIRECT_SLOT0 32

/* Map the devices' direct pages as they are now: every slot of the last
 * call removed, the current ones installed (the map changed: a BAR moved,
 * decoding turned on or off, a reboot built the devices anew). A page
 * KVM refuses (it would overlap a slot) stays on the bus, where its
 * device serves it with the same semantics. Under zones_lock. */
static void direct_set(kvm_vm *k, vmm *vm)
{
    vmm_ram_range r[4];
    unsigned n, i;

    for (i = 0; i < k->ndirect; i++)
        vmm_kvm_set_slot(&k->fd, KVM_DIRECT_SLOT0 + i, k->direct[i].gpa, 0,
                         NULL, false);
    k->ndirect = 0;
    n = vmm_devices_direct(vm, r, 4);
    for (i = 0; i < n; i++) {
        if (vmm_kvm_set_slot(&k->fd, KVM_DIRECT_SLOT0 + k->ndirect, r[i].gpa,
                             r[i].len, r[i].hva, false) < 0) {
            fprintf(stderr, "lcvmm: device page %#llx+%#llx as memory: %s "
                    "(served by the device instead)\n",
                    (unsigned long long)r[i].gpa,
                    (unsigned long long)r[i].len, strerror(errno));
            continue;
        }
        k->direct[k->ndirect++] = r[i];
        VMM_STAT_INC(vm->stats.direct_maps);
    }
}

/* Has the map changed since the zones and slots were set? */
static bool map_stale(kvm_vm *k, vmm *vm)
{
    return vmm_map_gen(vm) != __atomic_load_n(&k->map_applied,
                                              __ATOMIC_ACQUIRE);
}

/* The coalesced zones as the devices want them now, and with `moved`
 * (the map changed) the direct pages too. */
static void zones_set(kvm_vm *k, vmm *vm, bool moved)
{
    vmm_io_range r[16];
    unsigned n, i;

    pthread_mutex_lock(&k->zones_lock);
    if (moved) {
        unsigned gen = vmm_map_gen(vm);     /* a later change: stale again */
        direct_set(k, vm);
        __atomic_store_n(&k->map_applied, gen, __ATOMIC_RELEASE);
    }
    for (i = 0; i < k->nzones; i++)
        ioctl(k->fd, KVM_UNREGISTER_COALESCED_MMIO, &k->zones[i]);
    k->nzones = 0;
    if (!k->coalesced) {
        pthread_mutex_unlock(&k->zones_lock);
        return;
    }
    pthread_mutex_lock(&vm->dev_lock);      /* the devices' policy state */
    __atomic_store_n(&k->zones_gen, vmm_devices_coalesced_gen(vm),
                     __ATOMIC_RELAXED);
    n = vmm_devices_coalesced(vm, r, 16);
    pthread_mutex_unlock(&vm->dev_lock);
    for (i = 0; i < n; i++) {
        struct kvm_coalesced_mmio_zone z = {
            .addr = r[i].base, .size = (uint32_t)r[i].len,
            .pio = !r[i].mmio };
        if (ioctl(k->fd, KVM_REGISTER_COALESCED_MMIO, &z) == 0)
            k->zones[k->nzones++] = z;
        else
            fprintf(stderr, "lcvmm: coalesced zone %#llx+%u: %s\n",
                    (unsigned long long)z.addr, z.size, strerror(errno));
    }
    pthread_mutex_unlock(&k->zones_lock);
}

/* Replay the latch writes KVM queued, in order, before anything else of
 * this exit is handled. */
static void ring_drain(kvm_vcpu_ctx *c)
{
    struct kvm_coalesced_mmio_ring *ring = c->ring;
    vmm *vm = c->core.vm;
    unsigned max = (unsigned)((4096 - sizeof *ring) /
                              sizeof(struct kvm_coalesced_mmio));

    if (!ring)
        return;
    pthread_mutex_lock(&((kvm_vm *)vm->cpu)->ring_lock);
    while (ring->first != ring->last) {
        if (ring->first >= max || ring->last >= max) {
            vmm_request_stop(vm, LCVMM_EXIT_ERROR,
                             "coalesced ring indices out of range");
            break;
        }
        struct kvm_coalesced_mmio *m = &ring->coalesced_mmio[ring->first];
        uint64_t v = 0;
        unsigned len = m->len <= 8 ? m->len : 8;
        memcpy(&v, m->data, len);
        bus_access(m->pio ? &vm->pio : &vm->mmio, m->phys_addr, len, true,
                   &v);
        VMM_STAT_INC(vm->stats.coalesced_drained);
        __atomic_store_n(&ring->first, (ring->first + 1) % max,
                         __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&((kvm_vm *)vm->cpu)->ring_lock);
}

/* vm->io_drain: the I/O thread's tick replays what the guest wrote into
 * the coalesced zones since its last exit (an e1000 RDT giving back
 * receive descriptors while a frame waits for them). */
static void io_drain(vmm *vm)
{
    ring_drain(&((kvm_vm *)vm->cpu)->cpu[0]);
}

/* ---- exits the engine declined ----------------------------------------- */

static void handle_io(kvm_vcpu_ctx *c)
{
    struct kvm_run *run = c->run;
    vmm *vm = c->core.vm;
    uint8_t *data = (uint8_t *)run + run->io.data_offset;
    unsigned size = run->io.size;

    if (size != 1 && size != 2 && size != 4) {
        vmm_request_stop(vm, LCVMM_EXIT_ERROR,
                         "KVM reported port I/O of %u bytes", size);
        return;
    }
    if (run->io.data_offset + (uint64_t)size * run->io.count > c->run_size) {
        vmm_request_stop(vm, LCVMM_EXIT_ERROR,
                         "KVM port I/O data outside kvm_run");
        return;
    }
    for (uint32_t i = 0; i < run->io.count; i++, data += size) {
        uint64_t v = 0;
        bool w = run->io.direction == KVM_EXIT_IO_OUT;
        if (w)
            memcpy(&v, data, size);
        bus_access(&vm->pio, run->io.port, size, w, &v);
        if (!w)
            memcpy(data, &v, size);
    }
}

static void handle_mmio(kvm_vcpu_ctx *c)
{
    struct kvm_run *run = c->run;
    uint64_t v = 0;
    unsigned len = run->mmio.len;

    if (len != 1 && len != 2 && len != 4 && len != 8) {
        vmm_request_stop(c->core.vm, LCVMM_EXIT_ERROR,
                         "KVM reported MMIO of %u bytes", len);
        return;
    }
    if (run->mmio.is_write)
        memcpy(&v, run->mmio.data, len);
    bus_access(&c->core.vm->mmio, run->mmio.phys_addr, len,
               run->mmio.is_write, &v);
    if (!run->mmio.is_write)
        memcpy(run->mmio.data, &v, len);
}

static void dump_regs(kvm_vcpu_ctx *c)
{
    struct kvm_regs r;
    if (ioctl(c->fd, KVM_GET_REGS, &r) == 0)
        fprintf(stderr, "lcvmm: vcpu%u rip=%#llx rsp=%#llx rax=%#llx "
                "rflags=%#llx\n", c->core.id, (unsigned long long)r.rip,
                (unsigned long long)r.rsp, (unsigned long long)r.rax,
                (unsigned long long)r.rflags);
}

/* Where the exiting instruction is, for the trace: CS base + RIP as KVM
 * left them (at the instruction, or past it: OUT and MMIO writes here,
 * docs/kvm.md), from the synchronized registers; VMM_PC_UNKNOWN when KVM
 * did not synchronize them (no KVM_CAP_SYNC_REGS). */
static uint64_t exit_pc(const struct kvm_run *run)
{
    const unsigned both = KVM_SYNC_X86_REGS | KVM_SYNC_X86_SREGS;
    const struct kvm_sregs *sr = &run->s.regs.sregs;

    if ((run->kvm_valid_regs & both) != both)
        return VMM_PC_UNKNOWN;
    return vmm_trace_pc(sr->cs.base, run->s.regs.regs.rip, sr->efer,
                        sr->cs.l);
}

static void cpu_loop(kvm_vcpu_ctx *c)
{
    vmm *vm = c->core.vm;
    struct kvm_run *run = c->run;

    while (!atomic_load(&vm->stop)) {
        lc_result res;

        if (c->core.id == 0)
            vmm_exit_done(vm);      /* the previous exit is complete */
        if (map_stale(vm->cpu, vm)) /* an exit moved a BAR: never enter
                                     * the guest on the old map */
            zones_set(vm->cpu, vm, true);
        if (ioctl(c->fd, KVM_RUN, 0) < 0) {
            if (errno == EINTR || errno == EAGAIN) {
                __atomic_store_n(&run->immediate_exit, 0, __ATOMIC_RELAXED);
                VMM_STAT_INC(vm->stats.exits_intr);
                continue;
            }
            vmm_request_stop(vm, LCVMM_EXIT_ERROR, "KVM_RUN: %s",
                             strerror(errno));
            break;
        }
        VMM_STAT_INC(vm->stats.exits_vcpu[c->core.id]);
        ring_drain(c);
        /* the firmware's vCPU (the BSP), while firmware runs (paging
         * off, where the sync regs say: an OS's ticks are not the BIOS
         * data area's, and its addresses not physical) */
        if (vm->fw && c->core.id == 0 &&
            (!(run->kvm_valid_regs & KVM_SYNC_X86_SREGS) ||
             !(run->s.regs.sregs.cr0 & LC_CR0_PG)))
            vmm_kvm_quirk_exit(vm, c->fd);
        bool pio = run->exit_reason == KVM_EXIT_IO,
             dev = pio || run->exit_reason == KVM_EXIT_MMIO;
        vmm_exit_begin(vm, dev ? (pio ? LC_EXIT_IO : LC_EXIT_MMIO) : 0);
        bool moved = map_stale(vm->cpu, vm);
        if (moved || vmm_devices_coalesced_gen(vm) !=
            __atomic_load_n(&((kvm_vm *)vm->cpu)->zones_gen, __ATOMIC_RELAXED))
            zones_set(vm->cpu, vm, moved);  /* the zones moved or changed */
        if (dev) {
            lc_exit ex;
            bool handled = false;
            /* described before the adapter sees it (it may complete the
             * exit and change kvm_run): for vmm_exit_end */
            lc_kvm_exit_from_run(run, NULL, &ex);
            uint64_t pc = exit_pc(run);
            if (c->kv) {
                c->core.irq_epoch_seen = atomic_load(&vm->irq_epoch);
                /* LC_HANDLED with an error: the run ended early, its
                 * state written; re-enter all the same (kvm.h) */
                (void)lc_kvm_handle_exit(c->kv, &res);
                handled = res.disposition == LC_HANDLED;
            }
            vmm_exit_end(vm, &ex, -1, pc, handled ? &res : NULL);
            if (handled)
                continue;
        }
        switch (run->exit_reason) {
        case KVM_EXIT_IO:
            handle_io(c);
            break;
        case KVM_EXIT_MMIO:
            handle_mmio(c);
            break;
        case KVM_EXIT_HLT:
            VMM_STAT_INC(vm->stats.exits_hlt);
            vmm_request_stop(vm, LCVMM_EXIT_OK, "guest halted");
            break;
        case KVM_EXIT_INTR:
            VMM_STAT_INC(vm->stats.exits_intr);
            break;
        case KVM_EXIT_DEBUG:            /* kvm_quirks.c's breakpoint */
            if (c->core.id != 0 || !vmm_kvm_quirk_debug(vm, c->fd))
                vmm_request_stop(vm, LCVMM_EXIT_CRASH, "unexpected "
                                 "KVM_EXIT_DEBUG");
            break;
        case KVM_EXIT_SHUTDOWN:
            /* a shutdown cycle: a PC's chipset answers it with a reset
             * (--reboot), else it is the guest's crash */
            if (!vm->opt.reboot)
                dump_regs(c);
            vmm_request_reset(vm, LCVMM_EXIT_CRASH,
                              "guest triple fault (KVM_EXIT_SHUTDOWN)");
            break;
        case KVM_EXIT_FAIL_ENTRY:
            vmm_request_stop(vm, LCVMM_EXIT_CRASH,
                             "KVM_EXIT_FAIL_ENTRY: reason %#llx",
                             (unsigned long long)
                             run->fail_entry.hardware_entry_failure_reason);
            break;
        case KVM_EXIT_INTERNAL_ERROR:
            /* this KVM's faults, worked around where the probe found
             * them (kvm_quirks.c) */
            if (vmm_kvm_quirk_fixup(vm, c->fd, run))
                break;
            dump_regs(c);
            vmm_request_stop(vm, LCVMM_EXIT_CRASH,
                             "KVM_EXIT_INTERNAL_ERROR: suberror %u",
                             run->internal.suberror);
            break;
        case KVM_EXIT_SYSTEM_EVENT:
            if (run->system_event.type == KVM_SYSTEM_EVENT_RESET)
                vmm_request_reset(vm, LCVMM_EXIT_OK, "guest system reset "
                                  "(KVM_SYSTEM_EVENT_RESET)");
            else
                vmm_request_stop(vm, LCVMM_EXIT_OK, "guest system event %u",
                                 run->system_event.type);
            break;
        default:
            VMM_STAT_INC(vm->stats.exits_other);
            vmm_request_stop(vm, LCVMM_EXIT_CRASH,
                             "unhandled KVM exit reason %u",
                             run->exit_reason);
            break;
        }
    }
}

/* The kvm_run of the vCPU this thread runs, for the kick's handler. */
static __thread struct kvm_run *kick_run;

/* SIGUSR1 on a vCPU thread: KVM_RUN returns -EINTR now if the thread is
 * in it, or at once when it enters it next (immediate_exit is polled at
 * entry); either way the loop then sees vm->stop. The handler runs on
 * the vCPU's own thread, so immediate_exit has one writer thread; an
 * atomic store because it is a signal handler. */
static void on_kick(int sig)
{
    struct kvm_run *r = kick_run;
    (void)sig;
    if (r)
        __atomic_store_n(&r->immediate_exit, 1, __ATOMIC_RELAXED);
}

static void vcpu_thread_loop(kvm_vcpu_ctx *c)
{
    kick_run = c->run;
    cpu_loop(c);
    kick_run = NULL;
}

static void *ap_thread(void *arg)
{
    vcpu_thread_loop(arg);
    return NULL;
}

/* vm->kick (under vm->kick_lock): signal every vCPU thread. */
static void kick_all(vmm *vm)
{
    kvm_vm *k = vm->cpu;

    for (unsigned i = 0; i < k->ncpu; i++)
        if (k->cpu[i].started && !pthread_equal(k->cpu[i].thread,
                                                pthread_self()))
            pthread_kill(k->cpu[i].thread, SIGUSR1);
}

/* ---- set-up ------------------------------------------------------------ */

static void seg_out(struct kvm_segment *d, const lc_segment *s)
{
    *d = (struct kvm_segment){
        .base = s->base, .limit = s->limit, .selector = s->selector,
        .type = s->type, .present = s->present, .dpl = s->dpl, .db = s->db,
        .s = s->s, .l = s->l, .g = s->g, .avl = s->avl,
        .unusable = s->unusable };
}

/* What KVM supports, with this vCPU's initial APIC ID where a PC's
 * firmware and OS read it: CPUID.01H:EBX[31:24] and CPUID.0BH:EDX (SDM
 * vol. 3A, 8.4.5 and 8.9.1); the in-kernel local APIC's ID is the vCPU
 * id, which KVM_CREATE_VCPU was given. */
static int setup_cpuid(kvm_vm *k, int vcpu_fd, unsigned id)
{
    int n = 128;
    struct kvm_cpuid2 *cp = calloc(1, sizeof *cp +
                                   (size_t)n * sizeof(struct kvm_cpuid_entry2));
    int rc = -1;
    if (!cp)
        return -1;
    cp->nent = (uint32_t)n;
    if (ioctl(k->kvm, KVM_GET_SUPPORTED_CPUID, cp) == 0) {
        for (uint32_t i = 0; i < cp->nent; i++) {
            struct kvm_cpuid_entry2 *e = &cp->entries[i];
            if (e->function == 1)
                e->ebx = (e->ebx & 0x00ffffffu) | id << 24;
            else if (e->function == 0xb)
                e->edx = id;
        }
        if (ioctl(vcpu_fd, KVM_SET_CPUID2, cp) == 0)
            rc = 0;
    }
    free(cp);
    return rc;
}

static int boot_cpu(kvm_vcpu_ctx *c, const vmm_boot *boot)
{
    struct kvm_sregs sr;
    struct kvm_regs r = { 0 };
    lc_cpu_state st;

    if (boot->reset)            /* a new vCPU is in the reset state */
        return 0;
    vmm_boot_state(boot, &st);
    if (ioctl(c->fd, KVM_GET_SREGS, &sr) < 0)
        return -1;
    seg_out(&sr.cs, &st.seg[LC_CS]);
    seg_out(&sr.ds, &st.seg[LC_DS]);
    seg_out(&sr.es, &st.seg[LC_ES]);
    seg_out(&sr.fs, &st.seg[LC_FS]);
    seg_out(&sr.gs, &st.seg[LC_GS]);
    seg_out(&sr.ss, &st.seg[LC_SS]);
    sr.gdt.base = st.gdtr.base;
    sr.gdt.limit = st.gdtr.limit;
    sr.cr0 = st.cr0;
    sr.cr4 = 0;
    sr.efer = 0;
    r.rip = st.rip;
    r.rax = st.gpr[LC_RAX];
    r.rbx = st.gpr[LC_RBX];
    r.rflags = st.rflags;
    if (ioctl(c->fd, KVM_SET_SREGS, &sr) < 0 ||
        ioctl(c->fd, KVM_SET_REGS, &r) < 0)
        return -1;
    return 0;
}

/* The guest's TSC for libcluster's rdtsc callback (vm.c): KVM computes
 * it as the host's TSC, scaled to the vCPU's frequency, plus the vCPU's
 * TSC offset (KVM API, "KVM_VCPU_TSC_OFFSET"). lcvmm never sets a
 * frequency (KVM_SET_TSC_KHZ), so the ratio is 1 and host TSC + offset
 * is exactly what the guest's own RDTSC reads, with no ioctl per RDTSC;
 * the offset is read once here, when the vCPU is made (at each boot with
 * --reboot). This host's software KVM keeps the offset at 0 and the guest
 * reads the host's TSC (docs/kvm.md, "RDTSC in clusters"). Without the
 * attribute RDTSC keeps ending clusters. A guest that writes IA32_TSC or
 * IA32_TSC_ADJUST changes the offset inside KVM, without an exit: on a
 * KVM that honours such writes, clusters would then read the old offset
 * (docs/kvm.md says so). */
static void tsc_offset_read(kvm_vcpu_ctx *c)
{
    uint64_t off = 0;
    struct kvm_device_attr a = { .group = KVM_VCPU_TSC_CTRL,
                                 .attr = KVM_VCPU_TSC_OFFSET,
                                 .addr = (uint64_t)(uintptr_t)&off };

    c->core.tsc_known = ioctl(c->fd, KVM_GET_DEVICE_ATTR, &a) == 0;
    c->core.tsc_offset = off;
}

/* --stats-interval: KVM's own counters of every vCPU since it was created
 * (the live thread's reader; vmm_stats_live_kvm). */
static void kvm_stats_now(vmm *vm, uint64_t v[KVM_STAT_COUNT_])
{
    kvm_vm *k = vm->cpu;

    /* with --reboot: the boots before this one, and this VM's vCPUs */
    for (unsigned s = 0; s < KVM_STAT_COUNT_; s++)
        v[s] = vm->stats.kvm[s];
    for (unsigned i = 0; i < k->ncpu; i++) {
        kvm_vcpu_ctx *c = &k->cpu[i];
        uint64_t now[KVM_STAT_COUNT_];
        if (c->ks.fd < 0)
            continue;
        kvm_stats_read(&c->ks, now);
        for (unsigned s = 0; s < KVM_STAT_COUNT_; s++)
            v[s] += now[s] - c->ks_start[s];
    }
}

#define FAIL(...) do { \
    vmm_request_stop(vm, LCVMM_EXIT_ERROR, __VA_ARGS__); goto out; } while (0)

/* Does an access of `size` bytes at `port` reach a device KVM emulates in
 * the kernel (and so never exits to us)? What vmm_kvm_run() creates:
 * KVM_CREATE_IRQCHIP's two 8259As (0x20-0x21, 0xa0-0xa1) and their edge/
 * level registers (0x4d0-0x4d1); KVM_CREATE_PIT2's 8254 (0x40-0x43) and,
 * with KVM_PIT_SPEAKER_DUMMY, port 0x61. */
bool vmm_kvm_port_in_kernel(uint16_t port, unsigned size)
{
    static const struct { uint16_t base, len; } dev[] = {
        { 0x20, 2 }, { 0xa0, 2 }, { 0x4d0, 2 }, { 0x40, 4 }, { 0x61, 1 },
    };
    uint32_t end = (uint32_t)port + (size ? size : 1);

    for (unsigned i = 0; i < sizeof dev / sizeof dev[0]; i++)
        if (port < dev[i].base + dev[i].len && end > dev[i].base)
            return true;
    return false;
}

int vmm_kvm_run(vmm *vm, const vmm_boot *boot)
{
    kvm_vm *k = calloc(1, sizeof *k);
    struct kvm_pit_config pit = { .flags = KVM_PIT_SPEAKER_DUMMY };
    struct kvm_userspace_memory_region mem;
    bool late_ticks = false;
    long mmap_size;
    int rc = -1;

    if (!k) {
        vmm_request_stop(vm, LCVMM_EXIT_ERROR, "out of memory");
        return -1;
    }
    for (unsigned i = 0; i < VMM_MAX_VCPUS; i++) {
        k->cpu[i].fd = -1;
        k->cpu[i].ks.fd = -1;
    }
    k->fd = -1;
    pthread_mutex_init(&k->ring_lock, NULL);
    pthread_mutex_init(&k->zones_lock, NULL);
    vm->cpu = k;
    k->kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
    if (k->kvm < 0)
        FAIL("/dev/kvm: %s", strerror(errno));
    k->fd = ioctl(k->kvm, KVM_CREATE_VM, 0);
    if (k->fd < 0)
        FAIL("KVM_CREATE_VM: %s", strerror(errno));
    /* with firmware, the TSS goes below 0xFF000000, under any BIOS image
     * (firmware.h) */
    if (ioctl(k->fd, KVM_SET_TSS_ADDR, vm->fw ? FW_TSS_ADDR : TSS_ADDR) < 0)
        FAIL("KVM_SET_TSS_ADDR: %s", strerror(errno));
    if (ioctl(k->fd, KVM_CREATE_IRQCHIP, 0) < 0)
        FAIL("KVM_CREATE_IRQCHIP: %s", strerror(errno));
    if (ioctl(k->fd, KVM_CREATE_PIT2, &pit) < 0)
        FAIL("KVM_CREATE_PIT2: %s", strerror(errno));
    mem = (struct kvm_userspace_memory_region){
        .slot = 0, .guest_phys_addr = 0, .memory_size = vm->ram_size,
        .userspace_addr = (uint64_t)(uintptr_t)vm->ram };
    if (vm->fw ? vmm_fw_map_install(vm, vmm_kvm_set_slot, &k->fd) :
        ioctl(k->fd, KVM_SET_USER_MEMORY_REGION, &mem) < 0)
        FAIL("KVM_SET_USER_MEMORY_REGION: %s", strerror(errno));
    k->coalesced = ioctl(k->kvm, KVM_CHECK_EXTENSION, KVM_CAP_COALESCED_PIO) > 0 &&
                   ioctl(k->kvm, KVM_CHECK_EXTENSION, KVM_CAP_COALESCED_MMIO) > 0;
    vm->irq = (vm_irq){ k, kvm_irq_line, 0 };

    if (vm->fw)
        late_ticks = vmm_kvm_quirks_probe(vm);
    if (vm->opt.lost_ticks == VMM_TICKS_DISCARD ||
        (vm->opt.lost_ticks == VMM_TICKS_AUTO && late_ticks)) {
        /* A tick due while the last is not acknowledged is dropped, not
         * counted. Where ticks come late (c), reinjected ones pile up and
         * arrive later in a burst that runs the guest's clock many times
         * fast (13 times over 1.5 s in an iPXE wait, docs/platform.md),
         * firing its time-outs early; dropped, they run it slow. KVM's
         * API documentation recommends this mode except for guests that
         * keep time by counting PIT ticks, as the BIOS does: for its
         * time-outs a slow clock is the lesser fault. Without the
         * capability, auto keeps KVM's default; discard asked for fails. */
        struct kvm_reinject_control rc = { .pit_reinject = 0 };
        if (ioctl(k->kvm, KVM_CHECK_EXTENSION, KVM_CAP_REINJECT_CONTROL) > 0) {
            if (ioctl(k->fd, KVM_REINJECT_CONTROL, &rc) < 0)
                FAIL("KVM_REINJECT_CONTROL: %s", strerror(errno));
            vm->stats.ticks_discarded = true;
        } else if (vm->opt.lost_ticks == VMM_TICKS_DISCARD) {
            FAIL("--lost-ticks discard: this KVM lacks "
                 "KVM_CAP_REINJECT_CONTROL");
        }
    }
    if (vm->opt.cluster) {
        /* once per process: the host's KVM does not change between the
         * VMs of --reboot (a probe makes a VM of its own) */
        static lc_kvm_caps caps;
        static bool probed;
        if (!probed) {
            lc_status s = lc_kvm_probe(&caps);
            if (s != LC_OK)
                FAIL("libcluster KVM probe: %s", lc_strerror(s));
            probed = true;
        }
        k->caps = caps;
    }
    mmap_size = ioctl(k->kvm, KVM_GET_VCPU_MMAP_SIZE, 0);
    if (mmap_size <= 0)
        FAIL("KVM_GET_VCPU_MMAP_SIZE: %s", strerror(errno));
    k->ncpu = vm->opt.vcpus;
    vmm_engine_vcpus_made(vm);
    for (unsigned i = 0; i < k->ncpu; i++) {
        kvm_vcpu_ctx *c = &k->cpu[i];
        c->core.vm = vm;
        c->core.id = i;
        c->fd = ioctl(k->fd, KVM_CREATE_VCPU, i);
        if (c->fd < 0)
            FAIL("KVM_CREATE_VCPU %u: %s", i, strerror(errno));
        c->run_size = (size_t)mmap_size;
        c->run = mmap(NULL, c->run_size, PROT_READ | PROT_WRITE, MAP_SHARED,
                      c->fd, 0);
        if (c->run == MAP_FAILED) {
            c->run = NULL;
            FAIL("mmap kvm_run: %s", strerror(errno));
        }
        if (k->coalesced)
            c->ring = (void *)((uint8_t *)c->run +
                               KVM_COALESCED_MMIO_PAGE_OFFSET * 4096);
        if (kvm_stats_open(&c->ks, c->fd))
            kvm_stats_read(&c->ks, c->ks_start);
        if (setup_cpuid(k, c->fd, i) < 0)
            FAIL("KVM_SET_CPUID2: %s", strerror(errno));
        if (i == 0 && boot_cpu(c, boot) < 0)
            FAIL("setting the boot state of vcpu0: %s", strerror(errno));
        tsc_offset_read(c);
        if (vm->engine) {
            if (lc_vcpu_create(vm->engine, i, &c->core, &c->core.lc) != LC_OK ||
                lc_kvm_vcpu_attach(c->core.lc, c->fd, c->run, &k->caps,
                                   &c->kv) != LC_OK)
                FAIL("libcluster: cannot attach to vcpu%u", i);
        } else if (vm->trace) {
            /* the trace's pc column without libcluster (--no-cluster),
             * where KVM can synchronize the registers (exit_pc()) */
            const unsigned want = KVM_SYNC_X86_REGS | KVM_SYNC_X86_SREGS;
            int r = ioctl(k->kvm, KVM_CHECK_EXTENSION, KVM_CAP_SYNC_REGS);
            if (r > 0 && ((unsigned)r & want) == want)
                c->run->kvm_valid_regs |= want;
        }
    }
    zones_set(k, vm, true);
    if (k->coalesced)
        __atomic_store_n(&vm->io_drain, io_drain, __ATOMIC_RELEASE);

    /* APs wait for INIT/SIPI inside KVM_RUN (in-kernel local APIC); the
     * kick (SIGUSR1, on_kick) gets any vCPU out when the VM stops. The
     * handler is installed without SA_RESTART: KVM_RUN returns EINTR. */
    struct sigaction sa = { .sa_handler = on_kick };
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, NULL);
    pthread_mutex_lock(&vm->kick_lock);
    k->cpu[0].thread = pthread_self();
    k->cpu[0].started = true;
    vm->kick = kick_all;
    pthread_mutex_unlock(&vm->kick_lock);
    for (unsigned i = 1; i < k->ncpu; i++) {
        pthread_t t;
        pthread_mutex_lock(&vm->kick_lock);
        bool ok = pthread_create(&t, NULL, ap_thread, &k->cpu[i]) == 0;
        if (ok) {
            char name[32];      /* the kernel keeps 15 bytes: i < 8 */
            snprintf(name, sizeof name, "vcpu%u/KVM", i);
            (void)pthread_setname_np(t, name);
            k->cpu[i].thread = t;
            k->cpu[i].started = true;
        }
        pthread_mutex_unlock(&vm->kick_lock);
        if (!ok)
            FAIL("cannot start the thread of vcpu%u", i);
    }
    if (k->cpu[0].ks.fd >= 0)
        vmm_stats_live_kvm(vm, kvm_stats_now);
    vcpu_thread_loop(&k->cpu[0]);
    rc = 0;
out:
    /* the I/O thread may drain the ring: it ends before the ring goes */
    vmm_io_stop(vm);
    __atomic_store_n(&vm->io_drain, NULL, __ATOMIC_RELEASE);
    /* vm->stop is set (a FAIL above sets it too); the kick that set it
     * went to every started thread, and one more cannot hurt. After this
     * nobody kicks: the threads are joined and k goes. */
    pthread_mutex_lock(&vm->kick_lock);
    vm->kick = NULL;
    pthread_mutex_unlock(&vm->kick_lock);
    for (unsigned i = 1; i < VMM_MAX_VCPUS; i++) {
        if (!k->cpu[i].started)
            continue;
        pthread_kill(k->cpu[i].thread, SIGUSR1);
        pthread_join(k->cpu[i].thread, NULL);
    }
    /* the live statistics' last interval, before KVM's counters go; for
     * a reboot they go on, without this VM's counters until the next
     * VM's are there (vm->stats.kvm takes this VM's below) */
    if (vmm_reset_pending(vm))
        vmm_stats_live_kvm(vm, NULL);
    else
        vmm_stats_live_stop(vm);
    vmm_engine_vcpus_gone(vm);
    for (unsigned i = 0; i < VMM_MAX_VCPUS; i++) {
        kvm_vcpu_ctx *c = &k->cpu[i];
        lc_kvm_stats ks;
        if (c->fd >= 0 && c->ks.fd >= 0) {
            uint64_t now[KVM_STAT_COUNT_];
            kvm_stats_read(&c->ks, now);
            for (unsigned s = 0; s < KVM_STAT_COUNT_; s++)
                vm->stats.kvm[s] += now[s] - c->ks_start[s];
            vm->stats.kvm_stats = true;
        }
        kvm_stats_close(&c->ks);
        if (c->kv && lc_kvm_vcpu_get_stats(c->kv, &ks) == LC_OK) {
            /* the live thread reads these with --stats-interval and
             * --reboot (vmm_stats_collect) */
#define ADD(f) __atomic_fetch_add(&vm->stats.adapter.f, ks.f, __ATOMIC_RELAXED)
            ADD(exits_offered);
            ADD(exits_handled);
            ADD(completions);
            ADD(exits_skipped);
            ADD(string_io_declined);
#undef ADD
        }
        lc_kvm_vcpu_detach(c->kv);
        lc_vcpu_destroy(c->core.lc);
        if (c->run)
            munmap(c->run, c->run_size);
        if (c->fd >= 0)
            close(c->fd);
    }
    if (k->fd >= 0)
        close(k->fd);
    if (k->kvm >= 0)
        close(k->kvm);
    vm->irq = (vm_irq){ 0 };
    vm->cpu = NULL;
    pthread_mutex_destroy(&k->ring_lock);
    pthread_mutex_destroy(&k->zones_lock);
    free(k);
    return rc;
}
