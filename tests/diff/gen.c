/* SPDX-License-Identifier: MIT */
/*
 * tests/diff/gen.c: random instruction sequences, encoded with the Zydis
 * encoder, for the operations the runtime claims (optable.c EXEC rows).
 *
 * A sequence is a list of *groups*. A group is one tested instruction,
 * preceded by the helper instructions it needs: MOVs that load the base
 * and index registers of a memory operand so that its effective address
 * lands where the generator wants it (RAM, the MMIO page, across a page
 * boundary), a flag-defining CMP/TEST before an instruction that reads a
 * flag the generator cannot prove defined, a CLD/STD before a string
 * instruction. Branches are forward only and always target the start of
 * a group, so that every memory operand's helpers run before it. The
 * helpers are tested instructions too (MOV, CMP, TEST, CLD, STD).
 *
 * The generator tracks statically, over all paths, which status flags may
 * be undefined (SDM "Flags Affected") and whether DF is known; see
 * flag_effect() in common.c.
 *
 * Every instruction is decoded with lc_decode() before it is kept; one
 * that the decoder classes as a terminator (or as another operation) is
 * dropped and counted in gen_skipped.
 */
#include <stdlib.h>
#include <string.h>

#include <Zydis/Zydis.h>

#include "../../decoder/insn.h"
#include "diff.h"

uint64_t gen_cov[DM_COUNT][LC_OP_COUNT_][4];
uint64_t gen_skipped[DM_COUNT][LC_OP_COUNT_];

/* ---- registers ----------------------------------------------------------- */

static const ZydisRegister R8L[16] = {
    ZYDIS_REGISTER_AL, ZYDIS_REGISTER_CL, ZYDIS_REGISTER_DL, ZYDIS_REGISTER_BL,
    ZYDIS_REGISTER_SPL, ZYDIS_REGISTER_BPL, ZYDIS_REGISTER_SIL, ZYDIS_REGISTER_DIL,
    ZYDIS_REGISTER_R8B, ZYDIS_REGISTER_R9B, ZYDIS_REGISTER_R10B, ZYDIS_REGISTER_R11B,
    ZYDIS_REGISTER_R12B, ZYDIS_REGISTER_R13B, ZYDIS_REGISTER_R14B, ZYDIS_REGISTER_R15B,
};
static const ZydisRegister R8H[4] = {
    ZYDIS_REGISTER_AH, ZYDIS_REGISTER_CH, ZYDIS_REGISTER_DH, ZYDIS_REGISTER_BH,
};
static const ZydisRegister R16[16] = {
    ZYDIS_REGISTER_AX, ZYDIS_REGISTER_CX, ZYDIS_REGISTER_DX, ZYDIS_REGISTER_BX,
    ZYDIS_REGISTER_SP, ZYDIS_REGISTER_BP, ZYDIS_REGISTER_SI, ZYDIS_REGISTER_DI,
    ZYDIS_REGISTER_R8W, ZYDIS_REGISTER_R9W, ZYDIS_REGISTER_R10W, ZYDIS_REGISTER_R11W,
    ZYDIS_REGISTER_R12W, ZYDIS_REGISTER_R13W, ZYDIS_REGISTER_R14W, ZYDIS_REGISTER_R15W,
};
static const ZydisRegister R32[16] = {
    ZYDIS_REGISTER_EAX, ZYDIS_REGISTER_ECX, ZYDIS_REGISTER_EDX, ZYDIS_REGISTER_EBX,
    ZYDIS_REGISTER_ESP, ZYDIS_REGISTER_EBP, ZYDIS_REGISTER_ESI, ZYDIS_REGISTER_EDI,
    ZYDIS_REGISTER_R8D, ZYDIS_REGISTER_R9D, ZYDIS_REGISTER_R10D, ZYDIS_REGISTER_R11D,
    ZYDIS_REGISTER_R12D, ZYDIS_REGISTER_R13D, ZYDIS_REGISTER_R14D, ZYDIS_REGISTER_R15D,
};
static const ZydisRegister R64[16] = {
    ZYDIS_REGISTER_RAX, ZYDIS_REGISTER_RCX, ZYDIS_REGISTER_RDX, ZYDIS_REGISTER_RBX,
    ZYDIS_REGISTER_RSP, ZYDIS_REGISTER_RBP, ZYDIS_REGISTER_RSI, ZYDIS_REGISTER_RDI,
    ZYDIS_REGISTER_R8, ZYDIS_REGISTER_R9, ZYDIS_REGISTER_R10, ZYDIS_REGISTER_R11,
    ZYDIS_REGISTER_R12, ZYDIS_REGISTER_R13, ZYDIS_REGISTER_R14, ZYDIS_REGISTER_R15,
};

static ZydisRegister gpr(unsigned bits, unsigned num)
{
    switch (bits) {
    case 8: return R8L[num & 15];
    case 16: return R16[num & 15];
    case 32: return R32[num & 15];
    default: return R64[num & 15];
    }
}

/* ---- generator context --------------------------------------------------- */

typedef struct region {
    uint64_t la, len;
    int mmio;
} region;

typedef struct pend {
    int      target;       /* group index */
    uint32_t undef;
    int      df;
    uint16_t ins;          /* index of the branch in c->insn */
    uint8_t  short_only;
    ZydisEncoderRequest rq;
} pend;

#define MAX_PEND 32
#define MAX_GROUP_BYTES 56

typedef struct gctx {
    dcase   *c;
    int      mode;
    const gen_opts *o;
    uint64_t r[4];
    unsigned abits;        /* default address size */
    unsigned nregs;        /* 8 or 16 */
    uint32_t undef;        /* status flags possibly undefined here */
    int      df;           /* 0, 1, or -1 unknown */
    pend     pend[MAX_PEND];
    int      npend;
    int      group;
    region   reg[32];
    int      nreg;
    /* metadata for the next emit */
    int      cnt_kind;
    uint8_t  cnt_imm;
    int      setup;
    /* engine mode: gen_insn.flags of the next non-helper emit, and a
     * target pick_target() must return */
    uint8_t  next_flags;
    unsigned want_abits;   /* address size the next memory operand must
                            * be encoded with, or 0 */
    int      force;
    uint64_t force_la;
    uint64_t last_t;       /* linear target of the last mk_mem() */
    /* the segment registers as the code at the current point will find
     * them (segment loads change them: t_sreg) */
    lc_segment cur[6];
    int      force_seg;    /* mk_mem: this segment + 1, or 0 */
    uint64_t stack_top;    /* engine mode: the stack's top when it lies in
                            * the code page (linear), or 0 */
    int      allow_term;   /* the next emit may be a terminator (GI_STOP) */
    int      cluster;      /* gen_cluster_case (engine mode) */
} gctx;

static uint64_t rnd(gctx *g) { return xo_next(g->r); }

/* Triage knob (not for the smoke test): LCDIFF_AVOID=shift0,a32cnt keeps
 * the generator away from known runtime bugs so that others show. */
static int avoid(const char *what)
{
    const char *e = getenv("LCDIFF_AVOID");
    return e && strstr(e, what) != NULL;
}
static unsigned rn(gctx *g, unsigned n) { return (unsigned)(rnd(g) % n); }
static int chance(gctx *g, unsigned pct) { return rn(g, 100) < pct; }

static ZydisMachineMode zmode(int mode)
{
    switch (mode) {
    case DM_REAL: return ZYDIS_MACHINE_MODE_REAL_16;
    case DM_LONG64: return ZYDIS_MACHINE_MODE_LONG_64;
    default: return ZYDIS_MACHINE_MODE_LEGACY_32;
    }
}

static int is64(const gctx *g) { return g->mode == DM_LONG64; }

static uint64_t mask_bits(unsigned bits)
{
    return bits >= 64 ? ~0ull : (1ull << bits) - 1;
}

/* ---- emitting --------------------------------------------------------------- */

static void req_init(ZydisEncoderRequest *rq, ZydisMnemonic m)
{
    memset(rq, 0, sizeof *rq);
    rq->mnemonic = m;
}

static void op_reg(ZydisEncoderRequest *rq, ZydisRegister r)
{
    ZydisEncoderOperand *o = &rq->operands[rq->operand_count++];
    o->type = ZYDIS_OPERAND_TYPE_REGISTER;
    o->reg.value = r;
}

static void op_imm(ZydisEncoderRequest *rq, uint64_t v)
{
    ZydisEncoderOperand *o = &rq->operands[rq->operand_count++];
    o->type = ZYDIS_OPERAND_TYPE_IMMEDIATE;
    o->imm.u = v;
}

/* A memory operand as mk_mem() built it. */
typedef struct memspec {
    ZydisEncoderOperand op;
    ZydisInstructionAttributes pfx;
    ZydisAddressSizeHint ah;
    int      riprel;
    uint64_t ea;
    unsigned abits;
} memspec;

static void op_mem(ZydisEncoderRequest *rq, const memspec *m)
{
    rq->operands[rq->operand_count++] = m->op;
    rq->prefixes |= m->pfx;
    if (m->ah)
        rq->address_size_hint = m->ah;
}

static const memspec *g_riprel;   /* set while emitting a RIP-relative op */

static int encode(gctx *g, ZydisEncoderRequest *rq, uint8_t *buf, size_t *len)
{
    ZyanUSize n = ZYDIS_MAX_INSTRUCTION_LENGTH;

    rq->machine_mode = zmode(g->mode);
    if (ZYAN_FAILED(ZydisEncoderEncodeInstruction(rq, buf, &n)))
        return -1;
    *len = n;
    return 0;
}

static void apply_effects(gctx *g, unsigned op, unsigned bits)
{
    uint32_t def, und;
    int count = -1;

    if (g->cnt_kind == CNT_IMM)
        count = g->cnt_imm & (bits == 64 ? 0x3f : 0x1f);
    else if (g->cnt_kind == CNT_NONE)
        count = 1;
    flag_effect(op, bits, count, &def, &und);
    if (g->cnt_kind == CNT_CL)
        g->undef |= und;
    else
        g->undef = (g->undef & ~def) | und;
    if (op == LC_OP_CLD)
        g->df = 0;
    else if (op == LC_OP_STD)
        g->df = 1;
}

static int is_legacy_prefix(uint8_t b)
{
    switch (b) {
    case 0x66: case 0x67: case 0xf2: case 0xf3: case 0xf0:
    case 0x2e: case 0x36: case 0x3e: case 0x26: case 0x64: case 0x65:
        return 1;
    default:
        return 0;
    }
}

static int has_high8(const ZydisEncoderRequest *rq)
{
    for (unsigned i = 0; i < rq->operand_count; i++)
        if (rq->operands[i].type == ZYDIS_OPERAND_TYPE_REGISTER) {
            ZydisRegister r = rq->operands[i].reg.value;
            if (r == ZYDIS_REGISTER_AH || r == ZYDIS_REGISTER_CH ||
                r == ZYDIS_REGISTER_DH || r == ZYDIS_REGISTER_BH)
                return 1;
        }
    return 0;
}

/* Prefixes Zydis never emits on its own, that must not change what the
 * instruction does: in 64-bit mode an empty REX (40) where there is none,
 * or a 66 in front of a REX.W instruction (REX.W wins, SDM vol. 2 2.2.1.2).
 * Kept only if the decoder agrees it is the same operation and size. */
static void mutate_prefix(gctx *g, const ZydisEncoderRequest *rq,
                          uint8_t *buf, size_t *len, lcd_insn *li)
{
    uint8_t nb[ZYDIS_MAX_INSTRUCTION_LENGTH + 1];
    size_t p = 0, n = *len;
    lcd_insn ni;

    if (!is64(g) || n + 1 > ZYDIS_MAX_INSTRUCTION_LENGTH || has_high8(rq))
        return;
    while (p < n && is_legacy_prefix(buf[p]))
        p++;
    if (p >= n)
        return;
    if ((buf[p] & 0xf0) == 0x40) {
        if (!(buf[p] & 0x08) || memchr(buf, 0x66, p))
            return;
        nb[0] = 0x66;               /* 66 REX.W ... */
        memcpy(nb + 1, buf, n);
    } else {
        memcpy(nb, buf, p);         /* legacy prefixes, 40, opcode */
        nb[p] = 0x40;
        memcpy(nb + p + 1, buf + p, n - p);
    }
    if (lcd_decode(dmode_cpu_mode(g->mode), nb, n + 1, &ni) != LC_OK ||
        ni.info.length != n + 1 || ni.info.op != li->info.op ||
        ni.info.operand_bits != li->info.operand_bits ||
        ni.info.exit_class != li->info.exit_class ||
        ni.mem.present != li->mem.present ||
        (ni.mem.present && ni.mem.disp != li->mem.disp))
        return;
    memcpy(buf, nb, n + 1);
    *len = n + 1;
    *li = ni;
}

/* Encode `rq`, check it with the project's decoder, append it. Returns the
 * index of the instruction, or -1. */
static int emit(gctx *g, ZydisEncoderRequest *rq, unsigned want_op)
{
    dcase *c = g->c;
    uint8_t buf[ZYDIS_MAX_INSTRUCTION_LENGTH];
    size_t len;
    lc_insn_info info;
    int cnt_kind = g->cnt_kind;

    g->cnt_kind = CNT_NONE;
    if (encode(g, rq, buf, &len) < 0)
        return -1;
    if (g_riprel) {
        const memspec *m = g_riprel;
        uint64_t next = c->code_la + c->code_len + len;
        uint64_t d = m->ea - next;
        int64_t sd = (int64_t)d;
        if (m->abits == 32)
            sd = (int32_t)(uint32_t)d;
        else if (sd != (int32_t)sd)
            return -1;
        for (unsigned i = 0; i < rq->operand_count; i++)
            if (rq->operands[i].type == ZYDIS_OPERAND_TYPE_MEMORY)
                rq->operands[i].mem.displacement = sd;
        size_t len2;
        if (encode(g, rq, buf, &len2) < 0 || len2 != len)
            return -1;
    }
    if (c->code_len + len > CODE_MAX - 16 || c->ninsns >= GEN_MAX_INSNS - 2)
        return -1;
    lcd_insn li;
    if (lcd_decode(dmode_cpu_mode(g->mode), buf, len, &li) != LC_OK ||
        li.info.length != len)
        return -1;
    info = li.info;
    if (g->want_abits && li.mem.present && !g->setup) {
        unsigned want = g->want_abits;
        g->want_abits = 0;
        if (li.mem.addr_bytes * 8u != want)
            return -1;
    }
    /* the encoder must have kept the displacement we asked for (Zydis 4.0
     * shortens a disp32 to disp8 by its low byte in 16-bit code with a 67
     * prefix) */
    for (unsigned i = 0; i < rq->operand_count; i++) {
        const ZydisEncoderOperand *o = &rq->operands[i];
        if (o->type != ZYDIS_OPERAND_TYPE_MEMORY || !li.mem.present)
            continue;
        uint64_t am = mask_bits(li.mem.addr_bytes * 8u);
        if (((uint64_t)o->mem.displacement & am) != ((uint64_t)li.mem.disp & am))
            return -1;
    }
    /* NOP with an operand: only the 0F 1F /0 form (Zydis may pick the
     * 0F 18..0F 1E hint space, which QEMU partly treats as #UD) */
    if (want_op == LC_OP_NOP && len > 1 && !memmem(buf, len, "\x0f\x1f", 2))
        return -1;
    if ((info.exit_class == LC_CLASS_TERMINATOR && !g->allow_term) ||
        (want_op && info.op != want_op)) {
        gen_skipped[g->mode][want_op ? want_op : info.op]++;
        return -1;
    }
    if (!g_riprel && !(lcd_op_table[info.op].flags & LCD_F_CFLOW) &&
        chance(g, 10))
        mutate_prefix(g, rq, buf, &len, &li);
    info = li.info;
    gen_insn *gi = &c->insn[c->ninsns];
    memset(gi, 0, sizeof *gi);
    gi->off = (uint16_t)c->code_len;
    gi->len = (uint8_t)len;
    gi->op = (uint8_t)info.op;
    gi->bits = info.operand_bits;
    gi->cnt_kind = (uint8_t)cnt_kind;
    gi->cnt_imm = g->cnt_imm;
    gi->setup = (uint8_t)g->setup;
    if (!g->setup) {
        gi->flags = g->next_flags;
        g->next_flags = 0;
    }
    memcpy(c->code + c->code_len, buf, len);
    c->code_len += (uint32_t)len;
    g->cnt_kind = cnt_kind;
    apply_effects(g, info.op, info.operand_bits);
    g->cnt_kind = CNT_NONE;
    return (int)c->ninsns++;
}

/* MOV reg, imm as a helper. */
static int emit_setup(gctx *g, ZydisRegister r, uint64_t v)
{
    ZydisEncoderRequest rq;
    req_init(&rq, ZYDIS_MNEMONIC_MOV);
    op_reg(&rq, r);
    op_imm(&rq, v);
    g->setup = 1;
    int k = emit(g, &rq, LC_OP_MOV);
    g->setup = 0;
    return k;
}

/* ---- register choice ------------------------------------------------------ */

/* A register of `bits` to write: never rSP (the stack must stay valid). */
static ZydisRegister dst_reg(gctx *g, unsigned bits)
{
    for (;;) {
        if (bits == 8 && (!is64(g) || chance(g, 20)) && chance(g, 35))
            return R8H[rn(g, 4)];
        unsigned n = rn(g, g->nregs);
        if (n == LC_RSP)
            continue;
        if (bits == 8 && !is64(g) && n >= 4)
            return R8H[n - 4];      /* no REX: 4..7 are AH..BH */
        return gpr(bits, n);
    }
}

/* A register to read: rSP allowed now and then. */
static ZydisRegister src_reg(gctx *g, unsigned bits)
{
    if (bits != 8 && chance(g, 4))
        return gpr(bits, LC_RSP);
    return dst_reg(g, bits);
}

static unsigned pick_width(gctx *g, int allow8)
{
    unsigned w[4] = { 8, 16, 32, 64 };
    unsigned lo = allow8 ? 0 : 1, hi = is64(g) ? 4 : 3;
    return w[lo + rn(g, hi - lo)];
}

static uint64_t rand_imm(gctx *g, unsigned bits)
{
    uint64_t v = rnd(g);
    switch (rn(g, 4)) {
    case 0: v = (uint64_t)(int64_t)(int8_t)v; break;
    case 1: v &= 0xff; break;
    default: break;
    }
    if (bits == 64)   /* imm32 sign-extended, except MOV r64, imm64 */
        v = (uint64_t)(int64_t)(int32_t)v;
    return v & mask_bits(bits);
}

/* ---- memory operands ------------------------------------------------------ */

static void add_region(gctx *g, uint64_t la, uint64_t len, int mmio)
{
    region *r = &g->reg[g->nreg++];
    r->la = la;
    r->len = len;
    r->mmio = mmio;
}

static void build_regions(gctx *g)
{
    int paging = g->mode == DM_PAE || g->mode == DM_LONG64;
    int native = g->o->native && g->mode == DM_LONG64;

    g->nreg = 0;
    if (!native) {
        add_region(g, DATA0_PA, DATA0_END - DATA0_PA, 0);
        add_region(g, MMIO_PA, MMIO_SIZE, 1);
        add_region(g, DATA1_PA, DATA1_END - DATA1_PA, 0);
    }
    if (paging) {
        add_region(g, WIN_LA, 0x10000, 0);
        if (!native)
            add_region(g, WIN_MMIO_LA, MMIO_SIZE, 1);
        add_region(g, WIN_DATA0_LA, DATA0_END - DATA0_PA, 0);
        add_region(g, BIG_LA + DATA0_PA, DATA0_END - DATA0_PA, 0);
        if (!native)
            add_region(g, BIG_LA + MMIO_PA, MMIO_SIZE, 1);
        add_region(g, BIG_LA + DATA1_PA, DATA1_END - DATA1_PA, 0);
    }
    if (g->mode == DM_LONG64 && !native) {
        int n = g->nreg;
        for (int i = 0; i < n; i++)
            add_region(g, HIGH_ALIAS + g->reg[i].la, g->reg[i].len,
                       g->reg[i].mmio);
    }
}

enum { MK_READ = 1, MK_WRITE = 2, MK_AGEN = 4, MK_NOMMIO = 8,
       MK_MMIO = 16,      /* engine mode: an MMIO target only */
       MK_ABS = 32,       /* engine mode: [disp] only, no helper MOVs */
       MK_ALIGNED = 64 }; /* naturally aligned: a locked access, whose
                           * split form the runtime leaves to the CPU */

