/* SPDX-License-Identifier: MIT */
/*
 * tests/vmm/test_e1000.c: the Intel 82540EM model, driven the way a
 * driver does (reset, MAC from the EEPROM, rings, RCTL/TCTL, TDT kicks,
 * RDT refills) and by a hostile guest.
 */
#include <stdio.h>

#include "../unit/harness.h"
#include "hw/e1000_regs.h"
#include "nic_fake.h"

/* guest memory layout */
#define RXR     0x2000
#define TXR     0x4000
#define RXB(i)  (0x10000u + (i) * 0x800u)
#define TXB(i)  (0x80000u + (i) * 0x800u)

static const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };

static uint32_t rd(fake *f, uint32_t off)
{
    return reg_rd(f, off, 4);
}

static void wr(fake *f, uint32_t off, uint32_t v)
{
    reg_wr(f, off, 4, v);
}

static const nic_stats *st(fake *f)
{
    return nic_get_stats(f->n);
}

static void rxd_give(fake *f, unsigned i, uint64_t buf)
{
    uint64_t a = RXR + 16 * i;

    mem_w32(f, a, (uint32_t)buf);
    mem_w32(f, a + 4, (uint32_t)(buf >> 32));
    memset(f->ram + a + 8, 0, 8);
}

static uint16_t rxd_len(fake *f, unsigned i)
{
    return mem_r16(f, RXR + 16 * i + 8);
}

static uint8_t rxd_sta(fake *f, unsigned i)
{
    return f->ram[RXR + 16 * i + 12];
}

static void txd_put(fake *f, unsigned i, const uint8_t *data, size_t len,
                    uint8_t cmd)
{
    uint64_t a = TXR + 16 * i;

    if (data)
        memcpy(f->ram + TXB(i), data, len);
    mem_w32(f, a, TXB(i));
    mem_w32(f, a + 4, 0);
    mem_w16(f, a + 8, (uint16_t)len);
    f->ram[a + 10] = 0;
    f->ram[a + 11] = cmd;
    f->ram[a + 12] = 0;
    f->ram[a + 13] = 0;
    mem_w16(f, a + 14, 0);
}

static uint8_t txd_sta(fake *f, unsigned i)
{
    return f->ram[TXR + 16 * i + 12];
}

static uint16_t eerd(fake *f, unsigned addr)
{
    uint32_t v;

    wr(f, E1000_EERD, addr << 8 | 1);
    v = rd(f, E1000_EERD);
    ck_assert_uint_eq(v & 0x10, 0x10);                  /* DONE */
    ck_assert_uint_eq((v >> 8) & 0xff, addr);
    return (uint16_t)(v >> 16);
}

/* A driver's bring-up: reset, MAC, rings of `n` descriptors with
 * 2048-byte receive buffers (RDT = n - 1), RCTL/TCTL, interrupt mask. */
static void setup_opt(fake *f, const nic_options *o, unsigned n,
                      uint32_t rctl)
{
    fake_init(f, NIC_E1000, o);
    wr(f, E1000_CTRL, rd(f, E1000_CTRL) | E1000_CTRL_RST);
    ck_assert_uint_eq(rd(f, E1000_CTRL) & E1000_CTRL_RST, 0);
    wr(f, E1000_IMC, 0xffffffffu);
    rd(f, E1000_ICR);
    for (unsigned i = 0; i < 3; i++)
        ck_assert_uint_eq(eerd(f, i),
                          (uint32_t)(fake_mac[2 * i] | fake_mac[2 * i + 1] << 8));
    for (unsigned i = 0; i < n; i++)
        rxd_give(f, i, RXB(i));
    wr(f, E1000_RDBAL, RXR);
    wr(f, E1000_RDBAH, 0);
    wr(f, E1000_RDLEN, n * 16);
    wr(f, E1000_RDH, 0);
    wr(f, E1000_RDT, n - 1);
    wr(f, E1000_TDBAL, TXR);
    wr(f, E1000_TDBAH, 0);
    wr(f, E1000_TDLEN, n * 16);
    wr(f, E1000_TDH, 0);
    wr(f, E1000_TDT, 0);
    wr(f, E1000_TIPG, 0x0060200a);
    wr(f, E1000_TCTL, E1000_TCTL_EN | E1000_TCTL_PSP | 0x0f << 4 | 0x40 << 12);
    wr(f, E1000_RCTL, E1000_RCTL_EN | rctl);
    wr(f, E1000_IMS, E1000_ICR_TXDW | E1000_ICR_RXT0 | E1000_ICR_RXO |
       E1000_ICR_RXDMT0 | E1000_ICR_LSC);
    ck_assert_int_eq(f->level, 0);
}

static void setup(fake *f)
{
    setup_opt(f, NULL, 8, E1000_RCTL_BAM | E1000_RCTL_SECRC);
}

/* ---- identity, EEPROM, PHY, reset ----------------------------------- */

START_TEST(identity)
{
    nic_pci_id id;
    fake f;

    nic_pci_identity(NIC_E1000, &id);
    ck_assert_uint_eq(id.vendor, 0x8086);
    ck_assert_uint_eq(id.device, 0x100e);
    ck_assert_uint_eq(id.class_code, 0x02);
    ck_assert(!id.bar_is_io);
    ck_assert_uint_eq(id.bar_size, 0x20000);
    fake_init(&f, NIC_E1000, NULL);
    ck_assert_int_eq(nic_model_of(f.n), NIC_E1000);
    /* Link up, full duplex, 1000 Mb/s. */
    ck_assert_uint_eq(rd(&f, E1000_STATUS) & 0xc3, 0x83);
    fake_fini(&f);
}
END_TEST

START_TEST(eeprom_eerd)
{
    fake f;
    uint16_t sum = 0;

    fake_init(&f, NIC_E1000, NULL);
    for (unsigned i = 0; i < 64; i++)
        sum = (uint16_t)(sum + eerd(&f, i));
    ck_assert_uint_eq(sum, 0xbaba);
    ck_assert_uint_eq(eerd(&f, 0), fake_mac[0] | fake_mac[1] << 8);
    ck_assert_uint_eq(eerd(&f, 2), fake_mac[4] | fake_mac[5] << 8);
    ck_assert_uint_eq(eerd(&f, 0x0d), 0x100e);
    ck_assert_uint_eq(eerd(&f, 200), 0xffff);
    wr(&f, E1000_EERD, 5 << 8);               /* no START: no DONE */
    ck_assert_uint_eq(rd(&f, E1000_EERD) & 0x10, 0);
    fake_fini(&f);
}
END_TEST

/* Microwire read as Linux e1000 does it for the 82540. */
static void ee_clock(fake *f, uint32_t *eecd, int bit)
{
    *eecd = (*eecd & ~0x4u) | (bit ? 0x4u : 0);
    wr(f, E1000_EECD, *eecd);
    wr(f, E1000_EECD, *eecd | 1);             /* SK up */
    *eecd = rd(f, E1000_EECD) & ~1u;
    wr(f, E1000_EECD, *eecd);                 /* SK down */
}

static uint16_t ee_read_word(fake *f, unsigned addr)
{
    uint32_t eecd = rd(f, E1000_EECD);
    uint16_t data = 0;

    ck_assert(eecd & 0x100);            /* EE_PRES */
    eecd |= 0x40;                       /* EE_REQ */
    wr(f, E1000_EECD, eecd);
    ck_assert(rd(f, E1000_EECD) & 0x80);      /* EE_GNT */
    eecd = (rd(f, E1000_EECD) & ~0x0fu) | 0x2; /* CS */
    wr(f, E1000_EECD, eecd);
    ee_clock(f, &eecd, 1);              /* start bit, then opcode 10 */
    ee_clock(f, &eecd, 1);
    ee_clock(f, &eecd, 0);
    for (int b = 5; b >= 0; b--)
        ee_clock(f, &eecd, (addr >> b) & 1);
    for (int b = 0; b < 16; b++) {
        wr(f, E1000_EECD, eecd | 1);
        data = (uint16_t)(data << 1 | !!(rd(f, E1000_EECD) & 0x8));
        wr(f, E1000_EECD, eecd);
    }
    wr(f, E1000_EECD, 0x40);                  /* CS down */
    wr(f, E1000_EECD, 0);                     /* release */
    ck_assert_uint_eq(rd(f, E1000_EECD) & 0xc2, 0);
    return data;
}

