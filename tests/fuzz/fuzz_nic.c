/* SPDX-License-Identifier: MIT */
/*
 * tests/fuzz/fuzz_nic.c: hostile guests against the two NIC models of the
 * reference VMM (examples/vmm/devices).
 *
 * Input layout: one option byte (model, send combining, interrupt
 * coalescing, echoing backend, combine_max, bus mastering; bit 5 of
 * combine_max also asks for the e1000's direct page), then a stream
 * of commands, each an opcode byte and its operands: register reads and
 * writes (raw offsets, or offsets from a table of the interesting ones),
 * guest memory writes, descriptors that are nearly valid, frames queued
 * at the backend, flushes, receive polls, bus-master toggles, and a
 * driver's bring-up sequence (so rings are set up quickly, over memory
 * the input chose). Guest RAM (64 KiB at 0) starts as the input repeated.
 * NIC_FUZZ_MODEL=pcnet or e1000 pins the model for a libFuzzer run.
 *
 * Nothing may crash or read out of bounds (ASan, UBSan), loops must end
 * (libFuzzer's timeout), frames must reach the backend with legal
 * lengths, and the interrupt accounting must match what the line saw.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hw/e1000_regs.h"
#include "hw/pcnet_regs.h"
#include "nic.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#define RAM_SIZE   0x10000u
#define MAX_CMDS   2048
#define RXQ        32

typedef struct fz {
    const uint8_t *p, *end;
    uint8_t *ram;
    vm_dma dma;
    vm_irq irq;
    int level;
    uint64_t calls, rises;
    net_backend be;
    uint8_t rxq[RXQ][NET_FRAME_MAX];
    size_t rxlen[RXQ];
    unsigned rx_head, rx_tail;
    bool echo;
    nic_model model;
    nic *n;
} fz;

static fz F;
static nic_model pinned;        /* NIC_FUZZ_MODEL=pcnet|e1000 */

/* libFuzzer calls this once; the replay main does not (both models). */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    pinned = nic_model_parse(getenv("NIC_FUZZ_MODEL"));
    return 0;
}

static unsigned u8(fz *f)
{
    return f->p < f->end ? *f->p++ : 0;
}

static unsigned u16(fz *f)
{
    unsigned v = u8(f);
    return v | u8(f) << 8;
}

static uint32_t u32(fz *f)
{
    uint32_t v = u16(f);
    return v | (uint32_t)u16(f) << 16;
}

static int dma_rd(void *o, uint64_t gpa, void *buf, size_t len)
{
    fz *f = o;

    if (gpa > RAM_SIZE || len > RAM_SIZE - gpa)
        return -1;
    memcpy(buf, f->ram + gpa, len);
    return 0;
}

static int dma_wr(void *o, uint64_t gpa, const void *buf, size_t len)
{
    fz *f = o;

    if (gpa > RAM_SIZE || len > RAM_SIZE - gpa)
        return -1;
    memcpy(f->ram + gpa, buf, len);
    return 0;
}

static void irq_set(void *o, unsigned gsi, int level)
{
    fz *f = o;

    if (gsi != 11 || (level != 0 && level != 1))
        abort();
    f->calls++;
    if (level && !f->level)
        f->rises++;
    f->level = level;
}

static void queue_frame(fz *f, const uint8_t *frame, size_t len)
{
    unsigned slot;

    if (f->rx_tail - f->rx_head >= RXQ)
        return;
    slot = f->rx_tail++ % RXQ;
    memcpy(f->rxq[slot], frame, len);
    f->rxlen[slot] = len;
}

static int be_tx(net_backend *be, const uint8_t *frame, size_t len)
{
    fz *f = &F;

    (void)be;
    if (len < NET_FRAME_MIN || len > NET_FRAME_MAX)
        abort();
    if (f->echo)
        queue_frame(f, frame, len);
    return 0;
}

static size_t be_rx(net_backend *be, uint8_t *buf, size_t cap)
{
    fz *f = &F;
    unsigned slot;

    (void)be;
    if (cap < NET_FRAME_MAX)
        abort();
    if (f->rx_head == f->rx_tail)
        return 0;
    slot = f->rx_head++ % RXQ;
    memcpy(buf, f->rxq[slot], f->rxlen[slot]);
    return f->rxlen[slot];
}

