/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/harness.h: run one Check suite with TAP output on stdout so
 * Meson counts every test case, each in its own forked process with a
 * timeout (Check's defaults, CK_FORK unless the environment says no).
 */
#ifndef LC_TEST_HARNESS_H
#define LC_TEST_HARNESS_H

#include <check.h>
#include <stdlib.h>

static inline int lc_test_run(Suite *s)
{
    SRunner *sr = srunner_create(s);
    int failed;

    srunner_set_tap(sr, "-");
    srunner_run_all(sr, CK_SILENT);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* Hex string ("0f 23 d3") to bytes; returns the count. */
static inline size_t lc_test_hex(const char *hex, unsigned char *out,
                                 size_t cap)
{
    size_t n = 0;
    int hi = -1;

    for (; *hex && n < cap; hex++) {
        int v;
        if (*hex >= '0' && *hex <= '9') v = *hex - '0';
        else if (*hex >= 'a' && *hex <= 'f') v = *hex - 'a' + 10;
        else if (*hex >= 'A' && *hex <= 'F') v = *hex - 'A' + 10;
        else continue;
        if (hi < 0) {
            hi = v;
        } else {
            out[n++] = (unsigned char)(hi << 4 | v);
            hi = -1;
        }
    }
    return n;
}

#endif /* LC_TEST_HARNESS_H */
