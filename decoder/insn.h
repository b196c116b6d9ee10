/* SPDX-License-Identifier: MIT */
/*
 * decoder/: the project's pre-decoded instruction.
 *
 * Zydis does the raw decode; this layer reduces its result to what the
 * runtime and translator need (registers in architectural numbering,
 * one memory operand shape, sizes in bytes, a static branch displacement)
 * and gives the instruction its exit class from one const table
 * (optable.c). Nothing here knows about KVM or the engine.
 */
#ifndef LC_DECODER_INSN_H
#define LC_DECODER_INSN_H

#include <stddef.h>
#include <stdint.h>

#include <cluster/decode.h>

/* Register classes. GPR numbers are enum lc_gpr; GPR8H is AH/CH/DH/BH with
 * num 0..3 naming RAX..RBX. */
enum lcd_reg_cls {
    LCD_REG_NONE = 0,
    LCD_REG_GPR,      /* low `bytes` bytes of gpr[num] */
    LCD_REG_GPR8H,    /* bits 15:8 of gpr[num] */
    LCD_REG_SEG,      /* enum lc_sreg */
    LCD_REG_CR,
    LCD_REG_DR,
    LCD_REG_IP,       /* RIP-relative base */
};

typedef struct lcd_reg {
    uint8_t cls;      /* enum lcd_reg_cls */
    uint8_t num;
} lcd_reg;

enum lcd_opnd_kind {
    LCD_OPND_NONE = 0,
    LCD_OPND_REG,
    LCD_OPND_MEM,     /* the shape is in lcd_insn.mem */
    LCD_OPND_IMM,
};

typedef struct lcd_opnd {
    uint8_t kind;     /* enum lcd_opnd_kind */
    uint8_t bytes;    /* operand size */
    uint8_t read;
    uint8_t write;
    lcd_reg reg;
    uint64_t imm;     /* sign- or zero-extended as the encoding says */
} lcd_opnd;

/* The memory access of an instruction: its explicit memory operand, or
 * else its implicit one (stack for PUSH/POP, ES:rDI / seg:rSI for string
 * instructions). Effective address = base + index * scale + disp,
 * truncated to addr_bytes, then segment base added. */
typedef struct lcd_mem {
    uint8_t present;
    uint8_t seg;          /* enum lc_sreg after overrides */
    uint8_t seg_override; /* an override prefix chose `seg` */
    lcd_reg base;         /* cls NONE, GPR or IP */
    lcd_reg index;        /* cls NONE or GPR */
    uint8_t scale;        /* 1, 2, 4, 8 */
    uint8_t bytes;        /* access width */
    uint8_t addr_bytes;   /* 2, 4, 8 */
    uint8_t read;
    uint8_t write;
    uint8_t agen;         /* address generation only (LEA, NOP): no access */
    int64_t disp;
} lcd_mem;

#define LCD_MAX_OPNDS 4

typedef struct lcd_insn {
    lc_insn_info info;    /* the public view, filled in full */
    uint8_t  nopnds;      /* explicit and implicit operands, Intel order */
    lcd_opnd opnd[LCD_MAX_OPNDS];
    lcd_mem  mem;
    uint8_t  opsize_prefix;  /* a 66 prefix is present (Zydis may report
                              * the effective size as if it were not) */
} lcd_insn;

/* Decode one instruction; contract as lc_decode(). */
lc_status lcd_decode(lc_cpu_mode mode, const uint8_t *bytes, size_t len,
                     lcd_insn *out);

/* Target of a direct relative JMP, Jcc or CALL at `rip`; contract as
 * lc_insn_branch_target() (target.c; the translator links its loops and
 * forward branches with it, so it lives below the translator). */
lc_status lcd_branch_target(const lc_insn_info *info, uint64_t rip,
                            uint64_t *target);

/* Intel-syntax text; contract as lc_insn_format(). */
lc_status lcd_format(const lc_insn_info *info, uint64_t rip, char *buf,
                     size_t size);

/* Per-operation properties, one const row per lc_op (optable.c). */
enum lcd_op_flags {
    LCD_F_EXEC    = 1u << 0,  /* the runtime executes it */
    LCD_F_STRONG  = 1u << 1,  /* always exits */
    LCD_F_CFLOW   = 1u << 2,  /* changes RIP other than by falling through */
    LCD_F_LOCKOK  = 1u << 3,  /* a LOCK prefix keeps it executable */
    LCD_F_COND    = 1u << 4,  /* a condition family: lc_insn_info.cond is
                               * the opcode's low nibble (Jcc, CMOVcc,
                               * SETcc) */
    LCD_F_SREG    = 1u << 5,  /* a segment register operand keeps it
                               * executable (MOV Sreg, PUSH/POP Sreg: the
                               * runtime makes the CPU's descriptor
                               * checks) */
};

typedef struct lcd_op_desc {
    uint8_t flags;    /* enum lcd_op_flags */
    uint8_t cflow;    /* lc_cflow of the near form: JMP_REL and CALL_REL
                       * stand for their families (the operand decides
                       * relative or indirect, the encoding near or far) */
} lcd_op_desc;

extern const lcd_op_desc lcd_op_table[LC_OP_COUNT_];

/* Exit class of a decoded instruction from the table and its shape. */
lc_exit_class lcd_classify(const lcd_insn *insn);

#endif /* LC_DECODER_INSN_H */