/* A target linear address for an access of `bytes` (`span` bytes around
 * it stay in the same region, for string instructions). */
static uint64_t pick_target(gctx *g, unsigned bytes, unsigned span, int flags)
{
    if (g->force)
        return g->force_la;
    for (int tries = 0; tries < 64; tries++) {
        region *r = &g->reg[rn(g, (unsigned)g->nreg)];
        unsigned kind = rn(g, 100);
        if ((flags & MK_MMIO) && !r->mmio)
            continue;
        if (r->mmio) {
            if ((flags & MK_NOMMIO) || kind >= 40)
                continue;
            /* naturally aligned: see UNICORN_BUGS.md (unaligned MMIO) */
            uint64_t off = (uint64_t)rn(g, MMIO_SIZE) & ~(uint64_t)(bytes - 1);
            if (off < span || off + bytes + span > r->len)
                continue;
            return r->la + off;
        }
        if (bytes > 1 && kind < 35 && r->len >= 0x2000 && span == 0 &&
            !(flags & MK_ALIGNED)) {
            /* across a page boundary inside the region */
            uint64_t pages = r->len / 0x1000;
            uint64_t b = r->la + (1 + rn(g, (unsigned)(pages - 1))) * 0x1000;
            return b - 1 - rn(g, bytes - 1);
        }
        uint64_t lo = span, hi = r->len - bytes - span;
        uint64_t off = lo + rnd(g) % (hi - lo + 1);
        if (chance(g, 30) || (flags & MK_ALIGNED))
            off &= ~(uint64_t)(bytes - 1);
        return r->la + off;
    }
    /* fall back: middle of the first RAM region */
    for (int i = 0; i < g->nreg; i++)
        if (!g->reg[i].mmio)
            return g->reg[i].la + 0x800;
    return g->reg[0].la + 0x800;
}

static const ZydisInstructionAttributes seg_attr[6] = {
    ZYDIS_ATTRIB_HAS_SEGMENT_ES, ZYDIS_ATTRIB_HAS_SEGMENT_CS,
    ZYDIS_ATTRIB_HAS_SEGMENT_SS, ZYDIS_ATTRIB_HAS_SEGMENT_DS,
    ZYDIS_ATTRIB_HAS_SEGMENT_FS, ZYDIS_ATTRIB_HAS_SEGMENT_GS,
};

/* Effective address for linear `t` in segment `s` with `abits`
 * addressing, if the access is architecturally fine (no limit fault, no
 * wrap we do not want). */
static int ea_for(gctx *g, unsigned s, unsigned abits, uint64_t t,
                  unsigned bytes, uint64_t *ea)
{
    const lc_segment *sg = &g->cur[s];
    uint64_t sb = sg->base;

    /* a null segment outside 64-bit mode faults on any use */
    if (g->mode != DM_LONG64 && sg->unusable)
        return -1;
    if (g->mode == DM_LONG64) {
        if (s != LC_FS && s != LC_GS)
            sb = 0;
        uint64_t e = t - sb;
        if (abits == 32 && e > 0x100000000ull - bytes)
            return -1;
        *ea = e;
        return 0;
    }
    if (g->mode == DM_REAL) {
        if (t < sb)
            return -1;
        uint64_t e = t - sb;
        if (e + bytes - 1 > sg->limit)
            return -1;
        *ea = e;
        return 0;
    }
    uint64_t e = (t - sb) & 0xffffffffull;
    if (e + bytes - 1 > sg->limit)
        return -1;
    if (abits == 16 && e + bytes - 1 > 0xffff)
        return -1;
    *ea = e;
    return 0;
}

static unsigned pick_abits(gctx *g)
{
    if (!chance(g, 20))
        return g->abits;
    switch (g->mode) {
    case DM_REAL: return 32;
    case DM_LONG64: return 32;
    default: return 16;
    }
}

/* Address size of an instruction whose counter/pointers follow it
 * (LOOP, JCXZ, string instructions). */
static unsigned pick_abits_cnt(gctx *g)
{
    unsigned ab = pick_abits(g);
    return is64(g) && avoid("a32cnt") ? 64 : ab;
}

/* Build a memory operand of `bytes` at a random target; emits the helper
 * MOVs that load its registers. */
static int mk_mem(gctx *g, unsigned bytes, int flags, memspec *m)
{
    memset(m, 0, sizeof m[0]);
    unsigned ab = pick_abits(g);
    int native = g->o->native && is64(g);
    int base = -1, index = -1;       /* register numbers; -2 = RIP */
    unsigned scale = 1;

    m->abits = ab;
    /* engine mode: the address size asked for, always (else Zydis may
     * pick 16-bit addressing for a small absolute address) */
    if ((flags & MK_ABS) || g->force)
        g->want_abits = ab;
    if (ab != g->abits || (flags & MK_ABS) || g->force)
        m->ah = ab == 16 ? ZYDIS_ADDRESS_SIZE_HINT_16
              : ab == 32 ? ZYDIS_ADDRESS_SIZE_HINT_32
                         : ZYDIS_ADDRESS_SIZE_HINT_64;
    /* the register form */
    if (ab == 16) {
        static const int b16[3] = { -1, LC_RBX, LC_RBP };
        static const int i16[3] = { -1, LC_RSI, LC_RDI };
        base = b16[rn(g, 3)];
        index = i16[rn(g, 3)];
    } else {
        unsigned nr = ab == 64 || is64(g) ? g->nregs : 8;
        if (is64(g) && chance(g, 12) && !(flags & MK_ABS)) {
            base = -2;
        } else {
            if (chance(g, 85))
                do base = (int)rn(g, nr); while (base == LC_RSP && !(flags & MK_AGEN));
            if (chance(g, 55))
                do index = (int)rn(g, nr); while (index == LC_RSP || index == base);
            scale = 1u << rn(g, 4);
        }
    }
    if (flags & MK_ABS) {
        base = index = -1;
        scale = 1;
    }
    if (flags & MK_AGEN) {
        /* address generation only: any registers, any displacement */
        m->op.type = ZYDIS_OPERAND_TYPE_MEMORY;
        m->op.mem.size = (ZyanU16)bytes;
        m->op.mem.base = base == -2 ? (ab == 64 ? ZYDIS_REGISTER_RIP : ZYDIS_REGISTER_EIP)
                       : base >= 0 ? gpr(ab, (unsigned)base) : ZYDIS_REGISTER_NONE;
        m->op.mem.index = index >= 0 ? gpr(ab, (unsigned)index) : ZYDIS_REGISTER_NONE;
        m->op.mem.scale = index >= 0 ? (ZyanU8)(ab == 16 ? 1 : scale) : 0;
        int64_t d = (int64_t)rnd(g);
        d = chance(g, 50) ? (int8_t)d : (ab == 16 ? (int16_t)d : (int32_t)d);
        if (base < 0 && index < 0 && ab == 16)
            d = (uint16_t)d;
        m->op.mem.displacement = chance(g, 15) ? 0 : d;
        return 0;
    }
    /* the segment */
    unsigned s = LC_DS;
    if (base == LC_RBP || base == LC_RSP)
        s = LC_SS;
    int pfx = -1;
    if (chance(g, 30)) {
        unsigned o = rn(g, 6);
        if (native && (o == LC_FS || o == LC_GS))
            o = LC_DS;
        if (o == LC_CS && (flags & MK_WRITE) && g->mode != DM_REAL)
            o = LC_DS;
        pfx = (int)o;
        s = o;
    }
    if (g->force_seg) {
        s = (unsigned)g->force_seg - 1;
        pfx = (int)s;
    }
    /* the target */
    uint64_t t = 0, ea = 0;
    int ok = 0;
    for (int tries = 0; tries < 32 && !ok; tries++) {
        t = pick_target(g, bytes, 0, flags);
        ok = ea_for(g, s, ab, t, bytes, &ea) == 0;
    }
    if (!ok)
        return -1;
    m->ea = ea;
    g->last_t = t;
    if (pfx >= 0)
        m->pfx = seg_attr[pfx];
    for (int i = 0; i < g->nreg; i++)
        if (g->reg[i].mmio && t >= g->reg[i].la &&
            t < g->reg[i].la + g->reg[i].len)
            g->next_flags |= GI_MMIO;

    /* displacement and register values */
    uint64_t am = mask_bits(ab);
    int64_t disp = 0;
    switch (rn(g, 3)) {
    case 0: disp = 0; break;
    case 1: disp = (int8_t)rnd(g); break;
    default: disp = ab == 16 ? (int16_t)rnd(g) : (int32_t)rnd(g); break;
    }
    m->op.type = ZYDIS_OPERAND_TYPE_MEMORY;
    m->op.mem.size = (ZyanU16)bytes;
    if (base == -2) {
        m->riprel = 1;
        m->op.mem.base = ab == 64 ? ZYDIS_REGISTER_RIP : ZYDIS_REGISTER_EIP;
        return 0;
    }
    if (base < 0 && index < 0) {
        if (ab == 64 && (int64_t)ea != (int32_t)ea)
            return -1;
        disp = ab == 16 ? (int64_t)(uint16_t)ea
             : ab == 32 ? (int64_t)(int32_t)(uint32_t)ea : (int64_t)ea;
        if (ab == 16 && disp >= 0x8000)
            disp -= 0x10000;
        m->op.mem.displacement = disp;
        return 0;
    }
    uint64_t vb = 0, vi = 0;
    if (index >= 0) {
        if (base < 0) {
            /* [index*scale + disp32]: make ea - disp divisible by scale */
            disp = ab == 16 ? disp : (int32_t)rnd(g);
            disp += (int64_t)((ea - (uint64_t)disp) & (scale - 1));
            if (ab == 64 && disp != (int32_t)disp)
                disp -= scale;
            vi = ((ea - (uint64_t)disp) & am) / scale;
        } else {
            vi = chance(g, 70) ? rn(g, 0x1000) : rnd(g);
            vi &= am;
        }
    }
    if (base >= 0)
        vb = (ea - vi * (ab == 16 ? 1 : scale) - (uint64_t)disp) & am;
    if (ab == 16) {
        scale = 1;
        if (base == LC_RBP && index < 0 && disp == 0)
            disp = 0;   /* Zydis uses disp8 0 */
    }
    m->op.mem.base = base >= 0 ? gpr(ab, (unsigned)base) : ZYDIS_REGISTER_NONE;
    m->op.mem.index = index >= 0 ? gpr(ab, (unsigned)index) : ZYDIS_REGISTER_NONE;
    m->op.mem.scale = index >= 0 ? (ZyanU8)scale : 0;
    m->op.mem.displacement = disp;
    /* helpers: the register width used is the address width (in 64-bit
     * mode a 32-bit MOV zero-extends, which is what 32-bit addressing
     * reads) */
    int first_index = chance(g, 50);
    for (int k = 0; k < 2; k++) {
        int which = (k == 0) == first_index;   /* 1: index */
        if (which && index >= 0 &&
            emit_setup(g, gpr(ab, (unsigned)index), vi) < 0)
            return -1;
        if (!which && base >= 0 &&
            emit_setup(g, gpr(ab, (unsigned)base), vb) < 0)
            return -1;
    }
    return 0;
}

/* emit with the RIP-relative fixup when `m` needs it */
static int emit_m(gctx *g, ZydisEncoderRequest *rq, unsigned op,
                  const memspec *m)
{
    g_riprel = m && m->riprel ? m : NULL;
    int k = emit(g, rq, op);
    g_riprel = NULL;
    return k;
}

/* ---- flag and DF preconditions ------------------------------------------- */

static int ensure_flags(gctx *g, uint32_t need)
{
    if (!(g->undef & need))
        return 0;
    ZydisEncoderRequest rq;
    unsigned w = pick_width(g, 1);
    if (chance(g, 50)) {
        req_init(&rq, ZYDIS_MNEMONIC_CMP);
        op_reg(&rq, src_reg(g, w));
        if (chance(g, 50))
            op_reg(&rq, src_reg(g, w));
        else
            op_imm(&rq, rand_imm(g, w));
        return emit(g, &rq, LC_OP_CMP) < 0 ? -1 : 0;
    }
    req_init(&rq, ZYDIS_MNEMONIC_TEST);
    op_reg(&rq, src_reg(g, w));
    op_reg(&rq, src_reg(g, w));
    return emit(g, &rq, LC_OP_TEST) < 0 ? -1 : 0;
}

static int ensure_df(gctx *g)
{
    if (g->df >= 0 && !chance(g, 30))
        return 0;
    ZydisEncoderRequest rq;
    int std = chance(g, 40);
    req_init(&rq, std ? ZYDIS_MNEMONIC_STD : ZYDIS_MNEMONIC_CLD);
    return emit(g, &rq, std ? LC_OP_STD : LC_OP_CLD) < 0 ? -1 : 0;
}

/* ---- templates ------------------------------------------------------------ */

static const ZydisMnemonic cc_jcc[16] = {
    ZYDIS_MNEMONIC_JO, ZYDIS_MNEMONIC_JNO, ZYDIS_MNEMONIC_JB, ZYDIS_MNEMONIC_JNB,
    ZYDIS_MNEMONIC_JZ, ZYDIS_MNEMONIC_JNZ, ZYDIS_MNEMONIC_JBE, ZYDIS_MNEMONIC_JNBE,
    ZYDIS_MNEMONIC_JS, ZYDIS_MNEMONIC_JNS, ZYDIS_MNEMONIC_JP, ZYDIS_MNEMONIC_JNP,
    ZYDIS_MNEMONIC_JL, ZYDIS_MNEMONIC_JNL, ZYDIS_MNEMONIC_JLE, ZYDIS_MNEMONIC_JNLE,
};
static const ZydisMnemonic cc_cmov[16] = {
    ZYDIS_MNEMONIC_CMOVO, ZYDIS_MNEMONIC_CMOVNO, ZYDIS_MNEMONIC_CMOVB, ZYDIS_MNEMONIC_CMOVNB,
    ZYDIS_MNEMONIC_CMOVZ, ZYDIS_MNEMONIC_CMOVNZ, ZYDIS_MNEMONIC_CMOVBE, ZYDIS_MNEMONIC_CMOVNBE,
    ZYDIS_MNEMONIC_CMOVS, ZYDIS_MNEMONIC_CMOVNS, ZYDIS_MNEMONIC_CMOVP, ZYDIS_MNEMONIC_CMOVNP,
    ZYDIS_MNEMONIC_CMOVL, ZYDIS_MNEMONIC_CMOVNL, ZYDIS_MNEMONIC_CMOVLE, ZYDIS_MNEMONIC_CMOVNLE,
};
static const ZydisMnemonic cc_set[16] = {
    ZYDIS_MNEMONIC_SETO, ZYDIS_MNEMONIC_SETNO, ZYDIS_MNEMONIC_SETB, ZYDIS_MNEMONIC_SETNB,
    ZYDIS_MNEMONIC_SETZ, ZYDIS_MNEMONIC_SETNZ, ZYDIS_MNEMONIC_SETBE, ZYDIS_MNEMONIC_SETNBE,
    ZYDIS_MNEMONIC_SETS, ZYDIS_MNEMONIC_SETNS, ZYDIS_MNEMONIC_SETP, ZYDIS_MNEMONIC_SETNP,
    ZYDIS_MNEMONIC_SETL, ZYDIS_MNEMONIC_SETNL, ZYDIS_MNEMONIC_SETLE, ZYDIS_MNEMONIC_SETNLE,
};

/* r/m operand: register or memory. */
static int rm_operand(gctx *g, ZydisEncoderRequest *rq, unsigned bits,
                      int flags, int is_dst, memspec *m, int *used_mem)
{
    *used_mem = 0;
    if (chance(g, 50)) {
        op_reg(rq, is_dst ? dst_reg(g, bits) : src_reg(g, bits));
        return 0;
    }
    if (mk_mem(g, bits / 8, flags, m) < 0)
        return -1;
    op_mem(rq, m);
    *used_mem = 1;
    return 0;
}

static int t_alu(gctx *g)
{
    static const struct { ZydisMnemonic m; unsigned op; } ops[8] = {
        { ZYDIS_MNEMONIC_ADD, LC_OP_ADD }, { ZYDIS_MNEMONIC_OR, LC_OP_OR },
        { ZYDIS_MNEMONIC_ADC, LC_OP_ADC }, { ZYDIS_MNEMONIC_SBB, LC_OP_SBB },
        { ZYDIS_MNEMONIC_AND, LC_OP_AND }, { ZYDIS_MNEMONIC_SUB, LC_OP_SUB },
        { ZYDIS_MNEMONIC_XOR, LC_OP_XOR }, { ZYDIS_MNEMONIC_CMP, LC_OP_CMP },
    };
    unsigned k = rn(g, 8), w = pick_width(g, 1);
    int rmw = ops[k].op != LC_OP_CMP;
    ZydisEncoderRequest rq;
    memspec m;
    int um = 0;

    if (ensure_flags(g, flag_uses(ops[k].op, 0)) < 0)
        return -1;
    req_init(&rq, ops[k].m);
    switch (rn(g, 5)) {
    case 0: /* r/m, r */
        if (rm_operand(g, &rq, w, MK_READ | (rmw ? MK_WRITE : 0), 1, &m, &um) < 0)
            return -1;
        op_reg(&rq, src_reg(g, w));
        break;
    case 1: /* r, r/m */
        op_reg(&rq, rmw ? dst_reg(g, w) : src_reg(g, w));
        if (rm_operand(g, &rq, w, MK_READ, 0, &m, &um) < 0)
            return -1;
        break;
    case 2: /* acc, imm */
        op_reg(&rq, gpr(w, 0));
        op_imm(&rq, rand_imm(g, w));
        break;
    default: /* r/m, imm */
        if (rm_operand(g, &rq, w, MK_READ | (rmw ? MK_WRITE : 0), 1, &m, &um) < 0)
            return -1;
        op_imm(&rq, rand_imm(g, w));
        break;
    }
    return emit_m(g, &rq, ops[k].op, um ? &m : NULL) < 0 ? -1 : 0;
}

static int t_test(gctx *g)
{
    unsigned w = pick_width(g, 1);
    ZydisEncoderRequest rq;
    memspec m;
    int um = 0;

    req_init(&rq, ZYDIS_MNEMONIC_TEST);
    if (rm_operand(g, &rq, w, MK_READ, 0, &m, &um) < 0)
        return -1;
    if (chance(g, 50))
        op_reg(&rq, src_reg(g, w));
    else
        op_imm(&rq, rand_imm(g, w));
    return emit_m(g, &rq, LC_OP_TEST, um ? &m : NULL) < 0 ? -1 : 0;
}

static int t_unary(gctx *g)
{
    static const struct { ZydisMnemonic m; unsigned op; } ops[4] = {
        { ZYDIS_MNEMONIC_INC, LC_OP_INC }, { ZYDIS_MNEMONIC_DEC, LC_OP_DEC },
        { ZYDIS_MNEMONIC_NEG, LC_OP_NEG }, { ZYDIS_MNEMONIC_NOT, LC_OP_NOT },
    };
    unsigned k = rn(g, 4), w = pick_width(g, 1);
    ZydisEncoderRequest rq;
    memspec m;
    int um = 0;

    req_init(&rq, ops[k].m);
    if (rm_operand(g, &rq, w, MK_READ | MK_WRITE, 1, &m, &um) < 0)
        return -1;
    return emit_m(g, &rq, ops[k].op, um ? &m : NULL) < 0 ? -1 : 0;
}

