/* SPDX-License-Identifier: MIT */
/*
 * tests/fuzz/fuzz_platform.c: hostile guests against the platform devices
 * of the reference VMM (examples/vmm/devices): PCI configuration
 * mechanism #1 (0xCF8/0xCFC, BAR sizing and moves, the expansion ROM BAR,
 * the host bridge's device-specific registers), the 16550 UART, the
 * MC146818 CMOS/RTC, fw_cfg and the i8042. Every port access a guest can
 * make reaches these models with the offsets and sizes the board gives
 * them (../../examples/vmm/board.c, fw_board.c): that is the surface.
 *
 * Input layout: four option bytes (BAR0 of the fuzzed PCI function: I/O
 * or memory and its size; its ROM BAR size; the wall clock the CMOS
 * reads), then commands, each an opcode byte and its operands:
 *
 *   0 CONFIG_ADDRESS write: raw 32 bits, or (opcode bit 3) an address
 *     built from a device byte and a register byte, enable bit set
 *   1 CONFIG_DATA read  (byte offset and size 1/2/4 from the opcode)
 *   2 CONFIG_DATA write (same, then 32 bits)
 *   3 UART access: offset, direction from the opcode, a value byte
 *   4 CMOS access: index or data port, direction, a value byte
 *   5 fw_cfg: selector write of a known key or of 16 raw bits, or a
 *     data-port read, or any other width/offset; with opcode bit 7 a DMA
 *     transfer: a descriptor (its offset in the harness's 16 KiB of guest
 *     RAM, control, length, buffer address) from the input, the address
 *     register's high half written first with opcode bit 6
 *   6 i8042: data or command port, direction, a value byte
 *   7 BAR sizing as firmware does it: select BAR0 or the ROM BAR of a
 *     device, write all ones, read back, write a base from the input
 *
 * Beyond "nothing crashes" (ASan, UBSan) the harness keeps shadow state
 * and aborts when a model disagrees with the datasheet behaviour it
 * documents: absent functions read as all ones; a sized BAR reads back
 * ~(size - 1) with its type bits; every BAR move and ROM move the model
 * reports is aligned to the size; UART bytes out equal THR writes with
 * DLAB clear; plain CMOS RAM reads back what was written; fw_cfg returns
 * the selected item's bytes in order, then zeros, through the data port
 * and by DMA; a DMA transfer reports an error exactly when it writes or
 * its buffer leaves guest RAM, and writes nothing outside guest RAM.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fwdev.h"
#include "platform.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_CMDS   4096
#define FN_DEV     3            /* the fuzzed function (a NIC's slot) */
#define HOST_DEV   0            /* host bridge: device-specific hook */

typedef struct in {
    const uint8_t *p, *end;
} in;

static unsigned u8(in *s)
{
    return s->p < s->end ? *s->p++ : 0;
}

static uint32_t u32(in *s)
{
    uint32_t v = u8(s);
    v |= (uint32_t)u8(s) << 8;
    v |= (uint32_t)u8(s) << 16;
    return v | (uint32_t)u8(s) << 24;
}

#define CHECK(c) do { if (!(c)) { \
    fprintf(stderr, "fuzz_platform: %s:%d: %s\n", __FILE__, __LINE__, #c); \
    abort(); } } while (0)

/* ---- callbacks the board would give the models -------------------------- */

static struct {
    pci_bar_info bar;
    uint32_t rom_size;
    uint32_t bar_base;          /* as last reported by bar_moved */
    unsigned moves, roms, cmds, hooks, resets;
    time_t now;
} S;

static void on_bar_moved(void *opaque, uint32_t base)
{
    (void)opaque;
    CHECK(S.bar.size && base % S.bar.size == 0);
    S.bar_base = base;
    S.moves++;
}

static void on_command(void *opaque, uint16_t cmd)
{
    (void)opaque;
    CHECK((cmd & ~0x0547u) == 0);       /* only the writable bits */
    S.cmds++;
}

static void on_rom(void *opaque, uint32_t addr, bool enabled)
{
    (void)opaque;
    (void)enabled;
    CHECK(S.rom_size && addr % S.rom_size == 0);
    S.roms++;
}

static void on_cfg(void *opaque, unsigned reg, uint32_t val)
{
    (void)opaque;
    (void)val;
    CHECK(reg >= 0x40 && reg <= 0xfc && reg % 4 == 0);
    S.hooks++;
}

static void on_reset(void *opaque)
{
    (void)opaque;
    S.resets++;
}

