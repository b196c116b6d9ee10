/* SPDX-License-Identifier: MIT */
/*
 * The NIC (pcnet or e1000, --nic) as a device of the board: the model
 * (devices/nic.h) behind PCI function LCVMM_NIC_PCI_DEV with one BAR the
 * guest may move, its network backend (--net), interrupt line
 * LCVMM_NIC_IRQ, and the hooks of the NIC optimizations of Sugerman et
 * al. ("Virtualizing I/O Devices on VMware Workstation's Hosted Virtual
 * Machine Monitor", section 3.3): send combining's held frames
 * (pending/flush at the beginning of an exit, exit_done at its end for
 * adaptive combining, waits and the timer tick), the backend's receive
 * descriptor (poll), and the deferred writes for the coalesced ring
 * (coalesced, coalesced_gen).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lcvmm/platform.h"
#include "vmm.h"

typedef struct nic_dev {
    vmm *vm;
    nic *nic;
    net_backend *net;
    vm_irq irq;
    nic_pci_id id;
    uint32_t bar;               /* BAR0 base, as last programmed */
    bool mapped;                /* BAR0 is on the bus */
    bool placed;                /* set up by the VMM: later moves are the
                                 * guest's */
    bool decodes;               /* the command register's decode bit */
    uint64_t exit_kicks;        /* nic_kick_count() at the last exit */
} nic_dev;

static void nic_bus(void *opaque, uint64_t off, unsigned size, bool w,
                    uint64_t *val)
{
    nic_dev *g = opaque;
    vmm *vm = g->vm;

    pthread_mutex_lock(&vm->pci_lock);      /* the command register */
    bool decodes = pci_decodes(vm->pci, LCVMM_NIC_PCI_DEV);
    pthread_mutex_unlock(&vm->pci_lock);
    if (!decodes) {
        if (!w)
            *val = size >= 8 ? ~0ull : (1ull << (size * 8)) - 1;
        return;
    }
    if (vm->fw && !w)
        vmm_fw_nic_read(vm, off);       /* --bios: phases and polls */
    pthread_mutex_lock(&vm->dev_lock);
    if (size == 8) {            /* two dwords, low half first */
        uint32_t lo = (uint32_t)*val, hi = (uint32_t)(*val >> 32);
        nic_access(g->nic, (uint32_t)off, 4, w, &lo);
        nic_access(g->nic, (uint32_t)off + 4, 4, w, &hi);
        if (!w)
            *val = lo | (uint64_t)hi << 32;
    } else {
        uint32_t v = (uint32_t)*val;
        nic_access(g->nic, (uint32_t)off, size, w, &v);
        if (!w)
            *val = v;
    }
    vmm_io_update(vm);          /* it may have held or released a frame */
    pthread_mutex_unlock(&vm->dev_lock);
}

/* PCI: the guest (or the VMM, at creation) moved BAR0 to `base`. */
static void nic_bar_moved(void *opaque, uint32_t base)
{
    nic_dev *g = opaque;
    vmm *vm = g->vm;
    bus *b = g->id.bar_is_io ? &vm->pio : &vm->mmio;
    int rc;

    if (g->mapped)
        rc = bus_move(b, g->bar, base);
    else
        rc = bus_register(b, base, g->id.bar_size, nic_bus, g,
                          nic_model_name(nic_model_of(g->nic)));
    if (rc && g->placed)
        dev_guest_error("pci", "BAR0 of 00:%02x.0 moved to %#x, onto "
                        "another device: it decodes nothing there",
                        LCVMM_NIC_PCI_DEV, base);
    g->mapped = rc == 0;
    g->bar = base;
    /* translations remember device frames (lc_vm_ops.gpa_map contract) */
    vmm_map_changed(vm);
}