static int t_shift(gctx *g)
{
    static const struct { ZydisMnemonic m; unsigned op; } ops[7] = {
        { ZYDIS_MNEMONIC_ROL, LC_OP_ROL }, { ZYDIS_MNEMONIC_ROR, LC_OP_ROR },
        { ZYDIS_MNEMONIC_RCL, LC_OP_RCL }, { ZYDIS_MNEMONIC_RCR, LC_OP_RCR },
        { ZYDIS_MNEMONIC_SHL, LC_OP_SHL }, { ZYDIS_MNEMONIC_SHR, LC_OP_SHR },
        { ZYDIS_MNEMONIC_SAR, LC_OP_SAR },
    };
    unsigned k = rn(g, 7), w = pick_width(g, 1);
    ZydisEncoderRequest rq;
    memspec m;
    int um = 0;

    if (ensure_flags(g, flag_uses(ops[k].op, 0)) < 0)
        return -1;
    unsigned form = rn(g, 3);
    if (form == 1 && chance(g, 50)) {
        /* a count of interest in CL */
        static const uint8_t cnts[] = { 0, 1, 2, 7, 8, 9, 15, 16, 17, 31, 32,
                                        33, 63, 64, 65 };
        if (emit_setup(g, ZYDIS_REGISTER_CL, cnts[rn(g, sizeof cnts)]) < 0)
            return -1;
    }
    req_init(&rq, ops[k].m);
    if (rm_operand(g, &rq, w, MK_READ | MK_WRITE, 1, &m, &um) < 0)
        return -1;
    if (avoid("shift0") && form == 1)
        form = 2;
    switch (form) {
    case 0:
        op_imm(&rq, 1);
        g->cnt_kind = CNT_IMM;
        g->cnt_imm = 1;
        break;
    case 1:
        op_reg(&rq, ZYDIS_REGISTER_CL);
        g->cnt_kind = CNT_CL;
        break;
    default: {
        static const uint8_t cnts[] = { 0, 2, 3, 7, 8, 9, 15, 16, 17, 31, 32,
                                        33, 63, 64, 200 };
        uint8_t c = chance(g, 50) ? cnts[rn(g, sizeof cnts)] : (uint8_t)rnd(g);
        if (avoid("shift0") && !(c & (w == 64 ? 0x3f : 0x1f)))
            c |= 1;
        op_imm(&rq, c);
        g->cnt_kind = CNT_IMM;
        g->cnt_imm = c;
        break;
    }
    }
    return emit_m(g, &rq, ops[k].op, um ? &m : NULL) < 0 ? -1 : 0;
}

static int t_mul(gctx *g)
{
    unsigned w, form = rn(g, 3);
    ZydisEncoderRequest rq;
    memspec m;
    int um = 0;

    if (form == 0) {   /* MUL / IMUL r/m */
        int s = chance(g, 50);
        w = pick_width(g, 1);
        req_init(&rq, s ? ZYDIS_MNEMONIC_IMUL : ZYDIS_MNEMONIC_MUL);
        if (rm_operand(g, &rq, w, MK_READ, 0, &m, &um) < 0)
            return -1;
        return emit_m(g, &rq, s ? LC_OP_IMUL : LC_OP_MUL, um ? &m : NULL) < 0 ? -1 : 0;
    }
    w = pick_width(g, 0);
    req_init(&rq, ZYDIS_MNEMONIC_IMUL);
    op_reg(&rq, dst_reg(g, w));
    if (rm_operand(g, &rq, w, MK_READ, 0, &m, &um) < 0)
        return -1;
    if (form == 2)
        op_imm(&rq, rand_imm(g, w));
    return emit_m(g, &rq, LC_OP_IMUL, um ? &m : NULL) < 0 ? -1 : 0;
}

static int t_mov(gctx *g)
{
    unsigned w = pick_width(g, 1);
    ZydisEncoderRequest rq;
    memspec m;
    int um = 0;

    req_init(&rq, ZYDIS_MNEMONIC_MOV);
    switch (rn(g, 5)) {
    case 0:
        op_reg(&rq, dst_reg(g, w));
        op_reg(&rq, src_reg(g, w));
        break;
    case 1:
        op_reg(&rq, dst_reg(g, w));
        if (mk_mem(g, w / 8, MK_READ, &m) < 0)
            return -1;
        op_mem(&rq, &m);
        um = 1;
        break;
    case 2:
        if (mk_mem(g, w / 8, MK_WRITE, &m) < 0)
            return -1;
        op_mem(&rq, &m);
        um = 1;
        op_reg(&rq, src_reg(g, w));
        break;
    case 3:
        op_reg(&rq, dst_reg(g, w));
        op_imm(&rq, w == 64 && chance(g, 50) ? rnd(g) : rand_imm(g, w));
        break;
    default:
        if (mk_mem(g, w / 8, MK_WRITE, &m) < 0)
            return -1;
        op_mem(&rq, &m);
        um = 1;
        op_imm(&rq, rand_imm(g, w));
        break;
    }
    return emit_m(g, &rq, LC_OP_MOV, um ? &m : NULL) < 0 ? -1 : 0;
}

static int t_movx(gctx *g)
{
    ZydisEncoderRequest rq;
    memspec m;
    int um = 0;
    unsigned k = rn(g, is64(g) ? 3 : 2);
    unsigned dw, sw;

    if (k == 2) {   /* MOVSXD r64, r/m32 */
        req_init(&rq, ZYDIS_MNEMONIC_MOVSXD);
        dw = 64;
        sw = 32;
    } else {
        req_init(&rq, k ? ZYDIS_MNEMONIC_MOVSX : ZYDIS_MNEMONIC_MOVZX);
        sw = chance(g, 50) ? 8 : 16;
        do dw = pick_width(g, 0); while (dw <= sw);
    }
    op_reg(&rq, dst_reg(g, dw));
    if (rm_operand(g, &rq, sw, MK_READ, 0, &m, &um) < 0)
        return -1;
    unsigned op = k == 2 ? LC_OP_MOVSXD : k ? LC_OP_MOVSX : LC_OP_MOVZX;
    return emit_m(g, &rq, op, um ? &m : NULL) < 0 ? -1 : 0;
}

static int t_lea(gctx *g)
{
    unsigned w = pick_width(g, 0);
    ZydisEncoderRequest rq;
    memspec m;

    req_init(&rq, ZYDIS_MNEMONIC_LEA);
    op_reg(&rq, dst_reg(g, w));
    if (mk_mem(g, w / 8, MK_AGEN, &m) < 0)
        return -1;
    op_mem(&rq, &m);
    return emit(g, &rq, LC_OP_LEA) < 0 ? -1 : 0;
}

static int t_xchg(gctx *g)
{
    unsigned w = pick_width(g, 1);
    ZydisEncoderRequest rq;
    memspec m;
    int um = 0;

    req_init(&rq, ZYDIS_MNEMONIC_XCHG);
    if (chance(g, 50)) {
        op_reg(&rq, dst_reg(g, w));
        op_reg(&rq, dst_reg(g, w));
    } else {
        /* aligned: a split lock is the CPU's (docs/runtime.md) */
        if (mk_mem(g, w / 8, MK_READ | MK_WRITE | MK_ALIGNED, &m) < 0)
            return -1;
        op_mem(&rq, &m);
        um = 1;
        op_reg(&rq, dst_reg(g, w));
    }
    return emit_m(g, &rq, LC_OP_XCHG, um ? &m : NULL) < 0 ? -1 : 0;
}

static unsigned stack_width(gctx *g)
{
    if (is64(g))
        return chance(g, 80) ? 64 : 16;
    return chance(g, 50) ? 16 : 32;
}

static ZydisOperandSizeHint osz_hint(unsigned w)
{
    return w == 16 ? ZYDIS_OPERAND_SIZE_HINT_16
         : w == 32 ? ZYDIS_OPERAND_SIZE_HINT_32 : ZYDIS_OPERAND_SIZE_HINT_64;
}

static int t_push(gctx *g)
{
    unsigned w = stack_width(g);
    ZydisEncoderRequest rq;
    memspec m;
    int um = 0;

    req_init(&rq, ZYDIS_MNEMONIC_PUSH);
    rq.operand_size_hint = osz_hint(w);
    switch (rn(g, 3)) {
    case 0:
        op_reg(&rq, src_reg(g, w));
        break;
    case 1:
        op_imm(&rq, rand_imm(g, w));
        break;
    default:
        if (mk_mem(g, w / 8, MK_READ, &m) < 0)
            return -1;
        op_mem(&rq, &m);
        um = 1;
        break;
    }
    return emit_m(g, &rq, LC_OP_PUSH, um ? &m : NULL) < 0 ? -1 : 0;
}

static int t_pop(gctx *g)
{
    unsigned w = stack_width(g);
    ZydisEncoderRequest rq;
    memspec m;
    int um = 0;

    req_init(&rq, ZYDIS_MNEMONIC_POP);
    if (chance(g, 60)) {
        op_reg(&rq, dst_reg(g, w));
    } else {
        if (mk_mem(g, w / 8, MK_WRITE, &m) < 0)
            return -1;
        op_mem(&rq, &m);
        um = 1;
    }
    return emit_m(g, &rq, LC_OP_POP, um ? &m : NULL) < 0 ? -1 : 0;
}

static int t_cmov(gctx *g)
{
    unsigned cc = rn(g, 16), w = pick_width(g, 0);
    ZydisEncoderRequest rq;
    memspec m;
    int um = 0;

    if (ensure_flags(g, flag_uses(LC_OP_CMOVCC, cc)) < 0)
        return -1;
    req_init(&rq, cc_cmov[cc]);
    op_reg(&rq, dst_reg(g, w));
    if (rm_operand(g, &rq, w, MK_READ, 0, &m, &um) < 0)
        return -1;
    return emit_m(g, &rq, LC_OP_CMOVCC, um ? &m : NULL) < 0 ? -1 : 0;
}

static int t_setcc(gctx *g)
{
    unsigned cc = rn(g, 16);
    ZydisEncoderRequest rq;
    memspec m;
    int um = 0;

    if (ensure_flags(g, flag_uses(LC_OP_SETCC, cc)) < 0)
        return -1;
    req_init(&rq, cc_set[cc]);
    if (rm_operand(g, &rq, 8, MK_WRITE, 1, &m, &um) < 0)
        return -1;
    return emit_m(g, &rq, LC_OP_SETCC, um ? &m : NULL) < 0 ? -1 : 0;
}

static int t_misc(gctx *g)
{
    ZydisEncoderRequest rq;
    unsigned k = rn(g, 4);
    unsigned w = is64(g) ? 16u << rn(g, 3) : 16u << rn(g, 2);

    if (k == 0) {
        req_init(&rq, ZYDIS_MNEMONIC_BSWAP);
        op_reg(&rq, dst_reg(g, is64(g) && chance(g, 50) ? 64 : 32));
        return emit(g, &rq, LC_OP_BSWAP) < 0 ? -1 : 0;
    }
    if (k == 1) {
        req_init(&rq, w == 16 ? ZYDIS_MNEMONIC_CBW : w == 32 ? ZYDIS_MNEMONIC_CWDE
                                                           : ZYDIS_MNEMONIC_CDQE);
        return emit(g, &rq, LC_OP_CBW) < 0 ? -1 : 0;
    }
    if (k == 2) {
        req_init(&rq, w == 16 ? ZYDIS_MNEMONIC_CWD : w == 32 ? ZYDIS_MNEMONIC_CDQ
                                                           : ZYDIS_MNEMONIC_CQO);
        return emit(g, &rq, LC_OP_CWD) < 0 ? -1 : 0;
    }
    /* NOP forms */
    req_init(&rq, ZYDIS_MNEMONIC_NOP);
    if (chance(g, 50)) {
        memspec m;
        unsigned nw = chance(g, 50) ? 16 : 32;
        if (chance(g, 50)) {
            op_reg(&rq, src_reg(g, nw));
        } else {
            if (mk_mem(g, nw / 8, MK_AGEN, &m) < 0)
                return -1;
            op_mem(&rq, &m);
        }
    }
    return emit(g, &rq, LC_OP_NOP) < 0 ? -1 : 0;
}

static int t_flagop(gctx *g)
{
    static const struct { ZydisMnemonic m; unsigned op; } ops[5] = {
        { ZYDIS_MNEMONIC_CLC, LC_OP_CLC }, { ZYDIS_MNEMONIC_STC, LC_OP_STC },
        { ZYDIS_MNEMONIC_CMC, LC_OP_CMC }, { ZYDIS_MNEMONIC_CLD, LC_OP_CLD },
        { ZYDIS_MNEMONIC_STD, LC_OP_STD },
    };
    unsigned k = rn(g, 5);
    ZydisEncoderRequest rq;

    if (ensure_flags(g, flag_uses(ops[k].op, 0)) < 0)
        return -1;
    req_init(&rq, ops[k].m);
    return emit(g, &rq, ops[k].op) < 0 ? -1 : 0;
}

/* Forward branches: JMP, Jcc, LOOP/LOOPE/LOOPNE, JCXZ. */
static int t_branch(gctx *g)
{
    ZydisEncoderRequest rq;
    unsigned kind = rn(g, 10), op;
    int short_only = 1;

    if (g->npend >= MAX_PEND)
        return -1;
    if (kind < 2) {
        req_init(&rq, ZYDIS_MNEMONIC_JMP);
        op = LC_OP_JMP;
    } else if (kind < 7) {
        unsigned cc = rn(g, 16);
        if (ensure_flags(g, flag_uses(LC_OP_JCC, cc)) < 0)
            return -1;
        req_init(&rq, cc_jcc[cc]);
        op = LC_OP_JCC;
        if (chance(g, 15))   /* 2E / 3E branch hints */
            rq.prefixes |= chance(g, 50) ? ZYDIS_ATTRIB_HAS_BRANCH_TAKEN
                                         : ZYDIS_ATTRIB_HAS_BRANCH_NOT_TAKEN;
    } else if (kind < 9) {
        static const ZydisMnemonic lm[3] = { ZYDIS_MNEMONIC_LOOP,
            ZYDIS_MNEMONIC_LOOPE, ZYDIS_MNEMONIC_LOOPNE };
        static const unsigned lo[3] = { LC_OP_LOOP, LC_OP_LOOPE, LC_OP_LOOPNE };
        unsigned k = rn(g, 3);
        if (ensure_flags(g, flag_uses(lo[k], 0)) < 0)
            return -1;
        req_init(&rq, lm[k]);
        op = lo[k];
        unsigned ab = pick_abits_cnt(g);
        rq.address_size_hint = ab == 16 ? ZYDIS_ADDRESS_SIZE_HINT_16
                             : ab == 32 ? ZYDIS_ADDRESS_SIZE_HINT_32
                                        : ZYDIS_ADDRESS_SIZE_HINT_64;
    } else {
        unsigned ab = pick_abits_cnt(g);
        req_init(&rq, ab == 16 ? ZYDIS_MNEMONIC_JCXZ : ab == 32 ? ZYDIS_MNEMONIC_JECXZ
                                                               : ZYDIS_MNEMONIC_JRCXZ);
        op = LC_OP_JCXZ;
    }
    op_imm(&rq, 0);
    if ((op == LC_OP_JMP || op == LC_OP_JCC) && chance(g, 40)) {
        rq.branch_type = ZYDIS_BRANCH_TYPE_NEAR;
        rq.branch_width = g->mode == DM_REAL && chance(g, 60) ? ZYDIS_BRANCH_WIDTH_16
                                                              : ZYDIS_BRANCH_WIDTH_32;
        short_only = 0;
    } else {
        rq.branch_type = ZYDIS_BRANCH_TYPE_SHORT;
        rq.branch_width = ZYDIS_BRANCH_WIDTH_8;
    }
    int k = emit(g, &rq, op);
    if (k < 0)
        return -1;
    pend *p = &g->pend[g->npend++];
    p->target = g->group + 1 + (int)rn(g, 4);
    p->undef = g->undef;
    p->df = g->df;
    p->ins = (uint16_t)k;
    p->short_only = (uint8_t)short_only;
    p->rq = rq;
    return 0;
}

static int t_io(gctx *g)
{
    ZydisEncoderRequest rq;
    unsigned w = 8u << rn(g, 3);
    int out = chance(g, 50);
    uint16_t port = (uint16_t)rnd(g);

    req_init(&rq, out ? ZYDIS_MNEMONIC_OUT : ZYDIS_MNEMONIC_IN);
    if (chance(g, 50)) {
        if (emit_setup(g, ZYDIS_REGISTER_DX, port) < 0)
            return -1;
        if (out) {
            op_reg(&rq, ZYDIS_REGISTER_DX);
            op_reg(&rq, gpr(w, 0));
        } else {
            op_reg(&rq, gpr(w, 0));
            op_reg(&rq, ZYDIS_REGISTER_DX);
        }
    } else if (out) {
        op_imm(&rq, port & 0xff);
        op_reg(&rq, gpr(w, 0));
    } else {
        op_reg(&rq, gpr(w, 0));
        op_imm(&rq, port & 0xff);
    }
    return emit(g, &rq, out ? LC_OP_OUT : LC_OP_IN) < 0 ? -1 : 0;
}

/* Is linear address `t` in one of the case's MMIO regions? */
static int in_mmio(const gctx *g, uint64_t t)
{
    for (int i = 0; i < g->nreg; i++)
        if (g->reg[i].mmio && t - g->reg[i].la < g->reg[i].len)
            return 1;
    return 0;
}

static int emit_stop(gctx *g, ZydisEncoderRequest *rq, unsigned op,
                     const memspec *m);

static int t_strio(gctx *g)
{
    ZydisEncoderRequest rq;
    unsigned w = 8u << rn(g, 3), bytes = w / 8;
    int out = chance(g, 50), rep = chance(g, 60);
    unsigned ab = pick_abits_cnt(g);
    unsigned n = rep ? rn(g, 5) : 1;
    static const ZydisMnemonic ins[3] = { ZYDIS_MNEMONIC_INSB,
        ZYDIS_MNEMONIC_INSW, ZYDIS_MNEMONIC_INSD };
    static const ZydisMnemonic outs[3] = { ZYDIS_MNEMONIC_OUTSB,
        ZYDIS_MNEMONIC_OUTSW, ZYDIS_MNEMONIC_OUTSD };
    unsigned s = out ? LC_DS : LC_ES;
    int pfx = -1;
    uint64_t t = 0, ea = 0;
    int ok = 0;

    /* 64-bit mode, 32-bit addressing, REP with ECX = 0: this CPU (tested
     * natively with 67 F3 AA) still zero-extends RCX and RDI, QEMU leaves
     * them; not architectural either way (UNICORN_BUGS.md) */
    if (rep && n == 0 && is64(g) && ab == 32)
        n = 1 + rn(g, 4);
    if (ensure_df(g) < 0)
        return -1;
    if (out && chance(g, 30)) {
        pfx = (int)rn(g, 6);
        s = (unsigned)pfx;
    }
    for (int tries = 0; tries < 32 && !ok; tries++) {
        /* INS: no MMIO destination (QEMU's dummy store, UNICORN_BUGS.md) */
        t = pick_target(g, bytes, 16, out ? 0 : MK_NOMMIO);
        uint64_t lo = g->df == 1 ? t - (n ? n - 1 : 0) * bytes : t;
        ok = ea_for(g, s, ab, lo, bytes * (n ? n : 1), &ea) == 0 &&
             ea_for(g, s, ab, t, bytes, &ea) == 0;
    }
    if (!ok)
        return -1;
    if (emit_setup(g, ZYDIS_REGISTER_DX, (uint16_t)rnd(g)) < 0)
        return -1;
    if (emit_setup(g, gpr(ab, out ? LC_RSI : LC_RDI), ea) < 0)
        return -1;
    if (rep && emit_setup(g, gpr(ab, LC_RCX), n) < 0)
        return -1;
    req_init(&rq, out ? outs[w == 8 ? 0 : w == 16 ? 1 : 2]
                      : ins[w == 8 ? 0 : w == 16 ? 1 : 2]);
    if (rep)
        rq.prefixes |= ZYDIS_ATTRIB_HAS_REP;
    if (pfx >= 0)
        rq.prefixes |= seg_attr[pfx];
    rq.address_size_hint = ab == 16 ? ZYDIS_ADDRESS_SIZE_HINT_16
                         : ab == 32 ? ZYDIS_ADDRESS_SIZE_HINT_32
                                    : ZYDIS_ADDRESS_SIZE_HINT_64;
    /* OUTS from MMIO: a device read and a port in one instruction, which
     * the library leaves to the CPU (runtime/exec.c, string_io): a clean
     * decline, unless a REP's count is 0 (no access at all) */
    if (out && (!rep || n > 0) && in_mmio(g, t))
        return emit_stop(g, &rq, LC_OP_OUTS, NULL) < 0 ? -1 : 0;
    return emit(g, &rq, out ? LC_OP_OUTS : LC_OP_INS) < 0 ? -1 : 0;
}

