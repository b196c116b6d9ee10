/* SPDX-License-Identifier: MIT */
/*
 * tests/fuzz/fz_vm.h: the hostile side of the shared fake VMM
 * (tests/common/fakevm.h) for the runtime and engine fuzz targets. 64 KiB
 * of RAM whose contents (page tables, descriptors, code) come from the
 * input, a traced page (3), a read-only page (4), an MMIO window at
 * 0x20000, and a device function whose every answer (reads, CPUID, MSRs,
 * DRs, VMCS fields, interrupts, port I/O refusals, which MMIO and traced
 * blocks refuse) comes from the input.
 * The fixture's callbacks check the contracts the engine promises
 * (access sizes, DR numbers, traced writes inside RAM) and abort if one
 * is broken. Everything is bounded: the input reads as zeros past its
 * end, the log stops at FVM_LOG_MAX.
 */
#ifndef LC_TEST_FZ_VM_H
#define LC_TEST_FZ_VM_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cluster/cluster.h>

#include "fakevm.h"

#define RAM_SIZE 0x10000u
#define MMIO_BASE 0x20000u

typedef struct fz {
    fvm vm;                 /* the vCPU's opaque: &fz.vm */
    const uint8_t *data;
    size_t size, pos;
    uint8_t salt;           /* which MMIO and traced blocks refuse */
} fz;

/* The next n bytes of the input, little-endian; zeros past its end. */
static inline uint64_t take(fz *f, unsigned n)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < n; i++) {
        uint8_t b = f->pos < f->size ? f->data[f->pos] : 0;
        f->pos++;
        v |= (uint64_t)b << (8 * i);
    }
    return v;
}

/* A device refuses (LC_CB_STOP) every access to one 16-byte block or
 * none, as ops.h asks of a device: one block in 32 of the MMIO window and
 * of the traced page, chosen by the input's last byte. */
static inline int fz_refuses(const fz *f, uint64_t gpa)
{
    return (((gpa >> 4) ^ f->salt) & 0x1f) == 0;
}

static inline lc_cb_result fz_device(fvm *vm, fvm_access *a)
{
    fz *f = vm->ctx;

    if ((a->kind == 'r' || a->kind == 'w' || a->kind == 't') &&
        fz_refuses(f, a->addr))
        return LC_CB_STOP;
    switch (a->kind) {
    case 'i':
    case 'o':
        if (a->kind == 'i')
            a->value = take(f, a->size);
        return (take(f, 1) & 0x1f) == 0 ? LC_CB_STOP : LC_CB_OK;
    case 'r':
        a->value = take(f, a->size);
        break;
    case 'q':
        a->value = (take(f, 1) & 7) == 0;
        break;
    case 'c':
        for (int i = 0; i < 4; i++)
            a->cpuid[i] = (uint32_t)take(f, 4);
        break;
    case 'R':
    case 'd':
    case 'v':
        a->value = take(f, 8);
        break;
    default:                /* writes, HLT: accepted */
        break;
    }
    return LC_CB_OK;
}

/* The RAM's copy `copy` brought up to date, block by block (memcmp:
 * fast under ASan), in one pass. With `check`, after a stop before an
 * instruction or a decline: may the RAM differ from the copy as it does?
 * Only by accessed and dirty bits (bits 5 and 6 of the low byte of a
 * 4-byte-aligned paging entry) set: the walks the CPU makes before it
 * faults or exits set them too; nothing else may be left, in particular
 * no piece of a store split across pages whose other piece was refused.
 * 0 if it differs otherwise. */
static inline int fz_ram_sync(const fz *f, uint8_t *copy, int check)
{
    const uint8_t *now = f->vm.ram;
    int ok = 1;

    for (uint32_t b = 0; b < RAM_SIZE; b += 4096) {
        if (!memcmp(now + b, copy + b, 4096))
            continue;
        for (uint32_t pa = b; check && pa < b + 4096; pa++)
            if (now[pa] != copy[pa] &&
                (pa % 4 || (now[pa] ^ copy[pa]) & ~0x60 ||
                 copy[pa] & ~now[pa]))
                ok = 0;
        memcpy(copy + b, now + b, 4096);
    }
    return ok;
}

