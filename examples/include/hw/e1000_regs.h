/* SPDX-License-Identifier: MIT */
/*
 * Intel 82540EM (8086:100E) registers, bits and legacy descriptors: the one
 * copy shared by the device model (examples/vmm/devices/e1000.c), the
 * guest driver (examples/guests/e1000.c) and the tests.
 *
 * Names and numbers from the PCI/PCI-X Family of Gigabit Ethernet
 * Controllers Software Developer's Manual (8254x SDM, 317453): section 13
 * ("Register Descriptions", table 13-2 for the offsets) and 3.2/3.3
 * (legacy receive and transmit descriptors). A register is E1000_<mnemonic>,
 * a bit of it E1000_<mnemonic>_<bit name>.
 *
 * Freestanding: constants and <stdint.h> types only, so the guests
 * (-ffreestanding, no libc) can include it.
 */
#ifndef HW_E1000_REGS_H
#define HW_E1000_REGS_H

#include <stdint.h>

#define E1000_VENDOR_ID 0x8086
#define E1000_DEVICE_ID 0x100e          /* 82540EM desktop */
#define E1000_BAR_SIZE  0x20000u        /* BAR0: 128 KiB of memory */

/* ---- general (13.4) --------------------------------------------------- */
#define E1000_CTRL     0x0000           /* 13.4.1 device control */
#define E1000_STATUS   0x0008           /* 13.4.2 device status */
#define E1000_EECD     0x0010           /* 13.4.3 EEPROM/flash control */
#define E1000_EERD     0x0014           /* 13.4.4 EEPROM read */
#define E1000_CTRL_EXT 0x0018           /* 13.4.6 extended device control */
#define E1000_MDIC     0x0020           /* 13.4.7 MDI control */
#define E1000_FCAL     0x0028           /* flow control address low */
#define E1000_FCAH     0x002c           /* flow control address high */
#define E1000_FCT      0x0030           /* flow control type */
#define E1000_VET      0x0038           /* VLAN ether type */
#define E1000_ICR      0x00c0           /* 13.4.17 interrupt cause read */
#define E1000_ITR      0x00c4           /* 13.4.18 interrupt throttling */
#define E1000_ICS      0x00c8           /* 13.4.19 interrupt cause set */
#define E1000_IMS      0x00d0           /* 13.4.20 interrupt mask set/read */
#define E1000_IMC      0x00d8           /* 13.4.21 interrupt mask clear */
#define E1000_RCTL     0x0100           /* 13.4.22 receive control */
#define E1000_FCTTV    0x0170           /* flow control transmit timer */
#define E1000_TXCW     0x0178           /* transmit config word */
#define E1000_RXCW     0x0180           /* receive config word */
#define E1000_TCTL     0x0400           /* 13.4.33 transmit control */
#define E1000_TIPG     0x0410           /* 13.4.34 transmit IPG */
#define E1000_LEDCTL   0x0e00           /* LED control */
#define E1000_PBA      0x1000           /* packet buffer allocation */

/* ---- receive ring (13.4.27-13.4.31) ----------------------------------- */
#define E1000_RDBAL    0x2800           /* descriptor base low */
#define E1000_RDBAH    0x2804           /* descriptor base high */
#define E1000_RDLEN    0x2808           /* ring length, bytes (128-aligned) */
#define E1000_RDH      0x2810           /* head */
#define E1000_RDT      0x2818           /* tail */
#define E1000_RDTR     0x2820           /* delay timer */
#define E1000_RXDCTL   0x2828           /* descriptor control */
#define E1000_RADV     0x282c           /* absolute delay timer */
#define E1000_RSRPD    0x2c00           /* small packet detect */

/* ---- transmit ring (13.4.38-13.4.42) ---------------------------------- */
#define E1000_TDBAL    0x3800
#define E1000_TDBAH    0x3804
#define E1000_TDLEN    0x3808
#define E1000_TDH      0x3810
#define E1000_TDT      0x3818
#define E1000_TIDV     0x3820           /* interrupt delay value */
#define E1000_TXDCTL   0x3828
#define E1000_TADV     0x382c           /* absolute interrupt delay */

/* ---- statistics (13.7), 0x4000-0x40FF, clear on read ------------------- */
#define E1000_STATS_BASE 0x4000
#define E1000_STATS_LEN  0x100
#define E1000_MPC      0x4010           /* missed packets */
#define E1000_GPRC     0x4074           /* good packets received */
#define E1000_GPTC     0x4080           /* good packets transmitted */
#define E1000_GORCL    0x4088           /* good octets received, low */
#define E1000_GOTCL    0x4090           /* good octets transmitted, low */
#define E1000_TPR      0x40d0           /* total packets received */
#define E1000_TPT      0x40d4           /* total packets transmitted */

/* ---- filters and wakeup (13.5, 13.6) ----------------------------------- */
#define E1000_RXCSUM   0x5000           /* receive checksum control */
#define E1000_MTA      0x5200           /* multicast table, 128 dwords */
#define E1000_MTA_LEN  0x200
#define E1000_RAL(i)   (0x5400 + 8 * (i))   /* receive address low, 0-15 */
#define E1000_RAH(i)   (0x5404 + 8 * (i))   /* receive address high */
#define E1000_RA_LEN   0x80
#define E1000_VFTA     0x5600           /* VLAN filter table, 128 dwords */
#define E1000_VFTA_LEN 0x200
#define E1000_WUC      0x5800           /* wakeup control */
#define E1000_WUFC     0x5808           /* wakeup filter control */
#define E1000_MANC     0x5820           /* management control */
#define E1000_REG_END  0x6000           /* the register space the model maps */

