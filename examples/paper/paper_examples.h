/* SPDX-License-Identifier: MIT */
/*
 * examples/paper/paper_examples.h: the paper's code examples as data,
 * shared by the demo (paper_demo.c) and the decoder tests.
 */
#ifndef LC_PAPER_EXAMPLES_H
#define LC_PAPER_EXAMPLES_H

#include <stddef.h>
#include <stdint.h>

#include <cluster/cluster.h>

typedef struct paper_insn {
    const char   *text;        /* as printed in the paper */
    uint8_t       len;
    uint8_t       bytes[LC_INSN_MAX_LEN];
    lc_op         op;          /* expected operation */
    lc_exit_class cls;         /* expected exit class */
    uint8_t       paper_exits; /* marked with an asterisk in the paper */
} paper_insn;

typedef struct paper_example {
    const char       *name;
    const char       *section;
    const char       *title;
    lc_cpu_mode       mode;
    const paper_insn *insns;
    size_t            count;
} paper_example;

extern const paper_example paper_examples[];
extern const size_t paper_examples_count;

/* The example named `name`, or NULL. */
const paper_example *paper_example_find(const char *name);

/* Copy the example's bytes, back to back, to `dst` (room for `cap`
 * bytes); returns the number of bytes, or 0 if they do not fit. */
size_t paper_example_bytes(const paper_example *ex, uint8_t *dst,
                           size_t cap);

#endif /* LC_PAPER_EXAMPLES_H */
