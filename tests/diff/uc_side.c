/* SPDX-License-Identifier: MIT */
/*
 * tests/diff/uc_side.c: running a case in Unicorn 2 (2.0.1 is what this
 * was written against; see UNICORN_BUGS.md for its quirks).
 *
 * One engine per mode, reused for every case: the RAM is ours
 * (uc_mem_map_ptr) and is overwritten before each case; translated blocks
 * of the code page are invalidated (written through uc_mem_write) because
 * the code changes; the soft TLB is
 * flushed by mapping and unmapping a scratch page, because Unicorn 2.0.1
 * writes CR0/CR3/CR4 straight into env->cr[] without tlb_flush (a stale
 * TLB would skip the page walks that set accessed/dirty bits).
 *
 * Mode setup (Unicorn 2.0.1 semantics, qemu/target/i386/unicorn.c):
 *  real    UC_MODE_16; selectors written in real mode load base = sel << 4.
 *  prot32  UC_MODE_32 (reset leaves CR0.PE=1 and CS32/SS32 hflags); GDTR,
 *          then the selectors, which load descriptors from the GDT in our
 *          RAM through helper_load_seg (so the hidden parts are real).
 *  pae     as prot32, then CR3/CR4.PAE/CR0.PG (paging turned on only after
 *          the segment loads, which read the GDT by linear address).
 *  long64  UC_MODE_64 (reset leaves EFER.LME|LMA and the CS64 hflag set);
 *          CS/SS/DS/ES writes only set selectors (bases are 0 anyway),
 *          FS/GS are loaded and then their bases written; CR3 = PML4,
 *          CR4.PAE, CR0.PG.
 * Port I/O goes through UC_HOOK_INSN IN/OUT (INS/OUTS too: QEMU's string
 * I/O calls the same helpers), CPUID through UC_HOOK_INSN CPUID (returning
 * 1 skips QEMU's own CPUID), MMIO through uc_mmio_map. RDMSR/WRMSR cannot
 * be hooked in 2.0.1: the harness MSRs are real QEMU MSRs, preloaded with
 * the case's values and read back after the run.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unicorn/unicorn.h>

#include "diff.h"

struct uc_side {
    uc_engine *uc;
    int        mode;
    uint8_t   *ram;
    const dcase *c;
    run_result *r;
    unsigned   max_insns;
    unsigned   stop_after;    /* ucs_run_n: instructions to run, or 0 */
    int        has_rdtsc;     /* the case has an RDTSC */
    int        tsc_due;       /* the last instruction was an RDTSC */
    int        has_special;   /* the case has a HLT or a GI_STOP */
    int        xstop;         /* stopped before a GI_STOP instruction */
    int        halted;        /* ran a HLT (Unicorn stops after it) */
    int        resume;        /* the #UD hook emulated an instruction */
    uint8_t    perm[16];      /* what ucs_open() was given, to make the */
    int        watch_writes;  /* ... instance again (uc_make()) */
    uint64_t   last_la;       /* hk_code(): the last address counted */
    unsigned   repeats;       /* hk_code(): the same address again, */
    unsigned   repeats_all;   /* ... and in all in this run */
    int        dead;          /* its translator aborted (emu_start()) */
    int        tainted;       /* the last run ended in an exception
                               * Unicorn did not deliver: its CPU state
                               * is not all the harness sets, so the next
                               * run gets a new instance */
};

/* Which instruction (trace index) made the device access just logged. */
static void tag(uc_side *u)
{
    dev_side *d = &u->r->dev;
    if (d->nlog && !d->overflow)
        d->log[d->nlog - 1].insn = u->r->ntrace ? u->r->ntrace - 1 : 0;
}

/* Every store: the RAM pages it reaches, for the instruction making it
 * (cdiff.c counts a store into a traced page as that instruction's
 * exit). The hook gets the linear address; the case's own tables give
 * the physical one, whatever Unicorn's identity map (below) makes of
 * it. A store crossing a page boundary reaches both pages. */
static void hk_write(uc_engine *uc, uc_mem_type type, uint64_t address,
                     int size, int64_t value, void *user)
{
    uc_side *u = user;
    run_result *r = u->r;
    (void)uc;
    (void)type;
    (void)value;
    if (!r || !r->ntrace || r->ntrace > TRACE_MAX || size <= 0)
        return;
    uint64_t ends[2] = { address, address + (uint64_t)size - 1 };
    for (int i = 0; i < 2; i++) {
        int64_t pa = diff_la_to_pa(u->mode, u->ram, u->c->st.cr3, ends[i]);
        if (pa >= 0)
            r->wpages[r->ntrace - 1] |= 1u << (pa >> 12);
    }
}

#define SCRATCH_PA 0x100000ull

static uint32_t hk_in(uc_engine *uc, uint32_t port, int size, void *user)
{
    uc_side *u = user;
    (void)uc;
    uint32_t v = (uint32_t)dev_answer(&u->r->dev, (unsigned)size);
    dev_log(&u->r->dev, AK_PIO, 0, (unsigned)size, port & 0xffff, v);
    tag(u);
    return v;
}

static void hk_out(uc_engine *uc, uint32_t port, int size, uint32_t value,
                   void *user)
{
    uc_side *u = user;
    (void)uc;
    uint64_t m = size >= 4 ? 0xffffffffull : (1ull << (size * 8)) - 1;
    dev_log(&u->r->dev, AK_PIO, 1, (unsigned)size, port & 0xffff, value & m);
    tag(u);
}

