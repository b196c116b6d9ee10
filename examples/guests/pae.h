/* examples/guests/pae.h: PAE paging structures set up by the 32-bit boot
 * stub (boot/boot32.c) for the PAE guest (Intel SDM vol. 3A, 4.4). */
#ifndef GUEST_PAE_H
#define GUEST_PAE_H

#include <stdbool.h>
#include <stdint.h>

#define PAE_P 0x001ull
#define PAE_RW 0x002ull
#define PAE_US 0x004ull
#define PAE_PWT 0x008ull
#define PAE_PCD 0x010ull
#define PAE_A 0x020ull
#define PAE_D 0x040ull
#define PAE_PS 0x080ull

/* CR3 -> pae_pdpt[4] -> pae_pd[g][512] (2 MiB pages, identity). */
extern uint64_t pae_pdpt[4];
extern uint64_t pae_pd[4][512];
/* False if the CPU refused CR0.PG (see boot/boot32.c). */
extern bool pae_paging_on;

#endif
