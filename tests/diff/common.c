/* SPDX-License-Identifier: MIT */
/*
 * tests/diff/common.c: mode names, the flag tables, the device model that
 * both sides share (answer stream, access log, CPUID and MSR answers).
 */
#include <string.h>
#include <time.h>

#include <Zydis/Zydis.h>

#include "diff.h"

const char *dmode_name(int m)
{
    static const char *const n[DM_COUNT] = { "real", "prot32", "pae",
                                             "long64" };
    return m >= 0 && m < DM_COUNT ? n[m] : "?";
}

lc_cpu_mode dmode_cpu_mode(int m)
{
    switch (m) {
    case DM_REAL: return LC_MODE_REAL;
    case DM_LONG64: return LC_MODE_LONG64;
    default: return LC_MODE_PROT32;
    }
}

unsigned width_index(unsigned bits)
{
    switch (bits) {
    case 16: return 1;
    case 32: return 2;
    case 64: return 3;
    default: return 0;
    }
}

/*
 * Flags per the SDM (vol. 2, each instruction's "Flags Affected"):
 *  ADD ADC SUB SBB CMP NEG: OF SF ZF AF CF PF set according to the result.
 *  AND OR XOR TEST: "The OF and CF flags are cleared; the SF, ZF, and PF
 *    flags are set according to the result. The state of the AF flag is
 *    undefined."
 *  INC DEC: "The CF flag is not affected. The OF, SF, ZF, AF, and PF flags
 *    are set according to the result."
 *  SAL/SAR/SHL/SHR: "If the count is 0, the flags are not affected." "The
 *    CF flag contains the value of the last bit shifted out of the
 *    destination operand; it is undefined for SHL and SHR instructions
 *    where the count is greater than or equal to the size (in bits) of the
 *    destination operand. The OF flag is affected only for 1-bit shifts;
 *    otherwise, it is undefined. The SF, ZF, and PF flags are set
 *    according to the result. If the count is 0, the flags are not
 *    affected. For a non-zero count, the AF flag is undefined."
 *  RCL/RCR/ROL/ROR: "If the masked count is 0, the flags are not affected.
 *    If the masked count is 1, then the OF flag is affected, otherwise (the
 *    masked count is greater than 1) the OF flag is undefined. The CF flag
 *    is affected when the masked count is non-zero. The SF, ZF, AF, and PF
 *    flags are always unaffected."
 *  MUL/IMUL: "The OF and CF flags are set to 0 if the upper half of the
 *    result is 0 [resp. the sign extension of the lower half]; otherwise
 *    they are set to 1. The SF, ZF, AF, and PF flags are undefined."
 *  CLC/STC/CMC: CF. DIV/IDIV and BT* below. Everything else generated
 *  here: no status flag.
 * `count` is the count after masking to 5 (6 with REX.W) bits.
 */