static int hk_cpuid(uc_engine *uc, void *user)
{
    uc_side *u = user;
    uint64_t rax = 0, rcx = 0;
    uint32_t out[4];

    if (u->mode == DM_LONG64) {
        uc_reg_read(uc, UC_X86_REG_RAX, &rax);
        uc_reg_read(uc, UC_X86_REG_RCX, &rcx);
    } else {   /* 2.0.1 reads no 64-bit register outside UC_MODE_64 */
        uint32_t a = 0, cx = 0;
        uc_reg_read(uc, UC_X86_REG_EAX, &a);
        uc_reg_read(uc, UC_X86_REG_ECX, &cx);
        rax = a;
        rcx = cx;
    }
    cpuid_answer((uint32_t)rax, (uint32_t)rcx, out);
    dev_log(&u->r->dev, AK_CPUID, 0, 4, (uint32_t)rax | (uint64_t)(uint32_t)rcx << 32, 0);
    tag(u);
    if (u->mode == DM_LONG64) {
        uint64_t v[4] = { out[0], out[1], out[2], out[3] };
        uc_reg_write(uc, UC_X86_REG_RAX, &v[0]);
        uc_reg_write(uc, UC_X86_REG_RBX, &v[1]);
        uc_reg_write(uc, UC_X86_REG_RCX, &v[2]);
        uc_reg_write(uc, UC_X86_REG_RDX, &v[3]);
    } else {
        uc_reg_write(uc, UC_X86_REG_EAX, &out[0]);
        uc_reg_write(uc, UC_X86_REG_EBX, &out[1]);
        uc_reg_write(uc, UC_X86_REG_ECX, &out[2]);
        uc_reg_write(uc, UC_X86_REG_EDX, &out[3]);
    }
    return 1;   /* skip QEMU's CPUID */
}

/*
 * RDTSC cannot be hooked in 2.0.1 (UC_HOOK_INSN: IN, OUT, SYSCALL,
 * SYSENTER, CPUID only) and QEMU answers it from the host clock. It
 * writes only EDX:EAX (zeroing the upper halves in 64-bit mode), so the
 * harness writes the case's TSC value there after it, before the next
 * instruction (or at the end of the run): exactly an RDTSC that read
 * that value (UNICORN_BUGS.md, workaround 10).
 */
static void tsc_fixup(uc_side *u)
{
    uint64_t v;

    if (!u->tsc_due)
        return;
    u->tsc_due = 0;
    v = dev_rdtsc(&u->r->dev);
    tag(u);
    if (u->mode == DM_LONG64) {
        uint64_t lo = (uint32_t)v, hi = v >> 32;
        uc_reg_write(u->uc, UC_X86_REG_RAX, &lo);
        uc_reg_write(u->uc, UC_X86_REG_RDX, &hi);
    } else {
        uint32_t lo = (uint32_t)v, hi = (uint32_t)(v >> 32);
        uc_reg_write(u->uc, UC_X86_REG_EAX, &lo);
        uc_reg_write(u->uc, UC_X86_REG_EDX, &hi);
    }
}

/* Repeats of one instruction a run of code from a file may make: REP
 * iterations (the engine's rep_budget is 4096 a run) and restarts after a
 * store into the block (precise SMC, each an invalidation costing about
 * 0.3 ms here: random bytes run as code can store into themselves over
 * and over). */
#define REAL_REP_MAX 8192u

/* Is the instruction at `la` a relative branch to itself? */
static int self_branch(const dcase *c, uint64_t la)
{
    uint64_t off = la - c->code_la;
    lc_insn_info info;

    if (off >= c->code_len ||
        lc_decode(dmode_cpu_mode(c->mode), c->code + off,
                  c->code_len - off < 15 ? c->code_len - off : 15,
                  &info) != LC_OK ||
        (info.cflow != LC_CF_JMP_REL && info.cflow != LC_CF_JCC_REL))
        return 0;
    return info.branch_disp == -(int64_t)info.length;
}

/* Is there a HLT at `la`, outside the instructions the case describes?
 * (Code from a file runs on beyond them: into its window's undescribed
 * bytes, before its start, into RAM.) */
static int hlt_at(uc_side *u, uint64_t la)
{
    uint8_t b[15];
    unsigned n = sizeof b;
    lc_insn_info info;

    while (n && uc_mem_read(u->uc, la, b, n) != UC_ERR_OK)
        n--;
    return n && lc_decode(dmode_cpu_mode(u->mode), b, n, &info) == LC_OK &&
           info.op == LC_OP_HLT;
}

