/* SPDX-License-Identifier: MIT */
/*
 * tests/vmm/test_nic_dma.c: descriptor rings and buffers that point at
 * MMIO or outside guest RAM, on both NIC models (nic_fake.h: 1 MiB of
 * RAM; like lcvmm's vm_dma, every other address is refused).
 *
 * The addresses a hostile or broken driver uses: the e1000's own BAR,
 * the local and I/O APICs, the first byte past RAM, a ring that starts in
 * RAM and ends outside it, and (e1000, 64-bit bases) one that wraps past
 * 2^64. Per case the model must stop its DMA with the status its
 * datasheet defines (PCnet: CSR0.MERR with ERR and INTR, TXON and RXON
 * off; e1000: the ring halted, TDH/RDH where they were), raise PCI Status
 * Received Master Abort (write-1-to-clear), copy nothing anywhere, and
 * work again once the driver points its rings back at RAM.
 */
#include <stdio.h>

#include "../unit/harness.h"
#include "hw/e1000_regs.h"
#include "hw/pcnet_regs.h"
#include "nic_fake.h"
#include "pcnet_fake.h"
#include "platform.h"

#define RING    0x2000
#define RING2   0x4000
#define BUF(i)  (0x10000u + (i) * 0x800u)

static const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };

/* Where a ring goes wrong: a 64-bit base; `tail` is set when only part of
 * the ring is outside RAM. */
typedef struct bad_base {
    const char *what;
    uint64_t base;
} bad_base;

static const bad_base bad32[] = {
    { "the e1000's own BAR", 0xfebc0000u },
    { "the I/O APIC", 0xfec00000u },
    { "the local APIC", 0xfee00000u },
    { "the first byte past RAM", FAKE_RAM },
    { "the last dword below 4 GiB", 0xfffffff0u },
    /* last: 8-byte aligned, so for the PCnet only (the e1000 aligns ring
     * bases to 16 bytes; its straddling ring is tested apart) */
    { "a descriptor straddling the end of RAM", FAKE_RAM - 8 },
};
#define NBAD32 (sizeof bad32 / sizeof bad32[0])

/* ---- PCnet ----------------------------------------------------------- */

/* Style 2 rings of 8 at rx/tx (the init block at 0x1000), receive
 * descriptors given in RAM only when the ring is in RAM. */
static void pcn_open(fake *f, uint64_t rx, uint64_t tx)
{
    uint8_t *ib = f->ram + 0x1000;

    reg_rd(f, PCNET_RESET, 2);
    reg_wr(f, PCNET_RAP, 2, 20);
    reg_wr(f, PCNET_BDP, 2, 2);                 /* SWSTYLE 2 */
    memset(ib, 0, 28);
    ib[2] = 3 << 4;
    ib[3] = 3 << 4;
    memcpy(ib + 4, fake_mac, 6);
    mem_w32(f, 0x1000 + 20, (uint32_t)rx);
    mem_w32(f, 0x1000 + 24, (uint32_t)tx);
    for (unsigned i = 0; i < 8; i++) {
        uint64_t a = rx + 16 * i;
        if (a + 16 > FAKE_RAM)
            break;
        mem_w32(f, a, BUF(i));
        mem_w16(f, a + 4, bcnt(1544));
        mem_w32(f, a + 8, 0);
        mem_w16(f, a + 6, PCNET_DESC_OWN);
    }
    csr_w(f, 1, 0x1000);
    csr_w(f, 2, 0);
    csr_w(f, 4, 0x0915);
    csr_w(f, 0, CSR0_INIT);
    csr_w(f, 0, CSR0_IDON | CSR0_INEA | CSR0_STRT);
}

static void pcn_tx_put(fake *f, uint64_t ring, const uint8_t *data,
                       size_t len)
{
    if (ring + 16 > FAKE_RAM)
        return;
    memcpy(f->ram + BUF(10), data, len);
    mem_w32(f, ring, BUF(10));
    mem_w16(f, ring + 4, bcnt(len));
    mem_w32(f, ring + 8, 0);
    mem_w16(f, ring + 6, PCNET_DESC_OWN | PCNET_DESC_STP | PCNET_DESC_ENP);
}

