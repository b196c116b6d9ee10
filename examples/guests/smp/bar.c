/* examples/guests/smp/bar.c: guest-smp-bar, a PCI BAR moved by one
 * processor while the others exit on the device behind it.
 *
 * The BSP writes a known value into the e1000's RAL0 (a receive address
 * register: plain storage, no side effect on read), then moves BAR0
 * between its firmware address and LCVMM_E1000_MMIO_BASE - 1 MiB through
 * configuration mechanism #1 (0xCF8/0xCFC), n times. Each move is
 * bracketed by a sequence count (odd while the move is in progress, as a
 * seqlock): the APs read the count, the current base, RAL0 at that base
 * and the count again, in a loop, each read an MMIO exit. A read whose
 * count was even and unchanged must return the value: the VMM must have
 * decoded it at the base the guest had programmed then, through every
 * translation the APs' exits made (the VMM flushes them on a move). A
 * read that raced a move may see anything and is not counted. After each
 * move the BSP reads RAL0 at the new base itself and waits until every
 * AP made a checked read there. The result line depends only on the
 * command line. */
#include "hw/e1000_regs.h"
#include "smp.h"

#define RAL0_VALUE 0x5a17c0deu
#define ALT_BASE (LCVMM_E1000_MMIO_BASE - 0x100000u)

static volatile uint32_t seq;       /* odd: a move is in progress */
static volatile uint32_t cur_base;
static volatile uint32_t moves_seen[SMP_MAX_CPUS];
static volatile uint32_t bad, finish;

static int reader(unsigned cpu)
{
    uint64_t t0 = rdtsc();

    while (!atomic_load32(&finish)) {
        uint32_t s1 = atomic_load32(&seq);
        uintptr_t base = atomic_load32(&cur_base);
        uint32_t v = mmio_read32(base + E1000_RAL(0));
        uint32_t s2 = atomic_load32(&seq);
        if ((s1 & 1) || s1 != s2)
            continue;                   /* raced a move */
        if (v != RAL0_VALUE)
            atomic_add32(&bad, 1);
        if (moves_seen[cpu] != s1 / 2)
            atomic_store32(&moves_seen[cpu], s1 / 2);
        if (rdtsc() - t0 > SMP_WAIT_TSC * 4)
            return EXIT_TIMEOUT;
    }
    return EXIT_OK;
}

const struct guest_info guest_info = {.name = "smp-bar", .default_n = 50};

int guest_main(const struct guest_args *args)
{
    struct pci_dev pci;
    uintptr_t mmio;
    int rc = EXIT_OK;
    uint32_t done = 0, bsp_bad = 0;

    if (!smp_cpus_ok(args))
        return EXIT_USAGE;
    if (!pci_find_mmio(E1000_VENDOR_ID, E1000_DEVICE_ID, "e1000", &pci, &mmio))
        return EXIT_NODEV;
    pci_enable(&pci, PCI_CMD_MEM);
    mmio_write32(mmio + E1000_RAL(0), RAL0_VALUE);
    if (mmio_read32(mmio + E1000_RAL(0)) != RAL0_VALUE) {
        printf("error: e1000 RAL0 does not keep a value\n");
        return EXIT_NODEV;
    }
    cur_base = (uint32_t)mmio;
    if (!smp_start(args->cpus, reader))
        return EXIT_TIMEOUT;
    printf("smp: %u processors up\n", args->cpus);
    for (uint32_t k = 1; k <= args->n && rc == EXIT_OK; k++) {
        uint32_t to = (k & 1) ? ALT_BASE : (uint32_t)mmio;
        atomic_store32(&seq, 2 * k - 1);
        pci_write32(pci.bus, pci.dev, pci.fn, PCI_BAR0, to);
        atomic_store32(&cur_base, to);
        atomic_store32(&seq, 2 * k);
        if (mmio_read32(to + E1000_RAL(0)) != RAL0_VALUE)
            bsp_bad++;
        uint64_t t0 = rdtsc();
        for (unsigned c = 1; c < args->cpus; c++) {
            while (atomic_load32(&moves_seen[c]) < k && rdtsc() - t0 < SMP_WAIT_TSC)
                cpu_pause();
            if (atomic_load32(&moves_seen[c]) < k) {
                printf("error: bar: cpu %u made no read after move %u\n", c, k);
                rc = EXIT_TIMEOUT;
            }
        }
        if (rc == EXIT_OK)
            done = k;
    }
    /* back where the firmware put it */
    pci_write32(pci.bus, pci.dev, pci.fn, PCI_BAR0, (uint32_t)mmio);
    atomic_store32(&finish, 1);
    int aprc = smp_join();
    if (rc == EXIT_OK)
        rc = aprc;
    if (rc == EXIT_OK && (bad || bsp_bad))
        rc = EXIT_MISMATCH;
    printf("guest=smp-bar cpus=%u moves=%u bad=%u\n", args->cpus, done,
           bad + bsp_bad);
    return rc;
}
