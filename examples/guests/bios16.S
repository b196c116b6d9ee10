/* examples/guests/bios16.S: the BIOS guest's 16-bit real-mode workload.
 *
 * The instruction sequences of the paper's section 4 ("Static Cluster
 * Formation"; seed 003), written the way POST code and old kernels
 * write them, run in real mode (CS = DS = SS = 0, interrupts off):
 *
 *  - PCI configuration mechanism #1 reads and writes for every function
 *    on bus 0: OUT the address to 0xCF8, a dummy OUT to 0xED as an I/O
 *    delay, a few ALU instructions computing the data port, IN from
 *    0xCFC+lane - the paper's first example (OUT, OUT, gap fillers, IN),
 *    including its stackless byte-read routine that returns with JMP BX.
 *    Vendor/device, class/revision, header type, interrupt line and pin,
 *    and BAR sizing (decode off in the command register, write all-ones,
 *    read the size mask back, restore the BAR and check it, decode back
 *    on), as firmware does.
 *  - The "OUT 0x80 after every port access" workaround sequences
 *    (Linux's inb_p/outb_p; the paper's second example): on the UART's
 *    scratch and line control registers (not the PIC: the reference
 *    VMM's Unicorn back end stops a guest that programs the 8259).
 *  - Status poll loops on the UART's line status register before every
 *    character (bounded), and on TEMT after every line.
 *
 * Everything read that does not depend on timing is folded into a
 * checksum; the LSR values are not (they depend on when the UART
 * drains). The whole sequence runs bios16_params.passes times. */
#include "lcvmm/platform.h"
#define LSR_THRE 0x20
#define LSR_TEMT 0x40
#define LSR_POLL_BOUND 100000

/* struct bios16_params (bios16.c) field offsets. */
#define P_PASSES 0
#define P_SUM 4
#define P_FUNCTIONS 8
#define P_BARS 12
#define P_READS 16
#define P_RESTORE_ERRORS 20
#define P_LSR_TIMEOUTS 24

    .section .text16, "ax"
    .code16

/* uint32_t bios16_run(void): near-called by real16_call in real mode. */
    .globl bios16_run
bios16_run:
    cld
    movl $0, b16_pass
1:  movl b16_pass, %eax
    cmpl bios16_params + P_PASSES, %eax
    jae 2f
    call pci_scan
    call delay_sequences
    movb $'.', %al
    call putc
    incl b16_pass
    jmp 1b
2:  movw $str_eol, %si
    call puts
    call wait_temt
    xorl %eax, %eax
    ret

/* ---- PCI bus 0 ---- */
pci_scan:
    movw $0, b16_devfn
scan_next:
    movzwl b16_devfn, %eax
    shll $8, %eax
    orl $0x80000000, %eax           /* enable, bus 0, dev:fn, reg 0 */
    movl %eax, b16_addr
    call cfg_rd32                   /* vendor and device */
    cmpw $0xffff, %ax
    je scan_absent
    testw %ax, %ax
    je scan_absent
    movl %eax, b16_id
    call mix_eax
    cmpl $0, b16_pass
    jne 1f
    incl bios16_params + P_FUNCTIONS
1:  movl b16_addr, %eax
    orb $0x08, %al
    call cfg_rd32                   /* class code and revision */
    movl %eax, b16_class
    call mix_eax

    /* Header type (byte 0x0e) through the stackless byte read. */
    movl b16_addr, %eax
    orb $0x0c, %al
    movb $0x0e, %cl
    movw $2f, %bx
    jmp cfg_rd8_bx
2:  movb %al, b16_hdr
    movzbl %al, %eax
    call mix_eax

    cmpl $0, b16_pass
    jne 3f
    call print_function
3:  testb $0x7f, b16_hdr            /* type 0: a device with six BARs */
    jnz scan_step
    call size_bars

    /* Interrupt line (0x3c) and pin (0x3d). */
    movl b16_addr, %eax
    orb $0x3c, %al
    movb $0x3c, %cl
    movw $4f, %bx
    jmp cfg_rd8_bx
4:  movzbl %al, %eax
    call mix_eax
    movl b16_addr, %eax
    orb $0x3c, %al
    movb $0x3d, %cl
    movw $5f, %bx
    jmp cfg_rd8_bx
5:  movzbl %al, %eax
    call mix_eax

scan_step:
    /* Function 0 of a single-function device (header type bit 7
     * clear): skip functions 1-7. */
    testb $7, b16_devfn
    jnz scan_inc
    testb $0x80, b16_hdr
    jnz scan_inc
    jmp scan_skip_device