static time_t fixed_now(void)
{
    return S.now;
}

/* ---- fw_cfg items: what the board adds, with contents the harness knows */

static const uint16_t fw_keys[] = {
    FW_CFG_SIGNATURE, FW_CFG_ID, FW_CFG_FILE_DIR, FW_CFG_NB_CPUS,
    FW_CFG_BOOT_MENU, FW_CFG_MAX_CPUS, FW_CFG_FILE_FIRST,
    FW_CFG_FILE_FIRST + 1, FW_CFG_FILE_FIRST + 2, 0x4000, 0xffff,
};
static uint8_t file_big[5000];

/* Guest RAM for fw_cfg's DMA, between guard bytes no transfer may touch;
 * the copies refuse any byte outside it, as the VMM's vm_dma does. */
#define GMEM  0x4000u
#define GUARD 64u
static uint8_t gmem_all[GMEM + 2 * GUARD];
static uint8_t *const gmem = gmem_all + GUARD;

static bool gm_inside(uint64_t gpa, uint64_t len)
{
    return gpa <= GMEM && len <= GMEM - gpa;
}

static int gm_rd(void *o, uint64_t gpa, void *buf, size_t len)
{
    (void)o;
    if (!gm_inside(gpa, len))
        return -1;
    memcpy(buf, gmem + gpa, len);
    return 0;
}

static int gm_wr(void *o, uint64_t gpa, const void *buf, size_t len)
{
    (void)o;
    if (!gm_inside(gpa, len))
        return -1;
    memcpy(gmem + gpa, buf, len);
    return 0;
}

static const vm_dma gm_dma = { NULL, gm_rd, gm_wr };

static void put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24); p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);  p[3] = (uint8_t)v;
}

typedef struct fw_shadow {
    const uint8_t *data;        /* NULL: unknown contents (the directory) */
    uint32_t len;
    bool exists;
    uint32_t off;
} fw_shadow;

static void fw_known(uint16_t key, fw_shadow *sh)
{
    static const uint8_t sig[4] = { 'Q', 'E', 'M', 'U' };
    static const uint8_t id[4] = { FW_CFG_ID_TRADITIONAL | FW_CFG_ID_DMA,
                                   0, 0, 0 };
    static const uint8_t two[2] = { 2, 0 };
    static const uint8_t one[2] = { 1, 0 };
    static const uint8_t e820[20] = { 0, 0, 0, 0, 0, 0, 0, 0,
                                      0, 0, 0, 8, 0, 0, 0, 0, 1, 0, 0, 0 };
    memset(sh, 0, sizeof *sh);
    sh->exists = true;
    switch (key) {
    case FW_CFG_SIGNATURE: sh->data = sig; sh->len = 4; break;
    case FW_CFG_ID: sh->data = id; sh->len = 4; break;
    case FW_CFG_NB_CPUS: case FW_CFG_MAX_CPUS: sh->data = two; sh->len = 2;
        break;
    case FW_CFG_BOOT_MENU: sh->data = one; sh->len = 2; break;
    case FW_CFG_FILE_FIRST: sh->data = e820; sh->len = sizeof e820; break;
    case FW_CFG_FILE_FIRST + 1: sh->data = file_big; sh->len = sizeof file_big;
        break;
    case FW_CFG_FILE_FIRST + 2: sh->data = NULL; sh->len = 0; break;
    case FW_CFG_FILE_DIR: sh->data = NULL; sh->len = 4 + 3 * 64; break;
    default: sh->exists = false; break;
    }
}

static fw_cfg *fw_setup(void)
{
    static const uint8_t two[2] = { 2, 0 };
    static const uint8_t one[2] = { 1, 0 };
    fw_shadow sh;
    fw_cfg *f = fw_cfg_create(&gm_dma);

    for (size_t i = 0; i < sizeof file_big; i++)
        file_big[i] = (uint8_t)(i * 7 + 3);
    CHECK(f);
    CHECK(!fw_cfg_add(f, FW_CFG_NB_CPUS, two, 2));
    CHECK(!fw_cfg_add(f, FW_CFG_MAX_CPUS, two, 2));
    CHECK(!fw_cfg_add(f, FW_CFG_BOOT_MENU, one, 2));
    fw_known(FW_CFG_FILE_FIRST, &sh);
    CHECK(!fw_cfg_add_file(f, "etc/e820", sh.data, sh.len));
    CHECK(!fw_cfg_add_file(f, "genroms/big.bin", file_big, sizeof file_big));
    CHECK(!fw_cfg_add_file(f, "etc/empty", "", 0));
    return f;
}

