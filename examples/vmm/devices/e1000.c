/* SPDX-License-Identifier: MIT */
/*
 * Intel 82540EM (8086:100E) over its 128 KiB memory BAR: the legacy
 * descriptor subset a simple driver (and Linux e1000) needs. Register and
 * bit names follow the PCI/PCI-X Family of Gigabit Ethernet Controllers
 * Software Developer's Manual (8254x SDM).
 *
 * Registers live in one array indexed by offset / 4 (0x0000-0x5FFF); one
 * table (e1k_regs) says, per register, how it behaves: plain storage
 * (with a write mask), read-only, clear-on-read statistics, or a handler.
 * Offsets the table does not name read 0 and ignore writes.
 * Sub-dword accesses act on the containing register (a byte read of ICR
 * clears all of ICR); writes merge with the stored value, except for the
 * write-1 registers (ICR, ICS, IMS, IMC) where other bytes write 0.
 *
 * EEPROM: 64 words, Microwire bit-bang through EECD (as Linux e1000 reads
 * the 82540) and the EERD shortcut (START bit 0, DONE bit 4, ADDR 15:8,
 * DATA 31:16). Words 0-2 are the MAC; word 0x3F makes the sum of words
 * 0-0x3F equal 0xBABA. The PHY (an M88E1011, ID 0x01410C20) answers
 * through MDIC with link up, 1000 Mb/s full duplex, autonegotiation done.
 *
 * Transmit, on a TDT write that leaves TDT != TDH (through send
 * combining, nic_model.h) and when TCTL.EN is set: descriptors TDH..TDT are fetched, data gathered until
 * EOP into a 16 KiB buffer that persists across kicks (a chain may be
 * completed by a later TDT write, as on the chip), DD written back when
 * RS is set, TDH advanced; ICR.TXDW when a descriptor was written back,
 * TXQE when the ring ran empty. Legacy descriptors, and extended
 * data/context descriptors read for their length only (no checksum
 * offload, no TSO, no VLAN insertion). A frame over NET_FRAME_MAX (or
 * over the 16 KiB buffer) is dropped with a guest error, checked before
 * copying (CVE-2015-3209). With TCTL.PSP short frames are padded to 60.
 *
 * Receive, while RCTL.EN and RDH != RDT: frames pass the address filter
 * (RAL/RAH with AV, MTA by RCTL.MO, UPE, MPE, BAM), are padded to 60 bytes
 * and keep their FCS unless RCTL.SECRC. One that does not fit a buffer
 * (RCTL.BSIZE/BSEX) is chained over several descriptors (EOP on the last).
 * When the free descriptors are too few it waits in the chip (RXO is
 * raised once for it, as when the ring runs out with a frame held); when
 * even the whole ring could not hold it, it is dropped and counted in
 * MPC. Frames are taken from the backend only while RDH != RDT. DD|EOP, RDH advanced, ICR.RXT0, and RXDMT0
 * when the free descriptors fall to RCTL.RDMTS of the ring. No checksum
 * offload (IXSM is set), no VLAN stripping, no interrupt delays (RDTR,
 * RADV, TIDV, TADV, ITR are stored only).
 *
 * Hostile rings: RDLEN/TDLEN must be non-zero multiples of 128 and the
 * heads and tails inside the ring, else no DMA and one guest error until
 * the ring registers are written again (CVE-2016-7909, CVE-2016-1981). A
 * failed descriptor fetch stops the ring the same way; a failed buffer
 * copy loses the frame only. Each walk is bounded by the ring length.
 *
 * The direct page (nic.h, nic_options.direct): the page of the receive
 * ring's registers, RDBAL to RSRPD, in host memory the guest may access
 * as RAM; what it wrote there is taken in (e1k_direct_pull) before each
 * access and receive, so the checks above see it as a written register.
 */
#include <string.h>

#include "hw/e1000_regs.h"
#include "nic_model.h"

#define E1K_TXBUF    16384
#define E1K_EE_WORDS 64
#define E1K_RX_BUDGET 64

typedef enum reg_kind {
    K_RW,           /* plain storage, written through wmask */
    K_RO,           /* read-only */
    K_STAT,         /* statistics: read-only, clear on read */
    K_CTRL, K_EECD, K_EERD, K_MDIC,
    K_ICR, K_ICS, K_IMS, K_IMC,
    K_RCTL, K_TCTL, K_RING,         /* RING: head, tail, base or length */
    K_RDT, K_TDT,
} reg_kind;

typedef struct e1k_reg {
    uint16_t off, len;          /* bytes: one register or an array */
    uint8_t  kind;
    bool     latch;             /* plain memory semantics (nic.h) */
    uint32_t wmask;
} e1k_reg;

