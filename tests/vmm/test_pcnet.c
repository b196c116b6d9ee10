/* SPDX-License-Identifier: MIT */
/*
 * tests/vmm/test_pcnet.c: the AMD PCnet-PCI II (Am79C970A) model, driven
 * the way Linux pcnet32 drives it (reset port, SWSTYLE 2, init block,
 * INIT, IDON, STRT, TDMD), and by a hostile guest.
 */
#include <stdio.h>

#include "../unit/harness.h"
#include "hw/pcnet_regs.h"
#include "nic_fake.h"
#include "pcnet_fake.h"
#include "nic_model.h"       /* nic.sc: the combining policy's state */

/* guest memory layout */
#define IB      0x1000
#define RXR     0x2000
#define TXR     0x4000
#define RXB(i)  (0x10000u + (i) * 0x800u)
#define TXB(i)  (0x80000u + (i) * 0x800u)

static const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };

static void bcr_w(fake *f, unsigned r, uint16_t v)
{
    reg_wr(f, PCNET_RAP, 2, r);
    reg_wr(f, PCNET_BDP, 2, v);
}

static uint16_t bcr_r(fake *f, unsigned r)
{
    reg_wr(f, PCNET_RAP, 2, r);
    return (uint16_t)reg_rd(f, PCNET_BDP, 2);
}

static const nic_stats *st(fake *f)
{
    return nic_get_stats(f->n);
}

/* Style 2 initialization block: MODE, RLEN/TLEN (log2), PADR, LADRF 0,
 * RDRA, TDRA. */
static void write_ib(fake *f, unsigned rlog, unsigned tlog, uint16_t mode)
{
    memset(f->ram + IB, 0, 28);
    mem_w16(f, IB, mode);
    f->ram[IB + 2] = (uint8_t)(rlog << 4);
    f->ram[IB + 3] = (uint8_t)(tlog << 4);
    memcpy(f->ram + IB + 4, fake_mac, 6);
    mem_w32(f, IB + 20, RXR);
    mem_w32(f, IB + 24, TXR);
}

/* Give receive descriptor i (style 2) with a buffer of buflen bytes. */
static void rx_give(fake *f, unsigned i, size_t buflen)
{
    uint64_t a = RXR + 16 * i;

    mem_w32(f, a, RXB(i));
    mem_w16(f, a + 4, bcnt(buflen));
    mem_w32(f, a + 8, 0);
    mem_w16(f, a + 6, PCNET_DESC_OWN);
}

static uint16_t rmd_status(fake *f, unsigned i)
{
    return mem_r16(f, RXR + 16 * i + 6);
}

static uint32_t rmd_mcnt(fake *f, unsigned i)
{
    return mem_r32(f, RXR + 16 * i + 8) & 0x0fff;
}

/* Fill transmit descriptor i (style 2) with len bytes of data. */
static void tx_put(fake *f, unsigned i, const uint8_t *data, size_t len,
                   uint16_t flags)
{
    uint64_t a = TXR + 16 * i;

    memcpy(f->ram + TXB(i), data, len);
    mem_w32(f, a, TXB(i));
    mem_w16(f, a + 4, bcnt(len));
    mem_w32(f, a + 8, 0);
    mem_w16(f, a + 6, flags);
}

static uint16_t tmd_status(fake *f, unsigned i)
{
    return mem_r16(f, TXR + 16 * i + 6);
}

static uint32_t tmd_misc(fake *f, unsigned i)
{
    return mem_r32(f, TXR + 16 * i + 8);
}

/* pcnet32_open: reset, SWSTYLE 2, init block, CSR1/2, CSR4, INIT, wait
 * for IDON, then IDON cleared with INEA | STRT. `nrx` buffers of 1544
 * bytes (PKT_BUF_SKB) are given. */
static void setup_opt(fake *f, const nic_options *o, unsigned rlog,
                      unsigned tlog, unsigned nrx)
{
    fake_init(f, NIC_PCNET, o);
    reg_rd(f, PCNET_RESET, 2);
    ck_assert_uint_eq(csr_r(f, 0), CSR0_STOP);
    bcr_w(f, 20, 2);
    write_ib(f, rlog, tlog, 0);
    for (unsigned i = 0; i < nrx; i++)
        rx_give(f, i, 1544);
    csr_w(f, 1, IB & 0xffff);
    csr_w(f, 2, IB >> 16);
    csr_w(f, 4, 0x0915);
    csr_w(f, 0, CSR0_INIT);
    ck_assert(csr_r(f, 0) & CSR0_IDON);
    csr_w(f, 0, CSR0_IDON | CSR0_INEA | CSR0_STRT);
    ck_assert_uint_eq(csr_r(f, 0), CSR0_INIT | CSR0_STRT | CSR0_TXON |
                      CSR0_RXON | CSR0_INEA);
    ck_assert_int_eq(f->level, 0);
}

static void setup(fake *f)
{
    setup_opt(f, NULL, 3, 3, 8);
}

static void kick(fake *f)
{
    csr_w(f, 0, CSR0_INEA | CSR0_TDMD);
}

/* ---- identity and probing ------------------------------------------- */

START_TEST(identity_and_names)
{
    nic_pci_id id;

    ck_assert_int_eq(nic_model_parse("pcnet"), NIC_PCNET);
    ck_assert_int_eq(nic_model_parse("Am79C970A"), NIC_PCNET);
    ck_assert_int_eq(nic_model_parse("e1000"), NIC_E1000);
    ck_assert_int_eq(nic_model_parse("82540em"), NIC_E1000);
    ck_assert_int_eq(nic_model_parse("ne2k"), NIC_NONE);
    ck_assert_int_eq(nic_model_parse(NULL), NIC_NONE);
    ck_assert_str_eq(nic_model_name(NIC_PCNET), "pcnet");
    ck_assert_str_eq(nic_model_name(NIC_E1000), "e1000");
    nic_pci_identity(NIC_PCNET, &id);
    ck_assert_uint_eq(id.vendor, 0x1022);
    ck_assert_uint_eq(id.device, 0x2000);
    ck_assert_uint_eq(id.class_code, 0x02);
    ck_assert(id.bar_is_io);
    ck_assert_uint_eq(id.bar_size, 32);
    ck_assert_ptr_null(nic_create(NIC_NONE, fake_mac, NULL, NULL, NULL, NULL));
}
END_TEST

START_TEST(aprom_layout)
{
    fake f;
    uint16_t sum = 0;
    uint8_t p[16];

    fake_init(&f, NIC_PCNET, NULL);
    for (unsigned i = 0; i < 16; i++)
        p[i] = (uint8_t)reg_rd(&f, i, 1);
    ck_assert_mem_eq(p, fake_mac, 6);
    ck_assert_uint_eq(p[14], 'W');
    ck_assert_uint_eq(p[15], 'W');
    for (unsigned i = 0; i < 16; i++)
        if (i != 12 && i != 13)
            sum = (uint16_t)(sum + p[i]);
    ck_assert_uint_eq(p[12] | p[13] << 8, sum);
    ck_assert_uint_eq(reg_rd(&f, 0, 2), (uint32_t)(p[0] | p[1] << 8));
    ck_assert_uint_eq(reg_rd(&f, 4, 4), mem_r32(&(fake){ .ram = p }, 4));
    reg_wr(&f, 0, 1, 0x00);             /* read-only */
    ck_assert_uint_eq(reg_rd(&f, 0, 1), fake_mac[0]);
    fake_fini(&f);
}
END_TEST

