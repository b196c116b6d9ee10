/* examples/guests/pae.c: guest-pae, 64-bit values written as pairs of
 * adjacent 32-bit stores from 32-bit protected mode with PAE paging.
 *
 * The paper's section 3 ("Handling Exit Pairs"; seed 003): a 32-bit OS
 * with PAE updates each 64-bit page-table entry with two back-to-back
 * 32-bit MOVs through one base register,
 *     MOV %esi, 4(%ecx)   ; top half
 *     MOV %ebx, (%ecx)    ; bottom half
 * and a VMM that traps both would rather handle them as one 64-bit
 * write. This guest produces such pairs twice over:
 *  - on device registers: the 82540EM's 64-bit descriptor base registers
 *    RDBAL/RDBAH (0x2800/0x2804) and TDBAL/TDBAH (0x3800/0x3804) (8254x
 *    SDM 13.4.27, 13.4.38), reprogrammed n times with PRNG values (16-byte
 *    aligned, as the SDM requires), each read back and checked; the
 *    receive pair top half first (the paper's order), the transmit pair
 *    bottom half first;
 *  - on its own PAE page tables (Intel SDM vol. 3A, 4.4): the first
 *    2 MiB, a 2 MiB page in the boot stub's map, are remapped by a page
 *    table of 4 KiB pages built entry by entry as pairs; then each round
 *    clears the entry of a scratch page (bottom half first, so the entry
 *    is not present before its top half changes) and sets it again (top
 *    half first, the present bit last, as Linux's set_pte does), with
 *    INVLPG after each, and writes and reads a marker through it.
 * The mappings stay identity mappings (virtual = physical) so that the
 * reference VMM's Unicorn back end, which ignores guest page walks, runs
 * this guest too; with real paging a lost pair write shows up as a page
 * fault (reported, exit code 0x7e). The receive and transmit units stay
 * disabled: no DMA happens.
 *
 * Where the CPU refuses 32-bit paging (boot/boot32.c: this project's
 * software KVM), the page-table pairs are still written but the mapping
 * checks are skipped, and the result line says paging=off. */
#include "hw/e1000_regs.h"
#include "guest.h"
#include "pae.h"

#define SCRATCH_PAGES 16
#define LOW_MAP (2u << 20)        /* the region low_pt maps */

static uint64_t low_pt[512] __attribute__((aligned(4096)));
static uint8_t scratch[SCRATCH_PAGES][4096] __attribute__((aligned(4096)));
static uint32_t pairs, mismatches;

/* The paper's pair: top half, then bottom half; ECX base, ESI/EBX data. */
static inline void store_pair_hi_lo(uintptr_t p, uint64_t v)
{
    __asm__ volatile("movl %%esi, 4(%%ecx)\n\t"
                     "movl %%ebx, (%%ecx)"
                     :
                     : "c"(p), "S"((uint32_t)(v >> 32)), "b"((uint32_t)v)
                     : "memory");
    pairs++;
}

/* The other order: bottom half, then top half. */
static inline void store_pair_lo_hi(uintptr_t p, uint64_t v)
{
    __asm__ volatile("movl %%ebx, (%%ecx)\n\t"
                     "movl %%esi, 4(%%ecx)"
                     :
                     : "c"(p), "S"((uint32_t)(v >> 32)), "b"((uint32_t)v)
                     : "memory");
    pairs++;
}

static inline void invlpg(uintptr_t va)
{
    __asm__ volatile("invlpg (%0)" : : "r"(va) : "memory");
}

static uint64_t prng64(struct prng *r)
{
    uint64_t hi = prng_next(r);
    return hi << 32 | prng_next(r);
}

static void check(const char *what, uint32_t i, uint64_t got, uint64_t want)
{
    if (got == want)
        return;
    if (++mismatches <= 5)
        printf("error: %s round %u: read 0x%llx, wrote 0x%llx\n", what, i,
               (unsigned long long)got, (unsigned long long)want);
}

const struct guest_info guest_info = {.name = "pae", .default_n = 100, .pae = true};

