/* SPDX-License-Identifier: MIT */
/*
 * AMD PCnet-PCI II (Am79C970A) in 16-bit I/O mode (WIO, DWIO = 0), as
 * Linux pcnet32 drives it. Register and bit names follow the datasheet
 * (AMD publication 19436).
 *
 * I/O BAR (32 bytes):
 *   0x00-0x0F  APROM: the station address, then the PROM layout of AMD
 *              boards (byte 9 = 0x11, bytes 12-13 = 16-bit sum of bytes
 *              0-11 and 14-15, bytes 14-15 = 'W' 'W'). Read-only here.
 *   0x10 RDP   data of the CSR that RAP selects
 *   0x12 RAP   register address: a pure latch (Sugerman et al. section 3.3: "the Lance
 *              address register has memory semantics")
 *   0x14 RESET reading it is S_RESET (software reset)
 *   0x16 BDP   data of the BCR that RAP selects
 *   0x18-0x1F  reserved in WIO mode: read all ones, writes ignored.
 * RDP, RAP, RESET and BDP take word accesses; a DWord access there (the
 * real chip's switch into DWIO mode) is refused with a guest error.
 *
 * Software styles (BCR20/CSR58 SWSTYLE): 0 (16-bit descriptors, 24-bit
 * addresses with CSR2[15:8] as the upper byte) and 2 (32-bit). Styles 1
 * (ILACC) and 3 are refused with a guest error, leaving SWSTYLE as it was.
 * Both layouts are converted into one internal descriptor (pcn_desc) so
 * the ring logic is written once.
 *
 * Receive: a frame is padded to 60 bytes (the sender's job on a wire),
 * followed by its FCS as the chip stores it (MCNT counts the FCS). It is
 * chained over consecutive owned descriptors when one buffer is too small
 * (STP on the first, ENP and MCNT on the last). When the descriptors the
 * guest owns now are too few it stays in the chip (the backend keeps the
 * rest) until the guest gives more; when even the whole ring (or more
 * than PCN_RX_CHAIN_MAX buffers) could not hold it, it is dropped and
 * counted as missed (CSR0.MISS, CSR112).
 *
 * Transmit: on CSR0.TDMD (through send combining, nic_model.h) and on
 * STRT. Owned descriptors without STP are skipped (TMD1.STP). A chain
 * whose next descriptor is not owned (or that spans the whole ring
 * without ENP) ends with TMD1.ERR and TMD2.BUFF|UFLO and the transmitter
 * off (CSR0.TXON = 0), as the chip does with DXSUFLO = 0. Frames longer
 * than NET_FRAME_MAX are not sent: CSR0.BABL (the chip's babble error)
 * and a guest error; the descriptors are returned. With CSR4.APAD_XMT
 * short frames are padded to 60 bytes; without it frames under 14 bytes
 * are dropped with a guest error.
 *
 * A failed DMA sets CSR0.MERR and turns receiver and transmitter off.
 * Without PCI bus mastering nothing is fetched: INIT and transmits wait
 * and complete when bus mastering returns.
 *
 * Not modelled: DWIO mode, the transmit poll timer (a driver must set
 * TDMD), loopback (CSR15.LOOP frames go to the backend), ASTRP_RCV,
 * SPND, LTINT, the CSR4 interrupts, the EEPROM interface, the ring
 * counters CSR72/74 (plain registers here).
 */
#include <string.h>

#include "hw/pcnet_regs.h"
#include "nic_model.h"

/* The sources of INTR. CSR3 masks them bit for bit (BABLM, MISSM, MERRM,
 * RINTM, TINTM, IDONM); CERR sets ERR but never INTR. */
#define CSR0_INT_SRC (CSR0_BABL | CSR0_MISS | CSR0_MERR | CSR0_RINT | \
                      CSR0_TINT | CSR0_IDON)
#define CSR3_WMASK  0x5f7c      /* masks, DXSUFLO, LAPPEN, DXMT2PD, EMBA, BSWP */
#define RX_PROMISC  0x0001      /* rx_match: accepted, no RMD1 match bit */

#define PCN_RING_MAX_LOG 9              /* RLEN/TLEN: at most 512 */
#define PCN_RX_CHAIN_MAX 32             /* buffers one received frame may use */
#define PCN_RX_BUDGET   64              /* frames per poll */

