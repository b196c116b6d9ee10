/* SPDX-License-Identifier: MIT */
/*
 * The platform of the reference VMM as its guests see it: where each
 * device sits and what the exit status means. The one copy shared by the
 * VMM (examples/vmm), the guests (examples/guests, in C and in assembly)
 * and the tests; docs/vmm.md ("The platform a guest sees") describes it.
 *
 * Freestanding: macros only (and one enum outside assembly), so the
 * guests (-ffreestanding, no libc) and .S files can include it.
 */
#ifndef LCVMM_PLATFORM_H
#define LCVMM_PLATFORM_H

/* ---- legacy ports ------------------------------------------------------ */
#define LCVMM_PIC1_PORT       0x20      /* 8259A master: command, data */
#define LCVMM_PIC2_PORT       0xA0      /* 8259A slave */
#define LCVMM_PIC_PORTS       2
#define LCVMM_POST_PORT       0x80      /* POST codes / delay port: ignored */
#define LCVMM_DELAY_PORT      0xED      /* the other delay port: ignored */
#define LCVMM_DEBUG_EXIT_PORT 0xF4      /* a write ends the VM (below) */
#define LCVMM_DEBUG_EXIT_PORTS 4        /* takes 1-, 2- and 4-byte writes */
#define LCVMM_COM1_PORT       0x3F8     /* 16550 UART, the console */
#define LCVMM_UART_PORTS      8
#define LCVMM_PCI_CONFIG_ADDR 0xCF8     /* PCI configuration mechanism #1 */
#define LCVMM_PCI_CONFIG_DATA 0xCFC
#define LCVMM_PCI_CONFIG_PORTS 8        /* 0xCF8-0xCFF */
/* The chipset's reset control register, a byte inside that range (PIIX3
 * and ICH "RC"): writing bit 2 (with bit 1, a hard reset: 0x06) resets
 * the machine; lcvmm ends the VM then, or reboots it with --reboot. */
#define LCVMM_RESET_CONTROL_PORT 0xCF9
#define LCVMM_RESET_CONTROL_HARD 0x06

/* ---- the firmware platform: present only with --bios -------------------- */
/* What SeaBIOS expects of a PC (docs/vmm.md, "Real firmware"); multiboot
 * guests never see these ports decoded. */
#define LCVMM_KBD_DATA_PORT   0x60      /* i8042 data */
#define LCVMM_KBD_CMD_PORT    0x64      /* i8042 status / command */
#define LCVMM_CMOS_PORT       0x70      /* MC146818 CMOS/RTC: index, data */
#define LCVMM_CMOS_PORTS      2
#define LCVMM_SYSCTL_PORT     0x92      /* system control port A: A20, reset */
#define LCVMM_DEBUGCON_PORT   0x402     /* QEMU-style debug console */
#define LCVMM_FW_CFG_PORT     0x510     /* fw_cfg: selector, data, and */
#define LCVMM_FW_CFG_PORTS    12        /* DMA address at 0x514 and 0x518 */

/* ---- PCI: bus 0, function 0 of each device ------------------------------ */
#define LCVMM_PCI_HOST_DEV    0         /* i440FX-style host bridge */
#define LCVMM_NIC_PCI_DEV     3         /* the NIC (pcnet or e1000) */
#define LCVMM_NIC_IRQ         11        /* its INTA#: PIC IRQ / GSI 11 */
/* Where the VMM places BAR0 before the guest moves it (the guests read
 * it from configuration space; these are the firmware's choice). */
#define LCVMM_PCNET_IO_BASE   0xC000    /* 32 bytes of I/O space */
#define LCVMM_E1000_MMIO_BASE 0xFEBC0000u   /* 128 KiB of memory space */

/* ---- memory ------------------------------------------------------------ */
/* Multiboot images load at or above 1 MiB (boot/guest.ld links there). */
#define LCVMM_LOAD_MIN        0x100000u

/* ---- exit status of lcvmm ----------------------------------------------- */
/* A guest that ends the run by writing code C to the debug exit port
 * exits with LCVMM_EXIT_GUEST(C): 0 for C = 0 (success), otherwise
 * (C << 1) | 1 as QEMU's isa-debug-exit (codes 0-127 stay apart), so a
 * guest's failure is always odd and never looks like lcvmm's own statuses
 * below, which are even (the VMM's last stderr line says which way the
 * run ended). */
#define LCVMM_EXIT_GUEST(c)   ((c) == 0 ? 0 : (int)((((c) << 1) | 1) & 0xff))
#ifndef __ASSEMBLER__
enum lcvmm_exit_status {
    LCVMM_EXIT_OK      = 0,     /* guest halted or asked to power off */
    LCVMM_EXIT_ERROR   = 2,     /* VMM error: arguments, image, back end */
    LCVMM_EXIT_CRASH   = 4,     /* guest crashed (triple fault, bad state) */
    LCVMM_EXIT_TIMEOUT = 6,     /* --timeout or --insn-limit reached */
};
#endif

#endif /* LCVMM_PLATFORM_H */
