/* SPDX-License-Identifier: MIT */
/*
 * libcluster/coherency.c: paper section 7, the coherency check. Before a
 * cached translation runs, every guest byte it covers must still be what
 * it was made from: the guest (or DMA, or another vCPU) may have
 * rewritten its code, or remapped it, since. The self-modifying-code stop
 * during a run is the runtime's (watch_gfn in runtime/rt.h); the engine
 * arms it with the frames found here (handle_exit.c).
 */
#include <string.h>

#include "engine_int.h"

int lci_coherent(lcr_vcpu *v, tc_entry *te, uint64_t at, uint64_t gfn[2],
                 unsigned *ngfn)
{
    uint8_t code[LCX_MAX_INSNS * LC_INSN_MAX_LEN];
    size_t n = te->cl->nbytes, got;

    /* First by the fetch record: the paging entries and code bytes the
     * translation was made from, read directly, no walk, no callback. */
    if (lcr_fetch_check(v, at, &te->rec, te->code, n)) {
        *ngfn = te->rec.npages;
        gfn[0] = te->rec.gfn[0];
        gfn[1] = te->rec.gfn[1];
        return 1;
    }
    /* Else by a full fetch through the guest's page tables, which also
     * re-records for the next check. */
    if (n > sizeof code)
        return 0;
    got = lcr_fetch_at_rec(v, at, code, n, gfn, ngfn, &te->rec);
    return got == n && !memcmp(code, te->code, n);
}
