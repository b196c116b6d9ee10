/* examples/guests/lib/pci.c: PCI configuration mechanism #1.
 *
 * CONFIG_ADDRESS (0xCF8): bit 31 enable, bits 23:16 bus, 15:11 device,
 * 10:8 function, 7:2 dword register. CONFIG_DATA (0xCFC-0xCFF) then
 * reads or writes that dword; byte and word accesses use the lane at
 * 0xCFC + (offset & 3). */
#include "guest.h"

static uint32_t cfg_addr(uint8_t bus, uint8_t dev, uint8_t fn, uint8_t off)
{
    return 0x80000000u | (uint32_t)bus << 16 | (uint32_t)(dev & 31) << 11 |
           (uint32_t)(fn & 7) << 8 | (off & 0xfc);
}

uint32_t pci_read32(uint8_t bus, uint8_t dev, uint8_t fn, uint8_t off)
{
    outl(LCVMM_PCI_CONFIG_ADDR, cfg_addr(bus, dev, fn, off));
    return inl(LCVMM_PCI_CONFIG_DATA);
}

uint16_t pci_read16(uint8_t bus, uint8_t dev, uint8_t fn, uint8_t off)
{
    outl(LCVMM_PCI_CONFIG_ADDR, cfg_addr(bus, dev, fn, off));
    return inw((uint16_t)(LCVMM_PCI_CONFIG_DATA + (off & 2)));
}

uint8_t pci_read8(uint8_t bus, uint8_t dev, uint8_t fn, uint8_t off)
{
    outl(LCVMM_PCI_CONFIG_ADDR, cfg_addr(bus, dev, fn, off));
    return inb((uint16_t)(LCVMM_PCI_CONFIG_DATA + (off & 3)));
}

void pci_write32(uint8_t bus, uint8_t dev, uint8_t fn, uint8_t off, uint32_t v)
{
    outl(LCVMM_PCI_CONFIG_ADDR, cfg_addr(bus, dev, fn, off));
    outl(LCVMM_PCI_CONFIG_DATA, v);
}

void pci_write16(uint8_t bus, uint8_t dev, uint8_t fn, uint8_t off, uint16_t v)
{
    outl(LCVMM_PCI_CONFIG_ADDR, cfg_addr(bus, dev, fn, off));
    outw((uint16_t)(LCVMM_PCI_CONFIG_DATA + (off & 2)), v);
}

bool pci_find(uint16_t vendor, uint16_t device, struct pci_dev *out)
{
    for (uint8_t dev = 0; dev < 32; dev++) {
        for (uint8_t fn = 0; fn < 8; fn++) {
            uint32_t id = pci_read32(0, dev, fn, PCI_VENDOR);
            if ((id & 0xffff) == 0xffff || (id & 0xffff) == 0) {
                if (fn == 0)
                    break;          /* no device here at all */
                continue;
            }
            if ((id & 0xffff) == vendor && (id >> 16) == device) {
                out->bus = 0;
                out->dev = dev;
                out->fn = fn;
                out->vendor = vendor;
                out->device = device;
                out->irq_line = pci_read8(0, dev, fn, PCI_INTERRUPT_LINE);
                return true;
            }
            /* Header type bit 7: multi-function device. */
            if (fn == 0 && !(pci_read8(0, dev, 0, PCI_HEADER_TYPE) & 0x80))
                break;
        }
    }
    return false;
}

uint64_t pci_bar(const struct pci_dev *d, int n, bool *is_io)
{
    uint8_t off = (uint8_t)(PCI_BAR0 + 4 * n);
    uint32_t lo = pci_read32(d->bus, d->dev, d->fn, off);
    if (lo & 1) {                     /* I/O space BAR: bits 31:2 */
        *is_io = true;
        return lo & ~3u;
    }
    *is_io = false;
    uint64_t base = lo & ~0xfu;       /* memory BAR: bits 31:4 */
    if (((lo >> 1) & 3) == 2 && n < 5) /* type 10b: 64-bit BAR */
        base |= (uint64_t)pci_read32(d->bus, d->dev, d->fn, (uint8_t)(off + 4)) << 32;
    return base;
}

bool pci_find_mmio(uint16_t vendor, uint16_t device, const char *name,
                   struct pci_dev *out, uintptr_t *base)
{
    bool is_io;

    if (!pci_find(vendor, device, out)) {
        printf("error: no %s (%04x:%04x) on PCI bus 0\n", name, vendor,
               device);
        return false;
    }
    uint64_t bar = pci_bar(out, 0, &is_io);
    if (is_io || bar == 0 || bar >= 0x100000000ull) {
        printf("error: %s BAR0 0x%llx is not a memory BAR below 4 GiB\n",
               name, (unsigned long long)bar);
        return false;
    }
    *base = (uintptr_t)bar;
    return true;
}

void pci_enable(const struct pci_dev *d, uint16_t bits)
{
    uint16_t cmd = pci_read16(d->bus, d->dev, d->fn, PCI_COMMAND);
    pci_write16(d->bus, d->dev, d->fn, PCI_COMMAND, (uint16_t)(cmd | bits));
}