static void hk_code(uc_engine *uc, uint64_t address, uint32_t size,
                    void *user)
{
    uc_side *u = user;
    run_result *r = u->r;
    (void)size;
    tsc_fixup(u);
    /* QEMU runs a REP string instruction as one block per iteration, and
     * the hook fires for each; a store into the block it runs in restarts
     * it at the storing instruction (precise SMC), and the hook fires
     * again. The generated code never branches to the same instruction
     * otherwise; code from a file may (`jmp $`, `loop $`), and such a
     * branch counts each time */
    /* (the last address counted, also past TRACE_MAX) */
    if (r->ntrace && u->last_la == address &&
        !(u->c->real && self_branch(u->c, address))) {
        /* code from a file may start a REP MOVS or STOS with any count
         * (the engine never runs those, rep_budget bounds its INS and
         * OUTS): end such a run as a runaway */
        if (u->c->real && (++u->repeats == REAL_REP_MAX + 1 ||
                           ++u->repeats_all == 4 * REAL_REP_MAX + 1)) {
            snprintf(r->why, sizeof r->why, "unicorn: the instruction "
                     "at 0x%llx ran past %u times in a row (REP, or stores "
                     "into itself)",
                     (unsigned long long)address, REAL_REP_MAX);
            uc_emu_stop(uc);
        }
        return;
    }
    u->repeats = 0;
    if (u->stop_after && r->ntrace >= u->stop_after) {
        uc_emu_stop(uc);    /* before this instruction */
        return;
    }
    if (u->has_special) {
        int k = dcase_insn_at(u->c, address);
        if (k >= 0 && (u->c->insn[k].flags & GI_STOP)) {
            /* the library declines it: the run ends before it */
            u->xstop = 1;
            uc_emu_stop(uc);
            return;
        }
        if (k >= 0 && (u->c->insn[k].flags & GI_SHADOW_STOP)) {
            /* it opens an interrupt shadow over the declined one (STI
             * only with IF clear): the library takes both back */
            uint64_t fl = 0;
            uc_reg_read(uc, UC_X86_REG_EFLAGS, &fl);
            if (u->c->insn[k].op != LC_OP_STI || !(fl & LC_RFLAGS_IF)) {
                u->xstop = 1;
                uc_emu_stop(uc);
                return;
            }
        }
        if ((k >= 0 && u->c->insn[k].op == LC_OP_HLT) ||
            (k < 0 && u->c->real && hlt_at(u, address))) {
            /* QEMU completes the HLT and leaves uc_emu_start with RIP
             * past it (EXCP_HLT); the fake VMM logs it as the runtime's
             * halt callback does */
            u->halted = 1;
            dev_log(&r->dev, AK_HLT, 0, 0, 0, 0);
            tag(u);
        }
    }
    if (r->ntrace < TRACE_MAX) {
        uint64_t rcx = 0;
        if (u->mode == DM_LONG64) {
            uc_reg_read(uc, UC_X86_REG_RCX, &rcx);
        } else {
            uint32_t e = 0;
            uc_reg_read(uc, UC_X86_REG_ECX, &e);
            rcx = e;
        }
        r->trace[r->ntrace] = address;
        r->trace_cl[r->ntrace] = rcx;
    }
    u->last_la = address;
    r->ntrace++;
    if (u->has_rdtsc) {
        int k = dcase_insn_at(u->c, address);
        u->tsc_due = k >= 0 && u->c->insn[k].op == LC_OP_RDTSC;
    }
}

/* ---- the VMX instructions: architectural semantics in the #UD hook ------ */

static const int uc_seg[6] = {
    UC_X86_REG_ES, UC_X86_REG_CS, UC_X86_REG_SS, UC_X86_REG_DS,
    UC_X86_REG_FS, UC_X86_REG_GS,
};
static const int uc_gpr64[16] = {
    UC_X86_REG_RAX, UC_X86_REG_RCX, UC_X86_REG_RDX, UC_X86_REG_RBX,
    UC_X86_REG_RSP, UC_X86_REG_RBP, UC_X86_REG_RSI, UC_X86_REG_RDI,
    UC_X86_REG_R8, UC_X86_REG_R9, UC_X86_REG_R10, UC_X86_REG_R11,
    UC_X86_REG_R12, UC_X86_REG_R13, UC_X86_REG_R14, UC_X86_REG_R15,
};
static const int uc_gpr32[8] = {
    UC_X86_REG_EAX, UC_X86_REG_ECX, UC_X86_REG_EDX, UC_X86_REG_EBX,
    UC_X86_REG_ESP, UC_X86_REG_EBP, UC_X86_REG_ESI, UC_X86_REG_EDI,
};

static void gprs_read(uc_side *u, uint64_t g[16])
{
    memset(g, 0, 16 * sizeof g[0]);
    for (int i = 0; i < (u->mode == DM_LONG64 ? 16 : 8); i++) {
        if (u->mode == DM_LONG64) {
            uc_reg_read(u->uc, uc_gpr64[i], &g[i]);
        } else {   /* 2.0.1 reads no 64-bit register outside UC_MODE_64 */
            uint32_t v = 0;
            uc_reg_read(u->uc, uc_gpr32[i], &v);
            g[i] = v;
        }
    }
}

static void gpr_write(uc_side *u, int i, uint64_t v)
{
    if (u->mode == DM_LONG64) {
        uc_reg_write(u->uc, uc_gpr64[i], &v);
    } else {
        uint32_t w = (uint32_t)v;
        uc_reg_write(u->uc, uc_gpr32[i], &w);
    }
}

/* The base of segment register `s`: Unicorn 2.0.1 exposes only
 * selectors, so it is what loading the selector gives (real mode:
 * selector * 16; protected mode: the descriptor in the case's GDT, which
 * no generated store touches; 64-bit mode: 0 but FS/GS). */
static uint64_t seg_base(uc_side *u, unsigned s)
{
    uint16_t sel = 0;
    uint64_t b = 0;

    uc_reg_read(u->uc, uc_seg[s], &sel);
    if (u->mode == DM_REAL)
        return (uint64_t)sel << 4;
    if (u->mode == DM_LONG64) {
        if (s == LC_FS)
            uc_reg_read(u->uc, UC_X86_REG_FS_BASE, &b);
        else if (s == LC_GS)
            uc_reg_read(u->uc, UC_X86_REG_GS_BASE, &b);
        return b;
    }
    const uint8_t *d = u->ram + GDT_PA + (sel & ~7u);
    return (uint64_t)d[2] | (uint64_t)d[3] << 8 | (uint64_t)d[4] << 16 |
           (uint64_t)d[7] << 24;
}

