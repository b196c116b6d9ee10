/* SPDX-License-Identifier: MIT */
/*
 * AMD PCnet-PCI II (Am79C970A, 1022:2000) registers, bits and descriptor
 * layout: the one copy shared by the device model
 * (examples/vmm/devices/pcnet.c), the guest driver (examples/guests/pcnet.c)
 * and the tests.
 *
 * Names from the Am79C970A datasheet (AMD publication 19436): the I/O
 * resources in word I/O mode (WIO), the CSRs and BCRs by number with the
 * datasheet's mnemonic (CSR15 is MODE, CSR58 and BCR20 SWSTYLE, ...), a bit
 * of CSRn as CSRn_<bit name>, descriptor bits (RMD1/TMD1 share the upper
 * half) as PCNET_DESC_<bit name>.
 *
 * Freestanding: constants only, so the guests (-ffreestanding, no libc)
 * can include it.
 */
#ifndef HW_PCNET_REGS_H
#define HW_PCNET_REGS_H

#include <stdint.h>

#define PCNET_VENDOR_ID 0x1022
#define PCNET_DEVICE_ID 0x2000
#define PCNET_BAR_SIZE  32              /* BAR0: 32 bytes of I/O space */
#define PCNET_CHIP_ID   0x02621003u     /* CSR89:CSR88 of the Am79C970A */

/* ---- I/O resources in WIO mode (offsets from BAR0) --------------------- */
#define PCNET_APROM 0x00                /* 16 bytes: station address PROM */
#define PCNET_RDP   0x10                /* register data port: CSR[RAP] */
#define PCNET_RAP   0x12                /* register address port */
#define PCNET_RESET 0x14                /* read: software reset (S_RESET) */
#define PCNET_BDP   0x16                /* BCR data port: BCR[RAP] */

/* ---- CSR numbers (selected through RAP, data through RDP) -------------- */
#define PCNET_CSR_CSR0      0           /* controller status and control */
#define PCNET_CSR_IADR_LO   1           /* init block address, 15:0 */
#define PCNET_CSR_IADR_HI   2           /* init block address, 31:16 */
#define PCNET_CSR_IMASK     3           /* interrupt masks, deferral control */
#define PCNET_CSR_FEAT      4           /* test and features control */
#define PCNET_CSR_MODE      15          /* mode (from the init block) */
#define PCNET_CSR_BADR_LO   24          /* receive ring base, 15:0 */
#define PCNET_CSR_BADR_HI   25
#define PCNET_CSR_BADX_LO   30          /* transmit ring base, 15:0 */
#define PCNET_CSR_BADX_HI   31
#define PCNET_CSR_SWSTYLE   58          /* software style (alias of BCR20) */
#define PCNET_CSR_RCVRL     76          /* receive ring length, negated */
#define PCNET_CSR_XMTRL     78          /* transmit ring length, negated */
#define PCNET_CSR_CHIPID_LO 88
#define PCNET_CSR_CHIPID_HI 89
#define PCNET_CSR_MFC       112         /* missed frame count */

/* ---- BCR numbers (selected through RAP, data through BDP) -------------- */
#define PCNET_BCR_SWSTYLE   20

/* ---- CSR0: controller status and control ------------------------------- */
#define CSR0_INIT 0x0001
#define CSR0_STRT 0x0002
#define CSR0_STOP 0x0004
#define CSR0_TDMD 0x0008                /* transmit demand */
#define CSR0_TXON 0x0010
#define CSR0_RXON 0x0020
#define CSR0_INEA 0x0040                /* interrupt enable */
#define CSR0_INTR 0x0080
#define CSR0_IDON 0x0100                /* initialization done */
#define CSR0_TINT 0x0200
#define CSR0_RINT 0x0400
#define CSR0_MERR 0x0800                /* memory error */
#define CSR0_MISS 0x1000                /* missed frame */
#define CSR0_CERR 0x2000                /* collision error */
#define CSR0_BABL 0x4000                /* babble */
#define CSR0_ERR  0x8000
/* The write-one-to-clear status bits (writing 0 has no effect). */
#define CSR0_W1C  (CSR0_BABL | CSR0_CERR | CSR0_MISS | CSR0_MERR | \
                   CSR0_RINT | CSR0_TINT | CSR0_IDON)

