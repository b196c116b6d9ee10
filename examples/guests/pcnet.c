/* examples/guests/pcnet.c: guest-pcnet, an AMD PCnet-PCI II
 * (Am79C970A) driver in 16-bit word I/O mode, running the echo workload.
 *
 * Register references are to the Am79C970A datasheet (AMD publication
 * 19436): the I/O resource map ("Word I/O mode": APROM at 00h-0Fh, RDP
 * 10h, RAP 12h, RESET 14h, BDP 16h), CSR0 (controller status), CSR1/2
 * (initialisation block address), CSR88/89 (chip ID), BCR20 (software
 * style), the SSIZE32 initialisation block and the SWSTYLE 2 descriptor
 * formats (RMD0-3, TMD0-3). The bring-up follows the order the Linux
 * pcnet32 driver uses in word I/O mode: reset by reading RESET, check
 * CSR0 = STOP and the RAP read-back, read the MAC from the APROM, select
 * SWSTYLE 2 in BCR20, point CSR1/CSR2 at the initialisation block, set
 * INIT and wait for IDON, then STRT (with INEA in interrupt mode).
 * Transmission is kicked with TDMD. Every register access is a 16-bit
 * IN/OUT (the APROM is read bytewise). */
#include "hw/pcnet_regs.h"
#include "net.h"

#define RING_LOG2 3
#define RING_SIZE (1 << RING_LOG2)
#define BUF_SIZE 2048
#define FCS_LEN 4          /* MCNT counts the FCS (no ASTRP_RCV) */
#define IDON_POLL_BOUND 100000
#define RESET_POLL_BOUND 10000

static struct pcnet_rx_desc32 rx_ring[RING_SIZE] __attribute__((aligned(16)));
static struct pcnet_tx_desc32 tx_ring[RING_SIZE] __attribute__((aligned(16)));
static struct pcnet_init_block32 iblock __attribute__((aligned(16)));
static uint8_t rx_buf[RING_SIZE][BUF_SIZE] __attribute__((aligned(16)));
static uint8_t tx_buf[RING_SIZE][BUF_SIZE] __attribute__((aligned(16)));
static unsigned rx_next, tx_next;
static uint16_t io;
static uint32_t rx_errors, tx_errors;
static uint16_t rx_err_status, rx_err_mcnt;     /* the first one dropped */
static struct nic nic;

static uint16_t csr_read(uint16_t reg)
{
    outw(io + PCNET_RAP, reg);
    return inw(io + PCNET_RDP);
}

static void csr_write(uint16_t reg, uint16_t v)
{
    outw(io + PCNET_RAP, reg);
    outw(io + PCNET_RDP, v);
}

static void bcr_write(uint16_t reg, uint16_t v)
{
    outw(io + PCNET_RAP, reg);
    outw(io + PCNET_BDP, v);
}

static uint16_t inea(void) { return nic.irq_mode ? CSR0_INEA : 0; }

/* Interrupt handler and poll step alike: read CSR0, acknowledge its
 * status bits by writing them back (keeping INEA in interrupt mode). */
static void pcnet_ack(void)
{
    uint16_t csr0 = csr_read(0);
    if (csr0 & CSR0_W1C)
        csr_write(0, (uint16_t)((csr0 & CSR0_W1C) | inea()));
}

static uint16_t neg_bcnt(uint32_t len)
{
    return (uint16_t)(PCNET_DESC_ONES | ((0u - len) & 0x0fff));
}

static bool pcnet_send(const void *frame, uint32_t len)
{
    struct pcnet_tx_desc32 *d = &tx_ring[tx_next];
    struct net_wait w;

    net_wait_begin(&nic, &w);
    while (*(volatile uint16_t *)&d->status & PCNET_DESC_OWN)
        if (!net_wait_step(&nic, &w))
            return false;
    if (d->status & PCNET_DESC_ERR)
        tx_errors++;
    memcpy(tx_buf[tx_next], frame, len);
    d->tbadr = (uint32_t)(uintptr_t)tx_buf[tx_next];
    d->bcnt = neg_bcnt(len);
    d->misc = 0;
    barrier();
    /* OWN last: the descriptor is the device's from here on. */
    *(volatile uint16_t *)&d->status =
        PCNET_DESC_OWN | PCNET_DESC_STP | PCNET_DESC_ENP;
    barrier();
    csr_write(0, (uint16_t)(CSR0_TDMD | inea()));   /* transmit demand */
    tx_next = (tx_next + 1) % RING_SIZE;
    return true;
}

/* batch=: frames staged in tx_buf from tx_next on, not yet the device's
 * (net.h, nic.stage and nic.post). */
static unsigned tx_staged;
static uint16_t tx_staged_bcnt[RING_SIZE];

