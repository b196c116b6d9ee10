/* SPDX-License-Identifier: MIT */
/*
 * paper_demo: decode every code example of the paper with libcluster and
 * print each instruction's length, operation and exit class beside the
 * paper's own marking. Uses the public API only.
 *
 *   paper_demo [--example NAME] [--list]
 */
#include <stdio.h>
#include <string.h>

#include <cluster/cluster.h>

#include "paper_examples.h"
#include "paper_run.h"

static const char class_tag[LC_CLASS_COUNT_] = {
    [LC_CLASS_TERMINATOR] = 'T', [LC_CLASS_GAP_FILLER] = ' ',
    [LC_CLASS_WEAK] = 'w',       [LC_CLASS_STRONG] = 'S',
};

static int show(const paper_example *ex)
{
    uint64_t rip = 0x1000;
    unsigned strong = 0, weak = 0, stars = 0, mismatches = 0;

    printf("\n== %s (section %s, %s): %s\n", ex->name, ex->section,
           lc_cpu_mode_name(ex->mode), ex->title);
    for (size_t i = 0; i < ex->count; i++) {
        const paper_insn *pi = &ex->insns[i];
        lc_insn_info info;
        char text[96], hex[3 * LC_INSN_MAX_LEN + 1] = "";
        lc_status st = lc_decode(ex->mode, pi->bytes, pi->len, &info);

        if (st != LC_OK) {
            printf("  %04llx  %-30s  decode failed: %s\n",
                   (unsigned long long)rip, pi->text, lc_strerror(st));
            return 1;
        }
        for (unsigned b = 0; b < info.length; b++)
            snprintf(hex + 3 * b, sizeof(hex) - 3 * b, "%02x ",
                     info.bytes[b]);
        if (lc_insn_format(&info, rip, text, sizeof(text)) != LC_OK)
            snprintf(text, sizeof(text), "(unformattable)");
        if (info.op != pi->op || info.exit_class != pi->cls ||
            info.length != pi->len)
            mismatches++;
        strong += info.exit_class == LC_CLASS_STRONG;
        weak += info.exit_class == LC_CLASS_WEAK;
        stars += pi->paper_exits;
        printf("  %04llx  %c %c %-21s %-34s %-8s %s\n",
               (unsigned long long)rip, pi->paper_exits ? '*' : ' ',
               class_tag[info.exit_class], hex, text, lc_op_name(info.op),
               lc_exit_class_name(info.exit_class));
        rip += info.length;
    }
    printf("  -> %zu instructions, %u strongly exiting, %u weakly exiting, "
           "%u exiting in the paper%s\n", ex->count, strong, weak, stars,
           mismatches ? "  ** MISMATCH with expected classes **" : "");
    return mismatches != 0;
}

int main(int argc, char **argv)
{
    const char *only = NULL;
    int bad = 0, shown = 0;

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--list")) {
            for (size_t e = 0; e < paper_examples_count; e++)
                printf("%-14s section %-4s %s\n", paper_examples[e].name,
                       paper_examples[e].section, paper_examples[e].title);
            return 0;
        } else if (!strcmp(argv[i], "--example") && i + 1 < argc) {
            only = argv[++i];
        } else {
            fprintf(stderr, "usage: %s [--list] [--example NAME]\n", argv[0]);
            return 2;
        }
    }

    printf("libcluster %s: the code examples of Agesen et al. (USENIX ATC "
           "2012), decoded\n", lc_version_string());
    printf("columns: address, paper's exit mark (*), class (S strongly "
           "exiting, w weakly exiting, T terminator), bytes, text, "
           "operation, class\n");
    for (size_t e = 0; e < paper_examples_count; e++) {
        if (only && strcmp(only, paper_examples[e].name))
            continue;
        bad |= show(&paper_examples[e]);
        shown++;
    }
    if (!only) {
        printf("\n== through the engine: each example exits on its first "
               "instruction; the first two exits are interpreted, the third "
               "runs the cached cluster\n");
        printf("  %-14s %-7s %13s %12s %11s %8s %-10s\n", "example", "mode",
               "exit 1 ran", "exit 3 ran", "exits done", "saved", "ended by");
        for (size_t e = 0; e < paper_examples_count; e++) {
            paper_run_result r;
            if (paper_run(&paper_examples[e], &r) != 0) {
                printf("  %-14s could not be run\n", paper_examples[e].name);
                bad = 1;
                continue;
            }
            printf("  %-14s %-7s %7u insns %6u insns %11u %8u %-10s\n",
                   paper_examples[e].name,
                   lc_cpu_mode_name(paper_examples[e].mode), r.insns_first,
                   r.insns, r.exits_done, r.exits_saved, r.stop);
        }
    }
    if (only && !shown) {
        fprintf(stderr, "paper_demo: no example named '%s' (see --list)\n",
                only);
        return 2;
    }
    return bad;
}
