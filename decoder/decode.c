/* SPDX-License-Identifier: MIT */
/*
 * decoder/decode.c: Zydis raw decode reduced to lcd_insn.
 *
 * Zydis is used in full-decode mode with a decoder struct built on the
 * stack per call (ZydisDecoderInit only fills a few fields), so there is
 * no shared state and any thread may decode at any time.
 */
#include <string.h>

#include <Zydis/Zydis.h>

#include "insn.h"

/* Mnemonic to operation. Condition families map to one operation; the
 * condition comes from the opcode's low nibble. Unnamed mnemonics are 0,
 * LC_OP_OTHER. MOV is refined by operand class in lcd_decode(). */
static const uint8_t op_of_mnemonic[ZYDIS_MNEMONIC_MAX_VALUE + 1] = {
    [ZYDIS_MNEMONIC_MOV] = LC_OP_MOV,     [ZYDIS_MNEMONIC_MOVZX] = LC_OP_MOVZX,
    [ZYDIS_MNEMONIC_MOVSX] = LC_OP_MOVSX, [ZYDIS_MNEMONIC_MOVSXD] = LC_OP_MOVSXD,
    [ZYDIS_MNEMONIC_LEA] = LC_OP_LEA,     [ZYDIS_MNEMONIC_XCHG] = LC_OP_XCHG,
    [ZYDIS_MNEMONIC_PUSH] = LC_OP_PUSH,   [ZYDIS_MNEMONIC_POP] = LC_OP_POP,
    [ZYDIS_MNEMONIC_BSWAP] = LC_OP_BSWAP,
    [ZYDIS_MNEMONIC_CBW] = LC_OP_CBW, [ZYDIS_MNEMONIC_CWDE] = LC_OP_CBW,
    [ZYDIS_MNEMONIC_CDQE] = LC_OP_CBW,
    [ZYDIS_MNEMONIC_CWD] = LC_OP_CWD, [ZYDIS_MNEMONIC_CDQ] = LC_OP_CWD,
    [ZYDIS_MNEMONIC_CQO] = LC_OP_CWD,

    [ZYDIS_MNEMONIC_CMOVB] = LC_OP_CMOVCC,   [ZYDIS_MNEMONIC_CMOVBE] = LC_OP_CMOVCC,
    [ZYDIS_MNEMONIC_CMOVL] = LC_OP_CMOVCC,   [ZYDIS_MNEMONIC_CMOVLE] = LC_OP_CMOVCC,
    [ZYDIS_MNEMONIC_CMOVNB] = LC_OP_CMOVCC,  [ZYDIS_MNEMONIC_CMOVNBE] = LC_OP_CMOVCC,
    [ZYDIS_MNEMONIC_CMOVNL] = LC_OP_CMOVCC,  [ZYDIS_MNEMONIC_CMOVNLE] = LC_OP_CMOVCC,
    [ZYDIS_MNEMONIC_CMOVNO] = LC_OP_CMOVCC,  [ZYDIS_MNEMONIC_CMOVNP] = LC_OP_CMOVCC,
    [ZYDIS_MNEMONIC_CMOVNS] = LC_OP_CMOVCC,  [ZYDIS_MNEMONIC_CMOVNZ] = LC_OP_CMOVCC,
    [ZYDIS_MNEMONIC_CMOVO] = LC_OP_CMOVCC,   [ZYDIS_MNEMONIC_CMOVP] = LC_OP_CMOVCC,
    [ZYDIS_MNEMONIC_CMOVS] = LC_OP_CMOVCC,   [ZYDIS_MNEMONIC_CMOVZ] = LC_OP_CMOVCC,

    [ZYDIS_MNEMONIC_SETB] = LC_OP_SETCC,   [ZYDIS_MNEMONIC_SETBE] = LC_OP_SETCC,
    [ZYDIS_MNEMONIC_SETL] = LC_OP_SETCC,   [ZYDIS_MNEMONIC_SETLE] = LC_OP_SETCC,
    [ZYDIS_MNEMONIC_SETNB] = LC_OP_SETCC,  [ZYDIS_MNEMONIC_SETNBE] = LC_OP_SETCC,
    [ZYDIS_MNEMONIC_SETNL] = LC_OP_SETCC,  [ZYDIS_MNEMONIC_SETNLE] = LC_OP_SETCC,
    [ZYDIS_MNEMONIC_SETNO] = LC_OP_SETCC,  [ZYDIS_MNEMONIC_SETNP] = LC_OP_SETCC,
    [ZYDIS_MNEMONIC_SETNS] = LC_OP_SETCC,  [ZYDIS_MNEMONIC_SETNZ] = LC_OP_SETCC,
    [ZYDIS_MNEMONIC_SETO] = LC_OP_SETCC,   [ZYDIS_MNEMONIC_SETP] = LC_OP_SETCC,
    [ZYDIS_MNEMONIC_SETS] = LC_OP_SETCC,   [ZYDIS_MNEMONIC_SETZ] = LC_OP_SETCC,

    [ZYDIS_MNEMONIC_ADD] = LC_OP_ADD, [ZYDIS_MNEMONIC_ADC] = LC_OP_ADC,
    [ZYDIS_MNEMONIC_SUB] = LC_OP_SUB, [ZYDIS_MNEMONIC_SBB] = LC_OP_SBB,
    [ZYDIS_MNEMONIC_CMP] = LC_OP_CMP, [ZYDIS_MNEMONIC_AND] = LC_OP_AND,
    [ZYDIS_MNEMONIC_OR] = LC_OP_OR,   [ZYDIS_MNEMONIC_XOR] = LC_OP_XOR,
    [ZYDIS_MNEMONIC_TEST] = LC_OP_TEST,
    [ZYDIS_MNEMONIC_INC] = LC_OP_INC, [ZYDIS_MNEMONIC_DEC] = LC_OP_DEC,
    [ZYDIS_MNEMONIC_NEG] = LC_OP_NEG, [ZYDIS_MNEMONIC_NOT] = LC_OP_NOT,
    [ZYDIS_MNEMONIC_SHL] = LC_OP_SHL, [ZYDIS_MNEMONIC_SHR] = LC_OP_SHR,
    [ZYDIS_MNEMONIC_SAR] = LC_OP_SAR, [ZYDIS_MNEMONIC_ROL] = LC_OP_ROL,
    [ZYDIS_MNEMONIC_ROR] = LC_OP_ROR, [ZYDIS_MNEMONIC_RCL] = LC_OP_RCL,
    [ZYDIS_MNEMONIC_RCR] = LC_OP_RCR, [ZYDIS_MNEMONIC_MUL] = LC_OP_MUL,
    [ZYDIS_MNEMONIC_IMUL] = LC_OP_IMUL,

    [ZYDIS_MNEMONIC_CLC] = LC_OP_CLC, [ZYDIS_MNEMONIC_STC] = LC_OP_STC,
    [ZYDIS_MNEMONIC_CMC] = LC_OP_CMC, [ZYDIS_MNEMONIC_CLD] = LC_OP_CLD,
    [ZYDIS_MNEMONIC_STD] = LC_OP_STD, [ZYDIS_MNEMONIC_NOP] = LC_OP_NOP,

    [ZYDIS_MNEMONIC_JMP] = LC_OP_JMP,
    [ZYDIS_MNEMONIC_JB] = LC_OP_JCC,   [ZYDIS_MNEMONIC_JBE] = LC_OP_JCC,
    [ZYDIS_MNEMONIC_JL] = LC_OP_JCC,   [ZYDIS_MNEMONIC_JLE] = LC_OP_JCC,
    [ZYDIS_MNEMONIC_JNB] = LC_OP_JCC,  [ZYDIS_MNEMONIC_JNBE] = LC_OP_JCC,
    [ZYDIS_MNEMONIC_JNL] = LC_OP_JCC,  [ZYDIS_MNEMONIC_JNLE] = LC_OP_JCC,
    [ZYDIS_MNEMONIC_JNO] = LC_OP_JCC,  [ZYDIS_MNEMONIC_JNP] = LC_OP_JCC,
    [ZYDIS_MNEMONIC_JNS] = LC_OP_JCC,  [ZYDIS_MNEMONIC_JNZ] = LC_OP_JCC,
    [ZYDIS_MNEMONIC_JO] = LC_OP_JCC,   [ZYDIS_MNEMONIC_JP] = LC_OP_JCC,
    [ZYDIS_MNEMONIC_JS] = LC_OP_JCC,   [ZYDIS_MNEMONIC_JZ] = LC_OP_JCC,
    [ZYDIS_MNEMONIC_LOOP] = LC_OP_LOOP, [ZYDIS_MNEMONIC_LOOPE] = LC_OP_LOOPE,
    [ZYDIS_MNEMONIC_LOOPNE] = LC_OP_LOOPNE,
    [ZYDIS_MNEMONIC_JCXZ] = LC_OP_JCXZ, [ZYDIS_MNEMONIC_JECXZ] = LC_OP_JCXZ,
    [ZYDIS_MNEMONIC_JRCXZ] = LC_OP_JCXZ,
    [ZYDIS_MNEMONIC_CALL] = LC_OP_CALL, [ZYDIS_MNEMONIC_RET] = LC_OP_RET,

    [ZYDIS_MNEMONIC_IN] = LC_OP_IN,     [ZYDIS_MNEMONIC_OUT] = LC_OP_OUT,
    [ZYDIS_MNEMONIC_INSB] = LC_OP_INS,  [ZYDIS_MNEMONIC_INSW] = LC_OP_INS,
    [ZYDIS_MNEMONIC_INSD] = LC_OP_INS,
    [ZYDIS_MNEMONIC_OUTSB] = LC_OP_OUTS, [ZYDIS_MNEMONIC_OUTSW] = LC_OP_OUTS,
    [ZYDIS_MNEMONIC_OUTSD] = LC_OP_OUTS,
    [ZYDIS_MNEMONIC_CPUID] = LC_OP_CPUID, [ZYDIS_MNEMONIC_HLT] = LC_OP_HLT,
    [ZYDIS_MNEMONIC_RDMSR] = LC_OP_RDMSR, [ZYDIS_MNEMONIC_WRMSR] = LC_OP_WRMSR,
    [ZYDIS_MNEMONIC_VMREAD] = LC_OP_VMREAD,
    [ZYDIS_MNEMONIC_VMWRITE] = LC_OP_VMWRITE,
    [ZYDIS_MNEMONIC_VMCALL] = LC_OP_VMCALL,

    [ZYDIS_MNEMONIC_DIV] = LC_OP_DIV,   [ZYDIS_MNEMONIC_IDIV] = LC_OP_IDIV,
    [ZYDIS_MNEMONIC_BT] = LC_OP_BT,     [ZYDIS_MNEMONIC_BTS] = LC_OP_BTS,
    [ZYDIS_MNEMONIC_BTR] = LC_OP_BTR,   [ZYDIS_MNEMONIC_BTC] = LC_OP_BTC,
    [ZYDIS_MNEMONIC_CLI] = LC_OP_CLI,   [ZYDIS_MNEMONIC_STI] = LC_OP_STI,
    [ZYDIS_MNEMONIC_PUSHA] = LC_OP_PUSHA, [ZYDIS_MNEMONIC_PUSHAD] = LC_OP_PUSHA,
    [ZYDIS_MNEMONIC_POPA] = LC_OP_POPA, [ZYDIS_MNEMONIC_POPAD] = LC_OP_POPA,
    [ZYDIS_MNEMONIC_LEAVE] = LC_OP_LEAVE, [ZYDIS_MNEMONIC_RDTSC] = LC_OP_RDTSC,
};