static void pcnet_post(bool fill)
{
    /* Locals, so that the loop keeps them in registers: per frame it then
     * touches memory only for the descriptor, as pcnet32_start_xmit does
     * (length, misc, base, status) when fill is clear; with fill set
     * stage() wrote all but status. Then TDMD through RAP and RDP. */
    const uint16_t rap = (uint16_t)(io + PCNET_RAP), rdp = (uint16_t)(io + PCNET_RDP);
    const uint16_t kick = (uint16_t)(CSR0_TDMD | inea());
    unsigned i = tx_next, k = tx_staged;

    for (; k; k--) {
        struct pcnet_tx_desc32 *d = &tx_ring[i];
        if (!fill) {
            d->bcnt = tx_staged_bcnt[i];
            d->misc = 0;
            d->tbadr = (uint32_t)(uintptr_t)tx_buf[i];
        }
        barrier();
        *(volatile uint16_t *)&d->status =
            PCNET_DESC_OWN | PCNET_DESC_STP | PCNET_DESC_ENP;
        barrier();
        outw(rap, 0);
        outw(rdp, kick);
        i = (i + 1) % RING_SIZE;
    }
    tx_next = i;
    tx_staged = 0;
}

static bool pcnet_stage(const void *frame, uint32_t len, bool fill)
{
    struct net_wait w;

    if (tx_staged == RING_SIZE)
        pcnet_post(fill);
    unsigned slot = (tx_next + tx_staged) % RING_SIZE;
    struct pcnet_tx_desc32 *d = &tx_ring[slot];

    net_wait_begin(&nic, &w);
    while (*(volatile uint16_t *)&d->status & PCNET_DESC_OWN)
        if (!net_wait_step(&nic, &w))
            return false;
    if (d->status & PCNET_DESC_ERR)
        tx_errors++;
    memcpy(tx_buf[slot], frame, len);
    tx_staged_bcnt[slot] = neg_bcnt(len);
    if (fill) {
        /* Not the device's until status gets OWN (post). */
        d->tbadr = (uint32_t)(uintptr_t)tx_buf[slot];
        d->bcnt = tx_staged_bcnt[slot];
        d->misc = 0;
    }
    tx_staged++;
    return true;
}

static void rx_rearm(struct pcnet_rx_desc32 *d)
{
    d->mcnt = 0;
    d->bcnt = neg_bcnt(BUF_SIZE);
    barrier();
    *(volatile uint16_t *)&d->status = PCNET_DESC_OWN;
}

static uint32_t pcnet_recv(void *buf, uint32_t max)
{
    for (int tries = 0; tries < RING_SIZE; tries++) {
        struct pcnet_rx_desc32 *d = &rx_ring[rx_next];
        uint16_t status = *(volatile uint16_t *)&d->status;
        if (status & PCNET_DESC_OWN)
            return 0;
        /* QEMU's PCnet hands a frame's descriptor back in two stores:
         * OWN clear with STP, then ENP and MCNT (the Am79C970A clears
         * OWN last), and it writes from its I/O thread while this loop
         * polls: seen between the two, the frame is not done yet. No
         * frame spans two of our buffers, so STP alone is never final. */
        if ((status & (PCNET_DESC_ERR | PCNET_DESC_STP | PCNET_DESC_ENP)) ==
            PCNET_DESC_STP)
            return 0;
        barrier();
        rx_next = (rx_next + 1) % RING_SIZE;
        uint32_t mcnt = d->mcnt & 0x0fff;
        if ((status & (PCNET_DESC_ERR | PCNET_DESC_STP | PCNET_DESC_ENP)) !=
                (PCNET_DESC_STP | PCNET_DESC_ENP) ||
            mcnt <= FCS_LEN || mcnt > BUF_SIZE) {
            if (!rx_errors++) {   /* chained, errored or nonsense: drop */
                rx_err_status = status;
                rx_err_mcnt = d->mcnt;
            }
            rx_rearm(d);
            continue;
        }
        uint32_t len = mcnt - FCS_LEN;
        memcpy(buf, rx_buf[d - rx_ring], len < max ? len : max);
        rx_rearm(d);
        return len < max ? len : max;
    }
    return 0;
}