/* pcnet32_probe1: reset, CSR0 == 4, RAP check, chip version, PADR. */
START_TEST(probe_like_pcnet32)
{
    fake f;
    uint32_t ver;

    fake_init(&f, NIC_PCNET, NULL);
    reg_rd(&f, PCNET_RESET, 2);
    ck_assert_uint_eq(csr_r(&f, 0), 4);
    reg_wr(&f, PCNET_RAP, 2, 88);
    ck_assert_uint_eq(reg_rd(&f, PCNET_RAP, 2), 88);
    ver = csr_r(&f, 88) | (uint32_t)csr_r(&f, 89) << 16;
    ck_assert_uint_eq(ver, 0x2621003);
    ck_assert_uint_eq(ver & 0xfff, 0x003);
    ck_assert_uint_eq((ver >> 12) & 0xffff, 0x2621);
    for (unsigned i = 0; i < 3; i++)
        ck_assert_uint_eq(csr_r(&f, 12 + i),
                          (uint32_t)(fake_mac[2 * i] | fake_mac[2 * i + 1] << 8));
    /* BCR4 != 0xc0 means link up to pcnet32_check_media. */
    ck_assert_uint_eq(bcr_r(&f, 4), 0x80c0);
    ck_assert_uint_eq(bcr_r(&f, 2), 0x0002);
    ck_assert_uint_eq(bcr_r(&f, 20) & 0xff, 0);
    bcr_w(&f, 20, 2);
    ck_assert_uint_eq(bcr_r(&f, 20) & 0x1ff, 0x102);    /* SSIZE32 */
    ck_assert_uint_eq(csr_r(&f, 58) & 0xff, 2);          /* alias */
    /* The reset port resets RAP and CSR0 again. */
    csr_w(&f, 0, CSR0_INIT);
    reg_rd(&f, PCNET_RESET, 2);
    ck_assert_uint_eq(reg_rd(&f, PCNET_RAP, 2), 0);
    ck_assert_uint_eq(reg_rd(&f, PCNET_RDP, 2), CSR0_STOP);
    ck_assert_uint_eq(st(&f)->resets, 2);
    fake_fini(&f);
}
END_TEST

/* The RAP is deferred (a coalesced zone) unless the VMM runs exit pairs
 * itself: then the RAP write and its data access are one exit. */
START_TEST(rap_deferred_unless_pairs)
{
    nic_options o = { .latch_fast = true };
    fake f;
    uint32_t r[4][2];

    fake_init(&f, NIC_PCNET, &o);
    ck_assert_uint_eq(nic_coalesced_ranges(f.n, r, 4), 1);
    ck_assert_uint_eq(r[0][0], PCNET_RAP);
    ck_assert_uint_eq(r[0][1], 2);
    fake_fini(&f);
    o.pairs_in_vmm = true;
    fake_init(&f, NIC_PCNET, &o);
    ck_assert_uint_eq(nic_coalesced_ranges(f.n, r, 4), 0);
    ck_assert(nic_access_is_latch(f.n, PCNET_RAP, 2));    /* still a latch */
    fake_fini(&f);
}
END_TEST

START_TEST(rap_is_the_latch)
{
    fake f;
    uint32_t r[4][2];
    uint8_t frame[64];

    setup(&f);
    ck_assert(nic_access_is_latch(f.n, PCNET_RAP, 2));
    ck_assert(!nic_access_is_latch(f.n, PCNET_RAP, 1));
    ck_assert(!nic_access_is_latch(f.n, PCNET_RDP, 2));
    ck_assert(!nic_access_is_latch(f.n, PCNET_RESET, 2));
    ck_assert(!nic_access_is_latch(f.n, PCNET_BDP, 2));
    ck_assert(!nic_access_is_latch(f.n, 0x40, 2));
    ck_assert_uint_eq(nic_latch_ranges(f.n, r, 4), 1);
    ck_assert_uint_eq(r[0][0], 0x12);
    ck_assert_uint_eq(r[0][1], 2);
    ck_assert_uint_eq(nic_latch_ranges(f.n, r, 0), 0);
    /* A RAP write neither receives nor interrupts... */
    fake_rx_push(&f, frame, fake_frame_make(frame, fake_mac, 64, 1));
    uint64_t latches = st(&f)->latch_accesses;
    reg_wr(&f, PCNET_RAP, 2, 0);
    ck_assert_uint_eq(st(&f)->latch_accesses, latches + 1);
    ck_assert_uint_eq(fake_rx_waiting(&f), 1);
    ck_assert_uint_eq(st(&f)->rx_frames, 0);
    /* ...the next RDP access does. */
    ck_assert(reg_rd(&f, PCNET_RDP, 2) & CSR0_INEA);
    ck_assert_uint_eq(st(&f)->rx_frames, 1);
    ck_assert_int_eq(f.level, 1);
    fake_fini(&f);
}
END_TEST

/* ---- initialization and interrupts ---------------------------------- */

START_TEST(init_done_interrupt)
{
    fake f;

    fake_init(&f, NIC_PCNET, NULL);
    reg_rd(&f, PCNET_RESET, 2);
    bcr_w(&f, 20, 2);
    write_ib(&f, 2, 2, 0);
    csr_w(&f, 1, IB);
    csr_w(&f, 2, 0);
    csr_w(&f, 0, CSR0_INIT | CSR0_INEA);
    ck_assert_uint_eq(csr_r(&f, 0), CSR0_INIT | CSR0_INEA | CSR0_INTR |
                      CSR0_IDON);
    ck_assert_int_eq(f.level, 1);
    ck_assert_uint_eq(csr_r(&f, 76), (uint16_t)-4);     /* 2^2 */
    ck_assert_uint_eq(csr_r(&f, 78), (uint16_t)-4);
    ck_assert_uint_eq(csr_r(&f, 24), RXR);
    ck_assert_uint_eq(csr_r(&f, 30), TXR);
    /* IDONM masks INTR, not IDON. */
    csr_w(&f, 3, 0x0100);
    ck_assert_uint_eq(csr_r(&f, 0) & (CSR0_IDON | CSR0_INTR), CSR0_IDON);
    ck_assert_int_eq(f.level, 0);
    csr_w(&f, 3, 0);
    ck_assert_int_eq(f.level, 1);
    /* Write 1 to clear; writing the value read back clears it. */
    csr_w(&f, 0, csr_r(&f, 0) & ~(CSR0_INIT | CSR0_STRT | CSR0_TDMD));
    ck_assert_uint_eq(csr_r(&f, 0) & (CSR0_IDON | CSR0_INTR), 0);
    ck_assert_int_eq(f.level, 0);
    fake_fini(&f);
}
END_TEST

START_TEST(interrupt_enable_and_masks)
{
    fake f;
    uint8_t frame[100];

    setup(&f);
    fake_rx_push(&f, frame, fake_frame_make(frame, fake_mac, 100, 2));
    nic_poll_rx(f.n);
    ck_assert(csr_r(&f, 0) & CSR0_RINT);
    ck_assert_int_eq(f.level, 1);
    csr_w(&f, 0, 0);                    /* INEA off: INTR stays */
    ck_assert(csr_r(&f, 0) & CSR0_INTR);
    ck_assert_int_eq(f.level, 0);
    csr_w(&f, 0, CSR0_INEA);
    ck_assert_int_eq(f.level, 1);
    csr_w(&f, 3, 0x0400);               /* RINTM */
    ck_assert_uint_eq(csr_r(&f, 0) & (CSR0_RINT | CSR0_INTR), CSR0_RINT);
    ck_assert_int_eq(f.level, 0);
    csr_w(&f, 3, 0);
    csr_w(&f, 0, CSR0_INEA | CSR0_RINT);
    ck_assert_uint_eq(csr_r(&f, 0) & (CSR0_RINT | CSR0_INTR), 0);
    ck_assert_int_eq(f.level, 0);
    fake_fini(&f);
}
END_TEST

/* ---- transmit ------------------------------------------------------- */

START_TEST(tx_one_frame)
{
    fake f;
    uint8_t frame[300];
    size_t len = fake_frame_make(frame, bcast, 300, 3);

    setup(&f);
    tx_put(&f, 0, frame, len, PCNET_DESC_OWN | PCNET_DESC_STP | PCNET_DESC_ENP);
    kick(&f);
    ck_assert_uint_eq(f.be.ntx, 1);
    ck_assert_uint_eq(f.be.tx[0].len, len);
    ck_assert_mem_eq(f.be.tx[0].data, frame, len);
    ck_assert_uint_eq(tmd_status(&f, 0), PCNET_DESC_STP | PCNET_DESC_ENP);
    ck_assert(csr_r(&f, 0) & CSR0_TINT);
    ck_assert_uint_eq(csr_r(&f, 0) & CSR0_TDMD, 0);
    ck_assert_int_eq(f.level, 1);
    ck_assert_uint_eq(st(&f)->tx_frames, 1);
    ck_assert_uint_eq(st(&f)->irq_raised, 1);
    /* The next descriptor is used next. */
    tx_put(&f, 1, frame, 60, PCNET_DESC_OWN | PCNET_DESC_STP | PCNET_DESC_ENP);
    kick(&f);
    ck_assert_uint_eq(f.be.ntx, 2);
    ck_assert_uint_eq(f.be.tx[1].len, 60);
    fake_fini(&f);
}
END_TEST

