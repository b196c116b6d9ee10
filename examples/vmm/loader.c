/* SPDX-License-Identifier: MIT */
/*
 * Multiboot (version 0.6.96) loader for flat images with the a.out
 * kludge: the header (magic 0x1BADB002, in the first 8192 bytes, 4-byte
 * aligned) carries header_addr, load_addr, load_end_addr, bss_end_addr
 * and entry_addr (flag bit 16), so the loader needs no ELF parsing and
 * QEMU's -kernel loads the same file. The image is a user's file: every
 * field is checked against the file and guest RAM before anything is
 * copied.
 *
 * Low memory as the loader leaves it:
 *   0x7000  a flat GDT (null, 0x08 code32, 0x10 data32), GDTR points here
 *   0x8000  the Multiboot information structure (flags: mem, cmdline)
 *   0x8100  the command line (up to 1 KiB)
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vmm.h"

#define MB_MAGIC       0x1BADB002u
#define MB_BOOT_MAGIC  0x2BADB002u
#define MB_AOUT_KLUDGE (1u << 16)
#define MB_SEARCH      8192
#define MB_INFO_MEM    (1u << 0)
#define MB_INFO_CMDLINE (1u << 2)

#define BOOT_GDT  0x7000u
#define BOOT_MBI  0x8000u
#define BOOT_CMDLINE 0x8100u
#define CMDLINE_MAX 1024u
#define IMAGE_MAX (64u << 20)

struct mb_header {
    uint32_t magic, flags, checksum;
    uint32_t header_addr, load_addr, load_end_addr, bss_end_addr,
             entry_addr;
};

static int find_header(const uint8_t *img, size_t len, struct mb_header *h,
                       size_t *off)
{
    for (size_t o = 0; o + 12 <= len && o + 12 <= MB_SEARCH; o += 4) {
        uint32_t m[3];
        memcpy(m, img + o, 12);
        if (m[0] == MB_MAGIC && m[0] + m[1] + m[2] == 0) {
            memset(h, 0, sizeof *h);
            memcpy(h, img + o, len - o < sizeof *h ? len - o : sizeof *h);
            *off = o;
            return 0;
        }
    }
    return -1;
}

int vmm_load_multiboot(vmm *vm, const char *path, const char *cmdline,
                       vmm_boot *boot, char *err, size_t errlen)
{
    static const uint64_t gdt[3] = {
        0, 0x00cf9b000000ffffull, 0x00cf93000000ffffull,
    };
    struct mb_header h;
    size_t len = 0, hoff, foff, n;
    uint64_t load_end, bss_end;
    uint8_t *img = vmm_read_file(path, 1, IMAGE_MAX, "an image", false, &len,
                                 err, errlen);
    int rc = -1;

    if (!img)
        return -1;
    if (find_header(img, len, &h, &hoff)) {
        snprintf(err, errlen, "%s: no Multiboot header in the first %u bytes",
                 path, MB_SEARCH);
        goto out;
    }
    if (hoff + sizeof h > len) {
        snprintf(err, errlen, "%s: truncated Multiboot header", path);
        goto out;
    }
    if (hoff + sizeof h > MB_SEARCH) {
        /* Multiboot 0.6.96 section 3.1.1: the header must be contained
         * completely within the first 8192 bytes */
        snprintf(err, errlen, "%s: Multiboot header at %#zx crosses byte "
                 "%u", path, hoff, MB_SEARCH);
        goto out;
    }
    if (!(h.flags & MB_AOUT_KLUDGE)) {
        snprintf(err, errlen, "%s: only Multiboot images with the a.out "
                 "kludge (flag bit 16) are supported, not ELF", path);
        goto out;
    }
    if (h.flags & 0x0000fffcu & ~0x3u) {
        /* bits 2 (video mode) and up, other than 16: not provided */
        snprintf(err, errlen, "%s: Multiboot flags %#x ask for features "
                 "this loader does not provide (video mode)", path, h.flags);
        goto out;
    }
    /* header_addr - load_addr is where the header sits in the loaded
     * text; the file offset of load_addr follows from it */
    if (h.header_addr < h.load_addr || h.header_addr - h.load_addr > hoff) {
        snprintf(err, errlen, "%s: header_addr %#x and load_addr %#x "
                 "disagree with the header's file offset %#zx", path,
                 h.header_addr, h.load_addr, hoff);
        goto out;
    }
    foff = hoff - (h.header_addr - h.load_addr);
    load_end = h.load_end_addr ? h.load_end_addr
                               : h.load_addr + (uint64_t)(len - foff);
    bss_end = h.bss_end_addr ? h.bss_end_addr : load_end;
    if (load_end < h.load_addr || load_end - h.load_addr > len - foff) {
        snprintf(err, errlen, "%s: load range [%#x, %#llx) does not fit "
                 "the file", path, h.load_addr, (unsigned long long)load_end);
        goto out;
    }
    if (bss_end < load_end) {
        snprintf(err, errlen, "%s: bss_end_addr %#llx is below the load "
                 "range's end %#llx: the bss does not fit", path,
                 (unsigned long long)bss_end, (unsigned long long)load_end);
        goto out;
    }
    if (h.load_addr < LCVMM_LOAD_MIN || !vmm_gpa(vm, h.load_addr,
                                            bss_end - h.load_addr)) {
        snprintf(err, errlen, "%s: image [%#x, %#llx) is not inside guest "
                 "RAM above 1 MiB (%llu MiB of RAM)", path, h.load_addr,
                 (unsigned long long)bss_end,
                 (unsigned long long)(vm->ram_size >> 20));
        goto out;
    }
    if (h.entry_addr < h.load_addr || h.entry_addr >= load_end) {
        snprintf(err, errlen, "%s: entry %#x outside the loaded image", path,
                 h.entry_addr);
        goto out;
    }
    n = (size_t)(load_end - h.load_addr);
    memcpy(vmm_gpa(vm, h.load_addr, n), img + foff, n);
    memset(vmm_gpa(vm, load_end, bss_end - load_end), 0,
           (size_t)(bss_end - load_end));

    /* GDT, Multiboot information, command line */
    memcpy(vmm_gpa(vm, BOOT_GDT, sizeof gdt), gdt, sizeof gdt);
    size_t cl = cmdline ? strlen(cmdline) : 0;
    if (cl >= CMDLINE_MAX) {
        snprintf(err, errlen, "guest command line longer than %u bytes",
                 CMDLINE_MAX - 1);
        goto out;
    }
    uint8_t *c = vmm_gpa(vm, BOOT_CMDLINE, CMDLINE_MAX);
    memset(c, 0, CMDLINE_MAX);
    if (cl)
        memcpy(c, cmdline, cl);
    uint32_t mbi[8] = { 0 };
    mbi[0] = MB_INFO_MEM | MB_INFO_CMDLINE;
    mbi[1] = 640;                                   /* mem_lower, KiB */
    mbi[2] = (uint32_t)((vm->ram_size - 0x100000u) >> 10); /* mem_upper */
    mbi[4] = BOOT_CMDLINE;
    memcpy(vmm_gpa(vm, BOOT_MBI, sizeof mbi), mbi, sizeof mbi);

    boot->entry = h.entry_addr;
    boot->mbi = BOOT_MBI;
    boot->gdt = BOOT_GDT;
    rc = 0;
