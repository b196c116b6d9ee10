/* SPDX-License-Identifier: MIT */
/*
 * Links the header-alone objects (C and C++) so the build fails if any
 * public header does not compile alone, and checks that C and C++ agree
 * on the layout of the structures that cross the API.
 */
#include <stdio.h>

#include <cluster/cluster.h>

#define DECL(n) int lc_header_check_##n##_c(void);
DECL(cluster) DECL(cpu) DECL(decode) DECL(engine) DECL(error) DECL(exit)
DECL(ops) DECL(stats)
#undef DECL

int main(void)
{
    int bad = lc_header_check_cluster_c() | lc_header_check_cpu_c() |
              lc_header_check_decode_c() | lc_header_check_engine_c() |
              lc_header_check_error_c() | lc_header_check_exit_c() |
              lc_header_check_ops_c() | lc_header_check_stats_c();

    printf("public headers compile alone in C11%s\n",
           LC_HAVE_CPP ? " and C++11" : " (no C++ compiler found)");
    if (lc_version() >> 16 != LC_VERSION_MAJOR) {
        fprintf(stderr, "header/library major version mismatch\n");
        bad = 1;
    }
    return bad;
}