START_TEST(tx_chained_buffers)
{
    fake f;
    uint8_t frame[1514];
    size_t len = fake_frame_make(frame, bcast, 1514, 4);

    setup(&f);
    tx_put(&f, 0, frame, 500, PCNET_DESC_OWN | PCNET_DESC_STP);
    tx_put(&f, 1, frame + 500, 500, PCNET_DESC_OWN);
    tx_put(&f, 2, frame + 1000, 514, PCNET_DESC_OWN | PCNET_DESC_ENP);
    kick(&f);
    ck_assert_uint_eq(f.be.ntx, 1);
    ck_assert_uint_eq(f.be.tx[0].len, len);
    ck_assert_mem_eq(f.be.tx[0].data, frame, len);
    for (unsigned i = 0; i < 3; i++)
        ck_assert_uint_eq(tmd_status(&f, i) & PCNET_DESC_OWN, 0);
    fake_fini(&f);
}
END_TEST

/* TMD2.BUFF: a chain whose next descriptor is not owned. */
START_TEST(tx_chain_without_enp)
{
    fake f;
    uint8_t frame[200];
    uint64_t errs;

    setup(&f);
    fake_frame_make(frame, bcast, 200, 5);
    tx_put(&f, 0, frame, 100, PCNET_DESC_OWN | PCNET_DESC_STP);
    tx_put(&f, 1, frame + 100, 100, PCNET_DESC_OWN);
    errs = st(&f)->guest_errors;
    kick(&f);
    ck_assert_uint_eq(f.be.ntx, 0);
    ck_assert_uint_eq(tmd_status(&f, 0), PCNET_DESC_STP);
    ck_assert_uint_eq(tmd_status(&f, 1), PCNET_DESC_ERR);
    ck_assert_uint_eq(tmd_misc(&f, 1) & 0xc0000000u, 0xc0000000u);
    ck_assert_uint_eq(csr_r(&f, 0) & CSR0_TXON, 0);          /* UFLO: off */
    ck_assert(csr_r(&f, 0) & CSR0_TINT);
    ck_assert_uint_eq(st(&f)->guest_errors, errs + 1);
    /* Nothing more goes out until STRT again. */
    tx_put(&f, 2, frame, 100, PCNET_DESC_OWN | PCNET_DESC_STP | PCNET_DESC_ENP);
    kick(&f);
    ck_assert_uint_eq(f.be.ntx, 0);
    csr_w(&f, 0, CSR0_INEA | CSR0_STRT | CSR0_STOP);   /* STOP wins */
    ck_assert_uint_eq(csr_r(&f, 0), CSR0_STOP);
    fake_fini(&f);
}
END_TEST

/* Every descriptor owned, none with ENP: the walk ends at the ring's
 * length. */
START_TEST(tx_whole_ring_without_enp)
{
    fake f;
    uint8_t frame[64];

    setup(&f);
    fake_frame_make(frame, bcast, 64, 6);
    for (unsigned i = 0; i < 8; i++)
        tx_put(&f, i, frame, 64, PCNET_DESC_OWN |
               (i == 0 ? PCNET_DESC_STP : 0));
    kick(&f);
    ck_assert_uint_eq(f.be.ntx, 0);
    ck_assert_uint_eq(tmd_status(&f, 7), PCNET_DESC_ERR);
    ck_assert_uint_eq(csr_r(&f, 0) & CSR0_TXON, 0);
    fake_fini(&f);
}
END_TEST

/* All descriptors owned with STP|ENP: each is sent once per pass; owned
 * descriptors without STP are skipped (TMD1.STP) and never sent. */
START_TEST(tx_all_owned)
{
    fake f;
    uint8_t frame[64];

    setup(&f);
    fake_frame_make(frame, bcast, 64, 7);
    for (unsigned i = 0; i < 8; i++)
        tx_put(&f, i, frame, 64, PCNET_DESC_OWN | PCNET_DESC_STP |
               PCNET_DESC_ENP);
    kick(&f);
    ck_assert_uint_eq(f.be.ntx, 8);
    for (unsigned i = 0; i < 8; i++)
        tx_put(&f, i, frame, 64, PCNET_DESC_OWN);
    kick(&f);
    ck_assert_uint_eq(f.be.ntx, 8);
    ck_assert(csr_r(&f, 0) & CSR0_TXON);
    for (unsigned i = 0; i < 8; i++)
        ck_assert_uint_eq(tmd_status(&f, i), PCNET_DESC_OWN);
    fake_fini(&f);
}
END_TEST

/* Over NET_FRAME_MAX: dropped before copying, BABL, guest error; the
 * transmitter goes on. */
START_TEST(tx_oversize)
{
    fake f;
    uint8_t frame[1514];
    uint64_t errs;

    setup(&f);
    fake_frame_make(frame, bcast, 1514, 8);
    tx_put(&f, 0, frame, 1000, PCNET_DESC_OWN | PCNET_DESC_STP);
    tx_put(&f, 1, frame, 1000, PCNET_DESC_OWN | PCNET_DESC_ENP);
    errs = st(&f)->guest_errors;
    kick(&f);
    ck_assert_uint_eq(f.be.ntx, 0);
    ck_assert_uint_eq(csr_r(&f, 0) & (CSR0_BABL | CSR0_ERR | CSR0_TXON),
                      CSR0_BABL | CSR0_ERR | CSR0_TXON);
    ck_assert_uint_eq(tmd_status(&f, 1) & PCNET_DESC_OWN, 0);
    ck_assert_uint_eq(st(&f)->guest_errors, errs + 1);
    ck_assert_int_eq(f.level, 1);
    csr_w(&f, 0, CSR0_INEA | CSR0_BABL);
    ck_assert_uint_eq(csr_r(&f, 0) & (CSR0_BABL | CSR0_ERR), 0);
    tx_put(&f, 2, frame, 1514, PCNET_DESC_OWN | PCNET_DESC_STP |
           PCNET_DESC_ENP);
    kick(&f);
    ck_assert_uint_eq(f.be.ntx, 1);
    /* BCNT 0 is a 4096-byte buffer: over the limit. */
    tx_put(&f, 3, frame, 100, PCNET_DESC_OWN | PCNET_DESC_STP | PCNET_DESC_ENP);
    mem_w16(&f, TXR + 16 * 3 + 4, 0xf000);
    kick(&f);
    ck_assert_uint_eq(f.be.ntx, 1);
    ck_assert(csr_r(&f, 0) & CSR0_BABL);
    fake_fini(&f);
}
END_TEST

/* CVE-2015-7504: in loopback mode with the FCS appended (CSR15.LOOP set,
 * DXMTFCS clear) QEMU wrote the 4-byte CRC past a full-size receive
 * buffer. Here loopback is not modelled (the frame goes to the backend;
 * the fake echoes it back as a received frame): a maximum-size frame is
 * sent without an FCS of its own, and on receive its FCS (MCNT counts
 * it) goes into the next buffer of the chain, never past BCNT of the
 * first: the 4 canary bytes after a buffer of exactly the frame's size
 * stay untouched. */