out:
    free(img);
    return rc;
}

static void flat(lc_segment *s, uint16_t sel, uint8_t type)
{
    *s = (lc_segment){ .base = 0, .limit = 0xffffffffu, .selector = sel,
                       .type = type, .present = 1, .dpl = 0, .db = 1,
                       .s = 1, .l = 0, .g = 1 };
}

void vmm_boot_state(const vmm_boot *boot, lc_cpu_state *st)
{
    memset(st, 0, sizeof *st);
    st->gpr[LC_RAX] = MB_BOOT_MAGIC;
    st->gpr[LC_RBX] = boot->mbi;
    st->rip = boot->entry;
    st->rflags = 2;
    flat(&st->seg[LC_CS], 0x08, 0xb);
    for (int s = 0; s < LC_NR_SREGS; s++)
        if (s != LC_CS)
            flat(&st->seg[s], 0x10, 0x3);
    st->gdtr.base = boot->gdt;
    st->gdtr.limit = 3 * 8 - 1;
    st->tr = (lc_segment){ .limit = 0xffff, .type = 0xb, .present = 1 };
    st->ldtr = (lc_segment){ .limit = 0xffff, .type = 0x2, .present = 1 };
    st->idtr.limit = 0xffff;
    st->cr0 = 0x11;              /* PE, ET */
}