scan_absent:
    testb $7, b16_devfn
    jnz scan_inc
scan_skip_device:
    addw $8, b16_devfn
    jmp scan_check
scan_inc:
    incw b16_devfn
scan_check:
    cmpw $256, b16_devfn
    jb scan_next
    ret

/* BAR sizing for a type-0 function at b16_addr. */
size_bars:
    movl b16_addr, %eax
    orb $0x04, %al
    call cfg_rd32
    movw %ax, b16_cmd
    movl b16_addr, %eax             /* decode off while sizing */
    orb $0x04, %al
    movw b16_cmd, %cx
    andw $~3, %cx
    call cfg_wr16
    movb $0x10, b16_bar
1:  movl b16_addr, %eax
    orb b16_bar, %al
    call cfg_rd32                   /* the BAR */
    movl %eax, b16_orig
    call mix_eax
    movl b16_addr, %eax
    orb b16_bar, %al
    movl $0xffffffff, %ecx
    call cfg_wr32
    movl b16_addr, %eax
    orb b16_bar, %al
    call cfg_rd32                   /* its size mask */
    call mix_eax
    testl %eax, %eax
    jz 2f
    cmpl $0, b16_pass
    jne 2f
    incl bios16_params + P_BARS
2:  movl b16_addr, %eax
    orb b16_bar, %al
    movl b16_orig, %ecx
    call cfg_wr32                   /* restore */
    movl b16_addr, %eax
    orb b16_bar, %al
    call cfg_rd32
    cmpl b16_orig, %eax
    je 3f
    incl bios16_params + P_RESTORE_ERRORS
3:  addb $4, b16_bar
    cmpb $0x28, b16_bar
    jb 1b
    movl b16_addr, %eax             /* decode back on */
    orb $0x04, %al
    movw b16_cmd, %cx
    call cfg_wr16
    ret

/* cfg_rd32: EAX = config address (bits 1:0 ignored) -> EAX = data.
 * Clobbers DX. */
cfg_rd32:
    movw $0xcf8, %dx
    andb $0xfc, %al
    outl %eax, %dx                  /* exits */
    outb %al, $0xed                 /* exits: I/O delay */
    movb $0xfc, %dl
    inl %dx, %eax                   /* exits */
    incl bios16_params + P_READS
    ret

/* cfg_rd8_bx: the paper's stackless byte read. EAX = dword-aligned
 * config address, CL = register offset, BX = return address.
 * -> AL = the byte. Clobbers DX. No stack, no memory access. */
cfg_rd8_bx:
    movw $0xcf8, %dx
    outl %eax, %dx                  /* exits */
    outb %al, $0xed                 /* exits: I/O delay */
    movw $0xcfc, %dx
    movb %cl, %al
    andb $3, %al
    addb %al, %dl                   /* 0xcfc + byte lane */
    inb %dx, %al                    /* exits */
    jmp *%bx

/* cfg_wr32: EAX = config address, ECX = value. Clobbers DX. */
cfg_wr32:
    movw $0xcf8, %dx
    andb $0xfc, %al
    outl %eax, %dx
    outb %al, $0xed
    movb $0xfc, %dl
    movl %ecx, %eax
    outl %eax, %dx
    ret

/* cfg_wr16: EAX = config address (bit 1 selects the word), CX = value.
 * Clobbers DX, BL. */
cfg_wr16:
    movb %al, %bl
    movw $0xcf8, %dx
    andb $0xfc, %al
    outl %eax, %dx
    outb %al, $0xed
    movw $0xcfc, %dx
    andb $2, %bl
    addb %bl, %dl
    movw %cx, %ax
    outw %ax, %dx
    ret

/* ---- I/O delay workaround sequences ---- */
delay_sequences:
    movw $0, b16_i
