/* SPDX-License-Identifier: MIT */
/*
 * tests/vmm/test_firmware.c: the devices of the firmware platform
 * (devices/cmos.c, fw_cfg.c, i8042.c), the PCI I/O BAR as firmware sizes
 * it, the image checks and the PAM memory map (firmware.c) under hostile
 * register values: nothing maps or returns memory outside the VMM's own
 * buffers, whatever the guest writes.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "../unit/harness.h"
#include "devices/fwdev.h"
#include "vmm.h"

/* firmware.c marks boot phases (fw_phase.c): not measured here */
void vmm_fw_phase(vmm *vm, unsigned phase)
{
    (void)vm; (void)phase;
}

/* firmware.c ends the VM through this; here it only counts */
static int stops;
void vmm_request_stop(vmm *vm, int code, const char *fmt, ...)
{
    (void)vm; (void)code; (void)fmt;
    stops++;
}

/* firmware.c reports map changes (PAM, the ROM BAR) through this; vm.c
 * also flushes the engine there, which this test does not make */
void vmm_map_changed(vmm *vm)
{
    atomic_fetch_add(&vm->map_gen, 1);
}

static uint32_t rng = 12345;
static uint32_t rnd(void)
{
    rng ^= rng << 13; rng ^= rng >> 17; rng ^= rng << 5;
    return rng;
}

/* ---- CMOS ----------------------------------------------------------------- */

static time_t fixed_now(void)
{
    return 1795000000;          /* 2026-11-18 11:06:40 UTC */
}

static uint8_t cmos_rd(cmos *c, uint8_t reg)
{
    uint8_t v = reg;
    cmos_access(c, 0, true, &v);
    cmos_access(c, 1, false, &v);
    return v;
}

START_TEST(cmos_sizes_time_and_hostile_index)
{
    cmos *c = cmos_create(64u << 20, 2, fixed_now);
    uint8_t v;

    ck_assert_ptr_nonnull(c);
    ck_assert_uint_eq(cmos_rd(c, 0x15) | cmos_rd(c, 0x16) << 8, 640);
    ck_assert_uint_eq(cmos_rd(c, 0x30) | cmos_rd(c, 0x31) << 8, 63 * 1024);
    ck_assert_uint_eq(cmos_rd(c, 0x34) | cmos_rd(c, 0x35) << 8,
                      (48u << 20) >> 16);
    ck_assert_uint_eq(cmos_rd(c, 0x5f), 1);
    ck_assert_uint_eq(cmos_rd(c, CMOS_YEAR), 0x26);         /* BCD */
    ck_assert_uint_eq(cmos_rd(c, CMOS_MONTH), 0x11);
    ck_assert_uint_eq(cmos_rd(c, CMOS_HOURS), 0x11);
    ck_assert_uint_eq(cmos_rd(c, CMOS_CENTURY), 0x20);
    ck_assert_uint_eq(cmos_rd(c, CMOS_STATUS_A) & 0x80, 0); /* no UIP */
    /* binary mode */
    v = CMOS_STATUS_B; cmos_access(c, 0, true, &v);
    v = CMOS_RTC_B_24H | CMOS_RTC_B_BIN; cmos_access(c, 1, true, &v);
    ck_assert_uint_eq(cmos_rd(c, CMOS_YEAR), 26);
    /* every index, NMI bit or not, stays inside the 128 bytes */
    for (unsigned i = 0; i < 20000; i++) {
        v = (uint8_t)rnd();
        cmos_access(c, rnd() & 1, rnd() & 1, &v);
    }
    /* 2 GiB: 0x30/0x31 saturate at 65535 KiB */
    cmos_destroy(c);
    c = cmos_create(3072ull << 20, 1, fixed_now);
    ck_assert_uint_eq(cmos_rd(c, 0x30) | cmos_rd(c, 0x31) << 8, 0xffff);
    cmos_destroy(c);
}
END_TEST

/* ---- fw_cfg ------------------------------------------------------------- */

static void sel(fw_cfg *f, uint16_t key)
{
    uint32_t v = key;
    fw_cfg_access(f, FW_CFG_PORT_SEL, 2, true, &v);
}