START_TEST(rx_loopback_fcs_stays_in_buffers)
{
    fake f;
    uint8_t frame[NET_FRAME_MAX];

    fake_init(&f, NIC_PCNET, NULL);
    reg_rd(&f, PCNET_RESET, 2);
    bcr_w(&f, 20, 2);
    write_ib(&f, 3, 3, 0x0004);           /* MODE: LOOP, FCS appended */
    rx_give(&f, 0, NET_FRAME_MAX);
    rx_give(&f, 1, 64);
    memset(f.ram + RXB(0) + NET_FRAME_MAX, 0xa5, 4);
    csr_w(&f, 1, IB & 0xffff);
    csr_w(&f, 2, IB >> 16);
    csr_w(&f, 4, 0x0915);
    csr_w(&f, 0, CSR0_INIT);
    ck_assert(csr_r(&f, 0) & CSR0_IDON);
    csr_w(&f, 0, CSR0_IDON | CSR0_INEA | CSR0_STRT);
    ck_assert_uint_eq(csr_r(&f, 15), 0x0004);
    f.be.echo = true;
    fake_frame_make(frame, bcast, NET_FRAME_MAX, 30);
    tx_put(&f, 0, frame, NET_FRAME_MAX, PCNET_DESC_OWN | PCNET_DESC_STP |
           PCNET_DESC_ENP);
    kick(&f);
    nic_poll_rx(f.n);
    ck_assert_uint_eq(f.be.ntx, 1);
    ck_assert_uint_eq(f.be.tx[0].len, NET_FRAME_MAX);
    ck_assert_uint_eq(st(&f)->rx_frames, 1);
    ck_assert_uint_eq(rmd_status(&f, 0) & PCNET_DESC_STP, PCNET_DESC_STP);
    ck_assert_uint_eq(rmd_status(&f, 1) & PCNET_DESC_ENP, PCNET_DESC_ENP);
    ck_assert_uint_eq(rmd_mcnt(&f, 1), NET_FRAME_MAX + 4);
    ck_assert_mem_eq(f.ram + RXB(0), frame, NET_FRAME_MAX);
    for (unsigned i = 0; i < 4; i++)
        ck_assert_uint_eq(f.ram[RXB(0) + NET_FRAME_MAX + i], 0xa5);
    {   /* the FCS itself, least significant byte first, in buffer 1 */
        uint32_t c = 0xffffffffu, got = 0;
        for (size_t i = 0; i < NET_FRAME_MAX; i++) {
            c ^= frame[i];
            for (int b = 0; b < 8; b++)
                c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1)));
        }
        for (unsigned i = 0; i < 4; i++)
            got |= (uint32_t)f.ram[RXB(1) + i] << (8 * i);
        ck_assert_uint_eq(got, ~c);
    }
    fake_fini(&f);
}
END_TEST

/* CVE-2015-7512: QEMU gathered a transmit chain into a 4 KiB buffer
 * without checking its total. A chain over the whole ring of 4096-byte
 * buffers (BCNT 0) with ENP on the last must be refused before any
 * buffer is read: the buffers point outside guest RAM, so a model that
 * copied first would fail its DMA (MERR) or overrun its frame buffer. */
START_TEST(tx_chain_of_max_buffers)
{
    fake f;
    uint8_t frame[100];

    setup(&f);
    for (unsigned i = 0; i < 8; i++) {
        uint64_t a = TXR + 16 * i;
        mem_w32(&f, a, 0xfff00000u);
        mem_w16(&f, a + 4, 0xf000);            /* BCNT 0: 4096 bytes */
        mem_w32(&f, a + 8, 0);
        mem_w16(&f, a + 6, (uint16_t)(PCNET_DESC_OWN |
                                      (i == 0 ? PCNET_DESC_STP : 0) |
                                      (i == 7 ? PCNET_DESC_ENP : 0)));
    }
    kick(&f);
    ck_assert_uint_eq(f.be.ntx, 0);
    ck_assert_uint_eq(f.dma_errors, 0);
    ck_assert_uint_eq(csr_r(&f, 0) & (CSR0_BABL | CSR0_MERR | CSR0_TXON),
                      CSR0_BABL | CSR0_TXON);
    for (unsigned i = 0; i < 8; i++)
        ck_assert_uint_eq(tmd_status(&f, i) & PCNET_DESC_OWN, 0);
    /* the transmitter still works */
    csr_w(&f, 0, CSR0_INEA | CSR0_BABL);
    fake_frame_make(frame, bcast, 100, 31);
    tx_put(&f, 0, frame, 100, PCNET_DESC_OWN | PCNET_DESC_STP |
           PCNET_DESC_ENP);
    kick(&f);
    ck_assert_uint_eq(f.be.ntx, 1);
    fake_fini(&f);
}
END_TEST

/* CSR4.APAD_XMT pads to 60; without it a runt under 14 bytes is dropped. */
START_TEST(tx_padding_and_runts)
{
    fake f;
    uint8_t frame[64];

    setup(&f);
    fake_frame_make(frame, bcast, 64, 9);
    tx_put(&f, 0, frame, 10, PCNET_DESC_OWN | PCNET_DESC_STP | PCNET_DESC_ENP);
    kick(&f);
    ck_assert_uint_eq(f.be.ntx, 1);
    ck_assert_uint_eq(f.be.tx[0].len, 60);
    ck_assert_mem_eq(f.be.tx[0].data, frame, 10);
    ck_assert_uint_eq(f.be.tx[0].data[59], 0);
    csr_w(&f, 4, 0x0115);
    tx_put(&f, 1, frame, 10, PCNET_DESC_OWN | PCNET_DESC_STP | PCNET_DESC_ENP);
    tx_put(&f, 2, frame, 20, PCNET_DESC_OWN | PCNET_DESC_STP | PCNET_DESC_ENP);
    kick(&f);
    ck_assert_uint_eq(f.be.ntx, 2);
    ck_assert_uint_eq(f.be.tx[1].len, 20);
    ck_assert_uint_eq(tmd_status(&f, 1) & PCNET_DESC_OWN, 0);
    fake_fini(&f);
}
END_TEST

/* ---- receive -------------------------------------------------------- */

START_TEST(rx_one_frame)
{
    fake f;
    uint8_t frame[42], want[64];
    uint32_t fcs = 0xffffffffu;

    setup(&f);
    fake_frame_make(frame, fake_mac, 42, 10);
    fake_rx_push(&f, frame, 42);
    nic_poll_rx(f.n);
    ck_assert_uint_eq(st(&f)->rx_frames, 1);
    ck_assert_uint_eq(rmd_status(&f, 0), PCNET_DESC_STP | PCNET_DESC_ENP |
                      PCNET_DESC_PAM);
    ck_assert_uint_eq(rmd_mcnt(&f, 0), 64);             /* 60 + FCS */
    memset(want, 0, sizeof want);
    memcpy(want, frame, 42);
    ck_assert_mem_eq(f.ram + RXB(0), want, 60);
    for (int i = 0; i < 60; i++) {                      /* FCS: CRC-32 */
        fcs ^= want[i];
        for (int b = 0; b < 8; b++)
            fcs = (fcs >> 1) ^ (0xedb88320u & (0u - (fcs & 1)));
    }
    ck_assert_uint_eq(mem_r32(&f, RXB(0) + 60), ~fcs);
    ck_assert_uint_eq(csr_r(&f, 0) & (CSR0_RINT | CSR0_INTR), CSR0_RINT |
                      CSR0_INTR);
    ck_assert_int_eq(f.level, 1);
    ck_assert_uint_eq(rmd_status(&f, 1), PCNET_DESC_OWN);
    fake_fini(&f);
}
END_TEST

/* Frames wait while the guest owns no descriptor: the first in the chip
 * (the backend's descriptor is then not polled, nic_poll_rx()), the
 * rest in the backend. */
START_TEST(rx_waits_for_descriptors)
{
    fake f;
    uint8_t frame[100];

    setup_opt(&f, NULL, 2, 2, 0);
    fake_as_tap(&f);
    fake_rx_push(&f, frame, fake_frame_make(frame, fake_mac, 100, 11));
    fake_rx_push(&f, frame, 100);
    nic_poll_rx(f.n);
    ck_assert(nic_rx_pending(f.n));
    ck_assert(nic_rx_waits_ring(f.n));      /* the ring poll: a tick */
    ck_assert_uint_eq(fake_rx_waiting(&f), 1);
    nic_poll_rx(f.n);
    ck_assert_uint_eq(fake_rx_waiting(&f), 1);
    ck_assert_uint_eq(st(&f)->rx_frames, 0);
    rx_give(&f, 0, 1544);
    csr_r(&f, 0);                       /* any access receives */
    ck_assert_uint_eq(st(&f)->rx_frames, 1);
    ck_assert_uint_eq(fake_rx_waiting(&f), 1);
    rx_give(&f, 1, 1544);
    rx_give(&f, 2, 1544);
    nic_poll_rx(f.n);
    ck_assert_uint_eq(st(&f)->rx_frames, 2);
    ck_assert_uint_eq(rmd_status(&f, 2), PCNET_DESC_OWN);
    fake_fini(&f);
}
END_TEST

