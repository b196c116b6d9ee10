/* SPDX-License-Identifier: MIT */
/*
 * The devices of the platform real firmware expects (--bios), as board
 * descriptors: the CMOS/RTC (0x70), fw_cfg (0x510) with the items SeaBIOS
 * reads (src/fw/paravirt.c: memory layout, CPU count, boot menu, the
 * serial-console switch, the NIC's option ROM as "pciVVVV,DDDD.rom"), a
 * minimal i8042 (0x60/0x64), port 0x92 (A20 and the fast reset), and
 * QEMU's debug console (0x402) when --debugcon asks for it. Each says it
 * is absent without --bios, so multiboot guests see the platform they
 * always had. The host bridge's PAM registers are board.c's, and so is
 * the reset control register (0xCF9).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devices/fwdev.h"
#include "firmware.h"
#include "vmm.h"

/* the ports: lcvmm/platform.h ("firmware platform") */
#define DEBUGCON_ID   0xe9      /* what QEMU's debugcon reads as */

static void guest_reset(void *opaque)
{
    /* a reset ends the VM (kvmtool does the same, and QEMU with
     * -no-reboot) unless --reboot asks for the reboot (main.c) */
    vmm_request_reset(opaque, LCVMM_EXIT_OK, "guest reset the machine");
}

/* ---- CMOS/RTC ---------------------------------------------------------- */

static void cmos_bus(void *opaque, uint64_t off, unsigned size, bool w,
                     uint64_t *val)
{
    uint8_t v = (uint8_t)*val;
    (void)size;
    cmos_access(opaque, (unsigned)off, w, &v);
    if (!w)
        *val = v;
}