/* ---- bits -------------------------------------------------------------- */
#define E1000_CTRL_FD         0x00000001u   /* full duplex */
#define E1000_CTRL_ASDE       0x00000020u   /* auto-speed detection */
#define E1000_CTRL_SLU        0x00000040u   /* set link up */
#define E1000_CTRL_SPEED_1000 0x00000200u
#define E1000_CTRL_RST        0x04000000u   /* device reset, self-clearing */
#define E1000_CTRL_PHY_RST    0x80000000u

#define E1000_STATUS_FD        0x00000001u
#define E1000_STATUS_LU        0x00000002u  /* link up */
#define E1000_STATUS_SPEED_1000 0x00000080u
#define E1000_STATUS_ASDV_1000 0x00000200u

#define E1000_EECD_SK   0x001u          /* Microwire clock */
#define E1000_EECD_CS   0x002u          /* chip select */
#define E1000_EECD_DI   0x004u          /* data in (to the EEPROM) */
#define E1000_EECD_DO   0x008u          /* data out (from the EEPROM) */
#define E1000_EECD_FWE  0x030u          /* flash write enable */
#define E1000_EECD_REQ  0x040u          /* request access */
#define E1000_EECD_GNT  0x080u          /* access granted */
#define E1000_EECD_PRES 0x100u          /* EEPROM present */

#define E1000_EERD_START      0x01u     /* 82540EM layout */
#define E1000_EERD_DONE       0x10u
#define E1000_EERD_ADDR_SHIFT 8
#define E1000_EERD_DATA_SHIFT 16

#define E1000_MDIC_REGADD_SHIFT 16
#define E1000_MDIC_PHYADD_SHIFT 21
#define E1000_MDIC_OP_WRITE 0x04000000u
#define E1000_MDIC_OP_READ  0x08000000u
#define E1000_MDIC_READY    0x10000000u
#define E1000_MDIC_INT_EN   0x20000000u
#define E1000_MDIC_ERROR    0x40000000u

/* Interrupt causes: ICR, ICS, IMS and IMC share the layout (13.4.17). */
#define E1000_ICR_TXDW   0x00000001u    /* transmit descriptor written back */
#define E1000_ICR_TXQE   0x00000002u    /* transmit queue empty */
#define E1000_ICR_LSC    0x00000004u    /* link status change */
#define E1000_ICR_RXDMT0 0x00000010u    /* receive descriptors minimum */
#define E1000_ICR_RXO    0x00000040u    /* receiver overrun */
#define E1000_ICR_RXT0   0x00000080u    /* receiver timer (frame received) */
#define E1000_ICR_MDAC   0x00000200u    /* MDI access complete */

#define E1000_RCTL_EN          0x00000002u
#define E1000_RCTL_UPE         0x00000008u  /* unicast promiscuous */
#define E1000_RCTL_MPE         0x00000010u  /* multicast promiscuous */
#define E1000_RCTL_RDMTS_SHIFT 8
#define E1000_RCTL_MO_SHIFT    12
#define E1000_RCTL_BAM         0x00008000u  /* accept broadcast */
#define E1000_RCTL_BSIZE_SHIFT 16
#define E1000_RCTL_BSIZE(x)    ((uint32_t)(x) << E1000_RCTL_BSIZE_SHIFT)
#define E1000_RCTL_BSEX        0x02000000u  /* buffer size extension */
#define E1000_RCTL_SECRC       0x04000000u  /* strip the Ethernet CRC */

#define E1000_TCTL_EN      0x00000002u
#define E1000_TCTL_PSP     0x00000008u      /* pad short packets */
#define E1000_TCTL_CT(x)   ((uint32_t)(x) << 4)   /* collision threshold */
#define E1000_TCTL_COLD(x) ((uint32_t)(x) << 12)  /* collision distance */

#define E1000_RAH_AV 0x80000000u            /* address valid */

/* ---- legacy descriptors (3.2.3, 3.3.3), 16 bytes each ------------------ */
#define E1000_DESC_SIZE 16
#define E1000_RING_ALIGN 128                /* RDLEN/TDLEN granule */

struct e1000_rx_desc {
    uint64_t addr;
    uint16_t length;
    uint16_t csum;
    uint8_t status;                         /* E1000_RXD_STA_* */
    uint8_t errors;
    uint16_t special;
};
#define E1000_RXD_STA_DD   0x01u            /* descriptor done */
#define E1000_RXD_STA_EOP  0x02u            /* end of packet */
#define E1000_RXD_STA_IXSM 0x04u            /* ignore checksum indication */

struct e1000_tx_desc {
    uint64_t addr;
    uint16_t length;
    uint8_t cso;
    uint8_t cmd;                            /* E1000_TXD_CMD_* */
    uint8_t status;                         /* E1000_TXD_STA_* */
    uint8_t css;
    uint16_t special;
};
/* CMD (legacy) and DCMD (extended) share byte 11. */
#define E1000_TXD_CMD_EOP  0x01u
#define E1000_TXD_CMD_IFCS 0x02u            /* insert FCS */
#define E1000_TXD_CMD_RS   0x08u            /* report status */
#define E1000_TXD_CMD_DEXT 0x20u            /* extended descriptor */
#define E1000_TXD_STA_DD   0x01u

#endif /* HW_E1000_REGS_H */
