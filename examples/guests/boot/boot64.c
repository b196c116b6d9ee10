/* examples/guests/boot/boot64.c: the C half of the long-mode boot stub.
 *
 * Runs at CPL 0 in 64-bit mode on the boot stack: parses the command
 * line, installs the TSS (RSP0 for exceptions taken at CPL 3) and the
 * IDT, and runs the guest either here (cpl=0; with irq=1 after
 * remapping the PICs and starting the PIT) or at CPL 3 with IOPL=3
 * (cpl=3, always polling: HLT, CLI-protected waits and the PIC are not
 * used there). */
#include "boot.h"
#include "guest.h"

extern uint64_t gdt[GDT_ENTRIES];
extern const uint64_t isr_stubs[IDT_STUBS];
extern char boot_stack_top[];
void enter_user(uint64_t arg, void *user_stack_top) __attribute__((noreturn));
void boot64_main(void) __attribute__((noreturn));
void user_main(const struct guest_args *args) __attribute__((noreturn));

/* 64-bit TSS (Intel SDM vol. 3A, 8.7) with an all-zero I/O permission
 * bitmap (SDM 19.5.2): RSP0 is the stack for exceptions taken at CPL 3,
 * and the bitmap allows every port at CPL 3 even where IOPL=3 does not
 * stick (see enter_user in long64.S). */
struct tss64 {
    uint32_t reserved0;
    uint64_t rsp[3];
    uint64_t reserved1;
    uint64_t ist[7];
    uint64_t reserved2;
    uint16_t reserved3;
    uint16_t iomap_base;
    uint8_t iomap[65536 / 8];
    uint8_t iomap_end;     /* 0xff: the bitmap's terminating byte */
} __attribute__((packed));

struct idt_gate {
    uint16_t off_lo;
    uint16_t sel;
    uint8_t ist;
    uint8_t type;       /* 0x8e: present, DPL 0, 64-bit interrupt gate */
    uint16_t off_mid;
    uint32_t off_hi;
    uint32_t reserved;
} __attribute__((packed));

/* What isr_common (long64.S) leaves on the stack. */
struct isr_frame {
    uint64_t r11, r10, r9, r8, rdi, rsi, rdx, rcx, rax;
    uint64_t vector, error;
    uint64_t rip, cs, rflags, rsp, ss;   /* pushed by the CPU */
};

static struct tss64 tss __attribute__((aligned(16)));
static struct idt_gate idt[256] __attribute__((aligned(16)));
static uint8_t user_stack[16384] __attribute__((aligned(16)));
static struct guest_args args;

void isr_irq(uint8_t line);   /* lib/irq.c */

static void tss_install(void)
{
    uint64_t base = (uintptr_t)&tss;
    uint64_t limit = sizeof tss - 1;

    tss.rsp[0] = (uintptr_t)boot_stack_top;
    tss.iomap_base = offsetof(struct tss64, iomap);
    tss.iomap_end = 0xff;
    /* 16-byte system descriptor, type 9 (available 64-bit TSS). */
    gdt[SEL_TSS / 8] = (limit & 0xffff) | (base & 0xffffff) << 16 |
                       (uint64_t)0x89 << 40 | ((limit >> 16) & 0xf) << 48 |
                       ((base >> 24) & 0xff) << 56;
    gdt[SEL_TSS / 8 + 1] = base >> 32;
    __asm__ volatile("ltr %w0" : : "r"(SEL_TSS));
}

static void idt_install(void)
{
    for (int v = 0; v < IDT_STUBS; v++) {
        uint64_t off = isr_stubs[v];
        idt[v] = (struct idt_gate){
            .off_lo = (uint16_t)off,
            .sel = SEL_CODE64,
            .type = 0x8e,
            .off_mid = (uint16_t)(off >> 16),
            .off_hi = (uint32_t)(off >> 32),
        };
    }
    struct {
        uint16_t limit;
        uint64_t base;
    } __attribute__((packed)) desc = {sizeof idt - 1, (uintptr_t)idt};
    __asm__ volatile("lidt %0" : : "m"(desc));
}

void isr_dispatch(struct isr_frame *f);
void isr_dispatch(struct isr_frame *f)
{
    if (f->vector >= IRQ_VECTOR_BASE && f->vector < IRQ_VECTOR_BASE + 16) {
        isr_irq((uint8_t)(f->vector - IRQ_VECTOR_BASE));
        return;
    }
    uint64_t cr2;
    __asm__ volatile("mov %%cr2, %0" : "=r"(cr2));
    printf("\nfault: vector=%lu error=0x%lx rip=0x%lx cs=0x%lx rsp=0x%lx "
           "rflags=0x%lx cr2=0x%lx\n",
           f->vector, f->error, f->rip, f->cs, f->rsp, f->rflags, cr2);
    debug_exit(EXIT_FAULT);
}

void user_main(const struct guest_args *a)
{
    debug_exit((uint32_t)guest_main(a));
}

void boot64_main(void)
{
    uart_init();
    tss_install();
    idt_install();
    if (boot_mb_magic != MB_BOOT_MAGIC)
        printf("boot: unexpected loader magic 0x%x\n", boot_mb_magic);
    if (!args_parse(boot_cmdline, &args))
        fail(EXIT_USAGE, "bad command line '%s'", boot_cmdline);

    if (args.cpl == 3) {
        args.irq = 0;   /* no HLT/CLI/PIC at CPL 3: the drivers poll */
        enter_user((uintptr_t)&args, user_stack + sizeof user_stack);
    }
    if (args.irq)
        irq_init();
    debug_exit((uint32_t)guest_main(&args));
}
