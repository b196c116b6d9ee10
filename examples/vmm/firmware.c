/* SPDX-License-Identifier: MIT */
/*
 * Real firmware: loading and checking --bios and --rom, and the
 * guest-physical map of a PC with an i440FX (firmware.h). The images are
 * a user's files: size, signature and structure are checked before
 * anything is mapped; the PAM registers are the guest's: every value maps
 * one of three things, none of them outside the VMM's own buffers.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "vmm.h"

#define IPXE_ROM_DIR "/usr/lib/ipxe/qemu"

enum { SEG_PCI = 0, SEG_RAM_RO = 1, SEG_RAM_RW = 2 };

/* A PC firmware image: a whole number of 4 KiB pages (KVM maps it), at
 * least the 128 KiB that also appear at 0xE0000, and a jump at the reset
 * vector (4 GiB - 16: a far JMP, as SeaBIOS and coreboot have, or a near
 * one). */
const char *vmm_fw_check_bios(const uint8_t *img, size_t size)
{
    uint8_t op;

    if (size < FW_BIOS_MIN || size > FW_BIOS_MAX)
        return "size outside 128 KiB..16 MiB";
    if (size % 4096)
        return "size is not a multiple of 4 KiB";
    op = img[size - 16];
    if (op != 0xea && op != 0xe9 && op != 0xeb)
        return "no jump instruction at the reset vector (not a PC firmware "
               "image)";
    return NULL;
}

/* One image of a PCI option ROM (PCI Firmware Specification 3.0, section
 * 5.1): 55 AA, the length in 512-byte units at 2, the PCI data structure
 * ("PCIR") at the offset at 0x18 with the vendor and device it drives, the
 * image's length (0x10, 512-byte units), its code type (0x14: 0 for an
 * x86 BIOS image, 3 for EFI) and the last-image indicator (0x15, bit 7).
 * NULL, or why the image at `off` is not one. */
typedef struct rom_image {
    size_t len;                 /* the whole image, the chain's step */
    size_t hdr_len;             /* the header's length: what firmware runs */
    uint16_t vendor, device;
    uint8_t code_type;
    bool last;
} rom_image;

static const char *rom_image_at(const uint8_t *img, size_t size, size_t off,
                                rom_image *ri)
{
    const uint8_t *p = img + off;
    size_t room = size - off;
    uint16_t pcir, ilen;

    if (room < 0x1a || p[0] != 0x55 || p[1] != 0xaa)
        return "no 55 AA signature (not an option ROM)";
    ri->hdr_len = (size_t)p[2] * 512;
    if (ri->hdr_len > room)
        return "truncated (shorter than its header's length)";
    if (p[2] == 0)
        return "its header gives length 0";
    memcpy(&pcir, &p[0x18], 2);
    if ((size_t)pcir + 24 > room || memcmp(&p[pcir], "PCIR", 4))
        return "no PCI data structure";
    memcpy(&ri->vendor, &p[pcir + 4], 2);
    memcpy(&ri->device, &p[pcir + 6], 2);
    memcpy(&ilen, &p[pcir + 0x10], 2);
    ri->code_type = p[pcir + 0x14];
    ri->last = (p[pcir + 0x15] & 0x80) != 0;
    /* an image length of 0 (older ROMs leave it so): the header's, and no
     * image after it */
    ri->len = ilen ? (size_t)ilen * 512 : ri->hdr_len;
    if (!ilen)
        ri->last = true;
    if (ri->len > room)
        return "truncated (an image runs past the end of the file)";
    if (ri->len < ri->hdr_len)
        return "an image is shorter than its header's length";
    return NULL;
}

/* A PCI option ROM: a chain of images (an x86 BIOS image and an EFI one in
 * ipxe-qemu's efi-*.rom, QEMU's default ROMs), walked from the start to the
 * image marked last or the end of the file. The x86 image for the device
 * (`vendor`/`device`, 0: any) is the one firmware runs: its header's bytes
 * must sum to 0 mod 256 (SeaBIOS skips a ROM whose do not: its
 * etc/optionroms-checksum, which lcvmm leaves at 1) and it must fit the
 * option ROM area. Its offset and length in *off and *len. */