static int be_fd(net_backend *be)
{
    (void)be;
    return -1;
}

static void be_destroy(net_backend *be)
{
    (void)be;
}

static const net_backend_ops be_ops = { "fuzz", be_tx, be_rx, be_fd,
                                        be_destroy };

static void wr(fz *f, uint32_t off, unsigned size, uint32_t v)
{
    nic_access(f->n, off, size, true, &v);
}

static uint32_t rd(fz *f, uint32_t off, unsigned size)
{
    uint32_t v = 0;
    nic_access(f->n, off, size, false, &v);
    return v;
}

/* ---- model-aware helpers -------------------------------------------- */

static const uint32_t pcnet_offs[] = {
    PCNET_RDP, PCNET_RAP, PCNET_RESET, PCNET_BDP, PCNET_APROM,
    PCNET_APROM + 14,
};
static const uint32_t e1000_offs[] = {
    E1000_CTRL, E1000_STATUS, E1000_EECD, E1000_EERD, E1000_CTRL_EXT,
    E1000_MDIC, E1000_ICR, E1000_ITR, E1000_ICS, E1000_IMS, E1000_IMC,
    E1000_RCTL, E1000_TCTL, E1000_TIPG, E1000_RDBAL, E1000_RDBAH,
    E1000_RDLEN, E1000_RDH, E1000_RDT, E1000_TDBAL, E1000_TDBAH,
    E1000_TDLEN, E1000_TDH, E1000_TDT, E1000_MPC, E1000_GPRC, E1000_MTA,
    E1000_RAL(0), E1000_RAH(0), E1000_RAL(1), E1000_RAH(1),
};

static void csr_w(fz *f, unsigned r, uint16_t v)
{
    wr(f, PCNET_RAP, 2, r);
    wr(f, PCNET_RDP, 2, v);
}

/* Rings: RX at 0x1000, TX at 0x3000; buffers above 0x5000. */
static void prime(fz *f)
{
    unsigned a = u8(f), b = u8(f);

    if (f->model == NIC_PCNET) {
        unsigned style = (a & 1) ? 0 : 2;
        rd(f, PCNET_RESET, 2);
        wr(f, PCNET_RAP, 2, PCNET_BCR_SWSTYLE);
        wr(f, PCNET_BDP, 2, style);
        if (style) {
            f->ram[0x102] = (uint8_t)((b & 0x0f) << 4);
            f->ram[0x103] = (uint8_t)(b & 0xf0);
            memset(f->ram + 0x114, 0, 8);
            f->ram[0x115] = 0x10;       /* RDRA 0x1000 */
            f->ram[0x119] = 0x30;       /* TDRA 0x3000 */
        } else {
            f->ram[0x110] = 0x00; f->ram[0x111] = 0x10; f->ram[0x112] = 0;
            f->ram[0x113] = (uint8_t)((b & 7) << 5);
            f->ram[0x114] = 0x00; f->ram[0x115] = 0x30; f->ram[0x116] = 0;
            f->ram[0x117] = (uint8_t)((b >> 5) << 5);
        }
        csr_w(f, 1, 0x100);
        csr_w(f, 2, 0);
        csr_w(f, 4, 0x0915);
        csr_w(f, 0, 0x0001);
        csr_w(f, 0, 0x0142);
    } else {
        wr(f, E1000_CTRL, 4, E1000_CTRL_RST);
        wr(f, E1000_RDBAL, 4, 0x1000);
        wr(f, E1000_RDBAH, 4, 0);
        wr(f, E1000_RDLEN, 4, 128u * (1 + (b & 3)));
        wr(f, E1000_RDH, 4, 0);
        wr(f, E1000_TDBAL, 4, 0x3000);
        wr(f, E1000_TDBAH, 4, 0);
        wr(f, E1000_TDLEN, 4, 128u * (1 + ((b >> 2) & 3)));
        wr(f, E1000_TDH, 4, 0);
        wr(f, E1000_TDT, 4, 0);
        wr(f, E1000_TCTL, 4, E1000_TCTL_EN | E1000_TCTL_PSP);
        /* BSIZE, BSEX and SECRC from the input */
        wr(f, E1000_RCTL, 4, E1000_RCTL_EN | E1000_RCTL_UPE | E1000_RCTL_BAM |
                             ((uint32_t)a << 16 & 0x06030000u));
        wr(f, E1000_IMS, 4, 0xffff);
        wr(f, E1000_RDT, 4, b >> 4);
    }
}

