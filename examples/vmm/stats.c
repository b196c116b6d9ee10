/* SPDX-License-Identifier: MIT */
/*
 * Statistics at the end of a run: a table for people, JSON for scripts
 * (bench/ and the integration tests read the JSON).
 */
#include <stdio.h>
#include <string.h>

#include "stats.h"
#include "vmm.h"

typedef struct kv_sink {
    kv *t;
    unsigned n;
} kv_sink;

static void put_device_stat(void *ctx, const char *section, const char *key,
                            uint64_t value)
{
    kv_sink *s = ctx;
    if (s->n < MAX_KV)
        s->t[s->n++] = (kv){ section, key, (double)value, false };
}

unsigned vmm_stats_collect(vmm *vm, const uint64_t *kvm, kv *t)
{
    unsigned n = 0;
    lc_stats ls;
#define U(sec, k, v) t[n++] = (kv){ sec, k, (double)(v), false }
#define F(sec, k, v) t[n++] = (kv){ sec, k, (double)(v), true }
#define L(field) __atomic_load_n(&vm->stats.field, __ATOMIC_RELAXED)
    F("vmm", "wall_s", vm->stats.wall_s);
    U("vmm", "exit_code", __atomic_load_n(&vm->exit_code, __ATOMIC_RELAXED));
    U("vmm", "exits", L(exits));
    U("vmm", "exits_io", L(exits_io));
    U("vmm", "exits_mmio", L(exits_mmio));
    U("vmm", "exits_hlt", L(exits_hlt));
    U("vmm", "exits_intr", L(exits_intr));
    U("vmm", "exits_other", L(exits_other));
    U("vmm", "exits_handled_by_engine", L(exits_handled_by_engine));
    /* -c N: the exits of each vCPU (KVM; Unicorn runs one vCPU) */
    static const char *const vcpu_exits[VMM_MAX_VCPUS] = {
        "exits_vcpu0", "exits_vcpu1", "exits_vcpu2", "exits_vcpu3",
        "exits_vcpu4", "exits_vcpu5", "exits_vcpu6", "exits_vcpu7" };
    bool per_vcpu = vm->opt.vcpus > 1 && vm->opt.cpu != VMM_CPU_UNICORN;
    for (unsigned i = 0; per_vcpu && i < vm->opt.vcpus && i < VMM_MAX_VCPUS;
         i++)
        U("vmm", vcpu_exits[i], L(exits_vcpu[i]));
    U("vmm", "coalesced_drained", L(coalesced_drained));
    U("vmm", "io_wakes", L(io_wakes));      /* vm.c, vmm_io_update() */
    U("vmm", "direct_maps", L(direct_maps));    /* kvm_cpu.c, direct_set() */
    U("vmm", "reboots", L(reboots));    /* --reboot */
    U("vmm", "guest_insns", L(insns));
    U("vmm", "unclaimed_pio",
      __atomic_load_n(&vm->pio.unclaimed, __ATOMIC_RELAXED));
    U("vmm", "unclaimed_mmio",
      __atomic_load_n(&vm->mmio.unclaimed, __ATOMIC_RELAXED));
    U("vmm", "guest_errors", dev_guest_errors());
    if (kvm) {
        /* docs/vmm.md, "Exits and traps": KVM's `exits` counts every
         * exit from the guest, those it handles in the kernel (a write
         * into a coalesced zone, an in-kernel PIT or PIC access, a HLT)
         * and those it returns to user space alike; host interrupts
         * (`irq_exits`) are not the guest's doing. */
        uint64_t user = L(exits) + L(exits_intr);
        uint64_t other = user + kvm[KVM_STAT_IRQ_EXITS];
        uint64_t all = kvm[KVM_STAT_EXITS];
        for (unsigned i = 0; i < KVM_STAT_COUNT_; i++)
            U("kvm", kvm_stat_names[i], kvm[i]);
        U("kvm", "user_exits", user);
        U("kvm", "traps", all > other ? all - other : 0);
    }
    if (vm->engine && lc_engine_get_stats(vm->engine, &ls) == LC_OK) {
        U("libcluster", "exits_seen", ls.exits_seen);
        U("libcluster", "exits_declined", ls.exits_declined);
        U("libcluster", "exits_interpreted", ls.exits_interpreted);
        U("libcluster", "exits_translated", ls.exits_translated);
        U("libcluster", "exits_saved", ls.exits_saved);
        U("libcluster", "insns", ls.insns);
        U("libcluster", "translations", ls.translations);
        U("libcluster", "retranslations", ls.retranslations);
        U("libcluster", "coherency_failures", ls.coherency_failures);
        U("libcluster", "smc_stops", ls.smc_stops);
        U("libcluster", "forced_translations", ls.forced_translations);
        U("libcluster", "evictions", ls.evictions);
        U("libcluster", "routed_accesses", ls.routed_accesses);
        /* held now, or when the back end's vCPUs went (the engine no
         * longer counts a destroyed vCPU's freed cache) */
        U("libcluster", "tcache_bytes",
          __atomic_load_n(&vm->stats.tcache_end_valid, __ATOMIC_ACQUIRE) ?
          L(tcache_end) : ls.tcache_bytes);
        U("libcluster", "kvm_completions", L(adapter.completions));
        U("libcluster", "kvm_exits_skipped", L(adapter.exits_skipped));
        U("libcluster", "kvm_string_io_declined",
          L(adapter.string_io_declined));
        for (int r = 0; r < LC_STOP_REASON_COUNT_; r++) {
            static char names[LC_STOP_REASON_COUNT_][40];
            if (!ls.stops[r])
                continue;
            snprintf(names[r], sizeof names[r], "stop_%s",
                     lc_stop_reason_name((lc_stop_reason)r));
            U("libcluster", names[r], ls.stops[r]);
        }
    }
    /* the devices' own counters ("nic", "net") */
    kv_sink sink = { t, n };
    pthread_mutex_lock(&vm->dev_lock);     /* the models update them under it */
    vmm_devices_stats(vm, put_device_stat, &sink);
    pthread_mutex_unlock(&vm->dev_lock);
    n = sink.n;
#undef U
#undef F
#undef L
    return n;
}

