/* SPDX-License-Identifier: MIT */
/*
 * PCI configuration mechanism #1 (PCI Local Bus Specification 3.0,
 * section 3.2.2.3.2): the guest writes an address to CONFIG_ADDRESS
 * (0xCF8: enable bit 31, bus 23:16, device 15:11, function 10:8,
 * register 7:2) and then reads or writes CONFIG_DATA (0xCFC..0xCFF, the
 * byte offset selects the bytes within the register). Bus 0 only,
 * function 0 only; everything else reads as all ones (no device).
 *
 * Each function has a 256-byte header: the identity given at creation is
 * read-only; the command register (bits 0-2, 6, 8, 10), BAR0 and the
 * interrupt line are writable with the chip's masks. BAR sizing works as
 * firmware expects: write all ones, read back the size mask.
 */
#include <stdlib.h>
#include <string.h>

#include "platform.h"

#define CMD_MASK 0x0547u

typedef struct pci_fn {
    bool present;
    uint8_t cfg[256];
    pci_bar_info bar;
    uint32_t bar_base;
    pci_function_ops ops;
    pci_cfg_write_fn cfg_write;
    void *cfg_opaque;
    uint32_t rom_size;              /* expansion ROM BAR size; 0: none */
    pci_rom_fn rom_changed;
    void *rom_opaque;
    pci_status_fn status;           /* RW1C status bits, or NULL */
    void *status_opaque;
} pci_fn;

struct pci_bus {
    uint32_t addr;                  /* CONFIG_ADDRESS latch */
    pci_fn fn[PCI_MAX_DEVFN];
};

pci_bus *pci_create(void)
{
    return calloc(1, sizeof(pci_bus));
}

void pci_destroy(pci_bus *p)
{
    free(p);
}

static void put32(uint8_t *b, uint32_t v)
{
    memcpy(b, &v, 4);
}

static uint32_t bar_value(const pci_fn *f)
{
    return f->bar_base | (f->bar.is_io ? 1u : 0u);
}

int pci_add_function(pci_bus *p, unsigned dev, const uint8_t id[64],
                     pci_bar_info bar0, uint32_t bar0_base, uint8_t irq_line,
                     const pci_function_ops *ops)
{
    pci_fn *f;

    if (dev >= PCI_MAX_DEVFN || p->fn[dev].present ||
        (bar0.size & (bar0.size - 1)) || (bar0.size && bar0_base % bar0.size))
        return -1;
    f = &p->fn[dev];
    memset(f, 0, sizeof *f);
    f->present = true;
    memcpy(f->cfg, id, 64);
    f->bar = bar0;
    f->bar_base = bar0_base;
    f->cfg[0x3c] = irq_line;
    put32(&f->cfg[0x10], bar_value(f));
    if (ops)
        f->ops = *ops;
    if (f->ops.bar_moved && bar0.size)
        f->ops.bar_moved(f->ops.opaque, bar0_base);
    return 0;
}

int pci_set_cfg_hook(pci_bus *p, unsigned dev, pci_cfg_write_fn fn,
                     void *opaque)
{
    if (dev >= PCI_MAX_DEVFN || !p->fn[dev].present)
        return -1;
    p->fn[dev].cfg_write = fn;
    p->fn[dev].cfg_opaque = opaque;
    return 0;
}

int pci_set_status_hook(pci_bus *p, unsigned dev, pci_status_fn fn,
                        void *opaque)
{
    if (dev >= PCI_MAX_DEVFN || !p->fn[dev].present)
        return -1;
    p->fn[dev].status = fn;
    p->fn[dev].status_opaque = opaque;
    return 0;
}

int pci_set_rom(pci_bus *p, unsigned dev, uint32_t size, pci_rom_fn fn,
                void *opaque)
{
    if (dev >= PCI_MAX_DEVFN || !p->fn[dev].present || size < 2048 ||
        (size & (size - 1)))
        return -1;
    p->fn[dev].rom_size = size;
    p->fn[dev].rom_changed = fn;
    p->fn[dev].rom_opaque = opaque;
    return 0;
}

bool pci_decodes(const pci_bus *p, unsigned dev)
{
    const pci_fn *f = &p->fn[dev % PCI_MAX_DEVFN];
    uint16_t cmd = (uint16_t)(f->cfg[4] | f->cfg[5] << 8);
    return f->present && (cmd & (f->bar.is_io ? 1u : 2u));
}