static ZydisMachineMode zydis_mode(lc_cpu_mode mode, ZydisStackWidth *sw)
{
    switch (mode) {
    case LC_MODE_REAL:
    case LC_MODE_VM86:
        *sw = ZYDIS_STACK_WIDTH_16;
        return ZYDIS_MACHINE_MODE_REAL_16;
    case LC_MODE_PROT16:
        *sw = ZYDIS_STACK_WIDTH_16;
        return ZYDIS_MACHINE_MODE_LEGACY_16;
    case LC_MODE_PROT32:
        *sw = ZYDIS_STACK_WIDTH_32;
        return ZYDIS_MACHINE_MODE_LEGACY_32;
    case LC_MODE_COMPAT16:
        *sw = ZYDIS_STACK_WIDTH_16;
        return ZYDIS_MACHINE_MODE_LONG_COMPAT_16;
    case LC_MODE_COMPAT32:
        *sw = ZYDIS_STACK_WIDTH_32;
        return ZYDIS_MACHINE_MODE_LONG_COMPAT_32;
    case LC_MODE_LONG64:
    default:
        *sw = ZYDIS_STACK_WIDTH_64;
        return ZYDIS_MACHINE_MODE_LONG_64;
    }
}

/* Zydis register to the project's (class, architectural number). */
static lcd_reg map_reg(ZydisRegister r)
{
    lcd_reg out = { LCD_REG_NONE, 0 };
    ZyanI8 id;

    /* Zydis gives the instruction-pointer registers no class id. */
    if (r == ZYDIS_REGISTER_RIP || r == ZYDIS_REGISTER_EIP ||
        r == ZYDIS_REGISTER_IP) {
        out.cls = LCD_REG_IP;
        return out;
    }
    id = ZydisRegisterGetId(r);
    if (id < 0)
        return out;
    switch (ZydisRegisterGetClass(r)) {
    case ZYDIS_REGCLASS_GPR8:
        /* Zydis orders AL..BL, AH..BH, SPL..DIL, R8B..R15B. */
        if (id < 4) {
            out.cls = LCD_REG_GPR;
            out.num = (uint8_t)id;
        } else if (id < 8) {
            out.cls = LCD_REG_GPR8H;
            out.num = (uint8_t)(id - 4);
        } else {
            out.cls = LCD_REG_GPR;
            out.num = (uint8_t)(id - 4);
        }
        break;
    case ZYDIS_REGCLASS_GPR16:
    case ZYDIS_REGCLASS_GPR32:
    case ZYDIS_REGCLASS_GPR64:
        out.cls = LCD_REG_GPR;
        out.num = (uint8_t)id;
        break;
    case ZYDIS_REGCLASS_SEGMENT:
        out.cls = LCD_REG_SEG;
        out.num = (uint8_t)id;   /* ES, CS, SS, DS, FS, GS */
        break;
    case ZYDIS_REGCLASS_CONTROL:
        out.cls = LCD_REG_CR;
        out.num = (uint8_t)id;
        break;
    case ZYDIS_REGCLASS_DEBUG:
        out.cls = LCD_REG_DR;
        out.num = (uint8_t)id;
        break;
    case ZYDIS_REGCLASS_IP:
        out.cls = LCD_REG_IP;
        break;
    default:
        break;
    }
    return out;
}

