/* examples/guests/boot/real16.S: calling 16-bit real-mode code from
 * 32-bit protected mode (the BIOS guest).
 *
 * Lives in the .low section, which entry32.S copied to LOW_BASE (0x8000)
 * before anything else ran, so all of it - this trampoline, the 16-bit
 * workload and its data - is addressable with CS = DS = SS = 0. The way
 * down follows the Intel SDM (vol. 3A, 9.9.2 "Switching Back to
 * Real-Address Mode"): far jump to a 16-bit code segment with a 64 KiB
 * limit, load 16-bit data segments, clear CR0.PE, far jump to a real-mode
 * CS, load real-mode segments and the real-mode IVT. The way back sets
 * CR0.PE and far-jumps to the 32-bit code segment (GDTR is unchanged). */
#include "boot.h"

    .section .text16, "ax"
    .code32
/* uint32_t real16_call(uint32_t entry): run the near 16-bit function at
 * entry (in .low) in real mode with interrupts off; returns its EAX. */
    .globl real16_call
real16_call:
    pushl %ebp
    pushl %ebx
    pushl %esi
    pushl %edi
    movl 20(%esp), %eax
    movw %ax, r16_target
    movl %esp, r16_saved_esp
    sidt r16_saved_idt
    ljmp $SEL_CODE16, $1f

    .code16
1:  movw $SEL_DATA16, %ax           /* 16-bit protected mode */
    movw %ax, %ds
    movw %ax, %es
    movw %ax, %fs
    movw %ax, %gs
    movw %ax, %ss
    movl %cr0, %eax
    andl $~1, %eax                  /* PE off */
    movl %eax, %cr0
    ljmp $0, $2f
2:  xorw %ax, %ax                   /* real mode, segments at 0 */
    movw %ax, %ds
    movw %ax, %es
    movw %ax, %fs
    movw %ax, %gs
    movw %ax, %ss
    movw $LOW_STACK_TOP, %sp
    lidt r16_ivt_desc
    call *r16_target
    movl %eax, r16_result

    cli
    movl %cr0, %eax
    orl $1, %eax                    /* PE on */
    movl %eax, %cr0
    ljmpl $SEL_CODE32, $3f

    .code32
3:  movw $SEL_DATA, %ax
    movw %ax, %ds
    movw %ax, %es
    movw %ax, %ss
    xorw %ax, %ax
    movw %ax, %fs
    movw %ax, %gs
    movl r16_saved_esp, %esp
    lidt r16_saved_idt
    movl r16_result, %eax
    popl %edi
    popl %esi
    popl %ebx
    popl %ebp
    ret

    .section .data16, "aw"
    .p2align 2
r16_saved_esp: .long 0
r16_result: .long 0
r16_target: .word 0
r16_saved_idt: .word 0
    .long 0
r16_ivt_desc: .word 0x3ff           /* the real-mode IVT at 0 */
    .long 0

    .section .note.GNU-stack, "", @progbits
