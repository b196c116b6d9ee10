/* SPDX-License-Identifier: MIT */
/* examples/paper/paper_run.h: run a paper example through the engine. */
#ifndef LC_PAPER_RUN_H
#define LC_PAPER_RUN_H

#include "paper_examples.h"

typedef struct paper_run_result {
    unsigned insns_first;      /* instructions the first (interpreted) exit ran */
    unsigned insns;            /* instructions one translated exit ran */
    unsigned exits_done;       /* exiting instructions it ran */
    unsigned exits_saved;      /* of which avoided exits */
    unsigned device_accesses;  /* port, MMIO and traced accesses it made */
    const char *stop;          /* why the run ended */
} paper_run_result;

/* 0 on success, -1 if the example could not be run. */
int paper_run(const paper_example *ex, paper_run_result *out);

#endif /* LC_PAPER_RUN_H */
