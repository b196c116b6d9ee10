/* SPDX-License-Identifier: MIT */
/*
 * The PC's CMOS/RTC (Motorola MC146818A) registers and bits, and the PC's
 * additions to its RAM that firmware reads: the one copy shared by the
 * model (examples/vmm/devices/cmos.c) and the tests.
 *
 * Names from the MC146818A datasheet (registers 0x00-0x0D); the memory
 * sizes and the century byte are the IBM PC/AT's CMOS map, the CPU count
 * at 0x5F QEMU's (SeaBIOS reads it there).
 *
 * Freestanding: constants only.
 */
#ifndef HW_MC146818_REGS_H
#define HW_MC146818_REGS_H

/* ---- ports: index (bit 7 masks NMI), then data ------------------------- */
#define CMOS_INDEX       0      /* offset from LCVMM_CMOS_PORT */
#define CMOS_DATA        1
#define CMOS_INDEX_NMI   0x80

/* ---- the clock and its status registers (datasheet) -------------------- */
#define CMOS_SECONDS     0x00
#define CMOS_MINUTES     0x02
#define CMOS_HOURS       0x04
#define CMOS_WEEKDAY     0x06
#define CMOS_DAY         0x07
#define CMOS_MONTH       0x08
#define CMOS_YEAR        0x09
#define CMOS_STATUS_A    0x0a
#define CMOS_STATUS_B    0x0b
#define CMOS_STATUS_C    0x0c
#define CMOS_STATUS_D    0x0d
#define CMOS_RTC_B_24H   0x02   /* status B: 24-hour mode */
#define CMOS_RTC_B_BIN   0x04   /* status B: binary, not BCD */
#define CMOS_RTC_D_VRT   0x80   /* status D: valid RAM and time */

/* ---- the PC's CMOS RAM -------------------------------------------------- */
#define CMOS_BASEMEM_LO  0x15    /* KiB below 1 MiB */
#define CMOS_EXTMEM_LO   0x17    /* KiB from 1 MiB, at most 65535 */
#define CMOS_EXTMEM2_LO  0x30    /* the same again */
#define CMOS_CENTURY     0x32
#define CMOS_HIGHMEM_LO  0x34    /* 64 KiB units above 16 MiB */
#define CMOS_NR_CPUS_M1  0x5f    /* QEMU: CPUs - 1 */

#endif /* HW_MC146818_REGS_H */
