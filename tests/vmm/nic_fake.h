/* SPDX-License-Identifier: MIT */
/*
 * tests/vmm/nic_fake.h: a fake platform for the NIC models.
 *
 * 1 MiB of guest RAM at guest-physical 0 behind a bounds-checked vm_dma,
 * an interrupt line that records every call and level change, and a
 * network backend that records transmitted frames and serves received
 * ones from a queue (optionally echoing each transmitted frame back, as
 * the built-in peer answers synchronously).
 */
#ifndef TEST_NIC_FAKE_H
#define TEST_NIC_FAKE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "nic.h"

#define FAKE_RAM     (1u << 20)
#define FAKE_FRAMES  64

typedef struct fake_frame {
    size_t  len;
    uint8_t data[NET_FRAME_MAX];
} fake_frame;

typedef struct fake_be {
    net_backend be;                 /* first: the NIC sees this */
    fake_frame tx[FAKE_FRAMES];     /* the first FAKE_FRAMES sent */
    unsigned ntx;                   /* all sent */
    fake_frame rx[FAKE_FRAMES];     /* waiting to be received */
    unsigned rx_head, rx_tail;
    bool echo;                      /* queue each sent frame back */
    int fd;                         /* poll_fd's answer: -1 (as the
                                     * peer), or fake_as_tap() */
} fake_be;

typedef struct fake {
    uint8_t *ram;
    vm_dma dma;
    vm_irq irq;
    int level;                      /* last level set */
    unsigned irq_calls, irq_rises;
    unsigned dma_reads, dma_writes, dma_errors;
    fake_be be;
    nic *n;
} fake;

static int fake_dma_read(void *o, uint64_t gpa, void *buf, size_t len)
{
    fake *f = o;

    f->dma_reads++;
    if (gpa > FAKE_RAM || len > FAKE_RAM - gpa) {
        f->dma_errors++;
        return -1;
    }
    memcpy(buf, f->ram + gpa, len);
    return 0;
}

static int fake_dma_write(void *o, uint64_t gpa, const void *buf, size_t len)
{
    fake *f = o;

    f->dma_writes++;
    if (gpa > FAKE_RAM || len > FAKE_RAM - gpa) {
        f->dma_errors++;
        return -1;
    }
    memcpy(f->ram + gpa, buf, len);
    return 0;
}

static void fake_irq_set(void *o, unsigned gsi, int level)
{
    fake *f = o;

    ck_assert_uint_eq(gsi, 11);
    f->irq_calls++;
    if (level && !f->level)
        f->irq_rises++;
    f->level = level;
}

static int fake_be_tx(net_backend *be, const uint8_t *frame, size_t len)
{
    fake_be *b = (fake_be *)be;

    ck_assert_uint_ge(len, NET_FRAME_MIN);
    ck_assert_uint_le(len, NET_FRAME_MAX);
    if (b->ntx < FAKE_FRAMES) {
        b->tx[b->ntx].len = len;
        memcpy(b->tx[b->ntx].data, frame, len);
    }
    b->ntx++;
    if (b->echo && b->rx_tail - b->rx_head < FAKE_FRAMES) {
        fake_frame *r = &b->rx[b->rx_tail++ % FAKE_FRAMES];
        r->len = len;
        memcpy(r->data, frame, len);
    }
    be->stats.tx_frames++;
    return 0;
}

static size_t fake_be_rx(net_backend *be, uint8_t *buf, size_t cap)
{
    fake_be *b = (fake_be *)be;
    fake_frame *r;

    ck_assert_uint_ge(cap, NET_FRAME_MAX);
    if (b->rx_head == b->rx_tail)
        return 0;
    r = &b->rx[b->rx_head++ % FAKE_FRAMES];
    memcpy(buf, r->data, r->len);
    return r->len;
}

static int fake_be_fd(net_backend *be)
{
    return ((fake_be *)be)->fd;
}

static void fake_be_destroy(net_backend *be)
{
    (void)be;
}

static const net_backend_ops fake_be_ops = {
    "fake", fake_be_tx, fake_be_rx, fake_be_fd, fake_be_destroy,
};

static const uint8_t fake_mac[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 };

