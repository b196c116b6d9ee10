/* examples/guests/boot/boot32.c: the C half of the 32-bit boot stub.
 *
 * Parses the command line, installs an IDT for exceptions (reported on
 * the console, then the VM ends with EXIT_FAULT), and for the PAE guest
 * turns on PAE paging before calling the guest: CR4.PAE, CR3 = a 4-entry
 * page-directory-pointer table, four page directories of 2 MiB pages
 * identity-mapping the first 4 GiB (the top GiB, the PCI MMIO hole,
 * uncached), then CR0.PG (Intel SDM vol. 3A, 4.4 "PAE paging").
 *
 * Some CPUs refuse: this project's machines run a software KVM that
 * raises #GP on CR0.PG outside long mode (32-bit paging, PAE or not;
 * measured under QEMU -accel kvm, while TCG accepts it). The #GP handler
 * then resumes after the MOV to CR0 with paging still off and
 * pae_paging_on false; the PAE guest reports paging=off and skips what
 * needs paging. */
#include "boot.h"
#include "guest.h"
#include "pae.h"

extern const uint32_t isr32_stubs[32];
void boot32_main(void) __attribute__((noreturn));

struct idt_gate32 {
    uint16_t off_lo;
    uint16_t sel;
    uint8_t zero;
    uint8_t type;      /* 0x8e: present, DPL 0, 32-bit interrupt gate */
    uint16_t off_hi;
} __attribute__((packed));

struct isr32_frame {
    uint32_t edi, esi, ebp, esp, ebx, edx, ecx, eax;   /* PUSHAL */
    uint32_t vector, error;
    uint32_t eip, cs, eflags;
};

static struct idt_gate32 idt[32] __attribute__((aligned(8)));
bool pae_paging_on;
extern const char pae_cr0_write[], pae_cr0_done[];   /* labels below */
static struct guest_args args;

/* PAE structures (pae.h): the PDPT must be 32-byte aligned. */
uint64_t pae_pdpt[4] __attribute__((aligned(32)));
uint64_t pae_pd[4][512] __attribute__((aligned(4096)));

void isr32_dispatch(struct isr32_frame *f);
void isr32_dispatch(struct isr32_frame *f)
{
    uint32_t cr2;
    if (f->vector == 13 && f->eip == (uintptr_t)pae_cr0_write) {
        f->eip = (uintptr_t)pae_cr0_done;   /* CR0.PG refused: go on */
        return;
    }
    __asm__ volatile("mov %%cr2, %0" : "=r"(cr2));
    printf("\nfault: vector=%u error=0x%x eip=0x%x cs=0x%x eflags=0x%x cr2=0x%x\n",
           f->vector, f->error, f->eip, f->cs, f->eflags, cr2);
    debug_exit(EXIT_FAULT);
}

static void idt_install(void)
{
    for (int v = 0; v < 32; v++)
        idt[v] = (struct idt_gate32){
            .off_lo = (uint16_t)isr32_stubs[v],
            .sel = SEL_CODE32,
            .type = 0x8e,
            .off_hi = (uint16_t)(isr32_stubs[v] >> 16),
        };
    struct {
        uint16_t limit;
        uint32_t base;
    } __attribute__((packed)) desc = {sizeof idt - 1, (uintptr_t)idt};
    __asm__ volatile("lidt %0" : : "m"(desc));
}

static __attribute__((noinline)) void pae_enable(void)
{
    for (uint32_t g = 0; g < 4; g++) {
        /* PDPTEs: only P (and PWT/PCD) are defined; RW/US are reserved. */
        pae_pdpt[g] = (uintptr_t)pae_pd[g] | PAE_P;
        for (uint32_t i = 0; i < 512; i++) {
            uint64_t e = ((uint64_t)g << 30 | (uint64_t)i << 21) | PAE_P | PAE_RW | PAE_PS;
            if (g == 3)
                e |= PAE_PCD | PAE_PWT;
            pae_pd[g][i] = e;
        }
    }
    uint32_t cr0, cr4;
    __asm__ volatile("mov %%cr4, %0" : "=r"(cr4));
    __asm__ volatile("mov %0, %%cr4" : : "r"(cr4 | 0x20u) : "memory");   /* PAE */
    __asm__ volatile("mov %0, %%cr3" : : "r"((uint32_t)(uintptr_t)pae_pdpt) : "memory");
    __asm__ volatile("mov %%cr0, %0" : "=r"(cr0));
    __asm__ volatile(".globl pae_cr0_write, pae_cr0_done\n"
                     "pae_cr0_write: mov %0, %%cr0\n"   /* PG */
                     "pae_cr0_done:"
                     : : "r"(cr0 | 0x80000000u) : "memory");
    __asm__ volatile("mov %%cr0, %0" : "=r"(cr0));
    pae_paging_on = (cr0 & 0x80000000u) != 0;
}

void boot32_main(void)
{
    uart_init();
    idt_install();
    if (boot_mb_magic != MB_BOOT_MAGIC)
        printf("boot: unexpected loader magic 0x%x\n", boot_mb_magic);
    if (!args_parse(boot_cmdline, &args))
        fail(EXIT_USAGE, "bad command line '%s'", boot_cmdline);
    args.cpl = 0;   /* 32-bit guests run at CPL 0 and poll */
    args.irq = 0;
    if (guest_info.pae)
        pae_enable();
    debug_exit((uint32_t)guest_main(&args));
}