typedef struct pcnet {
    uint8_t  prom[16];
    uint16_t rap;
    uint16_t csr[128];
    uint16_t bcr[32];
    unsigned style;             /* SWSTYLE in force since INIT: 0 or 2 */
    unsigned rx_idx, tx_idx;    /* current descriptors */
    bool     init_pending;      /* INIT (and STRT) wait for bus mastering */
    bool     start_pending;
    bool     inea_seen;         /* CSR0.INEA as pcn_coalesced_ranges saw it */
} pcnet;

/* One descriptor, either style. */
typedef struct pcn_desc {
    uint32_t addr;              /* buffer address */
    uint16_t status;            /* PCNET_DESC_* */
    uint16_t bcnt;              /* ONES | BCNT (two's complement) */
    uint32_t misc;              /* TMD2 / RMD2 */
} pcn_desc;

enum { RX_RING, TX_RING };

static pcnet *S(nic *n) { return n->state; }

/* ---- interrupt and error state ------------------------------------- */

/* CSR0.INTR: an unmasked interrupt source is set. */
static bool pcn_intr(const pcnet *s)
{
    return (s->csr[0] & ~s->csr[3] & CSR0_INT_SRC) != 0;
}

/* The one place that computes the INTA line: INTR && INEA. */
static void pcn_update_irq(nic *n)
{
    pcnet *s = S(n);

    nic_set_irq(n, pcn_intr(s) && (s->csr[0] & CSR0_INEA));
    /* INEA decides whether RDP writes may be deferred */
    if (s->inea_seen != ((s->csr[0] & CSR0_INEA) != 0)) {
        s->inea_seen = !s->inea_seen;
        nic_coalesced_changed(n);
    }
}

static void pcn_memory_error(nic *n, const char *what, uint64_t gpa)
{
    pcnet *s = S(n);

    s->csr[0] |= CSR0_MERR;
    s->csr[0] &= (uint16_t)~(CSR0_TXON | CSR0_RXON);
    nic_guest_error(n, "%s: DMA at %#llx failed, MERR",
                    what, (unsigned long long)gpa);
}

/* ---- rings and descriptors ------------------------------------------ */

/* CSR76/CSR78 hold the two's complement of the ring length (1..65535). */
static unsigned ring_len(const pcnet *s, int ring)
{
    return (uint16_t)(0x10000u - s->csr[ring == RX_RING ? 76 : 78]);
}

static uint32_t ring_base(const pcnet *s, int ring)
{
    unsigned lo = ring == RX_RING ? 24 : 30;    /* BADR, BADX */

    return s->csr[lo] | (uint32_t)s->csr[lo + 1] << 16;
}

static uint64_t desc_addr(const pcnet *s, int ring, unsigned idx)
{
    return ring_base(s, ring) + (uint64_t)idx * (s->style ? 16 : 8);
}

/* Buffer length from BCNT: 12-bit two's complement, 0 meaning 4096. */
static size_t buf_len(uint16_t bcnt)
{
    return 0x1000u - (bcnt & 0x0fffu);
}

static int read_desc(nic *n, int ring, unsigned idx, pcn_desc *d)
{
    pcnet *s = S(n);
    uint64_t a = desc_addr(s, ring, idx);
    uint8_t b[16];

    if (nic_dma_read(n, a, b, s->style ? 16 : 8) < 0) {
        pcn_memory_error(n, ring == RX_RING ? "RX descriptor" :
                         "TX descriptor", a);
        return -1;
    }
    if (s->style) {                     /* SWSTYLE 2: RMD0..RMD2 */
        d->addr = nic_le32(b);
        d->bcnt = nic_le16(b + 4);
        d->status = nic_le16(b + 6);
        d->misc = nic_le32(b + 8);
    } else {                            /* SWSTYLE 0: four words */
        uint16_t w1 = nic_le16(b + 2), w3 = nic_le16(b + 6);
        d->addr = (uint32_t)(s->csr[2] & 0xff00) << 16 |
                  (uint32_t)(w1 & 0x00ff) << 16 | nic_le16(b);
        d->status = w1 & 0xff00;
        d->bcnt = nic_le16(b + 4);
        d->misc = ring == TX_RING ? (uint32_t)w3 << 16 : w3;
    }
    return 0;
}

/* Write back what the chip writes: TMD2/RMD2 first, then the status word
 * whose OWN bit hands the descriptor back. */