void flag_effect(unsigned op, unsigned bits, int count, uint32_t *def,
                 uint32_t *und)
{
    *def = *und = 0;
    switch (op) {
    case LC_OP_ADD: case LC_OP_ADC: case LC_OP_SUB: case LC_OP_SBB:
    case LC_OP_CMP: case LC_OP_NEG:
        *def = FL_STATUS;
        break;
    case LC_OP_AND: case LC_OP_OR: case LC_OP_XOR: case LC_OP_TEST:
        *def = FL_STATUS & ~FL_AF;
        *und = FL_AF;
        break;
    case LC_OP_INC: case LC_OP_DEC:
        *def = FL_STATUS & ~FL_CF;
        break;
    case LC_OP_SHL: case LC_OP_SHR: case LC_OP_SAR:
        if (count < 0) {
            *und = FL_OF | FL_AF;
            if (op != LC_OP_SAR && bits <= 16)
                *und |= FL_CF;
        } else if (count > 0) {
            *def = FL_CF | FL_SF | FL_ZF | FL_PF | FL_OF;
            *und = FL_AF;
            if (count != 1) {
                *def &= ~FL_OF;
                *und |= FL_OF;
            }
            if (op != LC_OP_SAR && (unsigned)count >= bits) {
                *def &= ~FL_CF;
                *und |= FL_CF;
            }
        }
        break;
    case LC_OP_ROL: case LC_OP_ROR: case LC_OP_RCL: case LC_OP_RCR:
        if (count < 0) {
            *und = FL_OF;
        } else if (count > 0) {
            *def = FL_CF | FL_OF;
            if (count != 1) {
                *def = FL_CF;
                *und = FL_OF;
            }
        }
        break;
    case LC_OP_MUL: case LC_OP_IMUL:
        *def = FL_CF | FL_OF;
        *und = FL_SF | FL_ZF | FL_AF | FL_PF;
        break;
    case LC_OP_CLC: case LC_OP_STC: case LC_OP_CMC:
        *def = FL_CF;
        break;
    /* DIV/IDIV: "The CF, OF, SF, ZF, AF, and PF flags are undefined."
     * MOV DR: "The OF, SF, ZF, AF, PF, and CF flags are undefined." */
    case LC_OP_DIV: case LC_OP_IDIV: case LC_OP_MOV_DR:
        *und = FL_STATUS;
        break;
    /* VMREAD/VMWRITE: VMsucceed clears CF PF AF ZF SF OF, VMfailInvalid
     * sets CF and VMfailValid ZF, clearing the rest (SDM vol. 3,
     * "Conventions" of the VMX instruction reference). VMCALL: the
     * fake VMM changes no flag. */
    case LC_OP_VMREAD: case LC_OP_VMWRITE:
        *def = FL_STATUS;
        break;
    /* BT/BTS/BTR/BTC: "The CF flag contains the value of the selected
     * bit. The ZF flag is unaffected. The OF, SF, AF, and PF flags are
     * undefined." */
    case LC_OP_BT: case LC_OP_BTS: case LC_OP_BTR: case LC_OP_BTC:
        *def = FL_CF;
        *und = FL_OF | FL_SF | FL_AF | FL_PF;
        break;
    default:
        break;
    }
}

uint32_t flag_uses(unsigned op, unsigned cond)
{
    static const uint32_t cc[8] = {
        FL_OF, FL_CF, FL_ZF, FL_CF | FL_ZF, FL_SF, FL_PF, FL_SF | FL_OF,
        FL_ZF | FL_SF | FL_OF,
    };
    switch (op) {
    case LC_OP_JCC: case LC_OP_CMOVCC: case LC_OP_SETCC:
        return cc[(cond >> 1) & 7];
    case LC_OP_ADC: case LC_OP_SBB: case LC_OP_RCL: case LC_OP_RCR:
    case LC_OP_CMC:
        return FL_CF;
    case LC_OP_LOOPE: case LC_OP_LOOPNE:
        return FL_ZF;
    default:
        return 0;
    }
}

/* MSRs QEMU 5 (Unicorn 2.0.1) keeps as plain 64-bit values, so the
 * harness's "store what is written" model is exactly QEMU's. */
const uint32_t diff_msr_ids[N_MSRS] = {
    0x175,        /* IA32_SYSENTER_ESP */
    0x176,        /* IA32_SYSENTER_EIP */
    0xC0000081,   /* STAR */
    0xC0000082,   /* LSTAR */
    0xC0000083,   /* CSTAR */
    0xC0000084,   /* FMASK */
    0xC0000102,   /* KERNEL_GS_BASE */
};

uint64_t dev_rdtsc(dev_side *d)
{
    uint64_t v = d->tsc;

    d->tsc += 1 + (v & 0xfff);
    dev_log(d, AK_RDTSC, 0, 8, 0, v);
    return v;
}

double diff_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int dcase_insn_at(const dcase *c, uint64_t la)
{
    uint64_t off = la - c->code_la;
    for (uint32_t i = 0; i < c->ninsns; i++)
        if (c->insn[i].off == off)
            return (int)i;
    return -1;
}

int msr_index(uint32_t msr)
{
    for (int i = 0; i < N_MSRS; i++)
        if (diff_msr_ids[i] == msr)
            return i;
    return -1;
}

