/* examples/guests/e1000.c: guest-e1000, an Intel 82540EM driver over the
 * memory BAR, running the echo workload.
 *
 * Bring-up per the 8254x SDM (chapter 14, "General Initialization and
 * Reset Operation"): mask interrupts (IMC), global reset (CTRL.RST, wait
 * for it to self-clear), link up (CTRL.SLU), the MAC from the EEPROM
 * through EERD (words 0-2) into RAL0/RAH0, clear the multicast table,
 * then 8-entry rings of legacy descriptors: RDBAL/RDBAH (written as two
 * 32-bit stores), RDLEN, RDH/RDT, RCTL (EN, BAM, BSIZE 2048, SECRC);
 * TDBAL/TDBAH, TDLEN, TDH/TDT, TIPG, TCTL (EN, PSP). In interrupt mode
 * IMS enables RXT0 | TXDW | LSC and the handler reads ICR (read to
 * clear). Transmission is kicked by advancing TDT, received descriptors
 * are returned by advancing RDT. All register accesses are single
 * 32-bit MOVs (lib/guest.h mmio_*). */
#include "hw/e1000_regs.h"
#include "net.h"

#define RING_SIZE 8          /* 8 x 16 bytes = 128: RDLEN/TDLEN granule */
#define BUF_SIZE 2048
#define RESET_POLL_BOUND 100000
#define EERD_POLL_BOUND 100000
#define LINK_POLL_BOUND 10000000
#define LINK_WAIT_TSC (6ull << 30)   /* ~2-3 s */

static struct e1000_rx_desc rx_ring[RING_SIZE] __attribute__((aligned(128)));
static struct e1000_tx_desc tx_ring[RING_SIZE] __attribute__((aligned(128)));
static uint8_t rx_buf[RING_SIZE][BUF_SIZE] __attribute__((aligned(16)));
static uint8_t tx_buf[RING_SIZE][BUF_SIZE] __attribute__((aligned(16)));
static bool tx_used[RING_SIZE];
static unsigned rx_next, tx_next;
static uintptr_t mmio;
static uint32_t rx_errors;
static struct nic nic;

static uint32_t rd(uint32_t reg) { return mmio_read32(mmio + reg); }
static void wr(uint32_t reg, uint32_t v) { mmio_write32(mmio + reg, v); }

/* linux=1: the register accesses of Linux's e1000 driver
 * (drivers/net/ethernet/intel/e1000/e1000_main.c) on the same rings, so
 * that the NIC paper's netperf request/response figure has a fair
 * counterpart here. Per interrupt (or, in poll mode, per poll that finds
 * a cause), as e1000_intr() and the NAPI poll e1000_clean() do:
 *   e1000_intr:       ICR read; if zero, not ours; IMC write of ~0 and
 *                     E1000_WRITE_FLUSH (a STATUS read)
 *   e1000_clean_rx_irq: every completed receive descriptor, frames
 *                     queued for the stack (here: rx_queue)
 *   e1000_alloc_rx_buffers: one RDT write for the refilled descriptors
 *   e1000_irq_enable: IMS write and E1000_WRITE_FLUSH (a STATUS read)
 * and e1000_xmit_frame -> e1000_tx_queue writes TDT once per frame. The
 * NAPI poll runs right in the handler (this guest has no softirqs). */
#define IMS_ENABLE_MASK (E1000_ICR_RXT0 | E1000_ICR_TXDW | E1000_ICR_LSC)
static bool linux_seq;
static uint8_t rx_queue[RING_SIZE][BUF_SIZE] __attribute__((aligned(16)));
static uint32_t rx_queue_len[RING_SIZE];
static unsigned rx_queue_head, rx_queue_count;

/* Interrupt handler and poll step alike: ICR is read-to-clear, which
 * also deasserts the interrupt; the rings say what happened. */
static void e1000_ack(void) { (void)rd(E1000_ICR); }

static bool e1000_send(const void *frame, uint32_t len)
{
    volatile struct e1000_tx_desc *d = &tx_ring[tx_next];
    struct net_wait w;

    /* A slot used before is free once the device wrote DD back (RS). */
    net_wait_begin(&nic, &w);
    while (tx_used[tx_next] && !(d->status & E1000_TXD_STA_DD))
        if (!net_wait_step(&nic, &w))
            return false;
    memcpy(tx_buf[tx_next], frame, len);
    d->addr = (uintptr_t)tx_buf[tx_next];
    d->length = (uint16_t)len;
    d->cso = 0;
    d->css = 0;
    d->special = 0;
    d->status = 0;
    d->cmd = E1000_TXD_CMD_EOP | E1000_TXD_CMD_IFCS | E1000_TXD_CMD_RS;
    tx_used[tx_next] = true;
    tx_next = (tx_next + 1) % RING_SIZE;
    barrier();
    wr(E1000_TDT, tx_next);     /* hand the descriptor to the device */
    return true;
}

