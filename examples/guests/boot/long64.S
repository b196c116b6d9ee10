/* examples/guests/boot/long64.S: the long-mode half of the boot stub.
 *
 * From 32-bit protected mode (entry32.S): identity-map the first 4 GiB
 * with 2 MiB pages, enable PAE, EFER.LME and paging, far-jump into the
 * 64-bit code segment and call boot64_main (boot64.c). Also the 64-bit
 * interrupt entry stubs and the CPL 3 entry (IRETQ with IOPL=3).
 *
 * Every paging level has U/S set so CPL 3 code reaches all of RAM and
 * the NIC's MMIO BAR; the top GiB (PCI hole: MMIO BARs) is mapped with
 * PCD|PWT (uncached), as firmware's MTRRs would. */
#include "boot.h"

#define PTE_P 0x001
#define PTE_RW 0x002
#define PTE_US 0x004
#define PTE_PWT 0x008
#define PTE_PCD 0x010
#define PTE_PS 0x080
#define CR4_PAE 0x20
#define MSR_EFER 0xc0000080
#define EFER_LME 0x100
#define CR0_PE 0x1
#define CR0_PG 0x80000000

    .text
    .code32
    .globl boot_mode_entry
boot_mode_entry:
    /* PML4[0] -> PDPT; PDPT[0..3] -> PD0..PD3 (one per GiB). */
    movl $pdpt + (PTE_P | PTE_RW | PTE_US), pml4
    movl $pd + (PTE_P | PTE_RW | PTE_US), %eax
    xorl %ecx, %ecx
1:  movl %eax, pdpt(,%ecx,8)
    addl $4096, %eax
    incl %ecx
    cmpl $4, %ecx
    jb 1b

    /* PD entries: 2048 x 2 MiB pages, physical = virtual. */
    movl $(PTE_P | PTE_RW | PTE_US | PTE_PS), %eax
    xorl %ecx, %ecx
2:  movl %eax, %edx
    cmpl $1536, %ecx               /* >= 3 GiB: the PCI MMIO hole */
    jb 3f
    orl $(PTE_PCD | PTE_PWT), %edx
3:  movl %edx, pd(,%ecx,8)
    addl $0x200000, %eax
    incl %ecx
    cmpl $2048, %ecx
    jb 2b

    movl %cr4, %eax
    orl $CR4_PAE, %eax
    movl %eax, %cr4
    movl $pml4, %eax
    movl %eax, %cr3
    movl $MSR_EFER, %ecx
    rdmsr
    orl $EFER_LME, %eax
    wrmsr
    movl %cr0, %eax
    orl $(CR0_PG | CR0_PE), %eax
    movl %eax, %cr0
    ljmp $SEL_CODE64, $long_entry

    .code64
long_entry:
    movw $SEL_DATA, %ax
    movw %ax, %ds
    movw %ax, %es
    movw %ax, %ss
    movq $boot_stack_top, %rsp
    xorl %ebp, %ebp
    call boot64_main
4:  hlt                             /* boot64_main does not return */
    jmp 4b

/* ---- interrupt and exception entry ----
 * Each stub pushes a dummy error code where the CPU pushes none, then
 * its vector, and joins isr_common, which saves the caller-saved
 * registers and calls isr_dispatch(struct isr_frame *). The CPU aligned
 * RSP to 16 before pushing its 5-word frame; with the 2 words pushed
 * here and 9 registers, RSP is 16-byte aligned at the call. */
.macro ISR vec
    .p2align 3
isr_\vec:
    .if (\vec == 8) || (\vec >= 10 && \vec <= 14) || (\vec == 17) || (\vec == 21) || (\vec == 29) || (\vec == 30)
    .else
    pushq $0
    .endif
    pushq $\vec
    jmp isr_common
.endm

    .p2align 4
    .altmacro
    .set v, 0
    .rept IDT_STUBS
    ISR %v
    .set v, v + 1
    .endr

isr_common:
    pushq %rax
    pushq %rcx
    pushq %rdx
    pushq %rsi
    pushq %rdi
    pushq %r8
    pushq %r9
    pushq %r10
    pushq %r11
    cld
    movq %rsp, %rdi
    call isr_dispatch
    popq %r11
    popq %r10
    popq %r9
    popq %r8
    popq %rdi
    popq %rsi
    popq %rdx
    popq %rcx
    popq %rax
    addq $16, %rsp                  /* vector and error code */
    iretq

/* The stubs' addresses, for the IDT (boot64.c). */
    .section .rodata
    .p2align 3
    .globl isr_stubs
.macro ISR_ADDR vec
    .quad isr_\vec
.endm
isr_stubs:
    .set v, 0
    .rept IDT_STUBS
    ISR_ADDR %v
    .set v, v + 1
    .endr
    .noaltmacro

/* void enter_user(uint64_t arg, void *user_stack_top)
 * IRETQ to user_start at CPL 3 with RFLAGS.IOPL = 3 (port I/O allowed,
 * interrupts off) on the given stack; user_start runs user_main(arg) and
 * ends the VM with its return value.
 * Port I/O at CPL 3 is allowed twice over: by IOPL = 3 and by the TSS's
 * all-zero I/O permission bitmap (boot64.c). The bitmap is what makes it
 * work on this project's machines: their software KVM runs CPL 3 guest
 * code natively and does not honour the guest's IOPL (measured: after
 * this IRETQ, PUSHFQ at CPL 3 shows IOPL = 0 and an IN faults without
 * the bitmap), while QEMU TCG and hardware KVM honour either. */
    .text
    .globl enter_user
enter_user:
    movw $(SEL_UDATA | 3), %ax
    movw %ax, %ds
    movw %ax, %es
    pushq $(SEL_UDATA | 3)          /* SS */
    pushq %rsi                      /* RSP */
    pushq $0x3002                   /* RFLAGS: IOPL=3, IF=0, bit 1 */
    pushq $(SEL_UCODE64 | 3)        /* CS */
    leaq user_start(%rip), %rax
    pushq %rax                      /* RIP */
    iretq

user_start:                         /* CPL 3; RDI = arg, RSP 16-aligned */
    call user_main                  /* does not return */
5:  jmp 5b

    .bss
    .p2align 12
pml4: .skip 4096
pdpt: .skip 4096
pd: .skip 4 * 4096

    .section .note.GNU-stack, "", @progbits