/* Sorted by offset. Latch: registers a driver writes that only store. */
static const e1k_reg e1k_regs[] = {
    { E1000_CTRL,     4, K_CTRL, false, 0 },
    { E1000_STATUS,   4, K_RO,   false, 0 },
    { E1000_EECD,     4, K_EECD, false, 0 },
    { E1000_EERD,     4, K_EERD, false, 0 },
    /* EE_RST self-clears */
    { E1000_CTRL_EXT, 4, K_RW,   false, 0xffffdfffu },
    { E1000_MDIC,     4, K_MDIC, false, 0 },
    { E1000_FCAL,     8, K_RW,   true,  0xffffffffu },    /* FCAL, FCAH */
    { E1000_FCT,      4, K_RW,   true,  0x0000ffffu },    /* FCT */
    { E1000_VET,      4, K_RW,   true,  0x0000ffffu },    /* VET */
    { E1000_ICR,      4, K_ICR,  false, 0 },
    { E1000_ITR,      4, K_RW,   true,  0x0000ffffu },
    { E1000_ICS,      4, K_ICS,  false, 0 },
    { E1000_IMS,      4, K_IMS,  false, 0 },
    { E1000_IMC,      4, K_IMC,  false, 0 },
    { E1000_RCTL,     4, K_RCTL, false, 0 },
    { E1000_FCTTV,    4, K_RW,   true,  0x0000ffffu },    /* FCTTV */
    { E1000_TXCW,     4, K_RW,   false, 0xffffffffu },    /* TXCW */
    { E1000_RXCW,     4, K_RO,   false, 0 },              /* RXCW */
    { E1000_TCTL,     4, K_TCTL, false, 0 },
    { E1000_TIPG,     4, K_RW,   true,  0x3fffffffu },    /* TIPG */
    { E1000_LEDCTL,   4, K_RW,   false, 0xffffffffu },
    { E1000_PBA,      4, K_RW,   false, 0x0000ffffu },
    { E1000_RDBAL,    4, K_RING, true,  0xffffffffu },
    { E1000_RDBAH,    4, K_RING, true,  0xffffffffu },
    { E1000_RDLEN,    4, K_RING, true,  0x000fffffu },
    { E1000_RDH,      4, K_RING, false, 0x0000ffffu },
    { E1000_RDT,      4, K_RDT,  false, 0x0000ffffu },
    { E1000_RDTR,     4, K_RW,   true,  0x0000ffffu },
    { E1000_RXDCTL,   4, K_RW,   true,  0xffffffffu },
    { E1000_RADV,     4, K_RW,   true,  0x0000ffffu },
    { E1000_RSRPD,    4, K_RW,   true,  0x00000fffu },
    { E1000_TDBAL,    4, K_RING, true,  0xffffffffu },
    { E1000_TDBAH,    4, K_RING, true,  0xffffffffu },
    { E1000_TDLEN,    4, K_RING, true,  0x000fffffu },
    { E1000_TDH,      4, K_RING, false, 0x0000ffffu },
    { E1000_TDT,      4, K_TDT,  false, 0x0000ffffu },
    { E1000_TIDV,     4, K_RW,   true,  0x0000ffffu },
    { E1000_TXDCTL,   4, K_RW,   true,  0xffffffffu },
    { E1000_TADV,     4, K_RW,   true,  0x0000ffffu },
    { E1000_STATS_BASE, E1000_STATS_LEN, K_STAT, false, 0 },
    { E1000_RXCSUM,   4, K_RW,   true,  0x000007ffu },
    { E1000_MTA,  E1000_MTA_LEN, K_RW,   true,  0xffffffffu },
    /* RAL/RAH 0-15 */
    { E1000_RAL(0), E1000_RA_LEN, K_RW,   true,  0xffffffffu },
    { E1000_VFTA,   E1000_VFTA_LEN, K_RW,   true,  0xffffffffu },
    { E1000_WUC,      4, K_RW,   false, 0xffffffffu },
    { E1000_WUFC,     4, K_RW,   false, 0xffffffffu },
    { E1000_MANC,     4, K_RW,   false, 0xffffffffu },
};
#define E1K_NREG_ENTRIES (sizeof e1k_regs / sizeof e1k_regs[0])

/* The direct page (nic.h): RDBAL .. RSRPD, the receive ring's registers.
 * None has a side effect but on the model's own bookkeeping (a halted
 * ring resumes when one is written), and the chip reads them only when
 * it receives: written as memory, they are taken in then. */
#define E1K_DIRECT_PAGE 0x2000u

typedef struct e1000 {
    uint32_t reg[E1000_REG_END / 4];
    uint16_t eeprom[E1K_EE_WORDS];
    uint16_t phy[32];
    /* Microwire state behind EECD */
    unsigned ee_bits_in, ee_val_in, ee_addr, ee_bit_out;
    bool     ee_reading;
    /* a transmit frame gathered across descriptors (and kicks) */
    size_t   tx_len;
    bool     tx_oversize, tx_lost;
    bool     rx_halted, tx_halted;  /* bad ring reported; wait for rewrite */
    uint8_t  tx_buf[E1K_TXBUF];
} e1000;

static e1000 *S(nic *n) { return n->state; }
static uint32_t *R(e1000 *s, uint32_t off) { return &s->reg[off / 4]; }

static const e1k_reg *reg_find(uint32_t off)
{
    for (size_t i = 0; i < E1K_NREG_ENTRIES; i++) {
        const e1k_reg *r = &e1k_regs[i];
        if (off < r->off)
            return NULL;
        if (off - r->off < r->len)
            return r;
    }
    return NULL;
}