static lc_status map_status(ZyanStatus st)
{
    switch (st) {
    case ZYDIS_STATUS_NO_MORE_DATA:
        return LC_ERR_DECODE_TRUNCATED;
    case ZYDIS_STATUS_INSTRUCTION_TOO_LONG:
        return LC_ERR_DECODE_TOO_LONG;
    default:
        return LC_ERR_DECODE_INVALID;
    }
}

static void fill_mem(lcd_mem *m, const ZydisDecodedOperand *o,
                     const ZydisDecodedInstruction *zi)
{
    lcd_reg seg = map_reg(o->mem.segment);

    m->present = 1;
    m->seg = seg.cls == LCD_REG_SEG ? seg.num : LC_DS;
    m->seg_override = (zi->attributes & ZYDIS_ATTRIB_HAS_SEGMENT) != 0;
    m->base = map_reg(o->mem.base);
    m->index = map_reg(o->mem.index);
    m->scale = o->mem.scale ? o->mem.scale : 1;
    m->bytes = (uint8_t)(o->size / 8);
    m->addr_bytes = (uint8_t)(zi->address_width / 8);
    m->read = (o->actions & ZYDIS_OPERAND_ACTION_MASK_READ) != 0;
    m->write = (o->actions & ZYDIS_OPERAND_ACTION_MASK_WRITE) != 0;
    m->agen = o->mem.type == ZYDIS_MEMOP_TYPE_AGEN;
    m->disp = o->mem.disp.has_displacement ? o->mem.disp.value : 0;
}

