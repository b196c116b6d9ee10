/* SPDX-License-Identifier: MIT */
/*
 * tests/vmm/test_platform.c: the reference VMM's buses (bus.c) and its
 * platform device models (devices/pci.c, devices/uart.c).
 */
#include <stdio.h>
#include <string.h>

#include "../unit/harness.h"
#include "bus.h"
#include "devices/platform.h"
#include "hw/e1000_regs.h"
#include "hw/pcnet_regs.h"
#include "lcvmm/platform.h"

/* ---- buses ---------------------------------------------------------------- */

typedef struct hit { uint64_t off; unsigned size; bool w; uint64_t v; int n; } hit;

static void rec(void *opaque, uint64_t off, unsigned size, bool w,
                uint64_t *v)
{
    hit *h = opaque;
    h->off = off;
    h->size = size;
    h->w = w;
    h->n++;
    if (w)
        h->v = *v;
    else
        *v = 0x1234;
}

START_TEST(bus_rejects_bad_ranges)
{
    bus b;
    hit h = { 0 };

    bus_init(&b, "test");
    ck_assert_int_eq(bus_register(&b, 0x100, 0x10, rec, &h, "a"), 0);
    ck_assert_int_eq(bus_register(&b, 0x100, 0, rec, &h, "zero"), -1);
    ck_assert_int_eq(bus_register(&b, ~0ull - 3, 8, rec, &h, "wraps"), -1);
    ck_assert_int_eq(bus_register(&b, 0x10f, 1, rec, &h, "overlap end"), -1);
    ck_assert_int_eq(bus_register(&b, 0xf0, 0x11, rec, &h, "overlap start"), -1);
    ck_assert_int_eq(bus_register(&b, 0x110, 0x10, rec, &h, "adjacent"), 0);
    ck_assert_int_eq(bus_register(&b, 0xf0, 0x10, rec, &h, "below"), 0);
    ck_assert_uint_eq(b.n, 3);
    for (unsigned i = 0; i + 1 < b.n; i++)
        ck_assert_uint_lt(b.r[i].base, b.r[i + 1].base);
    for (unsigned i = b.n; i < BUS_MAX_RANGES; i++)
        ck_assert_int_eq(bus_register(&b, 0x1000 + i * 0x10, 8, rec, &h,
                                      "fill"), 0);
    ck_assert_int_eq(bus_register(&b, 0x9000, 8, rec, &h, "full"), -1);
}
END_TEST

START_TEST(bus_dispatch_and_unclaimed)
{
    bus b;
    hit h = { 0 };
    uint64_t v = 0;

    bus_init(&b, "test");
    bus_register(&b, 0x100, 0x10, rec, &h, "dev");
    ck_assert(bus_access(&b, 0x10c, 4, false, &v));
    ck_assert_uint_eq(v, 0x1234);
    ck_assert_uint_eq(h.off, 0xc);
    v = 0xab;
    ck_assert(bus_access(&b, 0x100, 1, true, &v));
    ck_assert(h.w && h.v == 0xab && h.off == 0);
    /* an access reaching past the range's end belongs to no device */
    ck_assert(!bus_access(&b, 0x10e, 4, false, &v));
    ck_assert_uint_eq(v, 0xffffffffu);
    ck_assert(!bus_access(&b, 0xff, 2, false, &v));
    ck_assert_uint_eq(v, 0xffff);
    ck_assert(!bus_access(&b, 0x200, 8, false, &v));
    ck_assert_uint_eq(v, ~0ull);
    ck_assert_int_eq(h.n, 2);
    ck_assert_uint_eq(b.unclaimed, 3);
    /* moving a range (a BAR write), and refusing to move onto another */
    bus_register(&b, 0x300, 0x10, rec, &h, "other");
    ck_assert_int_eq(bus_move(&b, 0x100, 0x400), 0);
    ck_assert_ptr_nonnull(bus_find(&b, 0x40f, 1));
    ck_assert_ptr_null(bus_find(&b, 0x100, 1));
    ck_assert_int_eq(bus_move(&b, 0x400, 0x308), -1);
    ck_assert_ptr_null(bus_find(&b, 0x400, 1));    /* left unmapped */
    ck_assert_int_eq(bus_move(&b, 0x777, 0x800), -1);
}
END_TEST

/* ---- PCI configuration mechanism #1 --------------------------------------- */

