/* SPDX-License-Identifier: MIT */
/*
 * QEMU's firmware configuration interface (fw_cfg), the traditional
 * port interface of QEMU's docs/specs/fw_cfg.rst on x86: a 16-bit write
 * to the selector port (0x510) chooses an item and rewinds it; each byte
 * read from the data port (0x511) returns the next byte of the item, 0
 * past its end or for an item that does not exist. The ID item says
 * "traditional interface only" (no DMA), so there is no guest-physical
 * address for a guest to aim anywhere. Items are the VMM's: fixed
 * numbers (signature, ID, CPU counts, boot menu) and named files listed
 * in the file directory (0x19: a big-endian count, then 64-byte entries
 * of big-endian size, select, reserved, name).
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
};

static void be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24); p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);  p[3] = (uint8_t)v;
}

fw_cfg *fw_cfg_create(void)
{
    static const char sig[4] = { 'Q', 'E', 'M', 'U' };
    const uint8_t id[4] = { 1, 0, 0, 0 };   /* bit 0: traditional only */
    fw_cfg *f = calloc(1, sizeof *f);

    if (!f)
        return NULL;
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
    be32(buf, files);
    for (unsigned i = 0, j = 0; i < f->n; i++) {
        uint8_t *e;
        if (!f->item[i].name[0])
            continue;
        e = buf + 4 + (size_t)j++ * 64;
        be32(e, f->item[i].len);
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

void fw_cfg_access(fw_cfg *f, unsigned offset, unsigned size, bool is_write,
                   uint32_t *val)
{
    if (offset == FW_CFG_PORT_SEL && is_write && size >= 2) {
        fw_item *it = find(f, (uint16_t)*val);
        f->sel = it ? (int)(it - f->item) : -1;
        f->off = 0;
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