static lc_cflow cflow_of(lc_op op, const ZydisDecodedInstruction *zi,
                         const ZydisDecodedOperand *ops)
{
    int rel = zi->operand_count > 0 &&
              ops[0].type == ZYDIS_OPERAND_TYPE_IMMEDIATE &&
              ops[0].imm.is_relative;
    int far = zi->meta.branch_type == ZYDIS_BRANCH_TYPE_FAR;
    lc_cflow cf = (lc_cflow)lcd_op_table[op].cflow;

    /* The operation's row gives the near kind (decoder/optable.c). */
    switch (cf) {
    case LC_CF_JMP_REL:
        return far ? LC_CF_FAR : rel ? LC_CF_JMP_REL : LC_CF_JMP_IND;
    case LC_CF_CALL_REL:
        return far ? LC_CF_FAR : rel ? LC_CF_CALL_REL : LC_CF_CALL_IND;
    case LC_CF_RET:
        /* Zydis names RETF "ret" too: only C3 and C2 are near. */
        return !far && zi->opcode_map == ZYDIS_OPCODE_MAP_DEFAULT &&
                       (zi->opcode == 0xc3 || zi->opcode == 0xc2)
                   ? LC_CF_RET : LC_CF_FAR;
    case LC_CF_NONE:
        break;
    default:
        return cf;
    }
    /* Everything else that transfers control is far. */
    switch (zi->meta.category) {
    case ZYDIS_CATEGORY_RET:      /* RETF, IRET */
    case ZYDIS_CATEGORY_CALL:
    case ZYDIS_CATEGORY_UNCOND_BR:
    case ZYDIS_CATEGORY_COND_BR:
    case ZYDIS_CATEGORY_INTERRUPT:
    case ZYDIS_CATEGORY_SYSCALL:
    case ZYDIS_CATEGORY_SYSRET:
        return LC_CF_FAR;
    default:
        return LC_CF_NONE;
    }
}