static int write_desc(nic *n, int ring, unsigned idx, const pcn_desc *d)
{
    pcnet *s = S(n);
    uint64_t a = desc_addr(s, ring, idx);
    uint8_t m[4], st[2];
    int r;

    if (s->style) {
        nic_put32(m, d->misc);
        nic_put16(st, d->status);
        r = nic_dma_write(n, a + 8, m, 4);
        if (r == 0)
            r = nic_dma_write(n, a + 6, st, 2);
    } else {
        uint16_t w3 = ring == TX_RING ? (uint16_t)(d->misc >> 16) :
                                        (uint16_t)d->misc;
        nic_put16(m, w3);
        st[0] = (uint8_t)(d->addr >> 16);           /* HADR unchanged */
        st[1] = (uint8_t)(d->status >> 8);
        r = nic_dma_write(n, a + 6, m, 2);
        if (r == 0)
            r = nic_dma_write(n, a + 2, st, 2);
    }
    if (r < 0)
        pcn_memory_error(n, "descriptor write-back", a);
    return r;
}

/* ---- transmit ------------------------------------------------------- */

/* Send the gathered frame, or account why not. */
static void tx_deliver(nic *n, uint8_t *frame, size_t len, bool oversize)
{
    pcnet *s = S(n);

    if (oversize) {
        s->csr[0] |= CSR0_BABL;
        nic_guest_error(n, "transmit frame over %d bytes dropped, BABL",
                        NET_FRAME_MAX);
        return;
    }
    nic_tx_frame(n, frame, len, s->csr[4] & CSR4_APAD_XMT);
}

/* One frame from the STP descriptor `d` at tx_idx: gather STP..ENP, send,
 * return the descriptors. Returns the descriptors visited, or -1 if the
 * walk must stop (DMA failure or buffer error). */
static int tx_frame(nic *n, pcn_desc d, unsigned len)
{
    pcnet *s = S(n);
    uint8_t frame[NET_FRAME_MAX];
    size_t flen = 0;
    bool oversize = false;
    unsigned idx = s->tx_idx, count = 0;

    for (;;) {
        size_t blen = buf_len(d.bcnt);
        pcn_desc next;
        unsigned nidx;

        count++;
        if (!oversize && flen + blen > sizeof frame) {
            oversize = true;            /* checked before copying */
        } else if (!oversize) {
            if (nic_dma_read(n, d.addr, frame + flen, blen) < 0) {
                pcn_memory_error(n, "TX buffer", d.addr);
                return -1;
            }
            flen += blen;
        }
        if (d.status & PCNET_DESC_ENP)
            break;
        nidx = (idx + 1) % len;
        if (count >= len) {
            next.status = 0;            /* the chain covers the ring */
        } else if (read_desc(n, TX_RING, nidx, &next) < 0) {
            return -1;
        }
        if (!(next.status & PCNET_DESC_OWN)) {
            /* TMD2.BUFF: no ENP and the next buffer is not ours; UFLO
             * follows and the transmitter turns off (CSR3.DXSUFLO = 0). */
            d.status = (uint16_t)((d.status & ~PCNET_DESC_OWN) |
                                  PCNET_DESC_ERR);
            d.misc = PCNET_TMD2_BUFF | PCNET_TMD2_UFLO;
            s->csr[0] = (uint16_t)((s->csr[0] & ~CSR0_TXON) | CSR0_TINT);
            s->tx_idx = nidx;
            nic_guest_error(n, "transmit chain without ENP: BUFF, UFLO");
            write_desc(n, TX_RING, idx, &d);
            return -1;
        }
        d.status &= (uint16_t)~PCNET_DESC_OWN;  /* this buffer is done */
        d.misc = 0;
        if (write_desc(n, TX_RING, idx, &d) < 0)
            return -1;
        idx = nidx;
        d = next;
    }
    tx_deliver(n, frame, flen, oversize);
    d.status &= (uint16_t)~(PCNET_DESC_OWN | PCNET_DESC_ERR);
    d.misc = 0;
    s->tx_idx = (idx + 1) % len;
    s->csr[0] |= CSR0_TINT;
    if (write_desc(n, TX_RING, idx, &d) < 0)
        return -1;
    return (int)count;
}

/* Walk the transmit ring from tx_idx while descriptors are owned. Every
 * descriptor read counts against a budget of twice the ring length, so a
 * guest that owns all descriptors forever cannot hold the walk. */