void dev_init(dev_side *d, const dcase *c)
{
    memset(d, 0, sizeof *d);
    xo_seed(d->rng, c->dev_seed);
    memcpy(d->msr, c->msr, sizeof d->msr);
    d->tsc = splitmix64(&(uint64_t){ c->dev_seed ^ 0x747363ull });
    d->long64 = c->mode == DM_LONG64;
    d->vmcs_valid = c->vmcs_valid;
    d->real = c->real;
    d->tgfn = DIFF_NO_TRACE;
    d->vmm.refuse_port = -1;
    d->vmm.refuse_mmio = DIFF_NO_REFUSE;
    d->vmm.refuse_len = 8;
    uint64_t x = c->dev_seed ^ 0x766d6373ull;
    for (int i = 0; i < VMX_NFIELDS; i++) {
        uint64_t v = splitmix64(&x);
        unsigned w = (vmx_fields[i] >> 13) & 3;
        d->vmcs[i] = w == 0 ? v & 0xffff : w == 2 ? v & 0xffffffffu : v;
    }
}

/* One paging-structure entry at `ta`, or 0 (not present, or the table
 * lies outside RAM: hostile to nobody here, the generator built it). */
static uint64_t pt_entry(const uint8_t *ram, uint64_t ta)
{
    uint64_t e;

    if (ta > RAM_SIZE - 8)
        return 0;
    memcpy(&e, ram + ta, 8);
    return e & 1 ? e : 0;
}

int64_t diff_la_to_pa(int mode, const uint8_t *ram, uint64_t cr3,
                      uint64_t la)
{
    const uint64_t am = 0x000ffffffffff000ull;
    uint64_t e, pa;

    if (mode == DM_REAL || mode == DM_PROT32) {
        pa = mode == DM_PROT32 ? (uint32_t)la : la;
    } else {
        if (mode == DM_LONG64) {
            e = pt_entry(ram, (cr3 & am) + ((la >> 39) & 511) * 8);
            if (!e)
                return -1;
            e = pt_entry(ram, (e & am) + ((la >> 30) & 511) * 8);
            if (e & 0x80) {     /* 1 GiB page */
                pa = (e & am & ~0x3fffffffull) | (la & 0x3fffffff);
                return pa < RAM_SIZE ? (int64_t)pa : -1;
            }
        } else {                /* PAE: a 4-entry PDPT at CR3 */
            e = pt_entry(ram, (cr3 & ~0x1full) + ((la >> 30) & 3) * 8);
        }
        if (!e)
            return -1;
        e = pt_entry(ram, (e & am) + ((la >> 21) & 511) * 8);
        if (!e)
            return -1;
        if (e & 0x80) {         /* 2 MiB page */
            pa = (e & am & ~0x1fffffull) | (la & 0x1fffff);
        } else {
            e = pt_entry(ram, (e & am) + ((la >> 12) & 511) * 8);
            if (!e)
                return -1;
            pa = (e & am) | (la & 0xfff);
        }
    }
    return pa < RAM_SIZE ? (int64_t)pa : -1;
}

unsigned diff_walk_entries(int mode, const uint8_t *ram, uint64_t cr3,
                           uint64_t la, uint64_t pa[4])
{
    const uint64_t am = 0x000ffffffffff000ull;
    uint64_t e, ta;
    unsigned n = 0;

    if (mode != DM_PAE && mode != DM_LONG64)
        return 0;
    if (mode == DM_LONG64) {
        ta = (cr3 & am) + ((la >> 39) & 511) * 8;
        if (!(e = pt_entry(ram, ta)))
            return n;
        pa[n++] = ta;
        ta = (e & am) + ((la >> 30) & 511) * 8;
        if (!(e = pt_entry(ram, ta)))
            return n;
        pa[n++] = ta;
        if (e & 0x80)
            return n;
    } else {                /* PAE: the PDPTE has no A bit */
        if (!(e = pt_entry(ram, (cr3 & ~0x1full) + ((la >> 30) & 3) * 8)))
            return n;
    }
    ta = (e & am) + ((la >> 21) & 511) * 8;
    if (!(e = pt_entry(ram, ta)))
        return n;
    pa[n++] = ta;
    if (e & 0x80)
        return n;
    ta = (e & am) + ((la >> 12) & 511) * 8;
    if (pt_entry(ram, ta))
        pa[n++] = ta;
    return n;
}

/* ---- the fake VMCS (diff.h) --------------------------------------------- */

/* Encodings (SDM vol. 3, appendix "Field Encoding in VMCS"): bits 14:13
 * width (0 16-bit, 1 64-bit, 2 32-bit, 3 natural), 11:10 type (1:
 * read-only data), bit 0 the high access of a 64-bit field. */