/* Accessed and dirty bits for an access Unicorn's page walk does not see
 * (uc_mem_read/write bypass it): the SDM (vol. 3, "Accessed and Dirty
 * Flags") sets A in every paging-structure entry used and D in the one
 * that maps the page, on a write. PAE PDPTEs have neither. */
static void ad_bits(uc_side *u, uint64_t la, unsigned len, int write)
{
    const uint64_t am = 0x000ffffffffff000ull;
    uint64_t pages[2] = { la & ~0xfffull, (la + len - 1) & ~0xfffull };

    if (u->mode != DM_PAE && u->mode != DM_LONG64)
        return;
    for (int p = 0; p < (pages[0] == pages[1] ? 1 : 2); p++) {
        uint64_t a = pages[p], e, ta;
        int lvl;
        if (u->mode == DM_LONG64) {
            ta = (u->c->st.cr3 & am) + ((a >> 39) & 511) * 8;
            lvl = 4;
        } else {
            ta = (u->c->st.cr3 & ~0x1full) + ((a >> 30) & 3) * 8;
            memcpy(&e, u->ram + ta, 8);
            ta = (e & am) + ((a >> 21) & 511) * 8;
            lvl = 2;
        }
        for (; lvl >= 1; lvl--) {
            if (ta + 8 > RAM_SIZE)
                return;
            memcpy(&e, u->ram + ta, 8);
            e |= 0x20;                               /* A */
            int leaf = lvl == 1 || (lvl == 2 && (e & 0x80));
            if (leaf && write)
                e |= 0x40;                           /* D */
            memcpy(u->ram + ta, &e, 8);
            if (leaf)
                break;
            unsigned sh = lvl == 4 ? 30 : lvl == 3 ? 21 : 12;
            ta = (e & am) + ((a >> sh) & 511) * 8;
        }
    }
}

/*
 * VMREAD, VMWRITE and VMCALL raise #UD in Unicorn (QEMU's TCG has no
 * VMX); this hook is where the harness applies what the CPU does in VMX
 * non-root operation with the fake VMM of common.c behind it: VMCALL
 * always exits (the hypercall); VMREAD/VMWRITE are #UD with CR0.PE = 0
 * (left to Unicorn: the case stops before them, GI_STOP) and #GP at CPL
 * > 0, else they exit and the VMM emulates them from the SDM's
 * operation section: no current VMCS, VMfailInvalid; then VMWRITE reads
 * its source (register or memory, 32 bits outside 64-bit mode, 64 in
 * it); an unsupported field, VMfailValid(12); VMWRITE to a read-only
 * one, VMfailValid(13); else the access and VMsucceed. Unicorn stops
 * after the hook whatever it answers (cpu-exec.c), so the run goes on
 * with a new uc_emu_start (u->resume).
 */
static bool hk_invalid(uc_engine *uc, void *user)
{
    uc_side *u = user;
    const dcase *c = u->c;
    uint64_t g[16], rip = 0, fl = 0, la = 0, val = 0, field;
    uint64_t om;
    vmx_insn vi;
    int code, l64 = u->mode == DM_LONG64;
    uint16_t cs = 0;

    if (l64) {
        uc_reg_read(uc, UC_X86_REG_RIP, &rip);
        uc_reg_read(uc, UC_X86_REG_RFLAGS, &fl);
    } else {
        uint32_t v = 0;
        uc_reg_read(uc, UC_X86_REG_EIP, &v);
        rip = v + c->st.seg[LC_CS].base;
        v = 0;
        uc_reg_read(uc, UC_X86_REG_EFLAGS, &v);
        fl = v;
    }
    if (rip - c->code_la >= c->code_len ||
        vmx_decode(u->mode, c->code + (rip - c->code_la),
                   c->code_len - (rip - c->code_la), &vi) < 0)
        return false;
    gprs_read(u, g);
    if (vi.op == LC_OP_VMCALL) {
        vmx_vmcall(&u->r->dev, g, l64);
        tag(u);
        gpr_write(u, LC_RAX, g[LC_RAX]);
        gpr_write(u, LC_RDX, g[LC_RDX]);
        goto done;
    }
    uc_reg_read(uc, UC_X86_REG_CS, &cs);
    if (u->mode == DM_REAL || (cs & 3))
        return false;                    /* #UD, #GP: not emulated */
    om = vi.opbits == 64 ? ~0ull : 0xffffffffu;
    field = g[vi.field_reg] & om;
    if (vi.val_reg < 0) {
        uint64_t ea = vi.disp;
        if (vi.base == -2)
            ea += rip + vi.len;
        else if (vi.base >= 0)
            ea += g[vi.base];
        if (vi.index >= 0)
            ea += g[vi.index] * vi.scale;
        ea &= vi.abits == 64 ? ~0ull : vi.abits == 32 ? 0xffffffffu : 0xffff;
        la = seg_base(u, vi.seg) + ea;
        if (!l64)
            la &= 0xffffffffu;
    }
    int wr = vi.op == LC_OP_VMWRITE;
    code = vmx_check(&u->r->dev, wr, field);
    if (code != VMX_FAIL_INVALID && wr) {
        /* the source is read before the field is looked at */
        if (vi.val_reg >= 0) {
            val = g[vi.val_reg] & om;
        } else {
            ad_bits(u, la, vi.opbits / 8, 0);
            if (uc_mem_read(uc, la, &val, vi.opbits / 8))
                return false;
        }
    }
    if (code) {
        fl = vmx_fail(&u->r->dev, wr, field, code, fl);
        tag(u);
    } else {
        vmx_do(&u->r->dev, wr, field, &val);
        tag(u);
        fl &= ~(uint64_t)FL_STATUS;          /* VMsucceed */
        if (!wr) {
            val &= om;
            if (vi.val_reg >= 0) {
                gpr_write(u, vi.val_reg, val);
            } else {
                ad_bits(u, la, vi.opbits / 8, 1);
                if (uc_mem_write(uc, la, &val, vi.opbits / 8))
                    return false;
                /* (uc_mem_write calls no hook) */
                hk_write(uc, UC_MEM_WRITE, la, vi.opbits / 8, 0, u);
            }
        }
    }
    if (l64) {
        uc_reg_write(uc, UC_X86_REG_RFLAGS, &fl);
    } else {
        uint32_t f32 = (uint32_t)fl;
        uc_reg_write(uc, UC_X86_REG_EFLAGS, &f32);
    }
done:
    rip += vi.len;
    if (l64) {
        uc_reg_write(uc, UC_X86_REG_RIP, &rip);
    } else {
        uint32_t e32 = (uint32_t)(rip - c->st.seg[LC_CS].base);
        uc_reg_write(uc, UC_X86_REG_EIP, &e32);
    }
    u->resume = 1;
    return true;
}