static void pcn_transmit(nic *n)
{
    pcnet *s = S(n);
    unsigned len = ring_len(s, TX_RING);
    unsigned long budget = 2ul * len;
    bool progress = false;

    if (!(s->csr[0] & CSR0_TXON) || !nic_can_dma(n) || len == 0)
        return;
    s->csr[0] &= (uint16_t)~CSR0_TDMD;
    while (budget > 0 && (s->csr[0] & CSR0_TXON)) {
        pcn_desc d;
        int used;

        if (s->tx_idx >= len)
            s->tx_idx = 0;
        budget--;
        if (read_desc(n, TX_RING, s->tx_idx, &d) < 0)
            break;
        if (!(d.status & PCNET_DESC_OWN))
            break;
        /* TMD1.STP: skip, poll the next */
        if (!(d.status & PCNET_DESC_STP)) {
            s->tx_idx = (s->tx_idx + 1) % len;
            continue;
        }
        used = tx_frame(n, d, len);
        progress = true;
        if (used < 0)
            break;
        budget = (unsigned long)used > budget ? 0 : budget - (unsigned)used + 1;
    }
    if (progress || (s->csr[0] & CSR0_MERR))
        pcn_update_irq(n);
}

/* ---- receive -------------------------------------------------------- */

/* Address filter (CSR15 PROM, DRCVPA, DRCVBC; PADR CSR12-14; LADRF
 * CSR8-11): the RMD1 match bit to report, RX_PROMISC when accepted
 * without one, 0 when rejected. */
static uint16_t rx_match(const pcnet *s, const uint8_t *dst)
{
    uint16_t mode = s->csr[15];
    static const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };

    if (!(mode & CSR15_DRCVPA)) {
        bool pam = true;
        for (int i = 0; i < 6 && pam; i++)
            pam = dst[i] == (uint8_t)(s->csr[12 + i / 2] >> (8 * (i & 1)));
        if (pam)
            return PCNET_DESC_PAM;
    }
    if (!memcmp(dst, bcast, 6) && !(mode & CSR15_DRCVBC))
        return PCNET_DESC_BAM;
    if (dst[0] & 1) {
        unsigned h = nic_crc32(dst, 6) >> 26;
        if (s->csr[8 + h / 16] & (1u << (h % 16)))
            return PCNET_DESC_LAFM;
    }
    return (mode & CSR15_PROM) ? RX_PROMISC : 0;
}

/* Place the held frame (total bytes with FCS) into the owned descriptors
 * from rx_idx. Returns 1 when the frame is done with (placed or dropped),
 * 0 when it must wait for descriptors, -1 on a DMA failure. */
static int rx_place(nic *n, size_t total, uint16_t match, unsigned len)
{
    pcnet *s = S(n);
    pcn_desc chain[PCN_RX_CHAIN_MAX];
    unsigned idx[PCN_RX_CHAIN_MAX];
    unsigned k = 0, i = s->rx_idx;
    size_t room = 0, done = 0;

    /* Snapshot the chain once: the guest may rewrite descriptors while we
     * work, but we use only what we read. */
    while (room < total) {
        if (k == PCN_RX_CHAIN_MAX || k == len) {
            s->csr[0] |= CSR0_MISS;     /* the ring can never hold it */
            s->csr[112]++;              /* missed frame count */
            nic_rx_drop(n);
            return 1;
        }
        if (read_desc(n, RX_RING, i, &chain[k]) < 0)
            return -1;
        if (!(chain[k].status & PCNET_DESC_OWN)) {
            nic_rx_wait(n);
            return 0;
        }
        room += buf_len(chain[k].bcnt);
        idx[k++] = i;
        i = (i + 1) % len;
    }
    for (unsigned j = 0; j < k; j++) {
        size_t part = buf_len(chain[j].bcnt);
        if (part > total - done)
            part = total - done;
        if (nic_dma_write(n, chain[j].addr, n->rx_buf + done, part) < 0) {
            pcn_memory_error(n, "RX buffer", chain[j].addr);
            return -1;
        }
        done += part;
    }
    /* Hand back last to first, so the STP descriptor is the last the
     * guest sees released. MCNT (RMD2) is valid with ENP only. */
    for (unsigned j = k; j-- > 0;) {
        pcn_desc *d = &chain[j];
        d->status = 0;                  /* OWN cleared, no errors */
        d->misc = 0;
        if (j == 0)
            d->status |= PCNET_DESC_STP;
        if (j == k - 1) {
            d->status |= PCNET_DESC_ENP;
            if (s->style && match != RX_PROMISC)
                d->status |= match;
            d->misc = (uint32_t)total & 0x0fff;
        }
        if (write_desc(n, RX_RING, idx[j], d) < 0)
            return -1;
    }
    s->rx_idx = i;
    s->csr[0] |= CSR0_RINT;
    nic_rx_consume(n);
    return 1;
}