/* ---- the run ------------------------------------------------------------- */

static FILE *sink(void)
{
    static FILE *null_out;
    if (!null_out)
        null_out = fopen("/dev/null", "w");
    CHECK(null_out);
    return null_out;
}

static const unsigned sizes[4] = { 1, 2, 4, 4 };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    in s = { data, data + size };
    uint8_t id[64] = { 0 }, host_id[64] = { 0 };
    uint8_t cmos_shadow[128];
    bool cmos_known[128] = { false };
    unsigned o0, o1, o2, o3, cmos_index = 0;
    uint64_t uart_expect = 0;
    uint8_t lcr = 0;
    fw_shadow fsel = { 0 };
    pci_bus *pci;
    uart *u;
    cmos *c;
    fw_cfg *fw;
    i8042 *k;

    memset(&S, 0, sizeof S);
    o0 = u8(&s); o1 = u8(&s); o2 = u8(&s); o3 = u8(&s);
    /* BAR0: I/O 4..256 bytes or memory 16 bytes..1 MiB, at an aligned base */
    S.bar.is_io = o0 & 1;
    S.bar.size = S.bar.is_io ? 1u << (2 + (o0 >> 1) % 7)
                             : 1u << (4 + (o0 >> 1) % 17);
    S.rom_size = (o1 & 0x80) ? 0 : 1u << (11 + o1 % 10);
    S.now = (time_t)(((uint64_t)o2 << 8 | o3) * 1000003ull);

    pci = pci_create();
    CHECK(pci);
    id[0] = 0x22; id[1] = 0x10; id[2] = 0x00; id[3] = 0x20;   /* 1022:2000 */
    id[0x0b] = 0x02; id[0x3d] = 1;
    host_id[0] = 0x86; host_id[1] = 0x80; host_id[0x0b] = 0x06;
    {
        const pci_function_ops ops = { NULL, on_bar_moved, on_command };
        uint32_t base = S.bar.is_io ? 0xc000u : 0xfebc0000u & ~(S.bar.size - 1);
        CHECK(!pci_add_function(pci, HOST_DEV, host_id,
                                (pci_bar_info){ 0, false }, 0, 0, NULL));
        CHECK(!pci_set_cfg_hook(pci, HOST_DEV, on_cfg, NULL));
        CHECK(!pci_add_function(pci, FN_DEV, id, S.bar, base, 11, &ops));
        CHECK(S.moves == 1 && S.bar_base == base);
        /* bad registrations are refused */
        CHECK(pci_add_function(pci, FN_DEV, id, S.bar, base, 11, &ops) < 0);
        CHECK(pci_add_function(pci, PCI_MAX_DEVFN, id, S.bar, 0, 0, NULL) < 0);
        if (S.rom_size)
            CHECK(!pci_set_rom(pci, FN_DEV, S.rom_size, on_rom, NULL));
        CHECK(pci_set_rom(pci, FN_DEV, 3000, on_rom, NULL) < 0);
    }
    u = uart_create(sink());
    c = cmos_create(64u << 20, 2, fixed_now);
    memset(gmem_all, 0xa5, sizeof gmem_all);
    fw = fw_setup();
    k = i8042_create(on_reset, NULL);
    CHECK(u && c && k);
    memset(cmos_shadow, 0, sizeof cmos_shadow);

    for (unsigned n = 0; n < MAX_CMDS && s.p < s.end; n++) {
        unsigned op = u8(&s), off, sz;
        uint32_t v;
        uint8_t b;

        switch (op & 7) {
        case 0:                                 /* CONFIG_ADDRESS */
            if (op & 8) {
                unsigned dev = u8(&s), reg = u8(&s);
                v = 0x80000000u | (dev & 0x1f) << 11 | (reg & 0xfc);
                if (op & 0x10)      /* sometimes a function or bus too */
                    v |= (uint32_t)(dev >> 5) << 8 | (uint32_t)(reg & 3) << 16;
            } else {
                v = u32(&s);
            }
            pci_access(pci, 0, 4, true, &v);
            v = 0;
            pci_access(pci, 0, 4, false, &v);
            break;
        case 1:                                 /* CONFIG_DATA read */
        case 2: {                               /* CONFIG_DATA write */
            bool w = (op & 7) == 2;
            off = (op >> 3) & 7;
            sz = sizes[(op >> 6) & 3];
            v = w ? u32(&s) : 0x5a5a5a5au;
            pci_access(pci, off, sz, w, &v);
            if (!w && sz < 4)
                CHECK(v < 1u << (sz * 8) || off < 4);
            break;
        }
        case 3:                                 /* UART */
            off = (op >> 3) & 7;
            b = (uint8_t)u8(&s);
            if (op & 0x40) {
                if (off == 0 && !(lcr & 0x80))
                    uart_expect++;
                if (off == 3)
                    lcr = b;
                uart_access(u, off, true, &b);
            } else {
                uart_access(u, off, false, &b);
                if (off == 5)
                    CHECK(b & 0x20);            /* THRE: always ready */
                if (off == 3)
                    CHECK(b == lcr);
            }
            CHECK(uart_bytes_out(u) == uart_expect);
            break;
        case 4:                                 /* CMOS */
            off = (op >> 3) & 1;
            b = (uint8_t)u8(&s);
            if (off == 0) {
                if (op & 0x40) {
                    cmos_index = b & 0x7f;
                    cmos_access(c, 0, true, &b);
                } else {
                    cmos_access(c, 0, false, &b);
                    CHECK(b == 0xff);
                }
            } else if (op & 0x40) {
                cmos_access(c, 1, true, &b);
                /* plain CMOS RAM (past the clock and status registers) */
                if (cmos_index >= 0x0e && cmos_index != 0x32) {
                    cmos_shadow[cmos_index] = b;
                    cmos_known[cmos_index] = true;
                }
            } else {
                cmos_access(c, 1, false, &b);
                if (cmos_known[cmos_index])
                    CHECK(b == cmos_shadow[cmos_index]);
            }
            break;
        case 5: {                               /* fw_cfg */
            unsigned kind = (op >> 3) & 3;
            if (kind == 0) {                    /* select a known key */
                uint16_t key = fw_keys[u8(&s) % (sizeof fw_keys /
                                                 sizeof fw_keys[0])];
                v = key;
                fw_cfg_access(fw, FW_CFG_PORT_SEL, (op & 0x20) ? 4 : 2,
                              true, &v);
                fw_known(key, &fsel);
            } else if (kind == 1) {             /* raw selector */
                v = u32(&s) & 0xffff;
                fw_cfg_access(fw, FW_CFG_PORT_SEL, 2, true, &v);
                fw_known((uint16_t)v, &fsel);
                if (fw_cfg_find_file(fw, "etc/e820") == (int)v)
                    fsel.exists = true;
            } else if (kind == 2) {             /* read up to 64 data bytes */
                unsigned cnt = 1 + (op >> 5);
                cnt = cnt * cnt;
                for (unsigned i = 0; i < cnt; i++) {
                    v = 0xdeadbeefu;
                    fw_cfg_access(fw, FW_CFG_PORT_DATA, 1, false, &v);
                    CHECK(v <= 0xff);
                    if (fsel.exists && fsel.data && fsel.off < fsel.len)
                        CHECK(v == fsel.data[fsel.off]);
                    else if (!fsel.exists || fsel.off >= fsel.len)
                        CHECK(v == 0);
                    fsel.off++;
                }
            } else if (op & 0x80) {             /* a DMA transfer */
                uint32_t d = u32(&s) % (GMEM + 64), ctl = u32(&s),
                         len = u32(&s) & 0x7fff, hi = 0;
                uint64_t addr = (op & 0x20) ? (uint64_t)u32(&s) << 32 |
                                              u32(&s)
                                            : u32(&s) % (GMEM + 64);
                bool placed = gm_inside(d, 16), rd, wr, err;
                uint64_t before = fw_cfg_dma_transfers(fw);

                if (placed) {
                    put_be32(gmem + d, ctl);
                    put_be32(gmem + d + 4, len);
                    put_be32(gmem + d + 8, (uint32_t)(addr >> 32));
                    put_be32(gmem + d + 12, (uint32_t)addr);
                }
                if (op & 0x40) {
                    hi = u32(&s) & 1;
                    v = __builtin_bswap32(hi);
                    fw_cfg_access(fw, FW_CFG_PORT_DMA_HI, 4, true, &v);
                }
                v = __builtin_bswap32(d);
                fw_cfg_access(fw, FW_CFG_PORT_DMA_LO, 4, true, &v);
                CHECK(fw_cfg_dma_transfers(fw) == before + 1);
                if (!placed || hi)
                    break;                      /* dropped: nothing moves */
                if (ctl & FW_CFG_DMA_CTL_SELECT)
                    fw_known((uint16_t)(ctl >> 16), &fsel);
                rd = ctl & FW_CFG_DMA_CTL_READ;
                wr = !rd && (ctl & FW_CFG_DMA_CTL_WRITE);
                err = len && (wr || (rd && !gm_inside(addr, len)));
                /* the control field comes back last: 0 or the error */
                CHECK(gmem[d] == 0 && gmem[d + 1] == 0 && gmem[d + 2] == 0 &&
                      gmem[d + 3] == (err ? FW_CFG_DMA_CTL_ERROR : 0));
                if (err) {
                    /* where the offset stopped is the model's business:
                     * check no more data-port bytes until a select */
                    fsel.exists = true;
                    fsel.data = NULL;
                    fsel.len = UINT32_MAX;
                    break;
                }
                if (!rd && !wr && !(ctl & FW_CFG_DMA_CTL_SKIP))
                    break;                      /* no operation */
                for (uint32_t i = 0; rd && i < len; i++) {
                    uint64_t pos = (uint64_t)fsel.off + i;
                    if (addr + i >= d && addr + i < d + 4)
                        continue;               /* the control field */
                    if (!fsel.exists || pos >= fsel.len)
                        CHECK(gmem[addr + i] == 0);
                    else if (fsel.data)
                        CHECK(gmem[addr + i] == fsel.data[pos]);
                }
                if (fsel.exists && fsel.off < fsel.len)
                    fsel.off += fsel.len - fsel.off < len ? fsel.len - fsel.off
                                                          : len;
            } else {                            /* any other access */
                bool w = op & 0x20;
                off = (op >> 6) & 1;
                sz = sizes[u8(&s) & 3];
                v = u32(&s);
                if (off == FW_CFG_PORT_SEL && w && sz >= 2) {
                    fw_known((uint16_t)v, &fsel);
                } else if (off == FW_CFG_PORT_DATA && !w && sz == 1) {
                    fsel.off++;     /* one byte consumed, value not checked */
                }
                fw_cfg_access(fw, off, sz, w, &v);
            }
            break;
        }
        case 6:                                 /* i8042 */
            off = (op & 8) ? 4 : 0;
            b = (uint8_t)u8(&s);
            i8042_access(k, off, (op & 0x40) != 0, &b);
            break;
        case 7: {                               /* BAR sizing / move */
            bool rom = op & 8;
            unsigned dev = (op & 0x10) ? FN_DEV : u8(&s) & 0x1f;
            uint32_t ones = 0xffffffffu, base;
            v = 0x80000000u | dev << 11 | (rom ? 0x30u : 0x10u);
            pci_access(pci, 0, 4, true, &v);
            pci_access(pci, 4, 4, true, &ones);
            v = 0;
            pci_access(pci, 4, 4, false, &v);
            if (dev == FN_DEV && !rom) {
                uint32_t type = S.bar.is_io ? 1u : 0u;
                CHECK(v == (~(S.bar.size - 1) | type));
            } else if (dev == FN_DEV && S.rom_size) {
                CHECK(v == (~(S.rom_size - 1) | 1u));
            } else if (dev != FN_DEV && dev != HOST_DEV) {
                CHECK(v == 0xffffffffu);        /* no such function */
            }
            base = u32(&s);
            pci_access(pci, 4, 4, true, &base);
            if (dev == FN_DEV && !rom && S.bar.is_io) {
                /* the command register decides decoding, not the BAR */
                (void)pci_decodes(pci, FN_DEV);
            }
            break;
        }
        }
    }

    /* the BAR the model reports is the BAR the guest reads */
    {
        uint32_t v = 0x80000000u | FN_DEV << 11 | 0x10u;
        pci_access(pci, 0, 4, true, &v);
        pci_access(pci, 4, 4, false, &v);
        CHECK((v & ~(S.bar.is_io ? 3u : 0xfu)) == S.bar_base);
    }
    /* the data port moves a byte a command, a transfer at most 32 KiB */
    CHECK(fw_cfg_bytes_read(fw) <= (uint64_t)MAX_CMDS * 0x8000);
    for (unsigned i = 0; i < GUARD; i++)
        CHECK(gmem_all[i] == 0xa5 && gmem_all[GUARD + GMEM + i] == 0xa5);
    i8042_destroy(k);
    fw_cfg_destroy(fw);
    cmos_destroy(c);
    uart_destroy(u);
    pci_destroy(pci);
    return 0;
}
