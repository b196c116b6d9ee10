/* SPDX-License-Identifier: MIT */
/*
 * QEMU's firmware configuration interface (fw_cfg) on x86's ports, as
 * QEMU's docs/specs/fw_cfg.rst specifies it.
 *
 * The traditional interface: a 16-bit write to the selector port (0x510)
 * chooses an item and rewinds it; each byte read from the data port
 * (0x511) returns the next byte of the item, 0 past its end or for an
 * item that does not exist.
 *
 * The DMA interface (when the VMM gives the model its vm_dma): the guest
 * writes the guest-physical address of a 16-byte access descriptor
 * (control, length, address; big-endian) to the address register, the
 * high half to 0x514, then the low half to 0x518, which runs the transfer
 * at once: an optional select (the key in the control's top 16 bits),
 * then a read, skip or write of `length` bytes at the item's offset. A
 * read past the item's end, or of no item, fills the rest with zeros;
 * no item is writable, so a write fails. The device then stores the
 * control field back: 0 when done, FW_CFG_DMA_CTL_ERROR when a copy
 * failed. SeaBIOS uses it for every read when FW_CFG_ID has the DMA bit:
 * one exit per read (the low half's OUT; it waits for the control field
 * in memory) where the data port takes a select and a `rep insb`, which
 * KVM returns to the VMM a page or less at a time.
 *
 * The descriptor and every address in it are the guest's and hostile:
 * each copy goes through vm_dma, which refuses any byte outside guest
 * RAM; a descriptor that cannot be read is dropped (no control field to
 * report to) and counted; a transfer moves at most `length` bytes, and
 * zero-fills page by page, so it ends after at most 4 GiB of copies, at
 * the first page outside RAM (a guest can zero its whole RAM with one
 * OUT, as under QEMU: its own memory, a bounded cost). The model keeps no
 * lock: the board serializes its accesses.
 *
 * Items are the VMM's: fixed numbers (signature, ID, CPU counts, boot
 * menu) and named files listed in the file directory (0x19: a big-endian
 * count, then 64-byte entries of big-endian size, select, reserved,
 * name).
 */
#include <stdlib.h>
#include <string.h>

#include "fwdev.h"

#define ITEM_MAX (1u << 20)

typedef struct fw_item {
    uint16_t key;
    char name[FW_CFG_NAME_MAX];     /* "" for a numbered item */
    uint8_t *data;
    uint32_t len;
} fw_item;

struct fw_cfg {
    fw_item item[FW_CFG_MAX_ITEMS];
    unsigned n;
    uint16_t next_file;
    int sel;                        /* index into item, -1 none */
    uint32_t off;
    uint8_t *dir;                   /* FW_CFG_FILE_DIR, rebuilt on add */
    uint64_t bytes_read;
    const vm_dma *dma;              /* NULL: no DMA interface */
    uint32_t dma_hi;                /* the address's high half, held */
    uint64_t dma_transfers, dma_errors;
};

static void put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24); p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);  p[3] = (uint8_t)v;
}

static uint32_t get_be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
           (uint32_t)p[2] << 8 | p[3];
}

fw_cfg *fw_cfg_create(const vm_dma *dma)
{
    static const char sig[4] = { 'Q', 'E', 'M', 'U' };
    const uint8_t id[4] = { FW_CFG_ID_TRADITIONAL |
                            (dma ? FW_CFG_ID_DMA : 0), 0, 0, 0 };
    fw_cfg *f = calloc(1, sizeof *f);

    if (!f)
        return NULL;
    f->dma = dma;
    f->sel = -1;
    f->next_file = FW_CFG_FILE_FIRST;
    if (fw_cfg_add(f, FW_CFG_SIGNATURE, sig, 4) ||
        fw_cfg_add(f, FW_CFG_ID, id, 4) ||
        fw_cfg_add(f, FW_CFG_FILE_DIR, "\0\0\0\0", 4)) {
        fw_cfg_destroy(f);
        return NULL;
    }
    return f;
}

void fw_cfg_destroy(fw_cfg *f)
{
    if (!f)
        return;
    for (unsigned i = 0; i < f->n; i++)
        free(f->item[i].data);
    free(f);
}