static void pcn_poll_rx(nic *n)
{
    pcnet *s = S(n);
    unsigned len = ring_len(s, RX_RING);
    bool progress = false;

    if (!(s->csr[0] & CSR0_RXON) || !nic_can_dma(n) || len == 0)
        return;
    for (int budget = PCN_RX_BUDGET; budget > 0; budget--) {
        pcn_desc d;
        size_t flen;
        uint16_t match;
        int r;

        if (s->rx_idx >= len)
            s->rx_idx = 0;
        if (read_desc(n, RX_RING, s->rx_idx, &d) < 0) {
            progress = true;
            break;
        }
        if (!(d.status & PCNET_DESC_OWN)) {
            nic_rx_wait(n);
            break;
        }
        flen = nic_rx_peek(n);
        if (flen == 0)
            break;
        match = rx_match(s, n->rx_buf);
        if (!match) {
            nic_rx_drop(n);
            continue;
        }
        nic_rx_fcs(n);                  /* MCNT counts the stored FCS */
        r = rx_place(n, flen + NIC_FCS_LEN, match, len);
        if (r != 0)
            progress = true;
        if (r <= 0)
            break;
    }
    if (progress)
        pcn_update_irq(n);
}

/* ---- initialization, start, stop, reset ----------------------------- */

/* Read the initialization block at IADR (CSR1, CSR2) and load the
 * registers it sets: MODE (CSR15), PADR (CSR12-14), LADRF (CSR8-11),
 * RDRA/TDRA (CSR24-25, CSR30-31) and RLEN/TLEN (CSR76, CSR78). */
static void pcn_init(nic *n)
{
    pcnet *s = S(n);
    uint64_t iadr = s->csr[1] | (uint32_t)s->csr[2] << 16;
    uint8_t ib[28];
    unsigned rlen, tlen;
    uint32_t rdra, tdra;
    const uint8_t *padr, *ladrf;

    s->csr[0] = (uint16_t)((s->csr[0] & ~CSR0_STOP) | CSR0_INIT);
    if (!nic_can_dma(n)) {
        s->init_pending = true;
        return;
    }
    s->init_pending = false;
    s->style = (s->bcr[20] & BCR20_SWSTYLE) == 2 ? 2 : 0;
    if (nic_dma_read(n, iadr, ib, s->style ? 28 : 24) < 0) {
        pcn_memory_error(n, "initialization block", iadr);
        return;
    }
    if (s->style) {
        rlen = ib[2] >> 4;
        tlen = ib[3] >> 4;
        padr = ib + 4;
        ladrf = ib + 12;
        rdra = nic_le32(ib + 20);
        tdra = nic_le32(ib + 24);
    } else {
        uint32_t hi = (uint32_t)(s->csr[2] & 0xff00) << 16;
        rlen = ib[19] >> 5;
        tlen = ib[23] >> 5;
        padr = ib + 2;
        ladrf = ib + 8;
        rdra = hi | (uint32_t)ib[18] << 16 | nic_le16(ib + 16);
        tdra = hi | (uint32_t)ib[22] << 16 | nic_le16(ib + 20);
    }
    if (rlen > PCN_RING_MAX_LOG)
        rlen = PCN_RING_MAX_LOG;
    if (tlen > PCN_RING_MAX_LOG)
        tlen = PCN_RING_MAX_LOG;
    s->csr[15] = nic_le16(ib);
    for (int i = 0; i < 3; i++)
        s->csr[12 + i] = nic_le16(padr + 2 * i);
    for (int i = 0; i < 4; i++)
        s->csr[8 + i] = nic_le16(ladrf + 2 * i);
    s->csr[24] = (uint16_t)rdra;
    s->csr[25] = (uint16_t)(rdra >> 16);
    s->csr[30] = (uint16_t)tdra;
    s->csr[31] = (uint16_t)(tdra >> 16);
    s->csr[76] = (uint16_t)(0x10000u - (1u << rlen));
    s->csr[78] = (uint16_t)(0x10000u - (1u << tlen));
    s->rx_idx = s->tx_idx = 0;
    s->csr[0] |= CSR0_IDON;
}

