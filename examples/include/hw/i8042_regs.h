/* SPDX-License-Identifier: MIT */
/*
 * The PC keyboard controller (Intel 8042 as the IBM PC/AT uses it): its
 * ports and status register bits. The one copy shared by the model
 * (examples/vmm/devices/i8042.c) and the tests.
 *
 * Freestanding: constants only.
 */
#ifndef HW_I8042_REGS_H
#define HW_I8042_REGS_H

/* ---- ports, offsets from LCVMM_KBD_DATA_PORT ---------------------------- */
#define I8042_DATA        0       /* 0x60: data, both directions */
#define I8042_STATUS_CMD  4       /* 0x64: status (read), command (write) */

/* ---- status register ---------------------------------------------------- */
#define I8042_ST_OBF      0x01    /* output buffer full */
#define I8042_ST_SYS      0x04    /* system flag (self test passed) */
#define I8042_ST_AUX      0x20    /* the output byte is the mouse's */

#endif /* HW_I8042_REGS_H */
