/* SPDX-License-Identifier: MIT */
/*
 * QEMU's firmware configuration interface (fw_cfg), its traditional
 * (non-DMA) port interface: the item keys and the file directory's
 * layout, as QEMU's docs/specs/fw_cfg.rst specifies them and SeaBIOS
 * (src/fw/paravirt.c) reads them. The one copy shared by the model
 * (examples/vmm/devices/fw_cfg.c), the board and the tests.
 *
 * Freestanding: constants only.
 */
#ifndef HW_FW_CFG_REGS_H
#define HW_FW_CFG_REGS_H

/* ---- ports, offsets from LCVMM_FW_CFG_PORT ------------------------------ */
#define FW_CFG_PORT_SEL   0       /* 16-bit write: select an item */
#define FW_CFG_PORT_DATA  1       /* 8-bit read: the next byte of it */

/* ---- item keys ---------------------------------------------------------- */
#define FW_CFG_SIGNATURE  0x0000  /* "QEMU" */
#define FW_CFG_ID         0x0001  /* feature bits: 1 = traditional only */
#define FW_CFG_NB_CPUS    0x0005
#define FW_CFG_BOOT_MENU  0x000e
#define FW_CFG_MAX_CPUS   0x000f
#define FW_CFG_FILE_DIR   0x0019  /* count, then one entry per file */
#define FW_CFG_FILE_FIRST 0x0020  /* the first key given to a file */

/* A file directory entry's name field (NUL-terminated within it). */
#define FW_CFG_NAME_MAX   56

#endif /* HW_FW_CFG_REGS_H */