/* The status a failed DMA must leave, and the recovery. */
static void pcn_check_stopped(fake *f, const char *what)
{
    uint16_t csr0 = csr_r(f, 0);

    ck_assert_msg((csr0 & (CSR0_MERR | CSR0_ERR | CSR0_INTR | CSR0_TXON |
                           CSR0_RXON)) == (CSR0_MERR | CSR0_ERR | CSR0_INTR),
                  "%s: CSR0 %#x", what, csr0);
    ck_assert_msg(f->level == 1, "%s: no interrupt", what);
    ck_assert_msg(nic_pci_status(f->n, 0) & NIC_PCI_STATUS_RMA,
                  "%s: no master abort", what);
    ck_assert_uint_gt(nic_get_stats(f->n)->dma_errors, 0);
}

static void pcn_recover(fake *f)
{
    uint8_t frame[64];
    unsigned sent = f->be.ntx;

    nic_pci_status(f->n, NIC_PCI_STATUS_RMA);   /* the driver's W1C */
    ck_assert_uint_eq(nic_pci_status(f->n, 0), 0);
    memset(f->ram + RING2, 0, 8 * 16);          /* nothing left to send */
    csr_w(f, 0, CSR0_STOP);
    csr_w(f, 0, CSR0_MERR);                     /* W1C */
    pcn_open(f, RING, RING2);
    ck_assert_uint_eq(csr_r(f, 0) & (CSR0_MERR | CSR0_TXON | CSR0_RXON),
                      CSR0_TXON | CSR0_RXON);
    fake_frame_make(frame, bcast, 64, 3);
    pcn_tx_put(f, RING2, frame, 64);
    csr_w(f, 0, CSR0_INEA | CSR0_TDMD);
    ck_assert_uint_eq(f->be.ntx, sent + 1);
    fake_rx_push(f, frame, fake_frame_make(frame, fake_mac, 64, 4));
    nic_poll_rx(f->n);
    ck_assert_uint_eq(mem_r16(f, RING + 6) & PCNET_DESC_OWN, 0);
    ck_assert_uint_eq(nic_pci_status(f->n, 0), 0);
}

START_TEST(pcnet_tx_ring_at_bad_address)
{
    const bad_base *b = &bad32[_i];
    uint8_t frame[64];
    fake f;

    fake_init(&f, NIC_PCNET, NULL);
    pcn_open(&f, RING, b->base);
    fake_frame_make(frame, bcast, 64, 1);
    pcn_tx_put(&f, b->base, frame, 64);
    csr_w(&f, 0, CSR0_INEA | CSR0_TDMD);
    ck_assert_uint_eq(f.be.ntx, 0);
    pcn_check_stopped(&f, b->what);
    /* stopped means stopped: more kicks do no DMA */
    unsigned reads = f.dma_reads, writes = f.dma_writes;
    csr_w(&f, 0, CSR0_INEA | CSR0_TDMD);
    ck_assert_uint_eq(f.dma_reads, reads);
    ck_assert_uint_eq(f.dma_writes, writes);
    pcn_recover(&f);
    fake_fini(&f);
}
END_TEST

START_TEST(pcnet_rx_ring_at_bad_address)
{
    const bad_base *b = &bad32[_i];
    uint8_t frame[64];
    fake f;

    fake_init(&f, NIC_PCNET, NULL);
    pcn_open(&f, b->base, RING2);
    fake_rx_push(&f, frame, fake_frame_make(frame, fake_mac, 64, 2));
    nic_poll_rx(f.n);
    ck_assert_uint_eq(nic_get_stats(f.n)->rx_frames, 0);
    pcn_check_stopped(&f, b->what);
    pcn_recover(&f);
    fake_fini(&f);
}
END_TEST

/* A good ring whose buffers point at MMIO: the frame is not copied from
 * or into the device registers (no re-entry), MERR. */
START_TEST(pcnet_buffers_at_mmio)
{
    uint8_t frame[64];
    fake f;

    fake_init(&f, NIC_PCNET, NULL);
    pcn_open(&f, RING, RING2);
    fake_frame_make(frame, bcast, 64, 5);
    pcn_tx_put(&f, RING2, frame, 64);
    mem_w32(&f, RING2, 0xfebc0000u);
    csr_w(&f, 0, CSR0_INEA | CSR0_TDMD);
    ck_assert_uint_eq(f.be.ntx, 0);
    pcn_check_stopped(&f, "TX buffer at the e1000's BAR");
    pcn_recover(&f);
    /* the next receive descriptor (1) with its buffer at the APIC */
    mem_w32(&f, RING + 16, 0xfee00000u);
    fake_rx_push(&f, frame, fake_frame_make(frame, fake_mac, 64, 6));
    nic_poll_rx(f.n);
    pcn_check_stopped(&f, "RX buffer at the local APIC");
    fake_fini(&f);
}
END_TEST