static fw_item *find(fw_cfg *f, uint16_t key)
{
    for (unsigned i = 0; i < f->n; i++)
        if (f->item[i].key == key)
            return &f->item[i];
    return NULL;
}

static int put(fw_cfg *f, uint16_t key, const char *name, const void *data,
               size_t len)
{
    fw_item *it;

    if (f->n == FW_CFG_MAX_ITEMS || len > ITEM_MAX || find(f, key))
        return -1;
    it = &f->item[f->n];
    memset(it, 0, sizeof *it);
    it->data = malloc(len ? len : 1);
    if (!it->data)
        return -1;
    memcpy(it->data, data, len);
    it->len = (uint32_t)len;
    it->key = key;
    if (name)
        memcpy(it->name, name, strlen(name));
    f->n++;
    return 0;
}

int fw_cfg_add(fw_cfg *f, uint16_t key, const void *data, size_t len)
{
    return put(f, key, NULL, data, len);
}

/* The directory: rebuilt whole after every file added (a few at start). */
static int rebuild_dir(fw_cfg *f)
{
    fw_item *d = find(f, FW_CFG_FILE_DIR);
    unsigned files = 0;
    uint8_t *buf;
    size_t len;

    for (unsigned i = 0; i < f->n; i++)
        files += f->item[i].name[0] != 0;
    len = 4 + (size_t)files * 64;
    buf = calloc(1, len);
    if (!buf || !d) {
        free(buf);
        return -1;
    }
    put_be32(buf, files);
    for (unsigned i = 0, j = 0; i < f->n; i++) {
        uint8_t *e;
        if (!f->item[i].name[0])
            continue;
        e = buf + 4 + (size_t)j++ * 64;
        put_be32(e, f->item[i].len);
        e[4] = (uint8_t)(f->item[i].key >> 8);
        e[5] = (uint8_t)f->item[i].key;
        memcpy(e + 8, f->item[i].name, FW_CFG_NAME_MAX);
    }
    free(d->data);
    d->data = buf;
    d->len = (uint32_t)len;
    return 0;
}

int fw_cfg_add_file(fw_cfg *f, const char *name, const void *data,
                    size_t len)
{
    size_t nl = strlen(name);

    if (!nl || nl >= FW_CFG_NAME_MAX || f->next_file == 0x4000)
        return -1;
    if (put(f, f->next_file, name, data, len))
        return -1;
    f->next_file++;
    return rebuild_dir(f);
}

static void select_key(fw_cfg *f, uint16_t key)
{
    fw_item *it = find(f, key);

    f->sel = it ? (int)(it - f->item) : -1;
    f->off = 0;
}

/* Zeros to [gpa, gpa + len) (the read of what lies past an item's end),
 * by pieces that end at page boundaries, so that a range running off the
 * end of guest RAM gets every byte before it; -1 at the first piece not
 * in guest RAM. */
static int zero_fill(fw_cfg *f, uint64_t gpa, uint32_t len)
{
    static const uint8_t zeros[4096];

    while (len) {
        uint32_t room = (uint32_t)(sizeof zeros - (gpa & (sizeof zeros - 1)));
        uint32_t n = len < room ? len : room;
        if (dma_write(f->dma, gpa, zeros, n))
            return -1;
        gpa += n;
        len -= n;
    }
    return 0;
}

/* One transfer, for the descriptor at `desc` (docs/specs/fw_cfg.rst,
 * "DMA interface"). */