const char *vmm_fw_check_rom(const uint8_t *img, size_t size,
                             uint16_t vendor, uint16_t device,
                             size_t *off, size_t *len)
{
    const char *why, *missing = "no x86 BIOS image (code type 0) in its "
                                "image chain";
    size_t at = 0;
    rom_image ri;

    if (size < 512 || size > FW_ROM_FILE_MAX)
        return "size outside 512 bytes..16 MiB";
    for (;;) {
        if ((why = rom_image_at(img, size, at, &ri)))
            return why;
        if (ri.code_type == 0) {
            if ((!vendor || ri.vendor == vendor) &&
                (!device || ri.device == device))
                break;
            missing = "it is for another PCI device";
        }
        at += ri.len;
        if (ri.last || at >= size)
            return missing;
    }
    if (ri.len > FW_ROM_MAX)
        return "its x86 image is larger than the 128 KiB option ROM area";
    {
        uint8_t sum = 0;

        for (size_t i = 0; i < ri.hdr_len; i++)
            sum = (uint8_t)(sum + img[at + i]);
        if (sum)
            return "bad checksum (its bytes do not sum to 0; firmware would "
                   "skip it)";
    }
    *off = at;
    *len = ri.len;
    return NULL;
}

int vmm_fw_load(vmm *vm, char *err, size_t errlen)
{
    vmm_fw *fw;
    const char *why;
    nic_pci_id id = { 0 };

    if (!vm->opt.bios) {
        if (vm->opt.rom) {
            snprintf(err, errlen, "--rom needs --bios (firmware runs option "
                     "ROMs)");
            return -1;
        }
        return 0;
    }
    fw = calloc(1, sizeof *fw);
    if (!fw) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    vm->fw = fw;
    fw->bios = vmm_read_file(vm->opt.bios, FW_BIOS_MIN, FW_BIOS_MAX,
                             "a firmware image", true, &fw->bios_size, err,
                             errlen);
    if (!fw->bios)
        return -1;
    if ((why = vmm_fw_check_bios(fw->bios, fw->bios_size))) {
        snprintf(err, errlen, "%s: %s", vm->opt.bios, why);
        return -1;
    }
    if (vm->opt.nic == NIC_NONE) {
        if (vm->opt.rom || vm->opt.rom_bar) {
            snprintf(err, errlen, "%s needs a NIC",
                     vm->opt.rom ? "--rom" : "--rom-bar");
            return -1;
        }
        return 0;
    }
    nic_pci_identity(vm->opt.nic, &id);
    if (vm->opt.rom && !strcmp(vm->opt.rom, "none")) {
        if (vm->opt.rom_bar) {
            snprintf(err, errlen, "--rom-bar needs an option ROM, not "
                     "--rom none");
            return -1;
        }
        return 0;
    }
    if (vm->opt.rom) {
        fw->rom_path = vm->opt.rom;
    } else {
        snprintf(fw->rom_default, sizeof fw->rom_default,
                 IPXE_ROM_DIR "/pxe-%s.rom", nic_model_name(vm->opt.nic));
        fw->rom_path = fw->rom_default;
    }
    fw->rom = vmm_read_file(fw->rom_path, 512, FW_ROM_FILE_MAX, "an option ROM",
                            true, &fw->rom_size, err, errlen);
    if (!fw->rom) {
        if (!vm->opt.rom && errno == ENOENT) {
            size_t n = strlen(err);
            snprintf(err + n, errlen - n, " (the default option ROM: install "
                     "ipxe-qemu, give --rom FILE, or --rom none)");
        }
        return -1;
    }
    if ((why = vmm_fw_check_rom(fw->rom, fw->rom_size, id.vendor,
                                id.device, &fw->rom_x86_off,
                                &fw->rom_x86_len))) {
        snprintf(err, errlen, "%s: %s (the %s is %04x:%04x)", fw->rom_path,
                 why, nic_model_name(vm->opt.nic), id.vendor, id.device);
        return -1;
    }
    return 0;
}

void vmm_fw_free(vmm *vm)
{
    vmm_fw *fw = vm->fw;
    if (!fw)
        return;
    vmm_free_file(fw->bios, fw->bios_size, true);
    vmm_free_file(fw->rom, fw->rom_size, true);
    if (fw->rom_bar)
        munmap(fw->rom_bar, fw->rom_bar_size);
    free(fw);
    vm->fw = NULL;
}

/* ---- the PAM segments (Intel 440FX PMC datasheet, section 3.2.18) ---- */

static uint64_t seg_base(unsigned i)
{
    return i < 12 ? FW_SHADOW_BASE + i * 0x4000u : 0xF0000u;
}

static uint64_t seg_size(unsigned i)
{
    return i < 12 ? 0x4000u : 0x10000u;
}

/* The nibble of PAM1..PAM6 (or PAM0's high one) controlling segment i:
 * bit 0 read enable (reads from shadow RAM), bit 1 write enable. */