/* ---- e1000 ----------------------------------------------------------- */

static uint32_t rd(fake *f, uint32_t off)
{
    return reg_rd(f, off, 4);
}

static void wr(fake *f, uint32_t off, uint32_t v)
{
    reg_wr(f, off, 4, v);
}

static void e1k_ring(fake *f, bool tx, uint64_t base)
{
    wr(f, tx ? E1000_TDBAL : E1000_RDBAL, (uint32_t)base);
    wr(f, tx ? E1000_TDBAH : E1000_RDBAH, (uint32_t)(base >> 32));
    wr(f, tx ? E1000_TDLEN : E1000_RDLEN, 8 * 16);
    wr(f, tx ? E1000_TDH : E1000_RDH, 0);
    wr(f, tx ? E1000_TDT : E1000_RDT, tx ? 0 : 7);
}

static void e1k_rxd_give(fake *f, uint64_t ring)
{
    for (unsigned i = 0; i < 8; i++) {
        uint64_t a = ring + 16 * i;
        if (a + 16 > FAKE_RAM)
            break;
        mem_w32(f, a, BUF(i));
        mem_w32(f, a + 4, 0);
        memset(f->ram + a + 8, 0, 8);
    }
}

static void e1k_txd_put(fake *f, uint64_t ring, const uint8_t *data,
                        size_t len)
{
    if (ring + 16 > FAKE_RAM)
        return;
    memcpy(f->ram + BUF(10), data, len);
    mem_w32(f, ring, BUF(10));
    mem_w32(f, ring + 4, 0);
    mem_w16(f, ring + 8, (uint16_t)len);
    f->ram[ring + 10] = 0;
    f->ram[ring + 11] = E1000_TXD_CMD_EOP | E1000_TXD_CMD_RS;
    memset(f->ram + ring + 12, 0, 4);
}

static void e1k_open(fake *f, uint64_t rx, uint64_t tx)
{
    wr(f, E1000_CTRL, E1000_CTRL_RST);
    wr(f, E1000_IMC, 0xffffffffu);
    rd(f, E1000_ICR);
    e1k_rxd_give(f, rx);
    e1k_ring(f, false, rx);
    e1k_ring(f, true, tx);
    wr(f, E1000_TCTL, E1000_TCTL_EN | E1000_TCTL_PSP);
    wr(f, E1000_RCTL, E1000_RCTL_EN | E1000_RCTL_BAM | E1000_RCTL_SECRC);
    wr(f, E1000_IMS, E1000_ICR_TXDW | E1000_ICR_RXT0);
}

static void e1k_check_stopped(fake *f, const char *what, bool tx)
{
    ck_assert_msg(nic_pci_status(f->n, 0) & NIC_PCI_STATUS_RMA,
                  "%s: no master abort", what);
    ck_assert_uint_gt(nic_get_stats(f->n)->dma_errors, 0);
    ck_assert_msg(rd(f, tx ? E1000_TDH : E1000_RDH) == 0,
                  "%s: the head moved", what);
    /* halted: no DMA until the driver writes a ring register again */
    unsigned reads = f->dma_reads, writes = f->dma_writes;
    rd(f, E1000_STATUS);
    nic_poll_rx(f->n);
    nic_flush(f->n);
    ck_assert_uint_eq(f->dma_reads, reads);
    ck_assert_uint_eq(f->dma_writes, writes);
    if (tx) {
        /* a new tail is a retry: one descriptor fetch, halted again */
        wr(f, E1000_TDT, 2);
        ck_assert_uint_eq(f->dma_reads, reads + 1);
        ck_assert_uint_eq(f->dma_writes, writes);
        ck_assert_uint_eq(f->be.ntx, 0);
        ck_assert_uint_eq(rd(f, E1000_TDH), 0);
    }
}