static bool hk_unmapped(uc_engine *uc, uc_mem_type type, uint64_t address,
                        int size, int64_t value, void *user)
{
    uc_side *u = user;
    (void)uc;
    (void)value;
    snprintf(u->r->why, sizeof u->r->why,
             "unicorn: unmapped %s of %d bytes at gpa/la 0x%llx",
             type == UC_MEM_WRITE_UNMAPPED ? "write"
             : type == UC_MEM_FETCH_UNMAPPED ? "fetch" : "read",
             size, (unsigned long long)address);
    return false;
}

static uint64_t mm_read(uc_engine *uc, uint64_t off, unsigned size,
                        void *user)
{
    uc_side *u = user;
    (void)uc;
    uint64_t v = dev_answer(&u->r->dev, size);
    dev_log(&u->r->dev, AK_MMIO, 0, size, MMIO_PA + off, v);
    tag(u);
    return v;
}

static void mm_write(uc_engine *uc, uint64_t off, unsigned size,
                     uint64_t value, void *user)
{
    uc_side *u = user;
    (void)uc;
    uint64_t m = size >= 8 ? ~0ull : (1ull << (size * 8)) - 1;
    dev_log(&u->r->dev, AK_MMIO, 1, size, MMIO_PA + off, value & m);
    tag(u);
}

/*
 * Paging in Unicorn 2.0.1. Its x86 page walk runs (accessed and dirty bits
 * are set, faults are raised) but the result is then thrown away:
 * qemu/target/i386/excp_helper.c has "Unicorn: indentity map guest
 * virtual address to host virtual address: vaddr = addr & TARGET_PAGE_MASK;
 * paddr = vaddr;" (unicorn issue #1953, fixed in 2.1.0). Every access goes
 * to the guest-*physical* address equal to its linear address. So the
 * linear ranges the cases use are also mapped in Unicorn's physical space
 * as aliases of the frames the case page tables give them (the same host
 * memory, uc_mem_map_ptr; MMIO through a second uc_mmio_map onto the same
 * device). That is why the window's frame permutation is fixed per run
 * (diff_perm) rather than per case. See UNICORN_BUGS.md.
 */
static int alias_ram(uc_side *u, uint64_t la, uint64_t pa, uint64_t len)
{
    return uc_mem_map_ptr(u->uc, la, len, UC_PROT_ALL, u->ram + pa) ? -1 : 0;
}

static int alias_mmio(uc_side *u, uint64_t la)
{
    return uc_mmio_map(u->uc, la, MMIO_SIZE, mm_read, u, mm_write, u) ? -1 : 0;
}

static int alias_layout(uc_side *u, uint64_t hi, const uint8_t perm[16])
{
    /* the window */
    for (unsigned i = 0; i < 16; i++)
        if (alias_ram(u, hi + WIN_LA + i * 0x1000ull,
                      DATA1_PA + perm[i] * 0x1000ull, 0x1000) < 0)
            return -1;
    if (alias_mmio(u, hi + WIN_MMIO_LA) < 0 ||
        alias_ram(u, hi + WIN_DATA0_LA, DATA0_PA, DATA0_END - DATA0_PA) < 0 ||
        alias_ram(u, hi + WIN_CODE_LA, CODE_PA, 0x1000) < 0 ||
        alias_ram(u, hi + WIN_STACK_LA, STACK_PA, 0x1000) < 0)
        return -1;
    /* the 2 MiB page onto physical 0 */
    if (alias_ram(u, hi + BIG_LA, 0, MMIO_PA) < 0 ||
        alias_mmio(u, hi + BIG_LA + MMIO_PA) < 0 ||
        alias_ram(u, hi + BIG_LA + DATA1_PA, DATA1_PA, DATA1_END - DATA1_PA) < 0)
        return -1;
    return 0;
}

static int map_aliases(uc_side *u, const uint8_t perm[16])
{
    if (alias_layout(u, 0, perm) < 0)
        return -1;
    if (u->mode == DM_LONG64) {
        /* PML4[256] = PML4[0]: the identity part and the rest again */
        if (alias_ram(u, HIGH_ALIAS, 0, MMIO_PA) < 0 ||
            alias_mmio(u, HIGH_ALIAS + MMIO_PA) < 0 ||
            alias_ram(u, HIGH_ALIAS + DATA1_PA, DATA1_PA, DATA1_END - DATA1_PA) < 0 ||
            alias_layout(u, HIGH_ALIAS, perm) < 0)
            return -1;
    }
    return 0;
}