static unsigned seg_nibble(const vmm_fw *fw, unsigned i)
{
    if (i == 12)
        return (fw->pam[0] >> 4) & 3;
    return (fw->pam[1 + i / 2] >> ((i & 1) * 4)) & 3;
}

/* Writes enabled: shadow RAM read-write (a write-only segment, read from
 * ROM and written to RAM, is approximated as read-write: a KVM memory
 * slot cannot split reads and writes; SeaBIOS never uses that mode).
 * Reads only: shadow RAM read-only. Neither: the PCI side. */
static uint8_t seg_mode_of(unsigned nibble)
{
    return nibble & 2 ? SEG_RAM_RW : nibble & 1 ? SEG_RAM_RO : SEG_PCI;
}

/* What segment i maps in `mode`: host memory (NULL: nothing) and
 * whether it is read-only. */
static uint8_t *seg_hva(vmm *vm, unsigned i, uint8_t mode, bool *ro)
{
    vmm_fw *fw = vm->fw;
    uint64_t gpa = seg_base(i);

    *ro = mode != SEG_RAM_RW;
    if (mode != SEG_PCI)
        return vm->ram + gpa;
    if (gpa >= FW_ISA_BIOS)
        return fw->bios + fw->bios_size - (0x100000u - gpa);
    return NULL;
}

static int seg_apply(vmm *vm, unsigned i, uint8_t mode)
{
    vmm_fw *fw = vm->fw;
    bool ro;
    uint8_t *hva = seg_hva(vm, i, mode, &ro);
    unsigned slot = FW_SLOT_PAM0 + i;

    /* KVM cannot change a slot's flags in place: remove, then add (a
     * segment showing nothing has no slot to remove) */
    if (seg_hva(vm, i, fw->seg_mode[i], &(bool){ false }) &&
        fw->set_slot(fw->slot_opaque, slot, seg_base(i), 0, NULL, false))
        return -1;
    fw->seg_mode[i] = mode;
    if (!hva)
        return 0;
    return fw->set_slot(fw->slot_opaque, slot, seg_base(i), seg_size(i), hva,
                        ro);
}

void vmm_fw_reset(vmm *vm)
{
    vmm_fw *fw = vm->fw;

    fw->set_slot = NULL;        /* its opaque was the VM that is gone */
    fw->slot_opaque = NULL;
    if (fw->rom_bar)
        munmap(fw->rom_bar, fw->rom_bar_size);
    fw->rom_bar = NULL;
    fw->rom_bar_size = 0;
    fw->rom_bar_addr = 0;
    fw->rom_bar_mapped = false;
}

int vmm_fw_map_install(vmm *vm, fw_slot_fn fn, void *opaque)
{
    vmm_fw *fw = vm->fw;

    fw->set_slot = fn;
    fw->slot_opaque = opaque;
    /* the reset state: PAM registers 0, so 0xE0000-0xFFFFF shows the BIOS;
     * the BIOS copies itself into shadow RAM after enabling it */
    memset(fw->pam, 0, sizeof fw->pam);
    if (fn(opaque, FW_SLOT_LOW, 0, FW_SHADOW_BASE, vm->ram, false) ||
        fn(opaque, FW_SLOT_HIGH, 0x100000u, vm->ram_size - 0x100000u,
           vm->ram + 0x100000u, false) ||
        fn(opaque, FW_SLOT_BIOS, (1ull << 32) - fw->bios_size, fw->bios_size,
           fw->bios, true))
        return -1;
    for (unsigned i = 0; i < FW_PAM_SEGS; i++) {
        bool ro;
        uint8_t *hva = seg_hva(vm, i, SEG_PCI, &ro);
        fw->seg_mode[i] = SEG_PCI;
        if (hva && fn(opaque, FW_SLOT_PAM0 + i, seg_base(i), seg_size(i), hva,
                      ro))
            return -1;
    }
    return 0;
}

uint8_t vmm_fw_pam_read(vmm *vm, unsigned reg)
{
    if (!vm->fw || reg < FW_PAM_FIRST_REG ||
        reg >= FW_PAM_FIRST_REG + FW_PAM_REGS)
        return 0;
    return vm->fw->pam[reg - FW_PAM_FIRST_REG];
}

