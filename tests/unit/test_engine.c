/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_engine.c: engine and vCPU objects, configuration,
 * statistics, status strings and mode derivation through the public API.
 */
#include <string.h>

#include <cluster/cluster.h>

#include "harness.h"

static void map_nothing(void *opaque, uint64_t gpa, int is_write,
                        lc_gpa_map *out)
{
    (void)opaque; (void)gpa; (void)is_write;
    memset(out, 0, sizeof(*out));
}

static const lc_vm_ops ops = {
    .size = sizeof(lc_vm_ops),
    .gpa_map = map_nothing,
};

START_TEST(config_defaults_are_the_papers)
{
    lc_config c;

    lc_config_init(&c);
    ck_assert_uint_eq(c.size, sizeof c);
    ck_assert_uint_eq(c.techniques, LC_TECH_ALL);
    ck_assert_int_eq(c.cflow, LC_CFLOW_M3);
    ck_assert_uint_eq(c.max_cluster_insns, 16);       /* s4 */
    ck_assert_uint_eq(c.max_mem_gap_fillers, 4);      /* s4 */
    ck_assert_uint_eq(1u << c.track_index_bits, 512); /* s5 */
    ck_assert_uint_eq(c.track_index_bits + c.track_tag_bits, 35);
    ck_assert_uint_eq(c.track_depth, 8);
    ck_assert_uint_eq(c.translate_threshold, 3);
    ck_assert_uint_eq(c.leak_age_ns, 10000000000ull);
    ck_assert_uint_eq(c.weak_backedge_cap, 10);       /* s6.3 */
    ck_assert_int_eq(lc_config_validate(&c), LC_OK);
}
END_TEST

START_TEST(config_validation)
{
    lc_config c;

    ck_assert_int_eq(lc_config_validate(NULL), LC_ERR_INVAL);
    lc_config_init(&c); c.size = 3;
    ck_assert_int_eq(lc_config_validate(&c), LC_ERR_INVAL);
    /* the lc_config before exit_cost_ns (a caller built with it) */
    lc_config_init(&c); c.size = offsetof(lc_config, exit_cost_ns);
    ck_assert_int_eq(lc_config_validate(&c), LC_OK);
    lc_config_init(&c); c.size = sizeof c + 8;
    ck_assert_int_eq(lc_config_validate(&c), LC_ERR_INVAL);
    lc_config_init(&c); c.techniques = 1u << 30;
    ck_assert_int_eq(lc_config_validate(&c), LC_ERR_INVAL);
    lc_config_init(&c); c.cflow = (lc_cflow_method)7;
    ck_assert_int_eq(lc_config_validate(&c), LC_ERR_INVAL);
    lc_config_init(&c); c.max_cluster_insns = 0;
    ck_assert_int_eq(lc_config_validate(&c), LC_ERR_RANGE);
    lc_config_init(&c); c.max_cluster_insns = 65;     /* the window's cap */
    ck_assert_int_eq(lc_config_validate(&c), LC_ERR_RANGE);
    lc_config_init(&c); c.max_cluster_insns = 64;
    ck_assert_int_eq(lc_config_validate(&c), LC_OK);
    lc_config_init(&c); c.track_depth = 0;
    ck_assert_int_eq(lc_config_validate(&c), LC_ERR_RANGE);
    lc_config_init(&c); c.track_index_bits = 40;
    ck_assert_int_eq(lc_config_validate(&c), LC_ERR_RANGE);
    lc_config_init(&c); c.translate_threshold = 0;
    ck_assert_int_eq(lc_config_validate(&c), LC_ERR_RANGE);
    lc_config_init(&c); c.tcache_max_bytes = 100;
    ck_assert_int_eq(lc_config_validate(&c), LC_ERR_RANGE);
    lc_config_init(&c); c.insn_budget = 0;
    ck_assert_int_eq(lc_config_validate(&c), LC_ERR_RANGE);
}
END_TEST