static int t_sys(gctx *g)
{
    ZydisEncoderRequest rq;
    unsigned k = rn(g, 3);

    if (k == 0) {
        uint32_t leaf = chance(g, 70) ? rn(g, 0x20) : 0x80000000u + rn(g, 9);
        if (emit_setup(g, ZYDIS_REGISTER_EAX, leaf) < 0)
            return -1;
        if (chance(g, 50) && emit_setup(g, ZYDIS_REGISTER_ECX, rn(g, 4)) < 0)
            return -1;
        req_init(&rq, ZYDIS_MNEMONIC_CPUID);
        return emit(g, &rq, LC_OP_CPUID) < 0 ? -1 : 0;
    }
    if (emit_setup(g, ZYDIS_REGISTER_ECX, diff_msr_ids[rn(g, N_MSRS)]) < 0)
        return -1;
    req_init(&rq, k == 1 ? ZYDIS_MNEMONIC_RDMSR : ZYDIS_MNEMONIC_WRMSR);
    return emit(g, &rq, k == 1 ? LC_OP_RDMSR : LC_OP_WRMSR) < 0 ? -1 : 0;
}

/* ---- issue 14's gap fillers ------------------------------------------------ */

static void seg_from_gdt(lc_segment *s, unsigned sel);

/* `v`'s low `bits` sign-extended: Zydis 4.0's encoder refuses an
 * immediate narrower than 64 bits given as its unsigned bit pattern when
 * the top bit is set. */
static uint64_t sx(uint64_t v, unsigned bits)
{
    uint64_t m = mask_bits(bits), top = bits >= 64 ? 0 : 1ull << (bits - 1);

    v &= m;
    return bits < 64 && (v & top) ? v | ~m : v;
}

/* emit() as a helper (gen_insn.setup): the engine-mode tester never
 * replaces it with a NOP (cdiff.c, replace_code), since the instruction
 * it prepares could then fault (#DE, a segment load). */
static int emit_helper(gctx *g, ZydisEncoderRequest *rq, unsigned op,
                       const memspec *m)
{
    g->setup = 1;
    g_riprel = m && m->riprel ? m : NULL;
    int k = emit(g, rq, op);
    g_riprel = NULL;
    g->setup = 0;
    return k;
}

/* Register number of a 16/32/64-bit GPR, or -1. */
static int reg_num(ZydisRegister r)
{
    switch (ZydisRegisterGetClass(r)) {
    case ZYDIS_REGCLASS_GPR16:
    case ZYDIS_REGCLASS_GPR32:
    case ZYDIS_REGCLASS_GPR64:
        return ZydisRegisterGetId(r);
    default:
        return -1;
    }
}

/* Does memory operand `m` address through register `num`? */
static int mem_uses(const memspec *m, int num)
{
    return reg_num(m->op.mem.base) == num || reg_num(m->op.mem.index) == num;
}

/* A register of `bits` to write that `m` (if any) does not address
 * through and that is none of `a`, `b` (-1: none); never rSP. */
static ZydisRegister free_reg(gctx *g, unsigned bits, const memspec *m,
                              int a, int b)
{
    for (int tries = 0; tries < 64; tries++) {
        unsigned n = rn(g, g->nregs);
        if (n == LC_RSP || (int)n == a || (int)n == b ||
            (m && mem_uses(m, (int)n)))
            continue;
        if (bits == 8 && !is64(g) && n >= 4)
            continue;
        return gpr(bits, n);
    }
    return ZYDIS_REGISTER_NONE;
}

/* DIV and IDIV with operands that cannot raise #DE (the runtime would
 * stop before the instruction and Unicorn raise it): an unsigned high
 * half below the divisor; a signed dividend sign-extended from rAX (CBW,
 * CWD, CDQ, CQO) and a divisor other than 0 and -1. The divisor comes
 * from a register or from memory the template stored it to first. */
static int t_div(gctx *g)
{
    unsigned w = pick_width(g, 1), sgn = chance(g, 50);
    uint64_t m = mask_bits(w), d;
    ZydisEncoderRequest rq;
    ZydisRegister r = ZYDIS_REGISTER_NONE;
    memspec ms;
    int um = chance(g, 40);

    do {
        d = rnd(g);
        if (chance(g, 50))
            d &= 0xff;
        if (w == 64 && um)
            d = (uint64_t)(int64_t)(int32_t)d;   /* MOV m64, imm32 */
        d &= m;
    } while (d == 0 || (sgn && d == m));
    if (um) {
        if (mk_mem(g, w / 8, MK_READ | MK_WRITE | MK_NOMMIO, &ms) < 0 ||
            ms.riprel || mem_uses(&ms, LC_RAX) || mem_uses(&ms, LC_RDX))
            return -1;
        req_init(&rq, ZYDIS_MNEMONIC_MOV);
        op_mem(&rq, &ms);
        op_imm(&rq, sx(d, w));
        if (emit_helper(g, &rq, LC_OP_MOV, &ms) < 0)
            return -1;
    } else {
        r = free_reg(g, w, NULL, LC_RAX, w == 8 ? -1 : LC_RDX);
        if (r == ZYDIS_REGISTER_NONE || emit_setup(g, r, sx(d, w)) < 0)
            return -1;
    }
    if (!sgn) {
        uint64_t lo = rnd(g) & m, hi = (rnd(g) & m) % d;
        if (w == 8) {
            if (emit_setup(g, ZYDIS_REGISTER_AX, sx((hi << 8) | lo, 16)) < 0)
                return -1;
        } else if (emit_setup(g, gpr(w, LC_RAX), sx(lo, w)) < 0 ||
                   emit_setup(g, gpr(w, LC_RDX), sx(hi, w)) < 0) {
            return -1;
        }
    } else {
        unsigned aw = w == 8 ? 16 : w;
        if (emit_setup(g, gpr(aw, LC_RAX), sx(rnd(g), aw)) < 0)
            return -1;
        req_init(&rq, w == 8 ? ZYDIS_MNEMONIC_CBW : w == 16 ? ZYDIS_MNEMONIC_CWD
                      : w == 32 ? ZYDIS_MNEMONIC_CDQ : ZYDIS_MNEMONIC_CQO);
        if (emit_helper(g, &rq, w == 8 ? LC_OP_CBW : LC_OP_CWD, NULL) < 0)
            return -1;
    }
    req_init(&rq, sgn ? ZYDIS_MNEMONIC_IDIV : ZYDIS_MNEMONIC_DIV);
    if (um)
        op_mem(&rq, &ms);
    else
        op_reg(&rq, r);
    return emit_m(g, &rq, sgn ? LC_OP_IDIV : LC_OP_DIV, um ? &ms : NULL) < 0
               ? -1 : 0;
}

/* BT, BTS, BTR, BTC: register or memory operand, immediate or register
 * bit offset; with memory and a register offset the offset reaches up to
 * three operands either side of the address (the displacement is moved
 * back so that the access lands on the target mk_mem() chose). */
static int t_bt(gctx *g)
{
    static const struct { ZydisMnemonic m; unsigned op; } ops[4] = {
        { ZYDIS_MNEMONIC_BT, LC_OP_BT }, { ZYDIS_MNEMONIC_BTS, LC_OP_BTS },
        { ZYDIS_MNEMONIC_BTR, LC_OP_BTR }, { ZYDIS_MNEMONIC_BTC, LC_OP_BTC },
    };
    unsigned k = rn(g, 4), w = pick_width(g, 0), n = w / 8;
    ZydisEncoderRequest rq;
    memspec ms;
    int um = chance(g, 50), imm = chance(g, 35);

    req_init(&rq, ops[k].m);
    if (um) {
        if (mk_mem(g, n, MK_READ | (k ? MK_WRITE : 0), &ms) < 0)
            return -1;
    }
    if (imm) {
        if (um)
            op_mem(&rq, &ms);
        else
            op_reg(&rq, dst_reg(g, w));
        op_imm(&rq, rn(g, 256));
        return emit_m(g, &rq, ops[k].op, um ? &ms : NULL) < 0 ? -1 : 0;
    }
    ZydisRegister br = free_reg(g, w, um ? &ms : NULL, -1, -1);
    int64_t q = um ? (int64_t)rn(g, 7) - 3 : (int64_t)rn(g, 5);
    uint64_t bit = rn(g, w);
    if (br == ZYDIS_REGISTER_NONE)
        return -1;
    if (um && q) {
        int64_t sh = q * (int64_t)n;
        if (ms.riprel) {
            ms.ea -= (uint64_t)sh;
        } else {
            int64_t nd = ms.op.mem.displacement - sh;
            if (ms.abits == 16 ? nd != (int16_t)nd : nd != (int32_t)nd)
                return -1;
            ms.op.mem.displacement = nd;
        }
    }
    /* sign-extended: Zydis 4.0's encoder refuses a negative imm16/imm32
     * given as its unsigned bit pattern */
    if (emit_setup(g, br, (uint64_t)(q * (int64_t)w + (int64_t)bit)) < 0)
        return -1;
    if (um)
        op_mem(&rq, &ms);
    else
        op_reg(&rq, dst_reg(g, w));
    op_reg(&rq, br);
    return emit_m(g, &rq, ops[k].op, um ? &ms : NULL) < 0 ? -1 : 0;
}

static int t_hlt(gctx *g);
static int t_movcr(gctx *g);

/* The instruction after one that opens an interrupt shadow (STI, MOV SS,
 * POP SS; emitted right before): always there, so that no shadow reaches
 * the end of the code. A gap filler, a HLT (run in the shadow, `sti;
 * hlt`), or a MOV CR the library declines, before which it takes the
 * opener back (GI_SHADOW_STOP). */
static int emit_successor(gctx *g)
{
    ZydisEncoderRequest rq;

    switch (rn(g, 5)) {
    case 0:
        req_init(&rq, ZYDIS_MNEMONIC_NOP);
        return emit(g, &rq, LC_OP_NOP) < 0 ? -1 : 0;
    case 1:
        req_init(&rq, ZYDIS_MNEMONIC_INC);
        op_reg(&rq, dst_reg(g, 32));
        return emit(g, &rq, LC_OP_INC) < 0 ? -1 : 0;
    case 2:
        return t_hlt(g);
    case 3: {
        /* (the opener is the instruction emitted last) */
        gen_insn *o = &g->c->insn[g->c->ninsns - 1];
        if (t_movcr(g) < 0)
            return -1;
        o->flags |= GI_SHADOW_STOP;
        return 0;
    }
    default:
        return t_mov(g);
    }
}

/* CLI; STI (which opens the shadow when IF was clear) and its successor. */
static int t_cli_sti(gctx *g)
{
    ZydisEncoderRequest rq;
    unsigned k = rn(g, 3);

    if (k != 1) {
        req_init(&rq, ZYDIS_MNEMONIC_CLI);
        if (emit(g, &rq, LC_OP_CLI) < 0)
            return -1;
        if (k == 0)
            return 0;
    }
    req_init(&rq, ZYDIS_MNEMONIC_STI);
    if (emit(g, &rq, LC_OP_STI) < 0)
        return -1;
    return emit_successor(g);
}

/* Where the stack's page is, as an offset in SS (rBP for LEAVE). */
static uint64_t stack_off(gctx *g, int delta)
{
    uint64_t top = g->stack_top ? g->stack_top
                 : is64(g) ? WIN_STACK_LA + 0x800 : STACK_PA + 0x800;

    /* in the code page, only below its top: the stores stay there */
    if (g->stack_top && delta > 0)
        delta = -delta;
    return top + (uint64_t)(int64_t)delta - (is64(g) ? 0 : g->cur[LC_SS].base);
}

/* PUSHA/POPA (16 and 32 bits; not in 64-bit mode) and LEAVE with rBP set
 * into the stack page. */
static int t_stackops(gctx *g)
{
    ZydisEncoderRequest rq;
    unsigned k = rn(g, 3);

    if (k < 2 && !is64(g)) {
        unsigned w = chance(g, 50) ? 16 : 32;
        req_init(&rq, k ? (w == 16 ? ZYDIS_MNEMONIC_POPA : ZYDIS_MNEMONIC_POPAD)
                        : (w == 16 ? ZYDIS_MNEMONIC_PUSHA : ZYDIS_MNEMONIC_PUSHAD));
        rq.operand_size_hint = osz_hint(w);
        return emit(g, &rq, k ? LC_OP_POPA : LC_OP_PUSHA) < 0 ? -1 : 0;
    }
    unsigned w = stack_width(g);
    unsigned ab = is64(g) ? 64 : g->mode == DM_REAL ? 16 : 32;
    if (emit_setup(g, gpr(ab, LC_RBP),
                   stack_off(g, (int)rn(g, 0x200) - 0x100) & mask_bits(ab)) < 0)
        return -1;
    req_init(&rq, ZYDIS_MNEMONIC_LEAVE);
    rq.operand_size_hint = osz_hint(w);
    return emit(g, &rq, LC_OP_LEAVE) < 0 ? -1 : 0;
}

/* MOV to and from DR0..DR3 (issue 16: lc-diff generated no MOV DR):
 * storage on both sides while DR7 enables no breakpoint. */
static int t_movdr(gctx *g)
{
    static const ZydisRegister DR[4] = {
        ZYDIS_REGISTER_DR0, ZYDIS_REGISTER_DR1, ZYDIS_REGISTER_DR2,
        ZYDIS_REGISTER_DR3,
    };
    ZydisEncoderRequest rq;
    unsigned w = is64(g) ? 64 : 32;

    req_init(&rq, ZYDIS_MNEMONIC_MOV);
    if (chance(g, 50)) {
        op_reg(&rq, DR[rn(g, 4)]);
        op_reg(&rq, src_reg(g, w));
    } else {
        op_reg(&rq, dst_reg(g, w));
        op_reg(&rq, DR[rn(g, 4)]);
    }
    return emit(g, &rq, LC_OP_MOV_DR) < 0 ? -1 : 0;
}

/* HLT (issue 16): the fake VMM's halt; the run ends after it on both
 * sides (runtime/exec.c; QEMU leaves uc_emu_start there). */
static int t_hlt(gctx *g)
{
    ZydisEncoderRequest rq;

    req_init(&rq, ZYDIS_MNEMONIC_HLT);
    return emit(g, &rq, LC_OP_HLT) < 0 ? -1 : 0;
}

/* Emit `rq` (an instruction the library must decline) flagged GI_STOP:
 * both sides end the run before it, and everything up to it must agree. */
static int emit_stop(gctx *g, ZydisEncoderRequest *rq, unsigned op,
                     const memspec *m)
{
    g->allow_term = 1;
    int k = emit_m(g, rq, op, m);
    g->allow_term = 0;
    if (k >= 0)
        g->c->insn[k].flags |= GI_STOP;
    return k;
}

/* MOV to and from CR0, CR2, CR3, CR4 (and CR8 in 64-bit mode): never run
 * by the library (decoder/optable.c: paging and mode changes are not
 * spanned, paper section 8), so each is a clean decline: the run stops
 * before it with everything before it done (GI_STOP). */
static int t_movcr(gctx *g)
{
    static const ZydisRegister CR[5] = {
        ZYDIS_REGISTER_CR0, ZYDIS_REGISTER_CR2, ZYDIS_REGISTER_CR3,
        ZYDIS_REGISTER_CR4, ZYDIS_REGISTER_CR8,
    };
    ZydisEncoderRequest rq;
    unsigned w = is64(g) ? 64 : 32, n = rn(g, is64(g) ? 5 : 4);

    req_init(&rq, ZYDIS_MNEMONIC_MOV);
    if (chance(g, 50)) {
        op_reg(&rq, CR[n]);
        op_reg(&rq, src_reg(g, w));
    } else {
        op_reg(&rq, dst_reg(g, w));
        op_reg(&rq, CR[n]);
    }
    return emit_stop(g, &rq, LC_OP_MOV_CR, NULL) < 0 ? -1 : 0;
}

/* A VMCS field encoding for the next VMREAD/VMWRITE: mostly one the fake
 * VMCS has (common.c; the high access of a 64-bit one too), else one it
 * has not (an unused encoding, the access-type bit on a field that is
 * not 64 bits wide, bits above 31 in 64-bit mode), or for VMWRITE a
 * read-only one. */
static uint64_t pick_field(gctx *g, int wr)
{
    unsigned k = rn(g, 100);
    uint64_t f = vmx_fields[rn(g, VMX_NFIELDS)];

    if (k < 75) {
        if (((f >> 13) & 3) == 1 && chance(g, 30))
            f |= 1;
        return f;
    }
    if (k < 82)
        return 0x4000 | (rn(g, 0x100) << 1) | 0x200;   /* 32-bit, unused */
    if (k < 88)
        return ((f >> 13) & 3) == 1 ? 0x4001 : f | 1;
    if (k < 92 && is64(g))
        return f | (uint64_t)(1 + rn(g, 0xffff)) << 32;
    if (wr)
        return chance(g, 50) ? VMX_INSN_ERROR : 0x6400;
    return f;
}

/* VMREAD, VMWRITE (paper section 8: runtime/vmcs.c against the VMM's
 * VMCS) and VMCALL. The field register is loaded right before; the value
 * operand is a register or RAM (32 bits outside 64-bit mode, 64 in it).
 * One the fake VMM fails is GI_VMFAIL: the library stops before it and
 * the VMM's exit handler makes it fail (rt_side.c); in real mode VMREAD
 * and VMWRITE are #UD, left to the CPU (GI_STOP). */
static int t_vmx(gctx *g)
{
    dcase *c = g->c;
    ZydisEncoderRequest rq;
    memspec ms;
    unsigned k = rn(g, 5), w = is64(g) ? 64 : 32;

    if (k == 0) {
        if (chance(g, 60) &&
            emit_setup(g, gpr(32, LC_RAX), (uint32_t)rnd(g)) < 0)
            return -1;
        req_init(&rq, ZYDIS_MNEMONIC_VMCALL);
        return emit(g, &rq, LC_OP_VMCALL) < 0 ? -1 : 0;
    }
    int wr = k >= 3;
    uint64_t field = pick_field(g, wr);
    int code = !c->vmcs_valid ? VMX_FAIL_INVALID
             : vmx_field_index(field) < 0 ? 12
             : wr && ((vmx_fields[vmx_field_index(field)] >> 10) & 3) == 1
                 ? 13 : 0;
    /* A VMWRITE's memory source under every outcome: the runtime peeks
     * at it for the VMM's callback and sets its accessed bits only once
     * the VMM completed it (runtime/vmcs.c), so a failing one must leave
     * them to the VMM's handling of the exit (rt_side.c: set under
     * VMfailValid, not under VMfailInvalid, which comes before the read)
     * and, where the engine stops before it, untouched. */
    int um = chance(g, 40);
    if (um && mk_mem(g, w / 8, (wr ? MK_READ : MK_WRITE) | MK_NOMMIO,
                     &ms) < 0)
        return -1;
    ZydisRegister fr = free_reg(g, w, um ? &ms : NULL, -1, -1);
    if (fr == ZYDIS_REGISTER_NONE || emit_setup(g, fr, field) < 0)
        return -1;
    req_init(&rq, wr ? ZYDIS_MNEMONIC_VMWRITE : ZYDIS_MNEMONIC_VMREAD);
    if (wr)
        op_reg(&rq, fr);
    if (um)
        op_mem(&rq, &ms);
    else if (wr)
        op_reg(&rq, src_reg(g, w));
    else
        op_reg(&rq, dst_reg(g, w));
    if (!wr)
        op_reg(&rq, fr);
    unsigned op = wr ? LC_OP_VMWRITE : LC_OP_VMREAD;
    int i = g->mode == DM_REAL ? emit_stop(g, &rq, op, um ? &ms : NULL)
                               : emit_m(g, &rq, op, um ? &ms : NULL);
    if (i < 0)
        return -1;
    if (code && g->mode != DM_REAL)
        c->insn[i].flags |= GI_VMFAIL;
    return 0;
}

static int t_rdtsc(gctx *g)
{
    ZydisEncoderRequest rq;

    req_init(&rq, ZYDIS_MNEMONIC_RDTSC);
    return emit(g, &rq, LC_OP_RDTSC) < 0 ? -1 : 0;
}

static const ZydisRegister SREG[6] = {
    ZYDIS_REGISTER_ES, ZYDIS_REGISTER_CS, ZYDIS_REGISTER_SS,
    ZYDIS_REGISTER_DS, ZYDIS_REGISTER_FS, ZYDIS_REGISTER_GS,
};

/* What segment register `s` holds after loading `sel` (the GDT above; real
 * mode keeps the cached limit and attributes). */
static void seg_model(gctx *g, unsigned s, unsigned sel, lc_segment *out)
{
    if (g->mode == DM_REAL) {
        *out = g->cur[s];
        out->selector = (uint16_t)sel;
        out->base = (uint64_t)sel << 4;
        return;
    }
    if ((sel & ~3u) == 0) {
        memset(out, 0, sizeof *out);
        out->selector = (uint16_t)sel;
        out->unusable = 1;
        return;
    }
    seg_from_gdt(out, sel);
    out->type |= 1;
}