/* A frame that arrives while the chip is stopped (after a reset, before
 * the driver's INIT and STRT) is held in the chip, not left in the
 * backend (a readable TAP descriptor made the VMM's I/O thread spin), and
 * needs no tick (only a register write starts the receiver); once the
 * receiver runs it and the next one arrive. */
START_TEST(rx_held_while_stopped)
{
    fake f;
    uint8_t frame[100];

    fake_init(&f, NIC_PCNET, NULL);
    fake_as_tap(&f);
    reg_rd(&f, PCNET_RESET, 2);
    fake_rx_push(&f, frame, fake_frame_make(frame, fake_mac, 100, 12));
    fake_rx_push(&f, frame, 100);
    fake_rx_held_off(&f, 1);
    bcr_w(&f, 20, 2);
    write_ib(&f, 3, 3, 0);
    for (unsigned i = 0; i < 8; i++)
        rx_give(&f, i, 1544);
    csr_w(&f, 1, IB & 0xffff);
    csr_w(&f, 2, IB >> 16);
    csr_w(&f, 0, CSR0_INIT);
    ck_assert_uint_eq(st(&f)->rx_frames, 0);    /* initialized, not on */
    csr_w(&f, 0, CSR0_IDON | CSR0_INEA | CSR0_STRT);
    ck_assert_uint_eq(st(&f)->rx_frames, 2);
    ck_assert(!nic_rx_pending(f.n));
    ck_assert_uint_eq(fake_rx_waiting(&f), 0);
    fake_fini(&f);
}
END_TEST

/* A frame larger than one buffer is chained: STP first, ENP and MCNT
 * last. */
START_TEST(rx_chained_buffers)
{
    fake f;
    uint8_t frame[1200];

    setup_opt(&f, NULL, 3, 3, 0);
    for (unsigned i = 0; i < 4; i++)
        rx_give(&f, i, 512);
    fake_frame_make(frame, fake_mac, 1200, 12);
    fake_rx_push(&f, frame, 1200);
    nic_poll_rx(f.n);
    ck_assert_uint_eq(st(&f)->rx_frames, 1);
    ck_assert_uint_eq(rmd_status(&f, 0), PCNET_DESC_STP);
    ck_assert_uint_eq(rmd_status(&f, 1), 0);
    ck_assert_uint_eq(rmd_status(&f, 2), PCNET_DESC_ENP | PCNET_DESC_PAM);
    ck_assert_uint_eq(rmd_mcnt(&f, 2), 1204);
    ck_assert_uint_eq(rmd_status(&f, 3), PCNET_DESC_OWN);
    ck_assert_mem_eq(f.ram + RXB(0), frame, 512);
    ck_assert_mem_eq(f.ram + RXB(1), frame + 512, 512);
    ck_assert_mem_eq(f.ram + RXB(2), frame + 1024, 176);
    fake_fini(&f);
}
END_TEST

/* Too few owned buffers now: the frame waits; more arrive: it goes. */
START_TEST(rx_chain_waits)
{
    fake f;
    uint8_t frame[1200];

    setup_opt(&f, NULL, 3, 3, 0);
    rx_give(&f, 0, 512);
    rx_give(&f, 1, 512);
    fake_rx_push(&f, frame, fake_frame_make(frame, fake_mac, 1200, 13));
    nic_poll_rx(f.n);
    ck_assert_uint_eq(st(&f)->rx_frames, 0);
    ck_assert_uint_ge(st(&f)->rx_no_buffer, 1);
    ck_assert_uint_eq(rmd_status(&f, 0), PCNET_DESC_OWN);
    rx_give(&f, 2, 512);
    nic_poll_rx(f.n);
    ck_assert_uint_eq(st(&f)->rx_frames, 1);
    ck_assert_uint_eq(rmd_mcnt(&f, 2), 1204);
    fake_fini(&f);
}
END_TEST

/* A ring that can never hold the frame: missed (MISS, CSR112). */
START_TEST(rx_missed_when_ring_too_small)
{
    fake f;
    uint8_t frame[1000];

    setup_opt(&f, NULL, 1, 1, 0);
    rx_give(&f, 0, 256);
    rx_give(&f, 1, 256);
    fake_rx_push(&f, frame, fake_frame_make(frame, fake_mac, 1000, 14));
    fake_rx_push(&f, frame, 100);
    nic_poll_rx(f.n);
    ck_assert_uint_eq(csr_r(&f, 0) & (CSR0_MISS | CSR0_ERR | CSR0_INTR),
                      CSR0_MISS | CSR0_ERR | CSR0_INTR);
    ck_assert_uint_eq(csr_r(&f, 112), 1);
    ck_assert_uint_eq(st(&f)->rx_frames, 1);            /* the small one */
    ck_assert_uint_eq(rmd_mcnt(&f, 0), 104);
    ck_assert_uint_eq(fake_rx_waiting(&f), 0);
    fake_fini(&f);
}
END_TEST

/* Address filter: PADR, broadcast (DRCVBC), LADRF, PROM. */
START_TEST(rx_address_filter)
{
    fake f;
    uint8_t frame[64];
    static const uint8_t other[6] = { 0x02, 0, 0, 0, 0, 9 };
    static const uint8_t mcast[6] = { 0x01, 0x00, 0x5e, 0x00, 0x00, 0x01 };
    uint32_t crc = 0xffffffffu;
    unsigned h;

    setup_opt(&f, NULL, 3, 3, 8);
    fake_rx_push(&f, frame, fake_frame_make(frame, other, 64, 15));
    fake_rx_push(&f, frame, fake_frame_make(frame, bcast, 64, 15));
    fake_rx_push(&f, frame, fake_frame_make(frame, mcast, 64, 15));
    nic_poll_rx(f.n);
    ck_assert_uint_eq(st(&f)->rx_frames, 1);
    ck_assert_uint_eq(rmd_status(&f, 0), PCNET_DESC_STP | PCNET_DESC_ENP |
                      PCNET_DESC_BAM);
    ck_assert_uint_eq(fake_rx_waiting(&f), 0);
    /* Program LADRF for the group, and PROM, through a re-INIT. */
    for (int i = 0; i < 6; i++) {
        crc ^= mcast[i];
        for (int b = 0; b < 8; b++)
            crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1)));
    }
    h = crc >> 26;
    csr_w(&f, 0, CSR0_STOP);
    write_ib(&f, 3, 3, 0x8000);                         /* PROM */
    f.ram[IB + 12 + h / 8] |= (uint8_t)(1u << (h % 8));
    for (unsigned i = 0; i < 8; i++)
        rx_give(&f, i, 1544);
    csr_w(&f, 0, CSR0_INIT);
    csr_w(&f, 0, CSR0_IDON | CSR0_INEA | CSR0_STRT);
    fake_rx_push(&f, frame, fake_frame_make(frame, mcast, 64, 16));
    fake_rx_push(&f, frame, fake_frame_make(frame, other, 64, 16));
    nic_poll_rx(f.n);
    ck_assert_uint_eq(st(&f)->rx_frames, 3);
    ck_assert_uint_eq(rmd_status(&f, 0), PCNET_DESC_STP | PCNET_DESC_ENP |
                      PCNET_DESC_LAFM);
    /* promiscuous */
    ck_assert_uint_eq(rmd_status(&f, 1), PCNET_DESC_STP | PCNET_DESC_ENP);
    /* DRCVBC: no broadcasts (PROM off). */
    csr_w(&f, 0, CSR0_STOP);
    write_ib(&f, 3, 3, 0x4000);
    for (unsigned i = 0; i < 8; i++)
        rx_give(&f, i, 1544);
    csr_w(&f, 0, CSR0_INIT);
    csr_w(&f, 0, CSR0_IDON | CSR0_INEA | CSR0_STRT);
    fake_rx_push(&f, frame, fake_frame_make(frame, bcast, 64, 17));
    nic_poll_rx(f.n);
    ck_assert_uint_eq(st(&f)->rx_frames, 3);
    fake_fini(&f);
}
END_TEST

