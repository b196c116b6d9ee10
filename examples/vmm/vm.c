/* SPDX-License-Identifier: MIT */
/*
 * The VM's core: interrupt lines, what every exit does first and last,
 * libcluster's callbacks, ending the VM, and the I/O thread (backend
 * receive and the send-combining timer tick). The devices and their
 * wiring are the board's (board.c, device.c).
 */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "vmm.h"

#define IO_MAX_FDS (1 + 1 + VMM_MAX_DEVICES)    /* stop, timer, devices */

static void kick_vcpus(vmm *vm)
{
    /* the other vCPUs may sit in KVM_RUN (a halted AP forever) */
    pthread_mutex_lock(&vm->kick_lock);
    if (vm->kick)
        vm->kick(vm);
    pthread_mutex_unlock(&vm->kick_lock);
}

void vmm_request_stop(vmm *vm, int code, const char *fmt, ...)
{
    va_list ap;

    pthread_mutex_lock(&vm->stop_lock);
    if (atomic_load(&vm->stop) && !vm->reset_pending) {
        pthread_mutex_unlock(&vm->stop_lock);
        return;                 /* the first reason wins */
    }
    /* a reboot under way (--reboot) gives way: the VM ends */
    vm->reset_pending = false;
    atomic_store(&vm->stop, true);
    __atomic_store_n(&vm->exit_code, code, __ATOMIC_RELAXED);  /* --stats-interval */
    va_start(ap, fmt);
    vsnprintf(vm->stop_reason, sizeof vm->stop_reason, fmt, ap);
    va_end(ap);
    pthread_mutex_unlock(&vm->stop_lock);
    kick_vcpus(vm);
}

/* A PC's reset (the chipset's INIT/RESET# after port 0xCF9, 0x92 or the
 * keyboard controller's pulse, or its answer to a shutdown cycle): every
 * vCPU stops here as for the end of the VM, and main.c builds the machine
 * again (vmm_reset_pending). */
void vmm_request_reset(vmm *vm, int code, const char *why)
{
    uint64_t done;
    bool reboot;

    pthread_mutex_lock(&vm->stop_lock);
    if (atomic_load(&vm->stop)) {       /* already ending or resetting */
        pthread_mutex_unlock(&vm->stop_lock);
        return;
    }
    done = __atomic_load_n(&vm->stats.reboots, __ATOMIC_RELAXED);
    reboot = vm->opt.reboot &&
             (!vm->opt.max_reboots || done < vm->opt.max_reboots);
    if (reboot) {
        vm->reset_pending = true;
        atomic_store(&vm->stop, true);
        snprintf(vm->stop_reason, sizeof vm->stop_reason, "%s: rebooting",
                 why);
    }
    pthread_mutex_unlock(&vm->stop_lock);
    if (reboot)
        kick_vcpus(vm);
    else if (vm->opt.reboot)
        vmm_request_stop(vm, code, "%s after %llu reboots (--max-reboots)",
                         why, (unsigned long long)done);
    else
        vmm_request_stop(vm, code, "%s", why);
}

bool vmm_reset_pending(vmm *vm)
{
    bool r;
    pthread_mutex_lock(&vm->stop_lock);
    r = vm->reset_pending;
    pthread_mutex_unlock(&vm->stop_lock);
    return r;
}

bool vmm_reset_finish(vmm *vm)
{
    bool r;
    pthread_mutex_lock(&vm->stop_lock);
    r = vm->reset_pending;
    if (r) {
        vm->reset_pending = false;
        vm->stop_reason[0] = '\0';
        __atomic_store_n(&vm->exit_code, 0, __ATOMIC_RELAXED);
        atomic_store(&vm->stop, false);
    }
    pthread_mutex_unlock(&vm->stop_lock);
    return r;
}

void vmm_engine_vcpus_made(vmm *vm)
{
    __atomic_store_n(&vm->stats.tcache_end_valid, false, __ATOMIC_RELEASE);
}

