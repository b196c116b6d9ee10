/* examples/guests/smp/smp.c: starting the application processors
 * (smp.h). The sequence is the MP specification's universal start-up
 * algorithm as the SDM gives it (vol. 3A, 8.4.4.1): INIT IPI, wait 10
 * ms, STARTUP IPI, wait 200 us, a second STARTUP IPI, each to all
 * processors but self (ICR shorthand 11b), the STARTUP vector being the
 * page of the trampoline (ap_boot.S). A processor already started
 * ignores the second STARTUP IPI. */
#include "boot.h"
#include "smp.h"

extern char ap_trampoline[];
extern struct {
    uint16_t limit;
    uint32_t base;
} __attribute__((packed)) ap_gdt_desc;
extern struct {
    uint16_t limit;
    uint32_t base;
    uint32_t base_hi;
} __attribute__((packed)) gdt_desc;
extern volatile uint32_t ap_cr3;
void smp_ap_main(uint32_t cpu) __attribute__((noreturn));

static smp_fn ap_fn;
static volatile uint32_t ap_arrived, ap_done;
static volatile uint32_t ap_rc;
static struct {
    uint16_t limit;
    uint64_t base;
} __attribute__((packed)) idt_desc;

void spin_lock(struct spinlock *l)
{
    for (;;) {
        if (!__atomic_exchange_n(&l->v, 1, __ATOMIC_ACQUIRE))
            return;
        while (__atomic_load_n(&l->v, __ATOMIC_RELAXED))
            cpu_pause();
    }
}

void spin_unlock(struct spinlock *l)
{
    __atomic_store_n(&l->v, 0, __ATOMIC_RELEASE);
}

static void lapic_write(uint32_t reg, uint32_t v)
{
    mmio_write32(LAPIC_BASE + reg, v);
}

static uint32_t lapic_read(uint32_t reg)
{
    return mmio_read32(LAPIC_BASE + reg);
}

/* Busy-wait about `us` microseconds by the TSC at an assumed >= 1 GHz
 * (a longer wait than asked is harmless here). */
static void delay_us(uint64_t us)
{
    uint64_t t0 = rdtsc();
    while (rdtsc() - t0 < us * 3000)
        cpu_pause();
}

/* Send one IPI and wait (bounded) for the APIC to take it. */
static void ipi(uint32_t icr_lo)
{
    lapic_write(LAPIC_ICR_HI, 0);
    lapic_write(LAPIC_ICR_LO, icr_lo);
    for (int i = 0; i < 100000 && (lapic_read(LAPIC_ICR_LO) & ICR_PENDING); i++)
        cpu_pause();
}

bool smp_cpus_ok(const struct guest_args *args)
{
    if (args->cpus >= 1 && args->cpus <= SMP_MAX_CPUS)
        return true;
    printf("cmdline: cpus must be 1..%u\n", SMP_MAX_CPUS);
    return false;
}

bool smp_start(unsigned cpus, smp_fn fn)
{
    uint64_t cr3;
    uint32_t vector = (uint32_t)(uintptr_t)ap_trampoline >> 12;

    if ((uintptr_t)ap_trampoline & 0xfff || vector >= 0x100)
        fail(EXIT_FAULT, "smp: trampoline at 0x%lx is not a page below 1 MiB",
             (unsigned long)(uintptr_t)ap_trampoline);
    ap_fn = fn;
    ap_gdt_desc.limit = gdt_desc.limit;
    ap_gdt_desc.base = gdt_desc.base;
    __asm__ volatile("mov %%cr3, %0" : "=r"(cr3));
    ap_cr3 = (uint32_t)cr3;
    __asm__ volatile("sidt %0" : "=m"(idt_desc));
    if (cpus <= 1)
        return true;
    __atomic_thread_fence(__ATOMIC_SEQ_CST);

    lapic_write(LAPIC_SVR, lapic_read(LAPIC_SVR) | LAPIC_SVR_ENABLE);
    ipi(ICR_ALL_BUT_SELF | ICR_LEVEL_ASSERT | ICR_INIT);
    delay_us(10000);
    for (int i = 0; i < 2; i++) {
        ipi(ICR_ALL_BUT_SELF | ICR_LEVEL_ASSERT | ICR_STARTUP | vector);
        delay_us(200);
    }
    uint64_t t0 = rdtsc();
    while (atomic_load32(&ap_arrived) < cpus - 1 && rdtsc() - t0 < SMP_WAIT_TSC)
        cpu_pause();
    uint32_t got = atomic_load32(&ap_arrived);
    if (got != cpus - 1) {
        printf("error: smp: %u of %u application processors started\n", got,
               cpus - 1);
        return false;
    }
    return true;
}

int smp_join(void)
{
    uint64_t t0 = rdtsc();
    uint32_t want = atomic_load32(&ap_arrived);
    while (atomic_load32(&ap_done) < want && rdtsc() - t0 < SMP_WAIT_TSC * 4)
        cpu_pause();
    if (atomic_load32(&ap_done) < want) {
        printf("error: smp: %u of %u application processors finished\n",
               atomic_load32(&ap_done), want);
        return EXIT_TIMEOUT;
    }
    return (int)atomic_load32(&ap_rc);
}

void smp_ap_main(uint32_t cpu)
{
    __asm__ volatile("lidt %0" : : "m"(idt_desc));
    atomic_add32(&ap_arrived, 1);
    int rc = ap_fn ? ap_fn(cpu) : EXIT_OK;
    if (rc != EXIT_OK)
        __atomic_store_n(&ap_rc, (uint32_t)rc, __ATOMIC_RELAXED);
    atomic_add32(&ap_done, 1);
    for (;;)
        __asm__ volatile("cli; hlt");
}