static uint8_t rdb(fw_cfg *f)
{
    uint32_t v = 0xdead;
    fw_cfg_access(f, FW_CFG_PORT_DATA, 1, false, &v);
    return (uint8_t)v;
}

START_TEST(fw_cfg_items_directory_and_hostile_selectors)
{
    fw_cfg *f = fw_cfg_create(NULL);
    uint8_t b[64];
    char name[FW_CFG_NAME_MAX + 8];

    ck_assert_ptr_nonnull(f);
    sel(f, FW_CFG_SIGNATURE);
    for (int i = 0; i < 4; i++)
        b[i] = rdb(f);
    ck_assert_int_eq(memcmp(b, "QEMU", 4), 0);
    ck_assert_uint_eq(rdb(f), 0);                   /* past the end */
    sel(f, FW_CFG_ID);
    ck_assert_uint_eq(rdb(f), FW_CFG_ID_TRADITIONAL);   /* no DMA */
    ck_assert_int_eq(fw_cfg_add_file(f, "etc/one", "abc", 3), 0);
    ck_assert_int_eq(fw_cfg_add_file(f, "etc/two", "defg", 4), 0);
    ck_assert_int_eq(fw_cfg_find_file(f, "etc/two"), FW_CFG_FILE_FIRST + 1);
    sel(f, FW_CFG_FILE_DIR);
    for (int i = 0; i < 4 + 2 * 64; i++)
        b[i % 64] = rdb(f), (void)0;
    sel(f, FW_CFG_FILE_DIR);
    uint8_t dir[4 + 128];
    for (size_t i = 0; i < sizeof dir; i++)
        dir[i] = rdb(f);
    ck_assert_uint_eq(dir[3], 2);                   /* count, big-endian */
    ck_assert_uint_eq(dir[4 + 64 + 3], 4);          /* size of etc/two */
    ck_assert_uint_eq(dir[4 + 64 + 5], FW_CFG_FILE_FIRST + 1);
    ck_assert_str_eq((char *)dir + 4 + 64 + 8, "etc/two");
    /* bad names, duplicates */
    memset(name, 'a', sizeof name - 1);
    name[sizeof name - 1] = 0;
    ck_assert_int_eq(fw_cfg_add_file(f, name, "x", 1), -1);
    ck_assert_int_eq(fw_cfg_add_file(f, "", "x", 1), -1);
    ck_assert_int_eq(fw_cfg_add(f, FW_CFG_ID, "x", 1), -1);
    /* any selector, width and port: reads of nothing are 0 */
    for (unsigned i = 0; i < 50000; i++) {
        uint32_t v = rnd();
        fw_cfg_access(f, rnd() & 1, 1u << (rnd() % 3), rnd() & 1, &v);
    }
    sel(f, 0x7777);
    ck_assert_uint_eq(rdb(f), 0);
    /* without DMA its ports are not decoded: all ones, writes ignored */
    for (unsigned off = FW_CFG_PORT_DMA_HI; off < FW_CFG_PORTS_DMA; off++) {
        uint32_t v = 0;
        fw_cfg_access(f, off, 4, false, &v);
        ck_assert_uint_eq(v, 0xffffffffu);
        v = 0;
        fw_cfg_access(f, off, 1, false, &v);
        ck_assert_uint_eq(v, 0xff);
        v = 0x00100000;
        fw_cfg_access(f, off, 4, true, &v);
    }
    ck_assert_uint_eq(fw_cfg_dma_transfers(f), 0);
    fw_cfg_destroy(f);
}
END_TEST

/* Guest RAM for the DMA interface: 64 KiB, with guard bytes on both
 * sides that no transfer may touch; the copies refuse any byte outside
 * it, as the VMM's vm_dma does. */
#define FRAM 0x10000u
static uint8_t fram_all[FRAM + 512];
static uint8_t *const fram = fram_all + 256;

static int fram_range(uint64_t gpa, size_t len)
{
    return gpa <= FRAM && len <= FRAM - gpa ? 0 : -1;
}

static int fram_rd(void *o, uint64_t gpa, void *buf, size_t len)
{
    (void)o;
    if (fram_range(gpa, len))
        return -1;
    memcpy(buf, fram + gpa, len);
    return 0;
}

