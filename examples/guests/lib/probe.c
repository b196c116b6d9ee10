/* examples/guests/lib/probe.c: configure-time check (meson.build) that
 * gcc can compile and link freestanding i386 and x86-64 code. */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

void probe(void);
volatile uint64_t probe_value;

void probe(void)
{
    probe_value = probe_value * 3 + (probe_value >> 7);
    for (;;)
        ;
}