static void pcn_start(nic *n)
{
    pcnet *s = S(n);

    if (s->init_pending) {
        s->start_pending = true;
        return;
    }
    s->start_pending = false;
    s->csr[0] = (uint16_t)((s->csr[0] & ~CSR0_STOP) | CSR0_STRT);
    if (!(s->csr[15] & CSR15_DRX)) {
        if (ring_len(s, RX_RING))
            s->csr[0] |= CSR0_RXON;
        else
            nic_guest_error(n, "STRT with a zero-length receive ring");
    }
    if (!(s->csr[15] & CSR15_DTX)) {
        if (ring_len(s, TX_RING))
            s->csr[0] |= CSR0_TXON;
        else
            nic_guest_error(n, "STRT with a zero-length transmit ring");
    }
    if (s->csr[0] & CSR0_TXON)
        nic_tx_now(n);                  /* descriptors already owned */
}

/* CSR0.STOP: all activity ends; CSR0 reads STOP only. */
static void pcn_stop(nic *n)
{
    pcnet *s = S(n);

    s->csr[0] = CSR0_STOP;
    s->init_pending = s->start_pending = false;
    nic_tx_cancel(n);
}

/* S_RESET: what reading the reset port (and H_RESET) does to the CSRs. */
static void pcn_reset_csrs(nic *n)
{
    pcnet *s = S(n);

    pcn_stop(n);
    s->rap = 0;
    s->csr[3] = 0;
    s->csr[4] = 0x0115;
    s->csr[5] = 0;
    s->csr[6] = 0;
    for (int i = 8; i < 12; i++)
        s->csr[i] = 0;
    for (int i = 0; i < 3; i++)
        s->csr[12 + i] = nic_le16(s->prom + 2 * i);
    s->csr[15] &= 0x21c4;
    s->csr[80] = 0x1410;
    s->csr[88] = (uint16_t)PCNET_CHIP_ID;
    s->csr[89] = (uint16_t)(PCNET_CHIP_ID >> 16);
    s->csr[100] = 0x0200;
    s->csr[112] = s->csr[114] = 0;
    s->csr[124] = 0;
}

/* H_RESET: power-on state. */
static void pcn_reset(nic *n)
{
    pcnet *s = S(n);
    uint16_t sum = 0;

    memset(s, 0, sizeof *s);
    memcpy(s->prom, n->mac, 6);
    s->prom[9] = 0x11;                  /* hardware ID of AMD boards */
    s->prom[14] = s->prom[15] = 'W';
    for (int i = 0; i < 16; i++)
        if (i != 12 && i != 13)
            sum = (uint16_t)(sum + s->prom[i]);
    nic_put16(s->prom + 12, sum);
    s->bcr[0] = 0x0005;                 /* MSRDA */
    s->bcr[1] = 0x0005;                 /* MSWRA */
    s->bcr[2] = 0x0002;                 /* MC: ASEL */
    s->bcr[4] = 0x00c0;                 /* LNKST */
    s->bcr[5] = 0x0084;                 /* LED1 */
    s->bcr[6] = 0x0088;                 /* LED2 */
    s->bcr[7] = 0x0090;                 /* LED3 */
    s->bcr[18] = 0x9001;                /* BSBC */
    s->bcr[19] = 0x0002;                /* EECAS */
    s->bcr[20] = BCR20_CSRPCNET;          /* SWSTYLE 0 */
    s->bcr[22] = 0xff06;                /* PLAT */
    pcn_reset_csrs(n);
}

/* ---- registers ------------------------------------------------------ */

/* BCR20 / CSR58: SWSTYLE and what follows from it. */
static void sws_write(nic *n, uint16_t v)
{
    pcnet *s = S(n);
    unsigned style = v & BCR20_SWSTYLE;

    if (style != 0 && style != 2) {
        nic_guest_error(n, "software style %u not supported", style);
        return;
    }
    s->bcr[20] = (uint16_t)(style | (v & BCR20_APERREN) | BCR20_CSRPCNET |
                            (style ? BCR20_SSIZE32 : 0));
}