/* A nearly valid descriptor from the input at index i of either ring. */
static void descriptor(fz *f)
{
    unsigned sel = u8(f), i = u8(f) & 0x3f, len = u16(f) % 1700;
    uint32_t addr = 0x5000 + u16(f) % 0xb000;
    unsigned flags = u8(f);
    bool tx = sel & 1;
    uint8_t *d;

    if (f->model == NIC_PCNET && (sel & 2)) {   /* style 0: 8 bytes */
        d = f->ram + (tx ? 0x3000 : 0x1000) + 8 * i;
        d[0] = (uint8_t)addr; d[1] = (uint8_t)(addr >> 8);
        d[2] = (uint8_t)(addr >> 16);
        d[3] = (uint8_t)(flags | 0x80);
        d[4] = (uint8_t)-len; d[5] = (uint8_t)(0xf0 | ((-len >> 8) & 0xf));
        d[6] = d[7] = 0;
    } else if (f->model == NIC_PCNET) {         /* style 2 */
        d = f->ram + (tx ? 0x3000 : 0x1000) + 16 * i;
        memcpy(d, &addr, 4);
        d[4] = (uint8_t)-len; d[5] = (uint8_t)(0xf0 | ((-len >> 8) & 0xf));
        d[6] = 0;
        d[7] = (uint8_t)((sel & 4) ? flags : (flags | 0x83));
        memset(d + 8, 0, 8);
    } else {                                    /* e1000 legacy */
        d = f->ram + (tx ? 0x3000 : 0x1000) + 16 * i;
        memcpy(d, &addr, 4);
        memset(d + 4, 0, 12);
        d[8] = (uint8_t)len; d[9] = (uint8_t)(len >> 8);
        d[11] = (uint8_t)((sel & 4) ? flags : (flags & ~0x20) | 0x09);
    }
}

static void kick(fz *f)
{
    if (f->model == NIC_PCNET)
        csr_w(f, 0, (uint16_t)(0x0048 | (u8(f) & 0x0700)));
    else
        wr(f, 0x3818, 4, u8(f) % 64);
}

static void push_frame(fz *f)
{
    uint8_t frame[NET_FRAME_MAX];
    size_t len = u16(f) % (NET_FRAME_MAX + 1);
    unsigned dst = u8(f);

    if (len < NET_FRAME_MIN)
        len = NET_FRAME_MIN;
    for (size_t i = 0; i < len; i++)
        frame[i] = (uint8_t)(i * 7 + dst);
    if (dst & 1) {                              /* to the NIC */
        static const uint8_t mac[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 };
        memcpy(frame, mac, 6);
    } else if (dst & 2) {
        memset(frame, 0xff, 6);
    }
    queue_frame(f, frame, len);
}

/* ---- the run -------------------------------------------------------- */