1:  /* The pattern for this round. */
    movl b16_pass, %eax
    shll $3, %eax
    addw b16_i, %ax
    imulw $37, %ax
    movb %al, %cl
    /* inb_p(LSR); outb_p(pattern, SCR) twice: every access followed by
     * an OUT to port 0x80 (the paper's second example). */
    movw $LCVMM_COM1_PORT + 5, %dx
    inb %dx, %al                    /* LSR (value unused, as in the paper) */
    outb %al, $0x80                 /* bug workaround */
    movb %cl, %al
    movb $0xff, %dl                 /* 0x3ff: scratch register */
    outb %al, %dx
    outb %al, $0x80                 /* bug workaround */
    outb %al, %dx
    outb %al, $0x80                 /* bug workaround */
    inb %dx, %al                    /* read the scratch register back */
    outb %al, $0x80
    movzbl %al, %eax
    call mix_eax
    /* inb_p(LCR); outb_p(same value): leaves the line format as it is. */
    movw $LCVMM_COM1_PORT + 3, %dx
    inb %dx, %al
    outb %al, $0x80                 /* bug workaround */
    outb %al, %dx
    outb %al, $0x80                 /* bug workaround */
    movzbl %al, %eax
    call mix_eax
    incw b16_i
    cmpw $8, b16_i
    jb 1b
    ret

/* ---- checksum: sum = rol(sum, 5) ^ EAX ---- */
mix_eax:
    pushl %edx
    movl bios16_params + P_SUM, %edx
    roll $5, %edx
    xorl %eax, %edx
    movl %edx, bios16_params + P_SUM
    popl %edx
    ret

/* ---- console: bounded LSR polls ---- */
/* putc: AL = character. Clobbers AX, DX. */
putc:
    pushl %ecx
    movb %al, %ah
    movw $LCVMM_COM1_PORT + 5, %dx
    movl $LSR_POLL_BOUND, %ecx
1:  inb %dx, %al
    testb $LSR_THRE, %al
    jnz 2f
    decl %ecx
    jnz 1b
    incl bios16_params + P_LSR_TIMEOUTS
2:  movb $0xf8, %dl                 /* THR */
    movb %ah, %al
    outb %al, %dx
    popl %ecx
    ret

/* wait_temt: poll until the transmitter is empty (bounded). */
wait_temt:
    movw $LCVMM_COM1_PORT + 5, %dx
    movl $LSR_POLL_BOUND, %ecx
1:  inb %dx, %al
    testb $LSR_TEMT, %al
    jnz 2f
    decl %ecx
    jnz 1b
    incl bios16_params + P_LSR_TIMEOUTS
2:  ret

/* puts: SI = NUL-terminated string. */
puts:
1:  lodsb
    testb %al, %al
    jz 2f
    call putc
    jmp 1b
2:  ret

/* print_hex: EAX = value, CL = number of hex digits (from the right). */
print_hex:
    pushl %ebx
    movl %eax, %ebx
    movb %cl, %ch
    shlb $2, %cl
    rorl %cl, %ebx                  /* the first digit to print on top */
1:  roll $4, %ebx
    movl %ebx, %eax
    andb $0x0f, %al
    addb $'0', %al
    cmpb $'9', %al
    jbe 2f
    addb $'a' - '0' - 10, %al
2:  call putc
    decb %ch
    jnz 1b
    popl %ebx
    ret

/* "bios16: 00:DD.F VVVV:DDDD class CCCCCC hdr HH" */
print_function:
    movw $str_fn, %si
    call puts
    movzwl b16_devfn, %eax
    shrl $3, %eax
    movb $2, %cl
    call print_hex
    movb $'.', %al
    call putc
    movzwl b16_devfn, %eax
    andb $7, %al
    movb $1, %cl
    call print_hex
    movb $' ', %al
    call putc
    movzwl b16_id, %eax
    movb $4, %cl
    call print_hex
    movb $':', %al
    call putc
    movzwl b16_id + 2, %eax
    movb $4, %cl
    call print_hex
    movw $str_class, %si
    call puts
    movl b16_class, %eax
    shrl $8, %eax
    movb $6, %cl
    call print_hex
    movw $str_hdr, %si
    call puts
    movzbl b16_hdr, %eax
    movb $2, %cl
    call print_hex
    movw $str_eol, %si
    call puts
    call wait_temt
    ret

    .section .data16, "aw"
    .p2align 2
/* Shared with bios16.c (struct bios16_params, offsets as P_*). */
    .globl bios16_params
bios16_params:
    .long 0, 0, 0, 0, 0, 0, 0
b16_pass: .long 0
b16_addr: .long 0
b16_id: .long 0
b16_class: .long 0
b16_orig: .long 0
b16_devfn: .word 0
b16_cmd: .word 0
b16_i: .word 0
b16_hdr: .byte 0
b16_bar: .byte 0
str_fn: .asciz "bios16: 00:"
str_class: .asciz " class "
str_hdr: .asciz " hdr "
str_eol: .asciz "\r\n"

    .section .note.GNU-stack, "", @progbits