static pci_fn *selected(pci_bus *p, unsigned *reg)
{
    uint32_t a = p->addr;
    unsigned bus = (a >> 16) & 0xff, dev = (a >> 11) & 0x1f,
             fn = (a >> 8) & 7;

    *reg = a & 0xfc;
    if (!(a & 0x80000000u) || bus || fn || !p->fn[dev].present)
        return NULL;
    return &p->fn[dev];
}

/* A 32-bit register write with the byte enables of the access. */
static void cfg_write(pci_fn *f, unsigned reg, uint32_t val, uint32_t mask)
{
    uint32_t old, v;

    memcpy(&old, &f->cfg[reg], 4);
    v = (old & ~mask) | (val & mask);
    switch (reg) {
    case 0x04: {                    /* command; status bits are RW1C */
        uint16_t cmd = (uint16_t)(v & CMD_MASK);
        if (f->status && (val & mask) >> 16)
            f->status(f->status_opaque, (uint16_t)((val & mask) >> 16));
        f->cfg[4] = (uint8_t)cmd;
        f->cfg[5] = (uint8_t)(cmd >> 8);
        if (f->ops.command)
            f->ops.command(f->ops.opaque, cmd);
        break;
    }
    case 0x10: {                    /* BAR0 */
        uint32_t base;
        if (!f->bar.size)
            break;
        /* all 32 bits of an I/O BAR are writable (the function decodes
         * the low 16): sizing must read back 0xFFFFFFE1 for 32 ports, or
         * firmware (SeaBIOS pciinit.c) computes a 4 GiB-sized I/O BAR */
        base = v & ~(f->bar.size - 1) & (f->bar.is_io ? ~3u : ~0xfu);
        if (base != f->bar_base) {
            f->bar_base = base;
            if (f->ops.bar_moved)
                f->ops.bar_moved(f->ops.opaque, base);
        }
        put32(&f->cfg[0x10], bar_value(f));
        break;
    }
    case 0x30:                      /* expansion ROM BAR (PCI 3.0 6.2.5.2) */
        if (!f->rom_size)
            break;
        v &= ~(f->rom_size - 1) | 1u;   /* address bits above the size,
                                         * bit 0 decode enable */
        memcpy(&f->cfg[0x30], &v, 4);
        if (f->rom_changed)
            f->rom_changed(f->rom_opaque, v & ~1u, v & 1);
        break;
    case 0x3c:                      /* interrupt line; pin is read-only */
        f->cfg[0x3c] = (uint8_t)v;
        break;
    default:
        /* device-specific registers (0x40 and up) of a function that
         * wants them (the host bridge's PAM registers); else read-only */
        if (reg >= 0x40 && f->cfg_write) {
            memcpy(&f->cfg[reg], &v, 4);
            f->cfg_write(f->cfg_opaque, reg, v);
        }
        break;
    }
}

void pci_access(pci_bus *p, unsigned off, unsigned size, bool w,
                uint32_t *val)
{
    unsigned reg, shift;
    uint32_t mask;
    pci_fn *f;

    if (off < 4) {
        /* CONFIG_ADDRESS: only 32-bit accesses reach it (byte accesses
         * to 0xCF8..0xCFB are other chipset registers on a PIIX; here
         * they read as all ones). */
        if (off == 0 && size == 4) {
            if (w)
                p->addr = *val & 0x80fffffcu;
            else
                *val = p->addr;
        } else if (!w) {
            *val = 0xffffffffu;
        }
        return;
    }
    shift = (off & 3) * 8;
    mask = size == 4 ? 0xffffffffu : ((1u << (size * 8)) - 1);
    if (shift + size * 8 > 32) {    /* crosses CONFIG_DATA's end */
        if (!w)
            *val = mask;
        return;
    }
    f = selected(p, &reg);
    if (!w) {
        uint32_t v = 0xffffffffu;
        if (f) {
            memcpy(&v, &f->cfg[reg], 4);
            if (reg == 0x04 && f->status)
                v |= (uint32_t)f->status(f->status_opaque, 0) << 16;
        }
        *val = (v >> shift) & mask;
        return;
    }
    if (f)
        cfg_write(f, reg, *val << shift, mask << shift);
}
