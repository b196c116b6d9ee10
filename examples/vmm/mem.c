/* SPDX-License-Identifier: MIT */
/*
 * Guest-physical memory: one anonymous mapping from gpa 0. Every access
 * a device or the engine makes goes through a bounds check here; guest
 * addresses and lengths are hostile.
 */
#include <string.h>
#include <sys/mman.h>

#include "vmm.h"

int vmm_mem_init(vmm *vm, uint64_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        return -1;
    vm->ram = p;
    vm->ram_size = bytes;
    return 0;
}

void vmm_mem_fini(vmm *vm)
{
    if (vm->ram)
        munmap(vm->ram, vm->ram_size);
    vm->ram = NULL;
}

void *vmm_gpa(vmm *vm, uint64_t gpa, uint64_t len)
{
    if (gpa >= vm->ram_size || len > vm->ram_size - gpa)
        return NULL;
    return vm->ram + gpa;
}

/* DMA meets the guest's vCPUs in guest RAM: with -c N a device model
 * writes a descriptor on one thread (a vCPU's, or the I/O thread's on a
 * TAP receive) while libcluster reads it in a cluster on another, with
 * relaxed atomic accesses (docs/engine.md, "Guest RAM is shared"). The
 * device side copies the same way, in naturally aligned pieces of up to
 * 8 bytes, each a relaxed atomic: no C11 data race, and a descriptor
 * field written in one aligned piece is never seen torn. Plain MOVs on
 * x86; frames are a few hundred pieces. */
static size_t piece(uintptr_t a, size_t left)
{
    if (left >= 8 && !(a & 7))
        return 8;
    if (left >= 4 && !(a & 3))
        return 4;
    if (left >= 2 && !(a & 1))
        return 2;
    return 1;
}

static void ram_in(void *dst, const uint8_t *src, size_t len)
{
    for (size_t off = 0, w; off < len; off += w) {
        const void *p = src + off;
        uint64_t v;
        w = piece((uintptr_t)p, len - off);
        switch (w) {
        case 8: v = __atomic_load_n((const uint64_t *)p, __ATOMIC_RELAXED); break;
        case 4: v = __atomic_load_n((const uint32_t *)p, __ATOMIC_RELAXED); break;
        case 2: v = __atomic_load_n((const uint16_t *)p, __ATOMIC_RELAXED); break;
        default: v = __atomic_load_n((const uint8_t *)p, __ATOMIC_RELAXED); break;
        }
        memcpy((uint8_t *)dst + off, &v, w);
    }
}

static void ram_out(uint8_t *dst, const void *src, size_t len)
{
    for (size_t off = 0, w; off < len; off += w) {
        void *p = dst + off;
        uint64_t v = 0;
        w = piece((uintptr_t)p, len - off);
        memcpy(&v, (const uint8_t *)src + off, w);
        switch (w) {
        case 8: __atomic_store_n((uint64_t *)p, v, __ATOMIC_RELAXED); break;
        case 4: __atomic_store_n((uint32_t *)p, (uint32_t)v, __ATOMIC_RELAXED); break;
        case 2: __atomic_store_n((uint16_t *)p, (uint16_t)v, __ATOMIC_RELAXED); break;
        default: __atomic_store_n((uint8_t *)p, (uint8_t)v, __ATOMIC_RELAXED); break;
        }
    }
}

static int dma_rd(void *opaque, uint64_t gpa, void *buf, size_t len)
{
    uint8_t *p = vmm_gpa(opaque, gpa, len);
    if (!p)
        return -1;
    ram_in(buf, p, len);
    return 0;
}

static int dma_wr(void *opaque, uint64_t gpa, const void *buf, size_t len)
{
    uint8_t *p = vmm_gpa(opaque, gpa, len);
    if (!p)
        return -1;
    ram_out(p, buf, len);
    return 0;
}

const vm_dma vmm_dma_template = { NULL, dma_rd, dma_wr };