/* A selector that loads into `s` without a fault (CPL 0). */
static unsigned pick_sel(gctx *g, unsigned s)
{
    static const uint16_t rsel[] = { 0x0000, 0x0100, 0x0800, 0x0f00,
                                     0x1000, 0x0123 };
    static const uint16_t dsel[] = { 0x10, 0x18, 0x20, 0x28, 0x38, 0x08,
                                     0x40, 0x48, 0x49, 0x4a, 0x4b, 0x50,
                                     0x30 };
    /* not 0x40 for SS: a descriptor with its accessed bit clear is left
     * to the CPU there (runtime/exec.c, load_sreg) */
    static const uint16_t ssel32[] = { 0x10, 0x38, 0x38 };
    static const uint16_t ssel64[] = { 0x10, 0x18, 0x20, 0x28, 0x38, 0x10 };

    if (g->mode == DM_REAL)
        return rsel[rn(g, 6)];
    if (s == LC_SS)
        return is64(g) ? ssel64[rn(g, 6)] : ssel32[rn(g, 3)];
    /* null selectors: not FS/GS in 64-bit mode (vendor-dependent base) */
    if (chance(g, 12) && !(is64(g) && (s == LC_FS || s == LC_GS)))
        return rn(g, 4);
    return dsel[rn(g, sizeof dsel / sizeof dsel[0])];
}

/* PUSH Sreg / POP Sreg at width `w` (as a helper: `helper`). */
static int emit_pushpop_sreg(gctx *g, int pop, unsigned s, unsigned w,
                             int helper)
{
    ZydisEncoderRequest rq;

    req_init(&rq, pop ? ZYDIS_MNEMONIC_POP : ZYDIS_MNEMONIC_PUSH);
    op_reg(&rq, SREG[s]);
    rq.operand_size_hint = osz_hint(w);
    if (helper)
        return emit_helper(g, &rq, pop ? LC_OP_POP : LC_OP_PUSH, NULL) < 0 ? -1 : 0;
    return emit(g, &rq, pop ? LC_OP_POP : LC_OP_PUSH) < 0 ? -1 : 0;
}

/* PUSH 0; LEA rSP, [rSP+4]: the next 32-bit push's slot has a zero upper
 * half (see PUSH Sreg in t_sreg). */
static int zero_slot(gctx *g)
{
    ZydisEncoderRequest z;

    req_init(&z, ZYDIS_MNEMONIC_PUSH);
    z.operand_size_hint = ZYDIS_OPERAND_SIZE_HINT_32;
    op_imm(&z, 0);
    if (emit_helper(g, &z, LC_OP_PUSH, NULL) < 0)
        return -1;
    req_init(&z, ZYDIS_MNEMONIC_LEA);
    op_reg(&z, ZYDIS_REGISTER_ESP);
    ZydisEncoderOperand *o = &z.operands[z.operand_count++];
    o->type = ZYDIS_OPERAND_TYPE_MEMORY;
    o->mem.base = ZYDIS_REGISTER_ESP;
    o->mem.displacement = 4;
    o->mem.size = 4;
    return emit_helper(g, &z, LC_OP_LEA, NULL) < 0 ? -1 : 0;
}

/* MOV Sreg, r16 / MOV Sreg, m16 (stored first) / PUSH imm; POP Sreg. */
static int emit_load_sreg(gctx *g, unsigned s, unsigned sel)
{
    ZydisEncoderRequest rq;
    memspec ms;
    unsigned k = rn(g, 3);

    if (k == 2 && (!is64(g) || s == LC_FS || s == LC_GS)) {
        unsigned w = is64(g) ? (chance(g, 50) ? 64 : 16)
                   : g->mode == DM_REAL ? 16 : (chance(g, 50) ? 32 : 16);
        req_init(&rq, ZYDIS_MNEMONIC_PUSH);
        rq.operand_size_hint = osz_hint(w);
        op_imm(&rq, sel);
        if (emit_helper(g, &rq, LC_OP_PUSH, NULL) < 0)
            return -1;
        return emit_pushpop_sreg(g, 1, s, w, 1);
    }
    req_init(&rq, ZYDIS_MNEMONIC_MOV);
    op_reg(&rq, SREG[s]);
    if (k == 1) {
        ZydisEncoderRequest st;
        if (mk_mem(g, 2, MK_READ | MK_WRITE | MK_NOMMIO, &ms) < 0)
            return -1;
        req_init(&st, ZYDIS_MNEMONIC_MOV);
        op_mem(&st, &ms);
        op_imm(&st, sel);
        if (emit_helper(g, &st, LC_OP_MOV, &ms) < 0)
            return -1;
        op_mem(&rq, &ms);
        return emit_m(g, &rq, LC_OP_MOV_SREG, &ms) < 0 ? -1 : 0;
    }
    ZydisRegister r = free_reg(g, 16, NULL, -1, -1);
    if (r == ZYDIS_REGISTER_NONE || emit_setup(g, r, sel) < 0)
        return -1;
    op_reg(&rq, r);
    return emit(g, &rq, LC_OP_MOV_SREG) < 0 ? -1 : 0;
}

/* One load or store through segment `s` (its new base and limit). */
static int access_via(gctx *g, unsigned s)
{
    ZydisEncoderRequest rq;
    memspec ms;
    unsigned w = pick_width(g, 1);
    /* no store through a code segment: QEMU does not check segment types
     * on data accesses (UNICORN_BUGS.md, exclusion 7) */
    int st = chance(g, 40) && !(g->cur[s].type & 0x8);

    g->force_seg = (int)s + 1;
    int r = mk_mem(g, w / 8, st ? MK_WRITE : MK_READ, &ms);
    g->force_seg = 0;
    if (r < 0)
        return -1;
    req_init(&rq, ZYDIS_MNEMONIC_MOV);
    if (st) {
        op_mem(&rq, &ms);
        op_reg(&rq, src_reg(g, w));
    } else {
        op_reg(&rq, dst_reg(g, w));
        op_mem(&rq, &ms);
    }
    return emit_m(g, &rq, LC_OP_MOV, &ms) < 0 ? -1 : 0;
}

/* Segment registers: stores of selectors (MOV r/m, Sreg; PUSH Sreg) and
 * loads with the descriptor checks. A load of DS/ES/FS/GS outside 64-bit
 * mode is saved and restored around it (PUSH/POP Sreg), with an access
 * through the new base between, so that no path that skips the group
 * sees other segments than the generator thinks. SS loads keep the stack
 * where it is (prot32: base 0; real mode: SS:SP moved together, only
 * where no pending branch skips it) and are followed by their shadow's
 * instruction. In 64-bit mode only FS/GS bases count, and they change
 * only where no pending branch skips the load. */
static int t_sreg(gctx *g)
{
    ZydisEncoderRequest rq;
    memspec ms;
    unsigned k = rn(g, 4), s;

    if (k == 0) {                        /* MOV r/m, Sreg */
        s = rn(g, 6);
        req_init(&rq, ZYDIS_MNEMONIC_MOV);
        if (chance(g, 50)) {
            if (mk_mem(g, 2, MK_WRITE, &ms) < 0)
                return -1;
            op_mem(&rq, &ms);
            op_reg(&rq, SREG[s]);
            return emit_m(g, &rq, LC_OP_MOV_SREG, &ms) < 0 ? -1 : 0;
        }
        op_reg(&rq, dst_reg(g, is64(g) ? 16u << rn(g, 3) : 16u << rn(g, 2)));
        op_reg(&rq, SREG[s]);
        return emit(g, &rq, LC_OP_MOV_SREG) < 0 ? -1 : 0;
    }
    if (k == 1) {                        /* PUSH Sreg */
        s = rn(g, 6);
        if (is64(g)) {
            s = chance(g, 50) ? LC_FS : LC_GS;
            return emit_pushpop_sreg(g, 0, s, chance(g, 70) ? 64 : 16, 0);
        }
        if (g->mode != DM_REAL && chance(g, 50)) {
            /* 32 bits: only onto a slot whose upper half is zero, where
             * the CPU's two documented behaviours agree */
            if (zero_slot(g) < 0)
                return -1;
            return emit_pushpop_sreg(g, 0, s, 32, 0);
        }
        return emit_pushpop_sreg(g, 0, s, 16, 0);
    }
    if (k == 2) {                        /* load SS */
        unsigned sel = pick_sel(g, LC_SS);
        /* its limit and B bit (prot32), its base (real mode) change for
         * the rest of the code: not where a pending branch skips it */
        if (g->mode != DM_LONG64 && g->npend)
            return -1;
        if (g->mode == DM_REAL)
            sel = 0x100 * rn(g, 3);
        if (emit_load_sreg(g, LC_SS, sel) < 0)
            return -1;
        if (g->mode == DM_REAL) {
            /* the same linear stack top, in the shadow */
            seg_model(g, LC_SS, sel, &g->cur[LC_SS]);
            return emit_setup(g, ZYDIS_REGISTER_SP,
                              stack_off(g, 0) & 0xffff) < 0 ? -1 : 0;
        }
        seg_model(g, LC_SS, sel, &g->cur[LC_SS]);
        return emit_successor(g);
    }
    /* load DS, ES, FS or GS */
    static const unsigned dsegs[4] = { LC_DS, LC_ES, LC_FS, LC_GS };
    s = dsegs[rn(g, 4)];
    unsigned sel = pick_sel(g, s);
    if (is64(g)) {
        if (s == LC_FS || s == LC_GS) {
            if (g->npend)
                return -1;
            if (emit_load_sreg(g, s, sel) < 0)
                return -1;
            seg_model(g, s, sel, &g->cur[s]);
            return chance(g, 50) ? access_via(g, s) : 0;
        }
        if (emit_load_sreg(g, s, sel) < 0)
            return -1;
        seg_model(g, s, sel, &g->cur[s]);
        return 0;
    }
    lc_segment saved = g->cur[s];
    unsigned w = g->mode == DM_REAL ? 16 : chance(g, 70) ? 16 : 32;
    /* the save and the restore are helpers: without them the access
     * between and later code would meet other segments */
    if ((w == 32 && zero_slot(g) < 0) || emit_pushpop_sreg(g, 0, s, w, 1) < 0 ||
        emit_load_sreg(g, s, sel) < 0)
        return -1;
    seg_model(g, s, sel, &g->cur[s]);
    if (!g->cur[s].unusable && chance(g, 60) && access_via(g, s) < 0) {
        g->cur[s] = saved;
        return -1;
    }
    g->cur[s] = saved;
    return emit_pushpop_sreg(g, 1, s, w, 1);
}

typedef int (*tmpl_fn)(gctx *g);
static const struct { tmpl_fn fn; unsigned weight; int sys; } tmpls[] = {
    { t_alu, 16, 0 }, { t_test, 4, 0 }, { t_unary, 6, 0 }, { t_shift, 10, 0 },
    { t_mul, 6, 0 }, { t_mov, 14, 0 }, { t_movx, 5, 0 }, { t_lea, 4, 0 },
    { t_xchg, 4, 0 }, { t_push, 5, 0 }, { t_pop, 5, 0 }, { t_cmov, 5, 0 },
    { t_setcc, 4, 0 }, { t_misc, 6, 0 }, { t_flagop, 4, 0 },
    { t_branch, 8, 0 }, { t_io, 5, 1 }, { t_strio, 5, 1 }, { t_sys, 4, 1 },
    { t_div, 4, 0 }, { t_bt, 5, 0 }, { t_cli_sti, 2, 1 }, { t_stackops, 3, 1 },
    { t_rdtsc, 1, 1 }, { t_sreg, 6, 1 }, { t_movdr, 2, 1 },
    { t_hlt, 1, 1 }, { t_movcr, 1, 1 }, { t_vmx, 4, 1 },
};
#define NTMPL (sizeof tmpls / sizeof tmpls[0])

/* ---- branch resolution ----------------------------------------------------- */

static int resolve(gctx *g, int i)
{
    dcase *c = g->c;
    pend *p = &g->pend[i];
    gen_insn *gi = &c->insn[p->ins];
    uint8_t buf[ZYDIS_MAX_INSTRUCTION_LENGTH];
    size_t len = 0;
    int64_t d = (int64_t)c->code_len - (gi->off + gi->len);

    p->rq.operands[0].imm.s = d;
    if (encode(g, &p->rq, buf, &len) < 0 || len != gi->len)
        return -1;
    memcpy(c->code + gi->off, buf, len);
    g->undef |= p->undef;
    if (g->df != p->df)
        g->df = -1;
    g->pend[i] = g->pend[--g->npend];
    return 0;
}

static int resolve_due(gctx *g, int all)
{
    for (int i = 0; i < g->npend;) {
        pend *p = &g->pend[i];
        gen_insn *gi = &g->c->insn[p->ins];
        int64_t d = (int64_t)g->c->code_len - (gi->off + gi->len);
        if (all || p->target <= g->group ||
            (p->short_only && d + MAX_GROUP_BYTES > 127)) {
            if (resolve(g, i) < 0)
                return -1;
            continue;
        }
        i++;
    }
    return 0;
}

/* ---- initial state ----------------------------------------------------------- */

static void put_desc(uint8_t *ram, unsigned idx, uint32_t base, uint32_t limit,
                     unsigned type, unsigned db, unsigned l, unsigned gran,
                     unsigned dpl)
{
    uint32_t lo = (limit & 0xffff) | (base & 0xffff) << 16;
    uint32_t hi = ((base >> 16) & 0xff) | type << 8 | 1u << 12 | dpl << 13 |
                  1u << 15 | ((limit >> 16) & 0xf) << 16 | l << 21 |
                  db << 22 | gran << 23 | (base >> 24) << 24;
    memcpy(ram + GDT_PA + idx * 8, &lo, 4);
    memcpy(ram + GDT_PA + idx * 8 + 4, &hi, 4);
}

/* The GDT shared by the protected modes. Entries 8..10 have the accessed
 * bit clear, so that segment loads (t_sreg) set it in memory. */
#define GDT_N 11
static const struct {
    uint32_t base, limit;
    uint8_t type, db, l, g, dpl;
} gdt[GDT_N] = {
    { 0, 0, 0, 0, 0, 0, 0 },
    { 0, 0xfffff, 0xb, 1, 0, 1, 0 },       /* 0x08 code32 */
    { 0, 0xfffff, 0x3, 1, 0, 1, 0 },       /* 0x10 data, flat */
    { 0x1000, 0xfffff, 0x3, 1, 0, 1, 0 },  /* 0x18 data, base 0x1000 */
    { 0x10000, 0xfffff, 0x3, 1, 0, 1, 0 }, /* 0x20 data, base 0x10000 */
    { 0x1234, 0xfffff, 0x3, 1, 0, 1, 0 },  /* 0x28 data, base 0x1234 */
    { 0, 0xfffff, 0xb, 0, 1, 1, 0 },       /* 0x30 code64 */
    { 0, 0xffff, 0x3, 0, 0, 0, 0 },        /* 0x38 data16: a 16-bit stack */
    { 0, 0xfffff, 0x2, 1, 0, 1, 0 },       /* 0x40 data, flat, not accessed */
    { 0x10000, 0xfffff, 0x2, 1, 0, 1, 3 }, /* 0x48 data, DPL 3, not accessed */
    { 0, 0xfffff, 0xa, 1, 0, 1, 0 },       /* 0x50 code32, not accessed */
};

static void seg_from_gdt(lc_segment *s, unsigned sel)
{
    unsigned i = sel >> 3;
    memset(s, 0, sizeof *s);
    s->selector = (uint16_t)sel;
    s->base = gdt[i].base;
    s->limit = gdt[i].g ? (gdt[i].limit << 12) | 0xfff : gdt[i].limit;
    s->type = gdt[i].type;
    s->dpl = gdt[i].dpl;
    s->present = 1;
    s->s = 1;
    s->db = gdt[i].db;
    s->l = gdt[i].l;
    s->g = gdt[i].g;
}

static void seg_real(lc_segment *s, unsigned sel, int code)
{
    memset(s, 0, sizeof *s);
    s->selector = (uint16_t)sel;
    s->base = (uint64_t)sel << 4;
    s->limit = 0xffff;
    s->type = code ? 0xb : 0x3;
    s->present = 1;
    s->s = 1;
}

static uint64_t pte_bits(gctx *g, int leaf)
{
    uint64_t e = 0x3;                   /* P, RW */
    if (chance(g, 50)) e |= 0x4;        /* U/S */
    if (chance(g, 15)) e |= 0x20;       /* A already set */
    if (leaf && chance(g, 10)) e |= 0x40; /* D already set */
    if (chance(g, 10)) e |= 0x8;        /* PWT */
    return e;
}

static void put64(uint8_t *ram, uint64_t pa, uint64_t v)
{
    memcpy(ram + pa, &v, 8);
}