/* A NIC of `model` on a fresh fake platform, bus mastering on. */
static inline void fake_init(fake *f, nic_model model, const nic_options *o)
{
    memset(f, 0, sizeof *f);
    f->ram = calloc(1, FAKE_RAM);
    ck_assert_ptr_nonnull(f->ram);
    f->dma = (vm_dma){ f, fake_dma_read, fake_dma_write };
    f->irq = (vm_irq){ f, fake_irq_set, 11 };
    f->be.be.ops = &fake_be_ops;
    f->be.fd = -1;
    f->n = nic_create(model, fake_mac, &f->dma, &f->irq, &f->be.be, o);
    ck_assert_ptr_nonnull(f->n);
    nic_set_bus_master(f->n, true);
}

static inline void fake_fini(fake *f)
{
    nic_destroy(f->n);
    free(f->ram);
}

/* Queue a frame for the NIC to receive. */
static inline void fake_rx_push(fake *f, const uint8_t *data, size_t len)
{
    fake_frame *r = &f->be.rx[f->be.rx_tail++ % FAKE_FRAMES];

    ck_assert_uint_le(len, NET_FRAME_MAX);
    r->len = len;
    memcpy(r->data, data, len);
}

static inline unsigned fake_rx_waiting(const fake *f)
{
    return f->be.rx_tail - f->be.rx_head;
}

/* The backend has a descriptor, as TAP's (the NIC only asks whether it
 * has one: with one, nic_poll_rx() holds a frame the guest cannot take). */
static inline void fake_as_tap(fake *f)
{
    f->be.fd = 1000;
}

/* The receiver off: each poll leaves one frame held in the chip, not
 * waiting for the ring (no tick needed: only a register write turns the
 * receiver on), and `waiting` frames in the backend behind it. */
static inline void fake_rx_held_off(fake *f, unsigned waiting)
{
    for (int i = 0; i < 3; i++) {
        nic_poll_rx(f->n);
        ck_assert(nic_rx_pending(f->n));
        ck_assert(!nic_rx_waits_ring(f->n));
        ck_assert_uint_eq(fake_rx_waiting(f), waiting);
    }
}

/* A frame to `dst` from a peer, `len` bytes, payload bytes = seed + i. */
static inline size_t fake_frame_make(uint8_t *buf, const uint8_t dst[6],
                                     size_t len, uint8_t seed)
{
    static const uint8_t src[6] = { 0x52, 0x55, 0x0a, 0x00, 0x02, 0x02 };

    memcpy(buf, dst, 6);
    memcpy(buf + 6, src, 6);
    buf[12] = 0x08;
    buf[13] = 0x00;
    for (size_t i = 14; i < len; i++)
        buf[i] = (uint8_t)(seed + i);
    return len;
}

static inline void mem_w16(fake *f, uint64_t a, uint16_t v)
{
    f->ram[a] = (uint8_t)v;
    f->ram[a + 1] = (uint8_t)(v >> 8);
}
static inline void mem_w32(fake *f, uint64_t a, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        f->ram[a + i] = (uint8_t)(v >> (8 * i));
}
static inline uint16_t mem_r16(const fake *f, uint64_t a)
{
    return (uint16_t)(f->ram[a] | f->ram[a + 1] << 8);
}
static inline uint32_t mem_r32(const fake *f, uint64_t a)
{
    return (uint32_t)f->ram[a] | (uint32_t)f->ram[a + 1] << 8 |
           (uint32_t)f->ram[a + 2] << 16 | (uint32_t)f->ram[a + 3] << 24;
}

/* Register access as the guest does it. */
static inline uint32_t reg_rd(fake *f, uint32_t off, unsigned size)
{
    uint32_t v = 0xdeadbeef;
    nic_access(f->n, off, size, false, &v);
    return v;
}
static inline void reg_wr(fake *f, uint32_t off, unsigned size, uint32_t v)
{
    nic_access(f->n, off, size, true, &v);
}

/* A small deterministic generator for the hostile tests. */
static inline uint32_t fake_rand(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return (uint32_t)(z ^ (z >> 31));
}

#endif /* TEST_NIC_FAKE_H */