lc_status lcd_decode(lc_cpu_mode mode, const uint8_t *bytes, size_t len,
                     lcd_insn *out)
{
    ZydisDecoder dec;
    ZydisStackWidth sw;
    ZydisMachineMode zm;
    ZydisDecodedInstruction zi;
    ZydisDecodedOperand zo[ZYDIS_MAX_OPERAND_COUNT];
    ZyanStatus st;
    lc_insn_info *info;
    int hidden_mem = -1;

    if (!out || (!bytes && len) || (unsigned)mode >= LC_MODE_COUNT_)
        return LC_ERR_INVAL;
    memset(out, 0, sizeof(*out));
    if (len == 0)
        return LC_ERR_DECODE_TRUNCATED;

    zm = zydis_mode(mode, &sw);
    if (!ZYAN_SUCCESS(ZydisDecoderInit(&dec, zm, sw)))
        return LC_ERR_INVAL;
    st = ZydisDecoderDecodeFull(&dec, bytes, len, &zi, zo);
    if (!ZYAN_SUCCESS(st))
        return map_status(st);
    /* Zydis enforces the 15-byte limit; keep the invariant visible. */
    if (zi.length == 0 || zi.length > LC_INSN_MAX_LEN || zi.length > len)
        return LC_ERR_DECODE_INVALID;

    info = &out->info;
    info->mode = mode;
    info->length = zi.length;
    memcpy(info->bytes, bytes, zi.length);
    info->operand_bits = zi.operand_width;
    info->address_bits = zi.address_width;
    info->lock = (zi.attributes & ZYDIS_ATTRIB_HAS_LOCK) != 0;
    out->opsize_prefix = (zi.attributes & ZYDIS_ATTRIB_HAS_OPERANDSIZE) != 0;
    if (zi.attributes & ZYDIS_ATTRIB_HAS_REPNE)
        info->rep = 2;
    else if (zi.attributes & (ZYDIS_ATTRIB_HAS_REP | ZYDIS_ATTRIB_HAS_REPE))
        info->rep = 1;
    info->op = (lc_op)op_of_mnemonic[zi.mnemonic];
    /* Where the architecture leaves the result open, the CPU decides:
     * - REPNE (F2) on INS/OUTS is reserved (SDM "REP/REPE/REPZ/REPNE/
     *   REPNZ"); CPUs repeat it as REP, Zydis drops it (one iteration);
     * - 0F 0D with a register operand is a reserved NOP on Intel's
     *   CPUs, #UD on AMD's (PREFETCH/PREFETCHW need memory). */
    if (info->op == LC_OP_INS || info->op == LC_OP_OUTS) {
        for (unsigned i = 0; i < zi.raw.prefix_count; i++)
            if (zi.raw.prefixes[i].value == 0xf2)
                info->op = LC_OP_OTHER;
    }
    if (zi.opcode_map == ZYDIS_OPCODE_MAP_0F && zi.opcode == 0x0d &&
        zi.raw.modrm.mod == 3)
        info->op = LC_OP_OTHER;

    for (unsigned i = 0; i < zi.operand_count; i++) {
        const ZydisDecodedOperand *o = &zo[i];

        if (o->visibility == ZYDIS_OPERAND_VISIBILITY_HIDDEN) {
            if (o->type == ZYDIS_OPERAND_TYPE_MEMORY && hidden_mem < 0)
                hidden_mem = (int)i;
            continue;
        }
        if (out->nopnds >= LCD_MAX_OPNDS)
            continue;
        lcd_opnd *d = &out->opnd[out->nopnds++];
        d->bytes = (uint8_t)(o->size / 8);
        d->read = (o->actions & ZYDIS_OPERAND_ACTION_MASK_READ) != 0;
        d->write = (o->actions & ZYDIS_OPERAND_ACTION_MASK_WRITE) != 0;
        switch (o->type) {
        case ZYDIS_OPERAND_TYPE_REGISTER:
            d->kind = LCD_OPND_REG;
            d->reg = map_reg(o->reg.value);
            break;
        case ZYDIS_OPERAND_TYPE_MEMORY:
            d->kind = LCD_OPND_MEM;
            if (!out->mem.present)
                fill_mem(&out->mem, o, &zi);
            break;
        case ZYDIS_OPERAND_TYPE_IMMEDIATE:
            d->kind = LCD_OPND_IMM;
            d->imm = o->imm.value.u;
            if (o->imm.is_relative)
                info->branch_disp = o->imm.value.s;
            break;
        default:                /* far pointer */
            d->kind = LCD_OPND_NONE;
            break;
        }
    }
    if (!out->mem.present && hidden_mem >= 0)
        fill_mem(&out->mem, &zo[hidden_mem], &zi);

    /* One mnemonic, several operations. */
    if (info->op == LC_OP_MOV) {
        for (unsigned i = 0; i < out->nopnds; i++) {
            if (out->opnd[i].reg.cls == LCD_REG_DR)
                info->op = LC_OP_MOV_DR;
            else if (out->opnd[i].reg.cls == LCD_REG_CR)
                info->op = LC_OP_MOV_CR;
            else if (out->opnd[i].reg.cls == LCD_REG_SEG)
                info->op = LC_OP_MOV_SREG;
        }
    }
    if (lcd_op_table[info->op].flags & LCD_F_COND)
        info->cond = zi.opcode & 0xf;

    /* NOP's ModRM operand is never accessed, whatever Zydis says. */
    if (info->op == LC_OP_NOP)
        out->mem.agen = 1;
    if (out->mem.present && !out->mem.agen) {
        info->has_mem = 1;
        info->mem_read = out->mem.read;
        info->mem_write = out->mem.write;
        info->mem_bits = (uint8_t)(out->mem.bytes * 8);
    }
    info->cflow = cflow_of(info->op, &zi, zo);
    info->exit_class = lcd_classify(out);
    return LC_OK;
}