void vmm_engine_vcpus_gone(vmm *vm)
{
    lc_stats ls;
    if (!vm->engine || lc_engine_get_stats(vm->engine, &ls) != LC_OK)
        return;
    __atomic_store_n(&vm->stats.tcache_end, ls.tcache_bytes, __ATOMIC_RELAXED);
    __atomic_store_n(&vm->stats.tcache_end_valid, true, __ATOMIC_RELEASE);
}

/* ---- interrupts -------------------------------------------------------- */

static void irq_set(void *opaque, unsigned gsi, int level)
{
    vmm *vm = opaque;
    if (level)
        atomic_fetch_add(&vm->irq_epoch, 1);
    if (vm->irq.set)
        vm->irq.set(vm->irq.opaque, gsi, level);
}

vm_irq vmm_irq_line(vmm *vm, unsigned gsi)
{
    return (vm_irq){ vm, irq_set, gsi };
}

/* What every back end does first at an exit, whatever it was:
 *  - count it (`kind`: LC_EXIT_IO, LC_EXIT_MMIO, or 0 for any other);
 *  - send combining's "next world switch" (Sugerman et al. section 3.3):
 *    every exit reaches the VMM here, so frames a kick held go out at the
 *    next exit of any kind, before it is handled (a guest polling for the
 *    reply sees it at once). With adaptive combining (devices/
 *    send_combine.h) the NIC holds kicks only while the guest fills
 *    batches and sends at the end of the exit instead (vmm_exit_done);
 *    within one cluster several kicks are one exit anyway;
 *  - after a BAR move, flush the engine (lc_vm_ops.gpa_map contract).
 * Returns true if the guest-physical map changed since the last exit. */
void vmm_exit_begin(vmm *vm, lc_exit_kind kind)
{
    VMM_STAT_INC(vm->stats.exits);
    if (kind == LC_EXIT_IO)
        VMM_STAT_INC(vm->stats.exits_io);
    else if (kind == LC_EXIT_MMIO)
        VMM_STAT_INC(vm->stats.exits_mmio);
    vmm_devices_flush_pending(vm);
}

/* A device changed the guest-physical map (a BAR moved, PAM, the ROM
 * BAR): flush the engine at once, as lc_vm_ops.gpa_map's contract asks.
 * Called from the access that changed it, often inside a libcluster
 * callback: the run that made that access then ends after it
 * (LC_STOP_COHERENCY) instead of going on with what the old map
 * answered, and any exit another vCPU begins after the guest saw the
 * change finds the engine's generation moved. The map's generation
 * tells the back end (vmm_map_gen()) to redo what depends on the map
 * before the guest runs again: every vCPU compares it before entering,
 * so the one that made the change never runs on the old map. */
void vmm_map_changed(vmm *vm)
{
    atomic_fetch_add(&vm->map_gen, 1);
    if (vm->engine)
        lc_engine_flush(vm->engine);
}

unsigned vmm_map_gen(vmm *vm)
{
    return atomic_load_explicit(&vm->map_gen, memory_order_acquire);
}

/* Adaptive send combining's "next world switch" (Sugerman et al. section
 * 3.3), at the end of every exit: held frames go out before the guest runs
 * again unless the guest kicked again since the last exit (this exit's own
 * access, or kicks replayed from the coalesced ring): then the batch stays
 * open for the next kick, exit or tick. A guest that sends and then waits
 * for the reply makes an exit without a kick, and its frame goes then;
 * the policy sees that batch of one and stops holding. The device decides
 * (vmm_device_ops.exit_done, nic_dev.c). */
void vmm_exit_done(vmm *vm)
{
    vmm_devices_exit_done(vm);
}

/* And last, for a port or MMIO exit offered to libcluster: count what the
 * engine handled and write the trace line (`res`: the engine's result if
 * it handled the exit, else NULL). */
void vmm_exit_end(vmm *vm, const lc_exit *ex, int64_t gap, uint64_t pc,
                  const lc_result *res)
{
    if (res)
        VMM_STAT_INC(vm->stats.exits_handled_by_engine);
    vmm_trace_exit(vm, ex, gap, pc, res);
}

