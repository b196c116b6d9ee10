/* SPDX-License-Identifier: MIT */
/*
 * The platform devices of the reference VMM besides the NICs: a 16550
 * UART console and PCI configuration mechanism #1. Pure models, like the
 * NICs: the board (../board.c) puts them on the buses at the addresses of
 * lcvmm/platform.h; the debug exit port and the delay ports are the
 * board's own.
 */
#ifndef VMM_PLATFORM_H
#define VMM_PLATFORM_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* ---- 16550 UART (8 ports) ---------------------------------------------- */

typedef struct uart uart;
/* Characters the guest sends go to `out` (line buffered by the model). */
uart *uart_create(FILE *out);
void uart_destroy(uart *u);
/* offset 0..7; 1-byte accesses (wider ones act on the first byte) */
void uart_access(uart *u, unsigned offset, bool is_write, uint8_t *val);
uint64_t uart_bytes_out(const uart *u);

/* ---- PCI configuration mechanism #1 (CONFIG_ADDRESS, CONFIG_DATA) ------- */

#define PCI_MAX_DEVFN 32          /* bus 0, function 0 of devices 0..31 */

typedef struct pci_bar_info {
    uint32_t size;                /* power of two; 0: no BAR */
    bool is_io;
} pci_bar_info;

typedef struct pci_function_ops {
    void *opaque;
    /* The guest moved BAR0 to `base` (also called once at creation). */
    void (*bar_moved)(void *opaque, uint32_t base);
    /* The command register changed (bit 0 I/O, bit 1 memory, bit 2 bus
     * master). */
    void (*command)(void *opaque, uint16_t cmd);
} pci_function_ops;

/* A write to a device-specific register (0x40..0xFC, dword-aligned
 * `reg`, the merged 32-bit value, already stored for reads). */
typedef void (*pci_cfg_write_fn)(void *opaque, unsigned reg, uint32_t val);

typedef struct pci_bus pci_bus;
pci_bus *pci_create(void);
void pci_destroy(pci_bus *p);
/* Add device `dev` (function 0) with the identity in its first 64 bytes
 * (vendor, device, class, subsystem, interrupt pin...), one BAR, and an
 * interrupt line. -1 if the slot is taken or out of range. */
int pci_add_function(pci_bus *p, unsigned dev, const uint8_t id[64],
                     pci_bar_info bar0, uint32_t bar0_base, uint8_t irq_line,
                     const pci_function_ops *ops);
/* Port access at CONFIG_ADDRESS + offset (offset 0..7), size 1, 2 or 4. */
void pci_access(pci_bus *p, unsigned offset, unsigned size, bool is_write,
                uint32_t *val);
/* Make the device-specific registers of `dev` writable, calling `fn`
 * after each write (the host bridge's PAM registers). -1: no such dev. */
int pci_set_cfg_hook(pci_bus *p, unsigned dev, pci_cfg_write_fn fn,
                     void *opaque);
/* Give `dev` an expansion ROM BAR of `size` bytes (a power of two, at
 * least 2 KiB); `fn` hears every write (address, decode enable bit).
 * -1: no such device or a bad size. */
typedef void (*pci_rom_fn)(void *opaque, uint32_t addr, bool enabled);
int pci_set_rom(pci_bus *p, unsigned dev, uint32_t size, pci_rom_fn fn,
                void *opaque);
/* The Status register bits `dev` raised (such as Received Master Abort,
 * bit 13, after a DMA that reached nothing), clearing those set in `w1c`
 * (a guest's write of 1s there, PCI 3.0 6.2.3). Without a hook status
 * reads 0. -1: no such device. */
typedef uint16_t (*pci_status_fn)(void *opaque, uint16_t w1c);
int pci_set_status_hook(pci_bus *p, unsigned dev, pci_status_fn fn,
                        void *opaque);
/* Is decoding of BAR0 of `dev` enabled (command bits)? */
bool pci_decodes(const pci_bus *p, unsigned dev);

#endif /* VMM_PLATFORM_H */
