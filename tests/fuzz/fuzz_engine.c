/* SPDX-License-Identifier: MIT */
/*
 * tests/fuzz/fuzz_engine.c: hostile guest state, page tables, code and
 * exit descriptions to the whole exit path (lc_vcpu_handle_exit): tracking,
 * formation, the translation cache, coherency checks and runs. The guest
 * code is rewritten between exits so translations go stale and clusters
 * modify themselves. Small cache cap so eviction runs too.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cluster/cluster.h>

#include "fz_vm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz f;
    lc_cpu_state s0;
    lc_engine *e;
    lc_vcpu *v;
    lc_config c;

    if (size < 64)
        return 0;
    if (fz_open(&f, data, size))
        return 0;
    fz_parse(&f, &s0, data, size);
    lc_config_init(&c);
    c.tcache_max_bytes = 8192;
    c.track_index_bits = 2;            /* tiny table: constant churn */
    c.translate_threshold = 1 + (data[0] & 3);
    /* an exit cost as lcvmm measures on KVM: the window and the gap cap
     * scale to their largest (translator/form_static.c) */
    if (data[0] & 4)
        c.exit_cost_ns = 9000;
    c.cflow = (lc_cflow_method)(data[1] & 3);
    c.techniques = data[2] & LC_TECH_ALL;
    c.insn_budget = 256;
    c.rep_budget = 64;
    if (lc_engine_create(&c, &fvm_ops, &e) != LC_OK ||
        lc_vcpu_create(e, 0, &f.vm, &v) != LC_OK)
        abort();
    static uint8_t ram0[RAM_SIZE];     /* the RAM before each call */
    memcpy(ram0, f.vm.ram, RAM_SIZE);
    for (int i = 0; i < 24; i++) {
        lc_cpu_state s = s0, before;
        lc_exit x;
        lc_result r;
        lc_status st;

        memset(&x, 0, sizeof x);
        x.kind = (lc_exit_kind)(1 + take(&f, 1) % (LC_EXIT_KIND_COUNT_ - 1));
        x.rip = take(&f, 1) & 1 ? LC_EXIT_RIP_PAST : LC_EXIT_RIP_AT;
        x.u.io.size = (uint8_t)(1u << (take(&f, 1) % 3));
        x.u.io.is_out = take(&f, 1) & 1;
        x.u.io.is_string = take(&f, 1) & 1;
        if (x.kind == LC_EXIT_MMIO || x.kind == LC_EXIT_TRACED)
            x.u.mmio.len = (uint8_t)(1u << (take(&f, 1) % 4));
        s.rip = (s0.rip + (take(&f, 1) & 0x3f)) & 0xfff;
        /* A claimed exiting-instruction address: right, wrong or absurd;
         * the engine must verify it before anchoring on it. */
        if (x.rip == LC_EXIT_RIP_PAST && (take(&f, 1) & 1))
            x.insn_rip = s.rip - (take(&f, 1) & 0x1f);
        before = s;
        f.vm.nlog = 0;
        st = lc_vcpu_handle_exit(v, &s, &x, &r);
        if (st != LC_OK && st != LC_ERR_CALLBACK && st != LC_ERR_NOMEM)
            abort();
        /* Declined means untouched: the state, the RAM but for A/D bits,
         * and no device or service callback done (the guest will do that
         * access itself). */
        if (r.disposition == LC_DECLINED) {
            if (memcmp(&before, &s, sizeof s) || f.vm.nlog != 0 ||
                !fz_ram_sync(&f, ram0, 1))
                abort();
        } else {
            fz_ram_sync(&f, ram0, 0);
        }
        if (r.exits_saved > r.exits_done || r.stop >= LC_STOP_REASON_COUNT_)
            abort();
        /* Rewrite a code byte now and then: stale translations, SMC. */
        if (take(&f, 1) < 64) {
            unsigned at = s0.rip + (take(&f, 1) & 0x3f);
            f.vm.ram[at] = ram0[at] = (uint8_t)take(&f, 1);
        }
    }
    {
        lc_stats st;
        lc_vcpu_get_stats(v, &st);
        if (st.tcache_bytes > c.tcache_max_bytes)
            abort();
    }
    lc_vcpu_destroy(v);
    if (lc_engine_destroy(e) != LC_OK)
        abort();
    fz_close(&f);
    return 0;
}