static void csr0_write(nic *n, uint16_t v)
{
    pcnet *s = S(n);

    if (v & CSR0_STOP) {                /* STOP overrides INIT and STRT */
        pcn_stop(n);
        pcn_update_irq(n);
        return;
    }
    s->csr[0] &= (uint16_t)~(v & CSR0_W1C);
    s->csr[0] = (uint16_t)((s->csr[0] & ~CSR0_INEA) | (v & CSR0_INEA));
    if ((v & CSR0_INIT) && !(s->csr[0] & CSR0_INIT))
        pcn_init(n);
    if ((v & CSR0_STRT) && !(s->csr[0] & CSR0_STRT))
        pcn_start(n);
    if ((v & CSR0_TDMD) && (s->csr[0] & CSR0_TXON)) {
        s->csr[0] |= CSR0_TDMD;
        nic_tx_kick(n);
    }
    pcn_update_irq(n);
}

static uint16_t csr_read(const pcnet *s, unsigned r)
{
    uint16_t v;

    switch (r) {
    case 0:
        v = s->csr[0] & (uint16_t)~(CSR0_INTR | CSR0_ERR);
        if (pcn_intr(s))
            v |= CSR0_INTR;
        if (v & (CSR0_BABL | CSR0_CERR | CSR0_MISS | CSR0_MERR))
            v |= CSR0_ERR;
        return v;
    case 58:
        return s->bcr[20];
    default:
        return r < 128 ? s->csr[r] : 0;
    }
}

/* The CSRs the datasheet makes writable only while STOP is set. */
static bool csr_needs_stop(unsigned r)
{
    return (r >= 1 && r <= 2) || (r >= 8 && r <= 15) || r == 24 ||
           r == 25 || r == 30 || r == 31 || r == 72 || r == 74 ||
           r == 76 || r == 78;
}

static void csr_write(nic *n, unsigned r, uint16_t v)
{
    pcnet *s = S(n);

    if (r >= 128)
        return;
    if (csr_needs_stop(r) && !(s->csr[0] & CSR0_STOP))
        return;                         /* ignored while running */
    switch (r) {
    case 0:
        csr0_write(n, v);
        break;
    case 3:
        s->csr[3] = v & CSR3_WMASK;
        pcn_update_irq(n);
        break;
    case 58:
        sws_write(n, v);
        break;
    case 88: case 89:                   /* chip ID: read-only */
        break;
    default:
        s->csr[r] = v;
        break;
    }
}

static uint16_t bcr_read(const pcnet *s, unsigned r)
{
    if (r >= 32)
        return 0;
    if (r >= 4 && r <= 7) {
        /* LEDOUT (bit 15) follows the enabled sources; the link is
         * always up and it is the one steady source (LNKSTE, bit 6). */
        uint16_t v = s->bcr[r] & 0x7fff;
        return (v & 0x0040) ? v | 0x8000 : v;
    }
    return s->bcr[r];
}

static void bcr_write(nic *n, unsigned r, uint16_t v)
{
    pcnet *s = S(n);

    switch (r) {
    case 0: case 1:                     /* MSRDA, MSWRA: reserved */
        break;
    case 4: case 5: case 6: case 7:
        s->bcr[r] = v & 0x7fff;
        break;
    case 18:                            /* DWIO (bit 7) is read-only */
        s->bcr[18] = v & (uint16_t)~0x0080;
        break;
    case 20:
        sws_write(n, v);
        break;
    default:
        if (r < 32)
            s->bcr[r] = v;
        break;
    }
}

static void pcn_read(nic *n, uint32_t off, unsigned size, uint32_t *val)
{
    pcnet *s = S(n);

    if (off < 16) {                     /* APROM, any width */
        uint32_t v = 0;
        for (unsigned i = 0; i < size; i++)
            v |= (uint32_t)s->prom[off + i] << (8 * i);
        *val = v;
        return;
    }
    if (off >= 0x18) {                  /* reserved in WIO mode */
        *val = 0xffffffffu;
        return;
    }
    if (size != 2) {
        nic_guest_error(n, "%u-byte read at %#x (DWIO not supported)",
                        size, off);
        *val = 0xffffffffu;
        return;
    }
    switch (off) {
    case PCNET_RDP:
        *val = csr_read(s, s->rap);
        break;
    case PCNET_RAP:
        *val = s->rap;
        break;
    case PCNET_RESET:                     /* reading is S_RESET */
        pcn_reset_csrs(n);
        n->stats.resets++;
        pcn_update_irq(n);
        *val = 0;
        break;
    case PCNET_BDP:
        *val = bcr_read(s, s->rap);
        break;
    }
}

