/* SPDX-License-Identifier: MIT */
/*
 * libcluster/exit_tracking.c: exit tracking (paper section 5). See exit_tracking.h.
 *
 * Rows are guarded by a byte spin flag each: the table is touched only on
 * the interpreted (pre-translation) path, never on a translation hit, and
 * two vCPUs contend only when they exit on instructions of the same row.
 */
#include <stdlib.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "exit_tracking.h"

lc_status lct_init(lct_table *t, const lc_config *cfg)
{
    memset(t, 0, sizeof(*t));
    t->index_bits = cfg->track_index_bits;
    t->tag_bits = cfg->track_tag_bits;
    t->nrows = 1u << cfg->track_index_bits;
    t->depth = cfg->track_depth;
    t->threshold = cfg->translate_threshold;
    t->tick_ns = cfg->leak_age_ns / LCT_LEAK_TICKS;
    if (t->tick_ns == 0)
        t->tick_ns = 1;
    t->e = calloc((size_t)t->nrows * t->depth, sizeof(*t->e));
    t->lock = calloc(t->nrows, 1);
    if (!t->e || !t->lock) {
        lct_fini(t);
        return LC_ERR_NOMEM;
    }
    return LC_OK;
}

void lct_fini(lct_table *t)
{
    free(t->e);
    free(t->lock);
    t->e = NULL;
    t->lock = NULL;
}

static void row_lock(lct_table *t, uint32_t row);
static void row_unlock(lct_table *t, uint32_t row);

/* Row by row under each row's lock: lc_engine_flush() may run while
 * vCPU threads record exits. */
void lct_clear(lct_table *t)
{
    if (!t->e)
        return;
    for (uint32_t row = 0; row < t->nrows; row++) {
        row_lock(t, row);
        memset(&t->e[(size_t)row * t->depth], 0, t->depth * sizeof(*t->e));
        row_unlock(t, row);
    }
}

uint64_t lct_hash(uint64_t rip, const uint8_t *bytes, unsigned len)
{
    uint8_t buf[8 + 1 + LC_INSN_MAX_LEN];

    if (len > LC_INSN_MAX_LEN)
        len = LC_INSN_MAX_LEN;
    memcpy(buf, &rip, 8);
    buf[8] = (uint8_t)len;
    memcpy(buf + 9, bytes, len);
    return XXH3_64bits(buf, 9 + len);
}

static void row_lock(lct_table *t, uint32_t row)
{
    while (__atomic_test_and_set(&t->lock[row], __ATOMIC_ACQUIRE))
        ;
}

static void row_unlock(lct_table *t, uint32_t row)
{
    __atomic_clear(&t->lock[row], __ATOMIC_RELEASE);
}

static void split(const lct_table *t, uint64_t h, uint32_t *row,
                  uint32_t *tag)
{
    *row = (uint32_t)(h & (t->nrows - 1));
    *tag = (uint32_t)((h >> t->index_bits) &
                      ((t->tag_bits >= 32 ? 0xffffffffu
                                          : (1u << t->tag_bits) - 1))) &
           ~LCT_VALID;
    *tag |= LCT_VALID;
}

lct_verdict lct_record(lct_table *t, uint64_t h, uint8_t props,
                       uint64_t now_ns, uint8_t *props_out)
{
    uint32_t row, tag;
    uint16_t now = (uint16_t)(now_ns / t->tick_ns);
    lct_entry *r;
    lct_verdict v = LCT_INTERPRET;

    split(t, h, &row, &tag);
    r = &t->e[(size_t)row * t->depth];
    row_lock(t, row);
    for (uint32_t i = 0; i < t->depth; i++) {
        if (r[i].tag != tag)
            continue;
        if (r[i].count < t->threshold)
            r[i].count++;
        r[i].stamp = now;
        r[i].props |= props;
        *props_out = r[i].props;
        if (r[i].count >= t->threshold)
            v = LCT_TRANSLATE;
        row_unlock(t, row);
        return v;
    }
    /* New instruction: push it in at the front, shifting out the oldest.
     * If the one shifted out exited more recently than the leak age, the
     * FIFO is cycling too fast for anything to reach the threshold. */
    {
        lct_entry *old = &r[t->depth - 1];
        if (old->tag & LCT_VALID) {
            uint16_t age = (uint16_t)(now - old->stamp);
            if (age > LCT_AGE_MAX)
                age = LCT_AGE_MAX;
            if (age < LCT_LEAK_TICKS)
                v = LCT_TRANSLATE_FORCED;
        }
        memmove(&r[1], &r[0], (t->depth - 1) * sizeof(*r));
        r[0].tag = tag;
        r[0].stamp = now;
        r[0].count = 1;
        r[0].props = props;
        if (v == LCT_INTERPRET && r[0].count >= t->threshold)
            v = LCT_TRANSLATE;          /* threshold 1: translate at once */
        *props_out = props;
    }
    row_unlock(t, row);
    return v;
}

uint8_t lct_lookup(lct_table *t, uint64_t h)
{
    uint32_t row, tag;
    uint8_t props = 0;
    const lct_entry *r;

    split(t, h, &row, &tag);
    r = &t->e[(size_t)row * t->depth];
    row_lock(t, row);
    for (uint32_t i = 0; i < t->depth; i++)
        if (r[i].tag == tag) {
            props = r[i].props;
            break;
        }
    row_unlock(t, row);
    return props;
}
