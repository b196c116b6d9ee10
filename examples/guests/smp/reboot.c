/* examples/guests/smp/reboot.c: guest-smp-reboot, a machine reset while
 * its application processors run, n times (lcvmm --reboot).
 *
 * Each boot the BSP starts the APs with INIT/SIPI/SIPI (smp.c); each AP
 * writes an exiting site of its own at a new address (`mov al, k;
 * out 0x80, al; out 0xed, al; ret`, SITES + (boot * 8 + cpu) * 16), calls
 * it until it is a cluster, checks in, and then keeps calling it until the
 * machine resets under it. The BSP waits until every AP checked in and
 * resets through port 0xCF9 while they run. A reboot must bring every AP
 * back to wait-for-SIPI (a PC's reset does), so that the next boot's
 * INIT/SIPI starts it again from the trampoline: smp_start fails
 * otherwise. The record at STATE_ADDR (RAM, kept by a warm reset) counts
 * the boots and the check-ins; the result line depends only on n and
 * cpus. */
#include "smp.h"

#define STATE_ADDR  0x00800000u
#define SITES       0x00900000u
#define STATE_MAGIC 0x534d5242u     /* "SMRB" */

struct smp_reboot_state {
    uint32_t magic, boots, n, cpus;
    uint32_t checkins;
};

static volatile uint32_t checked_in;
static uint32_t boot;

static uint8_t *site_of(uint32_t b, unsigned cpu)
{
    return (uint8_t *)(uintptr_t)(SITES + ((b * SMP_MAX_CPUS + cpu) * 16u) %
                                          (1u << 20));
}

static int runner(unsigned cpu)
{
    static const uint8_t tmpl[] = { 0xb0, 0x00, 0xe6, 0x80, 0xe6, 0xed,
                                    0xc3 };
    uint8_t *site = site_of(boot, cpu);

    memcpy(site, tmpl, sizeof tmpl);
    site[1] = (uint8_t)(boot + cpu);
    for (int i = 0; i < 4; i++)
        __asm__ volatile("call *%0" : : "r"(site) : "rax", "memory");
    atomic_add32(&checked_in, 1);
    for (;;)            /* until the reset */
        __asm__ volatile("call *%0" : : "r"(site) : "rax", "memory");
    return EXIT_OK;
}

const struct guest_info guest_info = {.name = "smp-reboot", .default_n = 10};

int guest_main(const struct guest_args *args)
{
    struct smp_reboot_state *st =
        (struct smp_reboot_state *)(uintptr_t)STATE_ADDR;

    if (!smp_cpus_ok(args))
        return EXIT_USAGE;
    if (st->magic != STATE_MAGIC || st->n != args->n ||
        st->cpus != args->cpus) {
        memset(st, 0, sizeof *st);
        st->magic = STATE_MAGIC;
        st->n = args->n;
        st->cpus = args->cpus;
    }
    boot = st->boots;
    if (!smp_start(args->cpus, runner)) {
        printf("error: boot %u: the APs did not start\n", boot);
        return EXIT_TIMEOUT;
    }
    uint64_t t0 = rdtsc();
    while (atomic_load32(&checked_in) < args->cpus - 1 &&
           rdtsc() - t0 < SMP_WAIT_TSC)
        cpu_pause();
    if (atomic_load32(&checked_in) != args->cpus - 1) {
        printf("error: boot %u: %u of %u APs ran their site\n", boot,
               atomic_load32(&checked_in), args->cpus - 1);
        return EXIT_TIMEOUT;
    }
    st->checkins += args->cpus - 1;
    if (boot == args->n) {
        printf("guest=smp-reboot cpus=%u boots=%u checkins=%u\n",
               args->cpus, boot, st->checkins);
        st->magic = 0;
        return EXIT_OK;
    }
    st->boots = boot + 1;
    /* the APs are calling their sites meanwhile */
    outb(LCVMM_RESET_CONTROL_PORT, LCVMM_RESET_CONTROL_HARD);
    printf("error: boot %u: the reset did not happen\n", boot);
    return EXIT_MISMATCH;
}
