/* examples/guests/smp/smc.c: guest-smp-smc, code rewritten by one
 * processor while the others run it (cross-modifying code).
 *
 * The BSP is the writer: for k = 1..n it stores k into the low byte of
 * smc_site's immediate (smc_write), publishes k in `version` (a release
 * store) and waits until every AP has acknowledged k. The APs are the
 * executors: each reads `version` (acquire), calls smc_site and checks
 * that the immediate it got is that version or the next one (the writer
 * may already be storing k + 1 once all have acknowledged k; it cannot
 * be further ahead). This follows the SDM's cross-modifying code rule
 * (vol. 3A, 8.1.3): the new code is used only after the writer's flag is
 * seen. A VMM that ran a translation made before the store (libcluster's
 * per-vCPU translations of smc_site hold the immediate) would return an
 * older byte: counted as `stale`, and the exit code is 1. The result
 * line depends only on the command line. */
#include "smp.h"

extern uint32_t smc_site(void);
extern void smc_write(uint8_t k);

static volatile uint32_t version;
static volatile uint32_t ack[SMP_MAX_CPUS];
static volatile uint32_t stale, bad_bytes;
static uint32_t rounds;
static volatile uint32_t writer_gone;

static int executor(unsigned cpu)
{
    uint32_t last = 0;
    uint64_t t0 = rdtsc();

    while (last < rounds) {
        uint32_t v = atomic_load32(&version);
        uint32_t r = smc_site();
        uint8_t got = (uint8_t)r, want = (uint8_t)v;
        if ((r >> 8) != 0x5a5a5a)
            atomic_add32(&bad_bytes, 1);
        else if ((uint8_t)(got - want) > 1)
            atomic_add32(&stale, 1);
        if (v != last) {
            atomic_store32(&ack[cpu], v);
            last = v;
            t0 = rdtsc();
        }
        if (atomic_load32(&writer_gone) || rdtsc() - t0 > SMP_WAIT_TSC)
            return last == rounds ? EXIT_OK : EXIT_TIMEOUT;
    }
    return EXIT_OK;
}

const struct guest_info guest_info = {.name = "smp-smc", .default_n = 200};

int guest_main(const struct guest_args *args)
{
    int rc = EXIT_OK;
    uint32_t done = 0;

    if (!smp_cpus_ok(args))
        return EXIT_USAGE;
    if (args->cpus < 2) {
        printf("cmdline: guest-smp-smc needs cpus=2 or more\n");
        return EXIT_USAGE;
    }
    rounds = args->n;
    smc_write(0);
    if (!smp_start(args->cpus, executor))
        return EXIT_TIMEOUT;
    printf("smp: %u processors up\n", args->cpus);
    for (uint32_t k = 1; k <= rounds && rc == EXIT_OK; k++) {
        smc_write((uint8_t)k);
        atomic_store32(&version, k);
        uint64_t t0 = rdtsc();
        for (unsigned c = 1; c < args->cpus; c++) {
            while (atomic_load32(&ack[c]) < k && rdtsc() - t0 < SMP_WAIT_TSC)
                cpu_pause();
            if (atomic_load32(&ack[c]) < k) {
                printf("error: smc: cpu %u did not see version %u\n", c, k);
                rc = EXIT_TIMEOUT;
            }
        }
        if (rc == EXIT_OK)
            done = k;
    }
    atomic_store32(&writer_gone, 1);
    int aprc = smp_join();
    if (rc == EXIT_OK)
        rc = aprc;
    if (rc == EXIT_OK && (stale || bad_bytes))
        rc = EXIT_MISMATCH;
    printf("guest=smp-smc cpus=%u rounds=%u stale=%u bad=%u\n", args->cpus,
           done, stale, bad_bytes);
    return rc;
}