static void pcn_write(nic *n, uint32_t off, unsigned size, uint32_t val)
{
    pcnet *s = S(n);

    if (off < 16 || off >= 0x18)        /* APROM read-only; reserved */
        return;
    if (size != 2) {
        nic_guest_error(n, "%u-byte write at %#x (DWIO not supported)",
                        size, off);
        return;
    }
    switch (off) {
    case PCNET_RDP:
        csr_write(n, s->rap, (uint16_t)val);
        break;
    case PCNET_RAP:
        s->rap = val & 0xff;            /* RAP[7:0]; bits 15-8 reserved */
        break;
    case PCNET_RESET:                     /* writes have no effect */
        break;
    case PCNET_BDP:
        bcr_write(n, s->rap, (uint16_t)val);
        break;
    }
}

static bool pcn_is_latch(const nic *n, uint32_t off, unsigned size)
{
    (void)n;
    return off == PCNET_RAP && size == 2;
}

static unsigned pcn_latch_ranges(const nic *n, uint32_t (*ranges)[2],
                                 unsigned max)
{
    (void)n;
    if (max < 1)
        return 0;
    ranges[0][0] = PCNET_RAP;
    ranges[0][1] = 2;
    return 1;
}

/* The writes the VMM may defer: the RAP, unless the VMM runs exit pairs
 * itself (libcluster). The RAP is an index register: a driver writes it
 * only to access RDP or BDP a few instructions later, so with pairs the
 * write and the data access are one exit; deferred, the write would add
 * a trap into the host kernel to that exit (10-25 us at CPL 3 here).
 *
 * While adaptive send combining holds transmits and interrupts are off
 * (CSR0.INEA clear: a polling driver), RDP writes are deferred too, with
 * the RAP: the transmit kick (TDMD is a CSR0 write through RDP) then
 * costs two traps instead of an exit, and the frames go in batches at
 * the next exit or tick (Sugerman et al. section 3.3), as the e1000's
 * TDT. Replayed in order, RAP then RDP, each write means what it meant
 * when the guest made it; any read of RDP, RAP, BDP or RESET exits and
 * replays them first, so the guest sees no difference but a slower
 * transmitter. Not with INEA set: a deferred acknowledgement (a CSR0
 * write) would leave INTA asserted after the handler's EOI, and the
 * guest would take the interrupt again. */
static unsigned pcn_coalesced_ranges(const nic *n, uint32_t (*ranges)[2],
                                     unsigned max)
{
    const pcnet *s = n->state;

    if (nic_combining(n) && !(s->csr[0] & CSR0_INEA)) {
        if (max < 1)
            return 0;
        ranges[0][0] = PCNET_RDP;       /* RDP 10h and RAP 12h */
        ranges[0][1] = PCNET_RAP + 2 - PCNET_RDP;
        return 1;
    }
    if (n->opt.pairs_in_vmm)
        return 0;
    return pcn_latch_ranges(n, ranges, max);
}

/* Bus mastering is back: finish an INIT (and STRT) that waited, and send
 * what the ring holds. */
static void pcn_resume(nic *n)
{
    pcnet *s = S(n);

    if (s->init_pending) {
        pcn_init(n);
        if (s->start_pending && !s->init_pending)
            pcn_start(n);
    } else if (s->csr[0] & CSR0_TXON) {
        nic_tx_now(n);
    }
    pcn_update_irq(n);
}

const nic_model_ops nic_pcnet_ops = {
    .name = "pcnet",
    .state_size = sizeof(pcnet),
    .bar_size = PCNET_BAR_SIZE,
    .reset = pcn_reset,
    .read = pcn_read,
    .write = pcn_write,
    .is_latch = pcn_is_latch,
    .latch_ranges = pcn_latch_ranges,
    .coalesced_ranges = pcn_coalesced_ranges,
    .defers_kicks = true,
    .transmit = pcn_transmit,
    .poll_rx = pcn_poll_rx,
    .resume = pcn_resume,
};