START_TEST(eeprom_microwire)
{
    fake f;

    fake_init(&f, NIC_E1000, NULL);
    for (unsigned i = 0; i < 3; i++)
        ck_assert_uint_eq(ee_read_word(&f, i),
                          (uint32_t)(fake_mac[2 * i] | fake_mac[2 * i + 1] << 8));
    ck_assert_uint_eq(ee_read_word(&f, 0x3f), eerd(&f, 0x3f));
    ck_assert_uint_eq(ee_read_word(&f, 0x0e), 0x8086);
    fake_fini(&f);
}
END_TEST

START_TEST(phy_through_mdic)
{
    fake f;

    fake_init(&f, NIC_E1000, NULL);
    wr(&f, E1000_MDIC, 0x08000000u | 1u << 21 | 2u << 16);
    ck_assert_uint_eq(rd(&f, E1000_MDIC), 0x18000000u | 1u << 21 | 2u << 16 |
                      0x0141);
    wr(&f, E1000_MDIC, 0x08000000u | 1u << 21 | 3u << 16);
    ck_assert_uint_eq(rd(&f, E1000_MDIC) & 0xffff, 0x0c20);
    wr(&f, E1000_MDIC, 0x08000000u | 1u << 21 | 1u << 16);
    ck_assert_uint_eq(rd(&f, E1000_MDIC) & 0x0024, 0x0024);  /* link, AN done */
    wr(&f, E1000_MDIC, 0x04000000u | 1u << 21 | 0u << 16 | 0x9140);
    wr(&f, E1000_MDIC, 0x08000000u | 1u << 21 | 0u << 16);
    ck_assert_uint_eq(rd(&f, E1000_MDIC) & 0xffff, 0x1140);  /* reset done */
    wr(&f, E1000_MDIC, 0x08000000u | 2u << 21 | 2u << 16);   /* no such PHY */
    ck_assert_uint_eq(rd(&f, E1000_MDIC) & 0x50000000u, 0x50000000u);
    fake_fini(&f);
}
END_TEST

START_TEST(ctrl_reset)
{
    fake f;

    setup(&f);
    wr(&f, E1000_ICS, E1000_ICR_TXDW);
    ck_assert_int_eq(f.level, 1);
    wr(&f, E1000_RAL(0), 0);
    wr(&f, E1000_CTRL, E1000_CTRL_RST);
    ck_assert_uint_eq(rd(&f, E1000_CTRL) & E1000_CTRL_RST, 0);
    ck_assert_int_eq(f.level, 0);
    ck_assert_uint_eq(rd(&f, E1000_IMS), 0);
    ck_assert_uint_eq(rd(&f, E1000_RDLEN), 0);
    ck_assert_uint_eq(rd(&f, E1000_TCTL), 0);
    ck_assert_uint_eq(rd(&f, E1000_RAL(0)),
                      mem_r32(&(fake){ .ram = (uint8_t *)fake_mac }, 0));
    ck_assert_uint_eq(rd(&f, E1000_RAH(0)), 0x80000000u | fake_mac[4] |
                      fake_mac[5] << 8);
    ck_assert_uint_eq(st(&f)->resets, 2);
    fake_fini(&f);
}
END_TEST

START_TEST(latch_registers)
{
    fake f;
    uint32_t r[32][2];
    unsigned n;
    bool rd_ring = false, td_ring = false, mta_ra = false, itr = false,
         tipg = false;
    static const uint32_t not_latch[] = {
        E1000_CTRL, E1000_STATUS, E1000_EECD, E1000_EERD, E1000_MDIC,
        E1000_ICR, E1000_ICS, E1000_IMS, E1000_IMC, E1000_RCTL, E1000_TCTL,
        E1000_RDH, E1000_RDT, E1000_TDH, E1000_TDT, E1000_MPC, 0x1fffc,
    };
    uint8_t frame[64];

    setup(&f);
    for (uint32_t off = E1000_RDBAL; off <= E1000_RDLEN; off += 4)
        ck_assert(nic_access_is_latch(f.n, off, 4));
    for (uint32_t off = E1000_TDBAL; off <= E1000_TDLEN; off += 4)
        ck_assert(nic_access_is_latch(f.n, off, 4));
    ck_assert(nic_access_is_latch(f.n, E1000_RAL(0), 4));
    ck_assert(nic_access_is_latch(f.n, E1000_RAH(15), 4));
    ck_assert(nic_access_is_latch(f.n, E1000_MTA + 0x1fc, 4));
    ck_assert(nic_access_is_latch(f.n, E1000_ITR, 4));
    ck_assert(nic_access_is_latch(f.n, E1000_TIPG, 2));
    for (size_t i = 0; i < sizeof not_latch / sizeof not_latch[0]; i++)
        ck_assert_msg(!nic_access_is_latch(f.n, not_latch[i], 4), "%#x",
                      not_latch[i]);
    ck_assert(!nic_access_is_latch(f.n, E1000_RDBAL + 1, 4));  /* unaligned */
    n = nic_latch_ranges(f.n, r, 32);
    ck_assert_uint_le(n, 16);           /* what the VMM asks for */
    for (unsigned i = 0; i < n; i++) {
        rd_ring |= r[i][0] == E1000_RDBAL && r[i][1] == 12;
        td_ring |= r[i][0] == E1000_TDBAL && r[i][1] == 12;
        mta_ra |= r[i][0] == E1000_MTA && r[i][1] == 0x280;
        itr |= r[i][0] == E1000_ITR;
        tipg |= r[i][0] == E1000_TIPG;
        for (uint32_t off = r[i][0]; off < r[i][0] + r[i][1]; off += 4)
            ck_assert(nic_access_is_latch(f.n, off, 4));
    }
    ck_assert(rd_ring && td_ring && mta_ra && itr && tipg);
    ck_assert_uint_eq(nic_latch_ranges(f.n, r, 2), 2);
    /* Plain memory: what is written reads back, and nothing else
     * happens (no receive after a latch write). */
    fake_rx_push(&f, frame, fake_frame_make(frame, fake_mac, 64, 1));
    wr(&f, E1000_MTA + 8, 0x12345678);
    ck_assert_uint_eq(fake_rx_waiting(&f), 1);
    ck_assert_uint_eq(rd(&f, E1000_MTA + 8), 0x12345678);
    ck_assert_uint_eq(st(&f)->rx_frames, 0);
    rd(&f, E1000_STATUS);
    ck_assert_uint_eq(st(&f)->rx_frames, 1);
    ck_assert_uint_ge(st(&f)->latch_accesses, 2);
    fake_fini(&f);
}
END_TEST

/* ---- transmit ------------------------------------------------------- */

START_TEST(tx_one_frame)
{
    fake f;
    uint8_t frame[300];
    size_t len = fake_frame_make(frame, bcast, 300, 2);

    setup(&f);
    txd_put(&f, 0, frame, len, E1000_TXD_CMD_EOP | E1000_TXD_CMD_IFCS |
            E1000_TXD_CMD_RS);
    wr(&f, E1000_TDT, 1);
    ck_assert_uint_eq(f.be.ntx, 1);
    ck_assert_uint_eq(f.be.tx[0].len, len);
    ck_assert_mem_eq(f.be.tx[0].data, frame, len);
    ck_assert_uint_eq(txd_sta(&f, 0), E1000_TXD_STA_DD);
    ck_assert_uint_eq(rd(&f, E1000_TDH), 1);
    ck_assert_int_eq(f.level, 1);
    /* read clears */
    ck_assert_uint_eq(rd(&f, E1000_ICR), E1000_ICR_TXDW | E1000_ICR_TXQE);
    ck_assert_int_eq(f.level, 0);
    ck_assert_uint_eq(rd(&f, E1000_ICR), 0);
    /* clear on read */
    ck_assert_uint_eq(rd(&f, E1000_GPTC), 1);
    ck_assert_uint_eq(rd(&f, E1000_GPTC), 0);
    ck_assert_uint_eq(st(&f)->tx_frames, 1);
    fake_fini(&f);
}
END_TEST