void diff_perm(uint64_t seed, uint8_t perm[16])
{
    uint64_t x = seed ^ 0x7065726d;
    for (unsigned i = 0; i < 16; i++)
        perm[i] = (uint8_t)i;
    for (unsigned i = 15; i > 0; i--) {
        unsigned j = (unsigned)(splitmix64(&x) % (i + 1));
        uint8_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
}

static void build_paging(gctx *g)
{
    uint8_t *ram = g->c->ram;
    int lm = g->mode == DM_LONG64;
    const uint8_t *perm = g->o->perm;
    /* PT0: identity of 0..128 KiB */
    for (unsigned i = 0; i < RAM_SIZE / 0x1000; i++)
        put64(ram, PT_PT0_PA + i * 8, (uint64_t)i * 0x1000 | pte_bits(g, 1));
    /* PT1: the window */
    for (unsigned i = 0; i < 16; i++)
        put64(ram, PT_PT1_PA + i * 8,
              (DATA1_PA + (uint64_t)perm[i] * 0x1000) | pte_bits(g, 1));
    put64(ram, PT_PT1_PA + 16 * 8, MMIO_PA | pte_bits(g, 1));
    for (unsigned i = 0; i < (DATA0_END - DATA0_PA) / 0x1000; i++)
        put64(ram, PT_PT1_PA + (17 + i) * 8,
              (DATA0_PA + (uint64_t)i * 0x1000) | pte_bits(g, 1));
    put64(ram, PT_PT1_PA + 32 * 8, CODE_PA | pte_bits(g, 1));
    put64(ram, PT_PT1_PA + 33 * 8, STACK_PA | pte_bits(g, 1));
    /* PDs */
    put64(ram, PT_PDLO_PA, PT_PT0_PA | pte_bits(g, 0));
    put64(ram, PT_PDHI_PA, PT_PT1_PA | pte_bits(g, 0));
    put64(ram, PT_PDHI_PA + 8, 0x0 | 0x80 | pte_bits(g, 1));   /* 2 MiB */
    /* PDPT (PAE PDPTEs have only P, PWT, PCD) */
    if (lm) {
        put64(ram, PT_PDPT_PA, PT_PDLO_PA | pte_bits(g, 0));
        put64(ram, PT_PDPT_PA + 8, PT_PDHI_PA | pte_bits(g, 0));
        put64(ram, PT_PML4_PA, PT_PDPT_PA | pte_bits(g, 0));
        put64(ram, PT_PML4_PA + 256 * 8, PT_PDPT_PA | pte_bits(g, 0));
    } else {
        put64(ram, PT_PDPT_PA, PT_PDLO_PA | 1);
        put64(ram, PT_PDPT_PA + 8, PT_PDHI_PA | 1);
    }
}

static void init_state(gctx *g)
{
    dcase *c = g->c;
    lc_cpu_state *st = &c->st;
    int m = g->mode;

    memset(st, 0, sizeof *st);
    memset(c->ram, 0, sizeof c->ram);
    for (unsigned pa = DATA0_PA; pa < DATA1_END; pa += 8) {
        if (pa >= MMIO_PA && pa < MMIO_PA + MMIO_SIZE)
            continue;
        uint64_t v = rnd(g);
        if ((v & 0x3f) == 0)          /* some zero and all-ones qwords */
            v = (v & 0x40) ? 0 : ~0ull;
        put64(c->ram, pa, v);
    }
    for (unsigned pa = STACK_PA; pa < STACK_PA + 0x1000; pa += 8)
        put64(c->ram, pa, rnd(g));
    for (unsigned i = 1; i < GDT_N; i++)
        put_desc(c->ram, i, gdt[i].base, gdt[i].limit, gdt[i].type,
                 gdt[i].db, gdt[i].l, gdt[i].g, gdt[i].dpl);

    for (unsigned i = 0; i < 16; i++) {
        uint64_t v = rnd(g);
        switch (rn(g, 8)) {
        case 0: v = 0; break;
        case 1: v = ~0ull; break;
        case 2: v &= 0xff; break;
        case 3: v = (uint64_t)(int64_t)(int8_t)v; break;
        default: break;
        }
        st->gpr[i] = m == DM_LONG64 ? v : (i < 8 ? (uint32_t)v : 0);
    }
    uint64_t fl = 0x2 | (rnd(g) & (FL_STATUS | LC_RFLAGS_DF | LC_RFLAGS_IF));
    st->rflags = fl;
    g->df = (fl & LC_RFLAGS_DF) ? 1 : 0;
    g->undef = 0;
    g->nregs = m == DM_LONG64 ? 16 : 8;

    switch (m) {
    case DM_REAL: {
        static const uint16_t sels[] = { 0x0000, 0x0100, 0x0800, 0x0f00,
                                         0x1000, 0x0123 };
        seg_real(&st->seg[LC_CS], 0, 1);
        for (unsigned s = 0; s < 6; s++)
            if (s != LC_CS && s != LC_SS)
                seg_real(&st->seg[s], sels[rn(g, 6)], 0);
        unsigned ss = 0x100 * rn(g, 3);
        seg_real(&st->seg[LC_SS], ss, 0);
        st->gpr[LC_RSP] = (STACK_PA + 0x800) - ss * 16;
        st->rip = CODE_PA;
        c->code_la = CODE_PA;
        g->abits = 16;
        break;
    }
    case DM_PROT32:
    case DM_PAE: {
        static const uint16_t dsels[] = { 0x10, 0x18, 0x20, 0x28 };
        seg_from_gdt(&st->seg[LC_CS], 0x08);
        for (unsigned s = 0; s < 6; s++)
            if (s != LC_CS && s != LC_SS)
                seg_from_gdt(&st->seg[s], dsels[rn(g, 4)]);
        seg_from_gdt(&st->seg[LC_SS], chance(g, 25) ? 0x38 : 0x10);
        st->gpr[LC_RSP] = STACK_PA + 0x800;
        st->rip = CODE_PA;
        c->code_la = CODE_PA;
        st->cr0 = 0x11;
        if (m == DM_PAE) {
            st->cr0 |= LC_CR0_PG;
            st->cr4 = LC_CR4_PAE;
            st->cr3 = PT_PDPT_PA;
        }
        g->abits = 32;
        break;
    }
    case DM_LONG64: {
        seg_from_gdt(&st->seg[LC_CS], 0x30);
        seg_from_gdt(&st->seg[LC_SS], 0x10);
        for (unsigned s = 0; s < 6; s++) {
            if (s == LC_CS || s == LC_SS)
                continue;
            if (chance(g, 40)) {
                seg_from_gdt(&st->seg[s], 0x10);
            } else {
                /* null selector: KVM reports it unusable */
                memset(&st->seg[s], 0, sizeof st->seg[s]);
                st->seg[s].unusable = 1;
            }
        }
        static const uint64_t bases[] = { 0, 0x10000, WIN_LA, HIGH_ALIAS,
                                          0x123456789ull, 0x1000 };
        st->seg[LC_FS].base = g->o->native ? 0 : bases[rn(g, 6)];
        st->seg[LC_GS].base = g->o->native ? 0 : bases[rn(g, 6)];
        st->gpr[LC_RSP] = WIN_STACK_LA + 0x800;
        st->rip = WIN_CODE_LA;
        c->code_la = WIN_CODE_LA;
        st->cr0 = 0x80000011;
        st->cr4 = LC_CR4_PAE;
        st->cr3 = PT_PML4_PA;
        st->efer = LC_EFER_LME | LC_EFER_LMA;
        g->abits = 64;
        break;
    }
    }
    if (m != DM_REAL) {
        st->gdtr.base = GDT_PA;
        st->gdtr.limit = GDT_N * 8 - 1;
    }
    if (m == DM_PAE || m == DM_LONG64)
        build_paging(g);
    memcpy(g->cur, st->seg, sizeof g->cur);
    for (unsigned i = 0; i < N_MSRS; i++)
        c->msr[i] = (uint64_t)(int64_t)((int64_t)rnd(g) >> 17);  /* canonical */
    c->dev_seed = rnd(g);
    /* the fake VMM has a current VMCS (else every VMREAD/VMWRITE fails
     * with VMfailInvalid) */
    c->vmcs_valid = !chance(g, 10);
    c->xfirst_declined = 0;
    c->real = 0;                        /* (gen_code_case() sets it) */
    c->src_off = 0;
}

/* ---- the case ------------------------------------------------------------- */

void gen_case(dcase *c, int mode, uint64_t seed, uint64_t index,
              const gen_opts *o)
{
    gctx g;
    uint64_t s = seed * 0x9E3779B97F4A7C15ull ^ (uint64_t)mode << 56 ^ index;

    memset(&g, 0, sizeof g);
    g.c = c;
    g.mode = mode;
    g.o = o;
    xo_seed(g.r, s);
    c->mode = mode;
    c->seed = s;
    c->code_len = 0;
    c->ninsns = 0;
    c->native_ok = (uint8_t)(o->native && mode == DM_LONG64);
    init_state(&g);
    build_regions(&g);

    unsigned ngroups = 1 + rn(&g, o->max_groups ? o->max_groups : 12);
    unsigned total = 0;
    for (unsigned i = 0; i < NTMPL; i++)
        if (!(tmpls[i].sys && c->native_ok))
            total += tmpls[i].weight;

    for (g.group = 0; g.group < (int)ngroups; g.group++) {
        if (resolve_due(&g, 0) < 0)
            break;
        for (int attempt = 0; attempt < 8; attempt++) {
            uint32_t len0 = c->code_len, n0 = c->ninsns;
            uint32_t undef0 = g.undef;
            int df0 = g.df, np0 = g.npend;
            lc_segment cur0[6];
            memcpy(cur0, g.cur, sizeof cur0);
            unsigned pick = rn(&g, total), i = 0;
            for (;; i++) {
                if (tmpls[i].sys && c->native_ok)
                    continue;
                if (pick < tmpls[i].weight)
                    break;
                pick -= tmpls[i].weight;
            }
            int r = tmpls[i].fn(&g);
            if (r == 0 && c->code_len - len0 <= MAX_GROUP_BYTES)
                break;
            c->code_len = len0;
            c->ninsns = n0;
            g.undef = undef0;
            g.df = df0;
            g.npend = np0;
            memcpy(g.cur, cur0, sizeof cur0);
        }
        if (c->code_len > CODE_MAX - 80)
            break;
    }
    if (c->ninsns == 0) {     /* every attempt failed: keep the case valid */
        ZydisEncoderRequest rq;
        req_init(&rq, ZYDIS_MNEMONIC_NOP);
        emit(&g, &rq, LC_OP_NOP);
    }
    if (resolve_due(&g, 1) < 0) {
        /* cannot happen with the bounds above; keep the case valid */
        c->code_len = 0;
        c->ninsns = 0;
    }
    for (uint32_t i = 0; i < c->ninsns; i++)
        gen_cov[mode][c->insn[i].op][width_index(c->insn[i].bits)]++;
    memcpy(c->ram + (CODE_PA), c->code, c->code_len);
    c->end_la = c->code_la + c->code_len;
}

/* ---- engine mode: cluster cases -------------------------------------------- */

/* A weakly exiting instruction aimed at the MMIO page: a MOV load or
 * store, or an ALU operation on it. */
static int t_mmio(gctx *g)
{
    static const struct { ZydisMnemonic m; unsigned op; } alu[6] = {
        { ZYDIS_MNEMONIC_ADD, LC_OP_ADD }, { ZYDIS_MNEMONIC_OR, LC_OP_OR },
        { ZYDIS_MNEMONIC_AND, LC_OP_AND }, { ZYDIS_MNEMONIC_SUB, LC_OP_SUB },
        { ZYDIS_MNEMONIC_XOR, LC_OP_XOR }, { ZYDIS_MNEMONIC_CMP, LC_OP_CMP },
    };
    unsigned w = pick_width(g, 1), k = rn(g, 6);
    int flags = MK_MMIO | (chance(g, 30) ? MK_ABS : 0);
    ZydisEncoderRequest rq;
    memspec m;

    if (k < 2) {
        req_init(&rq, ZYDIS_MNEMONIC_MOV);
        op_reg(&rq, dst_reg(g, w));
        if (mk_mem(g, w / 8, MK_READ | flags, &m) < 0)
            return -1;
        op_mem(&rq, &m);
        return emit_m(g, &rq, LC_OP_MOV, &m) < 0 ? -1 : 0;
    }
    if (k < 4) {
        req_init(&rq, ZYDIS_MNEMONIC_MOV);
        if (mk_mem(g, w / 8, MK_WRITE | flags, &m) < 0)
            return -1;
        op_mem(&rq, &m);
        if (chance(g, 50))
            op_reg(&rq, src_reg(g, w));
        else
            op_imm(&rq, rand_imm(g, w));
        return emit_m(g, &rq, LC_OP_MOV, &m) < 0 ? -1 : 0;
    }
    k = rn(g, 6);
    req_init(&rq, alu[k].m);
    if (mk_mem(g, w / 8, MK_READ | (alu[k].op != LC_OP_CMP ? MK_WRITE : 0) |
               flags, &m) < 0)
        return -1;
    op_mem(&rq, &m);
    if (chance(g, 50))
        op_reg(&rq, src_reg(g, w));
    else
        op_imm(&rq, rand_imm(g, w));
    return emit_m(g, &rq, alu[k].op, &m) < 0 ? -1 : 0;
}

/* A store into the code page: past the code (the page's free tail), or
 * onto code bytes already emitted, possibly through an alias of the code
 * page in linear space. */
static int t_smc(gctx *g)
{
    dcase *c = g->c;
    unsigned w = pick_width(g, 1), bytes = w / 8;
    int oncode = chance(g, 40);
    uint64_t off, la;
    ZydisEncoderRequest rq;
    memspec m;
    int r;

    /* onto code bytes that have been emitted (not ahead: Unicorn would
     * translate the garbled bytes after the store, and 2.0.1 aborts on
     * some encodings, UNICORN_BUGS.md exclusion 6) */
    if (oncode)
        off = rn(g, c->code_len);
    else
        off = CODE_MAX + 16 + rn(g, 0x1000 - CODE_MAX - 16 - 8);
    if (off + bytes > 0x1000)
        off = 0x1000 - bytes;
    la = c->code_la + off;
    if (g->mode == DM_PAE && chance(g, 30))
        la = BIG_LA + CODE_PA + off;
    if (g->mode == DM_LONG64 && chance(g, 40)) {
        static const uint64_t alias[3] = { CODE_PA, BIG_LA + CODE_PA,
                                           HIGH_ALIAS + WIN_CODE_LA };
        la = alias[rn(g, 3)] + off;
    }
    req_init(&rq, ZYDIS_MNEMONIC_MOV);
    g->force = 1;
    g->force_la = la;
    r = mk_mem(g, bytes, MK_WRITE, &m);
    g->force = 0;
    if (r < 0)
        return -1;
    op_mem(&rq, &m);
    if (chance(g, 50))
        op_reg(&rq, src_reg(g, w));
    else
        op_imm(&rq, rand_imm(g, w));
    g->next_flags |= GI_SMC | (oncode ? GI_SMC_CODE : GI_SMC_DATA);
    return emit_m(g, &rq, LC_OP_MOV, &m) < 0 ? -1 : 0;
}

/* One instruction of a loop body: touches only rAX, rDX, rBX, RAM, MMIO
 * and ports, never the loop counter. */
static int loop_item(gctx *g)
{
    static const int regs[3] = { LC_RAX, LC_RDX, LC_RBX };
    static const struct { ZydisMnemonic m; unsigned op; } alu[5] = {
        { ZYDIS_MNEMONIC_ADD, LC_OP_ADD }, { ZYDIS_MNEMONIC_OR, LC_OP_OR },
        { ZYDIS_MNEMONIC_AND, LC_OP_AND }, { ZYDIS_MNEMONIC_SUB, LC_OP_SUB },
        { ZYDIS_MNEMONIC_XOR, LC_OP_XOR },
    };
    unsigned w = 8u << rn(g, 3);
    ZydisEncoderRequest rq;
    memspec m;

    switch (rn(g, 6)) {
    case 0: {
        unsigned k = rn(g, 5);
        req_init(&rq, alu[k].m);
        op_reg(&rq, gpr(w, (unsigned)regs[rn(g, 3)]));
        if (chance(g, 50))
            op_reg(&rq, gpr(w, (unsigned)regs[rn(g, 3)]));
        else
            op_imm(&rq, rand_imm(g, w));
        return emit(g, &rq, alu[k].op) < 0 ? -1 : 0;
    }
    case 1:
        req_init(&rq, ZYDIS_MNEMONIC_MOV);
        if (mk_mem(g, w / 8, MK_WRITE | MK_ABS | MK_NOMMIO, &m) < 0)
            return -1;
        op_mem(&rq, &m);
        op_reg(&rq, gpr(w, (unsigned)regs[rn(g, 3)]));
        return emit_m(g, &rq, LC_OP_MOV, &m) < 0 ? -1 : 0;
    case 2:
        req_init(&rq, ZYDIS_MNEMONIC_IN);
        op_reg(&rq, gpr(w, LC_RAX));
        op_imm(&rq, rn(g, 256));
        return emit(g, &rq, LC_OP_IN) < 0 ? -1 : 0;
    case 3:
        req_init(&rq, ZYDIS_MNEMONIC_OUT);
        op_imm(&rq, rn(g, 256));
        op_reg(&rq, gpr(w, LC_RAX));
        return emit(g, &rq, LC_OP_OUT) < 0 ? -1 : 0;
    default: {
        int load = chance(g, 50);
        req_init(&rq, ZYDIS_MNEMONIC_MOV);
        if (load)
            op_reg(&rq, gpr(w, (unsigned)regs[rn(g, 3)]));
        if (mk_mem(g, w / 8, (load ? MK_READ : MK_WRITE) | MK_ABS | MK_MMIO,
                   &m) < 0)
            return -1;
        op_mem(&rq, &m);
        if (!load)
            op_reg(&rq, gpr(w, (unsigned)regs[rn(g, 3)]));
        return emit_m(g, &rq, LC_OP_MOV, &m) < 0 ? -1 : 0;
    }
    }
}

/* A short backward branch to code offset `head`. */
static int emit_back(gctx *g, ZydisEncoderRequest *rq, unsigned op,
                     uint32_t head)
{
    dcase *c = g->c;
    uint8_t buf[ZYDIS_MAX_INSTRUCTION_LENGTH];
    size_t len = 0;

    rq->branch_type = ZYDIS_BRANCH_TYPE_SHORT;
    rq->branch_width = ZYDIS_BRANCH_WIDTH_8;
    op_imm(rq, 0);
    int k = emit(g, rq, op);
    if (k < 0)
        return -1;
    gen_insn *gi = &c->insn[k];
    int64_t d = (int64_t)head - (int64_t)(gi->off + gi->len);
    if (d < -128)
        return -1;
    rq->operands[rq->operand_count - 1].imm.s = d;
    if (encode(g, rq, buf, &len) < 0 || len != gi->len)
        return -1;
    memcpy(c->code + gi->off, buf, len);
    return k;
}

/* Point the relative branch at instruction k (encoded from rq) to code
 * offset `to`, keeping its length. */
static int patch_rel(gctx *g, ZydisEncoderRequest *rq, int k, uint32_t to)
{
    dcase *c = g->c;
    uint8_t buf[ZYDIS_MAX_INSTRUCTION_LENGTH];
    size_t len = 0;
    int64_t d = (int64_t)to - (int64_t)(c->insn[k].off + c->insn[k].len);

    if (rq->branch_width == ZYDIS_BRANCH_WIDTH_8 && (d < -128 || d > 127))
        return -1;
    rq->operands[rq->operand_count - 1].imm.s = d;
    if (encode(g, rq, buf, &len) < 0 || len != c->insn[k].len)
        return -1;
    memcpy(c->code + c->insn[k].off, buf, len);
    return 0;
}

/* The device read of a polling loop: IN AL from a port, or a byte load
 * from MMIO. */
static int poll_read(gctx *g)
{
    ZydisEncoderRequest rq;

    if (chance(g, 50)) {
        req_init(&rq, ZYDIS_MNEMONIC_IN);
        op_reg(&rq, ZYDIS_REGISTER_AL);
        op_imm(&rq, rn(g, 256));
        return emit(g, &rq, LC_OP_IN) < 0 ? -1 : 0;
    }
    memspec m;
    req_init(&rq, ZYDIS_MNEMONIC_MOV);
    op_reg(&rq, ZYDIS_REGISTER_AL);
    if (mk_mem(g, 1, MK_READ | MK_ABS | MK_MMIO, &m) < 0)
        return -1;
    op_mem(&rq, &m);
    return emit_m(g, &rq, LC_OP_MOV, &m) < 0 ? -1 : 0;
}


/* The end of a polling loop's iteration: a device read, `test al, bit`,
 * and a Jcc back to `head` taken on one value of the bit. */
static int poll_tail(gctx *g, uint32_t head)
{
    ZydisEncoderRequest rq;

    if (poll_read(g) < 0)
        return -1;
    req_init(&rq, ZYDIS_MNEMONIC_TEST);
    op_reg(&rq, ZYDIS_REGISTER_AL);
    op_imm(&rq, 1u << rn(g, 8));
    if (emit(g, &rq, LC_OP_TEST) < 0)
        return -1;
    req_init(&rq, chance(g, 50) ? ZYDIS_MNEMONIC_JNZ : ZYDIS_MNEMONIC_JZ);
    return emit_back(g, &rq, LC_OP_JCC, head) < 0 ? -1 : 0;
}

/* A poll whose exit test comes before the device read (translator/
 * cflow.c, calls.c): `[jmp 2f;] 1: dec ecx; jz 3f; 2: body; read; test
 * al,bit; jnz 1b; 3:` with a count of 1..5. Entered at 2 (a loop rotated
 * as compilers do), the walk meets the backward JNZ before the head:
 * the speculative follow of a loop head the walk has not seen. */
static int t_poll_count_first(gctx *g)
{
    dcase *c = g->c;
    ZydisEncoderRequest rq, jz, jmp;
    unsigned ab = g->abits == 64 ? 32 : g->abits, nbody = rn(g, 3);
    int rotated = chance(g, 50), kj = -1, kz;
    uint32_t head, entry, undef_jmp = 0, undef_jz;

    if (emit_setup(g, gpr(ab, LC_RCX), 1 + rn(g, 5)) < 0)
        return -1;
    if (rotated) {
        req_init(&jmp, ZYDIS_MNEMONIC_JMP);
        op_imm(&jmp, 0);
        jmp.branch_type = ZYDIS_BRANCH_TYPE_SHORT;
        jmp.branch_width = ZYDIS_BRANCH_WIDTH_8;
        undef_jmp = g->undef;
        if ((kj = emit(g, &jmp, LC_OP_JMP)) < 0)
            return -1;
    }
    head = c->code_len;
    req_init(&rq, ZYDIS_MNEMONIC_DEC);
    op_reg(&rq, gpr(ab, LC_RCX));
    if (emit(g, &rq, LC_OP_DEC) < 0)
        return -1;
    req_init(&jz, ZYDIS_MNEMONIC_JZ);
    op_imm(&jz, 0);
    jz.branch_type = ZYDIS_BRANCH_TYPE_SHORT;
    jz.branch_width = ZYDIS_BRANCH_WIDTH_8;
    undef_jz = g->undef;
    if ((kz = emit(g, &jz, LC_OP_JCC)) < 0)
        return -1;
    entry = c->code_len;
    g->undef |= undef_jmp;          /* reached from the JMP too */
    for (unsigned i = 0; i < nbody; i++)
        if (loop_item(g) < 0)
            return -1;
    if (poll_tail(g, head) < 0)
        return -1;
    g->undef |= undef_jz;           /* the count ran out */
    if (patch_rel(g, &jz, kz, c->code_len) < 0 ||
        (rotated && patch_rel(g, &jmp, kj, entry) < 0))
        return -1;
    return 0;
}

/* A small loop, one group: LOOP over a body with a counter of 1..5 in
 * rCX; or a body ending in a device read (IN, or a load from MMIO) whose
 * answer decides a backward Jcc (each iteration leaves with probability
 * 1/2); or a counted poll whose exit test comes first (above). The body
 * may hold strongly or weakly exiting instructions, or none (then the
 * backedge may not stay in a cluster). */
static int t_loop(gctx *g)
{
    dcase *c = g->c;
    ZydisEncoderRequest rq;
    uint32_t n0 = c->ninsns, head;
    unsigned nbody = rn(g, 3), kind = rn(g, 10);

    if (kind >= 7) {
        if (t_poll_count_first(g) < 0)
            return -1;
    } else if (kind < 4) {
        unsigned ab = g->abits == 64 ? 32 : g->abits;
        if (emit_setup(g, gpr(ab, LC_RCX), 1 + rn(g, 5)) < 0)
            return -1;
        head = c->code_len;
        for (unsigned i = 0; i < nbody + 1; i++)
            if (loop_item(g) < 0)
                return -1;
        req_init(&rq, ZYDIS_MNEMONIC_LOOP);
        if (emit_back(g, &rq, LC_OP_LOOP, head) < 0)
            return -1;
    } else {
        head = c->code_len;
        for (unsigned i = 0; i < nbody; i++)
            if (loop_item(g) < 0)
                return -1;
        if (poll_tail(g, head) < 0)
            return -1;
    }
    for (uint32_t i = n0; i < c->ninsns; i++)
        c->insn[i].flags |= GI_LOOP;
    return 0;
}

/* The exiting instruction the case starts with: IN/OUT (port in an
 * immediate or in DX, set in the initial state), CPUID, RDMSR or WRMSR,
 * with no helper before it. Fills c->xfirst. */
static int first_exit(gctx *g)
{
    dcase *c = g->c;
    lc_cpu_state *st = &c->st;
    lc_exit *x = &c->xfirst;
    ZydisEncoderRequest rq;
    unsigned k = rn(g, 24);
    int i;

    memset(x, 0, sizeof *x);
    x->rip = LC_EXIT_RIP_AT;
    if (k < 3) {
        /* a weakly exiting one: MOV to or from MMIO, a store maybe
         * followed by the adjacent store of an exit pair (s3) */
        unsigned w = 8u << rn(g, 3), reg = rn(g, 4);
        int store = chance(g, 70);
        memspec m;
        req_init(&rq, ZYDIS_MNEMONIC_MOV);
        if (!store)
            op_reg(&rq, gpr(w, reg));
        if (mk_mem(g, w / 8, (store ? MK_WRITE : MK_READ) | MK_ABS | MK_MMIO,
                   &m) < 0 || !(g->next_flags & GI_MMIO))
            return -1;
        op_mem(&rq, &m);
        if (store)
            op_reg(&rq, gpr(w, reg));
        if ((i = emit_m(g, &rq, LC_OP_MOV, &m)) < 0)
            return -1;
        x->kind = LC_EXIT_MMIO;
        x->u.mmio.gpa = MMIO_PA + (g->last_t & 0xfff);
        x->u.mmio.len = (uint8_t)(w / 8);
        x->u.mmio.is_write = (uint8_t)store;
        if (store)
            x->u.mmio.value = st->gpr[reg] & mask_bits(w);
        x->insn_len = chance(g, 50) ? c->insn[i].len : 0;
        int64_t dw = chance(g, 50) ? (int64_t)(w / 8) : -(int64_t)(w / 8);
        uint64_t po = (g->last_t & 0xfff) + (uint64_t)dw;
        if (store && chance(g, 60) && po <= 0x1000 - w / 8) {
            /* the pair: same form, the neighbouring address */
            memspec m2 = m;
            m2.op.mem.displacement += dw;
            m2.ea += (uint64_t)dw;
            req_init(&rq, ZYDIS_MNEMONIC_MOV);
            op_mem(&rq, &m2);
            op_reg(&rq, gpr(w, rn(g, 4)));
            g->next_flags |= GI_MMIO;
            g->want_abits = m.abits;
            emit_m(g, &rq, LC_OP_MOV, &m2);   /* failing is fine */
            g->next_flags = 0;
            g->want_abits = 0;
        }
        return 0;
    }
    if (k < 12) {
        unsigned w = 8u << rn(g, 3);
        int out = chance(g, 50);
        uint16_t port;
        req_init(&rq, out ? ZYDIS_MNEMONIC_OUT : ZYDIS_MNEMONIC_IN);
        if (chance(g, 50)) {
            port = (uint16_t)rnd(g);
            st->gpr[LC_RDX] = (st->gpr[LC_RDX] & ~0xffffull) | port;
            if (out) {
                op_reg(&rq, ZYDIS_REGISTER_DX);
                op_reg(&rq, gpr(w, 0));
            } else {
                op_reg(&rq, gpr(w, 0));
                op_reg(&rq, ZYDIS_REGISTER_DX);
            }
        } else {
            port = (uint16_t)rn(g, 256);
            if (out) {
                op_imm(&rq, port);
                op_reg(&rq, gpr(w, 0));
            } else {
                op_reg(&rq, gpr(w, 0));
                op_imm(&rq, port);
            }
        }
        if ((i = emit(g, &rq, out ? LC_OP_OUT : LC_OP_IN)) < 0)
            return -1;
        x->kind = LC_EXIT_IO;
        x->u.io.port = port;
        x->u.io.size = (uint8_t)(w / 8);
        x->u.io.is_out = (uint8_t)out;
        if (out)
            x->u.io.value = (uint32_t)(st->gpr[LC_RAX] & mask_bits(w));
    } else if (k < 17) {
        uint32_t leaf = chance(g, 70) ? rn(g, 0x20) : 0x80000000u + rn(g, 9);
        st->gpr[LC_RAX] = leaf;
        if (chance(g, 50))
            st->gpr[LC_RCX] = rn(g, 4);
        req_init(&rq, ZYDIS_MNEMONIC_CPUID);
        if ((i = emit(g, &rq, LC_OP_CPUID)) < 0)
            return -1;
        x->kind = LC_EXIT_CPUID;
    } else if (k >= 20) {
        /* HLT, VMCALL, VMREAD, VMWRITE (issue 16); VMREAD/VMWRITE are #UD
         * in real mode, no exit: VMCALL there. Their registers are set in
         * the initial state (no helper before the first instruction). */
        unsigned kk = k - 20, w = is64(g) ? 64 : 32;
        if (kk >= 2 && g->mode == DM_REAL)
            kk = 1;
        if (kk == 0) {
            req_init(&rq, ZYDIS_MNEMONIC_HLT);
            if ((i = emit(g, &rq, LC_OP_HLT)) < 0)
                return -1;
            x->kind = LC_EXIT_HLT;
        } else if (kk == 1) {
            req_init(&rq, ZYDIS_MNEMONIC_VMCALL);
            if ((i = emit(g, &rq, LC_OP_VMCALL)) < 0)
                return -1;
            x->kind = LC_EXIT_VMCALL;
        } else {
            int wr = kk == 3;
            /* rAX, rCX or rDX: t_call leaves them to the first exit's
             * facts in the initial state (it may load the others there) */
            unsigned fr = rn(g, 3);
            uint64_t field = pick_field(g, wr);
            memspec m;
            /* a memory source too when the VMM fails it: the engine
             * must decline with the source's accessed bits untouched */
            int um = chance(g, 40);
            st->gpr[fr] = field;
            req_init(&rq, wr ? ZYDIS_MNEMONIC_VMWRITE : ZYDIS_MNEMONIC_VMREAD);
            if (wr)
                op_reg(&rq, gpr(w, fr));
            if (um) {
                if (mk_mem(g, w / 8, (wr ? MK_READ : MK_WRITE) | MK_ABS |
                           MK_NOMMIO, &m) < 0)
                    return -1;
                op_mem(&rq, &m);
            } else {
                op_reg(&rq, gpr(w, rn(g, 3)));
            }
            if (!wr)
                op_reg(&rq, gpr(w, fr));
            if ((i = emit_m(g, &rq, wr ? LC_OP_VMWRITE : LC_OP_VMREAD,
                            um ? &m : NULL)) < 0)
                return -1;
            x->kind = wr ? LC_EXIT_VMWRITE : LC_EXIT_VMREAD;
            /* the VMM fails it: the engine must decline the exit */
            if (vmx_check(&(dev_side){ .vmcs_valid = c->vmcs_valid }, wr,
                          field))
                c->xfirst_declined = 1;
        }
    } else {
        int wr = chance(g, 50);
        uint32_t msr = diff_msr_ids[rn(g, N_MSRS)];
        st->gpr[LC_RCX] = msr;
        req_init(&rq, wr ? ZYDIS_MNEMONIC_WRMSR : ZYDIS_MNEMONIC_RDMSR);
        if ((i = emit(g, &rq, wr ? LC_OP_WRMSR : LC_OP_RDMSR)) < 0)
            return -1;
        x->kind = wr ? LC_EXIT_WRMSR : LC_EXIT_RDMSR;
        x->u.msr = msr;
    }
    x->insn_len = chance(g, 50) ? c->insn[i].len : 0;
    return 0;
}

/* Template `t` at the end of the code, or, if it fails, all of it undone,
 * the flag and DF bookkeeping too: a flag the dropped instructions defined
 * is as undefined as before (a JO after `shr dl, 27` and a dropped body
 * read OF). */
static void emit_or_undo(gctx *g, tmpl_fn t)
{
    dcase *c = g->c;
    uint32_t len0 = c->code_len, n0 = c->ninsns, und = g->undef;
    int df = g->df, np = g->npend;
    lc_segment cur[6];

    memcpy(cur, g->cur, sizeof cur);
    if (t(g) < 0) {
        c->code_len = len0;
        c->ninsns = n0;
        g->undef = und;
        g->df = df;
        g->npend = np;
        memcpy(g->cur, cur, sizeof cur);
    }
}

/* Calls (translator/calls.c): `call f; [gap filler;] jmp over; f: body;
 * ret [n]; over:`.
 * The call is direct, or through a register that holds f at the start of
 * the case (or does not: a mispredicted indirect call). Now and then the
 * body replaces its return address with `over` (a mispredicted RET, which
 * the run must complete and then end at). The body is one or two other
 * templates (port I/O, MMIO, ALU, MOV, PUSH/POP). */
static int t_call(gctx *g)
{
    /* balanced bodies only: a POP or PUSH there would return to a random
     * address, which Unicorn cannot be stopped at */
    static const tmpl_fn body[] = { t_io, t_mmio, t_alu, t_mov, t_xchg,
                                    t_lea, t_io, t_mmio };
    dcase *c = g->c;
    ZydisEncoderRequest call, jmp, rq, push;
    uint8_t buf[ZYDIS_MAX_INSTRUCTION_LENGTH];
    size_t len;
    int kc, kj, kr, kp = -1, km = -1, ind = chance(g, 30), reg = -1, swap = chance(g, 12);
    uint32_t f_off, over_off, undef0, und_pre, und_mid;
    uint64_t cs_base = c->st.seg[LC_CS].base;
    lcd_insn li;

    req_init(&call, ZYDIS_MNEMONIC_CALL);
    if (ind) {
        unsigned w = is64(g) ? 64 : g->mode == DM_REAL ? 16 : 32;
        /* not rAX, rCX, rDX: the first exit's reported facts (port,
         * value, MSR) come from the initial state; not rSP */
        do reg = (int)rn(g, g->nregs); while (reg == LC_RSP || reg < 3);
        /* the register is loaded right before the call (patched below);
         * the translation predicts the value the load gives it
         * (translator/values.c), not the one it had at the exit */
        km = emit_setup(g, gpr(w == 64 ? 32 : w, (unsigned)reg),
                        w == 16 ? 0x7ff0 : 0x7ff00000);
        if (km < 0)
            return -1;
        op_reg(&call, gpr(w, (unsigned)reg));
    } else {
        op_imm(&call, 0);
        call.branch_type = ZYDIS_BRANCH_TYPE_NEAR;
        call.branch_width = g->mode == DM_REAL ? ZYDIS_BRANCH_WIDTH_16
                                               : ZYDIS_BRANCH_WIDTH_32;
    }
    kc = emit(g, &call, LC_OP_CALL);
    if (kc < 0)
        return -1;
    /* Now and then a gap filler at the return address: the translation
     * runs it in one chain with the RET (translator/run.c), and a
     * mispredicted RET must leave before it. It runs after the body but
     * is tracked before it, and is skipped when the RET or the call goes
     * to `over`: the flags it may leave undefined, or those undefined
     * before it, stay undefined at `over` (merged below). */
    und_pre = g->undef;
    if (chance(g, 40)) {
        static const tmpl_fn mid_t[] = { t_alu, t_mov };
        emit_or_undo(g, mid_t[rn(g, 2)]);
    }
    und_mid = g->undef;
    req_init(&jmp, ZYDIS_MNEMONIC_JMP);
    op_imm(&jmp, 0);
    jmp.branch_type = ZYDIS_BRANCH_TYPE_SHORT;
    jmp.branch_width = ZYDIS_BRANCH_WIDTH_8;
    kj = emit(g, &jmp, LC_OP_JMP);
    if (kj < 0)
        return -1;
    f_off = c->code_len;
    /* a mispredicted indirect call goes straight to `over`: the flags the
     * body defines are not defined there (merged after the RET below) */
    undef0 = g->undef;
    for (unsigned n = 1 + rn(g, 2), i = 0; i < n; i++)
        emit_or_undo(g, body[rn(g, 8)]);
    if (swap) {
        /* overwrite the return address with `over` (patched below): one
         * instruction, so a code replacement by a NOP leaves a valid
         * return either way */
        unsigned w = is64(g) ? 64 : g->mode == DM_REAL ? 16 : 32;
        ZydisEncoderOperand *o;
        int r;
        req_init(&push, ZYDIS_MNEMONIC_MOV);
        o = &push.operands[push.operand_count++];
        o->type = ZYDIS_OPERAND_TYPE_MEMORY;
        o->mem.base = is64(g) ? ZYDIS_REGISTER_RSP : ZYDIS_REGISTER_ESP;
        o->mem.size = (ZyanU16)(w / 8);
        push.address_size_hint = is64(g) ? ZYDIS_ADDRESS_SIZE_HINT_64
                                         : ZYDIS_ADDRESS_SIZE_HINT_32;
        op_imm(&push, w == 16 ? 0x7ff0 : 0x7ff00000);
        r = emit(g, &push, LC_OP_MOV);
        if (r < 0)
            return -1;
        kp = r;
    }
    req_init(&rq, ZYDIS_MNEMONIC_RET);
    if (chance(g, 25))
        op_imm(&rq, 2 * rn(g, 5));
    kr = emit(g, &rq, LC_OP_RET);
    if (kr < 0)
        return -1;
    if (ind)
        g->undef |= undef0;
    g->undef |= und_pre | und_mid;
    over_off = c->code_len;
    /* patch the jump over the function */
    if (over_off - (c->insn[kj].off + c->insn[kj].len) > 127)
        return -1;
    jmp.operands[0].imm.s = over_off - (c->insn[kj].off + c->insn[kj].len);
    if (encode(g, &jmp, buf, &len) < 0 || len != c->insn[kj].len)
        return -1;
    memcpy(c->code + c->insn[kj].off, buf, len);
    if (kp >= 0) {
        push.operands[1].imm.u = c->code_la + over_off - cs_base;
        if (encode(g, &push, buf, &len) < 0 || len != c->insn[kp].len)
            return -1;
        memcpy(c->code + c->insn[kp].off, buf, len);
    }
    /* and the call into it */
    if (ind) {
        /* to f, or (a quarter of the time) straight to `over`; the value
         * at the exit agrees most of the time */
        uint64_t tf = c->code_la + f_off - cs_base;
        uint64_t to = c->code_la + over_off - cs_base;
        int hit = chance(g, 75);
        uint64_t t = hit ? tf : to;
        ZydisEncoderRequest mv;
        req_init(&mv, ZYDIS_MNEMONIC_MOV);
        op_reg(&mv, gpr(is64(g) ? 32 : g->mode == DM_REAL ? 16 : 32,
                        (unsigned)reg));
        op_imm(&mv, t);
        if (encode(g, &mv, buf, &len) < 0 || len != c->insn[km].len)
            return -1;
        memcpy(c->code + c->insn[km].off, buf, len);
        /* the value at the exit: the same most of the time, else the
         * other valid target (never a random one: Unicorn cannot stop at
         * an unmapped address); the translation predicts the loaded one
         * either way */
        c->st.gpr[reg] = chance(g, 70) ? t : hit ? to : tf;
    } else {
        call.operands[0].imm.s = (int64_t)f_off -
                                 (c->insn[kc].off + c->insn[kc].len);
        if (encode(g, &call, buf, &len) < 0 || len != c->insn[kc].len)
            return -1;
        memcpy(c->code + c->insn[kc].off, buf, len);
    }
    if (lcd_decode(dmode_cpu_mode(g->mode), c->code + c->insn[kc].off,
                   c->insn[kc].len, &li) != LC_OK || li.info.op != LC_OP_CALL)
        return -1;
    return 0;
}

/* A conditional branch over a JMP or CALL to the code after it
 * (translator/calls.c: the walk resumes at the branch's target when its
 * line ends at the transfer, or in the code it followed the transfer to):
 * `jcc 1f; jmp/call L; 1:`, L in one of the next groups. */
static int t_skip(gctx *g)
{
    ZydisEncoderRequest jcc, tr;
    unsigned cc = rn(g, 16);
    int call = chance(g, 40), kc, kt;

    if (g->npend >= MAX_PEND || ensure_flags(g, flag_uses(LC_OP_JCC, cc)) < 0)
        return -1;
    req_init(&jcc, cc_jcc[cc]);
    op_imm(&jcc, 0);
    jcc.branch_type = ZYDIS_BRANCH_TYPE_SHORT;
    jcc.branch_width = ZYDIS_BRANCH_WIDTH_8;
    if ((kc = emit(g, &jcc, LC_OP_JCC)) < 0)
        return -1;
    req_init(&tr, call ? ZYDIS_MNEMONIC_CALL : ZYDIS_MNEMONIC_JMP);
    op_imm(&tr, 0);
    tr.branch_type = ZYDIS_BRANCH_TYPE_NEAR;
    tr.branch_width = g->mode == DM_REAL ? ZYDIS_BRANCH_WIDTH_16
                                         : ZYDIS_BRANCH_WIDTH_32;
    if ((kt = emit(g, &tr, call ? LC_OP_CALL : LC_OP_JMP)) < 0)
        return -1;
    pend *p = &g->pend[g->npend++];
    p->target = g->group + 1 + (int)rn(g, 4);
    p->undef = g->undef;
    p->df = g->df;
    p->ins = (uint16_t)kt;
    p->short_only = 0;
    p->rq = tr;
    return patch_rel(g, &jcc, kc, g->c->code_len);
}

static const struct { tmpl_fn fn; unsigned weight; } ctmpls[] = {
    { t_alu, 6 }, { t_test, 2 }, { t_unary, 3 }, { t_shift, 3 },
    { t_mul, 2 }, { t_mov, 6 }, { t_movx, 2 }, { t_lea, 2 }, { t_xchg, 2 },
    { t_push, 2 }, { t_pop, 2 }, { t_cmov, 2 }, { t_setcc, 2 },
    { t_misc, 2 }, { t_flagop, 2 }, { t_branch, 9 }, { t_io, 10 },
    { t_strio, 3 }, { t_sys, 5 }, { t_mmio, 14 }, { t_loop, 14 },
    { t_smc, 3 }, { t_call, 10 }, { t_skip, 6 },
    { t_div, 2 }, { t_bt, 3 }, { t_cli_sti, 2 }, { t_stackops, 2 },
    { t_rdtsc, 1 }, { t_sreg, 4 }, { t_movdr, 1 },
    { t_hlt, 1 }, { t_movcr, 1 }, { t_vmx, 4 },
};
#define NCTMPL (sizeof ctmpls / sizeof ctmpls[0])

/* An engine-mode case's start (gen_cluster_case(), gen_code_case()): the
 * generator's context seeded with `s`, the random state, RAM and page
 * tables, no code yet. */
static void cluster_case_begin(gctx *g, dcase *c, int mode, uint64_t s,
                               const gen_opts *o)
{
    memset(g, 0, sizeof *g);
    g->c = c;
    g->mode = mode;
    g->o = o;
    xo_seed(g->r, s);
    c->mode = mode;
    c->seed = s;
    c->code_len = 0;
    c->ninsns = 0;
    c->native_ok = 0;
    g->cluster = 1;
    init_state(g);
    build_regions(g);
}

void gen_cluster_case(dcase *c, int mode, uint64_t seed, uint64_t index,
                      const gen_opts *o)
{
    gctx g;
    uint64_t s = (seed * 0x9E3779B97F4A7C15ull ^ (uint64_t)mode << 56 ^ index)
                 + 0x636c7573746572ull;

    cluster_case_begin(&g, c, mode, s, o);
    /* Now and then the stack lies in the code page, above the code: every
     * push and call is then a store into the cluster's own code frame
     * (an SMC stop with LC_TECH_SMC, translator/calls.c). */
    int stack_on_code = chance(&g, 8) &&
                        c->code_la + 0xf80 >= c->st.seg[LC_SS].base &&
                        c->code_la + 0xf80 - c->st.seg[LC_SS].base <=
                            c->st.seg[LC_SS].limit;
    if (stack_on_code) {
        c->st.gpr[LC_RSP] = c->code_la + 0xf80 - c->st.seg[LC_SS].base;
        g.stack_top = c->code_la + 0xf80;
    }

    if (first_exit(&g) < 0) {
        /* cannot fail with the encoder in order; keep the case valid */
        ZydisEncoderRequest rq;
        c->code_len = 0;
        c->ninsns = 0;
        req_init(&rq, ZYDIS_MNEMONIC_CPUID);
        emit(&g, &rq, LC_OP_CPUID);
        c->xfirst_declined = 0;
        memset(&c->xfirst, 0, sizeof c->xfirst);
        c->xfirst.kind = LC_EXIT_CPUID;
    }

    unsigned ngroups = 1 + rn(&g, o->max_groups ? o->max_groups : 12);
    unsigned total = 0;
    for (unsigned i = 0; i < NCTMPL; i++)
        total += ctmpls[i].weight;
    for (g.group = 0; g.group < (int)ngroups; g.group++) {
        if (resolve_due(&g, 0) < 0)
            break;
        for (int attempt = 0; attempt < 8; attempt++) {
            uint32_t len0 = c->code_len, n0 = c->ninsns;
            uint32_t undef0 = g.undef;
            int df0 = g.df, np0 = g.npend;
            lc_segment cur0[6];
            memcpy(cur0, g.cur, sizeof cur0);
            unsigned pick = rn(&g, total), i = 0;
            while (pick >= ctmpls[i].weight)
                pick -= ctmpls[i++].weight;
            g.next_flags = 0;
            g.want_abits = 0;
            g.force = 0;
            int r = ctmpls[i].fn(&g);
            if (r == 0 && c->code_len - len0 <= MAX_GROUP_BYTES)
                break;
            c->code_len = len0;
            c->ninsns = n0;
            g.undef = undef0;
            g.df = df0;
            g.npend = np0;
            memcpy(g.cur, cur0, sizeof cur0);
        }
        if (c->code_len > CODE_MAX - 80)
            break;
    }
    if (resolve_due(&g, 1) < 0) {
        /* cannot happen with the bounds above: keep the exiting one only */
        c->code_len = c->insn[0].len;
        c->ninsns = 1;
    }
    for (uint32_t i = 0; i < c->ninsns && stack_on_code; i++) {
        lcd_insn li;
        if (lcd_decode(dmode_cpu_mode(mode), c->code + c->insn[i].off,
                       c->insn[i].len, &li) != LC_OK)
            continue;
        if (li.info.op == LC_OP_PUSH || li.info.op == LC_OP_CALL ||
            li.info.op == LC_OP_PUSHA ||
            (li.info.op == LC_OP_MOV && li.mem.present && li.mem.write &&
             li.mem.base.cls == LCD_REG_GPR && li.mem.base.num == LC_RSP))
            c->insn[i].flags |= GI_SMC;
    }
    for (uint32_t i = 0; i < c->ninsns; i++)
        gen_cov[mode][c->insn[i].op][width_index(c->insn[i].bits)]++;
    memcpy(c->ram + (CODE_PA), c->code, c->code_len);
    /* UD2 after the code: the engine's decode-ahead stops there, so no
     * cluster reaches past the code that Unicorn runs (it stops at
     * end_la) */
    c->ram[CODE_PA + c->code_len] = 0x0f;
    c->ram[CODE_PA + c->code_len + 1] = 0x0b;
    c->end_la = c->code_len ? c->code_la + c->code_len : c->code_la;
}

/* ---- cases on code from a file (lc-diff --engine --code) ----------------- */

/* The instructions reachable from the start of the case's code without
 * leaving it (fall through, direct branch and call targets inside it), as
 * the checks need them described (gen_insn), in address order. A
 * recursive descent: a linear sweep would lose the boundaries after a
 * jump over data. At most DCASE_MAX_INSNS; what is not described is
 * still run, and compared, by both sides. */
static void describe_code(dcase *c)
{
    static uint8_t seen[CODE_MAX];
    uint32_t work[DCASE_MAX_INSNS * 2];
    unsigned nw = 0;

    memset(seen, 0, sizeof seen);
    c->ninsns = 0;
    work[nw++] = 0;
    while (nw && c->ninsns < DCASE_MAX_INSNS) {
        uint32_t at = work[--nw];
        lcd_insn li;

        if (at >= c->code_len || seen[at])
            continue;
        seen[at] = 1;
        if (lcd_decode(dmode_cpu_mode(c->mode), c->code + at,
                       c->code_len - at < 15 ? c->code_len - at : 15,
                       &li) != LC_OK || !li.info.length)
            continue;
        gen_insn *gi = &c->insn[c->ninsns++];
        memset(gi, 0, sizeof *gi);
        gi->off = (uint16_t)at;
        gi->len = li.info.length;
        gi->op = (uint8_t)li.info.op;
        gi->bits = li.info.operand_bits;
        if (li.info.op >= LC_OP_SHL && li.info.op <= LC_OP_RCR &&
            li.nopnds >= 2) {
            if (li.opnd[1].kind == LCD_OPND_IMM) {
                gi->cnt_kind = CNT_IMM;
                gi->cnt_imm = (uint8_t)li.opnd[1].imm;
            } else {
                gi->cnt_kind = CNT_CL;
            }
        }
        /* any store may hit the code page: an SMC stop after it is
         * legitimate (the checks ask no more of real code) */
        if ((li.info.has_mem && li.info.mem_write) ||
            li.info.op == LC_OP_PUSH || li.info.op == LC_OP_CALL ||
            li.info.op == LC_OP_PUSHA || li.info.op == LC_OP_INS)
            gi->flags = GI_SMC | GI_SMC_CODE;
        uint32_t next = at + li.info.length;
        int falls = li.info.cflow != LC_CF_JMP_REL &&
                    li.info.cflow != LC_CF_JMP_IND &&
                    li.info.cflow != LC_CF_RET &&
                    li.info.cflow != LC_CF_FAR &&
                    li.info.cflow != LC_CF_HALT;
        if (falls && nw < sizeof work / sizeof work[0])
            work[nw++] = next;
        if ((li.info.cflow == LC_CF_JMP_REL || li.info.cflow == LC_CF_JCC_REL ||
             li.info.cflow == LC_CF_CALL_REL) &&
            nw < sizeof work / sizeof work[0]) {
            uint64_t t = (uint64_t)next + (uint64_t)li.info.branch_disp;
            /* (16-bit code wraps IP at 64 KiB: the window never does) */
            if (t < c->code_len)
                work[nw++] = (uint32_t)t;
        }
    }
    /* address order, as the generator's (static_extent() walks it) */
    for (uint32_t i = 1; i < c->ninsns; i++)
        for (uint32_t j = i; j > 0 && c->insn[j - 1].off > c->insn[j].off;
             j--) {
            gen_insn t = c->insn[j];
            c->insn[j] = c->insn[j - 1];
            c->insn[j - 1] = t;
        }
}

/* FF /3 and FF /5 with a register operand (an invalid far CALL or JMP):
 * Unicorn 2.0.1's translator aborts the process on them (UNICORN_BUGS.md,
 * 6), and it translates a block ahead of the instruction its hook stops
 * at. Code from a file runs on into its own data and into the case's
 * random RAM, where the pair turns up. And F6 /1, F7 /1, which the CPU
 * (and KVM's emulator) run as TEST and QEMU 5 raises #UD on (exclusion
 * 9). */
static int uc_kills(const uint8_t *p)
{
    unsigned reg = (p[1] >> 3) & 7;

    return (p[0] == 0xff && (p[1] & 0xc0) == 0xc0 &&
            (reg == 3 || reg == 5)) ||
           ((p[0] == 0xf6 || p[0] == 0xf7) && reg == 1);
}

/* RET imm16 with bit 15 set: the CPU adds the imm16 to rSP unsigned
 * (SDM RET), QEMU 5 sign-extends it (exclusion 10). And MOV to DR4-DR7
 * (0F 23 /4../7): arming a breakpoint through DR7 crashes Unicorn 2.0.1
 * in its translated code (SIGSEGV; exclusion 11; the generator writes
 * DR0-DR3 only). 3 bytes at p. */
static int uc_ret_imm_wrong(const uint8_t *p)
{
    return (p[0] == 0xc2 && (p[2] & 0x80)) ||
           (p[0] == 0x0f && p[1] == 0x23 && (p[2] & 0x20));
}

/* Does the instruction at `off` of the case's code start with one of the
 * encodings above (after its prefixes)? */
static int insn_troubles(const dcase *c, uint32_t off)
{
    for (uint32_t i = off; i + 1 < c->code_len && i < off + 14; i++) {
        const uint8_t *p = c->code + i;
        if (uc_kills(p) || code_uc_misreads(c->mode, p) ||
            (i + 2 < c->code_len && uc_ret_imm_wrong(p)))
            return 1;
        switch (p[0]) {                 /* a prefix: look past it */
        case 0x26: case 0x2e: case 0x36: case 0x3e: case 0x64: case 0x65:
        case 0x66: case 0x67: case 0xf0: case 0xf2: case 0xf3:
            continue;
        default:
            if (c->mode == DM_LONG64 && (p[0] & 0xf0) == 0x40)
                continue;
            return 0;
        }
    }
    return 0;
}

/* The case's random pages without such pairs (the second byte changed:
 * random data either way), and its code cut before the first one (the
 * UD2 after it ends the run there on both sides). */
static void tame_for_unicorn(dcase *c)
{
    /* the stack and data pages, and without paging the page-table
     * pages too (data then, and code where a run jumps) */
    int paging = c->mode == DM_PAE || c->mode == DM_LONG64;
    const uint32_t rnd_pages[][2] = {
        { STACK_PA, STACK_PA + 0x1000 },
        { paging ? DATA0_PA : PT_PML4_PA, DATA0_END },
        { DATA1_PA, DATA1_END },
    };

    for (unsigned r = 0; r < 3; r++)
        for (uint32_t pa = rnd_pages[r][0]; pa + 1 < rnd_pages[r][1]; pa++) {
            uint8_t *p = c->ram + pa;
            if (uc_kills(p) || code_uc_misreads(c->mode, p))
                p[1] = 0xc0;                    /* FF C0: inc eax */
            if (pa + 2 < rnd_pages[r][1] && uc_ret_imm_wrong(p))
                p[2] &= p[0] == 0xc2 ? 0x7f : 0xdf;
        }
    /* the code: at instruction starts only (a linear sweep from the first
     * and the described ones), never the first: its prefixes and opcode */
    uint32_t cut = c->code_len;
    for (uint32_t i = 0; i < c->ninsns; i++)
        if (c->insn[i].off && c->insn[i].off < cut &&
            insn_troubles(c, c->insn[i].off))
            cut = c->insn[i].off;
    for (uint32_t at = 0; at < cut;) {
        lcd_insn li;
        if (at && insn_troubles(c, at)) {
            cut = at;
            break;
        }
        if (lcd_decode(dmode_cpu_mode(c->mode), c->code + at,
                       c->code_len - at < 15 ? c->code_len - at : 15,
                       &li) != LC_OK || !li.info.length)
            break;
        at += li.info.length;
    }
    c->code_len = cut;
    while (c->ninsns && c->insn[c->ninsns - 1].off +
                        c->insn[c->ninsns - 1].len > cut)
        c->ninsns--;
}

/* The segment `s` with base 0: one of the generator's flat ones (in real
 * mode selector 0; SS keeps the stack where it was). */
static void seg_flat(gctx *g, unsigned s)
{
    lc_cpu_state *st = &g->c->st;

    if (g->mode == DM_REAL) {
        if (s == LC_SS)
            st->gpr[LC_RSP] = STACK_PA + 0x800;
        seg_real(&st->seg[s], 0, s == LC_CS);
    } else if (g->mode == DM_LONG64) {
        st->seg[s].base = 0;
    } else if (s != LC_CS) {
        seg_from_gdt(&st->seg[s], 0x10);
    }
}

/* Registers that put the memory operand of `li` (a site of `msite`) on
 * an aligned address of the MMIO page: its index register (if any) a
 * small value, its base register what remains (paging maps the page
 * onto itself in every mode); where its segment cannot reach the page
 * (real mode with a data segment based above it, a 32-bit address under
 * a high FS base) the segment is made flat first. 1 with the address in
 * g->last_t, 0 if even then not (cannot happen with the generator's
 * segments). */
static int aim_at_mmio(gctx *g, const lcd_insn *li)
{
    lc_cpu_state *st = &g->c->st;
    const lcd_mem *m = &li->mem;
    unsigned n = m->bytes;
    uint64_t amask = mask_bits(m->addr_bytes * 8u);
    uint64_t la = MMIO_PA + (uint64_t)rn(g, 0x1000 / n) * n, ea = 0, idx = 0;

    if (m->seg >= LC_NR_SREGS)
        return 0;
    for (int tries = 0; tries < 2; tries++) {
        uint64_t sbase = g->mode == DM_LONG64 && m->seg != LC_FS &&
                         m->seg != LC_GS ? 0 : st->seg[m->seg].base;
        ea = (la - sbase) & (g->mode == DM_LONG64 ? ~0ull : 0xffffffffull);
        if ((ea & amask) == ea &&
            (g->mode == DM_LONG64 || ea + n - 1 <= st->seg[m->seg].limit))
            break;
        if (tries)
            return 0;
        seg_flat(g, m->seg);
    }
    if (m->index.cls == LCD_REG_GPR) {
        idx = rn(g, 16);
        st->gpr[m->index.num & 15] = idx;
    }
    st->gpr[m->base.num & 15] =
        (ea - (uint64_t)m->disp - idx * m->scale) & amask;
    g->last_t = la;
    return 1;
}

void gen_code_case(dcase *c, int mode, uint64_t seed, uint64_t index,
                   const gen_opts *o, const code_src *src)
{
    gctx g;
    uint64_t s = (seed * 0x9E3779B97F4A7C15ull ^ (uint64_t)mode << 56 ^ index)
                 + 0x7265616c636f6465ull;
    lc_cpu_state *st = &c->st;
    lc_exit *x = &c->xfirst;
    lcd_insn li;

    cluster_case_begin(&g, c, mode, s, o);
    c->real = 1;

    /* the code: a site and what follows it in its region (the caller
     * has checked that the mode has sites); a move through a base
     * register in half the cases where the file has both kinds */
    int mmio = src->nmsite[mode] &&
               (!src->nsite[mode] || chance(&g, 50));
    uint32_t site = mmio ? src->msite[mode][rnd(&g) % src->nmsite[mode]]
                         : src->site[mode][rnd(&g) % src->nsite[mode]];
    int r = code_src_region(src, site);
    size_t end = src->region[r].off + src->region[r].len;
    size_t len = end - site < CODE_MAX ? end - site : CODE_MAX;
    c->src_off = site;
    memcpy(c->code, src->bytes + site, len);
    c->code_len = (uint32_t)len;

    /* Registers: half of them (not rSP) point into RAM, at a data or
     * MMIO region (as a driver's base and buffer pointers do), or hold a
     * small count; the rest keep init_state()'s random values. In real
     * mode an offset of the data segment's 64 KiB. */
    for (unsigned i = 0; i < g.nregs; i++) {
        if (i == LC_RSP || chance(&g, 50))
            continue;
        uint64_t v;
        if (chance(&g, 20)) {
            v = rn(&g, 64);
        } else if (mode == DM_REAL) {
            v = rn(&g, 0x10000);
        } else {
            const region *rg = &g.reg[rn(&g, (unsigned)g.nreg)];
            v = rg->la + rn(&g, (unsigned)rg->len);
            if (mode != DM_LONG64)
                v &= 0xffffffffu;
        }
        st->gpr[i] = v;
    }

    /* the first exit, as the VMM would report it */
    memset(x, 0, sizeof *x);
    x->rip = LC_EXIT_RIP_AT;
    if (lcd_decode(dmode_cpu_mode(mode), c->code,
                   c->code_len < 15 ? c->code_len : 15, &li) != LC_OK)
        memset(&li, 0, sizeof li);      /* (a site decodes: cannot be) */
    if (mmio && !aim_at_mmio(&g, &li)) {
        /* (not with the generator's segments: a strongly exiting site,
         * or none, and the case is its exit alone) */
        mmio = 0;
        c->code_len = 0;
        li.info.op = LC_OP_OTHER;
    }
    if (mmio) {
        x->kind = LC_EXIT_MMIO;
        x->u.mmio.gpa = g.last_t;
        x->u.mmio.len = li.mem.bytes;
        x->u.mmio.is_write = li.mem.write;
        if (li.mem.write) {
            const lcd_opnd *so = &li.opnd[1];
            uint64_t v = so->kind == LCD_OPND_IMM ? so->imm
                       : so->reg.cls == LCD_REG_GPR8H
                       ? st->gpr[so->reg.num & 3] >> 8
                       : st->gpr[so->reg.num & 15];
            x->u.mmio.value = v & mask_bits(li.mem.bytes * 8u);
        }
        li.info.op = LC_OP_NOP;         /* (done: no case below) */
    }
    switch (li.info.op) {
    case LC_OP_NOP:
        break;
    case LC_OP_OTHER:
        x->kind = LC_EXIT_CPUID;        /* (an empty case, see above) */
        break;
    case LC_OP_IN:
    case LC_OP_OUT: {
        int out = li.info.op == LC_OP_OUT;
        const lcd_opnd *po = &li.opnd[out ? 0 : 1];
        uint16_t port = po->kind == LCD_OPND_IMM
                        ? (uint16_t)po->imm
                        : (uint16_t)st->gpr[LC_RDX];
        x->kind = LC_EXIT_IO;
        x->u.io.port = port;
        x->u.io.size = (uint8_t)(li.info.operand_bits / 8);
        x->u.io.is_out = (uint8_t)out;
        if (out)
            x->u.io.value = (uint32_t)(st->gpr[LC_RAX] &
                                       mask_bits(li.info.operand_bits));
        break;
    }
    case LC_OP_CPUID:
        x->kind = LC_EXIT_CPUID;
        break;
    case LC_OP_HLT:
        x->kind = LC_EXIT_HLT;
        break;
    default: {                          /* RDMSR, WRMSR */
        uint32_t msr = diff_msr_ids[rn(&g, N_MSRS)];
        st->gpr[LC_RCX] = (st->gpr[LC_RCX] & ~0xffffffffull) | msr;
        x->kind = li.info.op == LC_OP_WRMSR ? LC_EXIT_WRMSR : LC_EXIT_RDMSR;
        x->u.msr = msr;
        break;
    }
    }
    x->insn_len = chance(&g, 50) ? li.info.length : 0;

    describe_code(c);
    tame_for_unicorn(c);
    for (uint32_t i = 0; i < c->ninsns; i++)
        gen_cov[mode][c->insn[i].op][width_index(c->insn[i].bits)]++;
    memcpy(c->ram + CODE_PA, c->code, c->code_len);
    /* UD2 after the code, as for generated cases, where there is room */
    if (c->code_len + 2 <= 0x1000) {
        c->ram[CODE_PA + c->code_len] = 0x0f;
        c->ram[CODE_PA + c->code_len + 1] = 0x0b;
    }
    c->end_la = c->code_la + c->code_len;
}
