/* SPDX-License-Identifier: MIT */
/*
 * tests/diff/code_src.c: code nobody here wrote, for lc-diff --engine
 * --code FILE (gen_code_case() in gen.c makes the cases).
 *
 * FILE is an ELF object of either class (an executable, a shared library,
 * a kernel module: its executable sections, or without section headers
 * its executable segments) or else a raw image (a PC firmware, an option
 * ROM), taken whole. Every region is swept linearly in the case's CPU
 * mode; an instruction that exits strongly and that the case can start
 * on (IN or OUT, not the string forms; CPUID; HLT; RDMSR, WRMSR) is a
 * site, and each case starts at one. A linear sweep finds compiler
 * output's instruction boundaries; over data or code of another mode it
 * finds instructions all the same, and those are as good a test.
 *
 * The file is a user's: sizes, offsets and counts in it are checked
 * before use, and anything wrong ends lc-diff with a message.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../../decoder/insn.h"
#include "diff.h"

#define SRC_MAX_FILE (64u << 20)

static int add_region(code_src *s, size_t off, size_t len, const char *what)
{
    if (s->nregion == CODE_SRC_REGIONS || !len)
        return 0;
    s->region[s->nregion].off = off;
    s->region[s->nregion].len = len;
    snprintf(s->region[s->nregion].name, sizeof s->region[0].name, "%s",
             what);
    s->nregion++;
    return 0;
}

static uint64_t rd(const uint8_t *p, unsigned n)
{
    uint64_t v = 0;

    for (unsigned i = 0; i < n; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* The executable sections (SHF_EXECINSTR of SHT_PROGBITS), or without
 * them the PF_X PT_LOAD segments. 0, or -1 with the reason in err. */
static int elf_regions(code_src *s, char *err, size_t errlen)
{
    const uint8_t *b = s->bytes;
    size_t n = s->size;
    int wide = b[4] == 2;               /* ELFCLASS64 */
    unsigned ehsize = wide ? 64 : 52;
    uint64_t shoff, phoff;
    unsigned shentsize, shnum, phentsize, phnum, shstrndx;

    if ((b[4] != 1 && b[4] != 2) || b[5] != 1) {
        snprintf(err, errlen, "an ELF file, but not a little-endian one of "
                 "class 32 or 64");
        return -1;
    }
    if (n < ehsize) {
        snprintf(err, errlen, "an ELF file shorter than its header");
        return -1;
    }
    shoff = rd(b + (wide ? 0x28 : 0x20), wide ? 8 : 4);
    phoff = rd(b + (wide ? 0x20 : 0x1c), wide ? 8 : 4);
    phentsize = (unsigned)rd(b + (wide ? 0x36 : 0x2a), 2);
    phnum = (unsigned)rd(b + (wide ? 0x38 : 0x2c), 2);
    shentsize = (unsigned)rd(b + (wide ? 0x3a : 0x2e), 2);
    shnum = (unsigned)rd(b + (wide ? 0x3c : 0x30), 2);
    shstrndx = (unsigned)rd(b + (wide ? 0x3e : 0x32), 2);
    (void)shstrndx;
    if (shnum && shentsize >= (wide ? 64u : 40u) && shoff < n &&
        (uint64_t)shnum * shentsize <= n - shoff) {
        for (unsigned i = 0; i < shnum; i++) {
            const uint8_t *sh = b + shoff + (uint64_t)i * shentsize;
            uint32_t type = (uint32_t)rd(sh + 4, 4);
            uint64_t flags = rd(sh + 8, wide ? 8 : 4);
            uint64_t off = rd(sh + (wide ? 0x18 : 0x10), wide ? 8 : 4);
            uint64_t size = rd(sh + (wide ? 0x20 : 0x14), wide ? 8 : 4);
            char what[32];

            if (type != 1 || !(flags & 0x4) || off >= n || size > n - off)
                continue;                       /* PROGBITS, EXECINSTR */
            snprintf(what, sizeof what, "section %u", i);
            add_region(s, (size_t)off, (size_t)size, what);
        }
    }
    if (!s->nregion && phnum && phentsize >= (wide ? 56u : 32u) &&
        phoff < n && (uint64_t)phnum * phentsize <= n - phoff) {
        for (unsigned i = 0; i < phnum; i++) {
            const uint8_t *ph = b + phoff + (uint64_t)i * phentsize;
            uint32_t type = (uint32_t)rd(ph, 4);
            uint32_t flags = (uint32_t)rd(ph + (wide ? 4 : 0x18), 4);
            uint64_t off = rd(ph + (wide ? 8 : 4), wide ? 8 : 4);
            uint64_t size = rd(ph + (wide ? 0x20 : 0x10), wide ? 8 : 4);
            char what[32];

            if (type != 1 || !(flags & 1) || off >= n || size > n - off)
                continue;                       /* PT_LOAD, PF_X */
            snprintf(what, sizeof what, "segment %u", i);
            add_region(s, (size_t)off, (size_t)size, what);
        }
    }
    if (!s->nregion) {
        snprintf(err, errlen, "an ELF file without executable sections or "
                 "segments inside it");
        return -1;
    }
    return 0;
}

int code_uc_misreads(int mode, const uint8_t *p)
{
    switch (p[1]) {
    case 0x26: case 0x2e: case 0x36: case 0x3e: case 0x64: case 0x65:
    case 0x66: case 0x67: case 0xf0: case 0xf2: case 0xf3:
        return mode == DM_LONG64 && (p[0] & 0xf0) == 0x40;
    default:
        return 0;
    }
}