/* DD only with RS; short frames padded with TCTL.PSP; runts without. */
START_TEST(tx_status_and_padding)
{
    fake f;
    uint8_t frame[64];

    setup(&f);
    fake_frame_make(frame, bcast, 64, 3);
    txd_put(&f, 0, frame, 20, E1000_TXD_CMD_EOP);
    wr(&f, E1000_TDT, 1);
    ck_assert_uint_eq(f.be.ntx, 1);
    ck_assert_uint_eq(f.be.tx[0].len, 60);
    ck_assert_uint_eq(txd_sta(&f, 0), 0);
    ck_assert_uint_eq(rd(&f, E1000_ICR), E1000_ICR_TXQE);
    wr(&f, E1000_TCTL, E1000_TCTL_EN);
    txd_put(&f, 1, frame, 20, E1000_TXD_CMD_EOP | E1000_TXD_CMD_RS);
    txd_put(&f, 2, frame, 10, E1000_TXD_CMD_EOP | E1000_TXD_CMD_RS);
    wr(&f, E1000_TDT, 3);
    ck_assert_uint_eq(f.be.ntx, 2);
    ck_assert_uint_eq(f.be.tx[1].len, 20);
    /* runt: dropped */
    ck_assert_uint_eq(txd_sta(&f, 2), E1000_TXD_STA_DD);
    ck_assert_uint_eq(st(&f)->guest_errors, 1);
    fake_fini(&f);
}
END_TEST

START_TEST(tx_chained_descriptors)
{
    fake f;
    uint8_t frame[1514];
    size_t len = fake_frame_make(frame, bcast, 1514, 4);

    setup(&f);
    txd_put(&f, 0, frame, 600, 0);
    txd_put(&f, 1, frame + 600, 600, E1000_TXD_CMD_RS);
    txd_put(&f, 2, frame + 1200, 314, E1000_TXD_CMD_EOP | E1000_TXD_CMD_RS);
    wr(&f, E1000_TDT, 3);
    ck_assert_uint_eq(f.be.ntx, 1);
    ck_assert_mem_eq(f.be.tx[0].data, frame, len);
    ck_assert_uint_eq(txd_sta(&f, 0), 0);
    ck_assert_uint_eq(txd_sta(&f, 1), E1000_TXD_STA_DD);
    ck_assert_uint_eq(txd_sta(&f, 2), E1000_TXD_STA_DD);
    /* Extended descriptors: a context descriptor, then data. */
    uint64_t a = TXR + 16 * 3;
    memset(f.ram + a, 0, 16);
    /* DTYP 0 */
    f.ram[a + 11] = E1000_TXD_CMD_DEXT | E1000_TXD_CMD_RS;
    txd_put(&f, 4, frame, 100, 0);
    mem_w32(&f, TXR + 16 * 4 + 8, 100 | 1u << 20 |
            (uint32_t)(E1000_TXD_CMD_DEXT | E1000_TXD_CMD_EOP |
                       E1000_TXD_CMD_RS) << 24);
    wr(&f, E1000_TDT, 5);
    ck_assert_uint_eq(f.be.ntx, 2);
    ck_assert_uint_eq(f.be.tx[1].len, 100);
    ck_assert_uint_eq(txd_sta(&f, 3), E1000_TXD_STA_DD);
    fake_fini(&f);
}
END_TEST

/* A chain without EOP is held, and completed by a later TDT write. */
START_TEST(tx_chain_completed_later)
{
    fake f;
    uint8_t frame[300];
    size_t len = fake_frame_make(frame, bcast, 300, 5);

    setup(&f);
    txd_put(&f, 0, frame, 100, E1000_TXD_CMD_RS);
    txd_put(&f, 1, frame + 100, 100, E1000_TXD_CMD_RS);
    wr(&f, E1000_TDT, 2);
    ck_assert_uint_eq(f.be.ntx, 0);
    ck_assert_uint_eq(rd(&f, E1000_TDH), 2);
    ck_assert_uint_eq(txd_sta(&f, 1), E1000_TXD_STA_DD);
    txd_put(&f, 2, frame + 200, 100, E1000_TXD_CMD_EOP | E1000_TXD_CMD_RS);
    wr(&f, E1000_TDT, 3);
    ck_assert_uint_eq(f.be.ntx, 1);
    ck_assert_mem_eq(f.be.tx[0].data, frame, len);
    fake_fini(&f);
}
END_TEST

/* CVE-2015-3209: frames over NET_FRAME_MAX and over the 16 KiB buffer
 * are dropped, checked before copying. */
START_TEST(tx_oversize)
{
    fake f;
    uint8_t frame[1514];
    uint64_t errs;

    setup_opt(&f, NULL, 16, E1000_RCTL_BAM);
    fake_frame_make(frame, bcast, 1514, 6);
    txd_put(&f, 0, frame, 1000, 0);
    txd_put(&f, 1, frame, 1000, E1000_TXD_CMD_EOP | E1000_TXD_CMD_RS);
    errs = st(&f)->guest_errors;
    wr(&f, E1000_TDT, 2);
    ck_assert_uint_eq(f.be.ntx, 0);
    ck_assert_uint_eq(txd_sta(&f, 1), E1000_TXD_STA_DD);
    ck_assert_uint_eq(st(&f)->guest_errors, errs + 1);
    /* Five 4 KiB buffers: 20 KiB into a 16 KiB buffer. */
    for (unsigned i = 2; i < 7; i++) {
        txd_put(&f, i, NULL, 4096,
                i == 6 ? E1000_TXD_CMD_EOP | E1000_TXD_CMD_RS : 0);
        mem_w32(&f, TXR + 16 * i, 0x40000 + 0x1000 * (i - 2));
    }
    wr(&f, E1000_TDT, 7);
    ck_assert_uint_eq(f.be.ntx, 0);
    ck_assert_uint_eq(st(&f)->guest_errors, errs + 2);
    ck_assert_uint_eq(rd(&f, E1000_TDH), 7);
    /* A maximal frame still goes. */
    txd_put(&f, 7, frame, 1514, E1000_TXD_CMD_EOP | E1000_TXD_CMD_RS);
    wr(&f, E1000_TDT, 8);
    ck_assert_uint_eq(f.be.ntx, 1);
    ck_assert_uint_eq(f.be.tx[0].len, 1514);
    fake_fini(&f);
}
END_TEST

/* CVE-2016-1981: head or tail beyond the ring stops the ring, one
 * guest error, until the guest writes the ring registers again. */
/* 8254x SDM 3.3.3: a zero-length descriptor transfers no data; one with
 * EOP that ends an empty packet sends nothing, even with TCTL.PSP (which
 * would pad it into a 60-byte all-zero frame), yet its DD is written.
 * Inside a packet it adds nothing. */
START_TEST(tx_zero_length_descriptors)
{
    fake f;
    uint8_t frame[200];
    size_t len = fake_frame_make(frame, bcast, 200, 5);

    setup(&f);
    ck_assert(rd(&f, E1000_TCTL) & E1000_TCTL_PSP);
    txd_put(&f, 0, NULL, 0, E1000_TXD_CMD_EOP | E1000_TXD_CMD_RS);
    txd_put(&f, 1, NULL, 0, E1000_TXD_CMD_EOP | E1000_TXD_CMD_IFCS);
    wr(&f, E1000_TDT, 2);
    ck_assert_uint_eq(f.be.ntx, 0);
    ck_assert_uint_eq(txd_sta(&f, 0), E1000_TXD_STA_DD);
    ck_assert_uint_eq(rd(&f, E1000_TDH), 2);
    ck_assert_uint_eq(rd(&f, E1000_GPTC), 0);
    ck_assert_uint_eq(st(&f)->tx_frames, 0);
    /* between two parts of a packet: no bytes of its own */
    txd_put(&f, 2, frame, 120, 0);
    txd_put(&f, 3, NULL, 0, 0);
    txd_put(&f, 4, frame + 120, 80, E1000_TXD_CMD_EOP);
    memcpy(f.ram + TXB(4), frame + 120, 80);
    wr(&f, E1000_TDT, 5);
    ck_assert_uint_eq(f.be.ntx, 1);
    ck_assert_uint_eq(f.be.tx[0].len, len);
    ck_assert_mem_eq(f.be.tx[0].data, frame, len);
    ck_assert_uint_eq(st(&f)->guest_errors, 0);
    fake_fini(&f);
}
END_TEST