/* PCI: the command register changed; bit 2 is bus mastering. */
static void nic_command(void *opaque, uint16_t cmd)
{
    nic_dev *g = opaque;
    bool decodes = cmd & (g->id.bar_is_io ? 1 : 2);

    pthread_mutex_lock(&g->vm->dev_lock);
    nic_set_bus_master(g->nic, cmd & 4);
    vmm_io_update(g->vm);       /* a held frame may have gone in */
    pthread_mutex_unlock(&g->vm->dev_lock);
    if (decodes != g->decodes) {
        g->decodes = decodes;
        vmm_map_changed(g->vm); /* the direct page follows (nic_dev_direct) */
    }
}

/* PCI: the Status register's bits the NIC raised (a DMA that reached no
 * RAM: Received Master Abort), cleared by writing 1s. */
static uint16_t nic_status(void *opaque, uint16_t w1c)
{
    nic_dev *g = opaque;
    uint16_t v;

    pthread_mutex_lock(&g->vm->dev_lock);
    v = nic_pci_status(g->nic, w1c);
    pthread_mutex_unlock(&g->vm->dev_lock);
    return v;
}

/* The first 64 bytes of configuration space from the model's identity. */
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

/* Send combining's world switches (nic_options.switches): every vCPU's
 * exits so far (vmm_exit_begin() counts them). */
