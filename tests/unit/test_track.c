/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_track.c: exit tracking (paper section 5, figure 1).
 */
#include <string.h>

#include "../../libcluster/exit_tracking.h"
#include "harness.h"

#define SEC 1000000000ull

/* A hash landing in `row` with tag `tag` for the default 9 + 26 split. */
static uint64_t H(uint32_t row, uint32_t tag)
{
    return (uint64_t)row | ((uint64_t)tag << 9);
}

static void init(lct_table *t, lc_config *c)
{
    lc_config_init(c);
    ck_assert_int_eq(lct_init(t, c), LC_OK);
}

/* Interpret the first two exits, translate on the third (s5). */
START_TEST(third_exit_translates)
{
    lct_table t; lc_config c; uint8_t p;

    init(&t, &c);
    ck_assert_uint_eq(t.nrows, 512);
    ck_assert_uint_eq(t.depth, 8);
    ck_assert_int_eq(lct_record(&t, H(5, 77), LCT_PROP_PIO, 0, &p), LCT_INTERPRET);
    ck_assert_int_eq(lct_record(&t, H(5, 77), LCT_PROP_PIO, SEC, &p), LCT_INTERPRET);
    ck_assert_int_eq(lct_record(&t, H(5, 77), LCT_PROP_PIO, 2 * SEC, &p), LCT_TRANSLATE);
    ck_assert_int_eq(lct_record(&t, H(5, 77), LCT_PROP_PIO, 3 * SEC, &p), LCT_TRANSLATE);
    /* Another tag in the same row, and the same tag in another row, are
     * other instructions. */
    ck_assert_int_eq(lct_record(&t, H(5, 78), LCT_PROP_PIO, 0, &p), LCT_INTERPRET);
    ck_assert_int_eq(lct_record(&t, H(6, 77), LCT_PROP_PIO, 0, &p), LCT_INTERPRET);
    lct_fini(&t);
}
END_TEST

/* The reasons accumulate and the predictor sees them. */
START_TEST(properties_accumulate)
{
    lct_table t; lc_config c; uint8_t p;

    init(&t, &c);
    ck_assert_uint_eq(lct_lookup(&t, H(9, 1)), 0);
    lct_record(&t, H(9, 1), LCT_PROP_MMIO, 0, &p);
    ck_assert_uint_eq(p, LCT_PROP_MMIO);
    lct_record(&t, H(9, 1), LCT_PROP_APIC, 0, &p);
    ck_assert_uint_eq(p, LCT_PROP_MMIO | LCT_PROP_APIC);
    ck_assert_uint_eq(lct_lookup(&t, H(9, 1)), LCT_PROP_MMIO | LCT_PROP_APIC);
    ck_assert_uint_eq(lct_lookup(&t, H(9, 2)), 0);
    lct_fini(&t);
}
END_TEST

/* Slow churn: nine instructions through one 8-deep FIFO, each arriving
 * more than the leak age after the last: the oldest drops out quietly and
 * must count to three again. */
START_TEST(slow_eviction_is_quiet)
{
    lct_table t; lc_config c; uint8_t p;
    uint64_t now = 0;

    init(&t, &c);
    for (uint32_t i = 0; i < 8; i++) {
        ck_assert_int_eq(lct_record(&t, H(3, 100 + i), LCT_PROP_PIO, now, &p),
                         LCT_INTERPRET);
        now += 11 * SEC;
    }
    ck_assert_int_eq(lct_record(&t, H(3, 200), LCT_PROP_PIO, now, &p),
                     LCT_INTERPRET);
    /* The first one is gone: it starts over. */
    now += 11 * SEC;
    ck_assert_int_eq(lct_record(&t, H(3, 100), LCT_PROP_PIO, now, &p),
                     LCT_INTERPRET);
    lct_fini(&t);
}
END_TEST

/* Fast churn: the ninth new instruction within the leak age pushes out
 * an entry that exited moments ago; the leak guard forces translation. */
START_TEST(leak_guard_forces_translation)
{
    lct_table t; lc_config c; uint8_t p;
    unsigned forced = 0;

    init(&t, &c);
    for (uint32_t i = 0; i < 64; i++)
        if (lct_record(&t, H(3, 1000 + i), LCT_PROP_PIO, i * 1000, &p) ==
            LCT_TRANSLATE_FORCED)
            forced++;
    ck_assert_uint_eq(forced, 64 - 8);      /* every insertion past the 8th */
    lct_fini(&t);
}
END_TEST

/* Constants come from the configuration. */
START_TEST(configurable)
{
    lct_table t; lc_config c; uint8_t p;

    lc_config_init(&c);
    c.track_index_bits = 4;
    c.track_depth = 2;
    c.translate_threshold = 2;
    ck_assert_int_eq(lct_init(&t, &c), LC_OK);
    ck_assert_uint_eq(t.nrows, 16);
    ck_assert_int_eq(lct_record(&t, 0x13, 0, 0, &p), LCT_INTERPRET);
    ck_assert_int_eq(lct_record(&t, 0x13, 0, 0, &p), LCT_TRANSLATE);
    /* Depth 2: the third new instruction in row 3 evicts the first. */
    ck_assert_int_eq(lct_record(&t, 0x23, 0, 0, &p), LCT_INTERPRET);
    ck_assert_int_eq(lct_record(&t, 0x33, 0, 0, &p), LCT_TRANSLATE_FORCED);
    lct_clear(&t);
    ck_assert_uint_eq(lct_lookup(&t, 0x33), 0);
    lct_fini(&t);
    c.translate_threshold = 1;
    ck_assert_int_eq(lct_init(&t, &c), LC_OK);
    ck_assert_int_eq(lct_record(&t, 0x13, 0, 0, &p), LCT_TRANSLATE);
    lct_fini(&t);
}
END_TEST

/* The hash covers RIP, length and bytes. */
START_TEST(hash_inputs)
{
    const uint8_t a[] = { 0xe6, 0x80 }, b[] = { 0xe6, 0x81 };

    ck_assert_uint_ne(lct_hash(0x1000, a, 2), lct_hash(0x1001, a, 2));
    ck_assert_uint_ne(lct_hash(0x1000, a, 2), lct_hash(0x1000, b, 2));
    ck_assert_uint_ne(lct_hash(0x1000, a, 2), lct_hash(0x1000, a, 1));
    ck_assert_uint_eq(lct_hash(0x1000, a, 2), lct_hash(0x1000, a, 2));
}
END_TEST

static Suite *track_suite(void)
{
    Suite *s = suite_create("track");
    TCase *t = tcase_create("fifo");

    tcase_add_test(t, third_exit_translates);
    tcase_add_test(t, properties_accumulate);
    tcase_add_test(t, slow_eviction_is_quiet);
    tcase_add_test(t, leak_guard_forces_translation);
    tcase_add_test(t, configurable);
    tcase_add_test(t, hash_inputs);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return lc_test_run(track_suite());
}