/* CVE-2021-20257: QEMU looped forever in its TCP segmentation loop on a
 * data descriptor with TSE whose context gave MSS and header length 0
 * (each pass moved zero bytes). This model does no segmentation, and
 * each walk is bounded by the ring: a context with TSE, MSS 0, HDRLEN 0
 * followed by zero-length and 1-byte TSE data descriptors must finish,
 * with every descriptor done. */
START_TEST(tx_tse_zero_mss)
{
    fake f;
    uint64_t a;

    setup(&f);
    a = TXR;                                 /* context: DTYP 0, TSE */
    memset(f.ram + a, 0, 16);
    mem_w32(&f, a + 8, 0u | (uint32_t)(E1000_TXD_CMD_DEXT | 0x04u |
                                        E1000_TXD_CMD_RS) << 24);
    mem_w32(&f, a + 12, 0);                  /* MSS 0, HDRLEN 0 */
    for (unsigned i = 1; i < 7; i++) {
        txd_put(&f, i, NULL, 0, 0);
        mem_w32(&f, TXR + 16 * i + 8, (i & 1) | 1u << 20 |
                (uint32_t)(E1000_TXD_CMD_DEXT | 0x04u | E1000_TXD_CMD_RS |
                           (i == 6 ? E1000_TXD_CMD_EOP : 0)) << 24);
    }
    wr(&f, E1000_TDT, 7);
    ck_assert_uint_eq(rd(&f, E1000_TDH), 7);
    for (unsigned i = 0; i < 7; i++)
        ck_assert_uint_eq(txd_sta(&f, i) & E1000_TXD_STA_DD,
                          E1000_TXD_STA_DD);
    /* three bytes gathered, padded by TCTL.PSP: one 60-byte frame */
    ck_assert_uint_eq(f.be.ntx, 1);
    ck_assert_uint_eq(f.be.tx[0].len, 60);
    fake_fini(&f);
}
END_TEST

/* The re-entrancy guard (cf. CVE-2021-3416, CVE-2020-14364's class):
 * a receive buffer placed on the device's own registers makes the VMM
 * turn the frame's DMA into register writes while the device is still
 * receiving. Here the frame's first word, 0xffffffff, lands on CTRL
 * (RST set): without the guard the device would reset itself in the
 * middle of its own receive. The nested accesses must be refused. */
#define MMIO_WIN 0xfebc0000u
static fake *reenter_fake;
static unsigned reenter_calls;

static int reenter_write(void *o, uint64_t gpa, const void *buf, size_t len)
{
    fake *f = o;

    if (gpa >= MMIO_WIN && gpa - MMIO_WIN < 0x20000) {
        /* the bus: a DMA into a BAR is a run of register writes */
        const uint8_t *b = buf;
        for (size_t i = 0; i + 4 <= len; i += 4) {
            uint32_t v = (uint32_t)b[i] | (uint32_t)b[i + 1] << 8 |
                         (uint32_t)b[i + 2] << 16 | (uint32_t)b[i + 3] << 24;
            reenter_calls++;
            nic_access(reenter_fake->n, (uint32_t)(gpa - MMIO_WIN + i), 4,
                       true, &v);
        }
        return 0;
    }
    return fake_dma_write(f, gpa, buf, len);
}

START_TEST(rx_dma_into_own_registers)
{
    fake f;
    uint8_t frame[64];
    uint32_t rdlen, tctl;

    setup(&f);
    reenter_fake = &f;
    reenter_calls = 0;
    f.dma.write = reenter_write;
    rdlen = rd(&f, E1000_RDLEN);
    tctl = rd(&f, E1000_TCTL);
    rxd_give(&f, 0, MMIO_WIN + E1000_CTRL);
    fake_rx_push(&f, frame, fake_frame_make(frame, bcast, 64, 11));
    nic_poll_rx(f.n);
    ck_assert_uint_gt(reenter_calls, 0);
    /* still configured: no reset happened behind the receive */
    ck_assert_uint_eq(rd(&f, E1000_RDLEN), rdlen);
    ck_assert_uint_eq(rd(&f, E1000_TCTL), tctl);
    ck_assert(rd(&f, E1000_RCTL) & E1000_RCTL_EN);
    ck_assert_uint_eq(rd(&f, E1000_RDH), 1);
    /* and the device still works */
    fake_rx_push(&f, frame, 64);
    nic_poll_rx(f.n);
    ck_assert_mem_eq(f.ram + RXB(1), frame, 60);
    fake_fini(&f);
}
END_TEST

START_TEST(tx_tail_beyond_ring)
{
    fake f;
    uint8_t frame[64];
    unsigned reads;

    setup(&f);
    txd_put(&f, 0, frame, fake_frame_make(frame, bcast, 64, 7),
            E1000_TXD_CMD_EOP | E1000_TXD_CMD_RS);
    reads = f.dma_reads;
    wr(&f, E1000_TDT, 100);
    rd(&f, E1000_STATUS);
    rd(&f, E1000_STATUS);
    ck_assert_uint_eq(f.be.ntx, 0);
    ck_assert_uint_eq(f.dma_reads, reads);
    ck_assert_uint_eq(rd(&f, E1000_TDH), 0);
    ck_assert_uint_eq(st(&f)->guest_errors, 1);
    wr(&f, E1000_TDT, 1);
    ck_assert_uint_eq(f.be.ntx, 1);
    /* The head too. */
    wr(&f, E1000_TDH, 9);
    wr(&f, E1000_TDT, 2);
    ck_assert_uint_eq(f.be.ntx, 1);
    ck_assert_uint_eq(st(&f)->guest_errors, 2);
    /* And on the receive side. */
    wr(&f, E1000_RDT, 8);
    fake_rx_push(&f, frame, 64);
    rd(&f, E1000_STATUS);
    ck_assert_uint_eq(st(&f)->rx_frames, 0);
    ck_assert_uint_eq(st(&f)->guest_errors, 3);
    wr(&f, E1000_RDT, 7);
    ck_assert_uint_eq(st(&f)->rx_frames, 1);
    fake_fini(&f);
}
END_TEST

/* CVE-2016-7909: ring lengths must be non-zero multiples of 128. */
START_TEST(bad_ring_lengths)
{
    static const uint32_t lens[] = { 0, 16, 100, 200, 0xfffff };
    fake f;
    uint8_t frame[64];

    setup(&f);
    fake_frame_make(frame, fake_mac, 64, 8);
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
        unsigned reads = f.dma_reads;
        wr(&f, E1000_TDLEN, lens[i]);
        wr(&f, E1000_RDLEN, lens[i]);
        txd_put(&f, 0, frame, 64, E1000_TXD_CMD_EOP);
        wr(&f, E1000_TDH, 0);
        wr(&f, E1000_TDT, 1);
        fake_rx_push(&f, frame, 64);
        wr(&f, E1000_RDT, 1);
        ck_assert_uint_eq(f.dma_reads, reads);
        ck_assert_uint_eq(f.be.ntx, 0);
        ck_assert_uint_eq(st(&f)->rx_frames, 0);
    }
    ck_assert_uint_ge(st(&f)->guest_errors, 10);
    fake_fini(&f);
}
END_TEST

/* A ring of 65528 descriptors (the largest TDLEN) with every descriptor
 * given: one bounded walk. */
START_TEST(tx_huge_ring)
{
    fake f;

    setup(&f);
    wr(&f, E1000_TDBAL, 0);
    wr(&f, E1000_TDLEN, 0xfff80);
    wr(&f, E1000_TDH, 0);
    memset(f.ram, 0, 0xfff80);          /* zero-length, no EOP */
    wr(&f, E1000_TDT, 0xfff80 / 16 - 1);
    ck_assert_uint_eq(rd(&f, E1000_TDH), 0xfff80 / 16 - 1);
    ck_assert_uint_eq(f.be.ntx, 0);
    ck_assert_uint_eq(st(&f)->guest_errors, 0);
    fake_fini(&f);
}
END_TEST