/* The Unicorn instance of `u`, its RAM mapped and its hooks set. */
static int uc_make(uc_side *u)
{
    uc_mode um = u->mode == DM_REAL ? UC_MODE_16
               : u->mode == DM_LONG64 ? UC_MODE_64 : UC_MODE_32;
    uc_hook h;

    u->uc = NULL;
    if (uc_open(UC_ARCH_X86, um, &u->uc) != UC_ERR_OK) {
        u->uc = NULL;
        return -1;
    }
    if (uc_mem_map_ptr(u->uc, 0, MMIO_PA, UC_PROT_ALL, u->ram) ||
        uc_mem_map_ptr(u->uc, DATA1_PA, DATA1_END - DATA1_PA, UC_PROT_ALL,
                       u->ram + DATA1_PA) ||
        uc_mmio_map(u->uc, MMIO_PA, MMIO_SIZE, mm_read, u, mm_write, u))
        return -1;
    if ((u->mode == DM_PAE || u->mode == DM_LONG64) &&
        map_aliases(u, u->perm) < 0)
        return -1;
    if (uc_hook_add(u->uc, &h, UC_HOOK_INSN, (void *)hk_in, u, 1, 0,
                    UC_X86_INS_IN) ||
        uc_hook_add(u->uc, &h, UC_HOOK_INSN, (void *)hk_out, u, 1, 0,
                    UC_X86_INS_OUT) ||
        uc_hook_add(u->uc, &h, UC_HOOK_INSN, (void *)hk_cpuid, u, 1, 0,
                    UC_X86_INS_CPUID) ||
        uc_hook_add(u->uc, &h, UC_HOOK_CODE, (void *)hk_code, u, 1, 0) ||
        uc_hook_add(u->uc, &h, UC_HOOK_INSN_INVALID, (void *)hk_invalid, u,
                    1, 0) ||
        uc_hook_add(u->uc, &h, UC_HOOK_MEM_UNMAPPED, (void *)hk_unmapped, u,
                    1, 0) ||
        (u->watch_writes &&
         uc_hook_add(u->uc, &h, UC_HOOK_MEM_WRITE, (void *)hk_write, u, 1, 0)))
        return -1;
    return 0;
}

uc_side *ucs_open(int mode, const uint8_t perm[16], int watch_writes)
{
    uc_side *u = calloc(1, sizeof *u);

    if (!u)
        return NULL;
    u->mode = mode;
    memcpy(u->perm, perm, sizeof u->perm);
    u->watch_writes = watch_writes;
    u->ram = aligned_alloc(4096, RAM_SIZE);
    if (!u->ram)
        goto fail;
    memset(u->ram, 0, RAM_SIZE);
    if (uc_make(u) < 0)
        goto fail;
    return u;
fail:
    if (u->uc)
        uc_close(u->uc);
    free(u->ram);
    free(u);
    return NULL;
}

void ucs_close(uc_side *u)
{
    if (!u)
        return;
    uc_close(u->uc);
    free(u->ram);
    free(u);
}


#define CK(x) do { uc_err e_ = (x); if (e_ != UC_ERR_OK) { \
    snprintf(r->why, sizeof r->why, "unicorn setup: %s: %s", #x, \
             uc_strerror(e_)); return -1; } } while (0)

static int setup(uc_side *u, const dcase *c, run_result *r)
{
    const lc_cpu_state *st = &c->st;
    uc_engine *uc = u->uc;

    memcpy(u->ram, c->ram, RAM_SIZE);
    if (u->mode == DM_REAL) {
        for (int s = 0; s < 6; s++) {
            uint16_t sel = st->seg[s].selector;
            CK(uc_reg_write(uc, uc_seg[s], &sel));
        }
    } else {
        /* paging off while the selectors load descriptors from the GDT */
        uint64_t cr0 = 0x11;
        uc_x86_mmr gdtr = { 0, st->gdtr.base, st->gdtr.limit, 0 };
        CK(uc_reg_write(uc, UC_X86_REG_CR0, &cr0));
        CK(uc_reg_write(uc, UC_X86_REG_GDTR, &gdtr));
        static const int order[6] = { LC_CS, LC_SS, LC_DS, LC_ES, LC_FS,
                                      LC_GS };
        for (int k = 0; k < 6; k++) {
            uint16_t sel = st->seg[order[k]].selector;
            CK(uc_reg_write(uc, uc_seg[order[k]], &sel));
        }
        if (u->mode == DM_LONG64) {
            CK(uc_reg_write(uc, UC_X86_REG_FS_BASE, &st->seg[LC_FS].base));
            CK(uc_reg_write(uc, UC_X86_REG_GS_BASE, &st->seg[LC_GS].base));
        }
        CK(uc_reg_write(uc, UC_X86_REG_CR3, &st->cr3));
        CK(uc_reg_write(uc, UC_X86_REG_CR4, &st->cr4));
        CK(uc_reg_write(uc, UC_X86_REG_CR0, &st->cr0));
    }
    /* the segment loads may have touched RAM (descriptor A bits are preset,
     * so they should not have): lay the image down again */
    memcpy(u->ram, c->ram, RAM_SIZE);
    /* drop the translated blocks of the code page (UC_CTL_TB_FLUSH would
     * do too, but it clears the whole code buffer: ~90 ms a call; and a
     * write through uc_mem_write does not invalidate them in 2.0.1). The
     * lookup may walk the page tables, so the RAM image is laid down
     * again afterwards. */
    CK(uc_ctl(uc, UC_CTL_WRITE(UC_CTL_TB_REMOVE_CACHE, 2), c->code_la,
              c->code_la + 0x1000));
    memcpy(u->ram, c->ram, RAM_SIZE);
    CK(uc_mem_map(uc, SCRATCH_PA, 0x1000, UC_PROT_ALL));  /* tlb_flush */
    CK(uc_mem_unmap(uc, SCRATCH_PA, 0x1000));
    if (u->mode == DM_LONG64) {
        for (int i = 0; i < 16; i++)
            CK(uc_reg_write(uc, uc_gpr64[i], &st->gpr[i]));
        CK(uc_reg_write(uc, UC_X86_REG_RFLAGS, &st->rflags));
    } else {
        for (int i = 0; i < 8; i++) {
            uint32_t v = (uint32_t)st->gpr[i];
            CK(uc_reg_write(uc, uc_gpr32[i], &v));
        }
        uint32_t fl = (uint32_t)st->rflags;
        CK(uc_reg_write(uc, UC_X86_REG_EFLAGS, &fl));
    }
    for (int i = 0; i < N_MSRS; i++) {
        uc_x86_msr m = { diff_msr_ids[i], c->msr[i] };
        CK(uc_reg_write(uc, UC_X86_REG_MSR, &m));
    }
    for (int i = 0; i < 4; i++) {          /* the engine is reused */
        uint64_t z = 0;
        CK(uc_reg_write(uc, UC_X86_REG_DR0 + i, &z));
    }
    return 0;
}

