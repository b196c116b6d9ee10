/* examples/guests/smp/smc_site.S: the code guest-smp-smc rewrites while
 * other processors run it (smc.c).
 *
 * smc_site returns the 32-bit immediate of its MOV. The MOV sits between
 * two port writes to the POST port (ignored by the platform), so every
 * call is two exits on a VMM without clustering; with libcluster the
 * first exit's translation covers the MOV and the second OUT (one exit
 * per call), and so holds a copy of the immediate. smc_write changes the
 * immediate's low byte between two exits of its own, so that with
 * clustering the store itself runs inside a translation, on another
 * vCPU thread than the translations that cover the byte. The immediate
 * is 4-byte aligned so that a store to it is single-copy atomic (SDM
 * vol. 3A, 8.1.1). smc_site has a page of its own, smc_write the next. */
#include "lcvmm/platform.h"

    .section .text.smc, "ax"
    .code64
    .p2align 12
    .globl smc_site, smc_imm, smc_write
smc_site:                           /* uint32_t smc_site(void) */
    outb %al, $LCVMM_POST_PORT      /* offset 0: exits */
    nop                             /* offset 2 */
    movl $0x5a5a5a00, %eax          /* offset 3: B8, imm32 at offset 4 */
    outb %al, $LCVMM_POST_PORT      /* exits */
    ret
smc_imm = smc_site + 4

    .p2align 12                     /* the writer's code: another page */
smc_write:                          /* void smc_write(uint8_t k) */
    outb %al, $LCVMM_POST_PORT
    movb %dil, smc_imm              /* the cross-modifying store */
    outb %al, $LCVMM_POST_PORT
    ret

    .section .note.GNU-stack, "", @progbits
