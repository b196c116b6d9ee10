/* SPDX-License-Identifier: MIT */
/*
 * libcluster/exit.h: whether the decoded instruction is the one the
 * hypervisor reported (exit.c), the port case written here so the hit
 * path (handle_exit.c, lookup()) compares a port exit without a call: it
 * is the exit of nearly every hit (PCnet, e1000 and PCI configuration
 * accessors, SeaBIOS's and iPXE's polls).
 */
#ifndef LC_LIBCLUSTER_EXIT_H
#define LC_LIBCLUSTER_EXIT_H

#include "engine_int.h"

static inline uint64_t lci_low_bytes(uint64_t v, unsigned bytes)
{
    return bytes >= 8 ? v : v & ((1ull << (8 * bytes)) - 1);
}

/* The value of a register or immediate operand, or -1 if it has none
 * that the state holds (a segment register, memory). */
static inline int lci_opnd_value(const lcd_opnd *o,
                                 const lc_cpu_state *st, uint64_t *val)
{
    if (o->kind == LCD_OPND_IMM)
        *val = o->imm;
    else if (o->kind == LCD_OPND_REG && o->reg.cls == LCD_REG_GPR)
        *val = st->gpr[o->reg.num & 15];
    else if (o->kind == LCD_OPND_REG && o->reg.cls == LCD_REG_GPR8H)
        *val = st->gpr[o->reg.num & 3] >> 8;
    else
        return -1;
    *val = lci_low_bytes(*val, o->bytes);
    return 0;
}

/* Port I/O: direction and string-ness by the opcode, then width, port,
 * repeat and the value written, as far as the VMM reported them. */
static inline __attribute__((always_inline))
int lci_io_matches(const lcd_insn *d, const lc_exit *x,
                   const lc_cpu_state *st)
{
    const lc_exit_io *io = &x->u.io;
    int string = d->info.op == LC_OP_INS || d->info.op == LC_OP_OUTS;
    unsigned width;
    uint64_t port, data;

    if (io->is_string)
        if (d->info.op != (io->is_out ? LC_OP_OUTS : LC_OP_INS))
            return 0;
    if (!io->is_string && d->info.op != (io->is_out ? LC_OP_OUT : LC_OP_IN))
        return 0;
    if ((io->count > 1 || io->is_rep) && !(string && io->is_rep))
        return 0;                     /* only REP INS/OUTS repeat */
    if (string) {
        if ((d->info.rep != 0) != (io->is_rep != 0))
            return 0;
        return d->mem.bytes == io->size &&
               (!(x->reported & LC_EXIT_HAS_PORT) ||
                (uint16_t)st->gpr[LC_RDX] == io->port);
    }
    if (d->nopnds < 2)
        return 0;
    /* IN acc, port / OUT port, acc (Intel operand order) */
    width = d->opnd[io->is_out ? 1 : 0].bytes;
    if (width != io->size)
        return 0;
    if ((x->reported & LC_EXIT_HAS_PORT) &&
        (lci_opnd_value(&d->opnd[io->is_out ? 0 : 1], st, &port) != 0 ||
         (uint16_t)port != io->port))
        return 0;
    if (io->is_out && (x->reported & LC_EXIT_HAS_VALUE) &&
        (lci_opnd_value(&d->opnd[1], st, &data) != 0 ||
         data != lci_low_bytes(io->value, io->size)))
        return 0;
    return 1;
}

/* lci_exit_matches() (engine_int.h), a port exit compared here. */
static inline __attribute__((always_inline))
int lci_exit_matches_inl(const lcd_insn *d, const lc_exit *x,
                         const lc_cpu_state *st)
{
    if (x->kind != LC_EXIT_IO)
        return lci_exit_matches(d, x, st);
    if (x->insn_len && x->insn_len != d->info.length)
        return 0;
    return lci_io_matches(d, x, st);
}

#endif /* LC_LIBCLUSTER_EXIT_H */
