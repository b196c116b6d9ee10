/* SPDX-License-Identifier: MIT */
/*
 * tests/diff/rt_side.c: running a case in the runtime (lcr_begin /
 * lcr_step), with lc_vm_ops callbacks over a private copy of the RAM and
 * the same device model as the Unicorn side.
 *
 * Device model shared with uc_side.c: every port or MMIO read consumes the
 * next value of the case's answer stream; writes and reads are logged in
 * order. An 8-byte MMIO access is delivered to the device as two 4-byte
 * accesses, low half first: that is how QEMU's memory core dispatches it
 * to a region without .impl.max_access_size (Unicorn's uc_mmio_map), and
 * a device model is free to work that way, so both sides see the same.
 */
#include <stdio.h>
#include <string.h>

#include "../../runtime/rt.h"
#include "diff.h"

typedef struct rt_ctx {
    uint8_t  *ram;
    dev_side *dev;
} rt_ctx;

static void cb_gpa_map(void *opaque, uint64_t gpa, int is_write,
                       lc_gpa_map *out)
{
    rt_ctx *x = opaque;
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
    rt_ctx *x = opaque;
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
    rt_ctx *x = opaque;
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
    rt_ctx *x = opaque;
    cpuid_answer(leaf, subleaf, out);
    dev_log(x->dev, AK_CPUID, 0, 4, leaf | (uint64_t)subleaf << 32, 0);
    return LC_CB_OK;
}

static lc_cb_result cb_rdmsr(void *opaque, uint32_t msr, uint64_t *value)
{
    rt_ctx *x = opaque;
    int i = msr_index(msr);
    if (i < 0)
        return LC_CB_ERROR;
    *value = x->dev->msr[i];
    return LC_CB_OK;
}

static lc_cb_result cb_wrmsr(void *opaque, uint32_t msr, uint64_t value)
{
    rt_ctx *x = opaque;
    int i = msr_index(msr);
    if (i < 0)
        return LC_CB_ERROR;
    x->dev->msr[i] = value;
    return LC_CB_OK;
}

static const lc_vm_ops rt_ops = {
    .size = sizeof(lc_vm_ops),
    .gpa_map = cb_gpa_map,
    .pio = cb_pio,
    .mmio = cb_mmio,
    .cpuid = cb_cpuid,
    .rdmsr = cb_rdmsr,
    .wrmsr = cb_wrmsr,
};

int rts_run(const dcase *c, run_result *r, unsigned max_insns)
{
    lc_cpu_state st = c->st;
    rt_ctx x;
    lcr_vcpu v;
    lcd_insn scratch;

    r->ok = 0;
    r->why[0] = 0;
    r->ntrace = 0;
    dev_init(&r->dev, c);
    memcpy(r->ram, c->ram, RAM_SIZE);
    x.ram = r->ram;
    x.dev = &r->dev;
    memset(&v, 0, sizeof v);
    v.insn_budget = max_insns;
    v.rep_budget = 1u << 20;
    lcr_begin(&v, &st, &rt_ops, &x);
    for (;;) {
        uint64_t la = st.seg[LC_CS].base + st.rip;
        if (c->mode != DM_LONG64)
            la = (uint32_t)la;
        if (la == c->end_la) {
            r->ok = 1;
            break;
        }
        if (r->ntrace >= max_insns) {
            snprintf(r->why, sizeof r->why,
                     "runtime: no end after %u instructions", r->ntrace);
            break;
        }
        if (r->ntrace < TRACE_MAX) {
            r->trace[r->ntrace] = la;
            r->trace_cl[r->ntrace] = st.gpr[LC_RCX];
        }
        r->ntrace++;
        if (lcr_step(&v, &scratch) != LCR_DONE) {
            char txt[64] = "?";
            lc_insn_info info;
            uint64_t off = la - c->code_la;
            if (off < c->code_len &&
                lc_decode(dmode_cpu_mode(c->mode), c->code + off,
                          c->code_len - off, &info) == LC_OK)
                lc_insn_format(&info, la, txt, sizeof txt);
            snprintf(r->why, sizeof r->why,
                     "runtime: stop '%s' (fault vector %u, addr 0x%llx, "
                     "error %d) before '%s' at 0x%llx",
                     lc_stop_reason_name(v.stop), v.fault_vector,
                     (unsigned long long)v.fault_addr, (int)v.error, txt,
                     (unsigned long long)la);
            r->ntrace--;
            break;
        }
    }
    for (int i = 0; i < 16; i++)
        r->gpr[i] = st.gpr[i];
    if (c->mode != DM_LONG64)
        for (int i = 0; i < 16; i++)
            r->gpr[i] = i < 8 ? (uint32_t)st.gpr[i] : 0;
    r->rip = st.seg[LC_CS].base + st.rip;
    r->rflags = st.rflags;
    memcpy(r->msr, r->dev.msr, sizeof r->msr);
    return 0;
}