START_TEST(tx_bad_dma)
{
    fake f;
    uint8_t frame[64];

    setup(&f);
    fake_frame_make(frame, bcast, 64, 9);
    /* A buffer outside RAM: that frame is lost, the ring goes on. */
    txd_put(&f, 0, frame, 64, E1000_TXD_CMD_EOP | E1000_TXD_CMD_RS);
    mem_w32(&f, TXR + 4, 0x10);
    txd_put(&f, 1, frame, 64, E1000_TXD_CMD_EOP | E1000_TXD_CMD_RS);
    wr(&f, E1000_TDT, 2);
    ck_assert_uint_eq(f.be.ntx, 1);
    ck_assert_uint_eq(txd_sta(&f, 0), E1000_TXD_STA_DD);
    ck_assert_uint_eq(st(&f)->guest_errors, 1);
    /* A ring outside RAM: stops. */
    wr(&f, E1000_TDBAL, 0xfffff000u);
    wr(&f, E1000_TDT, 3);
    ck_assert_uint_eq(f.be.ntx, 1);
    ck_assert_uint_eq(rd(&f, E1000_TDH), 2);
    ck_assert_uint_eq(st(&f)->guest_errors, 2);
    rd(&f, E1000_STATUS);
    ck_assert_uint_eq(st(&f)->guest_errors, 2);
    wr(&f, E1000_TDBAH, 1);                   /* above 4 GiB: still outside */
    wr(&f, E1000_TDT, 4);
    ck_assert_uint_eq(st(&f)->guest_errors, 3);
    fake_fini(&f);
}
END_TEST

/* ---- receive -------------------------------------------------------- */

/* The Ethernet FCS, bit by bit (independent of the model's table). */
static uint32_t fcs_of(const uint8_t *p, size_t len)
{
    uint32_t c = 0xffffffffu;

    for (size_t i = 0; i < len; i++) {
        c ^= p[i];
        for (int b = 0; b < 8; b++)
            c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1)));
    }
    return ~c;
}

START_TEST(rx_one_frame)
{
    fake f;
    uint8_t frame[42];

    setup_opt(&f, NULL, 8, E1000_RCTL_BAM);   /* FCS kept */
    fake_rx_push(&f, frame, fake_frame_make(frame, fake_mac, 42, 10));
    nic_poll_rx(f.n);
    ck_assert_uint_eq(st(&f)->rx_frames, 1);
    ck_assert_uint_eq(rxd_len(&f, 0), 64);
    ck_assert_uint_eq(rxd_sta(&f, 0) & (E1000_RXD_STA_DD | E1000_RXD_STA_EOP),
                      E1000_RXD_STA_DD | E1000_RXD_STA_EOP);
    ck_assert_mem_eq(f.ram + RXB(0), frame, 42);
    ck_assert_uint_eq(f.ram[RXB(0) + 59], 0);
    {   /* the FCS of the padded frame follows it, least significant first */
        uint32_t want = fcs_of(f.ram + RXB(0), 60);
        uint32_t got = (uint32_t)f.ram[RXB(0) + 60] |
                       (uint32_t)f.ram[RXB(0) + 61] << 8 |
                       (uint32_t)f.ram[RXB(0) + 62] << 16 |
                       (uint32_t)f.ram[RXB(0) + 63] << 24;
        ck_assert_uint_eq(got, want);
    }
    ck_assert_uint_eq(rd(&f, E1000_RDH), 1);
    ck_assert_int_eq(f.level, 1);
    ck_assert_uint_eq(rd(&f, E1000_ICR), E1000_ICR_RXT0);
    ck_assert_uint_eq(rd(&f, E1000_GPRC), 1);
    /* SECRC: 60 bytes. */
    wr(&f, E1000_RCTL, E1000_RCTL_EN | E1000_RCTL_BAM | E1000_RCTL_SECRC);
    fake_rx_push(&f, frame, 42);
    nic_poll_rx(f.n);
    ck_assert_uint_eq(rxd_len(&f, 1), 60);
    fake_fini(&f);
}
END_TEST

/* RDH == RDT: the ring is full; frames wait, the first in the chip (the
 * backend's descriptor is then not polled, nic_poll_rx()), the rest in
 * the backend. */
START_TEST(rx_waits_for_descriptors)
{
    fake f;
    uint8_t frame[100];

    setup_opt(&f, NULL, 8, E1000_RCTL_BAM | E1000_RCTL_SECRC);
    fake_as_tap(&f);
    wr(&f, E1000_RDT, 0);
    fake_frame_make(frame, fake_mac, 100, 11);
    for (int i = 0; i < 3; i++)
        fake_rx_push(&f, frame, 100);
    nic_poll_rx(f.n);
    ck_assert(nic_rx_pending(f.n));
    ck_assert(nic_rx_waits_ring(f.n));      /* the VMM's tick retries it */
    ck_assert_uint_eq(fake_rx_waiting(&f), 2);
    wr(&f, E1000_RDT, 2);
    ck_assert_uint_eq(st(&f)->rx_frames, 2);
    ck_assert_uint_eq(fake_rx_waiting(&f), 1);
    ck_assert_uint_eq(rd(&f, E1000_RDH), 2);
    /* no free descriptors left */
    ck_assert(rd(&f, E1000_ICR) & E1000_ICR_RXDMT0);
    wr(&f, E1000_RDT, 3);
    ck_assert_uint_eq(st(&f)->rx_frames, 3);
    fake_fini(&f);
}
END_TEST

/* The receiver off (RCTL.EN clear), or without bus mastering: the
 * I/O thread's poll takes one frame into the chip and holds it, so the
 * backend's descriptor is not polled again (before, the frame stayed in
 * the backend, and a level-triggered TAP descriptor kept the I/O thread
 * polling without end); the receiver on, it and the next arrive. */
START_TEST(rx_held_while_receiver_off)
{
    fake f;
    uint8_t frame[100];

    setup_opt(&f, NULL, 8, E1000_RCTL_BAM | E1000_RCTL_SECRC);
    wr(&f, E1000_RCTL, E1000_RCTL_BAM | E1000_RCTL_SECRC);
    fake_frame_make(frame, fake_mac, 100, 13);
    fake_rx_push(&f, frame, 100);
    fake_rx_push(&f, frame, 100);
    /* a backend without a descriptor (the peer): nothing is held */
    nic_poll_rx(f.n);
    ck_assert(!nic_rx_pending(f.n));
    ck_assert_uint_eq(fake_rx_waiting(&f), 2);
    fake_as_tap(&f);
    fake_rx_held_off(&f, 1);
    ck_assert_uint_eq(st(&f)->rx_frames, 0);
    wr(&f, E1000_RCTL, E1000_RCTL_EN | E1000_RCTL_BAM | E1000_RCTL_SECRC);
    ck_assert_uint_eq(st(&f)->rx_frames, 2);
    ck_assert(!nic_rx_pending(f.n));
    nic_set_bus_master(f.n, false);
    fake_rx_push(&f, frame, 100);
    nic_poll_rx(f.n);
    ck_assert(nic_rx_pending(f.n));
    ck_assert_uint_eq(fake_rx_waiting(&f), 0);
    nic_set_bus_master(f.n, true);
    ck_assert_uint_eq(st(&f)->rx_frames, 3);
    fake_fini(&f);
}
END_TEST

/* BSIZE 256: a frame over several descriptors, EOP on the last; too few
 * free descriptors: it waits, RXO once. */
START_TEST(rx_chained_buffers)
{
    fake f;
    uint8_t frame[1000];

    setup_opt(&f, NULL, 8, E1000_RCTL_BAM | E1000_RCTL_SECRC |
              E1000_RCTL_BSIZE(3));
    wr(&f, E1000_RDT, 2);
    fake_rx_push(&f, frame, fake_frame_make(frame, fake_mac, 1000, 12));
    nic_poll_rx(f.n);
    ck_assert_uint_eq(st(&f)->rx_frames, 0);
    ck_assert_uint_ge(st(&f)->rx_no_buffer, 1);
    ck_assert_uint_eq(rd(&f, E1000_ICR), E1000_ICR_RXO);
    rd(&f, E1000_STATUS);
    ck_assert_uint_eq(rd(&f, E1000_ICR), 0);  /* raised once */
    wr(&f, E1000_RDT, 6);
    ck_assert_uint_eq(st(&f)->rx_frames, 1);
    for (unsigned i = 0; i < 4; i++) {
        ck_assert_uint_eq(rxd_len(&f, i), i < 3 ? 256 : 1000 - 768);
        ck_assert_uint_eq(rxd_sta(&f, i) &
                          (E1000_RXD_STA_DD | E1000_RXD_STA_EOP),
                          i < 3 ? E1000_RXD_STA_DD
                                : E1000_RXD_STA_DD | E1000_RXD_STA_EOP);
        ck_assert_mem_eq(f.ram + RXB(i), frame + 256 * i, rxd_len(&f, i));
    }
    ck_assert_uint_eq(rd(&f, E1000_RDH), 4);
    fake_fini(&f);
}
END_TEST