static int fram_wr(void *o, uint64_t gpa, const void *buf, size_t len)
{
    (void)o;
    if (fram_range(gpa, len))
        return -1;
    memcpy(fram + gpa, buf, len);
    return 0;
}

static const vm_dma fram_dma = { NULL, fram_rd, fram_wr };

static void put_be(uint8_t *p, uint64_t v, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        p[i] = (uint8_t)(v >> (8 * (n - 1 - i)));
}

static uint32_t get_be(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
           (uint32_t)p[2] << 8 | p[3];
}

/* A transfer as SeaBIOS starts one: the descriptor at `desc`, the low
 * half of its address written to 0x518 (big-endian, so byte-swapped for
 * the little-endian port); returns the control field it left. */
static uint32_t dma_go(fw_cfg *f, uint64_t desc, uint32_t control,
                       uint32_t len, uint64_t addr)
{
    uint32_t v;

    if (fram_range(desc, 16) == 0) {
        put_be(fram + desc, control, 4);
        put_be(fram + desc + 4, len, 4);
        put_be(fram + desc + 8, addr, 8);
    }
    if (desc >> 32) {
        v = __builtin_bswap32((uint32_t)(desc >> 32));
        fw_cfg_access(f, FW_CFG_PORT_DMA_HI, 4, true, &v);
    }
    v = __builtin_bswap32((uint32_t)desc);
    fw_cfg_access(f, FW_CFG_PORT_DMA_LO, 4, true, &v);
    return fram_range(desc, 16) ? 0xdeadu : get_be(fram + desc);
}

static void guards_intact(void)
{
    for (unsigned i = 0; i < 256; i++) {
        ck_assert_uint_eq(fram_all[i], 0x5a);
        ck_assert_uint_eq(fram_all[256 + FRAM + i], 0x5a);
    }
}