static uint64_t nic_switches(void *opaque)
{
    vmm *vm = opaque;

    return __atomic_load_n(&vm->stats.exits, __ATOMIC_RELAXED);
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

static int nic_dev_init(vmm *vm, vmm_device *dev, char *err, size_t errlen)
{
    static const uint8_t mac[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 };
    nic_dev *g;
    uint8_t cfg[64];

    if (vm->opt.nic == NIC_NONE)
        return VMM_DEVICE_ABSENT;
    g = calloc(1, sizeof *g);
    if (!g) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    dev->state = g;
    g->vm = vm;
    g->net = net_backend_from_arg(vm->opt.net ? vm->opt.net : "peer", err,
                                  errlen);
    if (!g->net)
        return -1;
    g->net = vmm_fw_watch_net(vm, g->net);  /* --bios: boot phases */
    g->irq = vmm_irq_line(vm, LCVMM_NIC_IRQ);
    nic_options nopt = vm->opt.nic_opt;
    nopt.clock = nic_clock;
    nopt.clock_opaque = vm;
    nopt.combine_period = vm->opt.cpu == VMM_CPU_UNICORN
                          ? VMM_UC_TICK_INSNS : SEND_COMBINE_TICK_NS;
    /* libcluster runs an index register's write and its data access as
     * one exit (exit pairs, paper section 3): the PCnet RAP is then not
     * deferred */
    nopt.pairs_in_vmm = vm->opt.cluster &&
                        (vm->opt.techniques & (LC_TECH_PAIRS | LC_TECH_STATIC));
    /* the policy combines only kicks that cost exits (clusters may run
     * a transmit loop's kicks in one) */
    nopt.switches = nic_switches;
    /* a memory slot needs KVM; elsewhere the page would only be served
     * through the bus, as any register */
    nopt.direct = vm->opt.nic_opt.direct && vm->opt.cpu == VMM_CPU_KVM;
    g->nic = nic_create(vm->opt.nic, mac, &vm->dma, &g->irq, g->net, &nopt);
    if (!g->nic) {
        snprintf(err, errlen, "cannot create the %s model",
                 nic_model_name(vm->opt.nic));
        return -1;
    }
    nic_pci_identity(vm->opt.nic, &g->id);
    identity(cfg, &g->id);
    pci_function_ops ops = { g, nic_bar_moved, nic_command };
    if (pci_add_function(vm->pci, LCVMM_NIC_PCI_DEV, cfg,
                         (pci_bar_info){ g->id.bar_size, g->id.bar_is_io },
                         g->id.bar_is_io ? LCVMM_PCNET_IO_BASE
                                         : LCVMM_E1000_MMIO_BASE,
                         LCVMM_NIC_IRQ, &ops) || !g->mapped ||
        pci_set_status_hook(vm->pci, LCVMM_NIC_PCI_DEV, nic_status, g)) {
        snprintf(err, errlen, "cannot place the %s on PCI",
                 nic_model_name(vm->opt.nic));
        return -1;
    }
    g->placed = true;
    /* held transmits, frames waiting for descriptors given back through
     * deferred writes, and a frame from a backend with a descriptor (TAP)
     * held in the chip until the guest gives descriptors in memory (the
     * PCnet's ring poll, nic_rx_waits_ring()) wait for the I/O thread's
     * tick */
    dev->has_fd = net_poll_fd(g->net) >= 0;
    dev->wants_tick = vm->opt.nic_opt.send_combine ||
                      vm->opt.nic_opt.latch_fast || dev->has_fd ||
                      nopt.direct;
    return 0;
}

static void nic_dev_exit(vmm *vm, vmm_device *dev)
{
    nic_dev *g = dev->state;
    (void)vm;
    if (!g)
        return;
    if (g->nic) {
        nic_flush(g->nic);
        nic_destroy(g->nic);
    }
    net_destroy(g->net);
    free(g);
}

/* Fixed combining sends at the beginning of the next exit; adaptive
 * combining at its end (nic_dev_exit_done). */
static bool nic_dev_pending(vmm_device *dev)
{
    nic_dev *g = dev->state;
    return !g->vm->opt.nic_opt.combine_adaptive && nic_tx_pending(g->nic);
}

/* vmm_exit_done: send what is held unless the guest kicked again since
 * the last exit (then the batch stays open). */
static bool nic_dev_exit_done(vmm_device *dev)
{
    nic_dev *g = dev->state;
    uint64_t kicks;
    bool now;

    if (!g->vm->opt.nic_opt.combine_adaptive)
        return false;
    kicks = nic_kick_count(g->nic);
    now = kicks == g->exit_kicks && nic_tx_pending(g->nic);
    g->exit_kicks = kicks;
    return now;
}

static bool nic_dev_waits(vmm_device *dev)
{
    nic *n = ((nic_dev *)dev->state)->nic;
    return nic_tx_pending(n) || nic_rx_waits_ring(n) || nic_kicks_deferred(n);
}

static void nic_dev_flush(vmm_device *dev)
{
    nic_flush(((nic_dev *)dev->state)->nic);
}

static int nic_dev_poll_fd(vmm_device *dev)
{
    nic_dev *g = dev->state;
    net_backend *be = g->net;
    /* a frame held in the chip (nic_poll_rx()): the backend's next frames
     * wait in the host behind it; vmm_io_update() wakes the I/O thread
     * when it is gone */
    if (nic_rx_pending(g->nic))
        return -1;
    return net_poll_fd(be);
}

static void nic_dev_poll(vmm_device *dev)
{
    nic_poll_rx(((nic_dev *)dev->state)->nic);
}

/* The deferred writes (nic_coalesced_ranges: the latch-only registers,
 * and while adaptive combining holds kicks also the transmit kick) at the
 * BAR's address, when --nic-opt has latch. */
static unsigned nic_dev_coalesced(vmm_device *dev, vmm_io_range *out,
                                  unsigned max)
{
    nic_dev *g = dev->state;
    uint32_t r[16][2];
    unsigned n;

    if (!g->vm->opt.nic_opt.latch_fast)
        return 0;
    n = nic_coalesced_ranges(g->nic, r, max < 16 ? max : 16);
    for (unsigned i = 0; i < n; i++)
        out[i] = (vmm_io_range){ !g->id.bar_is_io, g->bar + r[i][0],
                                 r[i][1], NULL };
    return n;
}

/* The model's direct page (devices/nic.h) at the BAR's address, while
 * the BAR is on the bus and decodes memory: descriptors the guest gives
 * back through RDT then cost no exit and no trap. Asked by the KVM back
 * end when the map changed (nic_bar_moved(), nic_command()). */
static unsigned nic_dev_direct(vmm_device *dev, vmm_ram_range *out,
                               unsigned max)
{
    nic_dev *g = dev->state;
    vmm *vm = g->vm;
    uint32_t off;
    void *hva;
    unsigned n = 0;

    if (!max || g->id.bar_is_io || !nic_direct_page(g->nic, &off, &hva))
        return 0;
    pthread_mutex_lock(&vm->pci_lock);      /* the BAR and command */
    if (g->mapped && pci_decodes(vm->pci, LCVMM_NIC_PCI_DEV))
        out[n++] = (vmm_ram_range){ (uint64_t)g->bar + off, NIC_DIRECT_SIZE,
                                    hva };
    pthread_mutex_unlock(&vm->pci_lock);
    return n;
}

static unsigned nic_dev_coalesced_gen(vmm_device *dev)
{
    return nic_coalesced_gen(((nic_dev *)dev->state)->nic);
}

static void nic_dev_stats(vmm_device *dev, vmm_stat_fn put, void *ctx)
{
    nic_dev *g = dev->state;
    const nic_stats *s = nic_get_stats(g->nic);
    const net_stats *t = &g->net->stats;

    put(ctx, "nic", "reg_reads", s->reg_reads);
    put(ctx, "nic", "reg_writes", s->reg_writes);
    put(ctx, "nic", "latch_accesses", s->latch_accesses);
    put(ctx, "nic", "tx_frames", s->tx_frames);
    put(ctx, "nic", "rx_frames", s->rx_frames);
    put(ctx, "nic", "rx_no_buffer", s->rx_no_buffer);
    put(ctx, "nic", "tx_combined", s->tx_combined);
    put(ctx, "nic", "tx_batches", s->tx_batches);
    put(ctx, "nic", "tx_batched", s->tx_batched);
    put(ctx, "nic", "combine_tries", s->combine_tries);
    put(ctx, "nic", "combine_failures", s->combine_failures);
    put(ctx, "nic", "combine_cheap", s->combine_cheap);
    put(ctx, "nic", "combine_rechecks", s->combine_rechecks);
    put(ctx, "nic", "irq_raised", s->irq_raised);
    put(ctx, "nic", "irq_line_calls", s->irq_line_calls);
    put(ctx, "nic", "irq_suppressed", s->irq_suppressed);
    put(ctx, "nic", "guest_errors", s->guest_errors);
    put(ctx, "nic", "resets", s->resets);
    put(ctx, "nic", "dma_errors", s->dma_errors);
    put(ctx, "nic", "direct_updates", s->direct_updates);
    put(ctx, "nic", "direct_bus", s->direct_bus);
    put(ctx, "net", "tx_frames", t->tx_frames);
    put(ctx, "net", "rx_frames", t->rx_frames);
    put(ctx, "net", "tx_dropped", t->tx_dropped);
    put(ctx, "net", "rx_dropped", t->rx_dropped);
    /* every frame the NIC handed over: tx_frames + tx_dropped + tx_queued
     * (backends/net.h, transmit accounting) */
    put(ctx, "net", "tx_offered", t->tx_offered);
    put(ctx, "net", "tx_queued", t->tx_queued);
    put(ctx, "net", "tx_retries", t->tx_retries);
    put(ctx, "net", "tx_short", t->tx_short);
    put(ctx, "net", "faults", t->faults);
    /* every frame the host offered: rx_frames + rx_dropped + rx_queued */
    put(ctx, "net", "rx_offered", t->rx_offered);
    put(ctx, "net", "rx_queued", t->rx_queued);
    put(ctx, "net", "rx_faults", t->rx_faults);
    put(ctx, "net", "arp_replies", t->arp_replies);
    put(ctx, "net", "icmp_replies", t->icmp_replies);
    put(ctx, "net", "udp_replies", t->udp_replies);
    put(ctx, "net", "ignored", t->ignored);
}

const vmm_device_ops vmm_nic_device = {
    .name = "nic",
    .init = nic_dev_init,
    .exit = nic_dev_exit,
    .pending = nic_dev_pending,
    .exit_done = nic_dev_exit_done,
    .flush = nic_dev_flush,
    .waits = nic_dev_waits,
    .poll_fd = nic_dev_poll_fd,
    .poll = nic_dev_poll,
    .coalesced = nic_dev_coalesced,
    .coalesced_gen = nic_dev_coalesced_gen,
    .direct = nic_dev_direct,
    .stats = nic_dev_stats,
};