/* ---- interrupts ----------------------------------------------------- */

/* The one place that computes the line: (ICR & IMS) != 0. */
static void e1k_update_irq(nic *n)
{
    e1000 *s = S(n);

    nic_set_irq(n, (*R(s, E1000_ICR) & *R(s, E1000_IMS)) != 0);
}

static void e1k_cause(nic *n, uint32_t bits)
{
    *R(S(n), E1000_ICR) |= bits;
}

static void stat_add(e1000 *s, uint32_t off, uint32_t v)
{
    uint32_t *r = R(s, off);
    *r = *r + v < *r ? 0xffffffffu : *r + v;    /* saturating */
}

/* Octet counters are 64-bit pairs (low, high). */
static void stat_add64(e1000 *s, uint32_t off, uint64_t v)
{
    uint64_t t = *R(s, off) | (uint64_t)*R(s, off + 4) << 32;
    t += v;
    *R(s, off) = (uint32_t)t;
    *R(s, off + 4) = (uint32_t)(t >> 32);
}

/* ---- EEPROM and PHY ------------------------------------------------- */

static void eeprom_build(nic *n)
{
    e1000 *s = S(n);
    uint16_t sum = 0;

    memset(s->eeprom, 0, sizeof s->eeprom);
    for (int i = 0; i < 3; i++)
        s->eeprom[i] = (uint16_t)(n->mac[2 * i] | n->mac[2 * i + 1] << 8);
    s->eeprom[0x04] = 0xffff;           /* LED settings: defaults */
    s->eeprom[0x0b] = 0x001e;           /* subsystem ID */
    s->eeprom[0x0c] = E1000_VENDOR_ID;           /* subsystem vendor */
    s->eeprom[0x0d] = E1000_DEVICE_ID;           /* device ID */
    s->eeprom[0x0e] = E1000_VENDOR_ID;           /* vendor ID */
    for (int i = 0; i < E1K_EE_WORDS - 1; i++)
        sum = (uint16_t)(sum + s->eeprom[i]);
    s->eeprom[E1K_EE_WORDS - 1] = (uint16_t)(0xbaba - sum);
}

/* Microwire (93C46-style) behind EECD: sample DI on each rising SK edge
 * while CS is high; a start bit, opcode 10b (read) and 6 address bits,
 * then 16 data bits per word on DO, sequentially. Other opcodes (write,
 * erase) are ignored: the EEPROM is read-only here. */
static void eecd_write(nic *n, uint32_t v)
{
    e1000 *s = S(n);
    uint32_t old = *R(s, E1000_EECD);
    uint32_t now = (v & (E1000_EECD_SK | E1000_EECD_CS | E1000_EECD_DI |
                         E1000_EECD_FWE | E1000_EECD_REQ)) |
                   E1000_EECD_PRES |
                   ((v & E1000_EECD_REQ) ? E1000_EECD_GNT : 0) |
                   (old & E1000_EECD_DO);

    if (!(now & E1000_EECD_CS)) {
        s->ee_bits_in = s->ee_val_in = 0;
        s->ee_reading = false;
        now &= ~E1000_EECD_DO;
    } else if (!(old & E1000_EECD_SK) && (now & E1000_EECD_SK)) {
        if (s->ee_reading) {
            unsigned bit = s->eeprom[s->ee_addr] >> (15 - s->ee_bit_out) & 1;
            now = (now & ~E1000_EECD_DO) | (bit ? E1000_EECD_DO : 0);
            if (++s->ee_bit_out == 16) {
                s->ee_bit_out = 0;
                s->ee_addr = (s->ee_addr + 1) % E1K_EE_WORDS;
            }
        } else if (s->ee_bits_in > 0 || (now & E1000_EECD_DI)) {
            s->ee_val_in = (s->ee_val_in << 1 |
                            !!(now & E1000_EECD_DI)) & 0x1ff;
            if (++s->ee_bits_in == 9) {
                if ((s->ee_val_in >> 6) == 6) {     /* start, read */
                    s->ee_reading = true;
                    s->ee_addr = s->ee_val_in & 0x3f;
                    s->ee_bit_out = 0;
                    now &= ~E1000_EECD_DO;                /* the dummy 0 */
                }
                s->ee_bits_in = 10;                 /* nothing more in */
            } else if (s->ee_bits_in > 9) {
                s->ee_bits_in = 10;
            }
        }
    }
    *R(s, E1000_EECD) = now;
}

static void eerd_write(nic *n, uint32_t v)
{
    e1000 *s = S(n);
    unsigned addr = (v >> 8) & 0xff;
    uint16_t data;

    if (!(v & E1000_EERD_START)) {
        *R(s, E1000_EERD) = v & 0xff00u;
        return;
    }
    data = addr < E1K_EE_WORDS ? s->eeprom[addr] : 0xffff;
    *R(s, E1000_EERD) = (uint32_t)data << 16 | addr << 8 | E1000_EERD_DONE;
}

