/* SPDX-License-Identifier: MIT */
/*
 * The PC platform devices real firmware expects (SeaBIOS, docs/vmm.md
 * "Real firmware"): the MC146818 CMOS/RTC, QEMU's firmware configuration
 * interface (fw_cfg) and a minimal i8042 keyboard controller (their
 * registers: ../../include/hw/). Pure models
 * like the NICs: the board (../fw_board.c) puts them on the port bus.
 * Every register value is the guest's and hostile: no value makes a
 * model read or write outside its own state.
 */
#ifndef VMM_FWDEV_H
#define VMM_FWDEV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "dev.h"
#include "hw/fw_cfg_regs.h"
#include "hw/mc146818_regs.h"

/* ---- CMOS/RTC (ports 0x70 index, 0x71 data) ----------------------------- */

typedef struct cmos cmos;
/* The memory-size bytes describe `ram` bytes of RAM; `ncpus` goes to
 * 0x5F as QEMU's CMOS has it. `now` gives the wall clock (NULL: time()),
 * so tests are deterministic. */
cmos *cmos_create(uint64_t ram, unsigned ncpus, time_t (*now)(void));
void cmos_destroy(cmos *c);
/* offset 0 (index, bit 7 masks NMI) or 1 (data); bytes */
void cmos_access(cmos *c, unsigned offset, bool is_write, uint8_t *val);

/* ---- fw_cfg (QEMU docs/specs/fw_cfg.rst): selector 0x510, data 0x511, --
 * ---- DMA address 0x514 (high half) and 0x518 (low half) ----------------- */

/* The model's limits (keys and the file layout: hw/fw_cfg_regs.h). */
#define FW_CFG_MAX_ITEMS  32

typedef struct fw_cfg fw_cfg;
/* `dma` NULL: the traditional interface only (FW_CFG_ID says so, the DMA
 * ports read as all ones and ignore writes), as QEMU's
 * fw_cfg.dma_enabled=off. Else transfers copy through `dma`, which the
 * model keeps (it must outlive the model). */
fw_cfg *fw_cfg_create(const vm_dma *dma);
void fw_cfg_destroy(fw_cfg *f);
/* Add an item under `key` (copied); 0, or -1 (full, taken, too large). */
int fw_cfg_add(fw_cfg *f, uint16_t key, const void *data, size_t len);
/* Add a named file (listed in FW_CFG_FILE_DIR); 0 or -1. */
int fw_cfg_add_file(fw_cfg *f, const char *name, const void *data,
                    size_t len);
/* offset 0..FW_CFG_PORTS_DMA-1 from 0x510, size 1, 2 or 4. A write of the
 * DMA address's low half runs the transfer before it returns. */
void fw_cfg_access(fw_cfg *f, unsigned offset, unsigned size, bool is_write,
                   uint32_t *val);
/* Item bytes the guest read, through the data port and by DMA. */
uint64_t fw_cfg_bytes_read(const fw_cfg *f);
/* DMA transfers started, and those that failed: a descriptor, buffer or
 * control field not in guest RAM, or a write (no item is writable). */
uint64_t fw_cfg_dma_transfers(const fw_cfg *f);
uint64_t fw_cfg_dma_errors(const fw_cfg *f);
/* The key selected now, or -1 (none, or one that does not exist). */
int fw_cfg_selected(const fw_cfg *f);
/* The selector of the file `name`, or -1. */
int fw_cfg_find_file(const fw_cfg *f, const char *name);

/* ---- i8042 (ports 0x60 data, 0x64 status/command) ----------------------- */

typedef struct i8042 i8042;
/* `reset` is called when the guest pulses the reset line (command 0xFE). */
i8042 *i8042_create(void (*reset)(void *), void *opaque);
void i8042_destroy(i8042 *k);
/* offset 0 (0x60) or 4 (0x64); bytes */
void i8042_access(i8042 *k, unsigned offset, bool is_write, uint8_t *val);

#endif /* VMM_FWDEV_H */