START_TEST(fw_cfg_dma_reads_skips_and_hostile_descriptors)
{
    fw_cfg *f = fw_cfg_create(&fram_dma);
    const uint32_t SR = FW_CFG_DMA_CTL_SELECT | FW_CFG_DMA_CTL_READ;
    uint32_t v, key;
    uint64_t errs;

    memset(fram_all, 0x5a, sizeof fram_all);
    memset(fram, 0xee, FRAM);
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fw_cfg_add_file(f, "etc/abc", "abcdefgh", 8), 0);
    key = (uint32_t)fw_cfg_find_file(f, "etc/abc");
    /* the ID says so; the address register reads as the signature */
    sel(f, FW_CFG_ID);
    ck_assert_uint_eq(rdb(f), FW_CFG_ID_TRADITIONAL | FW_CFG_ID_DMA);
    v = 0;
    fw_cfg_access(f, FW_CFG_PORT_DMA_HI, 4, false, &v);
    ck_assert_uint_eq(v, 0x554d4551u);                  /* "QEMU" */
    fw_cfg_access(f, FW_CFG_PORT_DMA_LO, 4, false, &v);
    ck_assert_uint_eq(v, 0x47464320u);                  /* " CFG" */
    fw_cfg_access(f, FW_CFG_PORT_DMA_HI + 1, 1, false, &v);
    ck_assert_uint_eq(v, 'E');
    fw_cfg_access(f, FW_CFG_PORTS_DMA - 1, 4, false, &v);
    ck_assert_uint_eq(v, 'G');                          /* past: nothing */

    /* select and read 3, go on with 2 more, skip 1, read past the end:
     * the rest zeros, the control 0 each time */
    ck_assert_uint_eq(dma_go(f, 0x1000, key << 16 | SR, 3, 0x2000), 0);
    ck_assert_int_eq(memcmp(fram + 0x2000, "abc", 3), 0);
    ck_assert_uint_eq(fram[0x2003], 0xee);
    ck_assert_uint_eq(dma_go(f, 0x1000, FW_CFG_DMA_CTL_READ, 2, 0x2003), 0);
    ck_assert_int_eq(memcmp(fram + 0x2000, "abcde", 5), 0);
    ck_assert_uint_eq(dma_go(f, 0x1000, FW_CFG_DMA_CTL_SKIP, 1, 0x2005), 0);
    ck_assert_uint_eq(fram[0x2005], 0xee);              /* a skip writes none */
    ck_assert_uint_eq(dma_go(f, 0x1000, FW_CFG_DMA_CTL_READ, 6, 0x2005), 0);
    ck_assert_int_eq(memcmp(fram + 0x2005, "gh\0\0\0\0", 6), 0);
    ck_assert_uint_eq(fram[0x200b], 0xee);
    ck_assert_uint_eq(fw_cfg_bytes_read(f), 1 + 7);    /* the ID, then these */
    /* an item that does not exist reads as zeros; no operation moves
     * nothing; the data port goes on where DMA left it */
    ck_assert_uint_eq(dma_go(f, 0x1000, 0x7777u << 16 | SR, 4, 0x2000), 0);
    ck_assert_int_eq(memcmp(fram + 0x2000, "\0\0\0\0e", 5), 0);
    ck_assert_uint_eq(dma_go(f, 0x1000, key << 16 | FW_CFG_DMA_CTL_SELECT,
                             4, 0x2000), 0);
    ck_assert_uint_eq(fram[0x2000], 0);
    ck_assert_uint_eq(rdb(f), 'a');
    ck_assert_uint_eq(dma_go(f, 0x1000, FW_CFG_DMA_CTL_READ, 1, 0x2000), 0);
    ck_assert_uint_eq(fram[0x2000], 'b');
    ck_assert_uint_eq(fw_cfg_dma_errors(f), 0);

    /* a write: no item takes one; nothing copied either way */
    ck_assert_uint_eq(dma_go(f, 0x1000, key << 16 | FW_CFG_DMA_CTL_SELECT |
                             FW_CFG_DMA_CTL_WRITE, 4, 0x2000),
                      FW_CFG_DMA_CTL_ERROR);
    ck_assert_uint_eq(rdb(f), 'a');
    /* buffers outside RAM, across its end, wrapping: an error, no byte
     * written; a descriptor outside RAM is dropped and counted */
    errs = fw_cfg_dma_errors(f);
    ck_assert_uint_eq(dma_go(f, 0x1000, SR | key << 16, 4, FRAM),
                      FW_CFG_DMA_CTL_ERROR);
    ck_assert_uint_eq(dma_go(f, 0x1000, SR | key << 16, 4, FRAM - 2),
                      FW_CFG_DMA_CTL_ERROR);
    ck_assert_uint_eq(fram[FRAM - 2], 0xee);
    ck_assert_uint_eq(dma_go(f, 0x1000, SR | key << 16, 8,
                             UINT64_MAX - 3), FW_CFG_DMA_CTL_ERROR);
    ck_assert_uint_eq(dma_go(f, 0x1000, SR | 0x7777u << 16, 16,
                             UINT64_MAX - 3), FW_CFG_DMA_CTL_ERROR);
    ck_assert_uint_eq(dma_go(f, FRAM - 8, SR, 4, 0x2000), 0xdeadu);
    ck_assert_uint_eq(dma_go(f, UINT64_MAX - 7, SR, 4, 0x2000), 0xdeadu);
    ck_assert_uint_eq(fw_cfg_dma_errors(f), errs + 6);
    /* the high half counts: with a read ready at 0x1000, the descriptor
     * at 0x1_0000_1000 (outside RAM) moves nothing; and it counts for the
     * next transfer only */
    put_be(fram + 0x1000, SR | key << 16, 4);
    put_be(fram + 0x1004, 1, 4);
    put_be(fram + 0x1008, 0x2000, 8);
    fram[0x2000] = 'z';
    ck_assert_uint_eq(dma_go(f, 0x100001000ull, SR | key << 16, 1, 0x2000),
                      0xdeadu);
    ck_assert_uint_eq(fram[0x2000], 'z');
    ck_assert_uint_eq(get_be(fram + 0x1000), SR | key << 16);
    ck_assert_uint_eq(fw_cfg_dma_errors(f), errs + 7);
    ck_assert_uint_eq(dma_go(f, 0x1000, SR | key << 16, 1, 0x2000), 0);
    ck_assert_uint_eq(fram[0x2000], 'a');
    /* the longest zero fill ends at the end of RAM, with an error, every
     * byte before it zeroed (from an address inside a page: its pieces
     * end at page boundaries) */
    ck_assert_uint_eq(dma_go(f, 0x1000, SR | 0x7777u << 16, 0xffffffffu,
                             0x3001), FW_CFG_DMA_CTL_ERROR);
    ck_assert_uint_eq(fram[0x3001], 0);
    ck_assert_uint_eq(fram[FRAM - 1], 0);
    ck_assert_uint_eq(fram[0x3000], 0xee);
    guards_intact();

    /* anything at any port, descriptors of random words: no transfer
     * reaches past RAM (the copies refuse it; this catches, under
     * AddressSanitizer, any other write, and the model's own reads) */
    for (unsigned i = 0; i < 20000; i++) {
        unsigned off = rnd() % FW_CFG_PORTS_DMA;
        uint32_t val = rnd();
        if (i % 4 == 0) {
            uint32_t d = rnd() % FRAM;
            if (d + 16 <= FRAM) {
                put_be(fram + d, (rnd() & 0xff1f) << 16 | (rnd() & 0x1f), 4);
                put_be(fram + d + 4, rnd() % 0x20000, 4);
                put_be(fram + d + 8, (rnd() & 1) ? rnd() % (FRAM + 64)
                                                 : (uint64_t)rnd() << 32 |
                                                   rnd(), 8);
            }
            off = FW_CFG_PORT_DMA_LO;
            val = __builtin_bswap32(d);
            fw_cfg_access(f, off, 4, true, &val);
            continue;
        }
        fw_cfg_access(f, off, 1u << (rnd() % 3), rnd() & 1, &val);
    }
    guards_intact();
    fw_cfg_destroy(f);
}
END_TEST

