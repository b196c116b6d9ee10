/* SPDX-License-Identifier: MIT */
/*
 * tests/fuzz/fuzz_runtime.c: hostile guest state, page tables and code to
 * the runtime (decoder + MMU + executor).
 *
 * Input layout: a header that becomes the CPU state (control registers,
 * EFER, RFLAGS, segment attributes, GPRs, RIP), then the rest fills the
 * first pages of a 64 KiB guest RAM (so page-table entries, descriptor
 * bits and code are all attacker-chosen). Device reads answer from the
 * input too. Nothing may crash, read out of bounds or run unbounded: the
 * run has an instruction and string budget.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cluster/cluster.h>

#include "../../runtime/rt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Frame 0 watched whole: a store into it stops the run (LC_STOP_SMC). */
static const lcr_watch watch0 = { .n = 1 };

#include "fz_vm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz f;
    lc_cpu_state s;
    lcr_vcpu v;
    lcd_insn in;

    if (size < 64)
        return 0;
    if (fz_open(&f, data, size))
        return 0;
    fz_parse(&f, &s, data, size);

    memset(&v, 0, sizeof v);
    v.insn_budget = 64;
    v.rep_budget = 64;
    v.irq_check = 1;
    v.watching = &watch0;
    lcr_begin(&v, &s, &fvm_ops, &f.vm);
    memset(&in, 0, sizeof in);
    for (int i = 0; i < 64; i++) {
        static uint8_t ram0[RAM_SIZE];  /* the RAM before the step (one
                                         * memcpy: cheaper under ASan than
                                         * a compare of every step) */
        lc_cpu_state before = s;
        int r;

        f.vm.nlog = 0;
        memcpy(ram0, f.vm.ram, RAM_SIZE);
        r = lcr_step(&v, &in);
        /* A stop is before the instruction: nothing changed but A/D bits,
         * no callback done; only a REP of a row that says so
         * (LCR_ROW_REP_PARTIAL) may stop between iterations. */
        if (r == LCR_STOP &&
            !(in.info.rep && (unsigned)in.info.op < LC_OP_COUNT_ &&
              (lcr_op_rows[in.info.op].flags & LCR_ROW_REP_PARTIAL)) &&
            (memcmp(&before, &s, sizeof s) || f.vm.nlog != 0 ||
             !fz_ram_sync(&f, ram0, 1)))
            abort();
        if (r != LCR_DONE || v.stop != LC_STOP_NONE)
            break;
    }
    if (v.stop >= LC_STOP_REASON_COUNT_)
        abort();
    fz_close(&f);
    return 0;
}