/* Read the end state of a run into `r`; returns the linear RIP. */
static uint64_t collect(uc_side *u, const dcase *c, run_result *r)
{
    uc_engine *uc = u->uc;
    uint64_t rip = 0;
    tsc_fixup(u);
    for (int s = 0; s < 6; s++) {
        uint16_t sel = 0;
        uc_reg_read(uc, uc_seg[s], &sel);
        r->sel[s] = sel;
    }
    for (int i = 0; i < 4; i++) {
        uint64_t v = 0;
        uc_reg_read(uc, UC_X86_REG_DR0 + i, &v);
        r->dr[i] = u->mode == DM_LONG64 ? v : (uint32_t)v;
    }
    r->fs_base = r->gs_base = 0;
    if (u->mode == DM_LONG64) {
        uc_reg_read(uc, UC_X86_REG_FS_BASE, &r->fs_base);
        uc_reg_read(uc, UC_X86_REG_GS_BASE, &r->gs_base);
    }
    if (u->mode == DM_LONG64) {
        uc_reg_read(uc, UC_X86_REG_RIP, &rip);
        for (int i = 0; i < 16; i++)
            uc_reg_read(uc, uc_gpr64[i], &r->gpr[i]);
        uc_reg_read(uc, UC_X86_REG_RFLAGS, &r->rflags);
    } else {
        uint32_t v = 0;
        uc_reg_read(uc, UC_X86_REG_EIP, &v);
        rip = v;
        for (int i = 0; i < 8; i++) {
            v = 0;
            uc_reg_read(uc, uc_gpr32[i], &v);
            r->gpr[i] = v;
        }
        for (int i = 8; i < 16; i++)
            r->gpr[i] = 0;
        v = 0;
        uc_reg_read(uc, UC_X86_REG_EFLAGS, &v);
        r->rflags = v;
        rip += c->st.seg[LC_CS].base;
    }
    r->rip = rip;
    for (int i = 0; i < N_MSRS; i++) {
        uc_x86_msr m = { diff_msr_ids[i], 0 };
        uc_reg_read(uc, UC_X86_REG_MSR, &m);
        r->msr[i] = m.value;
    }
    memcpy(r->ram, u->ram, RAM_SIZE);
    memcpy(r->ram + MMIO_PA, c->ram + MMIO_PA, MMIO_SIZE);
    return rip;
}

/* Reset `r` and lay the case down in Unicorn; -1 on a setup error. */
static int run_begin(uc_side *u, const dcase *c, run_result *r,
                     unsigned max_insns)
{
    r->ok = 0;
    r->why[0] = 0;
    r->ntrace = 0;
    memset(r->wpages, 0, sizeof r->wpages);
    dev_init(&r->dev, c);
    r->aborted = 0;
    if (u->tainted || u->dead) {
        if (!u->dead)
            uc_close(u->uc);
        u->dead = 0;
        if (uc_make(u) < 0) {
            snprintf(r->why, sizeof r->why, "unicorn setup: cannot make the "
                     "instance again");
            return -1;
        }
        u->tainted = 0;
    }
    u->c = c;
    u->r = r;
    u->max_insns = max_insns;
    u->tsc_due = 0;
    u->has_rdtsc = 0;
    u->has_special = 0;
    u->xstop = u->halted = u->resume = 0;
    u->repeats = 0;
    u->repeats_all = 0;
    for (uint32_t i = 0; i < c->ninsns; i++) {
        if (c->insn[i].op == LC_OP_RDTSC)
            u->has_rdtsc = 1;
        if (c->insn[i].op == LC_OP_HLT || (c->insn[i].flags & GI_STOP))
            u->has_special = 1;
    }
    u->has_special |= c->real;          /* a HLT anywhere (hlt_at()) */
    return setup(u, c, r);
}

/* The linear RIP now. */
static uint64_t cur_rip(uc_side *u, const dcase *c)
{
    uint64_t rip = 0;

    if (u->mode == DM_LONG64) {
        uc_reg_read(u->uc, UC_X86_REG_RIP, &rip);
        return rip;
    }
    uint32_t v = 0;
    uc_reg_read(u->uc, UC_X86_REG_EIP, &v);
    return v + c->st.seg[LC_CS].base;
}