START_TEST(rx_address_filter)
{
    fake f;
    uint8_t frame[64];
    static const uint8_t other[6] = { 0x02, 0, 0, 0, 0, 9 };
    static const uint8_t mcast[6] = { 0x01, 0x00, 0x5e, 0x00, 0x00, 0xfb };
    unsigned h = (mcast[4] >> 4 | mcast[5] << 4) & 0xfff;  /* MO = 0 */

    setup_opt(&f, NULL, 16, E1000_RCTL_SECRC);
    fake_rx_push(&f, frame, fake_frame_make(frame, other, 64, 13));
    fake_rx_push(&f, frame, fake_frame_make(frame, bcast, 64, 13));
    fake_rx_push(&f, frame, fake_frame_make(frame, mcast, 64, 13));
    fake_rx_push(&f, frame, fake_frame_make(frame, fake_mac, 64, 13));
    nic_poll_rx(f.n);
    ck_assert_uint_eq(st(&f)->rx_frames, 1);            /* ours only */
    wr(&f, E1000_RCTL, E1000_RCTL_EN | E1000_RCTL_SECRC | E1000_RCTL_BAM);
    wr(&f, E1000_MTA + 4 * (h >> 5), 1u << (h & 31));
    wr(&f, E1000_RAL(1), other[0] | other[1] << 8 | other[2] << 16 |
       (uint32_t)other[3] << 24);
    wr(&f, E1000_RAH(1), 0x80000000u | other[4] | other[5] << 8);
    fake_rx_push(&f, frame, fake_frame_make(frame, bcast, 64, 14));
    fake_rx_push(&f, frame, fake_frame_make(frame, mcast, 64, 14));
    fake_rx_push(&f, frame, fake_frame_make(frame, other, 64, 14));
    nic_poll_rx(f.n);
    ck_assert_uint_eq(st(&f)->rx_frames, 4);
    wr(&f, E1000_RAH(1), 0);
    wr(&f, E1000_RCTL, E1000_RCTL_EN | E1000_RCTL_SECRC | E1000_RCTL_UPE);
    fake_rx_push(&f, frame, fake_frame_make(frame, other, 64, 15));
    nic_poll_rx(f.n);
    ck_assert_uint_eq(st(&f)->rx_frames, 5);
    fake_fini(&f);
}
END_TEST

START_TEST(synchronous_reply)
{
    fake f;
    uint8_t frame[98];

    setup(&f);
    f.be.echo = true;
    txd_put(&f, 0, frame, fake_frame_make(frame, fake_mac, 98, 16),
            E1000_TXD_CMD_EOP | E1000_TXD_CMD_RS);
    wr(&f, E1000_TDT, 1);
    ck_assert_uint_eq(st(&f)->rx_frames, 1);
    ck_assert_mem_eq(f.ram + RXB(0), frame, 98);
    ck_assert_uint_eq(rd(&f, E1000_ICR), E1000_ICR_TXDW | E1000_ICR_TXQE |
                      E1000_ICR_RXT0);
    fake_fini(&f);
}
END_TEST

/* ---- interrupts ----------------------------------------------------- */

START_TEST(interrupt_registers)
{
    fake f;

    setup(&f);
    wr(&f, E1000_ICS, 0x200);                 /* not in IMS */
    ck_assert_int_eq(f.level, 0);
    ck_assert_uint_eq(rd(&f, E1000_IMS), E1000_ICR_TXDW | E1000_ICR_RXT0 |
                      E1000_ICR_RXO | E1000_ICR_RXDMT0 | E1000_ICR_LSC);
    wr(&f, E1000_IMS, 0x200);
    ck_assert_int_eq(f.level, 1);
    wr(&f, E1000_IMC, 0x200);
    ck_assert_int_eq(f.level, 0);
    ck_assert_uint_eq(rd(&f, E1000_IMC), 0);
    wr(&f, E1000_ICS, E1000_ICR_TXDW | E1000_ICR_RXT0);
    ck_assert_int_eq(f.level, 1);
    wr(&f, E1000_ICR, E1000_ICR_TXDW);                  /* write 1 to clear */
    ck_assert_int_eq(f.level, 1);
    /* a byte write clears its bits */
    reg_wr(&f, E1000_ICR, 1, E1000_ICR_RXT0);
    ck_assert_int_eq(f.level, 0);
    ck_assert_uint_eq(rd(&f, E1000_ICR), 0x200);
    /* ITR is stored, nothing throttles. */
    wr(&f, E1000_ITR, 1000);
    ck_assert_uint_eq(rd(&f, E1000_ITR), 1000);
    fake_fini(&f);
}
END_TEST

START_TEST(send_combining)
{
    nic_options o = { .send_combine = true, .combine_max = 3,
                      .irq_coalesce = true };
    fake f;
    uint8_t frame[64];

    setup_opt(&f, &o, 8, E1000_RCTL_BAM | E1000_RCTL_SECRC);
    fake_frame_make(frame, bcast, 64, 17);
    for (unsigned i = 0; i < 2; i++) {
        txd_put(&f, i, frame, 64, E1000_TXD_CMD_EOP | E1000_TXD_CMD_RS);
        wr(&f, E1000_TDT, i + 1);
        ck_assert_uint_eq(f.be.ntx, 0);
        ck_assert_uint_eq(txd_sta(&f, i), 0);           /* DD untouched */
        ck_assert_uint_eq(rd(&f, E1000_TDH), 0);
    }
    txd_put(&f, 2, frame, 64, E1000_TXD_CMD_EOP | E1000_TXD_CMD_RS);
    wr(&f, E1000_TDT, 3);
    ck_assert_uint_eq(f.be.ntx, 3);
    ck_assert_uint_eq(st(&f)->tx_combined, 2);
    ck_assert_uint_eq(st(&f)->tx_batches, 1);
    ck_assert_uint_eq(st(&f)->irq_raised, 1);
    ck_assert_uint_eq(f.irq_calls, 1);
    rd(&f, E1000_ICR);
    txd_put(&f, 3, frame, 64, E1000_TXD_CMD_EOP | E1000_TXD_CMD_RS);
    wr(&f, E1000_TDT, 4);
    ck_assert_uint_eq(f.be.ntx, 3);
    nic_flush(f.n);
    ck_assert_uint_eq(f.be.ntx, 4);
    ck_assert_uint_eq(txd_sta(&f, 3), E1000_TXD_STA_DD);
    ck_assert_uint_eq(st(&f)->tx_batches, 2);
    /* CTRL.RST forgets what was queued. */
    txd_put(&f, 4, frame, 64, E1000_TXD_CMD_EOP | E1000_TXD_CMD_RS);
    wr(&f, E1000_TDT, 5);
    wr(&f, E1000_CTRL, E1000_CTRL_RST);
    nic_flush(f.n);
    ck_assert_uint_eq(f.be.ntx, 4);
    fake_fini(&f);
}
END_TEST

static void irq_workload(fake *f, bool coalesce)
{
    nic_options o = { .irq_coalesce = coalesce };
    uint8_t frame[64];

    setup_opt(f, &o, 8, E1000_RCTL_BAM | E1000_RCTL_SECRC);
    fake_frame_make(frame, bcast, 64, 18);
    for (unsigned i = 0; i < 5; i++) {
        txd_put(f, i, frame, 64, E1000_TXD_CMD_EOP | E1000_TXD_CMD_RS);
        wr(f, E1000_TDT, i + 1);
        wr(f, E1000_IMS, E1000_ICR_TXDW);               /* unchanged level */
        rd(f, E1000_ICR);
        wr(f, E1000_IMC, 0);
    }
}