/* ---- i8042 -------------------------------------------------------------- */

static int resets;
static void on_reset(void *o)
{
    (void)o;
    resets++;
}

START_TEST(i8042_self_test_keyboard_and_overrun)
{
    i8042 *k = i8042_create(on_reset, NULL);
    uint8_t v;

    v = 0xaa; i8042_access(k, 4, true, &v);
    i8042_access(k, 4, false, &v);
    ck_assert_uint_eq(v & 1, 1);
    i8042_access(k, 0, false, &v);
    ck_assert_uint_eq(v, 0x55);
    v = 0xff; i8042_access(k, 0, true, &v);         /* keyboard reset */
    i8042_access(k, 0, false, &v);
    ck_assert_uint_eq(v, 0xfa);
    i8042_access(k, 0, false, &v);
    ck_assert_uint_eq(v, 0xaa);
    i8042_access(k, 4, false, &v);
    ck_assert_uint_eq(v & 1, 0);
    /* a flood of commands overruns the FIFO without harm */
    for (unsigned i = 0; i < 10000; i++) {
        v = (uint8_t)rnd();
        if (v == 0xfe)
            continue;
        i8042_access(k, rnd() & 1 ? 4 : 0, rnd() & 1, &v);
    }
    v = 0xfe; i8042_access(k, 4, true, &v);
    ck_assert_int_eq(resets, 1);
    i8042_destroy(k);
}
END_TEST

/* ---- PCI: an I/O BAR as firmware sizes it -------------------------------- */

START_TEST(pci_io_bar_reads_back_all_ones_above_its_size)
{
    pci_bus *p = pci_create();
    uint8_t id[64] = { 0x22, 0x10, 0x00, 0x20 };
    uint32_t v;

    ck_assert_int_eq(pci_add_function(p, 3, id, (pci_bar_info){ 32, true },
                                      0xc000, 11, NULL), 0);
    v = 0x80001810u;            /* 00:03.0, BAR0 */
    pci_access(p, 0, 4, true, &v);
    v = 0xffffffffu;
    pci_access(p, 4, 4, true, &v);
    pci_access(p, 4, 4, false, &v);
    ck_assert_uint_eq(v, 0xffffffe1u);  /* SeaBIOS: size 32, not 4 GiB */
    v = 0xc100;
    pci_access(p, 4, 4, true, &v);
    pci_access(p, 4, 4, false, &v);
    ck_assert_uint_eq(v, 0xc101u);
    /* an expansion ROM BAR of 128 KiB: sized with 0xFFFFF800 */
    ck_assert_int_eq(pci_set_rom(p, 3, 3000, NULL, NULL), -1);
    ck_assert_int_eq(pci_set_rom(p, 3, 128 << 10, NULL, NULL), 0);
    v = 0x80001830u;
    pci_access(p, 0, 4, true, &v);
    v = 0xfffff800u;
    pci_access(p, 4, 4, true, &v);
    pci_access(p, 4, 4, false, &v);
    ck_assert_uint_eq(v, 0xfffe0000u);
    v = 0xfebc0001u;
    pci_access(p, 4, 4, true, &v);
    pci_access(p, 4, 4, false, &v);
    ck_assert_uint_eq(v, 0xfebc0001u);
    pci_destroy(p);
}
END_TEST

