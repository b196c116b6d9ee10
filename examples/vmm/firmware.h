/* SPDX-License-Identifier: MIT */
/*
 * Real firmware (--bios, --rom): the images, their validation, and the
 * guest-physical map a PC firmware expects (crosvm's --bios in spirit):
 *
 *   [0, 0xC0000)              RAM
 *   [0xC0000, 0x100000)       13 PAM segments (i440FX PAM0..PAM6): each
 *                             shadow RAM (read-write or read-only) or, with
 *                             its PAM nibble 0, the "PCI side": the last
 *                             128 KiB of the BIOS image (read-only) for
 *                             0xE0000-0xFFFFF, nothing below 0xE0000
 *   [1 MiB, RAM end)          RAM
 *   [4 GiB - size, 4 GiB)     the BIOS image, read-only
 *
 * The back end owns the memory slots; this file decides what each slot
 * holds and calls the back end's slot setter when PAM changes. The VMM
 * never writes the images: ROM is read-only for the guest (KVM read-only
 * slots, gpa_map's `readonly`) and for the engine.
 */
#ifndef VMM_FIRMWARE_H
#define VMM_FIRMWARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cluster/cluster.h>

typedef struct vmm vmm;

#define FW_BIOS_MIN   (128u << 10)      /* the 128 KiB at 0xE0000 */
#define FW_BIOS_MAX   (16u << 20)       /* 0xFF000000..4 GiB */
#define FW_ROM_MAX    (128u << 10)      /* an x86 image in 0xC0000-0xDFFFF */
#define FW_ROM_FILE_MAX (16u << 20)     /* a ROM BAR's largest */
#define FW_SHADOW_BASE 0xC0000u
#define FW_ISA_BIOS    0xE0000u
#define FW_PAM_SEGS   13                /* 12 x 16 KiB + 64 KiB */
#define FW_PAM_FIRST_REG 0x59           /* i440FX PAM0 */
#define FW_PAM_REGS   7

/* The back end's memory-slot setter: map [gpa, gpa + size) onto `hva`
 * (read-only if `ro`), or remove the slot (size 0). 0 or -1. */
typedef int (*fw_slot_fn)(void *opaque, unsigned slot, uint64_t gpa,
                          uint64_t size, void *hva, bool ro);

/* Slot numbers the firmware map uses (the back end's slot 0 is RAM
 * below 0xC0000 in this mode). */
#define FW_SLOT_LOW     0
#define FW_SLOT_HIGH    1
#define FW_SLOT_BIOS    2
#define FW_SLOT_PAM0    3
#define FW_SLOT_ROM_BAR (FW_SLOT_PAM0 + FW_PAM_SEGS)
/* The BIOS data area's timer tick count (18.2 a second since midnight):
 * the guest's clock, read by kvm_quirks.c (late ticks) and fw_phase.c */
#define FW_BDA_TICKS    0x46c
/* KVM's TSS (three pages) with firmware: below any image (QEMU's spot) */
#define FW_TSS_ADDR     0xfeffd000u

enum { FW_PHASE_POST, FW_PHASE_OPTROM, FW_PHASE_IPXE, FW_PHASE_DHCP,
       FW_PHASE_TFTP, FW_PHASE_GUEST, FW_PHASES };

typedef struct fw_phase_stats {
    uint64_t exits, engine, latched, polls;
    uint32_t ticks;             /* the BIOS tick count (0x46C) */
    double t;
} fw_phase_stats;

typedef struct vmm_fw {
    uint8_t *bios;              /* page-aligned copy of --bios */
    size_t bios_size;
    uint8_t *rom;               /* the NIC's option ROM, or NULL */
    size_t rom_size;
    size_t rom_x86_off, rom_x86_len;    /* its x86 BIOS image */
    const char *rom_path;       /* --rom's, or rom_default */
    char rom_default[64];       /* the iPXE ROM for the NIC */
    uint8_t pam[FW_PAM_REGS];   /* PAM0..PAM6 as the guest wrote them */
    uint8_t seg_mode[FW_PAM_SEGS];  /* what each segment maps now */
    fw_slot_fn set_slot;
    void *slot_opaque;
    uint64_t pam_changes;       /* segments remapped */
    /* --rom-bar: the ROM behind the NIC's expansion ROM BAR */
    uint8_t *rom_bar;           /* the ROM padded to the BAR's size */
    uint32_t rom_bar_size, rom_bar_addr;
    bool rom_bar_mapped;
    uint64_t rom_bar_maps;
    /* boot phases (fw_phase.c) */
    unsigned phase;
    uint64_t polls;
    fw_phase_stats phase_start[FW_PHASES];
} vmm_fw;

/* Read and check --bios and --rom (or the default ipxe-qemu ROM of the
 * NIC). 0, or -1 with the reason in err (the caller exits with status 2). */
int  vmm_fw_load(vmm *vm, char *err, size_t errlen);
void vmm_fw_free(vmm *vm);

/* Validate images in memory (also the unit tests' entry): NULL if fine,
 * else why not. `vendor`/`device`: the NIC's PCI identity (0: any); a
 * ROM's x86 BIOS image, the one firmware runs, at *off, *len bytes. */
const char *vmm_fw_check_bios(const uint8_t *img, size_t size);
const char *vmm_fw_check_rom(const uint8_t *img, size_t size,
                             uint16_t vendor, uint16_t device,
                             size_t *off, size_t *len);

/* A system reset (--reboot), after the back end's VM is gone: no slot
 * setter until the next install (whose PAM state is the reset one), the
 * ROM BAR unmapped and released (the NIC made again sets it up anew). */
void vmm_fw_reset(vmm *vm);

/* The back end installs the map through its slot setter; 0 or -1. */
int  vmm_fw_map_install(vmm *vm, fw_slot_fn fn, void *opaque);
/* A PAM register write from the host bridge (reg 0x59..0x5F). */
void vmm_fw_pam_write(vmm *vm, unsigned reg, uint8_t val);
uint8_t vmm_fw_pam_read(vmm *vm, unsigned reg);
/* gpa_map for the firmware regions; false if `gpa` is not one of them. */
bool vmm_fw_gpa_map(vmm *vm, uint64_t gpa, lc_gpa_map *m);

/* --rom-bar: put the ROM behind the NIC's expansion ROM BAR; 0 or -1. */
int vmm_fw_rom_bar_setup(vmm *vm);

/* Boot phases for --stats (fw_phase.c). */
void vmm_fw_phase_begin(vmm *vm);
void vmm_fw_phase(vmm *vm, unsigned phase);
void vmm_fw_nic_read(vmm *vm, uint64_t off);

#endif /* VMM_FIRMWARE_H */
