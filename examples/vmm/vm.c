/* SPDX-License-Identifier: MIT */
/*
 * The VM's wiring: devices on the buses, interrupt lines, libcluster's
 * callbacks, ending the VM, and the I/O thread (TAP receive and the
 * send-combining timer tick).
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

#include "devices/platform.h"
#include "vmm.h"

#define NIC_PCI_DEV   3
#define NIC_IRQ_LINE  11
#define PCNET_IO_BASE 0xC000u
#define E1000_MMIO_BASE 0xFEBC0000u
#define SEND_COMBINE_TICK_NS 1000000L   /* the "timer tick": 1 ms */

void vmm_request_stop(vmm *vm, int code, const char *fmt, ...)
{
    va_list ap;
    bool was = atomic_exchange(&vm->stop, true);

    if (was)
        return;                 /* the first reason wins */
    vm->exit_code = code;
    va_start(ap, fmt);
    vsnprintf(vm->stop_reason, sizeof vm->stop_reason, fmt, ap);
    va_end(ap);
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

/* ---- the NIC on its BAR ------------------------------------------------ */

typedef struct nic_glue {
    vmm *vm;
    pci_bus *pci;
    bool mapped;                /* BAR0 is on the bus */
    bool placed;                /* set up by the VMM: later moves are the
                                 * guest's */
} nic_glue;


/* Arm the I/O thread's tick when the NIC starts to hold something: a
 * held transmit must go within one tick (Sugerman et al. section 3.3), a frame
 * waiting for receive descriptors the guest gave back through a deferred
 * write (e1000 RDT) must be received without waiting for the guest's next
 * exit. Under dev_lock; the I/O thread disarms it when nothing waits. */
static void io_tick_arm(vmm *vm)
{
    struct itimerspec its = { { 0, SEND_COMBINE_TICK_NS },
                              { 0, SEND_COMBINE_TICK_NS } };

    if (vm->io_timer_armed || vm->io_timer_fd < 0 ||
        (!nic_tx_pending(vm->nic) && !nic_rx_pending(vm->nic) &&
         !nic_kicks_deferred(vm->nic)))
        return;
    if (timerfd_settime(vm->io_timer_fd, 0, &its, NULL) == 0)
        vm->io_timer_armed = true;
}

static void nic_bus(void *opaque, uint64_t off, unsigned size, bool w,
                    uint64_t *val)
{
    nic_glue *g = opaque;
    vmm *vm = g->vm;

    if (!pci_decodes(g->pci, NIC_PCI_DEV)) {
        if (!w)
            *val = size >= 8 ? ~0ull : (1ull << (size * 8)) - 1;
        return;
    }
    pthread_mutex_lock(&vm->dev_lock);
    if (size == 8) {            /* two dwords, low half first */
        uint32_t lo = (uint32_t)*val, hi = (uint32_t)(*val >> 32);
        nic_access(vm->nic, (uint32_t)off, 4, w, &lo);
        nic_access(vm->nic, (uint32_t)off + 4, 4, w, &hi);
        if (!w)
            *val = lo | (uint64_t)hi << 32;
    } else {
        uint32_t v = (uint32_t)*val;
        nic_access(vm->nic, (uint32_t)off, size, w, &v);
        if (!w)
            *val = v;
    }
    io_tick_arm(vm);
    pthread_mutex_unlock(&vm->dev_lock);
}

static void nic_bar_moved(void *opaque, uint32_t base)
{
    nic_glue *g = opaque;
    vmm *vm = g->vm;
    nic_pci_id id;
    bus *b;
    int rc;

    nic_pci_identity(nic_model_of(vm->nic), &id);
    b = id.bar_is_io ? &vm->pio : &vm->mmio;
    if (g->mapped)
        rc = bus_move(b, vm->nic_bar, base);
    else
        rc = bus_register(b, base, id.bar_size, nic_bus, g,
                          nic_model_name(nic_model_of(vm->nic)));
    if (rc && g->placed)
        dev_guest_error("pci", "BAR0 of 00:%02x.0 moved to %#x, onto "
                        "another device: it decodes nothing there",
                        NIC_PCI_DEV, base);
    g->mapped = rc == 0;
    vm->nic_bar = base;
    /* translations remember device frames (lc_vm_ops.gpa_map contract) */
    atomic_store(&vm->map_changed, true);
}

static void nic_command(void *opaque, uint16_t cmd)
{
    nic_glue *g = opaque;
    pthread_mutex_lock(&g->vm->dev_lock);
    nic_set_bus_master(g->vm->nic, cmd & 4);
    pthread_mutex_unlock(&g->vm->dev_lock);
}

/* ---- platform devices -------------------------------------------------- */

static void uart_bus(void *opaque, uint64_t off, unsigned size, bool w,
                     uint64_t *val)
{
    uint8_t v = (uint8_t)*val;
    (void)size;
    uart_access(opaque, (unsigned)off, w, &v);
    if (!w)
        *val = v;
}

static void pci_bus_fn(void *opaque, uint64_t off, unsigned size, bool w,
                       uint64_t *val)
{
    uint32_t v = (uint32_t)*val;
    pci_access(opaque, (unsigned)off, size, w, &v);
    if (!w)
        *val = v;
}

static void debug_exit(void *opaque, uint64_t off, unsigned size, bool w,
                       uint64_t *val)
{
    (void)off; (void)size;
    if (w)
        vmm_request_stop(opaque, (int)(*val & 0xff),
                         "guest wrote %#llx to the debug exit port",
                         (unsigned long long)*val);
}

/* Port 0x80 (POST codes, and the delay port of the paper's section-4
 * OUT 0x80 workaround) and 0xED (the other delay port BIOSes use, as in
 * the paper's section-4 PCI sequence): accepted and ignored, as on a PC
 * without a POST card. */
static void sink(void *opaque, uint64_t off, unsigned size, bool w,
                 uint64_t *val)
{
    (void)opaque; (void)off; (void)size; (void)w; (void)val;
}

static void identity(uint8_t id[64], const nic_pci_id *n)
{
    memset(id, 0, 64);
    memcpy(&id[0], &n->vendor, 2);
    memcpy(&id[2], &n->device, 2);
    id[8] = n->revision;
    id[9] = n->prog_if;
    id[10] = n->subclass;
    id[11] = n->class_code;
    memcpy(&id[0x2c], &n->subsys_vendor, 2);
    memcpy(&id[0x2e], &n->subsys, 2);
    id[0x3d] = 1;               /* INTA# */
}

/* Send combining's clock (nic_options.clock): wall-clock nanoseconds on
 * KVM; on Unicorn the guest instructions retired, so that its decisions,
 * like its ticks, depend only on the guest (docs/vmm.md). */
static uint64_t nic_clock(void *opaque)
{
    vmm *vm = opaque;
    struct timespec ts;

    if (vm->opt.cpu == VMM_CPU_UNICORN)
        return __atomic_load_n(&vm->stats.insns, __ATOMIC_RELAXED);
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int vmm_devices_init(vmm *vm, char *err, size_t errlen)
{
    static const uint8_t host_bridge[64] = {
        0x86, 0x80, 0x37, 0x12,         /* 8086:1237 (i440FX) */
        [0x0a] = 0x00, [0x0b] = 0x06,   /* class 06/00: host bridge */
    };
    uint8_t mac[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 };
    pci_bus *pci;
    uart *u;

    bus_init(&vm->pio, "pio");
    bus_init(&vm->mmio, "mmio");
    vm->io_timer_fd = -1;
    u = uart_create(stdout);
    pci = pci_create();
    if (!u || !pci) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    vm->uart = u;
    vm->pci = pci;
    if (bus_register(&vm->pio, 0x3f8, 8, uart_bus, u, "uart") ||
        bus_register(&vm->pio, 0xcf8, 8, pci_bus_fn, pci, "pci-cfg") ||
        bus_register(&vm->pio, DEBUG_EXIT_PORT, 4, debug_exit, vm,
                     "debug-exit") ||
        bus_register(&vm->pio, 0x80, 1, sink, NULL, "post") ||
        bus_register(&vm->pio, 0xed, 1, sink, NULL, "delay") ||
        pci_add_function(pci, 0, host_bridge, (pci_bar_info){ 0, false }, 0,
                         0, NULL)) {
        snprintf(err, errlen, "cannot register the platform devices");
        return -1;
    }
    if (vm->opt.nic == NIC_NONE)
        return 0;

    vm->net = net_backend_from_arg(vm->opt.net ? vm->opt.net : "peer", err,
                                   errlen);
    if (!vm->net)
        return -1;
    vm->irq_line = (vm_irq){ vm, irq_set, NIC_IRQ_LINE };
    vm->dma = vmm_dma_template;
    vm->dma.opaque = vm;
    nic_options nopt = vm->opt.nic_opt;
    nopt.clock = nic_clock;
    nopt.clock_opaque = vm;
    nopt.combine_period = vm->opt.cpu == VMM_CPU_UNICORN
                          ? VMM_UC_TICK_INSNS : SEND_COMBINE_TICK_NS;
    nopt.pairs_in_vmm = vm->opt.cluster &&
                        (vm->opt.techniques & (LC_TECH_PAIRS | LC_TECH_STATIC));
    vm->nic = nic_create(vm->opt.nic, mac, &vm->dma, &vm->irq_line, vm->net,
                         &nopt);
    if (!vm->nic) {
        snprintf(err, errlen, "cannot create the %s model",
                 nic_model_name(vm->opt.nic));
        return -1;
    }
    nic_pci_id id;
    uint8_t cfg[64];
    nic_pci_identity(vm->opt.nic, &id);
    identity(cfg, &id);
    nic_glue *g = calloc(1, sizeof *g);
    if (!g) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    *g = (nic_glue){ vm, pci, false, false };
    vm->nic_glue = g;
    pci_function_ops ops = { g, nic_bar_moved, nic_command };
    if (pci_add_function(pci, NIC_PCI_DEV, cfg,
                         (pci_bar_info){ id.bar_size, id.bar_is_io },
                         id.bar_is_io ? PCNET_IO_BASE : E1000_MMIO_BASE,
                         NIC_IRQ_LINE, &ops) || !g->mapped) {
        snprintf(err, errlen, "cannot place the %s on PCI",
                 nic_model_name(vm->opt.nic));
        return -1;
    }
    atomic_store(&vm->map_changed, false);
    g->placed = true;
    return 0;
}

void vmm_devices_fini(vmm *vm)
{
    if (vm->nic) {
        nic_flush(vm->nic);
        nic_destroy(vm->nic);
    }
    net_destroy(vm->net);
    uart_destroy(vm->uart);
    pci_destroy(vm->pci);
    free(vm->nic_glue);
    vm->nic_glue = NULL;
    vm->nic = NULL;
    vm->net = NULL;
    vm->uart = vm->pci = NULL;
}

/* What every back end does first at an exit, whatever it was:
 *  - count it (`kind`: LC_EXIT_IO, LC_EXIT_MMIO, or 0 for any other);
 *  - send combining's "next world switch" (seeds/000 s3.3): every exit
 *    reaches the VMM here, so frames a kick held go out at the next exit
 *    of any kind, before it is handled (a guest polling for the reply sees
 *    it at once). Kicks are held only while the adaptive policy
 *    (devices/send_combine.h) finds that the guest fills batches; within
 *    one cluster several kicks are one exit anyway;
 *  - after a BAR move, flush the engine (lc_vm_ops.gpa_map contract).
 * Returns true if the guest-physical map changed since the last exit. */
bool vmm_exit_begin(vmm *vm, lc_exit_kind kind)
{
    vm->stats.exits++;
    if (kind == LC_EXIT_IO)
        vm->stats.exits_io++;
    else if (kind == LC_EXIT_MMIO)
        vm->stats.exits_mmio++;
    /* the lock only when something waits: nearly every exit has nothing;
     * adaptive combining sends at the end of the exit instead
     * (vmm_exit_done) */
    if (vm->nic && !vm->opt.nic_opt.combine_adaptive &&
        nic_tx_pending(vm->nic)) {
        pthread_mutex_lock(&vm->dev_lock);
        nic_flush(vm->nic);
        io_tick_arm(vm);        /* a reply may wait for descriptors */
        pthread_mutex_unlock(&vm->dev_lock);
    }
    if (!atomic_exchange(&vm->map_changed, false))
        return false;
    if (vm->engine)
        lc_engine_flush(vm->engine);
    return true;
}

/* Adaptive send combining's "next world switch" (Sugerman et al. s3.3), at the
 * end of every exit: held frames go out before the guest runs again
 * unless the guest kicked again since the last exit (this exit's own
 * access, or kicks replayed from the coalesced ring): then the batch stays
 * open for the next kick, exit or tick. A guest that sends and then waits
 * for the reply makes an exit without a kick, and its frame goes then;
 * the policy sees that batch of one and stops holding. */
void vmm_exit_done(vmm *vm)
{
    uint64_t kicks;

    if (!vm->nic || !vm->opt.nic_opt.combine_adaptive)
        return;
    kicks = nic_kick_count(vm->nic);
    if (kicks == vm->exit_kicks && nic_tx_pending(vm->nic)) {
        pthread_mutex_lock(&vm->dev_lock);
        nic_flush(vm->nic);
        io_tick_arm(vm);        /* a reply may wait for descriptors */
        pthread_mutex_unlock(&vm->dev_lock);
    }
    vm->exit_kicks = kicks;
}

/* And last, for a port or MMIO exit offered to libcluster: count what the
 * engine handled and write the trace line (`res`: the engine's result if
 * it handled the exit, else NULL). */
void vmm_exit_end(vmm *vm, const lc_exit *ex, int64_t gap,
                  const lc_result *res)
{
    if (res)
        vm->stats.exits_handled_by_engine++;
    vmm_trace_exit(vm, ex, gap, res);
}

/* ---- libcluster's callbacks ---------------------------------------------- */

static void lc_gpa_map_cb(void *opaque, uint64_t gpa, int is_write,
                          lc_gpa_map *m)
{
    vmm *vm = ((vmm_vcpu *)opaque)->vm;
    (void)is_write;
    memset(m, 0, sizeof *m);
    if (gpa < vm->ram_size) {
        m->kind = LC_GPA_RAM;
        m->hva = vm->ram + gpa;
        m->span = vm->ram_size - gpa;
    } else if (bus_find(&vm->mmio, gpa, 1)) {
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

void vmm_fill_lc_ops(vmm *vm, lc_vm_ops *ops)
{
    (void)vm;
    memset(ops, 0, sizeof *ops);
    ops->size = sizeof *ops;
    ops->gpa_map = lc_gpa_map_cb;
    ops->pio = lc_pio_cb;
    ops->mmio = lc_mmio_cb;
    ops->irq_pending = lc_irq_cb;
    /* the NIC models take 8-byte MMIO as two dwords (nic_bus) */
    ops->accepts_wide = LC_WIDE_8;
}

/* ---- the I/O thread ------------------------------------------------------ */

static void *io_thread(void *arg)
{
    vmm *vm = arg;
    int bfd = vm->net && vm->net->ops->poll_fd ? vm->net->ops->poll_fd(vm->net)
                                               : -1;
    int tfd = vm->io_timer_fd;

    for (;;) {
        struct pollfd p[3] = { { vm->io_stop_fd, POLLIN, 0 },
                               { bfd, POLLIN, 0 }, { tfd, POLLIN, 0 } };
        /* A frame held in the chip waits for descriptors: the backend's
         * next frames wait behind it, and the tick retries it. */
        pthread_mutex_lock(&vm->dev_lock);
        if (nic_rx_pending(vm->nic))
            p[1].fd = -1;
        pthread_mutex_unlock(&vm->dev_lock);
        int n = poll(p, 3, -1);
        if (n < 0 && errno != EINTR)
            break;
        if (p[0].revents)
            break;
        if (p[2].revents & POLLIN) {
            struct itimerspec off = { { 0, 0 }, { 0, 0 } };
            void (*drain)(vmm *) = __atomic_load_n(&vm->io_drain,
                                                   __ATOMIC_ACQUIRE);
            uint64_t ticks;
            if (read(tfd, &ticks, sizeof ticks) < 0)
                ticks = 0;
            /* deferred writes first, in order: they may give the waiting
             * frame its descriptors (as QEMU's I/O thread flushes the
             * coalesced ring) */
            if (drain)
                drain(vm);
            pthread_mutex_lock(&vm->dev_lock);
            nic_flush(vm->nic);
            nic_poll_rx(vm->nic);
            if (!nic_tx_pending(vm->nic) && !nic_rx_pending(vm->nic) &&
                !nic_kicks_deferred(vm->nic) &&
                timerfd_settime(tfd, 0, &off, NULL) == 0)
                vm->io_timer_armed = false;     /* nothing waits: sleep */
            pthread_mutex_unlock(&vm->dev_lock);
        }
        if (p[1].revents & POLLIN) {
            pthread_mutex_lock(&vm->dev_lock);
            nic_poll_rx(vm->nic);
            io_tick_arm(vm);
            pthread_mutex_unlock(&vm->dev_lock);
        }
    }
    return NULL;
}

int vmm_io_start(vmm *vm)
{
    if (!vm->nic)
        return 0;
    vm->io_stop_fd = eventfd(0, EFD_CLOEXEC);
    /* The tick: KVM only (Unicorn's counts guest instructions, uc_cpu.c),
     * and only with something that can wait for it. */
    if (vm->opt.cpu != VMM_CPU_UNICORN &&
        (vm->opt.nic_opt.send_combine || vm->opt.nic_opt.latch_fast))
        vm->io_timer_fd = timerfd_create(CLOCK_MONOTONIC,
                                         TFD_CLOEXEC | TFD_NONBLOCK);
    if (vm->io_stop_fd < 0 ||
        pthread_create(&vm->io_thread, NULL, io_thread, vm))
        return -1;
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
    vm->io_timer_fd = -1;
    vm->io_timer_armed = false;
    vm->io_thread_running = false;
}