/* ---- images ------------------------------------------------------------- */

#define ROM(i, n, v, d) vmm_fw_check_rom((i), (n), (v), (d), &off, &len)

/* The bytes of a ROM image's header length sum to 0. */
static void rom_sum(uint8_t *img, size_t n)
{
    uint8_t sum = 0;

    for (size_t i = 0; i + 1 < n; i++)
        sum = (uint8_t)(sum + img[i]);
    img[n - 1] = (uint8_t)-sum;
}

/* An image at img: `hdr` 512-byte blocks in its header, `blocks` in its
 * PCI data structure, checksummed. */
static void rom_image(uint8_t *img, unsigned hdr, unsigned blocks,
                      uint16_t vendor, uint16_t device, uint8_t type,
                      uint8_t indicator)
{
    img[0] = 0x55; img[1] = 0xaa; img[2] = (uint8_t)hdr;
    img[0x18] = 0x40; img[0x19] = 0;
    memcpy(img + 0x40, "PCIR", 4);
    memcpy(img + 0x44, &vendor, 2);
    memcpy(img + 0x46, &device, 2);
    img[0x50] = (uint8_t)blocks; img[0x51] = (uint8_t)(blocks >> 8);
    img[0x54] = type;
    img[0x55] = indicator;
    rom_sum(img, (size_t)hdr * 512);
}

START_TEST(image_checks)
{
    static uint8_t img[256 << 10];
    size_t off = 1, len = 1;

    memset(img, 0, sizeof img);
    ck_assert_ptr_nonnull(vmm_fw_check_bios(img, 128 << 10));  /* no jump */
    img[(128 << 10) - 16] = 0xea;
    ck_assert_ptr_null(vmm_fw_check_bios(img, 128 << 10));
    ck_assert_ptr_nonnull(vmm_fw_check_bios(img, 64 << 10));   /* small */
    ck_assert_ptr_nonnull(vmm_fw_check_bios(img, (128 << 10) + 16));
    memset(img, 0, sizeof img);
    ck_assert_ptr_nonnull(ROM(img, 4096, 0, 0));                /* no 55AA */
    img[0] = 0x55; img[1] = 0xaa; img[2] = 100;
    ck_assert_ptr_nonnull(ROM(img, 4096, 0, 0));                /* truncated */
    img[2] = 8;
    img[0x18] = 0x40;
    ck_assert_ptr_nonnull(ROM(img, 4096, 0, 0));                /* no PCIR */
    memcpy(img + 0x40, "PCIR\x22\x10\x00\x20", 8);
    ck_assert_ptr_nonnull(ROM(img, 4096, 0x1022, 0x2000));      /* sum */
    rom_sum(img, 4096);
    ck_assert_ptr_null(ROM(img, 4096, 0x1022, 0x2000));
    ck_assert_uint_eq(off, 0);                  /* image length 0: the header's */
    ck_assert_uint_eq(len, 4096);
    ck_assert_ptr_nonnull(ROM(img, 4096, 0x8086, 0x100e));
    img[0x18] = 0xf0; img[0x19] = 0xff;                         /* far */
    ck_assert_ptr_nonnull(ROM(img, 4096, 0, 0));
    ck_assert_ptr_nonnull(ROM(img, 256 << 10, 0, 0));
    ck_assert_ptr_nonnull(ROM(img, (16u << 20) + 512, 0, 0));  /* too big */
}
END_TEST

/* An image chain (PCI Firmware Specification 3.0, 5.1): the x86 image is
 * found wherever it lies, the walk ends at the image marked last and never
 * reads past the file. */