static int cmos_init(vmm *vm, vmm_device *dev, char *err, size_t errlen)
{
    if (!vm->fw)
        return VMM_DEVICE_ABSENT;
    dev->state = cmos_create(vm->ram_size, vm->opt.vcpus, NULL);
    if (!dev->state) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

static void cmos_exit(vmm *vm, vmm_device *dev)
{
    (void)vm;
    cmos_destroy(dev->state);
}

const vmm_device_ops vmm_cmos_device = {
    .name = "cmos",
    .ranges = { { false, LCVMM_CMOS_PORT, LCVMM_CMOS_PORTS, cmos_bus } },
    .init = cmos_init,
    .exit = cmos_exit,
    /* battery-backed: a PC's reset reaches neither the clock nor the
     * RAM (the shutdown status byte firmware reads after a reset) */
    .keep_on_reset = true,
};

/* ---- fw_cfg -------------------------------------------------------------- */

typedef struct fw_cfg_dev {
    fw_cfg *f;
    vmm *vm;
    int rom_key;                /* the ROM's item, -1 none */
    /* One access at a time: with -c N, vCPUs may select, read and start
     * transfers at once, and a transfer's copy uses the selection and
     * offset it read first. Its own lock, not dev_lock: a long zero fill
     * must not hold up the I/O thread. */
    pthread_mutex_t lock;
} fw_cfg_dev;

static void fw_cfg_bus(void *opaque, uint64_t off, unsigned size, bool w,
                       uint64_t *val)
{
    fw_cfg_dev *d = opaque;
    uint32_t v = (uint32_t)*val;
    bool rom;

    pthread_mutex_lock(&d->lock);
    fw_cfg_access(d->f, (unsigned)off, size, w, &v);
    /* selected through the selector port or by a DMA transfer */
    rom = w && d->rom_key >= 0 && fw_cfg_selected(d->f) == d->rom_key;
    pthread_mutex_unlock(&d->lock);
    if (rom)
        vmm_fw_phase(d->vm, FW_PHASE_OPTROM);   /* SeaBIOS loads the ROM */
    if (!w)
        *val = v;
}

static int fw_cfg_fill(vmm *vm, fw_cfg_dev *d)
{
    fw_cfg *f = d->f;
    uint16_t cpus = (uint16_t)vm->opt.vcpus, zero = 0,
             sercon = LCVMM_COM1_PORT;
    struct { uint64_t addr, len; uint32_t type; } __attribute__((packed))
        e820 = { 0, vm->ram_size, 1 };
    int rc = 0;

    rc |= fw_cfg_add(f, FW_CFG_NB_CPUS, &cpus, 2);
    rc |= fw_cfg_add(f, FW_CFG_MAX_CPUS, &cpus, 2);
    /* no boot menu: SeaBIOS would wait for a key */
    rc |= fw_cfg_add(f, FW_CFG_BOOT_MENU, &zero, 2);
    rc |= fw_cfg_add_file(f, "etc/e820", &e820, sizeof e820);
    /* the console is COM1: SeaBIOS mirrors the screen (int 10h, what
     * option ROMs print) there */
    rc |= fw_cfg_add_file(f, "etc/sercon-port", &sercon, 2);
    if (vm->fw->rom) {
        nic_pci_id id;
        char name[32];
        nic_pci_identity(vm->opt.nic, &id);
        snprintf(name, sizeof name, "pci%04x,%04x.rom", id.vendor, id.device);
        if (vm->opt.rom_bar) {      /* behind the NIC's ROM BAR instead */
            rc |= vmm_fw_rom_bar_setup(vm);
        } else {
            /* its x86 image alone: SeaBIOS copies a file of genroms
             * whole into the option ROM area, where a chain with an EFI
             * image (efi-*.rom) would not fit; behind the BAR it walks
             * the chain itself */
            rc |= fw_cfg_add_file(f, name, vm->fw->rom + vm->fw->rom_x86_off,
                                  vm->fw->rom_x86_len);
            d->rom_key = fw_cfg_find_file(f, name);
        }
    }
    return rc ? -1 : 0;
}

static int fw_cfg_init(vmm *vm, vmm_device *dev, char *err, size_t errlen)
{
    fw_cfg_dev *d;

    if (!vm->fw)
        return VMM_DEVICE_ABSENT;
    d = calloc(1, sizeof *d);
    if (!d) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    pthread_mutex_init(&d->lock, NULL);
    dev->state = d;
    d->vm = vm;
    d->rom_key = -1;
    /* the DMA interface copies through the VMM's bounds-checked vm_dma,
     * as the NICs do */
    d->f = fw_cfg_create(vm->opt.no_fw_cfg_dma ? NULL : &vm->dma);
    if (!d->f || fw_cfg_fill(vm, d)) {
        snprintf(err, errlen, "cannot build the fw_cfg items");
        return -1;
    }
    vmm_fw_phase_begin(vm);
    return 0;
}

static void fw_cfg_exit(vmm *vm, vmm_device *dev)
{
    fw_cfg_dev *d = dev->state;
    (void)vm;
    if (d) {
        fw_cfg_destroy(d->f);
        pthread_mutex_destroy(&d->lock);
    }
    free(d);
}

static void fw_cfg_stats(vmm_device *dev, vmm_stat_fn put, void *ctx)
{
    fw_cfg_dev *d = dev->state;
    uint64_t bytes, transfers, errors;

    /* the vCPUs count them under the device's lock (--stats-interval
     * reads them while the guest runs) */
    pthread_mutex_lock(&d->lock);
    bytes = fw_cfg_bytes_read(d->f);
    transfers = fw_cfg_dma_transfers(d->f);
    errors = fw_cfg_dma_errors(d->f);
    pthread_mutex_unlock(&d->lock);
    put(ctx, "firmware", "fw_cfg_bytes", bytes);
    put(ctx, "firmware", "fw_cfg_dma_transfers", transfers);
    put(ctx, "firmware", "fw_cfg_dma_errors", errors);
    put(ctx, "firmware", "kvm_iret_fixups", dev->vm->stats.quirk_irets);
    put(ctx, "firmware", "pam_remaps", dev->vm->fw->pam_changes);
    put(ctx, "firmware", "rom_bar_maps", dev->vm->fw->rom_bar_maps);
    put(ctx, "firmware", "late_ticks", dev->vm->stats.quirk_late_ticks);
    put(ctx, "firmware", "tick_bp_exits", dev->vm->stats.quirk_bp_exits);
    put(ctx, "firmware", "pit_ticks_discarded", dev->vm->stats.ticks_discarded);
    vmm_fw_phase_stats(dev->vm, put, ctx);
}

const vmm_device_ops vmm_fw_cfg_device = {
    .name = "fw_cfg",
    .ranges = { { false, LCVMM_FW_CFG_PORT, LCVMM_FW_CFG_PORTS, fw_cfg_bus } },
    .init = fw_cfg_init,
    .exit = fw_cfg_exit,
    .stats = fw_cfg_stats,
};

/* ---- i8042 and port 0x92 ------------------------------------------------- */

typedef struct kbd_state {
    i8042 *k;
    uint8_t port92;
} kbd_state;

static void kbd_port(kbd_state *s, unsigned port, bool w, uint64_t *val)
{
    uint8_t v = (uint8_t)*val;
    i8042_access(s->k, port, w, &v);
    if (!w)
        *val = v;
}

static void kbd_data_bus(void *opaque, uint64_t off, unsigned size, bool w,
                         uint64_t *val)
{
    (void)off; (void)size;
    kbd_port(opaque, 0, w, val);
}

static void kbd_status_bus(void *opaque, uint64_t off, unsigned size, bool w,
                           uint64_t *val)
{
    (void)off; (void)size;
    kbd_port(opaque, 4, w, val);
}

/* Port 0x92, "system control port A": bit 1 A20 (always enabled here,
 * stored for read-back), bit 0 a fast reset on a 0-to-1 write. */
static void port92_bus(void *opaque, uint64_t off, unsigned size, bool w,
                       uint64_t *val)
{
    vmm_device *dev = opaque;
    kbd_state *s = dev->state;
    (void)off; (void)size;
    if (!w) {
        *val = s->port92;
        return;
    }
    if ((*val & 1) && !(s->port92 & 1))
        guest_reset(dev->vm);
    s->port92 = (uint8_t)(*val & 0x02);
}

static int kbd_init(vmm *vm, vmm_device *dev, char *err, size_t errlen)
{
    kbd_state *s;

    if (!vm->fw)
        return VMM_DEVICE_ABSENT;
    s = calloc(1, sizeof *s);
    if (!s || !(s->k = i8042_create(guest_reset, vm))) {
        free(s);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    s->port92 = 0x02;
    dev->state = s;
    /* port 0x92 needs the vmm for its reset: its own registration */
    if (bus_register(&vm->pio, LCVMM_SYSCTL_PORT, 1, port92_bus, dev, "port92")) {
        snprintf(err, errlen, "cannot register port 0x92");
        return -1;
    }
    return 0;
}

static void kbd_exit(vmm *vm, vmm_device *dev)
{
    kbd_state *s = dev->state;
    (void)vm;
    if (s)
        i8042_destroy(s->k);
    free(s);
}

const vmm_device_ops vmm_i8042_device = {
    .name = "i8042",
    .ranges = { { false, LCVMM_KBD_DATA_PORT, 1, kbd_data_bus },
                { false, LCVMM_KBD_CMD_PORT, 1, kbd_status_bus } },
    .init = kbd_init,
    .exit = kbd_exit,
};

/* ---- the debug console (QEMU's isa-debugcon at 0x402) -------------------- */

typedef struct debugcon {
    FILE *f;
    bool own;
} debugcon;

static void debugcon_bus(void *opaque, uint64_t off, unsigned size, bool w,
                         uint64_t *val)
{
    debugcon *d = opaque;
    (void)off; (void)size;
    if (!w) {
        *val = DEBUGCON_ID;     /* SeaBIOS enables its output on this */
        return;
    }
    fputc((int)(*val & 0xff), d->f);
}

static int debugcon_init(vmm *vm, vmm_device *dev, char *err, size_t errlen)
{
    debugcon *d;

    if (!vm->fw || !vm->opt.debugcon)
        return VMM_DEVICE_ABSENT;
    d = calloc(1, sizeof *d);
    if (!d) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    dev->state = d;
    if (!strcmp(vm->opt.debugcon, "-")) {
        d->f = stderr;
    } else if (!(d->f = fopen(vm->opt.debugcon, "w"))) {
        snprintf(err, errlen, "--debugcon %s: cannot open it",
                 vm->opt.debugcon);
        return -1;
    } else {
        d->own = true;
    }
    return 0;
}

static void debugcon_exit(vmm *vm, vmm_device *dev)
{
    debugcon *d = dev->state;
    (void)vm;
    if (d && d->own)
        fclose(d->f);
    free(d);
}

const vmm_device_ops vmm_debugcon_device = {
    .name = "debugcon",
    .ranges = { { false, LCVMM_DEBUGCON_PORT, 1, debugcon_bus } },
    .init = debugcon_init,
    .exit = debugcon_exit,
    .keep_on_reset = true,      /* a host file: one log across reboots */
};

/* ---- the host bridge's PAM registers (board.c adds the bridge) ---------- */

/* A configuration write to the i440FX's device-specific registers: the
 * PAM bytes it covers go to the memory map. */
void vmm_fw_host_cfg_write(void *opaque, unsigned reg, uint32_t val)
{
    for (unsigned b = 0; b < 4; b++)
        vmm_fw_pam_write(opaque, reg + b, (uint8_t)(val >> (b * 8)));
}