/* ---- libcluster's callbacks ---------------------------------------------- */

static void lc_gpa_map_cb(void *opaque, uint64_t gpa, int is_write,
                          lc_gpa_map *m)
{
    vmm *vm = ((vmm_vcpu *)opaque)->vm;
    (void)is_write;
    memset(m, 0, sizeof *m);
    if (vm->fw && vmm_fw_gpa_map(vm, gpa, m))
        return;                 /* ROM, shadow RAM (firmware.c) */
    if (gpa < vm->ram_size) {
        m->kind = LC_GPA_RAM;
        m->hva = vm->ram + gpa;
        m->span = vm->ram_size - gpa;
        if (vm->fw && gpa < FW_SHADOW_BASE)     /* PAM segments follow */
            m->span = FW_SHADOW_BASE - gpa;
    } else if (bus_claims(&vm->mmio, gpa, 1)) {
        m->kind = LC_GPA_MMIO;
    }
}

static lc_cb_result lc_pio_cb(void *opaque, uint16_t port, uint8_t size,
                              int is_write, uint32_t *value)
{
    vmm *vm = ((vmm_vcpu *)opaque)->vm;
    uint64_t v = *value;

    if (atomic_load_explicit(&vm->stop, memory_order_relaxed))
        return LC_CB_STOP;      /* the VM is ending: do nothing more */
    /* A port of KVM's in-kernel devices never exits to us, so a cluster
     * is the only way such an access gets here, and doing it on our bus
     * would drop it (a lost EOI leaves the PIC's in-service bit set and
     * ends the guest's interrupts). Stop before it: the guest does it
     * itself and it goes where it belongs (ops.h: LC_CB_STOP). Any other
     * port no model claims is answered as its exit would be (a write
     * dropped, a read all ones, counted: bus_access()), so a cluster runs
     * through firmware's probes of absent hardware and its writes to a
     * debug port nobody listens on. (No model of ours claims those ports:
     * under KVM it would never see an access.) */
    if (vm->opt.cpu == VMM_CPU_KVM && vmm_kvm_port_in_kernel(port, size))
        return LC_CB_STOP;
    bus_access(&vm->pio, port, size, is_write, &v);
    if (!is_write)
        *value = (uint32_t)v;
    return LC_CB_OK;
}

static lc_cb_result lc_mmio_cb(void *opaque, uint64_t gpa, uint8_t len,
                               int is_write, uint64_t *value)
{
    vmm *vm = ((vmm_vcpu *)opaque)->vm;

    if (atomic_load_explicit(&vm->stop, memory_order_relaxed))
        return LC_CB_STOP;
    bus_access(&vm->mmio, gpa, len, is_write, value);
    return LC_CB_OK;
}

/* An interrupt raised since the exit began: stop at the next check point
 * so the guest takes it when it resumes (paper section 6: clusters with
 * loops check for interrupts at loop heads). A line that was already high
 * at the exit was not deliverable then (KVM injects before entry). */
static int lc_irq_cb(void *opaque, const lc_cpu_state *st)
{
    vmm_vcpu *c = opaque;
    (void)st;
    return atomic_load_explicit(&c->vm->irq_epoch, memory_order_relaxed) !=
           c->irq_epoch_seen;
}

/* RDTSC inside a cluster (issue: RDTSC as a gap filler): the value the
 * guest's own RDTSC would read now. Under KVM the guest's TSC is the
 * host's plus the vCPU's TSC offset (the ratio is 1: lcvmm never sets a
 * TSC frequency, KVM_SET_TSC_KHZ); the back end reads the offset once per
 * vCPU (kvm_cpu.c). Without it (Unicorn, a KVM without
 * KVM_VCPU_TSC_OFFSET) the cluster stops before the RDTSC and the guest
 * runs it itself. */
static lc_cb_result lc_rdtsc_cb(void *opaque, uint64_t *tsc)
{
    vmm_vcpu *c = opaque;

    if (!c->tsc_known)
        return LC_CB_STOP;
    *tsc = __builtin_ia32_rdtsc() + c->tsc_offset;
    return LC_CB_OK;
}