static void phy_reset(e1000 *s)
{
    static const uint16_t init[32] = {
        [0] = 0x1140,   /* control: autoneg on, full duplex, 1000 */
        [1] = 0x796d,   /* status: autoneg complete, link up */
        [2] = 0x0141,   /* PHY ID (M88E1011) */
        [3] = 0x0c20,
        [4] = 0x0de1,   /* autoneg advertisement */
        [5] = 0x41e1,   /* link partner ability */
        [6] = 0x0001,   /* autoneg expansion */
        [9] = 0x0e00,   /* 1000BASE-T control */
        [10] = 0x3c00,  /* 1000BASE-T status */
        [15] = 0x3000,  /* extended status */
        [16] = 0x0068,  /* M88 specific control */
        [17] = 0xac00,  /* M88 specific status: 1000 FD, resolved, link */
        [20] = 0x0d60,  /* M88 extended control */
    };
    memcpy(s->phy, init, sizeof init);
}

static void mdic_write(nic *n, uint32_t v)
{
    e1000 *s = S(n);
    unsigned phyadd = (v >> 21) & 0x1f, regadd = (v >> 16) & 0x1f;
    /* Read-only PHY registers: status, IDs, partner, 1000T status, ... */
    const uint32_t ro = 1u << 1 | 1u << 2 | 1u << 3 | 1u << 5 | 1u << 6 |
                        1u << 10 | 1u << 15 | 1u << 17;
    uint32_t out = v & 0x3fffffffu;

    if (phyadd != 1) {
        out |= E1000_MDIC_ERROR;
    } else if (v & E1000_MDIC_OP_READ) {
        out = (out & 0xffff0000u) | s->phy[regadd];
    } else if ((v & E1000_MDIC_OP_WRITE) && !(ro >> regadd & 1)) {
        uint16_t d = (uint16_t)v;
        if (regadd == 0)                /* reset, restart autoneg: done */
            d &= (uint16_t)~0x8200;
        s->phy[regadd] = d;
    }
    *R(s, E1000_MDIC) = out | E1000_MDIC_READY;
    if (v & E1000_MDIC_INT_EN)
        e1k_cause(n, E1000_ICR_MDAC);
}

/* ---- reset ---------------------------------------------------------- */

/* Power-on and CTRL.RST: every register to its default, the station
 * address reloaded from the EEPROM into RAL0/RAH0. */
static void e1k_reset_regs(nic *n)
{
    e1000 *s = S(n);

    memset(s->reg, 0, sizeof s->reg);
    *R(s, E1000_CTRL) = E1000_CTRL_FD | E1000_CTRL_SLU | E1000_CTRL_SPEED_1000;
    *R(s, E1000_STATUS) = E1000_STATUS_FD | E1000_STATUS_LU |
                          E1000_STATUS_SPEED_1000 | E1000_STATUS_ASDV_1000;
    *R(s, E1000_EECD) = E1000_EECD_PRES;
    *R(s, E1000_LEDCTL) = 0x07068302;
    *R(s, E1000_PBA) = 0x00000030;
    *R(s, E1000_RAL(0)) = nic_le32(n->mac);
    *R(s, E1000_RAH(0)) = nic_le16(n->mac + 4) | E1000_RAH_AV;
    s->ee_bits_in = s->ee_val_in = s->ee_addr = s->ee_bit_out = 0;
    s->ee_reading = false;
    s->tx_len = 0;
    s->tx_oversize = s->tx_lost = false;
    s->rx_halted = s->tx_halted = false;
    phy_reset(s);
    nic_tx_cancel(n);
    for (uint32_t off = E1K_DIRECT_PAGE;       /* what the guest reads */
         off < E1K_DIRECT_PAGE + NIC_DIRECT_SIZE; off += 4)
        nic_direct_put(n, off, *R(s, off));
}

static void e1k_reset(nic *n)
{
    eeprom_build(n);
    e1k_reset_regs(n);
}

/* ---- rings ---------------------------------------------------------- */

/* Checks a ring at entry (CVE-2016-7909, CVE-2016-1981): length a
 * non-zero multiple of 128, head and tail inside. On failure reports once
 * and halts the ring until its registers are written again. */
static bool ring_ok(nic *n, bool tx, unsigned *ndesc)
{
    e1000 *s = S(n);
    uint32_t len = *R(s, tx ? E1000_TDLEN : E1000_RDLEN);
    uint32_t h = *R(s, tx ? E1000_TDH : E1000_RDH);
    uint32_t t = *R(s, tx ? E1000_TDT : E1000_RDT);
    bool *halted = tx ? &s->tx_halted : &s->rx_halted;
    const char *name = tx ? "transmit" : "receive";

    if (*halted)
        return false;
    if (len == 0 || len % 128) {
        nic_guest_error(n, "%s ring length %#x is not a non-zero multiple "
                        "of 128", name, len);
        *halted = true;
        return false;
    }
    *ndesc = len / E1000_DESC_SIZE;
    if (h >= *ndesc || t >= *ndesc) {
        nic_guest_error(n, "%s head %u or tail %u beyond the ring of %u",
                        name, h, t, *ndesc);
        *halted = true;
        return false;
    }
    return true;
}