START_TEST(rom_image_chain)
{
    static uint8_t img[512 << 10];
    size_t off = 1, len = 1;

    memset(img, 0, sizeof img);
    /* an EFI image (code type 3) of 8 KiB, then an x86 one of 4 KiB */
    rom_image(img, 16, 16, 0x8086, 0x100e, 3, 0);
    rom_image(img + 8192, 8, 8, 0x8086, 0x100e, 0, 0x80);
    ck_assert_ptr_null(ROM(img, 12288, 0x8086, 0x100e));
    ck_assert_uint_eq(off, 8192);
    ck_assert_uint_eq(len, 4096);
    /* the x86 image for another device: named as such */
    ck_assert_str_eq(ROM(img, 12288, 0x1022, 0x2000),
                     "it is for another PCI device");
    /* the x86 image past the one marked last: not found */
    img[0x40 + 0x15] = 0x80;
    ck_assert_ptr_nonnull(strstr(ROM(img, 12288, 0x8086, 0x100e),
                                 "no x86 BIOS image"));
    img[0x40 + 0x15] = 0;
    /* the chain running past the end of the file */
    ck_assert_ptr_nonnull(strstr(ROM(img, 12288 - 512, 0x8086, 0x100e),
                                 "truncated"));
    /* a next image without a signature */
    img[8192] = 0;
    ck_assert_ptr_nonnull(strstr(ROM(img, 12288, 0x8086, 0x100e),
                                 "no 55 AA"));
    /* an image shorter than its header */
    memset(img, 0, sizeof img);
    rom_image(img, 8, 4, 0x8086, 0x100e, 0, 0x80);
    ck_assert_ptr_nonnull(ROM(img, 4096, 0x8086, 0x100e));
    /* an x86 image larger than the option ROM area (200 KiB): refused,
     * though the file may be as large as a BAR */
    rom_image(img, 255, 400, 0x8086, 0x100e, 0, 0x80);
    ck_assert_ptr_nonnull(strstr(ROM(img, 400 * 512, 0x8086, 0x100e),
                                 "larger than"));
    /* ipxe-qemu's efi-e1000.rom when the package is there */
    {
        FILE *f = fopen("/usr/lib/ipxe/qemu/efi-e1000.rom", "rb");
        size_t n;

        if (f) {
            n = fread(img, 1, sizeof img, f);
            fclose(f);
            ck_assert_ptr_null(ROM(img, n, 0x8086, 0x100e));
            ck_assert_uint_eq(off, 0);
            ck_assert_uint_lt(len, n);
            ck_assert_uint_eq(len, (size_t)img[2] * 512);
        }
    }
}


/* ---- the PAM map under hostile writes ------------------------------------ */

typedef struct slot { bool on; uint64_t gpa, size; uint8_t *hva; bool ro; }
    slot;
static slot slots[32];
static vmm tvm;
static vmm_fw tfw;

static bool inside(const uint8_t *p, uint64_t n, const uint8_t *b,
                   uint64_t bn)
{
    return p >= b && n <= bn && (uint64_t)(p - b) <= bn - n;
}

static int set_slot(void *o, unsigned s, uint64_t gpa, uint64_t size,
                    void *hva, bool ro)
{
    (void)o;
    ck_assert_uint_lt(s, 32);
    if (!size) {
        ck_assert(slots[s].on);             /* only existing ones go */
        slots[s].on = false;
        return 0;
    }
    ck_assert(!slots[s].on);                /* KVM: remove before add */
    ck_assert(inside(hva, size, tvm.ram, tvm.ram_size) ||
              (ro && inside(hva, size, tfw.bios, tfw.bios_size)) ||
              (ro && tfw.rom_bar &&
               inside(hva, size, tfw.rom_bar, tfw.rom_bar_size)));
    slots[s] = (slot){ true, gpa, size, hva, ro };
    return 0;
}