void vmm_fill_lc_ops(vmm *vm, lc_vm_ops *ops)
{
    memset(ops, 0, sizeof *ops);
    /* Unicorn's RDTSC is its own clock, nothing a callback could read */
    if (vm->opt.cpu == VMM_CPU_KVM)
        ops->rdtsc = lc_rdtsc_cb;
    ops->size = sizeof *ops;
    ops->gpa_map = lc_gpa_map_cb;
    ops->pio = lc_pio_cb;
    ops->mmio = lc_mmio_cb;
    ops->irq_pending = lc_irq_cb;
    /* the NIC models take 8-byte MMIO as two dwords (nic_dev.c) */
    ops->accepts_wide = LC_WIDE_8;
}

/* ---- the I/O thread ------------------------------------------------------ */

/* A device's state changed (under dev_lock: a register access, a
 * receive, a flush). Two things may follow, both cheap when nothing does:
 *
 *  - the tick is armed when a device starts to hold something (its
 *    `waits` hook): a held transmit must go within one tick (Sugerman et
 *    al. section 3.3), a received frame waiting for descriptors is retried
 *    at each tick (as the PCnet polls its ring; as a deferred e1000 RDT
 *    write reaches the device) without waiting for the guest's next exit.
 *    The I/O thread disarms it when nothing waits: an idle VM takes no
 *    ticks.
 *  - the I/O thread is woken when a descriptor it left out of its poll
 *    set is back (a device holding a received frame has none, so the
 *    backend's next frames wait in the host, as QEMU's can_receive()
 *    leaves them; once the guest took the held one, the thread must poll
 *    the backend again now, not at its next tick or never). */
void vmm_io_update(vmm *vm)
{
    struct itimerspec its = { { 0, SEND_COMBINE_TICK_NS },
                              { 0, SEND_COMBINE_TICK_NS } };

    if (vm->io_left_out && vm->io_wake_fd >= 0) {
        unsigned back = 0;
        for (unsigned i = 0; i < vm->ndev; i++) {
            vmm_device *d = &vm->dev[i];
            back += d->has_fd && d->ops->poll_fd(d) >= 0;
        }
        if (back > vm->io_polled) {
            uint64_t one = 1;
            vm->io_left_out = false;    /* the thread builds its set anew */
            if (write(vm->io_wake_fd, &one, sizeof one) < 0)
                vm->io_left_out = true;
            else
                VMM_STAT_INC(vm->stats.io_wakes);
        }
    }
    if (vm->io_timer_armed || vm->io_timer_fd < 0 ||
        !vmm_devices_waiting(vm))
        return;
    if (timerfd_settime(vm->io_timer_fd, 0, &its, NULL) == 0)
        vm->io_timer_armed = true;
}

static void io_tick(vmm *vm)
{
    struct itimerspec off = { { 0, 0 }, { 0, 0 } };
    void (*drain)(vmm *) = __atomic_load_n(&vm->io_drain, __ATOMIC_ACQUIRE);
    uint64_t ticks;

    if (read(vm->io_timer_fd, &ticks, sizeof ticks) < 0)
        ticks = 0;
    /* deferred writes first, in order: they may give a waiting frame its
     * descriptors (as QEMU's I/O thread flushes the coalesced ring) */
    if (drain)
        drain(vm);
    pthread_mutex_lock(&vm->dev_lock);
    vmm_devices_tick(vm);
    if (!vmm_devices_waiting(vm) &&
        timerfd_settime(vm->io_timer_fd, 0, &off, NULL) == 0)
        vm->io_timer_armed = false;     /* nothing waits: sleep */
    pthread_mutex_unlock(&vm->dev_lock);
}

