/* examples/guests/tsc.c: guest-tsc, RDTSC between two port writes.
 *
 * `out 0x80, al; rdtsc; out 0x80, al` is two exits, or one cluster when
 * the VMM gives libcluster the guest's TSC (lc_vm_ops.rdtsc; issue: RDTSC
 * as a gap filler): then the middle RDTSC is not the CPU's but the
 * VMM's, and it must read what the guest's own RDTSC would. Each of the
 * n rounds reads the TSC natively before the first OUT (a), inside
 * (b, the callback's value when the round is a cluster) and natively
 * after the second OUT (c); CPUID before and after fences the round (it
 * is no gap filler in lcvmm: clusters end there, so a and c are always
 * the CPU's). The guest counts rounds where a <= b <= c does not hold and
 * fails if there is one; it prints how many rounds went backwards (0)
 * and the largest b - a and c - b in TSC ticks. Results depend on time:
 * only `backwards=0` is compared between runs. */
#include "guest.h"

const struct guest_info guest_info = { "tsc", 1000, false };

static inline void fence(void)
{
    uint32_t a = 0, b, c = 0, d;
    __asm__ volatile("cpuid" : "+a"(a), "=b"(b), "+c"(c), "=d"(d) : : "memory");
}

int guest_main(const struct guest_args *args)
{
    uint32_t backwards = 0;
    uint64_t max_ab = 0, max_bc = 0;

    for (uint32_t i = 0; i < args->n; i++) {
        uint32_t alo, ahi, blo, bhi, clo, chi;
        fence();
        __asm__ volatile(
            "rdtsc\n\t"
            "movl %%eax, %0\n\t"
            "movl %%edx, %1\n\t"
            "outb %%al, $0x80\n\t"
            "rdtsc\n\t"
            "movl %%eax, %%esi\n\t"
            "movl %%edx, %%edi\n\t"
            "outb %%al, $0x80\n\t"
            "rdtsc\n\t"
            : "=m"(alo), "=m"(ahi), "=&S"(blo), "=&D"(bhi), "=&a"(clo),
              "=&d"(chi)
            : : "memory");
        fence();
        uint64_t a = (uint64_t)ahi << 32 | alo, b = (uint64_t)bhi << 32 | blo,
                 c = (uint64_t)chi << 32 | clo;
        if (!(a <= b && b <= c)) {
            if (backwards++ < 4)
                printf("round %u: a=%llx b=%llx c=%llx\n", i,
                       (unsigned long long)a, (unsigned long long)b,
                       (unsigned long long)c);
            continue;
        }
        if (b - a > max_ab)
            max_ab = b - a;
        if (c - b > max_bc)
            max_bc = c - b;
    }
    /* %u: the 32-bit library's %llu reads a long (console.c) */
    printf("guest=tsc rounds=%u backwards=%u max_ab=%u max_bc=%u\n",
           args->n, backwards, max_ab > 0xffffffffu ? 0xffffffffu : (uint32_t)max_ab,
           max_bc > 0xffffffffu ? 0xffffffffu : (uint32_t)max_bc);
    return backwards ? EXIT_MISMATCH : EXIT_OK;
}
