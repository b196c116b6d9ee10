/* SPDX-License-Identifier: MIT */
/*
 * runtime/alu.c: integer arithmetic with exact RFLAGS (SDM vol. 1 3.4.3,
 * vol. 2 per instruction). Values are kept in uint64_t truncated to the
 * operand size; carries and overflows come from the classic bit formulas.
 */
#include "alu.h"

#define CF LC_RFLAGS_CF
#define PF LC_RFLAGS_PF
#define AF LC_RFLAGS_AF
#define ZF LC_RFLAGS_ZF
#define SF LC_RFLAGS_SF
#define OF LC_RFLAGS_OF

/* SF, ZF, PF of a result: PF is the even parity of the low byte only. */
static uint64_t szp(uint64_t r, unsigned bytes)
{
    uint64_t f = 0;

    r &= lcr_mask(bytes);
    if (r == 0)
        f |= ZF;
    if (r & lcr_sign(bytes))
        f |= SF;
    if (!__builtin_parity((unsigned)(r & 0xff)))
        f |= PF;
    return f;
}

static uint64_t merge(uint64_t rflags, uint64_t which, uint64_t val)
{
    return (rflags & ~which) | (val & which);
}

uint64_t lcr_alu_bin(enum lcr_binop op, unsigned bytes, uint64_t a,
                     uint64_t b, uint64_t *rflags)
{
    uint64_t m = lcr_mask(bytes), s = lcr_sign(bytes);
    uint64_t cin = (*rflags & CF) ? 1 : 0;
    uint64_t r, f = 0;

    a &= m;
    b &= m;
    if (op == LCR_ADD || op == LCR_SUB)
        cin = 0;
    r = lcr_alu_result(op, a, b, cin, m);
    switch (op) {
    case LCR_ADD:
    case LCR_ADC:
        if (cin ? r <= a : r < a)
            f |= CF;
        if ((a ^ r) & (b ^ r) & s)
            f |= OF;
        if ((a ^ b ^ r) & 0x10)
            f |= AF;
        break;
    case LCR_SUB:
    case LCR_SBB:
        if (cin ? a <= b : a < b)
            f |= CF;
        if ((a ^ b) & (a ^ r) & s)
            f |= OF;
        if ((a ^ b ^ r) & 0x10)
            f |= AF;
        break;
    default:            /* AND OR XOR: CF = OF = 0; AF undefined: cleared */
        break;
    }
    *rflags = merge(*rflags, LCR_FL_STATUS, f | szp(r, bytes));
    return r;
}

uint64_t lcr_alu_inc(unsigned bytes, uint64_t a, uint64_t *rflags)
{
    uint64_t m = lcr_mask(bytes), r = (a + 1) & m, f = 0;

    a &= m;
    if (r == lcr_sign(bytes))
        f |= OF;
    if ((a ^ r) & 0x10)
        f |= AF;
    *rflags = merge(*rflags, LCR_FL_STATUS & ~CF, f | szp(r, bytes));
    return r;
}

uint64_t lcr_alu_dec(unsigned bytes, uint64_t a, uint64_t *rflags)
{
    uint64_t m = lcr_mask(bytes), r = (a - 1) & m, f = 0;

    a &= m;
    if (a == lcr_sign(bytes))
        f |= OF;
    if ((a ^ r) & 0x10)
        f |= AF;
    *rflags = merge(*rflags, LCR_FL_STATUS & ~CF, f | szp(r, bytes));
    return r;
}

uint64_t lcr_alu_neg(unsigned bytes, uint64_t a, uint64_t *rflags)
{
    uint64_t m = lcr_mask(bytes), r, f = 0;

    a &= m;
    r = (0 - a) & m;
    if (a != 0)
        f |= CF;
    if (a == lcr_sign(bytes))
        f |= OF;
    if ((a ^ r) & 0x10)
        f |= AF;
    *rflags = merge(*rflags, LCR_FL_STATUS, f | szp(r, bytes));
    return r;
}