static uint32_t e1000_recv(void *buf, uint32_t max)
{
    for (int tries = 0; tries < RING_SIZE; tries++) {
        volatile struct e1000_rx_desc *d = &rx_ring[rx_next];
        uint8_t status = d->status;
        if (!(status & E1000_RXD_STA_DD))
            return 0;
        barrier();
        uint32_t len = d->length;
        unsigned slot = rx_next;
        bool good = (status & E1000_RXD_STA_EOP) && !d->errors && len &&
                    len <= BUF_SIZE;
        if (good)
            memcpy(buf, rx_buf[slot], len < max ? len : max);
        else
            rx_errors++;        /* multi-descriptor or errored frame: drop */
        d->status = 0;
        d->length = 0;
        barrier();
        rx_next = (rx_next + 1) % RING_SIZE;
        wr(E1000_RDT, slot);    /* the descriptor is the device's again */
        if (good)
            return len < max ? len : max;
    }
    return 0;
}

/* One EEPROM word through EERD; false if DONE never comes. */
/* e1000_clean_rx_irq + e1000_alloc_rx_buffers: take every completed
 * descriptor into rx_queue (a full queue leaves the rest in the ring),
 * then give the descriptors back with one RDT write. */
static void linux_clean_rx(void)
{
    unsigned last = RING_SIZE;
    while (rx_queue_count < RING_SIZE) {
        volatile struct e1000_rx_desc *d = &rx_ring[rx_next];
        uint8_t status = d->status;
        if (!(status & E1000_RXD_STA_DD))
            break;
        barrier();
        uint32_t len = d->length;
        if ((status & E1000_RXD_STA_EOP) && !d->errors && len && len <= BUF_SIZE) {
            unsigned q = (rx_queue_head + rx_queue_count) % RING_SIZE;
            memcpy(rx_queue[q], rx_buf[rx_next], len);
            rx_queue_len[q] = len;
            rx_queue_count++;
        } else {
            rx_errors++;
        }
        d->status = 0;
        d->length = 0;
        last = rx_next;
        rx_next = (rx_next + 1) % RING_SIZE;
    }
    if (last != RING_SIZE) {
        barrier();              /* wmb() before the tail write */
        wr(E1000_RDT, last);
    }
}

/* e1000_intr, with the NAPI poll (e1000_clean) and e1000_irq_enable. */
static void linux_intr(void)
{
    uint32_t icr = rd(E1000_ICR);
    if (!icr)
        return;                 /* IRQ_NONE */
    wr(E1000_IMC, ~0u);
    (void)rd(E1000_STATUS);     /* E1000_WRITE_FLUSH */
    linux_clean_rx();
    wr(E1000_IMS, IMS_ENABLE_MASK);
    (void)rd(E1000_STATUS);     /* E1000_WRITE_FLUSH */
}

static uint32_t linux_recv(void *buf, uint32_t max)
{
    if (!rx_queue_count)
        return 0;
    uint32_t len = rx_queue_len[rx_queue_head];
    memcpy(buf, rx_queue[rx_queue_head], len < max ? len : max);
    rx_queue_head = (rx_queue_head + 1) % RING_SIZE;
    rx_queue_count--;
    return len < max ? len : max;
}

static bool eeprom_read(uint8_t addr, uint16_t *out)
{
    wr(E1000_EERD, (uint32_t)addr << E1000_EERD_ADDR_SHIFT | E1000_EERD_START);
    for (int i = 0; i < EERD_POLL_BOUND; i++) {
        uint32_t v = rd(E1000_EERD);
        if (v & E1000_EERD_DONE) {
            *out = (uint16_t)(v >> E1000_EERD_DATA_SHIFT);
            return true;
        }
    }
    return false;
}

