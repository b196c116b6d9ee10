/* SPDX-License-Identifier: MIT */
/*
 * The NIC front: creation and dispatch to the two models, access checks,
 * statistics, and the three optimizations of Sugerman et al. section 3.3 that
 * do not depend on the model (nic.h):
 *
 *   irq_coalesce  nic_set_irq() drives vm_irq.set only when the level
 *                 changes; without it every interrupt-state update of a
 *                 model is a call. irq_raised counts low-to-high
 *                 transitions in both modes.
 *   send_combine  nic_tx_kick() queues transmit kicks: the frames stay in
 *                 the guest's ring, still owned by the device, until
 *                 combine_max kicks have arrived or nic_flush() runs; then
 *                 one ring walk sends them all and the model raises one
 *                 interrupt for the batch. tx_combined counts the kicks
 *                 that waited (the kick that completes a batch does not
 *                 wait), tx_batches the walks that served waiting kicks.
 *   latch_fast    a property of the model (nic_access_is_latch); here it
 *                 only means that a latch access does not pull received
 *                 frames afterwards, so the VMM's fast path, which defers
 *                 latch writes, behaves exactly like the slow path.
 */
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>

#include "hw/e1000_regs.h"
#include "hw/pcnet_regs.h"
#include "nic_model.h"

#define NIC_COMBINE_DEFAULT 3

static uint64_t nic_now(const nic *n)
{
    return n->opt.clock ? n->opt.clock(n->opt.clock_opaque) : 0;
}

static const nic_model_ops *ops_of(nic_model m)
{
    switch (m) {
    case NIC_PCNET: return &nic_pcnet_ops;
    case NIC_E1000: return &nic_e1000_ops;
    default:        return NULL;
    }
}