/* The peer answers inside net_tx: the reply is received in the same
 * register access as the kick. */
START_TEST(synchronous_reply)
{
    fake f;
    uint8_t frame[98];

    setup(&f);
    f.be.echo = true;
    tx_put(&f, 0, frame, fake_frame_make(frame, fake_mac, 98, 18),
           PCNET_DESC_OWN | PCNET_DESC_STP | PCNET_DESC_ENP);
    kick(&f);
    ck_assert_uint_eq(f.be.ntx, 1);
    ck_assert_uint_eq(st(&f)->rx_frames, 1);
    ck_assert_mem_eq(f.ram + RXB(0), frame, 98);
    ck_assert_uint_eq(csr_r(&f, 0) & (CSR0_RINT | CSR0_TINT), CSR0_RINT |
                      CSR0_TINT);
    fake_fini(&f);
}
END_TEST

/* While adaptive combining holds transmits and CSR0.INEA is clear (a
 * polling driver), RDP writes are deferred with the RAP: the kick (TDMD
 * through RDP) traps instead of exiting. Not with INEA set (a deferred
 * acknowledgement would leave INTA up), and the zones' generation moves
 * whenever INEA does, so the VMM registers them again. */
START_TEST(rdp_deferred_while_combining_and_polled)
{
    nic_options o = { .latch_fast = true, .send_combine = true,
                      .combine_adaptive = true, .pairs_in_vmm = true };
    fake f;
    uint32_t r[4][2];
    unsigned gen;

    setup_opt(&f, &o, 3, 3, 8);               /* INEA set */
    ck_assert_uint_eq(nic_coalesced_ranges(f.n, r, 4), 0);
    f.n->sc.active = true;                    /* the policy holds */
    ck_assert_uint_eq(nic_coalesced_ranges(f.n, r, 4), 0);
    gen = nic_coalesced_gen(f.n);
    csr_w(&f, 0, 0);                          /* INEA off: polling */
    ck_assert_uint_ne(nic_coalesced_gen(f.n), gen);
    ck_assert_uint_eq(nic_coalesced_ranges(f.n, r, 4), 1);
    ck_assert_uint_eq(r[0][0], PCNET_RDP);
    ck_assert_uint_eq(r[0][1], 4);            /* RDP and RAP */
    gen = nic_coalesced_gen(f.n);
    csr_w(&f, 0, 0);                          /* no change: same zones */
    ck_assert_uint_eq(nic_coalesced_gen(f.n), gen);
    f.n->sc.active = false;                   /* the policy stops */
    ck_assert_uint_eq(nic_coalesced_ranges(f.n, r, 4), 0);
    f.n->sc.active = true;
    csr_w(&f, 0, CSR0_INEA);
    ck_assert_uint_ne(nic_coalesced_gen(f.n), gen);
    ck_assert_uint_eq(nic_coalesced_ranges(f.n, r, 4), 0);
    fake_fini(&f);
}
END_TEST

/* ---- send combining and interrupt coalescing ------------------------- */

START_TEST(send_combining)
{
    nic_options o = { .send_combine = true, .combine_max = 3 };
    fake f;
    uint8_t frame[64];

    setup_opt(&f, &o, 3, 3, 8);
    fake_frame_make(frame, bcast, 64, 19);
    for (unsigned i = 0; i < 2; i++) {
        tx_put(&f, i, frame, 64, PCNET_DESC_OWN | PCNET_DESC_STP |
               PCNET_DESC_ENP);
        kick(&f);
        ck_assert_uint_eq(f.be.ntx, 0);
        ck_assert_uint_eq(tmd_status(&f, i), PCNET_DESC_OWN | PCNET_DESC_STP |
                          PCNET_DESC_ENP);
        ck_assert(csr_r(&f, 0) & CSR0_TDMD);                 /* pending */
    }
    ck_assert_uint_eq(st(&f)->tx_combined, 2);
    ck_assert_int_eq(f.level, 0);
    tx_put(&f, 2, frame, 64, PCNET_DESC_OWN | PCNET_DESC_STP | PCNET_DESC_ENP);
    kick(&f);                           /* the third sends the batch */
    ck_assert_uint_eq(f.be.ntx, 3);
    ck_assert_uint_eq(st(&f)->tx_batches, 1);
    ck_assert_uint_eq(st(&f)->irq_raised, 1);           /* one for three */
    ck_assert_int_eq(f.level, 1);
    csr_w(&f, 0, CSR0_INEA | CSR0_TINT);
    /* One waiting kick, then the VMM's next exit flushes it. */
    tx_put(&f, 3, frame, 64, PCNET_DESC_OWN | PCNET_DESC_STP | PCNET_DESC_ENP);
    kick(&f);
    ck_assert_uint_eq(f.be.ntx, 3);
    nic_flush(f.n);
    ck_assert_uint_eq(f.be.ntx, 4);
    ck_assert_uint_eq(st(&f)->tx_batches, 2);
    ck_assert_uint_eq(st(&f)->tx_combined, 3);
    nic_flush(f.n);                     /* nothing queued: nothing */
    ck_assert_uint_eq(st(&f)->tx_batches, 2);
    /* STOP forgets the queue; the frames stay in the ring. */
    tx_put(&f, 4, frame, 64, PCNET_DESC_OWN | PCNET_DESC_STP | PCNET_DESC_ENP);
    kick(&f);
    csr_w(&f, 0, CSR0_STOP);
    nic_flush(f.n);
    ck_assert_uint_eq(f.be.ntx, 4);
    ck_assert_uint_eq(tmd_status(&f, 4), PCNET_DESC_OWN | PCNET_DESC_STP |
                      PCNET_DESC_ENP);
    fake_fini(&f);
}
END_TEST

/* The same traffic with and without irq_coalesce: the same level changes,
 * fewer calls. */
static void irq_workload(fake *f, bool coalesce)
{
    nic_options o = { .irq_coalesce = coalesce };
    uint8_t frame[64];

    setup_opt(f, &o, 3, 3, 8);
    fake_frame_make(frame, fake_mac, 64, 20);
    for (unsigned i = 0; i < 6; i++) {
        tx_put(f, i, frame, 64, PCNET_DESC_OWN | PCNET_DESC_STP |
               PCNET_DESC_ENP);
        kick(f);
        kick(f);                        /* nothing more to send */
        csr_w(f, 3, 0);                 /* an interrupt-state update */
        csr_w(f, 0, CSR0_INEA | CSR0_TINT);
    }
}

START_TEST(irq_coalescing)
{
    fake a, b;

    irq_workload(&a, false);
    irq_workload(&b, true);
    ck_assert_uint_eq(a.be.ntx, 6);
    ck_assert_uint_eq(b.be.ntx, 6);
    ck_assert_uint_eq(nic_get_stats(a.n)->irq_raised, 6);
    ck_assert_uint_eq(nic_get_stats(b.n)->irq_raised, 6);
    ck_assert_uint_eq(a.irq_rises, 6);
    ck_assert_uint_eq(b.irq_rises, 6);
    ck_assert_uint_eq(nic_get_stats(a.n)->irq_suppressed, 0);
    ck_assert_uint_gt(nic_get_stats(b.n)->irq_suppressed, 0);
    ck_assert_uint_eq(b.irq_calls, 12);                 /* rise and fall */
    ck_assert_uint_eq(nic_get_stats(b.n)->irq_line_calls, 12);
    ck_assert_uint_gt(a.irq_calls, b.irq_calls);
    ck_assert_uint_eq(nic_get_stats(a.n)->irq_line_calls, a.irq_calls);
    fake_fini(&a);
    fake_fini(&b);
}
END_TEST

/* ---- DMA failures, bus mastering, rings ------------------------------ */

