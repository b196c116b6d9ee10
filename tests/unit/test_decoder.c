/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_decoder.c: decoder/ through the public lc_decode().
 *
 * Table-driven cases carry their source line so a failure names the row.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cluster/cluster.h>

#include "../../decoder/insn.h"
#include "../../examples/paper/paper_examples.h"
#include "harness.h"

/* --- the paper's examples --------------------------------------------- */

/* One loop iteration per example: every instruction must decode to the
 * paper's length, our expected operation and exit class, and every
 * instruction the paper marks as exiting must be strongly or weakly
 * exiting. Decoded back to back from one buffer, as the translator does. */
START_TEST(paper_example_decodes)
{
    const paper_example *ex = &paper_examples[_i];
    uint8_t buf[256];
    size_t off = 0, total = 0;

    for (size_t i = 0; i < ex->count; i++) {
        memcpy(buf + total, ex->insns[i].bytes, ex->insns[i].len);
        total += ex->insns[i].len;
    }
    for (size_t i = 0; i < ex->count; i++) {
        const paper_insn *pi = &ex->insns[i];
        lc_insn_info info;
        lc_status st = lc_decode(ex->mode, buf + off, total - off, &info);

        ck_assert_msg(st == LC_OK, "%s #%zu '%s': %s", ex->name, i, pi->text,
                      lc_strerror(st));
        ck_assert_msg(info.length == pi->len, "%s #%zu '%s': length %u != %u",
                      ex->name, i, pi->text, info.length, pi->len);
        ck_assert_msg(info.op == pi->op, "%s #%zu '%s': op %s != %s",
                      ex->name, i, pi->text, lc_op_name(info.op),
                      lc_op_name(pi->op));
        ck_assert_msg(info.exit_class == pi->cls,
                      "%s #%zu '%s': class %s != %s", ex->name, i, pi->text,
                      lc_exit_class_name(info.exit_class),
                      lc_exit_class_name(pi->cls));
        if (pi->paper_exits)
            ck_assert_msg(info.exit_class == LC_CLASS_STRONG ||
                          info.exit_class == LC_CLASS_WEAK,
                          "%s #%zu '%s' exits in the paper but is %s",
                          ex->name, i, pi->text,
                          lc_exit_class_name(info.exit_class));
        ck_assert(memcmp(info.bytes, pi->bytes, pi->len) == 0);
        ck_assert_int_eq(info.mode, ex->mode);
        off += info.length;
    }
    ck_assert_uint_eq(off, total);
}
END_TEST

/* Every strict prefix of every paper instruction is truncated, read from
 * an exactly sized heap buffer so AddressSanitizer sees any overread. */
START_TEST(paper_truncations)
{
    const paper_example *ex = &paper_examples[_i];

    for (size_t i = 0; i < ex->count; i++) {
        const paper_insn *pi = &ex->insns[i];
        for (size_t cut = 0; cut < pi->len; cut++) {
            uint8_t *b = malloc(cut ? cut : 1);
            lc_insn_info info;
            ck_assert_ptr_nonnull(b);
            memcpy(b, pi->bytes, cut);
            ck_assert_msg(lc_decode(ex->mode, b, cut, &info) ==
                          LC_ERR_DECODE_TRUNCATED,
                          "%s '%s' cut at %zu", ex->name, pi->text, cut);
            free(b);
        }
    }
}
END_TEST

/* Section 3: the pair's memory operands differ by exactly their width
 * through the same base, which is what pair detection will test. */
START_TEST(pae_pair_shape)
{
    lc_insn_info hi, lo;
    const uint8_t a[] = { 0x89, 0x71, 0x04 }, b[] = { 0x89, 0x19 };

    ck_assert_int_eq(lc_decode(LC_MODE_PROT32, a, sizeof a, &hi), LC_OK);
    ck_assert_int_eq(lc_decode(LC_MODE_PROT32, b, sizeof b, &lo), LC_OK);
    ck_assert(hi.has_mem && hi.mem_write && !hi.mem_read);
    ck_assert(lo.has_mem && lo.mem_write && !lo.mem_read);
    ck_assert_uint_eq(hi.mem_bits, 32);
    ck_assert_uint_eq(lo.mem_bits, 32);
}
END_TEST