const uint32_t vmx_fields[VMX_NFIELDS] = {
    0x0000,   /* VPID (16, control) */
    0x0802,   /* guest CS selector (16, guest) */
    0x0c00,   /* host ES selector (16, host) */
    0x2000,   /* I/O bitmap A (64, control) */
    0x2800,   /* VMCS link pointer (64, guest) */
    0x2400,   /* guest-physical address (64, read-only) */
    0x4002,   /* primary processor-based controls (32, control) */
    0x4826,   /* guest activity state (32, guest) */
    0x4400,   /* VM-instruction error (32, read-only) */
    0x4402,   /* exit reason (32, read-only) */
    0x6000,   /* CR0 guest/host mask (natural, control) */
    0x6400,   /* exit qualification (natural, read-only) */
    0x6800,   /* guest CR0 (natural, guest) */
    0x681e,   /* guest RIP (natural, guest) */
    0x6c00,   /* host CR0 (natural, host) */
    0x6c16,   /* host RIP (natural, host) */
};

int vmx_field_index(uint64_t field)
{
    /* bits 63:15 are reserved: no field has them (in 64-bit mode "if bits
     * 63:32 of the source operand are not zero" VMREAD/VMWRITE fail) */
    if (field >> 15)
        return -1;
    /* the access-type bit is for 64-bit fields only */
    if ((field & 1) && ((field >> 13) & 3) != 1)
        return -1;
    for (int i = 0; i < VMX_NFIELDS; i++)
        if (vmx_fields[i] == (field & ~1ull))
            return i;
    return -1;
}

int vmx_check(const dev_side *d, int is_write, uint64_t field)
{
    int i;

    if (!d->vmcs_valid)
        return VMX_FAIL_INVALID;
    if ((i = vmx_field_index(field)) < 0)
        return 12;   /* VMREAD/VMWRITE from/to unsupported VMCS component */
    if (is_write && ((vmx_fields[i] >> 10) & 3) == 1)
        return 13;   /* VMWRITE to read-only VMCS component */
    return 0;
}

void vmx_do(dev_side *d, int is_write, uint64_t field, uint64_t *val)
{
    int i = vmx_field_index(field);
    unsigned w;
    uint64_t *f;

    if (i < 0)
        return;
    w = (vmx_fields[i] >> 13) & 3;
    f = &d->vmcs[i];
    if (!is_write) {
        *val = (field & 1) ? *f >> 32 : *f;
    } else if (w == 0) {
        *f = *val & 0xffff;       /* "bits 15:0 of the source operand" */
    } else if (w == 2) {
        *f = *val & 0xffffffffu;
    } else if (field & 1) {       /* high access: bits 63:32 of the field */
        *f = (*f & 0xffffffffu) | (*val & 0xffffffffu) << 32;
    } else {
        /* full access, 64-bit and natural width: a 32-bit source clears
         * the high bits ("if the VMCS field is longer, then the high bits
         * of the field are cleared to 0"): *val is zero-extended */
        *f = *val;
    }
    dev_log(d, is_write ? AK_VMWRITE : AK_VMREAD, is_write, 0, field, *val);
}

uint64_t vmx_fail(dev_side *d, int is_write, uint64_t field, int code,
                  uint64_t rflags)
{
    rflags &= ~(uint64_t)FL_STATUS;
    if (code == VMX_FAIL_INVALID) {
        rflags |= FL_CF;          /* VMfailInvalid */
    } else {
        rflags |= FL_ZF;          /* VMfailValid(code) */
        for (int i = 0; i < VMX_NFIELDS; i++)
            if (vmx_fields[i] == VMX_INSN_ERROR)
                d->vmcs[i] = (uint32_t)code;
    }
    dev_log(d, is_write ? AK_VMWRITE : AK_VMREAD, is_write,
            code == VMX_FAIL_INVALID ? 0xff : (unsigned)code, field, 0);
    return rflags;
}

void vmx_vmcall(dev_side *d, uint64_t gpr[16], int long64)
{
    uint64_t m = long64 ? ~0ull : 0xffffffffu;
    uint64_t x = (gpr[LC_RAX] & m) ^ (gpr[LC_RBX] & m) * 3 ^
                 (gpr[LC_RCX] & m) * 5;
    uint64_t in = gpr[LC_RAX] & m;

    gpr[LC_RAX] = splitmix64(&x) & m;
    gpr[LC_RDX] = (in + 1) & m;
    dev_log(d, AK_VMCALL, 0, 0, in, gpr[LC_RAX]);
}