/* Code from a file may store, at run time, an encoding Unicorn 2.0.1's
 * translator aborts the process on (UNICORN_BUGS.md, 6: the case's
 * image is tamed, what its code writes cannot be). For such cases the
 * abort is caught: SIGABRT inside uc_emu_start() jumps back here, the run
 * ends with r->aborted set, and the instance, its translator's state
 * half-changed, is left unclosed (its memory is Unicorn's, lsan.supp)
 * and made anew. */
static sigjmp_buf abort_jb;
static volatile sig_atomic_t abort_armed;

static void on_abort(int sig)
{
    if (abort_armed) {
        abort_armed = 0;
        siglongjmp(abort_jb, 1);
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

static uc_err emu_start(uc_side *u, const dcase *c, uint64_t begin,
                        size_t count)
{
    static int installed;
    uc_err e;

    /* (not under AddressSanitizer: its reports end in abort() too, and
     * one from a hook of ours, inside uc_emu_start, must not pass as
     * Unicorn's) */
#ifdef __SANITIZE_ADDRESS__
    if (1)
#else
    if (!c->real)
#endif
        return uc_emu_start(u->uc, begin, c->end_la, 0, count);
    if (!installed) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_abort;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGABRT, &sa, NULL);
        installed = 1;
    }
    if (sigsetjmp(abort_jb, 1)) {
        u->r->aborted = 1;
        u->dead = 1;
        snprintf(u->r->why, sizeof u->r->why, "unicorn: aborted while "
                 "translating (tcg fatal error; UNICORN_BUGS.md, 6)");
        return UC_ERR_EXCEPTION;
    }
    abort_armed = 1;
    e = uc_emu_start(u->uc, begin, c->end_la, 0, count);
    abort_armed = 0;
    return e;
}

/* uc_emu_start from `begin`, and again after each instruction the #UD
 * hook emulated (Unicorn stops after it), until the end, a stop or
 * `budget` instructions (0: no limit of ours). */
static uc_err emu_run(uc_side *u, const dcase *c, uint64_t begin,
                      size_t count, unsigned budget)
{
    uc_err e = emu_start(u, c, begin, count);

    while (e == UC_ERR_OK && u->resume && !u->xstop && !u->halted) {
        uint64_t rip = cur_rip(u, c);
        u->resume = 0;
        if (rip == c->end_la || (budget && u->r->ntrace >= budget) ||
            (u->stop_after && u->r->ntrace >= u->stop_after))
            break;
        e = emu_start(u, c, rip, count);
    }
    return e;
}

int ucs_run(uc_side *u, const dcase *c, run_result *r, unsigned max_insns)
{
    if (run_begin(u, c, r, max_insns) < 0)
        return -1;
    uc_err e = UC_ERR_OK;
    if (c->code_len)
        e = emu_run(u, c, c->code_la, max_insns, max_insns);
    uint64_t rip = collect(u, c, r);
    if (e != UC_ERR_OK) {
        u->tainted = 1;
        if (!r->why[0])
            snprintf(r->why, sizeof r->why, "unicorn: %s at 0x%llx",
                     uc_strerror(e), (unsigned long long)rip);
        return 0;
    }
    if (rip != c->end_la && !u->xstop && !u->halted) {
        snprintf(r->why, sizeof r->why,
                 "unicorn: stopped at 0x%llx after %u instructions (end 0x%llx)",
                 (unsigned long long)rip, r->ntrace,
                 (unsigned long long)c->end_la);
        return 0;
    }
    r->ok = 1;
    return 0;
}

int ucs_run_n(uc_side *u, const dcase *c, run_result *r, unsigned n)
{
    if (run_begin(u, c, r, n) < 0)
        return -1;
    /* a constant non-zero count (UNICORN_BUGS.md, workaround 9); the code
     * hook stops the run before instruction n + 1 */
    u->stop_after = n;
    /* (no instruction: nothing to run; stop_after 0 would mean no limit,
     * and code from a file does not end at end_la. An instance set up and
     * not run refuses the next setup's segment loads: a new one then) */
    uc_err e = n ? emu_run(u, c, c->code_la, 1u << 24, 0) : UC_ERR_OK;
    u->tainted |= !n;
    u->stop_after = 0;
    uint64_t rip = collect(u, c, r);
    /* Unicorn translates the next block, and may raise its exception
     * (#UD, a fetch from nowhere or past a limit), before the code hook
     * can stop the run there: an error with all n instructions run and
     * RIP past the last of them is the end of the run, not a fault in it
     * (code from a file runs on into anything; generated code never
     * gets there) */
    if (e != UC_ERR_OK && n && n <= TRACE_MAX && r->ntrace == n &&
        rip != r->trace[n - 1]) {
        u->tainted = 1;
        r->why[0] = 0;
        e = UC_ERR_OK;
    }
    if (e != UC_ERR_OK) {
        u->tainted = 1;
        if (!r->why[0])
            snprintf(r->why, sizeof r->why, "unicorn: %s at 0x%llx after %u "
                     "instructions", uc_strerror(e), (unsigned long long)rip,
                     r->ntrace);
        return 0;
    }
    if (r->ntrace != n) {
        snprintf(r->why, sizeof r->why,
                 "unicorn: stopped at 0x%llx after %u instructions (engine ran "
                 "%u)", (unsigned long long)rip, r->ntrace, n);
        return 0;
    }
    r->ok = 1;
    return 0;
}