static void e1k_recover(fake *f)
{
    uint8_t frame[64];
    unsigned sent = f->be.ntx;

    /* write 1 to clear (a 16-bit write of the PCI Status register) */
    nic_pci_status(f->n, NIC_PCI_STATUS_RMA);
    ck_assert_uint_eq(nic_pci_status(f->n, 0), 0);
    e1k_open(f, RING, RING2);
    fake_frame_make(frame, bcast, 64, 7);
    e1k_txd_put(f, RING2, frame, 64);
    wr(f, E1000_TDT, 1);
    ck_assert_uint_eq(f->be.ntx, sent + 1);
    ck_assert_uint_eq(f->ram[RING2 + 12] & E1000_TXD_STA_DD,
                      E1000_TXD_STA_DD);
    fake_rx_push(f, frame, fake_frame_make(frame, fake_mac, 64, 8));
    nic_poll_rx(f->n);
    ck_assert_uint_eq(rd(f, E1000_RDH), 1);
    ck_assert_uint_eq(nic_pci_status(f->n, 0), 0);
}

START_TEST(e1000_tx_ring_at_bad_address)
{
    const bad_base *b = &bad32[_i];
    uint8_t frame[64];
    fake f;

    fake_init(&f, NIC_E1000, NULL);
    e1k_open(&f, RING, b->base);
    fake_frame_make(frame, bcast, 64, 1);
    e1k_txd_put(&f, b->base, frame, 64);
    wr(&f, E1000_TDT, 1);
    ck_assert_uint_eq(f.be.ntx, 0);
    e1k_check_stopped(&f, b->what, true);
    e1k_recover(&f);
    fake_fini(&f);
}
END_TEST

START_TEST(e1000_rx_ring_at_bad_address)
{
    const bad_base *b = &bad32[_i];
    uint8_t frame[64];
    fake f;

    fake_init(&f, NIC_E1000, NULL);
    e1k_open(&f, b->base, RING2);
    fake_rx_push(&f, frame, fake_frame_make(frame, fake_mac, 64, 2));
    nic_poll_rx(f.n);
    ck_assert_uint_eq(nic_get_stats(f.n)->rx_frames, 0);
    e1k_check_stopped(&f, b->what, false);
    e1k_recover(&f);
    fake_fini(&f);
}
END_TEST

/* 64-bit bases: above 4 GiB, at the top of the address space (the last
 * descriptor ends at 2^64: vm_dma refuses a range that wraps), and a ring
 * that starts in RAM and runs out of it at descriptor 4. */
START_TEST(e1000_rings_above_4g_wrapping_straddling)
{
    static const struct { uint64_t base; unsigned head; } c[] = {
        { 1ull << 32, 0 }, { 0xffffffffffffff80ull, 7 },
        { FAKE_RAM - 64, 4 },
    };
    uint8_t frame[64];

    for (unsigned i = 0; i < 3; i++) {
        fake f;
        fake_init(&f, NIC_E1000, NULL);
        e1k_open(&f, RING, c[i].base);
        wr(&f, E1000_TDH, c[i].head);
        wr(&f, E1000_TDT, (c[i].head + 1) % 8);
        ck_assert_uint_eq(f.be.ntx, 0);
        ck_assert_uint_eq(rd(&f, E1000_TDH), c[i].head);
        ck_assert(nic_pci_status(f.n, 0) & NIC_PCI_STATUS_RMA);
        e1k_recover(&f);
        fake_fini(&f);
        fake_init(&f, NIC_E1000, NULL);
        e1k_open(&f, c[i].base, RING2);
        wr(&f, E1000_RDH, c[i].head);
        wr(&f, E1000_RDT, (c[i].head + 7) % 8);
        fake_rx_push(&f, frame, fake_frame_make(frame, fake_mac, 64, 2));
        nic_poll_rx(f.n);
        ck_assert_uint_eq(nic_get_stats(f.n)->rx_frames, 0);
        ck_assert_uint_eq(rd(&f, E1000_RDH), c[i].head);
        ck_assert(nic_pci_status(f.n, 0) & NIC_PCI_STATUS_RMA);
        e1k_recover(&f);
        fake_fini(&f);
    }
}
END_TEST

/* Bus mastering off is no transfer, hence no master abort. */
START_TEST(no_abort_without_bus_master)
{
    uint8_t frame[64];
    fake f;

    fake_init(&f, NIC_E1000, NULL);
    e1k_open(&f, RING, RING2);
    nic_set_bus_master(f.n, false);
    fake_frame_make(frame, bcast, 64, 1);
    e1k_txd_put(&f, RING2, frame, 64);
    wr(&f, E1000_TDT, 1);
    ck_assert_uint_eq(f.be.ntx, 0);
    ck_assert_uint_eq(nic_pci_status(f.n, 0), 0);
    ck_assert_uint_eq(nic_get_stats(f.n)->dma_errors, 0);
    nic_set_bus_master(f.n, true);          /* and the kick is served */
    ck_assert_uint_eq(f.be.ntx, 1);
    fake_fini(&f);
}
END_TEST

