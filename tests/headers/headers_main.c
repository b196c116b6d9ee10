/* SPDX-License-Identifier: MIT */
/*
 * Links the header-alone objects (C and C++) so the build fails if any
 * public header does not compile alone, and checks that C and C++ agree
 * on the layout of the structures that cross the API: the sizeof and
 * alignof of every public structure and the sizeof and offsetof of every
 * field (layout_table.inc, from the list gen_layout.py makes of the
 * headers), compared row by row.
 */
#include <stdio.h>
#include <string.h>

#include <cluster/cluster.h>

#include "layout.h"

#define DECL(n) int lc_header_check_##n##_c(void);
DECL(cluster) DECL(cpu) DECL(decode) DECL(engine) DECL(error) DECL(exit)
DECL(ops) DECL(stats)
#undef DECL

/* Every field lies inside its structure (catches a table that is wrong
 * for C as well as one that differs between the languages). */
static int check_inside(const lc_layout_row *t)
{
    size_t size = 0;
    int bad = 0, nstruct = 0;

    for (; t->type; t++) {
        if (!t->field[0]) {
            size = t->size;
            nstruct++;
            continue;
        }
        if (t->size == 0 || t->place + t->size > size) {
            fprintf(stderr, "%s.%s: %zu bytes at %zu, outside %zu\n",
                    t->type, t->field, t->size, t->place, size);
            bad = 1;
        }
    }
    return bad || nstruct == 0;
}

static int compare(const lc_layout_row *c, const lc_layout_row *cpp)
{
    unsigned rows = 0;
    int bad = 0;

    for (; c->type && cpp->type; c++, cpp++, rows++) {
        const char *what = c->field[0] ? "offset" : "align";
        if (strcmp(c->type, cpp->type) || strcmp(c->field, cpp->field)) {
            fprintf(stderr, "row %u: C %s.%s, C++ %s.%s\n", rows, c->type,
                    c->field, cpp->type, cpp->field);
            return 1;
        }
        if (c->size != cpp->size || c->place != cpp->place) {
            fprintf(stderr, "%s%s%s: C size %zu %s %zu, C++ size %zu %s "
                    "%zu\n", c->type, c->field[0] ? "." : "", c->field,
                    c->size, what, c->place, cpp->size, what, cpp->place);
            bad = 1;
        }
    }
    if (c->type || cpp->type) {
        fprintf(stderr, "the C and C++ tables differ in length\n");
        return 1;
    }
    if (!bad)
        printf("C11 and C++11 agree on %u structure and field layouts\n",
               rows);
    return bad;
}

int main(void)
{
    int bad = lc_header_check_cluster_c() | lc_header_check_cpu_c() |
              lc_header_check_decode_c() | lc_header_check_engine_c() |
              lc_header_check_error_c() | lc_header_check_exit_c() |
              lc_header_check_ops_c() | lc_header_check_stats_c();

    bad |= check_inside(lc_layout_c);
#if LC_HAVE_CPP
    bad |= check_inside(lc_layout_cpp);
    bad |= compare(lc_layout_c, lc_layout_cpp);
#else
    (void)compare;
#endif
    printf("public headers compile alone in C11%s\n",
           LC_HAVE_CPP ? " and C++11" : " (no C++ compiler found)");
    if (lc_version() >> 16 != LC_VERSION_MAJOR) {
        fprintf(stderr, "header/library major version mismatch\n");
        bad = 1;
    }
    return bad;
}