START_TEST(engine_lifecycle)
{
    lc_engine *e = (lc_engine *)0x1;
    lc_vcpu *v0, *v1, *vx = (lc_vcpu *)0x1;
    lc_config c, got;
    lc_vm_ops no_map = ops;

    no_map.gpa_map = NULL;
    ck_assert_int_eq(lc_engine_create(NULL, &no_map, &e), LC_ERR_INVAL);
    ck_assert_ptr_null(e);
    ck_assert_int_eq(lc_engine_create(NULL, NULL, &e), LC_ERR_INVAL);
    ck_assert_int_eq(lc_engine_create(NULL, &ops, NULL), LC_ERR_INVAL);
    lc_config_init(&c); c.max_cluster_insns = 0;
    ck_assert_int_eq(lc_engine_create(&c, &ops, &e), LC_ERR_RANGE);

    /* An lc_config from before exit_cost_ns: taken, the field 0, and
     * given back no larger than it was. */
    lc_config_init(&c); c.size = offsetof(lc_config, exit_cost_ns);
    c.exit_cost_ns = 1234;          /* past the caller's struct: not read */
    ck_assert_int_eq(lc_engine_create(&c, &ops, &e), LC_OK);
    memset(&got, 0xa5, sizeof got);
    ck_assert_int_eq(lc_engine_get_config(e, &got), LC_OK);
    ck_assert_uint_eq(got.size, offsetof(lc_config, exit_cost_ns));
    ck_assert_uint_eq(got.max_mem_gap_fillers, 4);
    ck_assert_uint_eq(got.exit_cost_ns, 0xa5a5a5a5u);   /* not written */
    ck_assert_int_eq(lc_engine_destroy(e), LC_OK);

    lc_config_init(&c); c.max_cluster_insns = 8;
    c.exit_cost_ns = 9000;
    ck_assert_int_eq(lc_engine_create(&c, &ops, &e), LC_OK);
    ck_assert_int_eq(lc_engine_get_config(e, &got), LC_OK);
    ck_assert_uint_eq(got.max_cluster_insns, 8);
    ck_assert_uint_eq(got.exit_cost_ns, 9000);
    ck_assert_uint_eq(got.size, sizeof got);
    ck_assert_int_eq(lc_vcpu_create(e, 0, NULL, &v0), LC_OK);
    ck_assert_int_eq(lc_vcpu_create(e, 1, NULL, &v1), LC_OK);
    ck_assert_int_eq(lc_vcpu_create(NULL, 2, NULL, &vx), LC_ERR_INVAL);
    ck_assert_ptr_null(vx);
    ck_assert_int_eq(lc_engine_destroy(e), LC_ERR_BUSY);
    lc_vcpu_destroy(v0);
    ck_assert_int_eq(lc_engine_destroy(e), LC_ERR_BUSY);
    lc_vcpu_destroy(v1);
    ck_assert_int_eq(lc_engine_flush(e), LC_OK);
    ck_assert_int_eq(lc_engine_destroy(e), LC_OK);
    ck_assert_int_eq(lc_engine_destroy(NULL), LC_OK);
    lc_vcpu_destroy(NULL);
}
END_TEST