START_TEST(irq_coalescing)
{
    fake a, b;

    irq_workload(&a, false);
    irq_workload(&b, true);
    ck_assert_uint_eq(a.be.ntx, 5);
    ck_assert_uint_eq(nic_get_stats(a.n)->irq_raised, 5);
    ck_assert_uint_eq(nic_get_stats(b.n)->irq_raised, 5);
    ck_assert_uint_eq(a.irq_rises, 5);
    ck_assert_uint_eq(b.irq_rises, 5);
    ck_assert_uint_eq(b.irq_calls, 10);
    ck_assert_uint_eq(nic_get_stats(b.n)->irq_line_calls, 10);
    ck_assert_uint_gt(nic_get_stats(b.n)->irq_suppressed, 0);
    ck_assert_uint_eq(nic_get_stats(a.n)->irq_suppressed, 0);
    ck_assert_uint_gt(a.irq_calls, b.irq_calls);
    fake_fini(&a);
    fake_fini(&b);
}
END_TEST

START_TEST(no_dma_without_bus_master)
{
    fake f;
    uint8_t frame[64];
    unsigned reads;

    setup(&f);
    nic_set_bus_master(f.n, false);
    reads = f.dma_reads;
    txd_put(&f, 0, frame, fake_frame_make(frame, fake_mac, 64, 19),
            E1000_TXD_CMD_EOP | E1000_TXD_CMD_RS);
    wr(&f, E1000_TDT, 1);
    fake_rx_push(&f, frame, 64);
    nic_poll_rx(f.n);
    ck_assert_uint_eq(f.dma_reads, reads);
    ck_assert_uint_eq(f.be.ntx, 0);
    nic_set_bus_master(f.n, true);
    ck_assert_uint_eq(f.be.ntx, 1);
    ck_assert_uint_eq(st(&f)->rx_frames, 1);
    ck_assert_uint_eq(st(&f)->guest_errors, 0);
    fake_fini(&f);
}
END_TEST

/* ---- hostile register traffic --------------------------------------- */

START_TEST(sub_dword_and_bad_accesses)
{
    fake f;

    fake_init(&f, NIC_E1000, NULL);
    reg_wr(&f, E1000_RDBAL + 2, 2, 0x1234);
    reg_wr(&f, E1000_RDBAL, 2, 0x5670);
    ck_assert_uint_eq(rd(&f, E1000_RDBAL), 0x12345670);
    ck_assert_uint_eq(reg_rd(&f, E1000_RDBAL + 3, 1), 0x12);
    ck_assert_uint_eq(reg_rd(&f, E1000_STATUS, 1), rd(&f, E1000_STATUS) & 0xff);
    ck_assert_uint_eq(reg_rd(&f, 0x20000, 4), 0xffffffffu);
    ck_assert_uint_eq(reg_rd(&f, 0x1fffe, 4), 0xffffffffu);
    ck_assert_uint_eq(reg_rd(&f, 0x0002, 4), 0xffffffffu);
    ck_assert_uint_eq(reg_rd(&f, 0x0001, 2), 0xffff);
    ck_assert_uint_eq(rd(&f, 0x1fffc), 0);              /* nothing there */
    ck_assert_uint_eq(st(&f)->guest_errors, 4);
    fake_fini(&f);
}
END_TEST

START_TEST(garbage_everywhere)
{
    nic_options o = { .send_combine = (_i & 1) != 0, .irq_coalesce = true };
    fake f;
    uint64_t seed = 0x5678 + (uint64_t)_i;
    uint8_t frame[200];

    setup(&f);
    f.be.echo = true;
    for (size_t i = 0; i < FAKE_RAM; i += 4)
        mem_w32(&f, i, fake_rand(&seed));
    nic_destroy(f.n);
    f.n = nic_create(NIC_E1000, fake_mac, &f.dma, &f.irq, &f.be.be, &o);
    nic_set_bus_master(f.n, true);
    for (uint32_t off = 0; off < 0x20000; off++) {
        unsigned size = 1u << (off & 3 ? 0 : fake_rand(&seed) % 3);
        uint32_t v = fake_rand(&seed);
        if ((off & ~3u) == 0 && (v & E1000_CTRL_RST) && (off & 0x100))
            v &= ~E1000_CTRL_RST;
        if (off % 4 == 0 && off < 0x6000) {
            /* near-valid rings now and then */
            if (fake_rand(&seed) % 4 == 0)
                v = (v & 0x7ff) * 16 % 0x800 * 8;
        }
        reg_wr(&f, off, size, v);
        reg_rd(&f, off & ~(size - 1), size);
        if (off % 64 == 0 && fake_rx_waiting(&f) < FAKE_FRAMES / 2)
            fake_rx_push(&f, frame, fake_frame_make(frame, fake_mac,
                         14 + fake_rand(&seed) % 186, (uint8_t)off));
        if (off % 256 == 0)
            nic_flush(f.n);
    }
    /* Rings that the model accepts, over random memory. */
    for (int r = 0; r < 200; r++) {
        wr(&f, E1000_TDBAL, fake_rand(&seed) % FAKE_RAM);
        wr(&f, E1000_TDLEN, 128 * (1 + fake_rand(&seed) % 64));
        wr(&f, E1000_TDH, 0);
        wr(&f, E1000_TCTL, E1000_TCTL_EN);
        wr(&f, E1000_TDT, fake_rand(&seed) % 8);
        wr(&f, E1000_RDBAL, fake_rand(&seed) % FAKE_RAM);
        wr(&f, E1000_RDLEN, 128 * (1 + fake_rand(&seed) % 64));
        wr(&f, E1000_RDH, 0);
        wr(&f, E1000_RCTL, E1000_RCTL_EN | E1000_RCTL_UPE |
           (fake_rand(&seed) & 0x02030000u));
        fake_rx_push(&f, frame, fake_frame_make(frame, fake_mac, 200, 1));
        wr(&f, E1000_RDT, fake_rand(&seed) % 8);
        nic_flush(f.n);
    }
    /* Still an e1000. */
    wr(&f, E1000_CTRL, E1000_CTRL_RST);
    ck_assert_uint_eq(rd(&f, E1000_IMS), 0);
    memset(f.ram + TXR, 0, 16 * 8);
    wr(&f, E1000_TDBAL, TXR);
    wr(&f, E1000_TDLEN, 128);
    wr(&f, E1000_TCTL, E1000_TCTL_EN);
    txd_put(&f, 0, frame, fake_frame_make(frame, bcast, 100, 2),
            E1000_TXD_CMD_EOP | E1000_TXD_CMD_RS);
    unsigned before = f.be.ntx;
    wr(&f, E1000_TDT, 1);
    nic_flush(f.n);
    ck_assert_uint_eq(f.be.ntx, before + 1);
    ck_assert_uint_eq(txd_sta(&f, 0), E1000_TXD_STA_DD);
    fake_fini(&f);
}
END_TEST

/* ---- the direct page (nic.h: the receive ring's registers as memory) */

static const nic_options direct_opt = {
    .latch_fast = true, .irq_coalesce = true, .direct = true,
};

/* The word of register `off` in the direct page, where a guest whose VMM
 * mapped the page reads and writes it without an exit. */
static uint32_t *dpage(fake *f, uint32_t off)
{
    uint32_t base;
    void *hva;

    ck_assert(nic_direct_page(f->n, &base, &hva));
    ck_assert_uint_eq(base, 0x2000);
    ck_assert_uint_eq((uintptr_t)hva % NIC_DIRECT_SIZE, 0);
    ck_assert_uint_lt(off - base, NIC_DIRECT_SIZE);
    return (uint32_t *)(void *)((uint8_t *)hva + (off - base));
}

/* Descriptors given back by a store into the page, which tells nobody:
 * the frame that waits for them is held (with a backend without a
 * descriptor too), so the VMM's tick retries it, and the model finds
 * RDT there; RDH advances in the page, where the guest reads it. Fails
 * if the model does not take the page in (no frame at the tick) or does
 * not hold the frame (no tick armed). */