int guest_main(const struct guest_args *args)
{
    struct pci_dev pci;
    struct prng rng;
    uint32_t hash = FNV1A_INIT;

    uintptr_t mmio;
    if (!pci_find_mmio(E1000_VENDOR_ID, E1000_DEVICE_ID, "e1000", &pci,
                       &mmio)) {
        printf("guest=pae paging=%s n=0 pairs=0 mismatches=0 checksum=0x00000000\n",
               pae_paging_on ? "pae" : "off");
        return EXIT_NODEV;
    }
    pci_enable(&pci, PCI_CMD_MEM);   /* no bus master: no DMA wanted */
    mmio_write32(mmio + E1000_IMC, 0xffffffff);
    mmio_write32(mmio + E1000_RCTL, 0);
    mmio_write32(mmio + E1000_TCTL, 0);
    bool paging = pae_paging_on;
    printf("pae: e1000 at 00:%02x.%u mmio=0x%x, %s\n", pci.dev, pci.fn, (uint32_t)mmio,
           paging ? "PAE paging on"
                  : "the CPU refused CR0.PG: page-table pairs without paging");

    /* The page table for the first 2 MiB, each entry written as a pair,
     * hooked into PD 0 entry 0 (one more pair) in place of the 2 MiB
     * page; reload CR3 to flush the TLB. */
    if ((uintptr_t)scratch[SCRATCH_PAGES - 1] + 4096 > LOW_MAP) {
        printf("error: pae: scratch pages above 2 MiB\n");
        return EXIT_NODEV;
    }
    for (uint32_t i = 0; i < 512; i++)
        store_pair_hi_lo((uintptr_t)&low_pt[i],
                         (uint64_t)i << 12 | PAE_P | PAE_RW | PAE_A | PAE_D);
    store_pair_hi_lo((uintptr_t)&pae_pd[0][0], (uintptr_t)low_pt | PAE_P | PAE_RW);
    uint32_t cr3;
    __asm__ volatile("mov %%cr3, %0\n\tmov %0, %%cr3" : "=r"(cr3) : : "memory");

    prng_seed(&rng, args->seed);
    for (uint32_t i = 0; i < args->n; i++) {
        /* Device register pairs. */
        uint64_t rx = prng64(&rng) & ~0xfull;
        store_pair_hi_lo(mmio + E1000_RDBAL, rx);
        uint64_t got = mmio_read32(mmio + E1000_RDBAL) |
                       (uint64_t)mmio_read32(mmio + E1000_RDBAH) << 32;
        check("RDBAL/RDBAH", i, got, rx);
        hash = fnv1a(hash, &got, sizeof got);

        uint64_t tx = prng64(&rng) & ~0xfull;
        store_pair_lo_hi(mmio + E1000_TDBAL, tx);
        got = mmio_read32(mmio + E1000_TDBAL) |
              (uint64_t)mmio_read32(mmio + E1000_TDBAH) << 32;
        check("TDBAL/TDBAH", i, got, tx);
        hash = fnv1a(hash, &got, sizeof got);

        /* Page-table entry pairs: unmap and remap a scratch page, with
         * PRNG bits in the entry's software-available bits 11:9. */
        uint32_t page = prng_next(&rng) % SCRATCH_PAGES;
        uint32_t off = prng_next(&rng) & 0xffc;
        uint32_t avail = prng_next(&rng) & 7;
        uintptr_t va = (uintptr_t)scratch[page];
        uint64_t *pte = &low_pt[va >> 12];
        store_pair_lo_hi((uintptr_t)pte, 0);
        if (paging)
            invlpg(va);
        store_pair_hi_lo((uintptr_t)pte, (uint64_t)va | (uint64_t)avail << 9 | PAE_P |
                                             PAE_RW | PAE_A | PAE_D);
        if (paging)
            invlpg(va);
        uint32_t marker = prng_next(&rng);
        *(volatile uint32_t *)(va + off) = marker;
        uint32_t seen = *(volatile uint32_t *)(va + off);
        check("scratch page", i, seen, marker);
        /* The entry as read back, without the page's address (so the
         * checksum does not depend on where the linker put it). */
        uint64_t flags = *(volatile uint64_t *)pte - va;
        hash = fnv1a(hash, &seen, sizeof seen);
        hash = fnv1a(hash, &flags, sizeof flags);
    }

    printf("guest=pae paging=%s n=%u pairs=%u mismatches=%u checksum=0x%08x\n",
           paging ? "pae" : "off", args->n, pairs, mismatches, hash);
    return mismatches ? EXIT_MISMATCH : EXIT_OK;
}