static uint64_t ring_desc(e1000 *s, bool tx, uint32_t idx)
{
    uint64_t base = (uint64_t)*R(s, tx ? E1000_TDBAH : E1000_RDBAH) << 32 |
                    (*R(s, tx ? E1000_TDBAL : E1000_RDBAL) & ~0xfu);
    return base + (uint64_t)idx * E1000_DESC_SIZE;
}

/* ---- transmit ------------------------------------------------------- */

static void tx_deliver(nic *n)
{
    e1000 *s = S(n);
    size_t len = s->tx_len;

    if (s->tx_lost) {
        /* the guest error was given when the copy failed */
    } else if (len == 0) {
        /* 8254x SDM section 3.3.3 (Table 3-9, Length; note 3 of 3.3.3.1):
         * descriptors of zero length transfer no data, and a packet must
         * hold at least 48 bytes before padding. A packet made only of
         * zero-length descriptors is not a frame: TCTL.PSP must not pad
         * it into 60 zero bytes on the wire. Nothing is sent or counted. */
    } else if (s->tx_oversize || len > NET_FRAME_MAX) {
        nic_guest_error(n, "transmit frame over %d bytes dropped",
                        NET_FRAME_MAX);
    } else if ((len = nic_tx_frame(n, s->tx_buf, len,
                                   *R(s, E1000_TCTL) & E1000_TCTL_PSP)) != 0) {
        stat_add(s, E1000_GPTC, 1);
        stat_add(s, E1000_TPT, 1);
        stat_add64(s, E1000_GOTCL, len + NIC_FCS_LEN);
    }
    s->tx_len = 0;
    s->tx_oversize = s->tx_lost = false;
}

/* Gather one descriptor's data. Returns false if the descriptor itself
 * could not be written back (the ring halts). */
static bool tx_desc(nic *n, uint64_t da, const uint8_t *d, bool *wrote)
{
    e1000 *s = S(n);
    uint8_t cmd = d[11];
    uint64_t addr = nic_le32(d) | (uint64_t)nic_le32(d + 4) << 32;
    size_t len;
    bool context = false;

    if (cmd & E1000_TXD_CMD_DEXT) {           /* extended: DTYP in bits 23:20 */
        uint32_t w = nic_le32(d + 8);
        context = ((w >> 20) & 0xf) == 0;
        len = context ? 0 : (w & 0xfffff);
    } else {
        len = nic_le16(d + 8);
    }
    if (len && !s->tx_oversize && !s->tx_lost) {
        if (len > E1K_TXBUF - s->tx_len) {
            s->tx_oversize = true;      /* before copying: CVE-2015-3209 */
        } else if (nic_dma_read(n, addr, s->tx_buf + s->tx_len, len) < 0) {
            nic_guest_error(n, "transmit buffer at %#llx unreadable",
                            (unsigned long long)addr);
            s->tx_lost = true;
        } else {
            s->tx_len += len;
        }
    }
    if (!context && (cmd & E1000_TXD_CMD_EOP))
        tx_deliver(n);
    if (cmd & E1000_TXD_CMD_RS) {
        /* STA 3:0 */
        uint8_t sta = (uint8_t)((d[12] & 0xf0) | E1000_TXD_STA_DD);
        if (nic_dma_write(n, da + 12, &sta, 1) < 0) {
            nic_guest_error(n, "transmit descriptor write-back at %#llx "
                            "failed", (unsigned long long)da);
            return false;
        }
        *wrote = true;
    }
    return true;
}

static void e1k_transmit(nic *n)
{
    e1000 *s = S(n);
    unsigned ndesc, budget;
    bool wrote = false, progress = false;

    if (!(*R(s, E1000_TCTL) & E1000_TCTL_EN) || !nic_can_dma(n) ||
        !ring_ok(n, true, &ndesc))
        return;
    for (budget = ndesc; budget > 0 &&
         *R(s, E1000_TDH) != *R(s, E1000_TDT); budget--) {
        uint32_t h = *R(s, E1000_TDH);
        uint64_t da = ring_desc(s, true, h);
        uint8_t d[E1000_DESC_SIZE];

        if (nic_dma_read(n, da, d, sizeof d) < 0) {
            nic_guest_error(n, "transmit descriptor at %#llx unreadable",
                            (unsigned long long)da);
            s->tx_halted = true;
            break;
        }
        progress = true;
        if (!tx_desc(n, da, d, &wrote)) {
            s->tx_halted = true;
            break;
        }
        *R(s, E1000_TDH) = (h + 1) % ndesc;
    }
    if (!progress)
        return;
    if (wrote)
        e1k_cause(n, E1000_ICR_TXDW);
    if (*R(s, E1000_TDH) == *R(s, E1000_TDT))
        e1k_cause(n, E1000_ICR_TXQE);
    e1k_update_irq(n);
}

/* ---- receive -------------------------------------------------------- */