START_TEST(direct_page_receive)
{
    fake f;
    uint8_t frame[100];
    uint64_t updates;

    setup_opt(&f, &direct_opt, 8, E1000_RCTL_BAM | E1000_RCTL_SECRC);
    /* the driver's set-up went through the bus: the page holds it */
    ck_assert_uint_eq(*dpage(&f, E1000_RDBAL), RXR);
    ck_assert_uint_eq(*dpage(&f, E1000_RDLEN), 8 * 16);
    ck_assert_uint_eq(*dpage(&f, E1000_RDT), 7);
    updates = st(&f)->direct_updates;   /* RDBAL, RDLEN, RDT of the set-up */
    ck_assert_uint_eq(updates, 3);
    *dpage(&f, E1000_RDT) = 0;                  /* ring full */
    fake_frame_make(frame, fake_mac, 100, 21);
    fake_rx_push(&f, frame, 100);
    fake_rx_push(&f, frame, 100);
    nic_poll_rx(f.n);
    ck_assert_uint_eq(st(&f)->rx_frames, 0);
    ck_assert(nic_rx_pending(f.n));
    ck_assert(nic_rx_waits_ring(f.n));
    *dpage(&f, E1000_RDT) = 2;                  /* no exit, no trap */
    ck_assert_uint_eq(st(&f)->rx_frames, 0);
    nic_poll_rx(f.n);                           /* the tick */
    ck_assert_uint_eq(st(&f)->rx_frames, 2);
    ck_assert(!nic_rx_pending(f.n));
    ck_assert_uint_eq(*dpage(&f, E1000_RDH), 2);
    ck_assert_uint_eq(rd(&f, E1000_RDH), 2);    /* the bus reads the page */
    ck_assert_uint_eq(rxd_sta(&f, 1) & E1000_RXD_STA_DD, E1000_RXD_STA_DD);
    ck_assert_uint_eq(st(&f)->direct_updates, updates + 2);
    /* a frame that finds descriptors is taken at the next access */
    *dpage(&f, E1000_RDT) = 5;
    fake_rx_push(&f, frame, 100);
    rd(&f, E1000_STATUS);
    ck_assert_uint_eq(st(&f)->rx_frames, 3);
    ck_assert_uint_eq(*dpage(&f, E1000_RDH), 3);
    /* without the option the model has no page */
    {
        fake g;
        uint32_t off;
        void *hva;
        setup_opt(&g, NULL, 8, E1000_RCTL_BAM);
        ck_assert(!nic_direct_page(g.n, &off, &hva));
        fake_fini(&g);
    }
    fake_fini(&f);
}
END_TEST

/* Is the write at `off` deferred (inside one of the coalesced ranges)? */
static bool deferred(fake *f, uint32_t off)
{
    uint32_t r[16][2];
    unsigned k = nic_coalesced_ranges(f->n, r, 16);

    for (unsigned i = 0; i < k; i++)
        if (off - r[i][0] < r[i][1])
            return true;
    return false;
}

/* With the direct page the ring's registers act at once, so a reset or
 * a receiver turned off must not wait in the coalesced ring behind them
 * (a deferred CTRL.RST replayed after the guest set its ring up in the
 * page would clear it): CTRL and RCTL exit then. Fails if they stay
 * deferred with the page. */
START_TEST(direct_page_orders_reset)
{
    fake f, g;

    setup_opt(&f, &direct_opt, 8, E1000_RCTL_BAM);
    setup_opt(&g, NULL, 8, E1000_RCTL_BAM);
    ck_assert(deferred(&g, E1000_CTRL) && deferred(&g, E1000_RCTL));
    ck_assert(!deferred(&f, E1000_CTRL) && !deferred(&f, E1000_RCTL));
    for (fake *x = &f; x; x = x == &f ? &g : NULL) {
        ck_assert(!deferred(x, E1000_MDIC) && !deferred(x, E1000_ICR) &&
                  !deferred(x, E1000_IMS) && !deferred(x, E1000_TCTL) &&
                  !deferred(x, E1000_TDT));
        ck_assert(deferred(x, E1000_RDT) && deferred(x, E1000_STATUS) &&
                  deferred(x, E1000_RXCSUM));
    }
    /* the page's accesses through the bus are counted apart */
    ck_assert_uint_eq(st(&g)->direct_bus, 0);
    ck_assert_uint_ge(st(&f)->direct_bus, 5);  /* the set-up's ring writes */
    fake_fini(&f);
    fake_fini(&g);
}
END_TEST

/* What a hostile guest leaves in the page is taken in as its write would
 * be: masked (the page then holds what the register holds), checked at
 * the next receive (a tail beyond the ring halts it, reported once, until
 * the guest writes the registers again, in the page too); a reset clears
 * the page; accesses of the page through the bus are memory accesses of
 * their size. */
START_TEST(direct_page_hostile)
{
    fake f;
    uint8_t frame[100];

    setup_opt(&f, &direct_opt, 8, E1000_RCTL_BAM | E1000_RCTL_SECRC);
    *dpage(&f, E1000_RDT) = 0xabcd0003u;        /* RDT keeps 16 bits */
    rd(&f, E1000_STATUS);
    ck_assert_uint_eq(*dpage(&f, E1000_RDT), 3);
    *dpage(&f, E1000_RDT) = 100;                /* beyond the ring of 8 */
    fake_frame_make(frame, fake_mac, 100, 22);
    fake_rx_push(&f, frame, 100);
    nic_poll_rx(f.n);
    ck_assert_uint_eq(st(&f)->rx_frames, 0);
    ck_assert_uint_eq(st(&f)->guest_errors, 1);
    nic_poll_rx(f.n);
    ck_assert_uint_eq(st(&f)->guest_errors, 1); /* halted, once */
    *dpage(&f, E1000_RDT) = 4;
    nic_poll_rx(f.n);
    ck_assert_uint_eq(st(&f)->rx_frames, 1);
    /* a byte and a word through the bus land in the page */
    reg_wr(&f, E1000_RDT + 1, 1, 0x7f);
    ck_assert_uint_eq(*dpage(&f, E1000_RDT), 0x7f04 & 0xffff);
    ck_assert_uint_eq(rd(&f, E1000_RDT), 0x7f04);   /* within the mask */
    ck_assert_uint_eq(reg_rd(&f, E1000_RDLEN + 2, 2), 0);
    /* garbage in the page between the registers reads back as memory */
    *dpage(&f, 0x2900) = 0xdeadbeefu;
    ck_assert_uint_eq(rd(&f, 0x2900), 0xdeadbeefu);
    /* a reset: the page holds the registers' reset values */
    wr(&f, E1000_CTRL, E1000_CTRL_RST);
    ck_assert_uint_eq(*dpage(&f, E1000_RDBAL), 0);
    ck_assert_uint_eq(*dpage(&f, E1000_RDT), 0);
    ck_assert_uint_eq(*dpage(&f, 0x2900), 0);
    fake_fini(&f);
}
END_TEST

static Suite *e1000_suite(void)
{
    Suite *s = suite_create("e1000");
    TCase *t = tcase_create("driver");
    TCase *h = tcase_create("hostile");

    tcase_add_test(t, identity);
    tcase_add_test(t, eeprom_eerd);
    tcase_add_test(t, eeprom_microwire);
    tcase_add_test(t, phy_through_mdic);
    tcase_add_test(t, ctrl_reset);
    tcase_add_test(t, latch_registers);
    tcase_add_test(t, tx_one_frame);
    tcase_add_test(t, tx_status_and_padding);
    tcase_add_test(t, tx_chained_descriptors);
    tcase_add_test(t, tx_chain_completed_later);
    tcase_add_test(t, tx_zero_length_descriptors);
    tcase_add_test(t, tx_tse_zero_mss);
    tcase_add_test(t, rx_dma_into_own_registers);
    tcase_add_test(t, rx_one_frame);
    tcase_add_test(t, rx_waits_for_descriptors);
    tcase_add_test(t, rx_held_while_receiver_off);
    tcase_add_test(t, rx_chained_buffers);
    tcase_add_test(t, rx_address_filter);
    tcase_add_test(t, synchronous_reply);
    tcase_add_test(t, interrupt_registers);
    tcase_add_test(t, send_combining);
    tcase_add_test(t, irq_coalescing);
    tcase_add_test(t, no_dma_without_bus_master);
    tcase_add_test(t, direct_page_receive);
    tcase_add_test(t, direct_page_orders_reset);
    suite_add_tcase(s, t);

    tcase_add_test(h, tx_oversize);
    tcase_add_test(h, tx_tail_beyond_ring);
    tcase_add_test(h, bad_ring_lengths);
    tcase_add_test(h, tx_huge_ring);
    tcase_add_test(h, tx_bad_dma);
    tcase_add_test(h, sub_dword_and_bad_accesses);
    tcase_add_test(h, direct_page_hostile);
    tcase_add_loop_test(h, garbage_everywhere, 0, 4);
    suite_add_tcase(s, h);
    return s;
}

int main(void)
{
    return lc_test_run(e1000_suite());
}