uint64_t lcr_alu_shift(enum lcr_shop op, unsigned bytes, uint64_t a,
                       unsigned count, uint64_t *rflags)
{
    unsigned bits = bytes * 8;
    uint64_t m = lcr_mask(bytes), s = lcr_sign(bytes);
    uint64_t r, f = *rflags, cf;
    unsigned c = count & (bytes == 8 ? 0x3f : 0x1f);

    a &= m;
    if (c == 0)
        return a;   /* no flags change (SDM: "count is 0, flags unaffected") */

    switch (op) {
    case LCR_ROL: {
        unsigned k = c % bits;
        r = k ? ((a << k) | (a >> (bits - k))) & m : a;
        cf = r & 1;
        f = merge(f, CF, cf ? CF : 0);
        /* OF defined for a count of 1 only; computed the same way for
         * other counts (undefined there). */
        f = merge(f, OF, (((r & s) ? 1 : 0) ^ cf) ? OF : 0);
        break;
    }
    case LCR_ROR: {
        unsigned k = c % bits;
        r = k ? ((a >> k) | (a << (bits - k))) & m : a;
        cf = (r & s) ? 1 : 0;
        f = merge(f, CF, cf ? CF : 0);
        f = merge(f, OF, (cf ^ ((r & (s >> 1)) ? 1 : 0)) ? OF : 0);
        break;
    }
    case LCR_RCL: {
        /* Rotate through CF: a (bits+1)-bit rotation. */
        unsigned k = bytes == 1 ? c % 9 : bytes == 2 ? c % 17 : c;
        cf = (f & CF) ? 1 : 0;
        r = a;
        for (unsigned i = 0; i < k; i++) {
            uint64_t out = (r & s) ? 1 : 0;
            r = ((r << 1) | cf) & m;
            cf = out;
        }
        f = merge(f, CF, cf ? CF : 0);
        f = merge(f, OF, (((r & s) ? 1 : 0) ^ cf) ? OF : 0);
        break;
    }
    case LCR_RCR: {
        unsigned k = bytes == 1 ? c % 9 : bytes == 2 ? c % 17 : c;
        cf = (f & CF) ? 1 : 0;
        /* OF for count 1 is MSB(dest) XOR CF before the rotation. */
        f = merge(f, OF, (((a & s) ? 1 : 0) ^ cf) ? OF : 0);
        r = a;
        for (unsigned i = 0; i < k; i++) {
            uint64_t out = r & 1;
            r = (r >> 1) | (cf ? s : 0);
            cf = out;
        }
        f = merge(f, CF, cf ? CF : 0);
        break;
    }
    case LCR_SHL:
        if (c < 64) {
            r = (a << c) & m;
            cf = c <= bits ? (a >> (bits - c)) & 1 : 0;
        } else {
            r = 0;
            cf = 0;
        }
        f = merge(f, LCR_FL_STATUS, szp(r, bytes) | (cf ? CF : 0) |
                  ((((r & s) ? 1 : 0) ^ cf) ? OF : 0));
        break;
    case LCR_SHR:
        r = c < 64 ? a >> c : 0;
        cf = c <= 64 ? (a >> (c - 1)) & 1 : 0;
        f = merge(f, LCR_FL_STATUS, szp(r, bytes) | (cf ? CF : 0) |
                  ((a & s) ? OF : 0));
        break;
    case LCR_SAR:
    default: {
        int64_t sa = (int64_t)lcr_sext(a, bytes);
        unsigned k = c > 63 ? 63 : c;
        r = (uint64_t)(sa >> k) & m;
        cf = (uint64_t)(sa >> (c - 1 > 63 ? 63 : c - 1)) & 1;
        f = merge(f, LCR_FL_STATUS, szp(r, bytes) | (cf ? CF : 0));
        break;
    }
    }
    *rflags = f;
    return r;
}

void lcr_alu_mul(unsigned bytes, uint64_t a, uint64_t b, uint64_t *lo,
                 uint64_t *hi, uint64_t *rflags)
{
    uint64_t m = lcr_mask(bytes), f;
    unsigned __int128 p = (unsigned __int128)(a & m) * (b & m);

    *lo = (uint64_t)p & m;
    *hi = bytes == 8 ? (uint64_t)(p >> 64) : (uint64_t)(p >> (bytes * 8)) & m;
    f = szp(*lo, bytes);
    if (*hi)
        f |= CF | OF;
    *rflags = merge(*rflags, LCR_FL_STATUS, f);
}

void lcr_alu_imul(unsigned bytes, uint64_t a, uint64_t b, uint64_t *lo,
                  uint64_t *hi, uint64_t *rflags)
{
    uint64_t m = lcr_mask(bytes), f;
    __int128 p = (__int128)(int64_t)lcr_sext(a, bytes) *
                 (__int128)(int64_t)lcr_sext(b, bytes);

    *lo = (uint64_t)p & m;
    *hi = bytes == 8 ? (uint64_t)((unsigned __int128)p >> 64)
                     : (uint64_t)(p >> (bytes * 8)) & m;
    f = szp(*lo, bytes);
    /* CF = OF = 1 when the product does not fit the low half signed. */
    if ((__int128)(int64_t)lcr_sext(*lo, bytes) != p)
        f |= CF | OF;
    *rflags = merge(*rflags, LCR_FL_STATUS, f);
}

int lcr_cond(unsigned cc, uint64_t fl)
{
    int r;

    switch (cc >> 1) {
    case 0: r = (fl & OF) != 0; break;                          /* O */
    case 1: r = (fl & CF) != 0; break;                          /* B */
    case 2: r = (fl & ZF) != 0; break;                          /* Z */
    case 3: r = (fl & (CF | ZF)) != 0; break;                   /* BE */
    case 4: r = (fl & SF) != 0; break;                          /* S */
    case 5: r = (fl & PF) != 0; break;                          /* P */
    case 6: r = !(fl & SF) != !(fl & OF); break;                /* L */
    default: r = (fl & ZF) || (!(fl & SF) != !(fl & OF)); break; /* LE */
    }
    return (cc & 1) ? !r : r;
}