typedef struct pci_seen { uint32_t bar; uint16_t cmd; int moves; } pci_seen;

static void moved(void *o, uint32_t base)
{
    ((pci_seen *)o)->bar = base;
    ((pci_seen *)o)->moves++;
}

static void command(void *o, uint16_t cmd)
{
    ((pci_seen *)o)->cmd = cmd;
}

static uint32_t cfg_rd(pci_bus *p, unsigned dev, unsigned reg, unsigned size)
{
    uint32_t a = 0x80000000u | dev << 11 | (reg & 0xfc), v = 0;
    pci_access(p, 0, 4, true, &a);
    pci_access(p, 4 + (reg & 3), size, false, &v);
    return v;
}

static void cfg_wr(pci_bus *p, unsigned dev, unsigned reg, unsigned size,
                   uint32_t v)
{
    uint32_t a = 0x80000000u | dev << 11 | (reg & 0xfc);
    pci_access(p, 0, 4, true, &a);
    pci_access(p, 4 + (reg & 3), size, true, &v);
}

static pci_bus *pci_rig(pci_seen *s, bool io)
{
    uint8_t id[64] = { 0x22, 0x10, 0x00, 0x20, [0x0b] = 0x02, [0x3d] = 1 };
    pci_function_ops ops = { s, moved, command };
    pci_bus *p = pci_create();

    ck_assert_ptr_nonnull(p);
    /* where lcvmm puts its NIC (lcvmm/platform.h) */
    ck_assert_int_eq(pci_add_function(p, LCVMM_NIC_PCI_DEV, id,
                                      (pci_bar_info){ io ? PCNET_BAR_SIZE
                                                         : E1000_BAR_SIZE,
                                                      io },
                                      io ? LCVMM_PCNET_IO_BASE
                                         : LCVMM_E1000_MMIO_BASE,
                                      LCVMM_NIC_IRQ, &ops), 0);
    return p;
}

START_TEST(pci_config_space)
{
    pci_seen s = { 0 };
    pci_bus *p = pci_rig(&s, true);
    uint32_t v = 0;

    ck_assert_uint_eq(s.moves, 1);                 /* placed at creation */
    ck_assert_uint_eq(cfg_rd(p, 3, 0, 4), 0x20001022u);
    ck_assert_uint_eq(cfg_rd(p, 3, 2, 2), 0x2000);
    ck_assert_uint_eq(cfg_rd(p, 3, 0x0b, 1), 0x02);
    ck_assert_uint_eq(cfg_rd(p, 3, 0x10, 4), 0xc001u);   /* I/O BAR */
    ck_assert_uint_eq(cfg_rd(p, 3, 0x3c, 1), LCVMM_NIC_IRQ);
    ck_assert_uint_eq(cfg_rd(p, 3, 0x3d, 1), 1);
    /* nothing else on the bus, nothing without the enable bit, no other
     * bus or function */
    ck_assert_uint_eq(cfg_rd(p, 4, 0, 4), 0xffffffffu);
    v = 0x00001800u;                                     /* dev 3, enable off */
    pci_access(p, 0, 4, true, &v);
    pci_access(p, 4, 4, false, &v);
    ck_assert_uint_eq(v, 0xffffffffu);
    v = 0x80011800u;                                     /* bus 1 */
    pci_access(p, 0, 4, true, &v);
    pci_access(p, 4, 4, false, &v);
    ck_assert_uint_eq(v, 0xffffffffu);
    /* CONFIG_ADDRESS reads back; byte accesses there are not it */
    v = 0;
    pci_access(p, 0, 4, false, &v);
    ck_assert_uint_eq(v, 0x80011800u);
    pci_access(p, 1, 1, false, &v);
    ck_assert_uint_eq(v, 0xffffffffu);
    /* read-only identity, writable interrupt line, read-only pin */
    cfg_wr(p, 3, 0, 4, 0);
    ck_assert_uint_eq(cfg_rd(p, 3, 0, 4), 0x20001022u);
    cfg_wr(p, 3, 0x3c, 1, 5);
    cfg_wr(p, 3, 0x3d, 1, 4);
    ck_assert_uint_eq(cfg_rd(p, 3, 0x3c, 2), 0x0105);
    /* the command register: only its defined bits, and the decode */
    ck_assert(!pci_decodes(p, 3));
    cfg_wr(p, 3, 4, 2, 0xffff);
    ck_assert_uint_eq(s.cmd, 0x0547);
    ck_assert(pci_decodes(p, 3));
    pci_destroy(p);
}
END_TEST

