/* examples/guests/boot/prot32.S: the 32-bit protected-mode half of the
 * boot stub (the PAE and BIOS guests). entry32.S arrives here with our
 * GDT and stack loaded; boot32_main (boot32.c) does the rest. Also the
 * 32-bit exception entry stubs (these guests take no interrupts). */
#include "boot.h"

    .text
    .code32
    .globl boot_mode_entry
boot_mode_entry:
    call boot32_main
1:  hlt                             /* boot32_main does not return */
    jmp 1b

.macro ISR32 vec
    .p2align 3
isr32_\vec:
    .if (\vec == 8) || (\vec >= 10 && \vec <= 14) || (\vec == 17) || (\vec == 21) || (\vec == 29) || (\vec == 30)
    .else
    pushl $0
    .endif
    pushl $\vec
    jmp isr32_common
.endm
.macro ISR32_ADDR vec
    .long isr32_\vec
.endm

    .altmacro
    .set v, 0
    .rept 32
    ISR32 %v
    .set v, v + 1
    .endr

/* Stack: error code, vector, then EIP/CS/EFLAGS from the CPU.
 * isr32_dispatch reports the exception and ends the VM, except for the
 * one it recovers from (boot32.c: CR0.PG refused), after which we
 * return to the EIP it set. The return is to the same privilege level
 * and code segment, done without IRET: the software KVM of this
 * project's machines cannot emulate a 32-bit IRET ("emulation failure").
 * Not reentrant; nothing nests here (interrupts stay off). */
isr32_common:
    pushal
    cld
    pushl %esp                      /* struct isr32_frame * */
    call isr32_dispatch
    addl $4, %esp
    popal
    addl $8, %esp                   /* vector and error code */
    popl isr32_resume_eip           /* EIP */
    addl $4, %esp                   /* CS: unchanged (SEL_CODE32) */
    popfl                           /* EFLAGS */
    jmp *isr32_resume_eip

    .bss
    .p2align 2
isr32_resume_eip:
    .skip 4

    .section .rodata
    .p2align 2
    .globl isr32_stubs
isr32_stubs:
    .set v, 0
    .rept 32
    ISR32_ADDR %v
    .set v, v + 1
    .endr
    .noaltmacro

    .section .note.GNU-stack, "", @progbits