START_TEST(pam_hostile_writes_stay_inside)
{
    tvm.ram_size = 4u << 20;
    tvm.ram = mmap(NULL, tvm.ram_size, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    tfw.bios_size = 128 << 10;
    tfw.bios = mmap(NULL, tfw.bios_size, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    tvm.fw = &tfw;
    ck_assert_int_eq(vmm_fw_map_install(&tvm, set_slot, NULL), 0);
    /* at reset 0xF0000 shows the BIOS's last 64 KiB, read-only */
    lc_gpa_map m = { 0 };
    ck_assert(vmm_fw_gpa_map(&tvm, 0xffff0, &m));
    ck_assert(m.readonly && m.hva == tfw.bios + tfw.bios_size - 0x10);
    ck_assert(vmm_fw_gpa_map(&tvm, 0xfffffff0u, &m));
    ck_assert(m.readonly && m.hva == tfw.bios + tfw.bios_size - 0x10);
    /* SeaBIOS's setting: everything shadow RAM, read-write */
    vmm_fw_pam_write(&tvm, 0x59, 0x30);
    for (unsigned r = 0x5a; r <= 0x5f; r++)
        vmm_fw_pam_write(&tvm, r, 0x33);
    ck_assert(vmm_fw_gpa_map(&tvm, 0xf1234, &m));
    ck_assert(!m.readonly && m.hva == tvm.ram + 0xf1234);
    ck_assert_uint_eq(vmm_fw_pam_read(&tvm, 0x5f), 0x33);
    /* the NIC's expansion ROM BAR (--rom-bar) */
    static uint8_t rom[4096] = { 0x55, 0xaa, 8 };
    uint8_t id[64] = { 0x22, 0x10, 0x00, 0x20 };
    tvm.pci = pci_create();
    ck_assert_int_eq(pci_add_function(tvm.pci, LCVMM_NIC_PCI_DEV, id,
                                      (pci_bar_info){ 32, true }, 0xc000,
                                      11, NULL), 0);
    tfw.rom = rom;
    tfw.rom_size = sizeof rom;
    ck_assert_int_eq(vmm_fw_rom_bar_setup(&tvm), 0);
    /* anything, anywhere in configuration space and the ROM BAR */
    for (unsigned i = 0; i < 20000; i++) {
        unsigned reg = rnd() & 1 ? 0x59 + rnd() % 7 : rnd() & 0xff;
        uint32_t v = 0x80000030u | LCVMM_NIC_PCI_DEV << 11;
        vmm_fw_pam_write(&tvm, reg, (uint8_t)rnd());
        pci_access(tvm.pci, 0, 4, true, &v);
        v = rnd() & 1 ? rnd() : (rnd() & 0xfffff001u);
        pci_access(tvm.pci, 4, 4, true, &v);
        uint64_t gpa = rnd() & 1 ? rnd() % 0x140000u
                                  : tfw.rom_bar_addr + rnd() % 0x2000u;
        memset(&m, 0, sizeof m);
        if (!vmm_fw_gpa_map(&tvm, gpa, &m) || m.kind != LC_GPA_RAM)
            continue;
        ck_assert(m.span > 0);
        ck_assert(inside(m.hva, m.span, tvm.ram, tvm.ram_size) ||
                  (m.readonly && inside(m.hva, m.span, tfw.bios,
                                        tfw.bios_size)) ||
                  (m.readonly && inside(m.hva, m.span, tfw.rom_bar,
                                        tfw.rom_bar_size)));
    }
    ck_assert_uint_gt(tfw.rom_bar_maps, 0);
    pci_destroy(tvm.pci);
    tfw.rom = NULL;
    ck_assert_int_eq(stops, 0);
    munmap(tvm.ram, tvm.ram_size);
    munmap(tfw.bios, tfw.bios_size);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("firmware");
    TCase *t = tcase_create("devices");
    tcase_add_test(t, cmos_sizes_time_and_hostile_index);
    tcase_add_test(t, fw_cfg_items_directory_and_hostile_selectors);
    tcase_add_test(t, fw_cfg_dma_reads_skips_and_hostile_descriptors);
    tcase_add_test(t, i8042_self_test_keyboard_and_overrun);
    tcase_add_test(t, pci_io_bar_reads_back_all_ones_above_its_size);
    suite_add_tcase(s, t);
    t = tcase_create("map");
    tcase_add_test(t, image_checks);
    tcase_add_test(t, rom_image_chain);
    tcase_add_test(t, pam_hostile_writes_stay_inside);
    suite_add_tcase(s, t);
    return lc_test_run(s);
}