/* Any REX prefix of the instruction at `p` (`len` bytes) followed by a
 * legacy prefix (code_uc_misreads())? */
static int rex_then_legacy(int mode, const uint8_t *p, unsigned len)
{
    for (unsigned i = 0; i + 1 < len; i++)
        if (code_uc_misreads(mode, p + i))
            return 1;
    return 0;
}

/* Can a case start on this instruction (gen_code_case())? 1 a strongly
 * exiting one, 2 a move to or from memory that the case can aim at MMIO
 * by its base register (not rSP, not RIP-relative; not a store through
 * CS in protected mode, which faults before any access), 0 neither. */
static int site_op(int mode, const lcd_insn *in)
{
    if ((mode == DM_PROT32 || mode == DM_PAE) && in->mem.present &&
        in->mem.write && in->mem.seg == LC_CS)
        return 0;
    if ((in->info.op == LC_OP_MOV || in->info.op == LC_OP_MOVZX ||
         in->info.op == LC_OP_MOVSX) && in->mem.present && !in->mem.agen &&
        in->mem.base.cls == LCD_REG_GPR && in->mem.base.num != LC_RSP &&
        (in->mem.index.cls == LCD_REG_NONE ||
         in->mem.index.num != in->mem.base.num) &&
        (in->mem.bytes == 1 || in->mem.bytes == 2 || in->mem.bytes == 4))
        return 2;           /* (8-byte MMIO: Unicorn makes two accesses) */
    switch (in->info.op) {
    case LC_OP_IN:
    case LC_OP_OUT:
    case LC_OP_CPUID:
    case LC_OP_HLT:
    case LC_OP_RDMSR:
    case LC_OP_WRMSR:
        return 1;
    default:
        return 0;
    }
}

static int add_site(uint32_t **v, size_t *n, size_t *cap, uint32_t off,
                    char *err, size_t errlen)
{
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 256;
        uint32_t *p = realloc(*v, nc * sizeof *p);
        if (!p) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        *v = p;
        *cap = nc;
    }
    (*v)[(*n)++] = off;
    return 0;
}

static int scan(code_src *s, int mode, char *err, size_t errlen)
{
    size_t cap = 0, mcap = 0;

    for (unsigned r = 0; r < s->nregion; r++) {
        const uint8_t *b = s->bytes + s->region[r].off;
        size_t len = s->region[r].len;

        for (size_t at = 0; at < len;) {
            lcd_insn in;
            size_t room = len - at < 15 ? len - at : 15;

            if (lcd_decode(dmode_cpu_mode(mode), b + at, room, &in) !=
                    LC_OK || !in.info.length) {
                at++;
                continue;
            }
            int k = site_op(mode, &in);
            uint32_t off = (uint32_t)(s->region[r].off + at);

            /* (its prefixes only: the ModRM byte and what follows are
             * no prefix) */
            if (k && rex_then_legacy(mode, b + at,
                                     in.info.length > 4 ? 4
                                                        : in.info.length))
                k = 0;

            if ((k == 1 && add_site(&s->site[mode], &s->nsite[mode], &cap,
                                    off, err, errlen) < 0) ||
                (k == 2 && add_site(&s->msite[mode], &s->nmsite[mode],
                                    &mcap, off, err, errlen) < 0))
                return -1;
            at += in.info.length;
        }
    }
    return 0;
}

/* The region holding file offset `off`, or -1. */
int code_src_region(const code_src *s, size_t off)
{
    for (unsigned r = 0; r < s->nregion; r++)
        if (off >= s->region[r].off &&
            off - s->region[r].off < s->region[r].len)
            return (int)r;
    return -1;
}

int code_src_load(code_src *s, const char *path, char *err, size_t errlen)
{
    FILE *f;
    struct stat st;
    long sz;

    memset(s, 0, sizeof *s);
    snprintf(s->path, sizeof s->path, "%s", path);
    f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    if (fstat(fileno(f), &st) || !S_ISREG(st.st_mode) ||
        fseek(f, 0, SEEK_END) || (sz = ftell(f)) < 0 ||
        fseek(f, 0, SEEK_SET)) {
        snprintf(err, errlen, "%s: not a regular file", path);
        fclose(f);
        return -1;
    }
    if (sz < 16 || (unsigned long)sz > SRC_MAX_FILE) {
        snprintf(err, errlen, "%s: %ld bytes; code files have 16 bytes to "
                 "%u MiB", path, sz, SRC_MAX_FILE >> 20);
        fclose(f);
        return -1;
    }
    s->size = (size_t)sz;
    s->bytes = malloc(s->size);
    if (!s->bytes || fread(s->bytes, 1, s->size, f) != s->size) {
        snprintf(err, errlen, "%s: cannot read it", path);
        fclose(f);
        code_src_free(s);
        return -1;
    }
    fclose(f);
    if (!memcmp(s->bytes, "\177ELF", 4)) {
        s->elf = 1;
        char why[200];

        if (elf_regions(s, why, sizeof why) < 0) {
            snprintf(err, errlen, "%s: %s", path, why);
            code_src_free(s);
            return -1;
        }
    } else {
        add_region(s, 0, s->size, "raw image");
    }
    for (int m = 0; m < DM_COUNT; m++)
        if (scan(s, m, err, errlen) < 0) {
            code_src_free(s);
            return -1;
        }
    return 0;
}

void code_src_free(code_src *s)
{
    free(s->bytes);
    for (int m = 0; m < DM_COUNT; m++) {
        free(s->site[m]);
        free(s->msite[m]);
    }
    memset(s, 0, sizeof *s);
}