START_TEST(dma_failure_init_block)
{
    fake f;
    uint64_t errs = dev_guest_errors();

    fake_init(&f, NIC_PCNET, NULL);
    reg_rd(&f, PCNET_RESET, 2);
    bcr_w(&f, 20, 2);
    csr_w(&f, 1, 0xfff0);
    csr_w(&f, 2, 0x7fff);               /* far beyond RAM */
    csr_w(&f, 0, CSR0_INIT | CSR0_INEA);
    ck_assert_uint_eq(csr_r(&f, 0) & (CSR0_MERR | CSR0_ERR | CSR0_IDON |
                                      CSR0_INTR),
                      CSR0_MERR | CSR0_ERR | CSR0_INTR);
    ck_assert_int_eq(f.level, 1);
    ck_assert_uint_eq(st(&f)->guest_errors, 1);
    ck_assert_uint_gt(dev_guest_errors(), errs);
    fake_fini(&f);
}
END_TEST

START_TEST(dma_failure_buffer_and_ring)
{
    fake f;
    uint8_t frame[64] = { 0 };

    setup(&f);
    tx_put(&f, 0, frame, 64, PCNET_DESC_OWN | PCNET_DESC_STP | PCNET_DESC_ENP);
    mem_w32(&f, TXR, 0xfffff000u);      /* buffer outside RAM */
    kick(&f);
    ck_assert_uint_eq(f.be.ntx, 0);
    ck_assert_uint_eq(csr_r(&f, 0) & (CSR0_MERR | CSR0_TXON | CSR0_RXON),
                      CSR0_MERR);
    ck_assert_uint_eq(st(&f)->guest_errors, 1);
    /* A receive ring outside RAM. */
    csr_w(&f, 0, CSR0_STOP);
    mem_w16(&f, TXR + 6, 0);
    write_ib(&f, 3, 3, 0);
    mem_w32(&f, IB + 20, 0xffff0000u);
    csr_w(&f, 0, CSR0_INIT);
    csr_w(&f, 0, CSR0_IDON | CSR0_INEA | CSR0_STRT);
    fake_rx_push(&f, frame, fake_frame_make(frame, fake_mac, 64, 21));
    nic_poll_rx(f.n);
    ck_assert_uint_eq(csr_r(&f, 0) & (CSR0_MERR | CSR0_RXON), CSR0_MERR);
    ck_assert_uint_eq(st(&f)->rx_frames, 0);
    fake_fini(&f);
}
END_TEST

START_TEST(no_dma_without_bus_master)
{
    fake f;
    uint8_t frame[64];
    unsigned reads;

    fake_init(&f, NIC_PCNET, NULL);
    nic_set_bus_master(f.n, false);
    reg_rd(&f, PCNET_RESET, 2);
    bcr_w(&f, 20, 2);
    write_ib(&f, 3, 3, 0);
    rx_give(&f, 0, 1544);
    csr_w(&f, 1, IB);
    csr_w(&f, 2, 0);
    reads = f.dma_reads;
    csr_w(&f, 0, CSR0_INIT | CSR0_INEA | CSR0_STRT);   /* waits */
    ck_assert_uint_eq(csr_r(&f, 0) & (CSR0_IDON | CSR0_TXON), 0);
    ck_assert_uint_eq(f.dma_reads, reads);
    nic_set_bus_master(f.n, true);
    ck_assert_uint_eq(csr_r(&f, 0) & (CSR0_IDON | CSR0_TXON | CSR0_RXON),
                      CSR0_IDON | CSR0_TXON | CSR0_RXON);
    csr_w(&f, 0, CSR0_INEA | CSR0_IDON);
    /* Transmit and receive stop while bus mastering is off. */
    nic_set_bus_master(f.n, false);
    tx_put(&f, 0, frame, fake_frame_make(frame, fake_mac, 64, 22),
           PCNET_DESC_OWN | PCNET_DESC_STP | PCNET_DESC_ENP);
    fake_rx_push(&f, frame, 64);
    reads = f.dma_reads;
    kick(&f);
    ck_assert_uint_eq(f.be.ntx, 0);
    ck_assert_uint_eq(st(&f)->rx_frames, 0);
    ck_assert_uint_eq(f.dma_reads, reads);
    nic_set_bus_master(f.n, true);
    ck_assert_uint_eq(f.be.ntx, 1);
    ck_assert_uint_eq(st(&f)->rx_frames, 1);
    ck_assert_uint_eq(st(&f)->guest_errors, 0);
    fake_fini(&f);
}
END_TEST

/* STRT without INIT after reset: zero-length rings, no DMA. CSRs that
 * need STOP ignore writes while running. */
START_TEST(zero_length_rings_and_stop_only_csrs)
{
    fake f;
    unsigned reads;

    fake_init(&f, NIC_PCNET, NULL);
    reg_rd(&f, PCNET_RESET, 2);
    ck_assert_uint_eq(csr_r(&f, 76), 0);
    reads = f.dma_reads;
    csr_w(&f, 0, CSR0_STRT | CSR0_INEA);
    ck_assert_uint_eq(csr_r(&f, 0) & (CSR0_TXON | CSR0_RXON | CSR0_STRT),
                      CSR0_STRT);
    ck_assert_uint_eq(st(&f)->guest_errors, 2);
    kick(&f);
    nic_poll_rx(f.n);
    ck_assert_uint_eq(f.dma_reads, reads);
    csr_w(&f, 76, 0xfffc);              /* ignored: running */
    ck_assert_uint_eq(csr_r(&f, 76), 0);
    csr_w(&f, 0, CSR0_STOP);
    csr_w(&f, 76, 0xfffc);
    ck_assert_uint_eq(csr_r(&f, 76), 0xfffc);
    fake_fini(&f);
}
END_TEST

/* The 16-bit software style (SWSTYLE 0): 24-byte init block and 8-byte
 * descriptors. */
START_TEST(style0_descriptors)
{
    fake f;
    uint8_t frame[80];

    fake_init(&f, NIC_PCNET, NULL);
    reg_rd(&f, PCNET_RESET, 2);
    memset(f.ram + IB, 0, 24);
    memcpy(f.ram + IB + 2, fake_mac, 6);
    mem_w16(&f, IB + 16, RXR);
    f.ram[IB + 19] = 1 << 5;            /* RLEN: 2 */
    mem_w16(&f, IB + 20, TXR);
    f.ram[IB + 23] = 1 << 5;            /* TLEN: 2 */
    /* RMD: LADR, status|HADR, BCNT, MCNT */
    mem_w16(&f, RXR, RXB(0) & 0xffff);
    mem_w16(&f, RXR + 2, PCNET_DESC_OWN | (RXB(0) >> 16));
    mem_w16(&f, RXR + 4, bcnt(1544));
    fake_frame_make(frame, bcast, 80, 23);
    memcpy(f.ram + TXB(0), frame, 80);
    mem_w16(&f, TXR, TXB(0) & 0xffff);
    mem_w16(&f, TXR + 4, bcnt(80));
    mem_w16(&f, TXR + 2, PCNET_DESC_OWN | PCNET_DESC_STP | PCNET_DESC_ENP |
            (TXB(0) >> 16));
    csr_w(&f, 1, IB);
    csr_w(&f, 2, 0);
    csr_w(&f, 0, CSR0_INIT);
    csr_w(&f, 0, CSR0_IDON | CSR0_INEA | CSR0_STRT);
    ck_assert_uint_eq(csr_r(&f, 76), (uint16_t)-2);
    ck_assert_uint_eq(f.be.ntx, 1);                     /* sent at STRT */
    ck_assert_mem_eq(f.be.tx[0].data, frame, 80);
    ck_assert_uint_eq(mem_r16(&f, TXR + 2), PCNET_DESC_STP | PCNET_DESC_ENP |
                      (TXB(0) >> 16));
    fake_rx_push(&f, frame, 80);
    nic_poll_rx(f.n);
    ck_assert_uint_eq(mem_r16(&f, RXR + 2), PCNET_DESC_STP | PCNET_DESC_ENP |
                      (RXB(0) >> 16));
    ck_assert_uint_eq(mem_r16(&f, RXR + 6), 84);
    ck_assert_mem_eq(f.ram + RXB(0), frame, 80);
    fake_fini(&f);
}
END_TEST