static size_t rx_buf_size(uint32_t rctl)
{
    static const size_t sz[2][4] = {
        { 2048, 1024, 512, 256 },
        { 2048, 16384, 8192, 4096 },    /* BSEX; 00b reserved */
    };
    return sz[!!(rctl & E1000_RCTL_BSEX)][(rctl >> E1000_RCTL_BSIZE_SHIFT) & 3];
}

/* Multicast table hash: 12 bits of the address chosen by RCTL.MO. */
static unsigned mta_hash(uint32_t rctl, const uint8_t *a)
{
    static const unsigned shift[4] = { 4, 3, 2, 0 };   /* bits 47:36 .. 43:32 */
    unsigned v = (unsigned)a[4] | (unsigned)a[5] << 8;

    return (v >> shift[(rctl >> E1000_RCTL_MO_SHIFT) & 3]) & 0xfff;
}

static bool rx_accept(e1000 *s, const uint8_t *dst)
{
    uint32_t rctl = *R(s, E1000_RCTL);
    static const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };

    for (unsigned i = 0; i < 16; i++) {
        uint32_t lo = *R(s, E1000_RAL(i)),
                 hi = *R(s, E1000_RAH(i));
        uint8_t a[6];
        if (!(hi & E1000_RAH_AV))
            continue;
        nic_put32(a, lo);
        nic_put16(a + 4, (uint16_t)hi);
        if (!memcmp(a, dst, 6))
            return true;
    }
    if (!memcmp(dst, bcast, 6))
        return (rctl & E1000_RCTL_BAM) || (rctl & E1000_RCTL_MPE);
    if (dst[0] & 1) {
        unsigned h = mta_hash(rctl, dst);
        return (rctl & E1000_RCTL_MPE) ||
               (*R(s, E1000_MTA + 4 * (h >> 5)) >> (h & 31) & 1);
    }
    return (rctl & E1000_RCTL_UPE) != 0;
}

/* Write the held frame (total bytes) into `need` descriptors from RDH.
 * Returns false on a DMA failure (frame lost, ring halted). */
static bool rx_write(nic *n, size_t total, unsigned need, unsigned ndesc,
                     size_t bsize)
{
    e1000 *s = S(n);
    size_t done = 0;

    for (unsigned i = 0; i < need; i++) {
        uint32_t h = *R(s, E1000_RDH);
        uint64_t da = ring_desc(s, false, h);
        uint8_t d[E1000_DESC_SIZE];
        size_t part = total - done < bsize ? total - done : bsize;
        uint64_t addr;

        if (nic_dma_read(n, da, d, 8) < 0) {
            nic_guest_error(n, "receive descriptor at %#llx unreadable",
                            (unsigned long long)da);
            return false;
        }
        addr = nic_le32(d) | (uint64_t)nic_le32(d + 4) << 32;
        if (nic_dma_write(n, addr, n->rx_buf + done, part) < 0) {
            nic_guest_error(n, "receive buffer at %#llx unwritable",
                            (unsigned long long)addr);
            return false;
        }
        done += part;
        memset(d + 8, 0, 8);
        nic_put16(d + 8, (uint16_t)part);               /* length */
        d[12] = E1000_RXD_STA_DD | E1000_RXD_STA_IXSM |
                (i == need - 1 ? E1000_RXD_STA_EOP : 0);      /* status */
        if (nic_dma_write(n, da + 8, d + 8, 8) < 0) {
            nic_guest_error(n, "receive descriptor write-back at %#llx "
                            "failed", (unsigned long long)da);
            return false;
        }
        *R(s, E1000_RDH) = (h + 1) % ndesc;
        nic_direct_put(n, E1000_RDH, *R(s, E1000_RDH));
    }
    return true;
}

/* Free descriptors at or below RCTL.RDMTS (1/2, 1/4, 1/8 of the ring). */
static void rx_check_threshold(e1000 *s, unsigned ndesc)
{
    unsigned free_desc = (*R(s, E1000_RDT) + ndesc - *R(s, E1000_RDH)) % ndesc;
    unsigned rdmts = (*R(s, E1000_RCTL) >> E1000_RCTL_RDMTS_SHIFT) & 3;

    if (free_desc <= ndesc >> (rdmts == 3 ? 3 : rdmts + 1))
        *R(s, E1000_ICR) |= E1000_ICR_RXDMT0;
}