nic *nic_create(nic_model model, const uint8_t mac[6], const vm_dma *dma,
                const vm_irq *irq, net_backend *be, const nic_options *opt)
{
    const nic_model_ops *ops = ops_of(model);
    nic *n;

    if (!ops || !mac || !dma || !dma->read || !dma->write || !irq ||
        !irq->set)
        return NULL;
    n = calloc(1, sizeof *n);
    if (!n)
        return NULL;
    n->state = calloc(1, ops->state_size);
    if (!n->state) {
        free(n);
        return NULL;
    }
    n->model = model;
    n->ops = ops;
    memcpy(n->mac, mac, 6);
    n->dma = dma;
    n->irq = irq;
    n->be = be;
    if (opt)
        n->opt = *opt;
    if (n->opt.combine_max == 0)
        n->opt.combine_max = NIC_COMBINE_DEFAULT;
    sc_config_default(&n->sc_cfg, n->opt.combine_period);
    n->sc_cfg.max_held = n->opt.combine_max;
    n->sc_cfg.count_switches = n->opt.switches != NULL;
    if (n->opt.switches)
        n->switches_fed = n->opt.switches(n->opt.clock_opaque);
    sc_init(&n->sc, nic_now(n));
    if (n->opt.direct && ops->direct_pull) {
        void *p = mmap(NULL, NIC_DIRECT_SIZE, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        n->direct = p == MAP_FAILED ? NULL : p;    /* then served as MMIO */
    }
    ops->reset(n);
    return n;
}

void nic_destroy(nic *n)
{
    if (!n)
        return;
    if (n->direct)
        munmap(n->direct, NIC_DIRECT_SIZE);
    free(n->state);
    free(n);
}

nic_model nic_model_of(const nic *n)
{
    return n ? n->model : NIC_NONE;
}

const char *nic_model_name(nic_model m)
{
    switch (m) {
    case NIC_PCNET: return "pcnet";
    case NIC_E1000: return "e1000";
    default:        return "none";
    }
}

nic_model nic_model_parse(const char *s)
{
    if (!s)
        return NIC_NONE;
    if (!strcasecmp(s, "pcnet") || !strcasecmp(s, "am79c970a"))
        return NIC_PCNET;
    if (!strcasecmp(s, "e1000") || !strcasecmp(s, "82540em"))
        return NIC_E1000;
    return NIC_NONE;
}

void nic_pci_identity(nic_model m, nic_pci_id *id)
{
    memset(id, 0, sizeof *id);
    id->class_code = 0x02;                  /* network controller */
    id->subclass = 0x00;                    /* Ethernet */
    switch (m) {
    case NIC_PCNET:                         /* AMD PCnet-PCI II */
        id->vendor = PCNET_VENDOR_ID;
        id->device = PCNET_DEVICE_ID;
        id->subsys_vendor = PCNET_VENDOR_ID;
        id->subsys = PCNET_DEVICE_ID;
        id->revision = 0x10;
        id->bar_is_io = true;
        break;
    case NIC_E1000:                         /* Intel 82540EM */
        id->vendor = E1000_VENDOR_ID;
        id->device = E1000_DEVICE_ID;
        id->subsys_vendor = E1000_VENDOR_ID;
        id->subsys = 0x001e;
        id->revision = 0x03;
        id->bar_is_io = false;
        break;
    default:
        id->class_code = 0;
        return;
    }
    id->bar_size = ops_of(m)->bar_size;     /* the model's own register file */
}

/* The model's receive, from every path: whether the frame it leaves held
 * waits for the ring (nic_rx_waits_ring()) is what this try found. With
 * a direct page the model first takes in what the guest wrote there; a
 * descriptor given back there tells nobody, so a frame that waits for
 * one is taken into the chip and held, and the VMM's tick retries it
 * (nic_rx_waits_ring()) as it does for the PCnet's ring poll. */
static void model_poll_rx(nic *n)
{
    if (n->direct)
        n->ops->direct_pull(n);
    n->rx_ring_wait = false;
    n->ops->poll_rx(n);
    if (n->direct && n->rx_ring_wait && !n->rx_len)
        nic_rx_peek(n);
}

/* An access through nic_access() to the direct page (a libcluster run,
 * the Unicorn back end, a VMM that did not map it): what the guest's own
 * access would do with the page mapped, a load or a store of its size. */
static void direct_access(nic *n, uint32_t off, unsigned size, bool is_write,
                          uint32_t *val)
{
    void *p = n->direct + off;

    if (is_write) {
        if (size == 1)
            __atomic_store_n((uint8_t *)p, (uint8_t)*val, __ATOMIC_RELEASE);
        else if (size == 2)
            __atomic_store_n((uint16_t *)p, (uint16_t)*val, __ATOMIC_RELEASE);
        else
            __atomic_store_n((uint32_t *)p, *val, __ATOMIC_RELEASE);
    } else if (size == 1) {
        *val = __atomic_load_n((uint8_t *)p, __ATOMIC_ACQUIRE);
    } else if (size == 2) {
        *val = __atomic_load_n((uint16_t *)p, __ATOMIC_ACQUIRE);
    } else {
        *val = __atomic_load_n((uint32_t *)p, __ATOMIC_ACQUIRE);
    }
}

bool nic_direct_page(const nic *n, uint32_t *offset, void **hva)
{
    if (!n->direct)
        return false;
    *offset = n->ops->direct_page;
    *hva = n->direct;
    return true;
}

/* ---- register access ------------------------------------------------ */

/* All ones of an access of `size` bytes (of 4 bytes if not 1 or 2). */
static uint32_t size_mask(unsigned size)
{
    return size == 1 || size == 2 ? (1u << (8 * size)) - 1 : 0xffffffffu;
}

static bool access_ok(const nic *n, uint32_t off, unsigned size)
{
    if (size != 1 && size != 2 && size != 4)
        return false;
    if (off % size)
        return false;
    return off < n->ops->bar_size && size <= n->ops->bar_size - off;
}

void nic_access(nic *n, uint32_t offset, unsigned size, bool is_write,
                uint32_t *val)
{
    bool latch;

    if (is_write)
        n->stats.reg_writes++;
    else
        n->stats.reg_reads++;
    if (!access_ok(n, offset, size)) {
        nic_guest_error(n, "%s of size %u at BAR offset %#x ignored",
                        is_write ? "write" : "read", size, offset);
        if (!is_write)
            *val = size_mask(size);
        return;
    }
    if (n->busy) {              /* a VMM bug, not the guest's: refuse */
        if (!is_write)
            *val = size_mask(size);
        return;
    }
    n->busy = true;
    if (n->direct && offset - n->ops->direct_page < NIC_DIRECT_SIZE) {
        uint32_t v = *val & size_mask(size);
        n->stats.direct_bus++;
        direct_access(n, offset - n->ops->direct_page, size, is_write, &v);
        if (!is_write)
            *val = v;
        model_poll_rx(n);           /* takes a write in first */
        n->busy = false;
        return;
    }
    if (n->direct)                  /* the guest's writes there come first */
        n->ops->direct_pull(n);
    latch = n->ops->is_latch(n, offset, size);
    if (latch)
        n->stats.latch_accesses++;
    if (is_write) {
        n->ops->write(n, offset, size, *val & size_mask(size));
    } else {
        uint32_t v = 0;
        n->ops->read(n, offset, size, &v);
        *val = v & size_mask(size);
    }
    /* Frames the peer answered with (or that TAP delivered) reach the
     * guest right away; a latch access stays free of side effects. */
    if (!latch)
        model_poll_rx(n);
    n->busy = false;
}

bool nic_access_is_latch(const nic *n, uint32_t offset, unsigned size)
{
    if (!access_ok(n, offset, size))
        return false;
    return n->ops->is_latch(n, offset, size);
}

unsigned nic_latch_ranges(const nic *n, uint32_t (*ranges)[2], unsigned max)
{
    return n->ops->latch_ranges(n, ranges, max);
}

unsigned nic_coalesced_ranges(const nic *n, uint32_t (*ranges)[2],
                              unsigned max)
{
    if (n->ops->coalesced_ranges)
        return n->ops->coalesced_ranges(n, ranges, max);
    return n->ops->latch_ranges(n, ranges, max);
}

/* The I/O thread's entry, when the backend's descriptor is readable, and
 * its tick's. With a backend that has a descriptor (TAP), what the model
 * could not take (its receiver off, no bus mastering, no usable ring, no
 * free descriptor) is taken into the chip and held, as in its FIFO: the
 * descriptor is then left out of the poll set while the frame waits (the
 * VMM's nic_dev_poll_fd()), and the next frames wait in the host, as
 * QEMU's can_receive() leaves them. Left in the backend, it kept a
 * level-triggered TAP descriptor readable and the I/O thread polling it
 * without end. */
void nic_poll_rx(nic *n)
{
    if (n->busy)
        return;
    n->busy = true;
    model_poll_rx(n);
    /* Only a backend with a descriptor needs the hold; the built-in
     * peer's queue waits for the guest as it is. A frame that came after
     * the model's try (it found none) may be one it can take: it is
     * offered again once held. */
    if (!n->rx_len && n->be && net_poll_fd(n->be) >= 0 && nic_rx_peek(n))
        model_poll_rx(n);
    n->busy = false;
}

void nic_set_bus_master(nic *n, bool enabled)
{
    bool was = n->bus_master;

    n->bus_master = enabled;
    if (!enabled || was || n->busy)
        return;
    n->busy = true;
    n->ops->resume(n);
    model_poll_rx(n);
    n->busy = false;
}

const nic_stats *nic_get_stats(const nic *n)
{
    return &n->stats;
}

/* ---- helpers for the models ----------------------------------------- */

void nic_guest_error(nic *n, const char *fmt, ...)
{
    char msg[256];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    n->stats.guest_errors++;
    dev_guest_error(n->ops->name, "%s", msg);
}

void nic_set_irq(nic *n, bool level)
{
    bool changed = level != n->irq_level;

    if (changed && level)
        n->stats.irq_raised++;
    n->irq_level = level;
    if (n->opt.irq_coalesce && !changed) {
        n->stats.irq_suppressed++;
        return;
    }
    n->stats.irq_line_calls++;
    n->irq->set(n->irq->opaque, n->irq->gsi, level ? 1 : 0);
}

/* A DMA that reached no RAM: the guest pointed a ring or buffer at MMIO
 * (its own BAR, the APIC), past the end of RAM or across the top of the
 * address space (vm_dma refuses all of them, nothing is copied). On PCI
 * the transfer ends in a master abort, which the function records in its
 * Status register (Received Master Abort, bit 13; PCI Local Bus
 * Specification 3.0, 6.2.3) until software writes 1 there; the model then
 * stops its DMA as its datasheet says (PCnet CSR0.MERR, the e1000's ring
 * halted), see pcnet.c and e1000.c. */
static int dma_failed(nic *n)
{
    n->stats.dma_errors++;
    n->pci_status |= NIC_PCI_STATUS_RMA;
    return -1;
}

int nic_dma_read(nic *n, uint64_t gpa, void *buf, size_t len)
{
    if (!n->bus_master)
        return -1;              /* no transfer at all: not an abort */
    return dma_read(n->dma, gpa, buf, len) < 0 ? dma_failed(n) : 0;
}

int nic_dma_write(nic *n, uint64_t gpa, const void *buf, size_t len)
{
    if (!n->bus_master)
        return -1;
    return dma_write(n->dma, gpa, buf, len) < 0 ? dma_failed(n) : 0;
}

uint16_t nic_pci_status(nic *n, uint16_t w1c)
{
    uint16_t v = n->pci_status;

    n->pci_status &= (uint16_t)~w1c;
    return v;
}

/* Adaptive combining went on or off: the deferred writes may change. */
static void combine_switched(nic *n)
{
    nic_coalesced_changed(n);
}

void nic_coalesced_changed(nic *n)
{
    __atomic_store_n(&n->coalesced_gen, n->coalesced_gen + 1,
                     __ATOMIC_RELAXED);
}

unsigned nic_coalesced_gen(const nic *n)
{
    return __atomic_load_n(&n->coalesced_gen, __ATOMIC_RELAXED);
}

uint64_t nic_kick_count(const nic *n)
{
    return __atomic_load_n(&n->kicks, __ATOMIC_RELAXED);
}

bool nic_kicks_deferred(const nic *n)
{
    return nic_combining(n) && n->ops->defers_kicks;
}

/* Send combining (Sugerman et al. section 3.3): leave the frames in the
 * guest's ring and count the kick, until the batch is full; with combine_adaptive only
 * while send_combine.h's policy says holding pays. */
void nic_tx_kick(nic *n)
{
    __atomic_store_n(&n->kicks, n->kicks + 1, __ATOMIC_RELAXED);
    if (!n->opt.send_combine) {
        n->ops->transmit(n);
        return;
    }
    if (n->opt.combine_adaptive) {
        uint64_t tries = n->sc.tries, fails = n->sc.failures;
        uint64_t cheap = n->sc.cheap, rechecks = n->sc.rechecks;
        uint64_t now = nic_now(n);
        bool was = n->sc.active;
        sc_action a;

        if (n->opt.switches) {
            uint64_t sw = n->opt.switches(n->opt.clock_opaque);

            sc_switches(&n->sc, &n->sc_cfg, sw - n->switches_fed, now);
            n->switches_fed = sw;
        }
        a = sc_request(&n->sc, &n->sc_cfg, n->tx_queued, now);
        n->stats.combine_tries += n->sc.tries - tries;
        n->stats.combine_failures += n->sc.failures - fails;
        n->stats.combine_cheap += n->sc.cheap - cheap;
        n->stats.combine_rechecks += n->sc.rechecks - rechecks;
        if (n->sc.active != was)
            combine_switched(n);
        __atomic_store_n(&n->tx_queued, n->tx_queued + 1, __ATOMIC_RELAXED);
        if (a == SC_HOLD) {
            n->stats.tx_combined++;
            return;
        }
        nic_tx_now(n);
        return;
    }
    if (n->tx_queued + 1 < n->opt.combine_max) {
        /* read without the device lock by nic_tx_pending() */
        __atomic_store_n(&n->tx_queued, n->tx_queued + 1, __ATOMIC_RELAXED);
        n->stats.tx_combined++;
        return;
    }
    __atomic_store_n(&n->tx_queued, n->tx_queued + 1, __ATOMIC_RELAXED);
    nic_tx_now(n);
}

void nic_tx_now(nic *n)
{
    /* a lone kick sent at once is no batch */
    if (n->tx_queued > 1 || (n->tx_queued && !n->opt.combine_adaptive)) {
        n->stats.tx_batches++;
        n->stats.tx_batched += n->tx_queued;
    }
    __atomic_store_n(&n->tx_queued, 0, __ATOMIC_RELAXED);
    n->ops->transmit(n);
}

void nic_tx_cancel(nic *n)
{
    __atomic_store_n(&n->tx_queued, 0, __ATOMIC_RELAXED);
}

bool nic_tx_pending(const nic *n)
{
    return __atomic_load_n(&n->tx_queued, __ATOMIC_RELAXED) != 0;
}

bool nic_rx_pending(const nic *n)
{
    return n->rx_len != 0;
}

bool nic_rx_waits_ring(const nic *n)
{
    return n->rx_len != 0 && n->rx_ring_wait;
}

void nic_flush(nic *n)
{
    if (n->busy || !n->tx_queued)
        return;
    n->busy = true;
    if (n->opt.combine_adaptive) {
        uint64_t fails = n->sc.failures;
        bool was = n->sc.active;
        sc_sent(&n->sc, &n->sc_cfg, n->tx_queued, nic_now(n));
        n->stats.combine_failures += n->sc.failures - fails;
        if (n->sc.active != was)
            combine_switched(n);
        if (n->tx_queued == 1) {        /* held, but combined with nothing */
            n->stats.tx_batches++;
            n->stats.tx_batched++;
        }
    }
    nic_tx_now(n);
    model_poll_rx(n);
    n->busy = false;
}

size_t nic_tx_frame(nic *n, uint8_t *frame, size_t len, bool pad)
{
    /* both chips pad short frames with zeros when the driver asks
     * (PCnet CSR4.APAD_XMT, e1000 TCTL.PSP); `frame` has room for it */
    if (len < NIC_FRAME_PAD && pad) {
        memset(frame + len, 0, NIC_FRAME_PAD - len);
        len = NIC_FRAME_PAD;
    }
    if (len < NET_FRAME_MIN) {
        nic_guest_error(n, "runt transmit frame of %zu bytes dropped", len);
        return 0;
    }
    n->stats.tx_frames++;
    if (n->be)
        net_tx(n->be, frame, len);
    return len;
}

/* ---- received frames ------------------------------------------------ */

/* The Ethernet CRC-32 (reflected polynomial 0xEDB88320), a byte at a time
 * from a table built once: a received frame gets its FCS here when the
 * chip stores it (nic_rx_fcs), and the bitwise loop showed in profiles of
 * the e1000 guest. */
static uint32_t crc_table[256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_table_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int b = 0; b < 8; b++)
            c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1)));
        crc_table[i] = c;
    }
}