static void *io_thread(void *arg)
{
    vmm *vm = arg;

    for (;;) {
        struct pollfd p[IO_MAX_FDS];
        vmm_device *owner[IO_MAX_FDS];
        unsigned n = 0;

        /* the stop eventfd, the wake eventfd (vmm_io_update), then the
         * tick (queued frames leave before new ones are taken in), then
         * each device's descriptor, asked anew each time: a device holding
         * a received frame that waits for descriptors has none, so the
         * backend's next frames wait behind it and the tick retries it */
        p[n++] = (struct pollfd){ vm->io_stop_fd, POLLIN, 0 };
        owner[n] = NULL;
        p[n++] = (struct pollfd){ vm->io_wake_fd, POLLIN, 0 };
        if (vm->io_timer_fd >= 0) {
            owner[n] = NULL;
            p[n++] = (struct pollfd){ vm->io_timer_fd, POLLIN, 0 };
        }
        pthread_mutex_lock(&vm->dev_lock);
        vm->io_polled = 0;
        vm->io_left_out = false;
        for (unsigned i = 0; i < vm->ndev; i++) {
            vmm_device *d = &vm->dev[i];
            int fd = d->ops->poll_fd ? d->ops->poll_fd(d) : -1;
            if (fd >= 0) {
                owner[n] = d;
                p[n++] = (struct pollfd){ fd, POLLIN, 0 };
                vm->io_polled++;
            } else if (d->has_fd) {
                vm->io_left_out = true;     /* vmm_io_update() watches */
            }
        }
        pthread_mutex_unlock(&vm->dev_lock);
        int rc = poll(p, n, -1);
        if (rc < 0 && errno != EINTR)
            break;
        if (p[0].revents)
            break;
        for (unsigned i = 1; i < n; i++) {
            if (!(p[i].revents & POLLIN))
                continue;
            if (p[i].fd == vm->io_wake_fd) {
                uint64_t v;
                if (read(vm->io_wake_fd, &v, sizeof v) < 0)
                    v = 0;              /* the set is built anew anyway */
            } else if (!owner[i]) {
                io_tick(vm);
            } else {
                pthread_mutex_lock(&vm->dev_lock);
                owner[i]->ops->poll(owner[i]);
                vmm_io_update(vm);
                pthread_mutex_unlock(&vm->dev_lock);
            }
        }
    }
    return NULL;
}

int vmm_io_start(vmm *vm)
{
    bool needed = vmm_devices_want_tick(vm);

    for (unsigned i = 0; i < vm->ndev; i++)
        needed |= vm->dev[i].has_fd;
    if (!needed)
        return 0;
    vm->io_stop_fd = eventfd(0, EFD_CLOEXEC);
    vm->io_wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    /* The tick: KVM only (Unicorn's counts guest instructions, uc_cpu.c),
     * and only with a device that can wait for it; armed by
     * vmm_io_update. */
    if (vmm_devices_want_tick(vm) && vm->opt.cpu != VMM_CPU_UNICORN)
        vm->io_timer_fd = timerfd_create(CLOCK_MONOTONIC,
                                         TFD_CLOEXEC | TFD_NONBLOCK);
    if (vm->io_stop_fd < 0 || vm->io_wake_fd < 0 ||
        pthread_create(&vm->io_thread, NULL, io_thread, vm))
        return -1;
    /* named, as QEMU names its threads, for top -H and the tests */
    (void)pthread_setname_np(vm->io_thread, "lcvmm-io");
    vm->io_thread_running = true;
    return 0;
}

void vmm_io_stop(vmm *vm)
{
    uint64_t one = 1;
    if (!vm->io_thread_running)
        return;
    if (write(vm->io_stop_fd, &one, sizeof one) < 0)
        perror("lcvmm: eventfd");
    pthread_join(vm->io_thread, NULL);
    close(vm->io_stop_fd);
    if (vm->io_timer_fd >= 0)
        close(vm->io_timer_fd);
    pthread_mutex_lock(&vm->dev_lock);
    close(vm->io_wake_fd);
    vm->io_wake_fd = -1;
    vm->io_left_out = false;
    vm->io_timer_fd = -1;
    vm->io_timer_armed = false;
    pthread_mutex_unlock(&vm->dev_lock);
    vm->io_thread_running = false;
}