static void e1k_poll_rx(nic *n)
{
    e1000 *s = S(n);
    uint32_t rctl = *R(s, E1000_RCTL);
    size_t bsize = rx_buf_size(rctl);
    unsigned ndesc;
    bool progress = false;

    if (!(rctl & E1000_RCTL_EN) || !nic_can_dma(n) ||
        !ring_ok(n, false, &ndesc))
        return;
    for (int budget = E1K_RX_BUDGET; budget > 0; budget--) {
        unsigned avail = (*R(s, E1000_RDT) + ndesc - *R(s, E1000_RDH)) % ndesc;
        size_t flen, total;
        unsigned need;

        if (avail == 0) {               /* ring exhausted, frame held */
            if (nic_rx_wait(n)) {
                e1k_cause(n, E1000_ICR_RXO);
                progress = true;
            }
            break;
        }
        flen = nic_rx_peek(n);
        if (flen == 0)
            break;
        if (!rx_accept(s, n->rx_buf)) {
            nic_rx_drop(n);
            continue;
        }
        total = flen + ((rctl & E1000_RCTL_SECRC) ? 0 : NIC_FCS_LEN);
        if (!(rctl & E1000_RCTL_SECRC))
            nic_rx_fcs(n);              /* stripped: no CRC to compute */
        need = (unsigned)((total + bsize - 1) / bsize);
        if (need > ndesc - 1) {         /* can never fit: missed */
            nic_rx_drop(n);
            stat_add(s, E1000_MPC, 1);
            progress = true;
            continue;
        }
        if (need > avail) {             /* wait for the guest */
            if (nic_rx_wait(n)) {
                e1k_cause(n, E1000_ICR_RXO);
                progress = true;
            }
            break;
        }
        progress = true;
        if (!rx_write(n, total, need, ndesc, bsize)) {
            nic_rx_drop(n);
            s->rx_halted = true;
            break;
        }
        nic_rx_consume(n);
        stat_add(s, E1000_GPRC, 1);
        stat_add(s, E1000_TPR, 1);
        stat_add64(s, E1000_GORCL, flen + NIC_FCS_LEN);
        e1k_cause(n, E1000_ICR_RXT0);
        rx_check_threshold(s, ndesc);
    }
    if (progress)
        e1k_update_irq(n);
}

/* ---- register access ------------------------------------------------ */

static uint32_t reg_read(nic *n, const e1k_reg *r, uint32_t off)
{
    e1000 *s = S(n);
    uint32_t v = *R(s, off);

    switch (r->kind) {
    case K_ICR:                         /* clear on read */
        *R(s, E1000_ICR) = 0;
        e1k_update_irq(n);
        return v;
    case K_STAT:
        *R(s, off) = 0;
        return v;
    case K_ICS: case K_IMC:             /* write-only */
        return 0;
    default:
        return v;
    }
}

static void reg_write(nic *n, const e1k_reg *r, uint32_t off, uint32_t v)
{
    e1000 *s = S(n);
    uint32_t old = *R(s, off);

    switch (r->kind) {
    case K_RO: case K_STAT:
        break;
    case K_RW:
        *R(s, off) = v & r->wmask;
        break;
    case K_CTRL:
        if (v & E1000_CTRL_RST) {             /* self-clearing full reset */
            e1k_reset_regs(n);
            n->stats.resets++;
            e1k_update_irq(n);
            break;
        }
        *R(s, E1000_CTRL) = v & ~E1000_CTRL_PHY_RST;
        break;
    case K_EECD: eecd_write(n, v); break;
    case K_EERD: eerd_write(n, v); break;
    case K_MDIC: mdic_write(n, v); e1k_update_irq(n); break;
    case K_ICR: *R(s, E1000_ICR) &= ~v; e1k_update_irq(n); break;
    case K_ICS: *R(s, E1000_ICR) |= v; e1k_update_irq(n); break;
    case K_IMS: *R(s, E1000_IMS) |= v; e1k_update_irq(n); break;
    case K_IMC: *R(s, E1000_IMS) &= ~v; e1k_update_irq(n); break;
    case K_RCTL:
        *R(s, E1000_RCTL) = v;
        s->rx_halted = false;
        break;
    case K_TCTL:
        *R(s, E1000_TCTL) = v;
        s->tx_halted = false;
        if ((v & E1000_TCTL_EN) && !(old & E1000_TCTL_EN))
            nic_tx_now(n);              /* descriptors already queued */
        break;
    case K_RING:
        *R(s, off) = v & r->wmask;
        if (off < E1000_TDBAL)
            s->rx_halted = false;
        else
            s->tx_halted = false;
        break;
    case K_RDT:
        *R(s, E1000_RDT) = v & r->wmask;
        s->rx_halted = false;           /* received on after the access */
        break;
    case K_TDT:
        *R(s, E1000_TDT) = v & r->wmask;
        s->tx_halted = false;
        /* a kick only if there is work */
        if (*R(s, E1000_TDT) != *R(s, E1000_TDH))
            nic_tx_kick(n);
        break;
    }
}

/* nic_model_ops.direct_pull: the receive registers the guest wrote in
 * the direct page, each taken in as its write would be, in the order of
 * the register map (the guest's order is not known; none depends on
 * another before the next receive, which reads them all). */
static void e1k_direct_pull(nic *n)
{
    e1000 *s = S(n);

    for (size_t i = 0; i < E1K_NREG_ENTRIES; i++) {
        const e1k_reg *r = &e1k_regs[i];

        if (r->off < E1K_DIRECT_PAGE)
            continue;
        if (r->off >= E1K_DIRECT_PAGE + NIC_DIRECT_SIZE)
            break;                      /* sorted by offset */
        for (uint32_t off = r->off; off < (uint32_t)r->off + r->len;
             off += 4) {
            uint32_t v = nic_direct_get(n, off);

            if (v == *R(s, off))
                continue;
            reg_write(n, r, off, v);
            n->stats.direct_updates++;
            nic_direct_fix(n, off, v, *R(s, off));
        }
    }
}