uint64_t dev_answer(dev_side *d, unsigned size)
{
    uint64_t v = xo_next(d->rng);
    return size >= 8 ? v : v & ((1ull << (size * 8)) - 1);
}

void dev_log(dev_side *d, int kind, int is_write, unsigned size,
             uint64_t addr, uint64_t value)
{
    if (d->nlog >= DEV_LOG_MAX) {
        d->overflow = 1;
        return;
    }
    dev_access *a = &d->log[d->nlog++];
    a->kind = (uint8_t)kind;
    a->is_write = (uint8_t)is_write;
    a->size = (uint8_t)size;
    a->addr = addr;
    a->value = value;
}

void cpuid_answer(uint32_t leaf, uint32_t sub, uint32_t out[4])
{
    uint64_t x = ((uint64_t)leaf << 32 | sub) ^ 0x5DEECE66Dull;
    for (int i = 0; i < 4; i++)
        out[i] = (uint32_t)splitmix64(&x);
}

/* Register number of a general-purpose register (16, 32, 64 bits), -2
 * for RIP/EIP, -1 for none or anything else. */
static int zgpr(ZydisRegister r)
{
    switch (ZydisRegisterGetClass(r)) {
    case ZYDIS_REGCLASS_GPR16:
    case ZYDIS_REGCLASS_GPR32:
    case ZYDIS_REGCLASS_GPR64:
        return ZydisRegisterGetId(r);
    case ZYDIS_REGCLASS_IP:
        return -2;
    default:
        return -1;
    }
}

int vmx_decode(int mode, const uint8_t *code, size_t n, vmx_insn *out)
{
    ZydisDecoder dec;
    ZydisDecodedInstruction in;
    ZydisDecodedOperand op[ZYDIS_MAX_OPERAND_COUNT];
    const ZydisDecodedOperand *fo, *vo;

    memset(out, 0, sizeof *out);
    if (ZYAN_FAILED(ZydisDecoderInit(&dec,
            mode == DM_LONG64 ? ZYDIS_MACHINE_MODE_LONG_64
            : mode == DM_REAL ? ZYDIS_MACHINE_MODE_REAL_16
                              : ZYDIS_MACHINE_MODE_LEGACY_32,
            mode == DM_LONG64 ? ZYDIS_STACK_WIDTH_64
            : mode == DM_REAL ? ZYDIS_STACK_WIDTH_16 : ZYDIS_STACK_WIDTH_32)) ||
        ZYAN_FAILED(ZydisDecoderDecodeFull(&dec, code, n, &in, op)))
        return -1;
    out->len = in.length;
    out->opbits = mode == DM_LONG64 ? 64 : 32;
    switch (in.mnemonic) {
    case ZYDIS_MNEMONIC_VMCALL:
        out->op = LC_OP_VMCALL;
        return 0;
    case ZYDIS_MNEMONIC_VMREAD:
        out->op = LC_OP_VMREAD;
        vo = &op[0];
        fo = &op[1];
        break;
    case ZYDIS_MNEMONIC_VMWRITE:
        out->op = LC_OP_VMWRITE;
        fo = &op[0];
        vo = &op[1];
        break;
    default:
        return -1;
    }
    if (fo->type != ZYDIS_OPERAND_TYPE_REGISTER ||
        (out->field_reg = zgpr(fo->reg.value)) < 0)
        return -1;
    out->val_reg = -1;
    if (vo->type == ZYDIS_OPERAND_TYPE_REGISTER) {
        if ((out->val_reg = zgpr(vo->reg.value)) < 0)
            return -1;
        return 0;
    }
    if (vo->type != ZYDIS_OPERAND_TYPE_MEMORY)
        return -1;
    out->base = zgpr(vo->mem.base);
    out->index = zgpr(vo->mem.index);
    out->scale = vo->mem.scale ? vo->mem.scale : 1;
    out->disp = vo->mem.disp.value;
    out->abits = in.address_width;
    out->seg = (unsigned)(vo->mem.segment - ZYDIS_REGISTER_ES);
    return out->seg < 6 ? 0 : -1;
}