static void dma_transfer(fw_cfg *f, uint64_t desc)
{
    uint8_t d[FW_CFG_DMA_DESC_SIZE], done[4] = { 0 };
    uint32_t control, len;
    uint64_t addr;
    bool read, write, failed = false;

    f->dma_transfers++;
    if (dma_read(f->dma, desc, d, sizeof d)) {
        f->dma_errors++;                /* nowhere to report it */
        return;
    }
    control = get_be32(d + FW_CFG_DMA_OFF_CONTROL);
    len = get_be32(d + FW_CFG_DMA_OFF_LENGTH);
    addr = (uint64_t)get_be32(d + FW_CFG_DMA_OFF_ADDRESS) << 32 |
           get_be32(d + FW_CFG_DMA_OFF_ADDRESS + 4);
    if (control & FW_CFG_DMA_CTL_SELECT)
        select_key(f, (uint16_t)(control >> 16));
    /* one operation, READ before WRITE before SKIP; none moves nothing */
    read = control & FW_CFG_DMA_CTL_READ;
    write = !read && (control & FW_CFG_DMA_CTL_WRITE);
    if (!read && !write && !(control & FW_CFG_DMA_CTL_SKIP))
        len = 0;
    if (write && len)
        failed = true;                  /* no item takes writes */
    while (len && !failed) {
        const fw_item *it = f->sel >= 0 ? &f->item[f->sel] : NULL;
        uint32_t n;

        if (!it || f->off >= it->len) {
            /* past the end, or no item: a read gets zeros, a skip
             * nothing, and the offset stays */
            n = len;
            if (read && zero_fill(f, addr, n))
                failed = true;
        } else {
            n = it->len - f->off < len ? it->len - f->off : len;
            if (read && dma_write(f->dma, addr, it->data + f->off, n)) {
                failed = true;
                break;
            }
            if (read)
                f->bytes_read += n;
            f->off += n;
        }
        addr += n;
        len -= n;
    }
    if (failed) {
        f->dma_errors++;
        done[3] = FW_CFG_DMA_CTL_ERROR;
    }
    if (dma_write(f->dma, desc + FW_CFG_DMA_OFF_CONTROL, done, sizeof done))
        f->dma_errors++;                /* cannot happen: read just now */
}

void fw_cfg_access(fw_cfg *f, unsigned offset, unsigned size, bool is_write,
                   uint32_t *val)
{
    if (offset >= FW_CFG_PORT_DMA_HI && offset < FW_CFG_PORTS_DMA) {
        if (!f->dma) {                  /* not decoded: an absent port */
            if (!is_write)
                *val = size >= 4 ? 0xffffffffu : (1u << (8 * size)) - 1;
            return;
        }
        if (!is_write) {
            /* the signature, its byte 0 at 0x514 (little-endian ports) */
            static const char sig[] = FW_CFG_DMA_SIGNATURE;
            uint32_t v = 0;
            for (unsigned i = 0; i < size && offset - 4 + i < 8; i++)
                v |= (uint32_t)(uint8_t)sig[offset - 4 + i] << (8 * i);
            *val = v;
            return;
        }
        if (size != 4)
            return;                     /* halves are 32-bit writes */
        /* the guest wrote the value big-endian: its first byte is the
         * most significant */
        if (offset == FW_CFG_PORT_DMA_HI) {
            f->dma_hi = __builtin_bswap32(*val);
        } else if (offset == FW_CFG_PORT_DMA_LO) {
            uint64_t desc = (uint64_t)f->dma_hi << 32 |
                            __builtin_bswap32(*val);
            f->dma_hi = 0;              /* the next address starts anew */
            dma_transfer(f, desc);
        }
        return;
    }
    if (offset == FW_CFG_PORT_SEL && is_write && size >= 2) {
        select_key(f, (uint16_t)*val);
        return;
    }
    if (offset == FW_CFG_PORT_DATA && !is_write && size == 1) {
        const fw_item *it = f->sel >= 0 ? &f->item[f->sel] : NULL;
        *val = 0;
        if (it && f->off < it->len) {
            *val = it->data[f->off++];
            f->bytes_read++;
        }
        return;
    }
    /* writes to the data port (deprecated in the spec), other widths: no
     * effect; reads of the selector: 0 */
    if (!is_write)
        *val = 0;
}

int fw_cfg_find_file(const fw_cfg *f, const char *name)
{
    for (unsigned i = 0; i < f->n; i++)
        if (f->item[i].name[0] && !strncmp(f->item[i].name, name,
                                           FW_CFG_NAME_MAX))
            return f->item[i].key;
    return -1;
}

uint64_t fw_cfg_bytes_read(const fw_cfg *f)
{
    return f->bytes_read;
}

uint64_t fw_cfg_dma_transfers(const fw_cfg *f)
{
    return f->dma_transfers;
}

uint64_t fw_cfg_dma_errors(const fw_cfg *f)
{
    return f->dma_errors;
}

int fw_cfg_selected(const fw_cfg *f)
{
    return f->sel >= 0 ? f->item[f->sel].key : -1;
}