START_TEST(style3_refused)
{
    fake f;

    fake_init(&f, NIC_PCNET, NULL);
    bcr_w(&f, 20, 2);
    bcr_w(&f, 20, 3);
    ck_assert_uint_eq(bcr_r(&f, 20) & 0xff, 2);
    csr_w(&f, 58, 1);
    ck_assert_uint_eq(csr_r(&f, 58) & 0xff, 2);
    ck_assert_uint_eq(st(&f)->guest_errors, 2);
    csr_w(&f, 58, 0);
    ck_assert_uint_eq(bcr_r(&f, 20) & 0x1ff, 0);
    fake_fini(&f);
}
END_TEST

/* ---- hostile register traffic --------------------------------------- */

START_TEST(bad_accesses)
{
    fake f;
    uint32_t v = 0;

    fake_init(&f, NIC_PCNET, NULL);
    ck_assert_uint_eq(reg_rd(&f, 0x20, 2), 0xffff);     /* out of range */
    ck_assert_uint_eq(reg_rd(&f, 0x11, 2), 0xffff);     /* unaligned */
    ck_assert_uint_eq(reg_rd(&f, 0x1e, 4), 0xffffffffu);
    nic_access(f.n, 0x10, 3, false, &v);
    ck_assert_uint_eq(v, 0xffffffffu);
    nic_access(f.n, 0x10, 8, true, &v);
    ck_assert_uint_eq(reg_rd(&f, PCNET_RDP, 4), 0xffffffffu); /* no DWIO */
    reg_wr(&f, PCNET_RDP, 4, 0x12345678);
    ck_assert_uint_eq(reg_rd(&f, PCNET_RDP, 1), 0xff);
    ck_assert_uint_eq(reg_rd(&f, 0x18, 2), 0xffff);     /* reserved */
    ck_assert_uint_eq(st(&f)->guest_errors, 8);
    ck_assert_uint_eq(st(&f)->reg_reads, 7);
    ck_assert_uint_eq(st(&f)->reg_writes, 2);
    ck_assert_uint_eq(csr_r(&f, 0), CSR0_STOP);
    ck_assert_uint_eq(csr_r(&f, 200), 0);               /* no such CSR */
    ck_assert_uint_eq(bcr_r(&f, 100), 0);
    fake_fini(&f);
}
END_TEST

/* Random values to every offset at every size, to every CSR and BCR,
 * with random guest memory, must not crash (ASan and UBSan watch); a
 * reset brings the device back. */
START_TEST(garbage_everywhere)
{
    nic_options o = { .send_combine = (_i & 1) != 0, .irq_coalesce = true,
                      .combine_max = 2 };
    fake f;
    uint64_t seed = 0x1234 + (uint64_t)_i;
    uint8_t frame[200];

    setup_opt(&f, &o, 3, 3, 8);
    f.be.echo = true;
    for (size_t i = 0; i < FAKE_RAM; i += 4)
        mem_w32(&f, i, fake_rand(&seed) & (i & 0x10 ? 0x8300ffffu :
                                                      0x000fffffu));
    for (int round = 0; round < 4; round++) {
        for (uint32_t off = 0; off < 0x24; off++)
            for (unsigned size = 1; size <= 4; size *= 2) {
                if ((off & 0x1e) == PCNET_RESET && round & 1)
                    continue;
                reg_wr(&f, off, size, fake_rand(&seed));
                reg_rd(&f, off, size);
            }
        for (unsigned r = 0; r < 256; r++) {
            uint16_t v = (uint16_t)fake_rand(&seed);
            if (r == 0 && (round & 1))
                v |= CSR0_INIT | CSR0_STRT | CSR0_TDMD | CSR0_INEA;
            csr_w(&f, r, v);
            csr_r(&f, r);
            bcr_w(&f, r, (uint16_t)fake_rand(&seed));
            bcr_r(&f, r);
            if (fake_rx_waiting(&f) < FAKE_FRAMES / 2)
                fake_rx_push(&f, frame, fake_frame_make(frame, fake_mac,
                             14 + fake_rand(&seed) % 186, (uint8_t)r));
            nic_flush(f.n);
        }
        nic_set_bus_master(f.n, round & 1);
    }
    nic_set_bus_master(f.n, true);
    /* Still a PCnet. */
    reg_rd(&f, PCNET_RESET, 2);
    ck_assert_uint_eq(csr_r(&f, 0), CSR0_STOP);
    csr_w(&f, 58, 2);
    write_ib(&f, 3, 3, 0);
    memset(f.ram + TXR, 0, 16 * 8);
    memset(f.ram + RXR, 0, 16 * 8);
    csr_w(&f, 1, IB);
    csr_w(&f, 2, 0);
    csr_w(&f, 4, 0x0915);
    csr_w(&f, 0, CSR0_INIT);
    csr_w(&f, 0, CSR0_IDON | CSR0_INEA | CSR0_STRT);
    tx_put(&f, 0, frame, fake_frame_make(frame, bcast, 100, 1),
           PCNET_DESC_OWN | PCNET_DESC_STP | PCNET_DESC_ENP);
    unsigned before = f.be.ntx;
    kick(&f);
    nic_flush(f.n);
    ck_assert_uint_eq(f.be.ntx, before + 1);
    fake_fini(&f);
}
END_TEST

/* The guest-error log is rate limited; the count is not. */
START_TEST(guest_error_rate_limit)
{
    fake f;
    uint64_t before = dev_guest_errors();

    fake_init(&f, NIC_PCNET, NULL);
    for (int i = 0; i < 1000; i++)
        reg_rd(&f, 0x40, 2);
    ck_assert_uint_eq(dev_guest_errors(), before + 1000);
    ck_assert_uint_eq(st(&f)->guest_errors, 1000);
    dev_guest_error("other", "a message with a newline\n");
    ck_assert_uint_eq(dev_guest_errors(), before + 1001);
    fake_fini(&f);
}
END_TEST

static Suite *pcnet_suite(void)
{
    Suite *s = suite_create("pcnet");
    TCase *t = tcase_create("driver");
    TCase *h = tcase_create("hostile");

    tcase_add_test(t, identity_and_names);
    tcase_add_test(t, aprom_layout);
    tcase_add_test(t, probe_like_pcnet32);
    tcase_add_test(t, rap_is_the_latch);
    tcase_add_test(t, rap_deferred_unless_pairs);
    tcase_add_test(t, init_done_interrupt);
    tcase_add_test(t, interrupt_enable_and_masks);
    tcase_add_test(t, tx_one_frame);
    tcase_add_test(t, tx_chained_buffers);
    tcase_add_test(t, tx_padding_and_runts);
    tcase_add_test(t, rx_one_frame);
    tcase_add_test(t, rx_waits_for_descriptors);
    tcase_add_test(t, rx_held_while_stopped);
    tcase_add_test(t, rx_chained_buffers);
    tcase_add_test(t, rx_chain_waits);
    tcase_add_test(t, rx_address_filter);
    tcase_add_test(t, synchronous_reply);
    tcase_add_test(t, send_combining);
    tcase_add_test(t, rdp_deferred_while_combining_and_polled);
    tcase_add_test(t, irq_coalescing);
    tcase_add_test(t, no_dma_without_bus_master);
    tcase_add_test(t, style0_descriptors);
    suite_add_tcase(s, t);

    tcase_add_test(h, tx_chain_without_enp);
    tcase_add_test(h, tx_whole_ring_without_enp);
    tcase_add_test(h, tx_all_owned);
    tcase_add_test(h, tx_oversize);
    tcase_add_test(h, tx_chain_of_max_buffers);
    tcase_add_test(h, rx_loopback_fcs_stays_in_buffers);
    tcase_add_test(h, rx_missed_when_ring_too_small);
    tcase_add_test(h, dma_failure_init_block);
    tcase_add_test(h, dma_failure_buffer_and_ring);
    tcase_add_test(h, zero_length_rings_and_stop_only_csrs);
    tcase_add_test(h, style3_refused);
    tcase_add_test(h, bad_accesses);
    tcase_add_loop_test(h, garbage_everywhere, 0, 4);
    tcase_add_test(h, guest_error_rate_limit);
    suite_add_tcase(s, h);
    return s;
}

int main(void)
{
    return lc_test_run(pcnet_suite());
}