static void step(fz *f, unsigned op)
{
    uint32_t bar = f->model == NIC_PCNET ? 32 : 0x20000;

    switch (op & 0x0f) {
    case 0: {                                   /* raw write */
        uint32_t off = u32(f) % (bar + 8);
        unsigned size = 1u << (u8(f) % 4);
        wr(f, off, size == 8 ? 3 : size, u32(f));
        break;
    }
    case 1:                                     /* raw read */
        rd(f, u32(f) % (bar + 8), 1u << (u8(f) % 3));
        break;
    case 2: case 12: {                          /* table write */
        const uint32_t *t = f->model == NIC_PCNET ? pcnet_offs : e1000_offs;
        size_t nt = f->model == NIC_PCNET ?
                    sizeof pcnet_offs / sizeof pcnet_offs[0] :
                    sizeof e1000_offs / sizeof e1000_offs[0];
        uint32_t off = t[u8(f) % nt];
        wr(f, off, f->model == NIC_PCNET ? 2 : 4, u32(f));
        break;
    }
    case 3: case 13: {                          /* table read */
        const uint32_t *t = f->model == NIC_PCNET ? pcnet_offs : e1000_offs;
        size_t nt = f->model == NIC_PCNET ?
                    sizeof pcnet_offs / sizeof pcnet_offs[0] :
                    sizeof e1000_offs / sizeof e1000_offs[0];
        rd(f, t[u8(f) % nt], f->model == NIC_PCNET ? 2 : 4);
        break;
    }
    case 4: {                                   /* guest memory */
        uint32_t a = u16(f) % RAM_SIZE;
        unsigned len = u8(f);
        uint32_t poff;
        void *page;

        if ((op & 0x10) && nic_direct_page(f->n, &poff, &page)) {
            /* the guest's stores into the mapped register page: no
             * access tells the NIC */
            a %= NIC_DIRECT_SIZE;
            for (unsigned i = 0; i < len && a + i < NIC_DIRECT_SIZE; i++)
                __atomic_store_n((uint8_t *)page + a + i, (uint8_t)u8(f),
                                 __ATOMIC_RELAXED);
            break;
        }
        for (unsigned i = 0; i < len && a + i < RAM_SIZE; i++)
            f->ram[a + i] = (uint8_t)u8(f);
        break;
    }
    case 5: push_frame(f); break;
    case 6: nic_flush(f->n); break;
    case 7: nic_poll_rx(f->n); break;
    case 8: nic_set_bus_master(f->n, u8(f) & 1); break;
    case 9: descriptor(f); break;
    case 10: kick(f); break;
    case 11: prime(f); break;
    case 14:                                    /* CSR or ring register */
        if (f->model == NIC_PCNET) {
            unsigned r = u8(f);
            csr_w(f, r & 0x80 ? r & 0x7f : r % 8 * 2 + (r & 1) * 57 % 128,
                  (uint16_t)u16(f));
        } else {
            wr(f, 0x2800 + (u8(f) & 1) * 0x1000 + (u8(f) % 7) * 4, 4,
               u16(f));
        }
        break;
    case 15:                                    /* BCR or interrupt mask */
        if (f->model == NIC_PCNET) {
            wr(f, PCNET_RAP, 2, u8(f) % 40);
            wr(f, PCNET_BDP, 2, u16(f));
        } else {
            wr(f, 0x00d0 + (u8(f) & 1) * 8, 4, u32(f));
        }
        break;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz *f = &F;
    nic_options o;
    unsigned flags;
    static const uint8_t mac[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 };
    const nic_stats *s;

    if (size < 2)
        return 0;
    memset(f, 0, offsetof(fz, rxq));
    f->rx_head = f->rx_tail = 0;
    f->ram = malloc(RAM_SIZE);
    if (!f->ram)
        return 0;
    for (size_t i = 0; i < RAM_SIZE; i += size)
        memcpy(f->ram + i, data, size < RAM_SIZE - i ? size : RAM_SIZE - i);
    f->p = data;
    f->end = data + size;
    flags = u8(f);
    f->model = pinned ? pinned : (flags & 1) ? NIC_E1000 : NIC_PCNET;
    f->echo = flags & 8;
    o = (nic_options){ .latch_fast = true, .send_combine = flags & 2,
                       .irq_coalesce = flags & 4,
                       .combine_max = 1 + ((flags >> 4) & 3),
                       .direct = flags & 0x20 };
    f->dma = (vm_dma){ f, dma_rd, dma_wr };
    f->irq = (vm_irq){ f, irq_set, 11 };
    f->be.ops = &be_ops;
    f->n = nic_create(f->model, mac, &f->dma, &f->irq, &f->be, &o);
    if (!f->n)
        abort();
    nic_set_bus_master(f->n, !(flags & 0x80));
    if (flags & 0x40)
        prime(f);
    for (int i = 0; i < MAX_CMDS && f->p < f->end; i++)
        step(f, u8(f));
    nic_flush(f->n);
    s = nic_get_stats(f->n);
    /* What the line saw matches what the NIC counted. */
    if (s->irq_line_calls != f->calls || s->irq_raised != f->rises)
        abort();
    if (!o.irq_coalesce && s->irq_suppressed != 0)
        abort();
    nic_destroy(f->n);
    free(f->ram);
    return 0;
}