START_TEST(handle_exit_declines_and_counts)
{
    lc_engine *e;
    lc_vcpu *v0, *v1;
    lc_cpu_state st;
    lc_exit x;
    lc_result r;
    lc_stats s;

    ck_assert_int_eq(lc_engine_create(NULL, &ops, &e), LC_OK);
    ck_assert_int_eq(lc_vcpu_create(e, 0, NULL, &v0), LC_OK);
    ck_assert_int_eq(lc_vcpu_create(e, 1, NULL, &v1), LC_OK);
    memset(&st, 0, sizeof st);
    memset(&x, 0, sizeof x);
    x.kind = LC_EXIT_IO;
    x.u.io.port = 0xcf8;
    x.u.io.size = 4;
    x.u.io.is_out = 1;

    st.rip = 0x1234;
    ck_assert_int_eq(lc_vcpu_handle_exit(v0, &st, &x, &r), LC_OK);
    ck_assert_int_eq(r.disposition, LC_DECLINED);
    ck_assert_int_eq(r.stop, LC_STOP_UNSUPPORTED);
    ck_assert_uint_eq(r.dirty, 0);
    ck_assert_uint_eq(st.rip, 0x1234);          /* untouched */
    ck_assert_int_eq(lc_vcpu_handle_exit(v1, &st, &x, &r), LC_OK);
    ck_assert_int_eq(lc_vcpu_handle_exit(v1, &st, &x, &r), LC_OK);

    /* Malformed exit descriptions are rejected, not trusted. */
    x.u.io.size = 3;
    ck_assert_int_eq(lc_vcpu_handle_exit(v0, &st, &x, &r), LC_ERR_INVAL);
    x.u.io.size = 1;
    x.kind = (lc_exit_kind)0;
    ck_assert_int_eq(lc_vcpu_handle_exit(v0, &st, &x, &r), LC_ERR_INVAL);
    x.kind = LC_EXIT_MMIO;
    x.u.mmio.len = 16;
    ck_assert_int_eq(lc_vcpu_handle_exit(v0, &st, &x, &r), LC_ERR_INVAL);
    x.kind = LC_EXIT_CPUID;
    x.insn_len = 16;
    ck_assert_int_eq(lc_vcpu_handle_exit(v0, &st, &x, &r), LC_ERR_INVAL);
    ck_assert_int_eq(lc_vcpu_handle_exit(NULL, &st, &x, &r), LC_ERR_INVAL);
    ck_assert_int_eq(lc_vcpu_handle_exit(v0, NULL, &x, &r), LC_ERR_INVAL);
    ck_assert_int_eq(lc_vcpu_handle_exit(v0, &st, NULL, &r), LC_ERR_INVAL);
    ck_assert_int_eq(lc_vcpu_handle_exit(v0, &st, &x, NULL), LC_ERR_INVAL);

    ck_assert_int_eq(lc_vcpu_get_stats(v0, &s), LC_OK);
    ck_assert_uint_eq(s.exits_seen, 1);
    ck_assert_uint_eq(s.exits_declined, 1);
    ck_assert_uint_eq(s.stops[LC_STOP_UNSUPPORTED], 1);
    ck_assert_int_eq(lc_engine_get_stats(e, &s), LC_OK);
    ck_assert_uint_eq(s.exits_seen, 3);
    ck_assert_uint_eq(s.exits_declined, 3);
    ck_assert_uint_eq(s.exits_saved, 0);
    ck_assert_int_eq(lc_vcpu_reset_stats(v1), LC_OK);
    ck_assert_int_eq(lc_engine_get_stats(e, &s), LC_OK);
    ck_assert_uint_eq(s.exits_seen, 1);
    /* Counters of a destroyed vCPU stay in the engine's totals. */
    lc_vcpu_destroy(v0);
    ck_assert_int_eq(lc_engine_get_stats(e, &s), LC_OK);
    ck_assert_uint_eq(s.exits_seen, 1);
    ck_assert_int_eq(lc_vcpu_get_stats(NULL, &s), LC_ERR_INVAL);
    ck_assert_int_eq(lc_engine_get_stats(e, NULL), LC_ERR_INVAL);
    lc_vcpu_destroy(v1);
    ck_assert_int_eq(lc_engine_destroy(e), LC_OK);
}
END_TEST

