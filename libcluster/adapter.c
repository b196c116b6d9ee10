/* SPDX-License-Identifier: MIT */
/*
 * libcluster/adapter.c: the engine's interface for the adapters beside it
 * (adapter.h). The adapters get these two services here instead of
 * reaching into the runtime and the decoder themselves.
 */
#include <string.h>

#include "adapter.h"
#include "engine_int.h"

int lci_adapter_perform(lc_vcpu *vc, const lc_exit *x, uint64_t *value)
{
    const lc_vm_ops *ops = &vc->engine->ops;

    if (x->kind == LC_EXIT_IO) {
        uint32_t v = x->u.io.is_out ? (uint32_t)*value : 0;
        if (!ops->pio || ops->pio(vc->opaque, x->u.io.port, x->u.io.size,
                                  x->u.io.is_out, &v) != LC_CB_OK)
            return -1;
        *value = v;
        return 0;
    }
    if (x->kind == LC_EXIT_MMIO) {
        uint64_t v = x->u.mmio.is_write ? *value : 0;
        if (!ops->mmio || ops->mmio(vc->opaque, x->u.mmio.gpa, x->u.mmio.len,
                                    x->u.mmio.is_write, &v) != LC_CB_OK)
            return -1;
        *value = v;
        return 0;
    }
    return -1;
}

/* A runtime context on a copy `s` of `st` (nothing is written back) that
 * only looks: its walks set no accessed or dirty bit, and one that would
 * need to fails (LCR_PROBE_STRICT). */
static void look_begin(lc_vcpu *vc, const lc_cpu_state *st, lcr_vcpu *v,
                       lc_cpu_state *s)
{
    *s = *st;
    memset(v, 0, sizeof *v);
    lcr_begin(v, s, &vc->engine->ops, vc->opaque);
    v->probe = LCR_PROBE_STRICT;
}

/* Is the k bytes at `bytes`, an instruction at `at` ending at RIP, the
 * one `x` reports (adapter.h)? */
static int is_exiting_insn(lcr_vcpu *v, const lc_exit *x,
                           const uint8_t *bytes, unsigned k, uint64_t at)
{
    lcd_insn d;
    uint64_t gpa;

    if (lcd_decode(v->mode, bytes, k, &d) != LC_OK || d.info.length != k)
        return 0;
    if (x->kind == LC_EXIT_IO)
        return x->u.io.is_out && d.info.op == LC_OP_OUT && d.nopnds >= 2 &&
               d.opnd[1].bytes == x->u.io.size &&
               lcr_io_port(v, &d, 1) == x->u.io.port;
    /* a plain MOV store changes no register its address uses, unlike
     * PUSH, string or exchange forms, so the address can be recomputed
     * after it ran */
    return x->kind == LC_EXIT_MMIO && x->u.mmio.is_write &&
           d.info.exit_class == LC_CLASS_WEAK && d.info.op == LC_OP_MOV &&
           d.mem.present && d.mem.write && !d.mem.read &&
           d.mem.bytes == x->u.mmio.len &&
           lcr_mem_gpa(v, &d, at, &gpa) == 0 && gpa == x->u.mmio.gpa;
}

unsigned lci_adapter_insn_len(lc_vcpu *vc, const lc_cpu_state *st,
                              const lc_exit *x, unsigned hint)
{
    /* an OUT is 1 to 4 bytes (EE/EF, E6/E7 ib, with 66h or REX) */
    unsigned max = x->kind == LC_EXIT_IO ? 4 : LC_INSN_MAX_LEN;
    uint8_t buf[LC_INSN_MAX_LEN];
    lc_cpu_state s;
    uint64_t gfn[2], rip = st->rip;
    unsigned ngfn;
    size_t got;
    lcr_vcpu v;

    if (max > rip)
        max = (unsigned)rip;
    /* A look, not a fetch: the CPU never fetched the bytes before the
     * instruction, so no accessed bit may be set for them (SDM 4.8); a
     * page whose entries would need one was not the instruction's. One
     * look at the bytes before RIP; if the page before this one cannot
     * be looked at, what lies in this page. */
    look_begin(vc, st, &v, &s);
    got = lcr_fetch_at(&v, rip - max, buf, max, gfn, &ngfn);
    if (got < max) {
        max = (unsigned)(rip & 0xfff) < max ? (unsigned)(rip & 0xfff) : max;
        got = max ? lcr_fetch_at(&v, rip - max, buf, max, gfn, &ngfn) : 0;
        if (got < max)
            return 0;
    }
    if (hint && hint <= max &&
        is_exiting_insn(&v, x, buf + max - hint, hint, rip - hint))
        return hint;
    for (unsigned k = 1; k <= max; k++)
        if (is_exiting_insn(&v, x, buf + max - k, k, rip - k))
            return k;               /* the shortest */
    return 0;
}

int lci_adapter_exit_now(lc_vcpu *vc, const lc_cpu_state *st, lc_exit *x)
{
    uint8_t buf[LC_INSN_MAX_LEN];
    lc_cpu_state s;
    uint64_t gfn[2], gpa;
    unsigned ngfn;
    size_t got;
    lcr_vcpu v;
    lcd_insn d;

    look_begin(vc, st, &v, &s);
    got = lcr_fetch_at(&v, st->rip, buf, sizeof buf, gfn, &ngfn);
    if (got == 0 || lcd_decode(v.mode, buf, got, &d) != LC_OK)
        return -1;
    if (x->kind == LC_EXIT_IO) {
        /* IN: the data register, then the port */
        if (x->u.io.is_out || d.info.op != LC_OP_IN || d.nopnds < 2 ||
            d.opnd[0].bytes != x->u.io.size)
            return -1;
        x->u.io.port = lcr_io_port(&v, &d, 0);
        return 0;
    }
    if (x->kind != LC_EXIT_MMIO || x->u.mmio.is_write ||
        d.info.op != LC_OP_MOV || !d.mem.present || !d.mem.read ||
        d.mem.write || d.mem.bytes != x->u.mmio.len ||
        lcr_mem_gpa(&v, &d, st->rip, &gpa) != 0)
        return -1;
    x->u.mmio.gpa = gpa;
    return 0;
}