/* --- table of individual encodings ------------------------------------- */

typedef struct dcase {
    int line;
    lc_cpu_mode mode;
    const char *hex;
    lc_status status;
    unsigned len;
    lc_op op;
    lc_exit_class cls;
    unsigned opbits;       /* 0: do not check */
} dcase;

#define OK(mode, hex, len, op, cls, bits) \
    { __LINE__, LC_MODE_##mode, hex, LC_OK, len, LC_OP_##op, LC_CLASS_##cls, bits }
#define BAD(mode, hex, st) \
    { __LINE__, LC_MODE_##mode, hex, st, 0, LC_OP_OTHER, LC_CLASS_TERMINATOR, 0 }

static const dcase cases[] = {
    /* IN/OUT, immediate and DX forms, all widths, in each mode. */
    OK(REAL,   "e4 60",    2, IN,  STRONG, 8),
    OK(REAL,   "e5 60",    2, IN,  STRONG, 16),
    OK(REAL,   "66 e5 60", 3, IN,  STRONG, 32),
    OK(REAL,   "ec",       1, IN,  STRONG, 8),
    OK(REAL,   "ed",       1, IN,  STRONG, 16),
    OK(REAL,   "66 ed",    2, IN,  STRONG, 32),
    OK(REAL,   "e6 80",    2, OUT, STRONG, 8),
    OK(REAL,   "e7 80",    2, OUT, STRONG, 16),
    OK(REAL,   "ee",       1, OUT, STRONG, 8),
    OK(REAL,   "ef",       1, OUT, STRONG, 16),
    OK(REAL,   "66 ef",    2, OUT, STRONG, 32),
    OK(PROT16, "ed",       1, IN,  STRONG, 16),
    OK(PROT32, "ed",       1, IN,  STRONG, 32),
    OK(PROT32, "66 ed",    2, IN,  STRONG, 16),
    OK(PROT32, "e7 70",    2, OUT, STRONG, 32),
    OK(PROT32, "66 e7 70", 3, OUT, STRONG, 16),
    OK(LONG64, "ec",       1, IN,  STRONG, 8),
    OK(LONG64, "ed",       1, IN,  STRONG, 32),
    OK(LONG64, "66 ef",    2, OUT, STRONG, 16),
    OK(COMPAT32, "ef",     1, OUT, STRONG, 32),
    OK(COMPAT16, "ef",     1, OUT, STRONG, 16),
    /* String I/O with and without REP. */
    OK(REAL,   "6c",       1, INS,  STRONG, 8),
    OK(REAL,   "f3 6d",    2, INS,  STRONG, 16),
    OK(PROT32, "f3 6d",    2, INS,  STRONG, 32),
    OK(PROT32, "6e",       1, OUTS, STRONG, 8),
    OK(PROT32, "f3 66 6f", 3, OUTS, STRONG, 16),
    OK(LONG64, "f3 6f",    2, OUTS, STRONG, 32),
    OK(LONG64, "2e f3 6e", 3, OUTS, STRONG, 8),   /* CS-override source */
    /* REPNE on INS/OUTS is reserved (CPUs repeat it, Zydis does not):
     * the CPU's */
    OK(REAL,   "f2 6c",    2, OTHER, TERMINATOR, 0),
    OK(PROT32, "f3 f2 6f", 3, OTHER, TERMINATOR, 0),
    /* Other strongly exiting instructions. */
    OK(LONG64, "0f a2",    2, CPUID,  STRONG, 0),
    OK(REAL,   "f4",       1, HLT,    STRONG, 0),
    OK(PROT32, "0f 21 c0", 3, MOV_DR, STRONG, 32),  /* mov eax, dr0 */
    OK(LONG64, "0f 23 f8", 3, MOV_DR, STRONG, 64),  /* mov dr7, rax */
    OK(LONG64, "0f 32",    2, RDMSR,  STRONG, 0),
    OK(LONG64, "0f 30",    2, WRMSR,  STRONG, 0),
    OK(LONG64, "0f 78 c8", 3, VMREAD, STRONG, 64),
    OK(LONG64, "0f 79 c1", 3, VMWRITE, STRONG, 64),
    OK(PROT32, "0f 79 c1", 3, VMWRITE, STRONG, 32),
    OK(LONG64, "0f 01 c1", 3, VMCALL, STRONG, 0),
    /* Terminators: CR loads, far and privileged control flow, LOCKed
     * RMW, unnamed instructions. */
    OK(LONG64, "0f 20 c0", 3, MOV_CR,   TERMINATOR, 0),
    OK(LONG64, "0f 22 d8", 3, MOV_CR,   TERMINATOR, 0),
    OK(LONG64, "f0 01 08", 3, ADD,      TERMINATOR, 32),
    OK(LONG64, "cd 80",    2, OTHER,    TERMINATOR, 0),
    OK(LONG64, "0f 0b",    2, OTHER,    TERMINATOR, 0),   /* UD2 */
    OK(LONG64, "f3 90",    2, OTHER,    TERMINATOR, 0),   /* PAUSE */
    OK(LONG64, "0f 33",    2, OTHER,    TERMINATOR, 0),   /* RDPMC */
    /* 0F 0D with a register: Intel's reserved NOP, AMD's #UD */
    OK(LONG64, "0f 0d c0", 3, OTHER,    TERMINATOR, 0),
    OK(LONG64, "66 eb 00", 3, JMP,      TERMINATOR, 0),   /* vendor-dependent */
    OK(PROT32, "ea 00 00 00 00 08 00", 7, JMP, TERMINATOR, 0), /* jmp far */
    OK(LONG64, "ff 28",    2, JMP,      TERMINATOR, 0),   /* jmp far [rax] */
    OK(PROT32, "9a 00 00 00 00 08 00", 7, CALL, TERMINATOR, 0),
    OK(LONG64, "f3 a4",    2, OTHER,    TERMINATOR, 0),   /* rep movsb */
    OK(PROT32, "66 0f c8", 3, BSWAP,    TERMINATOR, 16),  /* undefined */
    OK(LONG64, "f0 0f ab 08", 4, BTS,   TERMINATOR, 32),  /* lock bts */
    OK(LONG64, "f0 0f ba 30 03", 5, BTR, TERMINATOR, 32),
    /* Segment register moves (issue 14): the runtime makes the descriptor
     * checks; a load from or a push to memory is weakly exiting. CS is
     * never loaded (8E /1 is invalid, POP CS does not exist). */
    OK(REAL,   "8e d8",    2, MOV_SREG, GAP_FILLER, 0),   /* mov ds, ax */
    OK(PROT32, "8e 10",    2, MOV_SREG, WEAK, 32),        /* mov ss, [eax] */
    OK(PROT32, "8c c8",    2, MOV_SREG, GAP_FILLER, 32),  /* mov eax, cs */
    OK(PROT32, "8c 18",    2, MOV_SREG, WEAK, 32),        /* mov [eax], ds */
    OK(LONG64, "8e e0",    2, MOV_SREG, GAP_FILLER, 32),  /* mov fs, ax */
    OK(PROT32, "06",       1, PUSH,     WEAK, 32),        /* push es */
    OK(PROT32, "0e",       1, PUSH,     WEAK, 32),        /* push cs */
    OK(PROT32, "1f",       1, POP,      WEAK, 32),        /* pop ds */
    OK(REAL,   "17",       1, POP,      WEAK, 16),        /* pop ss */
    OK(LONG64, "0f a0",    2, PUSH,     WEAK, 64),        /* push fs */
    OK(LONG64, "66 0f a9", 3, POP,      WEAK, 16),        /* pop gs */
    /* DIV, IDIV, BT*, CLI/STI, PUSHA/POPA, LEAVE, RDTSC (issue 14). */
    OK(LONG64, "48 f7 f1",       3, DIV,   GAP_FILLER, 64),
    OK(REAL,   "f6 f3",          2, DIV,   GAP_FILLER, 8),
    OK(PROT32, "f7 3b",          2, IDIV,  WEAK, 32),
    OK(LONG64, "0f a3 c8",       3, BT,    GAP_FILLER, 32),
    OK(PROT32, "66 0f a3 08",    4, BT,    WEAK, 16),
    OK(LONG64, "48 0f ab 08",    4, BTS,   WEAK, 64),
    OK(LONG64, "0f ba f0 05",    4, BTR,   GAP_FILLER, 32),
    OK(REAL,   "0f bb c8",       3, BTC,   GAP_FILLER, 16),
    OK(PROT32, "fa",             1, CLI,   GAP_FILLER, 0),
    OK(LONG64, "fb",             1, STI,   GAP_FILLER, 0),
    OK(PROT32, "60",             1, PUSHA, WEAK, 32),
    OK(REAL,   "61",             1, POPA,  WEAK, 16),
    OK(PROT32, "66 61",          2, POPA,  WEAK, 16),
    OK(LONG64, "c9",             1, LEAVE, WEAK, 64),
    OK(REAL,   "c9",             1, LEAVE, WEAK, 16),
    OK(LONG64, "0f 31",          2, RDTSC, GAP_FILLER, 0),
    /* Gap fillers and weakly exiting forms. */
    OK(LONG64, "48 8d 04 c8",    4, LEA,   GAP_FILLER, 64),
    OK(LONG64, "0f 1f 40 00",    4, NOP,   GAP_FILLER, 0),
    OK(LONG64, "66 90",          2, NOP,   GAP_FILLER, 0),
    OK(LONG64, "87 08",          2, XCHG,  WEAK, 32),
    OK(LONG64, "f0 87 08",       3, XCHG,  WEAK, 32),
    /* Near CALL and RET access the stack: weakly exiting, like PUSH. */
    OK(LONG64, "e8 00 00 00 00", 5, CALL,  WEAK, 64),
    OK(LONG64, "c3",             1, RET,   WEAK, 64),
    OK(PROT32, "c2 08 00",       3, RET,   WEAK, 32),
    OK(LONG64, "cb",             1, RET,   TERMINATOR, 0),  /* retf */
    OK(PROT32, "ca 04 00",       3, RET,   TERMINATOR, 0),
    OK(LONG64, "50",             1, PUSH,  WEAK, 64),
    OK(LONG64, "41 5f",          2, POP,   WEAK, 64),
    OK(REAL,   "0f b6 c3",       3, MOVZX, GAP_FILLER, 16),
    OK(LONG64, "48 63 c1",       3, MOVSXD, GAP_FILLER, 64),
    OK(LONG64, "48 0f be 07",    4, MOVSX, WEAK, 64),
    OK(LONG64, "0f 4f c1",       3, CMOVCC, GAP_FILLER, 32),
    OK(LONG64, "0f 95 c0",       3, SETCC, GAP_FILLER, 8),
    OK(LONG64, "48 0f c8",       3, BSWAP, GAP_FILLER, 64),
    OK(LONG64, "48 98",          2, CBW,   GAP_FILLER, 64),
    OK(REAL,   "98",             1, CBW,   GAP_FILLER, 16),
    OK(LONG64, "48 99",          2, CWD,   GAP_FILLER, 64),
    OK(LONG64, "48 d3 e0",       3, SHL,   GAP_FILLER, 64),
    OK(LONG64, "d1 f8",          2, SAR,   GAP_FILLER, 32),
    OK(LONG64, "c0 c8 03",       3, ROR,   GAP_FILLER, 8),
    OK(LONG64, "d1 d0",          2, RCL,   GAP_FILLER, 32),
    OK(LONG64, "48 f7 e1",       3, MUL,   GAP_FILLER, 64),
    OK(LONG64, "6b c0 07",       3, IMUL,  GAP_FILLER, 32),
    OK(LONG64, "f8",             1, CLC,   GAP_FILLER, 0),
    OK(LONG64, "fd",             1, STD,   GAP_FILLER, 0),
    OK(LONG64, "e2 fe",          2, LOOP,  GAP_FILLER, 64),
    OK(REAL,   "e3 fe",          2, JCXZ,  GAP_FILLER, 16),
    OK(LONG64, "0f 84 00 01 00 00", 6, JCC, GAP_FILLER, 64),
    OK(LONG64, "ff e0",          2, JMP,   GAP_FILLER, 64),   /* jmp rax */
    OK(LONG64, "ff 20",          2, JMP,   WEAK, 64),         /* jmp [rax] */
    OK(LONG64, "64 8b 00",       3, MOV,   WEAK, 32),         /* fs: */
    OK(PROT32, "67 8b 07",       3, MOV,   WEAK, 32),         /* [bx] */
    OK(LONG64, "c6 05 00 00 00 00 01", 7, MOV, WEAK, 8),     /* rip-rel */
    /* Prefix handling: repeats and the 15-byte limit. */
    OK(LONG64, "66 66 66 90",    4, NOP,   GAP_FILLER, 0),
    OK(LONG64, "66 66 66 66 66 66 66 66 66 66 66 66 66 66 90", 15, NOP, GAP_FILLER, 0),
    BAD(LONG64, "66 66 66 66 66 66 66 66 66 66 66 66 66 66 66 90", LC_ERR_DECODE_TOO_LONG),
    BAD(LONG64, "2e 3e 26 64 65 36 2e 3e 26 64 65 36 2e 3e 26 8b 00", LC_ERR_DECODE_TOO_LONG),
    /* Truncated input. */
    BAD(LONG64, "",              LC_ERR_DECODE_TRUNCATED),
    BAD(LONG64, "0f",            LC_ERR_DECODE_TRUNCATED),
    BAD(LONG64, "48",            LC_ERR_DECODE_TRUNCATED),
    BAD(PROT32, "b8 00 00",      LC_ERR_DECODE_TRUNCATED),
    BAD(LONG64, "66 66 66",      LC_ERR_DECODE_TRUNCATED),
    BAD(LONG64, "0f 78",         LC_ERR_DECODE_TRUNCATED),
    /* Invalid encodings. */
    BAD(LONG64, "06",            LC_ERR_DECODE_INVALID),  /* push es */
    BAD(LONG64, "60",            LC_ERR_DECODE_INVALID),  /* pusha */
    BAD(PROT32, "8e c8",         LC_ERR_DECODE_INVALID),  /* mov cs, ax */
    BAD(LONG64, "d6",            LC_ERR_DECODE_INVALID),  /* salc */
    BAD(LONG64, "0f 04",         LC_ERR_DECODE_INVALID),
    BAD(LONG64, "f0 90",         LC_ERR_DECODE_INVALID),  /* lock nop */
    BAD(LONG64, "f0 89 c0",      LC_ERR_DECODE_INVALID),  /* lock mov reg */
    BAD(LONG64, "0f 20 c8",      LC_ERR_DECODE_INVALID),  /* mov rax, cr1 */
};

START_TEST(encoding_table)
{
    const dcase *c = &cases[_i];
    unsigned char bytes[32];
    size_t n = lc_test_hex(c->hex, bytes, sizeof bytes);
    unsigned char *exact = malloc(n ? n : 1);
    lc_insn_info info;
    lc_status st;

    ck_assert_ptr_nonnull(exact);
    memcpy(exact, bytes, n);
    st = lc_decode(c->mode, exact, n, &info);
    free(exact);
    ck_assert_msg(st == c->status, "line %d (%s): status %s, want %s",
                  c->line, c->hex, lc_status_name(st),
                  lc_status_name(c->status));
    if (st != LC_OK)
        return;
    ck_assert_msg(info.length == c->len, "line %d: length %u, want %u",
                  c->line, info.length, c->len);
    ck_assert_msg(info.op == c->op, "line %d: op %s, want %s", c->line,
                  lc_op_name(info.op), lc_op_name(c->op));
    ck_assert_msg(info.exit_class == c->cls, "line %d: class %s, want %s",
                  c->line, lc_exit_class_name(info.exit_class),
                  lc_exit_class_name(c->cls));
    if (c->opbits)
        ck_assert_msg(info.operand_bits == c->opbits,
                      "line %d: operand bits %u, want %u", c->line,
                      info.operand_bits, c->opbits);
}
END_TEST

/* --- details ------------------------------------------------------------ */

START_TEST(condition_codes)
{
    /* Jcc rel8 0x70..0x7f, CMOVcc 0f 40..4f, SETcc 0f 90..9f. */
    for (unsigned cc = 0; cc < 16; cc++) {
        uint8_t j[2] = { (uint8_t)(0x70 + cc), 0x00 };
        uint8_t m[3] = { 0x0f, (uint8_t)(0x40 + cc), 0xc1 };
        uint8_t s[3] = { 0x0f, (uint8_t)(0x90 + cc), 0xc0 };
        lc_insn_info a, b, c;
        ck_assert_int_eq(lc_decode(LC_MODE_LONG64, j, 2, &a), LC_OK);
        ck_assert_int_eq(lc_decode(LC_MODE_LONG64, m, 3, &b), LC_OK);
        ck_assert_int_eq(lc_decode(LC_MODE_LONG64, s, 3, &c), LC_OK);
        ck_assert_int_eq(a.op, LC_OP_JCC);
        ck_assert_int_eq(b.op, LC_OP_CMOVCC);
        ck_assert_int_eq(c.op, LC_OP_SETCC);
        ck_assert_uint_eq(a.cond, cc);
        ck_assert_uint_eq(b.cond, cc);
        ck_assert_uint_eq(c.cond, cc);
    }
}
END_TEST

START_TEST(branch_targets)
{
    lc_insn_info info;
    uint64_t t;
    const uint8_t jmp8[] = { 0xeb, 0x10 }, jnz_back[] = { 0x75, 0xfb };
    const uint8_t jz32[] = { 0x0f, 0x84, 0x00, 0x10, 0x00, 0x00 };

    /* 16-bit IP wraps at 64 KiB. */
    ck_assert_int_eq(lc_decode(LC_MODE_REAL, jmp8, 2, &info), LC_OK);
    ck_assert_int_eq(info.cflow, LC_CF_JMP_REL);
    ck_assert_int_eq(lc_insn_branch_target(&info, 0xfffe, &t), LC_OK);
    ck_assert_uint_eq(t, 0x0010);
    /* Section 6.3: JNZ 0xfb goes back to the IN three bytes before. */
    ck_assert_int_eq(lc_decode(LC_MODE_PROT32, jnz_back, 2, &info), LC_OK);
    ck_assert_int_eq(info.cflow, LC_CF_JCC_REL);
    ck_assert_int_eq(lc_insn_branch_target(&info, 0x1003, &t), LC_OK);
    ck_assert_uint_eq(t, 0x1000);
    /* 32-bit EIP wraps at 4 GiB. */
    ck_assert_int_eq(lc_decode(LC_MODE_PROT32, jz32, 6, &info), LC_OK);
    ck_assert_int_eq(lc_insn_branch_target(&info, 0xfffffff0ull, &t), LC_OK);
    ck_assert_uint_eq(t, 0xff6);
    ck_assert_int_eq(lc_decode(LC_MODE_LONG64, jz32, 6, &info), LC_OK);
    ck_assert_int_eq(lc_insn_branch_target(&info, 0xfffffff0ull, &t), LC_OK);
    ck_assert_uint_eq(t, 0x100000ff6ull);
    /* No static target. */
    {
        const uint8_t jmprax[] = { 0xff, 0xe0 }, nop[] = { 0x90 };
        ck_assert_int_eq(lc_decode(LC_MODE_LONG64, jmprax, 2, &info), LC_OK);
        ck_assert_int_eq(info.cflow, LC_CF_JMP_IND);
        ck_assert_int_eq(lc_insn_branch_target(&info, 0, &t), LC_ERR_INVAL);
        ck_assert_int_eq(lc_decode(LC_MODE_LONG64, nop, 1, &info), LC_OK);
        ck_assert_int_eq(info.cflow, LC_CF_NONE);
        ck_assert_int_eq(lc_insn_branch_target(&info, 0, &t), LC_ERR_INVAL);
    }
}
END_TEST

START_TEST(memory_shapes)
{
    lc_insn_info info;
    const uint8_t ld[] = { 0x8b, 0x04, 0xf5, 0xa4, 0xde, 0x3b, 0x80 };
    const uint8_t outsb[] = { 0xf3, 0x6e }, insb[] = { 0x6c };
    const uint8_t rmw[] = { 0x81, 0x26, 0xd0, 0x00, 0xff, 0xfe };

    ck_assert_int_eq(lc_decode(LC_MODE_LONG64, ld, sizeof ld, &info), LC_OK);
    ck_assert(info.has_mem && info.mem_read && !info.mem_write);
    ck_assert_uint_eq(info.mem_bits, 32);
    ck_assert_uint_eq(info.address_bits, 64);
    /* String I/O touches memory too, but stays strongly exiting. */
    ck_assert_int_eq(lc_decode(LC_MODE_PROT32, outsb, 2, &info), LC_OK);
    ck_assert(info.has_mem && info.mem_read && !info.mem_write);
    ck_assert_uint_eq(info.rep, 1);
    ck_assert_int_eq(info.exit_class, LC_CLASS_STRONG);
    ck_assert_int_eq(lc_decode(LC_MODE_REAL, insb, 1, &info), LC_OK);
    ck_assert(info.has_mem && info.mem_write && !info.mem_read);
    ck_assert_uint_eq(info.address_bits, 16);
    /* Read-modify-write in 16-bit code (section 6.1). */
    ck_assert_int_eq(lc_decode(LC_MODE_REAL, rmw, sizeof rmw, &info), LC_OK);
    ck_assert(info.has_mem && info.mem_read && info.mem_write);
    ck_assert_uint_eq(info.mem_bits, 16);
}
END_TEST

/* The internal shape the runtime uses: base, index, scale, displacement,
 * segment, for the paper's addressing forms (section 3 lists them: base,
 * base+index, absolute, RIP-relative). */
START_TEST(internal_memory_shape)
{
    lcd_insn in;
    const uint8_t riprel[] = { 0x0f, 0x78, 0x1d, 0xd6, 0xdd, 0xdd, 0xff };
    const uint8_t sib[] = { 0x8b, 0x04, 0xf5, 0xa4, 0xde, 0x3b, 0x80 };
    const uint8_t bp16[] = { 0x8b, 0x46, 0x08 };      /* mov ax,[bp+8] */
    const uint8_t fs[] = { 0x64, 0x8b, 0x00 };
    const uint8_t abs32[] = { 0xa1, 0x78, 0x56, 0x34, 0x12 };

    ck_assert_int_eq(lcd_decode(LC_MODE_LONG64, riprel, sizeof riprel, &in), LC_OK);
    ck_assert_int_eq(in.mem.base.cls, LCD_REG_IP);
    ck_assert_int_eq(in.mem.index.cls, LCD_REG_NONE);
    ck_assert_int_eq(in.mem.disp, -0x22222a);
    ck_assert_uint_eq(in.mem.bytes, 8);
    ck_assert(in.mem.write && !in.mem.read);
    ck_assert_int_eq(lcd_decode(LC_MODE_LONG64, sib, sizeof sib, &in), LC_OK);
    ck_assert_int_eq(in.mem.base.cls, LCD_REG_NONE);
    ck_assert_int_eq(in.mem.index.cls, LCD_REG_GPR);
    ck_assert_uint_eq(in.mem.index.num, LC_RSI);
    ck_assert_uint_eq(in.mem.scale, 8);
    ck_assert_int_eq(in.mem.disp, -0x7fc4215c);
    ck_assert_int_eq(lcd_decode(LC_MODE_REAL, bp16, sizeof bp16, &in), LC_OK);
    ck_assert_uint_eq(in.mem.seg, LC_SS);              /* BP implies SS */
    ck_assert_uint_eq(in.mem.base.num, LC_RBP);
    ck_assert_uint_eq(in.mem.addr_bytes, 2);
    ck_assert_int_eq(lcd_decode(LC_MODE_LONG64, fs, sizeof fs, &in), LC_OK);
    ck_assert_uint_eq(in.mem.seg, LC_FS);
    ck_assert(in.mem.seg_override);
    ck_assert_int_eq(lcd_decode(LC_MODE_PROT32, abs32, sizeof abs32, &in), LC_OK);
    ck_assert_int_eq(in.mem.base.cls, LCD_REG_NONE);
    ck_assert_int_eq(in.mem.disp, 0x12345678);
    ck_assert_uint_eq(in.mem.seg, LC_DS);
}
END_TEST

START_TEST(format_text)
{
    lc_insn_info info;
    char buf[64], tiny[4];
    const uint8_t out[] = { 0xe6, 0x80 };

    ck_assert_int_eq(lc_decode(LC_MODE_PROT32, out, 2, &info), LC_OK);
    ck_assert_int_eq(lc_insn_format(&info, 0x1000, buf, sizeof buf), LC_OK);
    ck_assert_msg(strstr(buf, "out") && strstr(buf, "al"), "got '%s'", buf);
    ck_assert_int_eq(lc_insn_format(&info, 0x1000, tiny, sizeof tiny),
                     LC_ERR_RANGE);
    ck_assert_uint_lt(strlen(tiny), sizeof tiny);
    ck_assert_int_eq(lc_insn_format(NULL, 0, buf, sizeof buf), LC_ERR_INVAL);
    ck_assert_int_eq(lc_insn_format(&info, 0, buf, 0), LC_ERR_INVAL);
}
END_TEST

START_TEST(bad_arguments)
{
    lc_insn_info info;
    const uint8_t nop[] = { 0x90 };

    ck_assert_int_eq(lc_decode(LC_MODE_LONG64, nop, 1, NULL), LC_ERR_INVAL);
    ck_assert_int_eq(lc_decode(LC_MODE_LONG64, NULL, 1, &info), LC_ERR_INVAL);
    ck_assert_int_eq(lc_decode((lc_cpu_mode)99, nop, 1, &info), LC_ERR_INVAL);
    ck_assert_int_eq(lc_decode((lc_cpu_mode)-1, nop, 1, &info), LC_ERR_INVAL);
    ck_assert_int_eq(lc_decode(LC_MODE_LONG64, NULL, 0, &info),
                     LC_ERR_DECODE_TRUNCATED);
}
END_TEST

/* Every one- and two-byte opcode (with a zero tail) in every mode decodes
 * or fails cleanly, and a success never claims more bytes than given. */
START_TEST(all_short_opcodes)
{
    for (unsigned mode = 0; mode < LC_MODE_COUNT_; mode++) {
        for (unsigned a = 0; a < 256; a++) {
            for (unsigned b = 0; b < 256; b += (a == 0x0f ? 1 : 64)) {
                uint8_t buf[LC_INSN_MAX_LEN] = { (uint8_t)a, (uint8_t)b };
                lc_insn_info info;
                lc_status st = lc_decode((lc_cpu_mode)mode, buf, sizeof buf,
                                         &info);
                if (st == LC_OK) {
                    ck_assert_uint_ge(info.length, 1);
                    ck_assert_uint_le(info.length, LC_INSN_MAX_LEN);
                    ck_assert_int_lt(info.exit_class, LC_CLASS_COUNT_);
                    ck_assert_int_lt(info.op, LC_OP_COUNT_);
                } else {
                    ck_assert(st == LC_ERR_DECODE_INVALID ||
                              st == LC_ERR_DECODE_TRUNCATED ||
                              st == LC_ERR_DECODE_TOO_LONG);
                }
            }
        }
    }
}
END_TEST

static Suite *decoder_suite(void)
{
    Suite *s = suite_create("decoder");
    TCase *t = tcase_create("paper");

    tcase_add_loop_test(t, paper_example_decodes, 0, (int)paper_examples_count);
    tcase_add_loop_test(t, paper_truncations, 0, (int)paper_examples_count);
    tcase_add_test(t, pae_pair_shape);
    suite_add_tcase(s, t);

    t = tcase_create("encodings");
    tcase_add_loop_test(t, encoding_table, 0,
                        (int)(sizeof cases / sizeof cases[0]));
    tcase_add_test(t, condition_codes);
    tcase_add_test(t, branch_targets);
    tcase_add_test(t, memory_shapes);
    tcase_add_test(t, internal_memory_shape);
    tcase_add_test(t, format_text);
    tcase_add_test(t, bad_arguments);
    tcase_add_test(t, all_short_opcodes);
    tcase_set_timeout(t, 60);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return lc_test_run(decoder_suite());
}