void vmm_fw_pam_write(vmm *vm, unsigned reg, uint8_t val)
{
    vmm_fw *fw = vm->fw;
    bool changed = false;

    if (!fw || reg < FW_PAM_FIRST_REG || reg >= FW_PAM_FIRST_REG + FW_PAM_REGS)
        return;
    /* PAM0's low nibble is reserved; bits 2 and 3 of each nibble too */
    fw->pam[reg - FW_PAM_FIRST_REG] = reg == FW_PAM_FIRST_REG ?
                                      (uint8_t)(val & 0x30) :
                                      (uint8_t)(val & 0x33);
    if (!fw->set_slot)
        return;
    for (unsigned i = 0; i < FW_PAM_SEGS; i++) {
        uint8_t mode = seg_mode_of(seg_nibble(fw, i));
        if (mode == fw->seg_mode[i])
            continue;
        if (seg_apply(vm, i, mode)) {
            vmm_request_stop(vm, LCVMM_EXIT_ERROR, "cannot remap %#llx for "
                             "PAM", (unsigned long long)seg_base(i));
            return;
        }
        fw->pam_changes++;
        changed = true;
    }
    if (changed)    /* the engine remembers what frames were (gpa_map) */
        vmm_map_changed(vm);
}

/* ---- the expansion ROM BAR (--rom-bar) ---------------------------------- */

/* The guest wrote the NIC's ROM BAR: map the ROM read-only there while
 * decoding is enabled (a KVM slot: firmware's copy of it costs no exits).
 * An address where the slot cannot go (over RAM, the BIOS, another slot)
 * decodes nothing, as a BAR programmed onto other memory would. */
static void rom_bar_changed(void *opaque, uint32_t addr, bool on)
{
    vmm *vm = opaque;
    vmm_fw *fw = vm->fw;

    if (fw->rom_bar_mapped && fw->set_slot)
        fw->set_slot(fw->slot_opaque, FW_SLOT_ROM_BAR, fw->rom_bar_addr, 0,
                     NULL, false);
    fw->rom_bar_mapped = false;
    fw->rom_bar_addr = addr;
    if (on && addr && fw->set_slot &&
        (uint64_t)addr + fw->rom_bar_size <= (1ull << 32) &&
        fw->set_slot(fw->slot_opaque, FW_SLOT_ROM_BAR, addr,
                     fw->rom_bar_size, fw->rom_bar, true) == 0) {
        fw->rom_bar_mapped = true;
        fw->rom_bar_maps++;
        vmm_fw_phase(vm, FW_PHASE_OPTROM);      /* SeaBIOS looks at it */
    }
    vmm_map_changed(vm);
}

int vmm_fw_rom_bar_setup(vmm *vm)
{
    vmm_fw *fw = vm->fw;
    /* PCI allows 2 KiB, but KVM maps whole pages: a smaller BAR's slot
     * would be refused and the ROM silently decode nothing */
    uint32_t size = 4096;

    while (size < fw->rom_size)
        size <<= 1;
    fw->rom_bar = mmap(NULL, size, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (fw->rom_bar == MAP_FAILED) {
        fw->rom_bar = NULL;
        return -1;
    }
    memcpy(fw->rom_bar, fw->rom, fw->rom_size);
    fw->rom_bar_size = size;
    return pci_set_rom(vm->pci, LCVMM_NIC_PCI_DEV, size, rom_bar_changed, vm);
}

bool vmm_fw_gpa_map(vmm *vm, uint64_t gpa, lc_gpa_map *m)
{
    vmm_fw *fw = vm->fw;
    uint64_t top = 1ull << 32;

    if (!fw)
        return false;
    if (fw->rom_bar_mapped && gpa >= fw->rom_bar_addr &&
        gpa < (uint64_t)fw->rom_bar_addr + fw->rom_bar_size) {
        m->kind = LC_GPA_RAM;
        m->readonly = 1;
        m->hva = fw->rom_bar + (gpa - fw->rom_bar_addr);
        m->span = fw->rom_bar_addr + fw->rom_bar_size - gpa;
        return true;
    }
    if (gpa >= top - fw->bios_size && gpa < top) {
        m->kind = LC_GPA_RAM;
        m->readonly = 1;
        m->hva = fw->bios + (gpa - (top - fw->bios_size));
        m->span = top - gpa;
        return true;
    }
    if (gpa < FW_SHADOW_BASE || gpa >= 0x100000u)
        return false;
    for (unsigned i = 0; i < FW_PAM_SEGS; i++) {
        uint64_t b = seg_base(i), s = seg_size(i);
        bool ro;
        uint8_t *hva;
        if (gpa < b || gpa >= b + s)
            continue;
        hva = seg_hva(vm, i, fw->seg_mode[i], &ro);
        if (!hva) {             /* nothing: reads all ones, on the bus */
            m->kind = LC_GPA_MMIO;
            return true;
        }
        m->kind = LC_GPA_RAM;
        m->readonly = ro;
        m->hva = hva + (gpa - b);
        m->span = b + s - gpa;
        return true;
    }
    return false;
}