int vmm_print_stats(vmm *vm, const char *backend)
{
    kv t[MAX_KV];
    unsigned n;
    FILE *f = stderr;
    const char *sec = "";
    int bad;

    if (vm->opt.stats == VMM_STATS_NONE)
        return 0;
    if (vm->opt.stats_file && !(f = fopen(vm->opt.stats_file, "w"))) {
        perror(vm->opt.stats_file);
        return -1;
    }
    n = vmm_stats_collect(vm, vm->stats.kvm_stats ? vm->stats.kvm : NULL, t);
    if (vm->opt.stats == VMM_STATS_JSON) {
        fprintf(f, "{\n  \"backend\": \"%s\",\n  \"nic\": \"%s\",\n"
                "  \"cluster\": %s,\n  \"techniques\": %u,\n  \"cflow\": %d",
                backend, nic_model_name(vm->opt.nic),
                vm->opt.cluster ? "true" : "false", vm->opt.techniques,
                (int)vm->opt.cflow);
        for (unsigned i = 0; i < n; i++) {
            if (strcmp(sec, t[i].section)) {
                fprintf(f, "%s,\n  \"%s\": {", *sec ? "\n  }" : "",
                        t[i].section);
                sec = t[i].section;
            } else {
                fputc(',', f);
            }
            if (t[i].is_float)
                fprintf(f, "\n    \"%s\": %.6f", t[i].key, t[i].val);
            else
                fprintf(f, "\n    \"%s\": %.0f", t[i].key, t[i].val);
        }
        fprintf(f, "%s\n}\n", *sec ? "\n  }" : "");
    } else {
        fprintf(f, "%-12s %-26s %s\n", "section", "counter", "value");
        for (unsigned i = 0; i < n; i++) {
            if (t[i].is_float)
                fprintf(f, "%-12s %-26s %.3f\n", t[i].section, t[i].key,
                        t[i].val);
            else if (t[i].val != 0 || !strcmp(t[i].section, "vmm"))
                fprintf(f, "%-12s %-26s %.0f\n", t[i].section, t[i].key,
                        t[i].val);
        }
    }
    /* a full disk, /dev/full: the statistics were asked for and lost */
    bad = ferror(f) != 0;
    if (f != stderr && fclose(f))
        bad = 1;
    if (bad)
        fprintf(stderr, "lcvmm: %s: the statistics could not be written\n",
                vm->opt.stats_file ? vm->opt.stats_file : "stderr");
    return bad ? -1 : 0;
}

void vmm_trace_header(vmm *vm)
{
    fprintf(vm->trace, "seq,gap,kind,addr,size,write,handled,"
            "cluster_insns,exits_saved,pc,stop\n");
}

uint64_t vmm_trace_pc(uint64_t cs_base, uint64_t rip, uint64_t efer,
                      bool cs_l)
{
    uint64_t pc = cs_base + rip;

    return (efer & LC_EFER_LMA) && cs_l ? pc : (uint32_t)pc;
}

void vmm_trace_exit(vmm *vm, const lc_exit *ex, int64_t gap, uint64_t pc,
                    const lc_result *res)
{
    uint64_t addr, seq;
    unsigned size, write;
    char pcs[24] = "";

    if (!vm->trace)
        return;
    /* vCPU threads trace at once (-c N): each line whole (stdio locks the
     * stream), each with a sequence number of its own */
    seq = __atomic_fetch_add(&vm->trace_seq, 1, __ATOMIC_RELAXED);
    if (pc != VMM_PC_UNKNOWN)
        snprintf(pcs, sizeof pcs, "%#llx", (unsigned long long)pc);
    if (ex->kind == LC_EXIT_IO) {
        addr = ex->u.io.port;
        size = ex->u.io.size;
        write = ex->u.io.is_out;
    } else {
        addr = ex->u.mmio.gpa;
        size = ex->u.mmio.len;
        write = ex->u.mmio.is_write;
    }
    fprintf(vm->trace, "%llu,%lld,%s,%#llx,%u,%u,%d,%u,%u,%s,%s\n",
            (unsigned long long)seq, (long long)gap,
            lc_exit_kind_name(ex->kind), (unsigned long long)addr, size,
            write, res && res->disposition == LC_HANDLED,
            res ? res->insns : 0, res ? res->exits_saved : 0, pcs,
            res ? lc_stop_reason_name(res->stop) : "");
}
