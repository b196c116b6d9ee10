/* SPDX-License-Identifier: MIT */
/*
 * runtime/alu.h: integer arithmetic with exact RFLAGS.
 *
 * Every function takes the operand size in bytes (1, 2, 4, 8), operands
 * already truncated to it, and the incoming RFLAGS; it returns the result
 * and the complete new RFLAGS. Flags the SDM leaves undefined get a fixed,
 * documented value (the differential tests mask them).
 */
#ifndef LC_RUNTIME_ALU_H
#define LC_RUNTIME_ALU_H

#include <stdint.h>

#include <cluster/cpu.h>

#define LCR_FL_STATUS (LC_RFLAGS_CF | LC_RFLAGS_PF | LC_RFLAGS_AF | \
                       LC_RFLAGS_ZF | LC_RFLAGS_SF | LC_RFLAGS_OF)

static inline uint64_t lcr_mask(unsigned bytes)
{
    return bytes >= 8 ? ~0ull : (1ull << (bytes * 8)) - 1;
}

static inline uint64_t lcr_sign(unsigned bytes)
{
    return 1ull << (bytes * 8 - 1);
}

static inline uint64_t lcr_sext(uint64_t v, unsigned bytes)
{
    if (bytes >= 8)
        return v;
    v &= lcr_mask(bytes);
    return (v & lcr_sign(bytes)) ? v | ~lcr_mask(bytes) : v;
}

enum lcr_binop {
    LCR_ADD, LCR_ADC, LCR_SUB, LCR_SBB, LCR_AND, LCR_OR, LCR_XOR,
};

/* The result of a binary operation on operands already masked to `m`
 * (the width's mask); `cf` is the carry-in ADC and SBB use. The flags are
 * lcr_alu_bin()'s; the translator's inline gap fillers compute them lazily
 * from the same operands. */
static inline uint64_t lcr_alu_result(enum lcr_binop op, uint64_t a,
                                      uint64_t b, uint64_t cf, uint64_t m)
{
    switch (op) {
    case LCR_ADD: return (a + b) & m;
    case LCR_ADC: return (a + b + cf) & m;
    case LCR_SUB: return (a - b) & m;
    case LCR_SBB: return (a - b - cf) & m;
    case LCR_AND: return a & b;
    case LCR_OR:  return a | b;
    default:      return a ^ b;
    }
}

/* A general register after a write of `bytes` bytes of `val`: 8- and
 * 16-bit writes merge into the old value, 32- and 64-bit writes
 * zero-extend (SDM vol. 1 3.4.1.1; also outside 64-bit mode, where the
 * upper half is not architecturally visible). */
static inline uint64_t lcr_gpr_write(uint64_t old, unsigned bytes,
                                     uint64_t val)
{
    uint64_t m = lcr_mask(bytes);
    return bytes >= 4 ? val & m : (old & ~m) | (val & m);
}

/* ADD ADC SUB SBB (and CMP as SUB) AND OR XOR (and TEST as AND). */
uint64_t lcr_alu_bin(enum lcr_binop op, unsigned bytes, uint64_t a,
                     uint64_t b, uint64_t *rflags);

/* INC, DEC (CF preserved), NEG. */
uint64_t lcr_alu_inc(unsigned bytes, uint64_t a, uint64_t *rflags);
uint64_t lcr_alu_dec(unsigned bytes, uint64_t a, uint64_t *rflags);
uint64_t lcr_alu_neg(unsigned bytes, uint64_t a, uint64_t *rflags);

enum lcr_shop {
    LCR_ROL, LCR_ROR, LCR_RCL, LCR_RCR, LCR_SHL, LCR_SHR, LCR_SAR,
};

/* Shifts and rotates by `count` (the raw count: masked here as the CPU
 * masks it). A masked count of zero changes nothing, flags included. */
uint64_t lcr_alu_shift(enum lcr_shop op, unsigned bytes, uint64_t a,
                       unsigned count, uint64_t *rflags);

/* Multiplication. Unsigned (MUL) and signed (IMUL) full products: *lo and
 * *hi receive the two halves, each `bytes` wide. CF=OF as the SDM
 * defines; SF, ZF, PF from the low half and AF cleared (undefined). */
void lcr_alu_mul(unsigned bytes, uint64_t a, uint64_t b, uint64_t *lo,
                 uint64_t *hi, uint64_t *rflags);
void lcr_alu_imul(unsigned bytes, uint64_t a, uint64_t b, uint64_t *lo,
                  uint64_t *hi, uint64_t *rflags);

/* Condition code (lc_cond) against RFLAGS. */
int lcr_cond(unsigned cc, uint64_t rflags);

#endif /* LC_RUNTIME_ALU_H */