START_TEST(status_strings)
{
    static const lc_status all[] = {
#define ALL_(name, value, msg) name,
        LC_STATUS_LIST(ALL_)
#undef ALL_
    };
    size_t n = sizeof all / sizeof all[0];

    for (size_t i = 0; i < n; i++) {
        ck_assert_ptr_nonnull(lc_strerror(all[i]));
        ck_assert_str_ne(lc_strerror(all[i]), "unknown status");
        for (size_t j = 0; j < i; j++) {
            ck_assert_int_ne(all[i], all[j]);
            ck_assert_str_ne(lc_strerror(all[i]), lc_strerror(all[j]));
        }
    }
    ck_assert_str_eq(lc_status_name(LC_ERR_INVAL), "LC_ERR_INVAL");
    ck_assert_str_eq(lc_strerror((lc_status)-1000), "unknown status");
    ck_assert_str_eq(lc_strerror((lc_status)5), "unknown status");
}
END_TEST

START_TEST(names_never_null)
{
    for (int i = -2; i < 64; i++) {
        ck_assert_ptr_nonnull(lc_op_name((lc_op)i));
        ck_assert_ptr_nonnull(lc_exit_class_name((lc_exit_class)i));
        ck_assert_ptr_nonnull(lc_cpu_mode_name((lc_cpu_mode)i));
        ck_assert_ptr_nonnull(lc_exit_kind_name((lc_exit_kind)i));
        ck_assert_ptr_nonnull(lc_stop_reason_name((lc_stop_reason)i));
    }
    ck_assert_str_eq(lc_op_name(LC_OP_VMREAD), "vmread");
    ck_assert_str_eq(lc_stop_reason_name(LC_STOP_SMC), "smc");
    ck_assert_str_eq(lc_exit_kind_name(LC_EXIT_IO), "io");
    ck_assert_uint_eq(lc_version() >> 16, LC_VERSION_MAJOR);
    ck_assert_str_eq(lc_version_string(), "0.1.0");
}
END_TEST

START_TEST(mode_derivation)
{
    lc_cpu_state s;

    memset(&s, 0, sizeof s);
    ck_assert_int_eq(lc_cpu_mode_of(&s), LC_MODE_REAL);
    s.seg[LC_CS].db = 1;      /* big real mode code still decodes 16-bit: */
    ck_assert_int_eq(lc_cpu_mode_of(&s), LC_MODE_REAL); /* PE=0 decides */
    s.cr0 = LC_CR0_PE;
    ck_assert_int_eq(lc_cpu_mode_of(&s), LC_MODE_PROT32);
    s.seg[LC_CS].db = 0;
    ck_assert_int_eq(lc_cpu_mode_of(&s), LC_MODE_PROT16);
    s.rflags = LC_RFLAGS_VM;
    ck_assert_int_eq(lc_cpu_mode_of(&s), LC_MODE_VM86);
    s.rflags = 0;
    s.cr0 |= LC_CR0_PG;
    s.efer = LC_EFER_LME | LC_EFER_LMA;
    ck_assert_int_eq(lc_cpu_mode_of(&s), LC_MODE_COMPAT16);
    s.seg[LC_CS].db = 1;
    ck_assert_int_eq(lc_cpu_mode_of(&s), LC_MODE_COMPAT32);
    s.seg[LC_CS].db = 0;
    s.seg[LC_CS].l = 1;
    ck_assert_int_eq(lc_cpu_mode_of(&s), LC_MODE_LONG64);
    ck_assert_uint_eq(lc_cpu_mode_bits(LC_MODE_LONG64), 64);
    ck_assert_uint_eq(lc_cpu_mode_bits(LC_MODE_COMPAT32), 32);
    ck_assert_uint_eq(lc_cpu_mode_bits(LC_MODE_REAL), 16);
}
END_TEST

static Suite *engine_suite(void)
{
    Suite *s = suite_create("engine");
    TCase *t = tcase_create("objects");

    tcase_add_test(t, config_defaults_are_the_papers);
    tcase_add_test(t, config_validation);
    tcase_add_test(t, engine_lifecycle);
    tcase_add_test(t, handle_exit_declines_and_counts);
    suite_add_tcase(s, t);
    t = tcase_create("names");
    tcase_add_test(t, status_strings);
    tcase_add_test(t, names_never_null);
    tcase_add_test(t, mode_derivation);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return lc_test_run(engine_suite());
}
