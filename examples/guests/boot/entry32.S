/* examples/guests/boot/entry32.S: Multiboot header and 32-bit entry.
 *
 * The loader (our VMM or QEMU -kernel) enters at multiboot_entry in
 * 32-bit protected mode with flat CS/DS, paging and interrupts off,
 * EAX = 0x2BADB002 and EBX = the Multiboot information structure
 * (Multiboot Specification 0.6.96, section 3.2). This file is shared by
 * all guests; it keeps the command line, clears .bss, copies the .low
 * section (16-bit code, BIOS guest only) below 1 MiB, loads our GDT and
 * stack and jumps to boot_mode_entry (long64.S or prot32.S). Assembled
 * into either ELF class: the code is .code32 throughout. */
#include "boot.h"

    .section .multiboot, "a"
    .p2align 2
multiboot_header:
    .long MB_HEADER_MAGIC
    .long MB_HEADER_FLAGS
    .long -(MB_HEADER_MAGIC + MB_HEADER_FLAGS)
    /* a.out kludge (flag bit 16): where the flat image goes. */
    .long multiboot_header   /* header_addr: this header's address */
    .long __image_start      /* load_addr: the image's first byte */
    .long __load_end         /* load_end_addr: end of .data */
    .long __bss_end          /* bss_end_addr: loader zeroes up to here */
    .long multiboot_entry    /* entry_addr */

    .section .text.entry, "ax"
    .code32
    .globl multiboot_entry
multiboot_entry:
    cli
    cld
    movl %eax, boot_mb_magic
    movl %ebx, boot_mb_info

    /* Keep the command line before anything else can overwrite it (QEMU
     * puts the information structure at 0x9000, where the BIOS guest's
     * 16-bit code goes). The copy lives in .data, not .bss, so clearing
     * .bss cannot erase it even if a loader put the string there. */
    cmpl $MB_BOOT_MAGIC, %eax
    jne 2f
    testl $MB_INFO_CMDLINE, MB_INFO_FLAGS(%ebx)
    jz 2f
    movl MB_INFO_CMDLINE_PTR(%ebx), %esi
    movl $boot_cmdline, %edi
    movl $BOOT_CMDLINE_MAX - 1, %ecx
1:  lodsb
    testb %al, %al
    jz 2f
    stosb
    loop 1b
2:
    /* Clear .bss (the loader should have; a stub should not rely on it). */
    movl $__bss_start, %edi
    movl $__bss_end, %ecx
    subl %edi, %ecx
    shrl $2, %ecx
    xorl %eax, %eax
    rep stosl

    /* Copy the .low section to its run address (empty for most guests). */
    movl $__low_load, %esi
    movl $__low_start, %edi
    movl $__low_end, %ecx
    subl %edi, %ecx
    rep movsb

    lgdt gdt_desc
    ljmp $SEL_CODE32, $3f
3:  movw $SEL_DATA, %ax
    movw %ax, %ds
    movw %ax, %es
    movw %ax, %ss
    xorw %ax, %ax
    movw %ax, %fs
    movw %ax, %gs
    movl $boot_stack_top, %esp
    xorl %ebp, %ebp
    jmp boot_mode_entry

    .data
    .p2align 3
    .globl gdt
gdt:
    .quad 0                       /* 0x00 null */
    .quad 0x00cf9a000000ffff      /* 0x08 code32: base 0, 4 GiB, D=1 */
    .quad 0x00cf92000000ffff      /* 0x10 data: base 0, 4 GiB, B=1 */
    .quad 0x00af9a000000ffff      /* 0x18 code64: L=1, D=0 */
    .quad 0x00009a000000ffff      /* 0x20 code16: base 0, 64 KiB, D=0 */
    .quad 0x000092000000ffff      /* 0x28 data16: base 0, 64 KiB */
    .quad 0x00cff2000000ffff      /* 0x30 user data, DPL 3 */
    .quad 0x00affa000000ffff      /* 0x38 user code64, DPL 3 */
    .quad 0x00cffa000000ffff      /* 0x40 user code32, DPL 3 */
    .quad 0, 0                    /* 0x48 TSS (filled in by C: the base
                                     is split across the descriptor) */
gdt_end:
    .globl gdt_desc
gdt_desc:
    .word gdt_end - gdt - 1
    .long gdt
    .long 0                       /* upper half of the base for LGDT in
                                     64-bit mode (the base is < 4 GiB) */

    .globl boot_mb_magic, boot_mb_info, boot_cmdline
boot_mb_magic: .long 0
boot_mb_info: .long 0
boot_cmdline: .fill BOOT_CMDLINE_MAX, 1, 0

    .bss
    .p2align 4
    .globl boot_stack_top
boot_stack:
    .skip BOOT_STACK_SIZE
boot_stack_top:

    .section .note.GNU-stack, "", @progbits
