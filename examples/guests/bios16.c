/* examples/guests/bios16.c: guest-bios16, the 32-bit side.
 *
 * The boot stub leaves us in 32-bit protected mode without paging; this
 * file passes the pass count to the real-mode workload (bios16.S), runs
 * it through real16_call (boot/real16.S), and reports. */
#include "guest.h"

/* Laid out as bios16_params in bios16.S. */
struct bios16_params {
    uint32_t passes;
    uint32_t sum;             /* checksum of everything read */
    uint32_t functions;       /* PCI functions on bus 0 (first pass) */
    uint32_t bars;            /* implemented BARs (first pass) */
    uint32_t reads;           /* configuration dword reads, all passes */
    uint32_t restore_errors;  /* BARs that did not read back restored */
    uint32_t lsr_timeouts;    /* LSR polls that ran out */
};
extern struct bios16_params bios16_params;
extern char bios16_run[];
uint32_t real16_call(uint32_t entry);

const struct guest_info guest_info = {.name = "bios16", .default_n = 100};

int guest_main(const struct guest_args *args)
{
    bios16_params.passes = args->n;
    bios16_params.sum = FNV1A_INIT;
    printf("bios16: %u passes in real mode\n", args->n);
    real16_call((uint32_t)(uintptr_t)bios16_run);

    const struct bios16_params *p = &bios16_params;
    if (p->restore_errors)
        printf("error: %u BARs did not read back their restored value\n",
               p->restore_errors);
    if (p->lsr_timeouts)
        printf("error: %u UART LSR polls timed out\n", p->lsr_timeouts);
    printf("guest=bios16 passes=%u functions=%u bars=%u reads=%u checksum=0x%08x\n",
           p->passes, p->functions, p->bars, p->reads, p->sum);
    return p->restore_errors ? EXIT_MISMATCH : p->lsr_timeouts ? EXIT_TIMEOUT : EXIT_OK;
}