/* CSR3: the masks of CSR0's interrupt sources, bit for bit. */
#define CSR3_BABLM 0x4000
#define CSR3_MISSM 0x1000
#define CSR3_MERRM 0x0800
#define CSR3_RINTM 0x0400
#define CSR3_TINTM 0x0200
#define CSR3_IDONM 0x0100

/* CSR4: test and features control. */
#define CSR4_APAD_XMT 0x0800            /* pad short transmit frames */

/* CSR15: mode. */
#define CSR15_DRX    0x0001             /* disable receiver */
#define CSR15_DTX    0x0002             /* disable transmitter */
#define CSR15_DRCVPA 0x2000             /* disable physical address match */
#define CSR15_DRCVBC 0x4000             /* disable broadcast */
#define CSR15_PROM   0x8000             /* promiscuous */

/* BCR20 (and CSR58): software style. */
#define BCR20_SWSTYLE  0x00ff
#define BCR20_SSIZE32  0x0100
#define BCR20_CSRPCNET 0x0200
#define BCR20_APERREN  0x0400
#define PCNET_SWSTYLE_LANCE     0       /* 16-bit structures */
#define PCNET_SWSTYLE_PCNET_PCI 2       /* 32-bit structures (SSIZE32 = 1) */

/* ---- descriptors -------------------------------------------------------- */
/* Status: the upper half of RMD1/TMD1 (or the high byte of the 16-bit
 * style's second word). */
#define PCNET_DESC_OWN  0x8000
#define PCNET_DESC_ERR  0x4000
#define PCNET_DESC_STP  0x0200          /* start of packet */
#define PCNET_DESC_ENP  0x0100          /* end of packet */
#define PCNET_DESC_PAM  0x0040          /* RMD1: physical address match */
#define PCNET_DESC_LAFM 0x0020          /* RMD1: logical address filter */
#define PCNET_DESC_BAM  0x0010          /* RMD1: broadcast */
/* RMD1/TMD1 bits 15:12 are written as ONES, bits 11:0 are BCNT (two's
 * complement of the buffer length). */
#define PCNET_DESC_ONES 0xf000
#define PCNET_BCNT_MASK 0x0fff
/* TMD2 in SWSTYLE 2 (the 16-bit style's TMD3 is its upper half). */
#define PCNET_TMD2_BUFF 0x80000000u
#define PCNET_TMD2_UFLO 0x40000000u

/* SWSTYLE 2 receive descriptor: RMD0 buffer address, RMD1 BCNT and
 * status, RMD2 MCNT, RMD3 user. */
struct pcnet_rx_desc32 {
    uint32_t rbadr;
    uint16_t bcnt;
    uint16_t status;
    uint32_t mcnt;
    uint32_t user;
};
/* SWSTYLE 2 transmit descriptor: TMD0 address, TMD1 BCNT and status,
 * TMD2 error flags, TMD3 user. */
struct pcnet_tx_desc32 {
    uint32_t tbadr;
    uint16_t bcnt;
    uint16_t status;
    uint32_t misc;
    uint32_t user;
};
/* Initialization block with SSIZE32 = 1 (28 bytes). */
struct pcnet_init_block32 {
    uint16_t mode;                      /* CSR15 */
    uint8_t rlen;                       /* 7:4: log2 of the RX ring length */
    uint8_t tlen;                       /* 7:4: log2 of the TX ring length */
    uint8_t padr[6];                    /* physical address */
    uint16_t reserved;
    uint32_t ladrf[2];                  /* logical address filter */
    uint32_t rdra;                      /* receive ring base */
    uint32_t tdra;                      /* transmit ring base */
};

#endif /* HW_PCNET_REGS_H */