static bool e1000_init(const struct guest_args *args)
{
    struct pci_dev pci;

    if (!pci_find_mmio(E1000_VENDOR_ID, E1000_DEVICE_ID, "e1000", &pci, &mmio))
        return false;
    pci_enable(&pci, PCI_CMD_MEM | PCI_CMD_MASTER);

    /* Reset: interrupts masked before and after (SDM 14.5). */
    wr(E1000_IMC, 0xffffffff);
    wr(E1000_CTRL, rd(E1000_CTRL) | E1000_CTRL_RST);
    uint32_t ctrl = E1000_CTRL_RST;
    for (int i = 0; i < RESET_POLL_BOUND && (ctrl & E1000_CTRL_RST); i++)
        ctrl = rd(E1000_CTRL);
    if (ctrl & E1000_CTRL_RST) {
        printf("error: e1000: CTRL.RST did not clear\n");
        return false;
    }
    wr(E1000_IMC, 0xffffffff);
    (void)rd(E1000_ICR);
    wr(E1000_CTRL, ctrl | E1000_CTRL_SLU | E1000_CTRL_ASDE);

    /* MAC address: EEPROM words 0-2, little endian (SDM 5.6.1). */
    for (uint8_t i = 0; i < 3; i++) {
        uint16_t word;
        if (!eeprom_read(i, &word)) {
            printf("error: e1000: EERD read of word %u timed out\n", i);
            return false;
        }
        nic.mac[2 * i] = (uint8_t)word;
        nic.mac[2 * i + 1] = (uint8_t)(word >> 8);
    }
    wr(E1000_RAL(0), (uint32_t)nic.mac[0] | (uint32_t)nic.mac[1] << 8 |
                   (uint32_t)nic.mac[2] << 16 | (uint32_t)nic.mac[3] << 24);
    wr(E1000_RAH(0), (uint32_t)nic.mac[4] | (uint32_t)nic.mac[5] << 8 |
       E1000_RAH_AV);
    for (uint32_t i = 0; i < 128; i++)
        wr(E1000_MTA + 4 * i, 0);

    /* Receive ring: every descriptor but one is the device's (RDT is
     * one behind RDH when the ring is full of empty buffers). */
    for (int i = 0; i < RING_SIZE; i++) {
        rx_ring[i] = (struct e1000_rx_desc){.addr = (uintptr_t)rx_buf[i]};
        tx_ring[i] = (struct e1000_tx_desc){0};
        tx_used[i] = false;
    }
    rx_next = tx_next = 0;
    barrier();
    uint64_t rx_base = (uintptr_t)rx_ring, tx_base = (uintptr_t)tx_ring;
    wr(E1000_RDBAL, (uint32_t)rx_base);          /* a 64-bit base as two */
    wr(E1000_RDBAH, (uint32_t)(rx_base >> 32));  /* adjacent 32-bit writes */
    wr(E1000_RDLEN, sizeof rx_ring);
    wr(E1000_RDH, 0);
    wr(E1000_RDT, RING_SIZE - 1);
    wr(E1000_RDTR, 0);
    wr(E1000_RADV, 0);
    wr(E1000_ITR, 0);
    wr(E1000_RCTL, E1000_RCTL_EN | E1000_RCTL_BAM | E1000_RCTL_BSIZE(0) |
       E1000_RCTL_SECRC);

    wr(E1000_TDBAL, (uint32_t)tx_base);
    wr(E1000_TDBAH, (uint32_t)(tx_base >> 32));
    wr(E1000_TDLEN, sizeof tx_ring);
    wr(E1000_TDH, 0);
    wr(E1000_TDT, 0);
    /* IPGT 10, IPGR1 8, IPGR2 6: the SDM's values for copper (13.4.34). */
    wr(E1000_TIPG, 10 | 8 << 10 | 6 << 20);
    wr(E1000_TCTL, E1000_TCTL_EN | E1000_TCTL_PSP | E1000_TCTL_CT(0x0f) |
       E1000_TCTL_COLD(0x40));

    /* Bounded wait for link up (STATUS.LU): after a reset the link
     * renegotiates (QEMU models ~0.5 s of auto-negotiation). */
    uint64_t t0 = rdtsc();
    uint32_t status = rd(E1000_STATUS);
    for (uint32_t i = 0; i < LINK_POLL_BOUND && !(status & E1000_STATUS_LU) &&
                         rdtsc() - t0 < LINK_WAIT_TSC; i++)
        status = rd(E1000_STATUS);
    if (!(status & E1000_STATUS_LU))
        printf("e1000: link still down (STATUS=0x%x), going on\n", status);

    if (args->irq) {
        irq_attach(pci.irq_line, linux_seq ? linux_intr : e1000_ack);
        wr(E1000_IMS, IMS_ENABLE_MASK);
    }
    printf("e1000: 00:%02x.%u mmio=0x%lx irq=%u mac=%02x:%02x:%02x:%02x:%02x:%02x\n",
           pci.dev, pci.fn, (unsigned long)mmio, pci.irq_line, nic.mac[0], nic.mac[1], nic.mac[2], nic.mac[3], nic.mac[4], nic.mac[5]);
    return true;
}

static void e1000_stats(void)
{
    if (rx_errors)
        printf("e1000: rx_errors=%u\n", rx_errors);
}

const struct guest_info guest_info = {.name = "e1000", .default_n = 100};

int guest_main(const struct guest_args *args)
{
    linux_seq = args->linux_seq != 0;
    nic = (struct nic){
        .name = "e1000",
        .irq_mode = args->irq != 0,
        .send = e1000_send,
        .recv = linux_seq ? linux_recv : e1000_recv,
        .poll = linux_seq ? linux_intr : e1000_ack,
        .stats = e1000_stats,
    };
    if (!e1000_init(args)) {
        printf("guest=e1000 cpl=%u irq=%u exchanges=0 ok=0 checksum=0x00000000\n",
               args->cpl, args->irq);
        return EXIT_NODEV;
    }
    return net_echo_workload(&nic, args);
}
