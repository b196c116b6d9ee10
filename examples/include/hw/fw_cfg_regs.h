/* SPDX-License-Identifier: MIT */
/*
 * QEMU's firmware configuration interface (fw_cfg) on x86's ports: the
 * traditional interface (selector and data ports), the DMA interface
 * (its address register and access descriptor), the item keys and the
 * file directory's layout, as QEMU's docs/specs/fw_cfg.rst specifies
 * them and SeaBIOS (src/fw/paravirt.c) reads them. The one copy shared by the model
 * (examples/vmm/devices/fw_cfg.c), the board and the tests.
 *
 * Freestanding: constants only.
 */
#ifndef HW_FW_CFG_REGS_H
#define HW_FW_CFG_REGS_H

/* ---- ports, offsets from LCVMM_FW_CFG_PORT ------------------------------ */
#define FW_CFG_PORT_SEL   0       /* 16-bit write: select an item */
#define FW_CFG_PORT_DATA  1       /* 8-bit read: the next byte of it */
/* The DMA address register, 64 bits big-endian in two 32-bit ports: a
 * write of the high half holds it, a write of the low half starts the
 * transfer of the access descriptor at that guest-physical address.
 * Reads return the signature FW_CFG_DMA_SIGNATURE, byte 0 first. */
#define FW_CFG_PORT_DMA_HI 4
#define FW_CFG_PORT_DMA_LO 8
#define FW_CFG_PORTS_DMA   12     /* the ports with the DMA interface */
#define FW_CFG_DMA_SIGNATURE "QEMU CFG"

/* ---- item keys ---------------------------------------------------------- */
#define FW_CFG_SIGNATURE  0x0000  /* "QEMU" */
#define FW_CFG_ID         0x0001  /* feature bits, below */
#define FW_CFG_NB_CPUS    0x0005
#define FW_CFG_BOOT_MENU  0x000e
#define FW_CFG_MAX_CPUS   0x000f
#define FW_CFG_FILE_DIR   0x0019  /* count, then one entry per file */
#define FW_CFG_FILE_FIRST 0x0020  /* the first key given to a file */

/* ---- FW_CFG_ID's bits --------------------------------------------------- */
#define FW_CFG_ID_TRADITIONAL 0x1   /* the selector and data ports */
#define FW_CFG_ID_DMA         0x2   /* the DMA interface */

/* ---- the DMA access descriptor: 16 bytes, all fields big-endian ---------- */
#define FW_CFG_DMA_OFF_CONTROL 0    /* 32 bits: the bits below; select key
                                     * in bits 31..16 */
#define FW_CFG_DMA_OFF_LENGTH  4    /* 32 bits */
#define FW_CFG_DMA_OFF_ADDRESS 8    /* 64 bits, guest-physical */
#define FW_CFG_DMA_DESC_SIZE   16
#define FW_CFG_DMA_CTL_ERROR  0x01  /* set by the device: the transfer failed */
#define FW_CFG_DMA_CTL_READ   0x02
#define FW_CFG_DMA_CTL_SKIP   0x04
#define FW_CFG_DMA_CTL_SELECT 0x08
#define FW_CFG_DMA_CTL_WRITE  0x10

/* A file directory entry's name field (NUL-terminated within it). */
#define FW_CFG_NAME_MAX   56

#endif /* HW_FW_CFG_REGS_H */