/* The master abort as a driver sees it: PCI Status bit 13 through
 * configuration mechanism #1, cleared by writing it as 1 (a dword write
 * of command | status, and a 16-bit write of status alone); other status
 * bits and the command register are unaffected. */
static uint32_t cfg_rd(pci_bus *p, unsigned reg, unsigned size)
{
    uint32_t a = 0x80000000u | 3u << 11 | (reg & 0xfc), v = 0;

    pci_access(p, 0, 4, true, &a);
    pci_access(p, 4 + (reg & 3), size, false, &v);
    return v;
}

static void cfg_wr(pci_bus *p, unsigned reg, unsigned size, uint32_t v)
{
    uint32_t a = 0x80000000u | 3u << 11 | (reg & 0xfc);

    pci_access(p, 0, 4, true, &a);
    pci_access(p, 4 + (reg & 3), size, true, &v);
}

static uint16_t nic_status_hook(void *opaque, uint16_t w1c)
{
    return nic_pci_status(opaque, w1c);
}

START_TEST(master_abort_in_pci_status)
{
    uint8_t id[64] = { 0x86, 0x80, 0x0e, 0x10, [0x0b] = 0x02, [0x3d] = 1 };
    pci_function_ops ops = { NULL, NULL, NULL };
    uint8_t frame[64];
    pci_bus *p = pci_create();
    fake f;

    ck_assert_ptr_nonnull(p);
    fake_init(&f, NIC_E1000, NULL);
    ck_assert_int_eq(pci_add_function(p, 3, id, (pci_bar_info){ 0x20000,
                     false }, 0xfebc0000u, 11, &ops), 0);
    ck_assert_int_eq(pci_set_status_hook(p, 3, nic_status_hook, f.n), 0);
    ck_assert_int_eq(pci_set_status_hook(p, 4, nic_status_hook, f.n), -1);
    cfg_wr(p, 4, 2, 0x0006);                    /* memory, bus master */
    ck_assert_uint_eq(cfg_rd(p, 4, 4), 0x00000006);
    e1k_open(&f, RING, 0xfebc0000u);
    fake_frame_make(frame, bcast, 64, 1);
    wr(&f, E1000_TDT, 1);
    ck_assert_uint_eq(cfg_rd(p, 4, 4), 0x20000006);
    ck_assert_uint_eq(cfg_rd(p, 6, 2), 0x2000);
    ck_assert_uint_eq(cfg_rd(p, 7, 1), 0x20);
    cfg_wr(p, 4, 4, 0x00000006);                /* writing 0s clears none */
    ck_assert_uint_eq(cfg_rd(p, 6, 2), 0x2000);
    cfg_wr(p, 6, 2, 0x1000);                    /* another bit: none */
    ck_assert_uint_eq(cfg_rd(p, 6, 2), 0x2000);
    cfg_wr(p, 4, 4, 0x20000006);                /* W1C with the command */
    ck_assert_uint_eq(cfg_rd(p, 4, 4), 0x00000006);
    wr(&f, E1000_TDT, 2);                       /* again, then 16-bit W1C */
    ck_assert_uint_eq(cfg_rd(p, 6, 2), 0x2000);
    cfg_wr(p, 6, 2, 0x2000);
    ck_assert_uint_eq(cfg_rd(p, 4, 4), 0x00000006);
    pci_destroy(p);
    fake_fini(&f);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("nic_dma");
    TCase *p = tcase_create("pcnet"), *e = tcase_create("e1000");

    tcase_add_loop_test(p, pcnet_tx_ring_at_bad_address, 0, NBAD32);
    tcase_add_loop_test(p, pcnet_rx_ring_at_bad_address, 0, NBAD32);
    tcase_add_test(p, pcnet_buffers_at_mmio);
    tcase_add_loop_test(e, e1000_tx_ring_at_bad_address, 0, NBAD32 - 1);
    tcase_add_loop_test(e, e1000_rx_ring_at_bad_address, 0, NBAD32 - 1);
    tcase_add_test(e, e1000_rings_above_4g_wrapping_straddling);
    tcase_add_test(e, no_abort_without_bus_master);
    tcase_add_test(e, master_abort_in_pci_status);
    suite_add_tcase(s, p);
    suite_add_tcase(s, e);
    return lc_test_run(s);
}