static void e1k_read(nic *n, uint32_t off, unsigned size, uint32_t *val)
{
    const e1k_reg *r = reg_find(off & ~3u);

    (void)size;
    *val = r ? reg_read(n, r, off & ~3u) >> (8 * (off & 3)) : 0;
}

static bool write_one_kind(uint8_t kind)
{
    return kind == K_ICR || kind == K_ICS || kind == K_IMS || kind == K_IMC;
}

static void e1k_write(nic *n, uint32_t off, unsigned size, uint32_t val)
{
    uint32_t base = off & ~3u;
    const e1k_reg *r = reg_find(base);

    if (!r)
        return;
    if (size < 4) {                     /* merge into the register */
        unsigned sh = 8 * (off & 3);
        uint32_t m = ((1u << (8 * size)) - 1) << sh;
        uint32_t cur = write_one_kind(r->kind) ? 0 : *R(S(n), base);
        val = (cur & ~m) | ((val << sh) & m);
    }
    reg_write(n, r, base, val);
}

static bool e1k_is_latch(const nic *n, uint32_t off, unsigned size)
{
    const e1k_reg *r = reg_find(off & ~3u);

    (void)n;
    (void)size;
    return r && r->latch;
}

/* The latch registers as byte ranges, adjacent ones merged. */
static unsigned e1k_latch_ranges(const nic *n, uint32_t (*ranges)[2],
                                 unsigned max)
{
    unsigned k = 0;

    (void)n;
    for (size_t i = 0; i < E1K_NREG_ENTRIES; i++) {
        const e1k_reg *r = &e1k_regs[i];
        if (!r->latch)
            continue;
        if (k > 0 && ranges[k - 1][0] + ranges[k - 1][1] == r->off) {
            ranges[k - 1][1] += r->len;
            continue;
        }
        if (k == max)
            break;
        ranges[k][0] = r->off;
        ranges[k][1] = r->len;
        k++;
    }
    return k;
}

/* The writes the VMM may defer (nic_coalesced_ranges): as QEMU's e1000
 * (e1000_mmio_setup) coalesces, every write in the BAR except those
 * whose effect the guest can see without another access: MDIC (MDAC
 * raises an interrupt), ICR, ICS, IMS, IMC (the interrupt line), TCTL
 * and TDT (transmit). Everything else either only stores, or acts on
 * the chip's state the guest can only observe through a later access
 * (which exits and replays the deferred writes first, in order) or
 * through receive DMA: an RDT write gives descriptors back, and a frame
 * waiting for them is received when the write is replayed (at the next
 * exit, or the VMM's I/O-thread tick while a frame waits).
 * While adaptive send combining holds transmits (nic_combining), TDT is
 * deferred too: the kicks of a streaming guest then cost a trap each
 * instead of an exit, and are sent, in batches, at the next exit or tick
 * (Sugerman et al. section 3.3: "delay the actual transmission until the
 * next ... switch to the host world"). */
static unsigned e1k_coalesced_ranges(const nic *n, uint32_t (*ranges)[2],
                                     unsigned max)
{
    uint32_t exits[9];                  /* sorted by offset */
    size_t nexits = 0;
    uint32_t from = 0;
    unsigned k = 0;

    /* With the direct page, the receive ring's registers take effect at
     * once, ahead of anything still in the coalesced ring: a reset
     * (CTRL.RST) or a receiver turned off (RCTL) replayed later would
     * undo or race the ring the guest set up after it. Those two exit. */
    if (n->direct)
        exits[nexits++] = E1000_CTRL;
    exits[nexits++] = E1000_MDIC;
    exits[nexits++] = E1000_ICR;
    exits[nexits++] = E1000_ICS;
    exits[nexits++] = E1000_IMS;
    exits[nexits++] = E1000_IMC;
    if (n->direct)
        exits[nexits++] = E1000_RCTL;
    exits[nexits++] = E1000_TCTL;
    if (!nic_combining(n))
        exits[nexits++] = E1000_TDT;

    for (size_t i = 0; i <= nexits && k < max; i++) {
        uint32_t to = i < nexits ? exits[i] : nic_e1000_ops.bar_size;
        if (to > from) {
            ranges[k][0] = from;
            ranges[k][1] = to - from;
            k++;
        }
        from = to + 4;
    }
    return k;
}

static void e1k_resume(nic *n)
{
    nic_tx_now(n);
}

const nic_model_ops nic_e1000_ops = {
    .name = "e1000",
    .state_size = sizeof(e1000),
    .bar_size = E1000_BAR_SIZE,
    .reset = e1k_reset,
    .read = e1k_read,
    .write = e1k_write,
    .is_latch = e1k_is_latch,
    .latch_ranges = e1k_latch_ranges,
    .coalesced_ranges = e1k_coalesced_ranges,
    .defers_kicks = true,
    .transmit = e1k_transmit,
    .poll_rx = e1k_poll_rx,
    .resume = e1k_resume,
    .direct_page = E1K_DIRECT_PAGE,
    .direct_pull = e1k_direct_pull,
};
