/* examples/guests/boot/boot.h: constants shared by the boot stub's
 * assembly and C (GDT selectors, Multiboot, memory layout). */
#ifndef BOOT_H
#define BOOT_H

/* Multiboot v1 (Multiboot Specification 0.6.96, section 3.1). */
#define MB_HEADER_MAGIC 0x1BADB002
#define MB_FLAG_PAGE_ALIGN (1 << 0)   /* modules page aligned */
#define MB_FLAG_MEMINFO (1 << 1)      /* mem_lower/mem_upper wanted */
#define MB_FLAG_AOUT_KLUDGE (1 << 16) /* header carries load addresses */
#define MB_HEADER_FLAGS (MB_FLAG_PAGE_ALIGN | MB_FLAG_MEMINFO | MB_FLAG_AOUT_KLUDGE)
#define MB_BOOT_MAGIC 0x2BADB002      /* EAX at entry */
#define MB_INFO_CMDLINE (1 << 2)      /* mbi.flags bit 2: cmdline valid */
#define MB_INFO_FLAGS 0               /* mbi offsets */
#define MB_INFO_CMDLINE_PTR 16

/* GDT selectors (entry32.S builds the table in this order). */
#define SEL_CODE32 0x08   /* flat 4 GiB, 32-bit, DPL 0 */
#define SEL_DATA 0x10     /* flat 4 GiB data, DPL 0 */
#define SEL_CODE64 0x18   /* long mode, DPL 0 */
#define SEL_CODE16 0x20   /* base 0, limit 64 KiB, 16-bit, DPL 0 */
#define SEL_DATA16 0x28   /* base 0, limit 64 KiB, 16-bit data */
#define SEL_UDATA 0x30    /* flat data, DPL 3 (use with RPL 3: 0x33) */
#define SEL_UCODE64 0x38  /* long mode, DPL 3 (0x3b) */
#define SEL_UCODE32 0x40  /* flat 32-bit, DPL 3 (0x43) */
#define SEL_TSS 0x48      /* 16-byte TSS descriptor in long mode */
#define GDT_ENTRIES 11

#define BOOT_CMDLINE_MAX 256
#define BOOT_STACK_SIZE 16384

/* Real-mode layout for the BIOS guest: the .low section (16-bit code and
 * data) is copied to LOW_BASE; the real-mode stack grows down from
 * LOW_STACK_TOP. */
#define LOW_BASE 0x8000
#define LOW_STACK_TOP 0x7000

/* IDT vectors: exceptions 0-31, PIC IRQs remapped to 0x20-0x2f. */
#define IRQ_VECTOR_BASE 0x20
#define IDT_STUBS 48

#endif