uint32_t nic_crc32(const uint8_t *p, size_t len)
{
    uint32_t crc = 0xffffffffu;

    pthread_once(&crc_once, crc_table_init);
    for (size_t i = 0; i < len; i++)
        crc = (crc >> 8) ^ crc_table[(crc ^ p[i]) & 0xff];
    return crc;
}

size_t nic_rx_peek(nic *n)
{
    size_t len;

    if (n->rx_len)
        return n->rx_len;
    if (!n->be)
        return 0;
    /* The buffer keeps NIC_FCS_LEN bytes past NET_FRAME_MAX for the FCS;
     * a backend must not return more than the cap it was given. */
    len = net_rx(n->be, n->rx_buf, NET_FRAME_MAX);
    if (len == 0)
        return 0;
    if (len > NET_FRAME_MAX)
        len = NET_FRAME_MAX;
    if (len < NIC_FRAME_PAD) {          /* the sender's MAC pads */
        memset(n->rx_buf + len, 0, NIC_FRAME_PAD - len);
        len = NIC_FRAME_PAD;
    }
    n->rx_fcs = false;
    n->rx_len = len;
    return len;
}

void nic_rx_fcs(nic *n)
{
    if (!n->rx_len || n->rx_fcs)
        return;
    nic_put32(n->rx_buf + n->rx_len, ~nic_crc32(n->rx_buf, n->rx_len));
    n->rx_fcs = true;
}

bool nic_rx_wait(nic *n)
{
    n->rx_ring_wait = true;     /* the receiver is on, the ring full */
    if (!n->rx_len || n->rx_waiting)
        return false;
    n->rx_waiting = true;
    n->stats.rx_no_buffer++;
    return true;
}

void nic_rx_consume(nic *n)
{
    n->rx_len = 0;
    n->rx_waiting = false;
    n->stats.rx_frames++;
}

void nic_rx_drop(nic *n)
{
    n->rx_len = 0;
    n->rx_waiting = false;
}
