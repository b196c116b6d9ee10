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

static int dma_rd(void *opaque, uint64_t gpa, void *buf, size_t len)
{
    void *p = vmm_gpa(opaque, gpa, len);
    if (!p)
        return -1;
    memcpy(buf, p, len);
    return 0;
}

static int dma_wr(void *opaque, uint64_t gpa, const void *buf, size_t len)
{
    void *p = vmm_gpa(opaque, gpa, len);
    if (!p)
        return -1;
    memcpy(p, buf, len);
    return 0;
}

const vm_dma vmm_dma_template = { NULL, dma_rd, dma_wr };