START_TEST(pci_bar_sizing_and_moves)
{
    pci_seen s = { 0 };
    pci_bus *p = pci_rig(&s, false);

    ck_assert_uint_eq(cfg_rd(p, 3, 0x10, 4), LCVMM_E1000_MMIO_BASE);
    /* firmware's sizing: all ones, read the mask, restore */
    cfg_wr(p, 3, 0x10, 4, 0xffffffffu);
    ck_assert_uint_eq(cfg_rd(p, 3, 0x10, 4), 0xfffe0000u);
    cfg_wr(p, 3, 0x10, 4, LCVMM_E1000_MMIO_BASE);
    ck_assert_uint_eq(s.bar, LCVMM_E1000_MMIO_BASE);
    /* unaligned bases are aligned down; a byte write moves bits 31:24 */
    cfg_wr(p, 3, 0x10, 4, 0xe0012345u);
    ck_assert_uint_eq(s.bar, 0xe0000000u);
    cfg_wr(p, 3, 0x13, 1, 0xd0);
    ck_assert_uint_eq(s.bar, 0xd0000000u);
    ck_assert_uint_eq(cfg_rd(p, 3, 0x10, 4), 0xd0000000u);
    /* an access crossing the end of CONFIG_DATA does nothing */
    int before = s.moves;
    uint32_t v = 0x12345678u;
    pci_access(p, 7, 2, true, &v);
    ck_assert_int_eq(s.moves, before);
    pci_access(p, 7, 4, false, &v);
    ck_assert_uint_eq(v, 0xffffffffu);
    /* slots: in range and free only */
    uint8_t id[64] = { 0 };
    ck_assert_int_eq(pci_add_function(p, 3, id, (pci_bar_info){ 0, false },
                                      0, 0, NULL), -1);
    ck_assert_int_eq(pci_add_function(p, 32, id, (pci_bar_info){ 0, false },
                                      0, 0, NULL), -1);
    ck_assert_int_eq(pci_add_function(p, 4, id, (pci_bar_info){ 24, true },
                                      0xc000, 0, NULL), -1);   /* not 2^n */
    pci_destroy(p);
}
END_TEST

/* ---- 16550 ------------------------------------------------------------------ */

START_TEST(uart_console)
{
    char out[64] = { 0 };
    FILE *f = fmemopen(out, sizeof out, "w");
    uart *u = uart_create(f);
    uint8_t v;

    ck_assert_ptr_nonnull(u);
    uart_access(u, 5, false, &v);
    ck_assert_uint_eq(v & 0x60, 0x60);            /* THRE | TEMT */
    for (const char *c = "hi\r\n"; *c; c++) {
        v = (uint8_t)*c;
        uart_access(u, 0, true, &v);
    }
    /* DLAB: 0 and 1 are the divisor latch, not THR/IER */
    v = 0x83;
    uart_access(u, 3, true, &v);
    v = 0x01;
    uart_access(u, 0, true, &v);
    uart_access(u, 0, false, &v);
    ck_assert_uint_eq(v, 0x01);
    v = 0x03;
    uart_access(u, 3, true, &v);
    v = 0x5a;
    uart_access(u, 7, true, &v);
    v = 0;
    uart_access(u, 7, false, &v);
    ck_assert_uint_eq(v, 0x5a);                   /* scratch */
    uart_access(u, 2, false, &v);
    ck_assert_uint_eq(v & 1, 1);                  /* no interrupt pending */
    ck_assert_uint_eq(uart_bytes_out(u), 4);
    uart_destroy(u);
    fclose(f);
    ck_assert_str_eq(out, "hi\n");                /* CR dropped */
}
END_TEST

int main(void)
{
    Suite *s = suite_create("platform");
    TCase *t = tcase_create("bus");
    tcase_add_test(t, bus_rejects_bad_ranges);
    tcase_add_test(t, bus_dispatch_and_unclaimed);
    suite_add_tcase(s, t);
    t = tcase_create("pci");
    tcase_add_test(t, pci_config_space);
    tcase_add_test(t, pci_bar_sizing_and_moves);
    suite_add_tcase(s, t);
    t = tcase_create("uart");
    tcase_add_test(t, uart_console);
    suite_add_tcase(s, t);
    return lc_test_run(s);
}
