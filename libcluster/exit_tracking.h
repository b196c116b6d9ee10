/* SPDX-License-Identifier: MIT */
/*
 * libcluster/exit_tracking.h: exit tracking with leakage-rate-aware FIFOs
 * (paper section 5, figure 1).
 *
 * An exiting instruction is hashed from (RIP, length, bytes) into
 * index_bits + tag_bits (9 + 26 = 35 by default). The index picks one of
 * 2^index_bits FIFOs of `depth` entries (8); an entry holds the tag, how
 * many exits it has seen, when it last exited, and property bits saying
 * *why* it exited. The first exits are interpreted and recorded; the exit
 * that reaches the threshold (the third) is translated. When a full FIFO
 * pushes out an entry younger than the leak age, entries are leaking
 * faster than they can reach the threshold, and the current instruction
 * is translated at once (the leak guard), so the engine can never be
 * stuck interpreting forever.
 */
#ifndef LC_LIBCLUSTER_EXIT_TRACKING_H
#define LC_LIBCLUSTER_EXIT_TRACKING_H

#include <stdint.h>

#include <cluster/decode.h>
#include <cluster/config.h>

/* Why an instruction exited (lct_entry.props). */
enum lct_prop {
    LCT_PROP_PIO    = 1u << 0,  /* port I/O */
    LCT_PROP_MMIO   = 1u << 1,  /* a device's MMIO range */
    LCT_PROP_TRACED = 1u << 2,  /* a write-watched page */
    LCT_PROP_APIC   = 1u << 3,  /* the local APIC page (0xfee00000) */
    LCT_PROP_INSN   = 1u << 4,  /* an instruction exit (CPUID, MOV DR, ...) */
};

typedef struct lct_entry {
    uint32_t tag;      /* LCT_VALID | tag */
    uint16_t stamp;    /* coarse time of the last exit, in ticks */
    uint8_t  count;    /* exits seen, saturating at the threshold */
    uint8_t  props;    /* enum lct_prop, accumulated */
} lct_entry;

#define LCT_VALID (1u << 31)

typedef struct lct_table {
    lct_entry *e;          /* nrows * depth, row-major, newest first */
    uint8_t   *lock;       /* one spin flag per row */
    uint32_t   nrows, depth, index_bits, tag_bits, threshold;
    uint64_t   tick_ns;    /* leak_age_ns / 8: ages are 4-bit ticks */
} lct_table;

typedef enum lct_verdict {
    LCT_INTERPRET = 0,     /* below the threshold: interpret this exit */
    LCT_TRANSLATE,         /* reached the threshold */
    LCT_TRANSLATE_FORCED,  /* the leak guard fired */
} lct_verdict;

/* Age threshold in ticks: an evicted entry younger than this leaks. */
#define LCT_LEAK_TICKS 8
#define LCT_AGE_MAX 15

lc_status lct_init(lct_table *t, const lc_config *cfg);
void lct_fini(lct_table *t);
void lct_clear(lct_table *t);

/* The 64-bit hash of an instruction; the table uses its low
 * index_bits + tag_bits. */
uint64_t lct_hash(uint64_t rip, const uint8_t *bytes, unsigned len);

/* Record one exit of the instruction with hash `h` for reason `props` at
 * time `now_ns`; *props_out receives the accumulated reasons. */
lct_verdict lct_record(lct_table *t, uint64_t h, uint8_t props,
                       uint64_t now_ns, uint8_t *props_out);

/* Has the instruction with hash `h` been seen exiting? Returns its
 * accumulated reasons, or 0 (the dynamic-cluster predictor). */
uint8_t lct_lookup(lct_table *t, uint64_t h);

#endif /* LC_LIBCLUSTER_EXIT_TRACKING_H */
