/* examples/guests/smp/ap_boot.S: how an application processor gets from
 * the start-up IPI to 64-bit C code.
 *
 * A STARTUP IPI with vector V starts the AP in real mode at V:0000, that
 * is at physical V << 12 (Intel SDM vol. 3A, 8.4.4 "MP Initialization
 * Example" and 10.6.1 "Interrupt Command Register"): the trampoline must
 * sit on a page boundary below 1 MiB. It is the first thing of the .low
 * section, which entry32.S copied to LOW_BASE (0x8000) at boot, so the
 * vector is LOW_BASE >> 12. The way up is the BSP's own (entry32.S,
 * long64.S): the BSP's GDT (the BSP patches its address into
 * ap_gdt_desc first: a real-mode LGDT cannot name an address above
 * 64 KiB), CR0.PE, the 32-bit code segment, then PAE, the BSP's page
 * tables (ap_cr3), EFER.LME and CR0.PG, and the 64-bit code segment.
 * Each AP takes a number with LOCK XADD, uses stack number-1 and calls
 * smp_ap_main(number). */
#include "boot.h"
#include "smp.h"

#define CR4_PAE 0x20
#define MSR_EFER 0xc0000080
#define EFER_LME 0x100
#define SMP_AP_STACK 16384

    .section .text16, "ax"
    .code16
    .globl ap_trampoline
ap_trampoline:                      /* CS = LOW_BASE >> 4, IP = 0 */
    cli
    cld
    ljmp $0, $1f                    /* CS = 0: .low is linked at LOW_BASE */
1:  xorw %ax, %ax
    movw %ax, %ds
    lgdtl ap_gdt_desc               /* 32-bit base: the BSP's GDT */
    movl %cr0, %eax
    orl $1, %eax                    /* PE */
    movl %eax, %cr0
    ljmpl $SEL_CODE32, $ap_entry32

    .section .data16, "aw"
    .p2align 3
    .globl ap_gdt_desc
ap_gdt_desc:                        /* filled in by smp_start() */
    .word 0
    .long 0

    .text
    .code32
ap_entry32:
    movw $SEL_DATA, %ax
    movw %ax, %ds
    movw %ax, %es
    movw %ax, %ss
    movl %cr4, %eax
    orl $CR4_PAE, %eax
    movl %eax, %cr4
    movl ap_cr3, %eax               /* the BSP's identity map */
    movl %eax, %cr3
    movl $MSR_EFER, %ecx
    rdmsr
    orl $EFER_LME, %eax
    wrmsr
    movl %cr0, %eax
    orl $0x80000001, %eax           /* PG | PE */
    movl %eax, %cr0
    ljmp $SEL_CODE64, $ap_entry64

    .code64
ap_entry64:
    movw $SEL_DATA, %ax
    movw %ax, %ds
    movw %ax, %es
    movw %ax, %ss
    xorw %ax, %ax
    movw %ax, %fs
    movw %ax, %gs
    movl $1, %eax
    lock xaddl %eax, ap_next        /* this AP's number: 1, 2, ... */
    movl %eax, %edi
    cmpl $SMP_MAX_APS, %eax         /* more APs than stacks: park */
    ja 3f
    movl %eax, %ecx
    shll $14, %ecx                  /* * SMP_AP_STACK */
    leaq ap_stacks(%rcx), %rsp      /* top of stack number-1 */
    xorl %ebp, %ebp
    call smp_ap_main                /* does not return */
3:  cli
    hlt
    jmp 3b

    .data
    .p2align 2
    .globl ap_next, ap_cr3
ap_next: .long 1
ap_cr3: .long 0

    .bss
    .p2align 4
ap_stacks:
    .skip SMP_AP_STACK * SMP_MAX_APS

    .section .note.GNU-stack, "", @progbits