static bool pcnet_init(const struct guest_args *args)
{
    struct pci_dev pci;
    bool is_io;

    if (!pci_find(PCNET_VENDOR_ID, PCNET_DEVICE_ID, &pci)) {
        printf("error: no PCnet (1022:2000) on PCI bus 0\n");
        return false;
    }
    uint64_t bar = pci_bar(&pci, 0, &is_io);
    if (!is_io || bar == 0 || bar > 0xffe0) {
        printf("error: pcnet BAR0 0x%llx is not an I/O BAR\n", (unsigned long long)bar);
        return false;
    }
    io = (uint16_t)bar;
    pci_enable(&pci, PCI_CMD_IO | PCI_CMD_MASTER);

    /* S_RESET: a read of the RESET register (word I/O mode). The chip
     * then reads CSR0 = STOP; RAP must read back what was written (the
     * datasheet's check that the chip is in word I/O mode). */
    (void)inw(io + PCNET_RESET);
    uint16_t csr0 = 0;
    for (int i = 0; i < RESET_POLL_BOUND && csr0 != CSR0_STOP; i++)
        csr0 = csr_read(0);
    outw(io + PCNET_RAP, PCNET_CSR_CHIPID_LO);
    if (csr0 != CSR0_STOP || inw(io + PCNET_RAP) != PCNET_CSR_CHIPID_LO) {
        printf("error: pcnet at 0x%x: no word-I/O response after reset (CSR0=0x%x)\n",
               io, csr0);
        return false;
    }
    uint32_t id = csr_read(PCNET_CSR_CHIPID_LO);
    id |= (uint32_t)csr_read(PCNET_CSR_CHIPID_HI) << 16;
    uint32_t chip = id >> 12 & 0xffff;      /* PARTID, CSR89:CSR88 27:12 */

    /* The station address: APROM bytes 0-5. */
    for (int i = 0; i < 6; i++)
        nic.mac[i] = inb((uint16_t)(io + PCNET_APROM + i));

    /* BCR20: SWSTYLE 2, 32-bit descriptors and initialisation block. */
    bcr_write(PCNET_BCR_SWSTYLE, PCNET_SWSTYLE_PCNET_PCI);

    for (int i = 0; i < RING_SIZE; i++) {
        rx_ring[i].rbadr = (uint32_t)(uintptr_t)rx_buf[i];
        rx_ring[i].user = 0;
        rx_rearm(&rx_ring[i]);
        tx_ring[i] = (struct pcnet_tx_desc32){0};
    }
    iblock.mode = 0;
    iblock.rlen = RING_LOG2 << 4;
    iblock.tlen = RING_LOG2 << 4;
    memcpy(iblock.padr, nic.mac, 6);
    iblock.ladrf[0] = iblock.ladrf[1] = 0;
    iblock.rdra = (uint32_t)(uintptr_t)rx_ring;
    iblock.tdra = (uint32_t)(uintptr_t)tx_ring;
    rx_next = tx_next = 0;
    barrier();

    uint32_t ib = (uint32_t)(uintptr_t)&iblock;
    csr_write(PCNET_CSR_IADR_LO, (uint16_t)ib);
    csr_write(PCNET_CSR_IADR_HI, (uint16_t)(ib >> 16));
    csr_write(0, CSR0_INIT);
    csr0 = 0;
    for (int i = 0; i < IDON_POLL_BOUND && !(csr0 & CSR0_IDON); i++)
        csr0 = csr_read(0);
    if (!(csr0 & CSR0_IDON)) {
        printf("error: pcnet: initialisation did not complete (CSR0=0x%x)\n", csr0);
        return false;
    }
    if (args->irq)
        irq_attach(pci.irq_line, pcnet_ack);
    /* Acknowledge IDON, start, and enable interrupts in irq mode. */
    csr_write(0, (uint16_t)(CSR0_IDON | CSR0_STRT | inea()));
    csr0 = csr_read(0);
    printf("pcnet: 00:%02x.%u io=0x%x irq=%u chip=0x%x mac=%02x:%02x:%02x:%02x:%02x:%02x\n",
           pci.dev, pci.fn, io, pci.irq_line, chip, nic.mac[0], nic.mac[1],
           nic.mac[2], nic.mac[3], nic.mac[4], nic.mac[5]);
    if (!(csr0 & CSR0_RXON) || !(csr0 & CSR0_TXON)) {
        printf("error: pcnet: receiver/transmitter not on after STRT (CSR0=0x%x)\n", csr0);
        return false;
    }
    return true;
}

static void pcnet_stats(void)
{
    if (rx_errors || tx_errors)
        printf("pcnet: rx_errors=%u (first: status 0x%x mcnt 0x%x) tx_errors=%u\n",
               rx_errors, rx_err_status, rx_err_mcnt, tx_errors);
}

const struct guest_info guest_info = {.name = "pcnet", .default_n = 100};

int guest_main(const struct guest_args *args)
{
    nic = (struct nic){
        .name = "pcnet",
        .irq_mode = args->irq != 0,
        .send = pcnet_send,
        .recv = pcnet_recv,
        .poll = pcnet_ack,
        .stage = pcnet_stage,
        .post = pcnet_post,
        .stats = pcnet_stats,
    };
    if (!pcnet_init(args)) {
        printf("guest=pcnet cpl=%u irq=%u exchanges=0 ok=0 checksum=0x00000000\n",
               args->cpl, args->irq);
        return EXIT_NODEV;
    }
    return net_echo_workload(&nic, args);
}
