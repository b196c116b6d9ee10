/* SPDX-License-Identifier: MIT */
/*
 * tests/diff/vm_ops.c: the VMM callbacks the runtime and engine sides of
 * lc-diff give libcluster: guest RAM and the MMIO window of the case, the
 * harness devices answering from the case's seeded stream and logging in
 * order, CPUID, and the case's MSRs. The same device model as Unicorn's
 * side (uc_side.c), so the ordered logs can be compared.
 */
#include <string.h>

#include <cluster/cluster.h>

#include "diff.h"

static void cb_gpa_map(void *opaque, uint64_t gpa, int is_write,
                       lc_gpa_map *out)
{
    diff_vm *x = opaque;
    (void)is_write;
    memset(out, 0, sizeof *out);
    if (gpa >= MMIO_PA && gpa < MMIO_PA + MMIO_SIZE) {
        out->kind = LC_GPA_MMIO;
        return;
    }
    if (gpa >= RAM_SIZE) {
        out->kind = LC_GPA_UNMAPPED;
        return;
    }
    out->kind = LC_GPA_RAM;
    out->hva = x->ram + gpa;
    out->span = (gpa < MMIO_PA ? MMIO_PA : RAM_SIZE) - gpa;
}

static lc_cb_result cb_pio(void *opaque, uint16_t port, uint8_t size,
                           int is_write, uint32_t *value)
{
    diff_vm *x = opaque;
    if (is_write) {
        uint64_t m = size >= 4 ? 0xffffffffull : (1ull << (size * 8)) - 1;
        dev_log(x->dev, AK_PIO, 1, size, port, *value & m);
    } else {
        *value = (uint32_t)dev_answer(x->dev, size);
        dev_log(x->dev, AK_PIO, 0, size, port, *value);
    }
    return LC_CB_OK;
}

static lc_cb_result cb_mmio(void *opaque, uint64_t gpa, uint8_t len,
                            int is_write, uint64_t *value)
{
    diff_vm *x = opaque;
    if (len == 8) {
        if (is_write) {
            dev_log(x->dev, AK_MMIO, 1, 4, gpa, *value & 0xffffffffull);
            dev_log(x->dev, AK_MMIO, 1, 4, gpa + 4, *value >> 32);
        } else {
            uint64_t lo = dev_answer(x->dev, 4);
            dev_log(x->dev, AK_MMIO, 0, 4, gpa, lo);
            uint64_t hi = dev_answer(x->dev, 4);
            dev_log(x->dev, AK_MMIO, 0, 4, gpa + 4, hi);
            *value = lo | hi << 32;
        }
        return LC_CB_OK;
    }
    uint64_t m = (1ull << (len * 8)) - 1;
    if (is_write) {
        dev_log(x->dev, AK_MMIO, 1, len, gpa, *value & m);
    } else {
        *value = dev_answer(x->dev, len);
        dev_log(x->dev, AK_MMIO, 0, len, gpa, *value);
    }
    return LC_CB_OK;
}

static lc_cb_result cb_cpuid(void *opaque, uint32_t leaf, uint32_t subleaf,
                             uint32_t out[4])
{
    diff_vm *x = opaque;
    cpuid_answer(leaf, subleaf, out);
    dev_log(x->dev, AK_CPUID, 0, 4, leaf | (uint64_t)subleaf << 32, 0);
    return LC_CB_OK;
}

static lc_cb_result cb_rdmsr(void *opaque, uint32_t msr, uint64_t *value)
{
    diff_vm *x = opaque;
    int i = msr_index(msr);
    if (i < 0)
        return LC_CB_ERROR;
    *value = x->dev->msr[i];
    return LC_CB_OK;
}

static lc_cb_result cb_wrmsr(void *opaque, uint32_t msr, uint64_t value)
{
    diff_vm *x = opaque;
    int i = msr_index(msr);
    if (i < 0)
        return LC_CB_ERROR;
    x->dev->msr[i] = value;
    return LC_CB_OK;
}

const lc_vm_ops diff_vm_ops = {
    .size = sizeof(lc_vm_ops),
    .gpa_map = cb_gpa_map,
    .pio = cb_pio,
    .mmio = cb_mmio,
    .cpuid = cb_cpuid,
    .rdmsr = cb_rdmsr,
    .wrmsr = cb_wrmsr,
};