/* Sets up `f` for one input. Returns -1 if RAM cannot be allocated. */
static inline int fz_open(fz *f, const uint8_t *data, size_t size)
{
    if (fvm_init_layout(&f->vm, NULL, RAM_SIZE, MMIO_BASE, 0x1000))
        return -1;
    f->vm.traced_gfn = 3;
    f->vm.readonly_gfn = 4;
    f->vm.device = fz_device;
    f->vm.ctx = f;
    f->data = data;
    f->size = size;
    f->pos = 0;
    f->salt = size ? data[size - 1] : 0;
    return 0;
}

static inline void fz_close(fz *f)
{
    fvm_fini(&f->vm);
}

/* Input layout: a header that becomes the CPU state, then RAM. */
static inline void fz_parse(fz *f, lc_cpu_state *sp, const uint8_t *data,
                            size_t size)
{
    lc_cpu_state s;
    /* Three of four inputs start from a sane mode (real, flat 32-bit, long
     * mode with identity tables) so code actually runs; the fourth has a
     * fully fuzzed state. RAM (and so code and tables) is always hostile,
     * except the long-mode tables the template installs. */
    unsigned tmpl = (unsigned)take(f, 1) & 3;

    memset(&s, 0, sizeof s);
    s.cr0 = take(f, 4);
    s.cr3 = take(f, 4) & (RAM_SIZE - 1) & ~0xfffull;
    s.cr4 = take(f, 4);
    s.efer = take(f, 2);
    s.rflags = (take(f, 4) | 2) & ~LC_RFLAGS_TF;
    for (int i = 0; i < LC_NR_SREGS; i++) {
        uint64_t a = take(f, 4);
        lc_segment *sg = &s.seg[i];
        sg->base = take(f, 1) << 12;
        sg->limit = (a & 1) ? 0xffffffffu : (uint32_t)(a >> 8) & 0xffff;
        sg->type = (a >> 1) & 0xf;
        sg->present = (a >> 5) & 1;
        sg->dpl = (a >> 6) & 3;
        sg->db = (a >> 24) & 1;
        sg->s = !((a >> 25) & 1);
        sg->l = (a >> 26) & 1;
        sg->g = (a >> 27) & 1;
        sg->unusable = ((a >> 28) & 7) == 0;
    }
    for (int i = 0; i < LC_NR_GPRS; i++)
        s.gpr[i] = take(f, 1) & 1 ? take(f, 8) : take(f, 2);
    s.rip = take(f, 2) & 0xfff;
    /* The rest is RAM: page tables, descriptors and code. */
    {
        size_t n = f->pos < size ? size - f->pos : 0;
        if (n > RAM_SIZE)
            n = RAM_SIZE;
        memcpy(f->vm.ram, data + f->pos, n);
        /* Device answers come from the whole input, cycling. */
        f->pos = 0;
    }
    if (tmpl != 0) {
        uint64_t keep_rflags = (s.rflags & 0xcd5) | 2;   /* status + DF, IF */
        for (int i = 0; i < LC_NR_SREGS; i++) {
            lc_segment *sg = &s.seg[i];
            memset(sg, 0, sizeof *sg);
            sg->present = 1;
            sg->s = 1;
            sg->type = i == LC_CS ? 0xb : 0x3;
            sg->limit = tmpl == 1 ? 0xffff : 0xffffffffu;
            sg->db = tmpl == 2 || (tmpl == 3 && i != LC_CS);
            sg->l = tmpl == 3 && i == LC_CS;
        }
        s.rflags = keep_rflags;
        s.cr0 = tmpl == 1 ? 0 : tmpl == 2 ? LC_CR0_PE : LC_CR0_PE | LC_CR0_PG;
        s.cr4 = tmpl == 3 ? LC_CR4_PAE : 0;
        s.efer = tmpl == 3 ? LC_EFER_LME | LC_EFER_LMA : 0;
        if (tmpl == 3) {
            /* PML4 at 0xc000 -> PDPT 0xd000 -> PD 0xe000: 2 MiB identity
             * page 0, which covers RAM, the traced/ROM pages and MMIO. */
            uint64_t e[3] = { 0xd000 | 7, 0xe000 | 7, 0x87 };
            memset(f->vm.ram + 0xc000, 0, 0x3000);
            memcpy(f->vm.ram + 0xc000, &e[0], 8);
            memcpy(f->vm.ram + 0xd000, &e[1], 8);
            memcpy(f->vm.ram + 0xe000, &e[2], 8);
            s.cr3 = 0xc000;
        }
    }

    *sp = s;
}

#endif /* LC_TEST_FZ_VM_H */
