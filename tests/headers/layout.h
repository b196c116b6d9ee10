/* SPDX-License-Identifier: MIT */
/*
 * tests/headers/layout.h: one row per public structure (field "") and per
 * field, as the C11 and the C++11 compilers lay them out. A VMM written
 * in C++ passes these structures to a library compiled as C, so any
 * difference is an ABI break.
 */
#ifndef LC_TEST_LAYOUT_H
#define LC_TEST_LAYOUT_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct lc_layout_row {
    const char *type;
    const char *field;   /* "" for the structure itself */
    size_t size;         /* sizeof the field or the structure */
    size_t place;        /* offsetof the field, alignof the structure */
} lc_layout_row;

/* Both end with a row whose type is NULL. */
extern const lc_layout_row lc_layout_c[];
extern const lc_layout_row lc_layout_cpp[];

#ifdef __cplusplus
}
#endif

#endif /* LC_TEST_LAYOUT_H */
