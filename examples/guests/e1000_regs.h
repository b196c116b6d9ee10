/* examples/guests/e1000_regs.h: Intel 82540EM registers used by the
 * guests. Offsets and bits from the PCI/PCI-X Family of Gigabit Ethernet
 * Controllers Software Developer's Manual (8254x SDM, 317453), section
 * 13 ("Register Descriptions") and 3.2/3.3 (legacy descriptors). */
#ifndef GUEST_E1000_REGS_H
#define GUEST_E1000_REGS_H

#include <stdint.h>

#define E1000_VENDOR 0x8086
#define E1000_DEVICE 0x100e   /* 82540EM */

#define E1000_CTRL 0x0000     /* 13.4.1 device control */
#define CTRL_ASDE (1u << 5)   /* auto speed detection */
#define CTRL_SLU (1u << 6)    /* set link up */
#define CTRL_RST (1u << 26)   /* device reset, self-clearing */
#define E1000_STATUS 0x0008   /* 13.4.2 device status */
#define STATUS_LU (1u << 1)   /* link up */
#define E1000_EERD 0x0014     /* 13.4.4 EEPROM read (82540EM layout) */
#define EERD_START (1u << 0)
#define EERD_DONE (1u << 4)
#define EERD_ADDR_SHIFT 8
#define EERD_DATA_SHIFT 16
#define E1000_ICR 0x00c0      /* 13.4.17 interrupt cause, read to clear */
#define E1000_ITR 0x00c4      /* interrupt throttling */
#define E1000_IMS 0x00d0      /* 13.4.20 interrupt mask set */
#define E1000_IMC 0x00d8      /* 13.4.21 interrupt mask clear */
#define ICR_TXDW (1u << 0)    /* transmit descriptor written back */
#define ICR_LSC (1u << 2)     /* link status change */
#define ICR_RXT0 (1u << 7)    /* receiver timer (frame received) */
#define E1000_RCTL 0x0100     /* 13.4.22 receive control */
#define RCTL_EN (1u << 1)
#define RCTL_BAM (1u << 15)   /* accept broadcast */
#define RCTL_BSIZE_2048 (0u << 16)
#define RCTL_SECRC (1u << 26) /* strip the Ethernet CRC */
#define E1000_TCTL 0x0400     /* 13.4.33 transmit control */
#define TCTL_EN (1u << 1)
#define TCTL_PSP (1u << 3)    /* pad short packets */
#define TCTL_CT(x) ((uint32_t)(x) << 4)     /* collision threshold */
#define TCTL_COLD(x) ((uint32_t)(x) << 12)  /* collision distance */
#define E1000_TIPG 0x0410     /* 13.4.34 transmit IPG */
#define E1000_RDBAL 0x2800    /* 13.4.27 RX descriptor base low */
#define E1000_RDBAH 0x2804    /* RX descriptor base high */
#define E1000_RDLEN 0x2808    /* RX ring length in bytes (128-aligned) */
#define E1000_RDH 0x2810
#define E1000_RDT 0x2818
#define E1000_RDTR 0x2820     /* RX delay timer */
#define E1000_RADV 0x282c     /* RX absolute delay */
#define E1000_TDBAL 0x3800    /* 13.4.38 TX descriptor base low */
#define E1000_TDBAH 0x3804
#define E1000_TDLEN 0x3808
#define E1000_TDH 0x3810
#define E1000_TDT 0x3818
#define E1000_MTA 0x5200      /* 13.5.1 multicast table, 128 dwords */
#define E1000_RAL0 0x5400     /* 13.5.2 receive address low */
#define E1000_RAH0 0x5404     /* receive address high, bit 31 AV */
#define RAH_AV (1u << 31)

/* Legacy receive descriptor (3.2.3). */
struct e1000_rx_desc {
    uint64_t addr;
    uint16_t length;
    uint16_t csum;
    uint8_t status;    /* bit 0 DD, bit 1 EOP */
    uint8_t errors;
    uint16_t special;
};
#define RXD_DD 0x01
#define RXD_EOP 0x02

/* Legacy transmit descriptor (3.3.3). */
struct e1000_tx_desc {
    uint64_t addr;
    uint16_t length;
    uint8_t cso;
    uint8_t cmd;       /* bit 0 EOP, bit 1 IFCS, bit 3 RS */
    uint8_t status;    /* bit 0 DD */
    uint8_t css;
    uint16_t special;
};
#define TXD_CMD_EOP 0x01
#define TXD_CMD_IFCS 0x02
#define TXD_CMD_RS 0x08
#define TXD_DD 0x01

#endif
