/* SPDX-License-Identifier: MIT */
/*
 * runtime/: executing guest instructions against lc_cpu_state.
 *
 * Contract of every step: an instruction either completes with all of its
 * architectural effects (registers, RFLAGS, memory, device accesses, RIP),
 * or nothing of it happens and the run stops *before* it with `stop` set,
 * so the guest raises the fault (or takes the exit) itself when it
 * resumes. The runtime never injects an exception. (docs/design.md,
 * "Translations"; paper section 7 for the SMC stop.)
 *
 * The one permitted partial effect is architectural: a REP string
 * instruction may stop between iterations with RCX/RSI/RDI updated and RIP
 * still at the instruction, exactly as an interrupted REP does.
 *
 * Layers: mmu.c (segmentation, page walks, guest-physical access through
 * lc_vm_ops), alu.c (arithmetic with exact RFLAGS), exec.c (instruction
 * semantics and the step loop). Nothing here knows about KVM.
 */
#ifndef LC_RUNTIME_RT_H
#define LC_RUNTIME_RT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Only the public headers that describe data: never the engine's API
 * (the build links the runtime without the engine, see meson.build). */
#include <cluster/cpu.h>
#include <cluster/error.h>
#include <cluster/ops.h>
#include <cluster/stop.h>

#include "../decoder/insn.h"

/* Access kinds for the MMU. */
enum lcr_access {
    LCR_ACC_READ  = 1u << 0,
    LCR_ACC_WRITE = 1u << 1,   /* READ|WRITE for read-modify-write */
    LCR_ACC_FETCH = 1u << 2,
    /* with READ: an implicit supervisor-mode access (SDM vol. 3 4.6),
     * such as the CPU's read of the TSS I/O permission bit map at any
     * CPL; SMAP applies to it whatever RFLAGS.AC says */
    LCR_ACC_IMPLICIT = 1u << 3,
    /* with READ or WRITE: plain RAM only, no MMIO and, for a store, no
     * traced page; anything else stops as a terminator before an A or D
     * bit is set. For an access the VMM must not see: one that would
     * follow another device's (a port and MMIO in one INS or OUTS), or a
     * read before a check that can still fault (a RET's return address). */
    LCR_ACC_PLAIN = 1u << 4,
    /* with READ|WRITE: a locked read-modify-write (XCHG with memory),
     * which the runtime makes atomic only on one naturally aligned piece:
     * a misaligned one (a split lock, across a page or not) stops as a
     * terminator before any walk, for the CPU to lock it */
    LCR_ACC_LOCKED = 1u << 5,
};

/* One physically contiguous piece of a translated access. */
typedef struct lcr_frag {
    uint64_t gpa;
    uint8_t *hva;         /* RAM only; NULL for MMIO */
    uint32_t len;
    uint8_t  kind;        /* lc_gpa_kind */
    uint8_t  traced;      /* write-watched RAM: writes go to traced_write */
    uint8_t  pad_[2];
} lcr_frag;

/* A translated access: at most two fragments, because no access is wider
 * than 8 bytes and so crosses at most one page boundary. */
typedef struct lcr_xlat {
    uint64_t la;          /* linear address of the first byte */
    uint32_t len;         /* bytes in total, 1..8 (up to 15 for fetch) */
    uint8_t  access;      /* enum lcr_access */
    uint8_t  nfrag;
    uint8_t  pad_[2];
    lcr_frag frag[2];
} lcr_xlat;

/* A learned device route (paper section 5: "go straight to the device
 * that instruction always hits"). While set, data accesses of the current
 * instruction to guest-physical frame `gfn` are MMIO without asking the
 * VMM's gpa_map; an MMIO access with gfn 0 sets it (learning). Valid
 * until the VMM changes its guest-physical map and flushes the engine. */
typedef struct lcr_route {
    uint64_t gfn;
    uint8_t  learned;
    uint8_t  pad_[7];
} lcr_route;

#define LCR_WATCH_MAX 16

/* ---- the page-walk cache (mmu.c) ----------------------------------------
 *
 * Agesen et al., Software Techniques for Avoiding Hardware Virtualization
 * Exits, USENIX ATC 2012, section 11: "a simple cache of page translations
 * maintained for the duration of a cluster invocation". Data translations
 * per 4 KiB linear page: the guest-physical page the walk found, which
 * accesses its rights allow, whether the leaf's D bit is set, the paging
 * entries the walk read (where and what, as the fetch record keeps them),
 * and the VMM's gpa_map answer for the page (RAM only).
 *
 * An entry is usable in the epoch it was made or revalidated in. The
 * epoch ends (lcr_pwc_forget) when the guest ran: for a vCPU whose
 * runtime context persists (lcr_begin_keep, the engine), between runs.
 * Within a run it lasts across a device's callbacks (and those that only
 * answer a read) while the flush generation holds, as a CPU's TLB does
 * across a DMA: a write into a paging-structure entry invalidates no
 * translation the CPU has cached, the guest's INVLPG or MOV CR3 does
 * (SDM vol. 3 4.10.4), and that is guest code, after the run. So a
 * translation kept through a callback that wrote the entry it came from
 * is one the CPU may use too. The data itself is never cached: a load
 * after a callback reads what the device wrote. A callback whose effect
 * the VMM defines (WRMSR, VMCALL, VMWRITE, ...; exec.h,
 * lcr_cb_result_cpu) may invalidate inside the run, and ends the epoch.
 * Without a generation (`flush_gen` NULL, a runtime used on its own)
 * nothing says the VMM's gpa_map answers still hold, and every callback
 * ends the epoch (lcr_vmm_ran).
 * An entry of an earlier epoch is used again only after every paging
 * entry its walk read reads back unchanged (the walk is a function of
 * them and of the paging state, so it would find the same). Its
 * gpa_map answer is kept while the engine's flush generation holds
 * (lc_vm_ops.gpa_map's contract: the VMM flushes on every change of what
 * gpa_map answers, tracing included); without a generation
 * (`flush_gen` NULL) it is asked again. Entries are dropped outright
 * (lcr_pwc_drop) when:
 *  - the paging state they were made in (CR0, CR3, CR4, EFER, CPL,
 *    RFLAGS.AC) differs;
 *  - a store goes to a frame holding a paging-structure entry the walk
 *    of an entry held read (pt_gfn, checked on every write translation
 *    and write; the walker's own A/D updates excepted, they only set
 *    bits). The watch covers the entries of earlier epochs too, so a
 *    revalidation has nothing to add to it;
 *  - the guest-physical map changed (the engine's flush generation
 *    `*flush_gen` moved: the hosts of the recorded entries may be gone).
 * A write through an entry whose leaf D bit was clear walks again, as the
 * CPU does (SDM vol. 3 4.8), and sets D. Fetches, implicit supervisor
 * accesses and accesses crossing a page always walk. */
#define LCR_PWC_ENTRIES 8
#define LCR_PWC_PT      12    /* paging-structure frames watched */
#define LCR_PWC_LEVELS  5     /* paging entries a walk reads, at most */
#define LCR_PWC_FAST_R  1     /* a read needs only the VMM's span */
#define LCR_PWC_FAST_W  2     /* a store needs only the span and the SMC
                               * watch: writable, D set, answered for a
                               * write, not ROM, not traced, not a page
                               * table */

typedef struct lcr_pwc_ent {
    uint64_t lpn;         /* linear address >> 12 */
    uint64_t gpa;         /* guest-physical address of the page */
    uint8_t *map_hva;     /* gpa_map answer (RAM): host address of map_lo */
    uint64_t map_lo;      /* first and one past the last gpa vouched for */
    uint64_t map_hi;
    uint64_t epoch;       /* usable while lcr_pwc.epoch is this (64 bits:
                           * never wraps back onto a stale entry) */
    uint8_t  ok;          /* LCR_ACC_READ / LCR_ACC_WRITE the rights allow */
    uint8_t  dirty;       /* the leaf entry's D bit is set */
    uint8_t  mapped;      /* map_*: 0 none, 1 answered for a read, 2 for a
                           * write (a store needs 2: dirty tracking) */
    uint8_t  traced;
    uint8_t  readonly;
    uint8_t  fast;        /* LCR_PWC_FAST_*: what lcr_pwc_ram() may serve
                           * from this entry without further tests (in
                           * its epoch: pwc_fast() in mmu.c) */
    uint8_t  nent;        /* paging entries the walk read, and their size */
    uint8_t  esize;
    uint8_t  e8;          /* every entry 8 bytes at an 8-aligned host
                           * address: read back in one load each */
    uint8_t  ngfn;        /* distinct frames among them (egfn) */
    const uint8_t *ehva[LCR_PWC_LEVELS];  /* where each entry is */
    uint64_t eval[LCR_PWC_LEVELS];        /* and what it held after the
                                           * walk's own A/D updates */
    uint64_t egfn[LCR_PWC_LEVELS];        /* the distinct frames of the
                                           * entries (watched as pt_gfn) */
} lcr_pwc_ent;

/* The last page lcr_pwc_ram() served as plain RAM, for loads and for
 * stores, with the part of it the VMM's answer vouches for: a one-entry
 * TLB in front of the entry search (lcr_pwc_tlb_hit()). Good in its
 * epoch while the paging state is known (pwc.state_known); in a later
 * epoch, or once the state must be compared again, good again when the
 * entry it was made from revalidates (lcr_pwc_tlb_revive()), as a tagged
 * TLB entry outlives a VM entry while the paging structures hold: the
 * next run's stack page costs the state compare and the read-back of its
 * paging entries, not the search and the fill. Forgotten by every walk
 * (pwc_fill(): it may replace an entry or watch a new page table), every
 * new gpa_map answer kept in an entry (pwc_lookup()), lcr_pwc_drop(), and
 * for stores lcr_watch_arm() with new watch content: so while it is held,
 * the entry it was made from is unchanged. What it rests on besides: a
 * watch's content changes only where its owner tells lcr_watch_arm(),
 * gpa_map's answers hold while the flush generation does (the VMM
 * flushes on every change; without a generation revalidation asks
 * again, the entry no longer answers fast and the TLB is forgotten),
 * and its one caller (ram_fast(), exec.c) asks for 1, 2, 4 or 8 bytes. */
#define LCR_PWC_NO_PAGE (~0ull)    /* no linear page number is this */
typedef struct lcr_pwc_tlb {
    uint64_t lpn;         /* linear address >> 12, or LCR_PWC_NO_PAGE */
    uint64_t epoch;
    uint8_t *hva;         /* host address of offset lo */
    uint32_t lo, hi;      /* the offsets in the page vouched for */
    const void *watch;    /* stores: the SMC watch (lcr_vcpu.watching)
                           * it was made under, with none of lo..hi
                           * watched */
    uint8_t  slot;        /* the entry it was made from (lcr_pwc.e) */
    uint8_t  pair;        /* the other direction's page was made with it,
                           * from the same entry and page (a store's fill
                           * makes both): renewed with it */
    uint64_t serial;      /* which fill made it (lcr_pwc.tlb_fills), 0
                           * once forgotten: a stamp's (lcr_tlb_stamp)
                           * page while equal */
} lcr_pwc_tlb;

typedef struct lcr_pwc {
    uint8_t  n;           /* entries usable in this epoch */
    uint8_t  nslot;       /* entries held (this epoch or earlier) */
    uint8_t  npt;         /* valid pt_gfn */
    uint8_t  next;        /* replaced next when full (round robin) */
    uint8_t  cpl, ac;     /* the paging state the entries were made in */
    uint8_t  state_known; /* the paging state was compared with it in this
                           * epoch and no instruction went through
                           * lcr_exec() since (the inline forms change
                           * none of it) */
    uint8_t  pad_;
    uint64_t epoch;
    uint64_t tlb_fills;   /* TLB pages made so far (lcr_pwc_tlb.serial);
                           * never reset while the vCPU lives */
    lcr_pwc_tlb tlb[2];   /* [0] loads, [1] stores */
    uint64_t gen;         /* *flush_gen when the entries were made */
    uint64_t cr0, cr3, cr4, efer;
    uint64_t ptmask;      /* bit (gfn & 63) of every pt_gfn: quick filter */
    uint64_t pt_gfn[LCR_PWC_PT];
    lcr_pwc_ent e[LCR_PWC_ENTRIES];
} lcr_pwc;

/* Per-run execution context. The engine fills the inputs, calls
 * lcr_step()/lcr_exec() repeatedly, then reads the outputs. */
/* The frames a run's code lies in (two per code range; a cluster that
 * follows calls spans up to LCR_WATCH_MAX / 2 ranges) and, with `bytes`
 * set, the bytes of each that hold code: [lo[i], hi[i]) of frame gfn[i]
 * (an empty span: none). A write elsewhere in a frame (data sharing a
 * page with code, as in real-mode firmware) does not stop the run; with
 * `bytes` clear, any write into a frame does. */
typedef struct lcr_watch {
    uint8_t  n;
    uint8_t  bytes;
    uint16_t lo[LCR_WATCH_MAX];
    uint16_t hi[LCR_WATCH_MAX];
    uint64_t gfn[LCR_WATCH_MAX];
} lcr_watch;

typedef struct lcr_vcpu {
    /* inputs: the caller sets them before lcr_begin(), which keeps them
     * (everything from `route` on is cleared there) */
    lc_cpu_state    *st;
    const lc_vm_ops *ops;
    void            *opaque;     /* passed to every callback */
    uint32_t         insn_budget;/* instructions this run may execute */
    uint32_t         rep_budget; /* string iterations this run may execute */
    uint8_t          irq_check;  /* call ops->irq_pending before each step */
    /* SMC watch (section 7): the code being run, or NULL for none. A
     * write into it completes, then stops the run with LC_STOP_SMC before
     * the next instruction. The caller owns it and keeps it unchanged
     * while a run may store (the engine points it at the translation's
     * own, libcluster/coherency.c). */
    const struct lcr_watch *watching;

    /* the current instruction's device route, or NULL (set by the
     * translator per instruction; lcr_begin() clears it) */
    lcr_route       *route;
    struct lcr_fetch_rec *rec;   /* set by lcr_fetch_at_rec() while it walks */
    /* A translation made only to look (LCR_PROBE_*): 0 for a real
     * access; STRICT, a walk that would have to set an accessed or dirty
     * bit fails instead; PEEK, the walk succeeds without setting them and
     * leaves the page-walk cache as it was (vmcs.c: VMWRITE's source is
     * looked at before the VMM answers). Nothing is stored either way. */
    uint8_t          probe;

    /* set while the instruction after an STI, MOV SS or POP SS runs
     * inside that instruction's interrupt shadow (exec.c) */
    uint8_t          in_shadow;

    /* derived at lcr_begin() from *st */
    lc_cpu_mode      mode;
    uint8_t          cpl;

    /* outputs */
    lc_stop_reason   stop;       /* LC_STOP_NONE while running */
    lc_status        error;      /* LC_ERR_CALLBACK if a callback failed */
    uint32_t         insns;      /* instructions completed */
    uint32_t         exits_done; /* strongly/weakly exiting ones that went
                                  * to the VMM (callbacks, MMIO, traced) */
    uint32_t         exit_insns; /* `insns` before the last of them ran
                                  * (how far back the last exit was) */
    uint32_t         dirty;      /* LC_DIRTY_* */
    uint32_t         routed;     /* accesses sent straight to a learned
                                  * device route (no gpa_map lookup) */
    uint8_t          end_after;  /* the run ends after this instruction,
                                  * completed, for this reason (0: it goes
                                  * on): LC_STOP_SMC, a watched frame was
                                  * written (section 7); LC_STOP_COHERENCY,
                                  * a callback moved the flush generation
                                  * (lcr_vmm_ran()). Cleared as lcr_exec()
                                  * begins an instruction. */
    uint8_t          fault_vector; /* for LC_STOP_FAULT: LC_VEC_GP, _SS,
                                    * _PF, _UD (include/cluster/cpu.h) */
    uint8_t          fwd_n;      /* store forwarding: the size of the last
                                  * stack store (a CALL's return address, a
                                  * PUSH) that nothing has observed memory
                                  * since, at fwd_sp holding fwd_val; 0 for
                                  * none (lcr_fwd_forget()) */
    /* Segmentation outside 64-bit mode for the inline forms
     * (lcr_linear_fast()), learned once a run per segment register: bit
     * s of seg_known set once register s was looked at; of seg_r and
     * seg_w, when a read or a write through it needs the limit check
     * alone (usable, present, a type that allows it, expand-up; real and
     * virtual-8086 mode: always). Forgotten by lcr_begin() and around
     * every instruction lcr_exec() runs (it may load a segment register
     * or change the mode). */
    uint8_t          seg_known, seg_r, seg_w;
    uint64_t         fault_addr; /* linear address for #PF */

    /* The engine's flush generation (lcr_begin_keep()), NULL if none:
     * the page-walk cache is dropped when it moves. */
    const uint64_t  *flush_gen;

    /* Not cleared by lcr_begin() beyond its counts (it is large and the
     * hit path pays for every byte cleared). */
    lcr_pwc          pwc;        /* section 11: page walks (see above) */
    uint32_t         pwc_hits;   /* translations served by pwc (counted
                                  * for the tests and benchmarks) */
    uint64_t         run_gen;    /* *flush_gen when the run began (set by
                                  * lcr_begin_keep(); read only with
                                  * flush_gen set: not cleared) */
    uint64_t         fwd_sp;     /* read only while fwd_n is set */
    uint64_t         fwd_val;
} lcr_vcpu;

/* After an access made only to look (a fetch of code the run may never
 * reach, the I/O bit map, a peek through the page-walk cache): whatever
 * it found, a fault included, is not a stop of the run. */
static inline void lcr_stop_forget(lcr_vcpu *v)
{
    v->stop = LC_STOP_NONE;
    v->fault_vector = 0;
    v->fault_addr = 0;
}

/* Store forwarding for the stack (exec.c, stack_push_fast() and
 * stack_read_fast()): a RET or POP reading exactly the slot the last
 * CALL or PUSH of this run wrote, with no memory observed and no VMM code
 * run in between (only register instructions), takes the value from the
 * store, as the CPU's store buffer forwards it, instead of translating
 * and loading the slot again. Any other access forgets the store: a load
 * or a store of the guest's (the inline MOV forms, anything lcr_exec()
 * runs), a callback (IN, OUT): every inline form but the stack's own
 * (lcr_exec_inline()); a read of the slot; a new run. The order
 * this gives is one the CPU may show: the load placed right after the
 * store it reads, with nothing this vCPU does between them visible to
 * anyone (section 11's gap fillers across calls). */
static inline void lcr_fwd_forget(lcr_vcpu *v)
{
    v->fwd_n = 0;
}

/* How every instruction the runtime runs begins, but the inline forms
 * (lcr_exec(), and the translator's store pair, translator/pair.c): no
 * stop yet, nothing to end the run after it, and no forwarded store (it
 * may observe memory). */
static inline void lcr_insn_begin(lcr_vcpu *v)
{
    v->stop = LC_STOP_NONE;
    v->end_after = 0;
    lcr_fwd_forget(v);
}

/* End the page-walk cache's epoch: the guest ran (between two runs), a
 * callback moved the flush generation or ran without one
 * (lcr_vmm_ran()), or one whose effect the VMM defines returned
 * (exec.h, lcr_cb_result_cpu()), so the paging entries may differ.
 * Nothing cached is used again before its paging entries read back
 * unchanged (mmu.c). */
static inline void lcr_pwc_forget(lcr_vcpu *v)
{
    v->pwc.n = 0;
    v->pwc.state_known = 0;
    /* lcr_begin() does not clear the cache (it lives in a caller's stack
     * frame): a stale or never-set `next` would index past e[] once the
     * cache is full, a host store beyond the vCPU, return addresses
     * included. The page-table watch (npt) stays: it covers the frames of
     * every entry held, whatever its epoch; lcr_pwc_drop() clears it. */
    v->pwc.next = 0;
    v->pwc.epoch++;
}

/* Forget both pages of the cache's TLB (lcr_pwc_tlb). */
static inline void lcr_pwc_tlb_forget(lcr_pwc *p)
{
    p->tlb[0].lpn = LCR_PWC_NO_PAGE;
    p->tlb[1].lpn = LCR_PWC_NO_PAGE;
    p->tlb[0].serial = p->tlb[1].serial = 0;
}

/* Drop every cached page walk (a new context, a paging-state change, a
 * store into a walked page table, a changed guest-physical map). */
static inline void lcr_pwc_drop(lcr_vcpu *v)
{
    lcr_pwc_forget(v);
    lcr_pwc_tlb_forget(&v->pwc);
    v->pwc.nslot = 0;
    v->pwc.npt = 0;
    v->pwc.ptmask = 0;
}

/* lcr_pwc_drop() out of line, for the runtime used on its own (mmu.c). */
void lcr_pwc_drop_cold(lcr_vcpu *v);

/* The VMM ran (a callback returned). If it changed the guest-physical
 * map meanwhile (lc_engine_flush(): a BAR moved, shadow RAM mapped over
 * ROM) the page-walk cache's epoch ends, and the run ends after this
 * instruction, LC_STOP_COHERENCY: the rest of the translation was checked
 * against the old map (section 7). Otherwise the epoch goes on, as a TLB
 * outlives a DMA (the page-walk cache above); without a flush generation
 * the cache is dropped at every callback, and lcr_cb_result_cpu() ends it after the
 * callbacks whose effect the VMM defines. */
static inline void lcr_vmm_ran(lcr_vcpu *v)
{
    if (!v->flush_gen) {
        /* nothing vouches for the host addresses the entries hold (the
         * paging entries' and gpa_map()'s answers): a callback may have
         * unmapped them, so the walks are dropped, not revalidated (out
         * of line: every callback of a run inlines this) */
        lcr_pwc_drop_cold(v);
    } else if (__atomic_load_n(v->flush_gen, __ATOMIC_ACQUIRE) !=
               v->run_gen) {
        lcr_pwc_forget(v);
        v->end_after = LC_STOP_COHERENCY;
    }
}

/* The execution mode `st` is in, from CR0.PE, EFER.LMA, CS.L/D and
 * RFLAGS.VM (at the start of every run, lcr_begin*(), to decode and to
 * choose address and operand sizes); contract as lc_cpu_mode_of(). */
static inline lc_cpu_mode lcr_cpu_mode(const lc_cpu_state *s)
{
    const lc_segment *cs = &s->seg[LC_CS];

    if (!(s->cr0 & LC_CR0_PE))
        return LC_MODE_REAL;
    if (s->efer & LC_EFER_LMA) {
        if (cs->l)
            return LC_MODE_LONG64;
        return cs->db ? LC_MODE_COMPAT32 : LC_MODE_COMPAT16;
    }
    if (s->rflags & LC_RFLAGS_VM)
        return LC_MODE_VM86;
    return cs->db ? LC_MODE_PROT32 : LC_MODE_PROT16;
}


/* The host address of `len` (1..8) bytes at linear address `la` when this
 * epoch's page-walk cache already answers for them as plain RAM for
 * `access` (LCR_ACC_READ or LCR_ACC_WRITE alone; a store also on no
 * traced page, page table or watched code frame), else NULL: the
 * translator's inline loads and stores, which otherwise take the full
 * lcr_translate(). Changes nothing but pwc_hits and the cache's TLB
 * (lcr_pwc_tlb). In 64-bit mode `la` and its last byte must be canonical
 * (its caller, ram_fast() in exec.c, checks them itself or has them from
 * lcr_linear()): the page goes into the TLB, whose hits in the same epoch
 * and paging state then stand for that check. */
uint8_t *lcr_pwc_ram(lcr_vcpu *v, uint64_t la, unsigned len, unsigned access);

/* Watch `w` for self-modification from now on (the engine, before each
 * run). `fresh`: its content may differ from what it held when it was
 * last watched (a translation's watch narrowed again, or a new one at a
 * reused address); then the TLB forgets its store page, made under the
 * old content. A caller that cannot tell passes 1. */
static inline void lcr_watch_arm(lcr_vcpu *v, const lcr_watch *w,
                                 unsigned fresh)
{
    v->watching = w;
    if (fresh) {
        v->pwc.tlb[1].lpn = LCR_PWC_NO_PAGE;
        v->pwc.tlb[1].serial = 0;
    }
}

/* Does TLB page `t` (lcr_pwc_tlb, for stores if `wr`) cover `len` bytes at
 * `la`, whatever its epoch: the same linear page, no device route, within
 * the part vouched for and, for a store, under the same SMC watch? What
 * both lcr_pwc_tlb_hit() and lcr_pwc_tlb_get() ask first. */
static inline int lcr_pwc_tlb_covers(const lcr_vcpu *v,
                                     const lcr_pwc_tlb *t, uint64_t la,
                                     unsigned len, unsigned wr)
{
    unsigned off = (unsigned)(la & 0xfff);

    return t->lpn == la >> 12 && !v->route && off >= t->lo &&
           off + len <= t->hi &&
           (!wr || t->watch == (const void *)v->watching);
}

/* lcr_pwc_ram()'s answer when the page is the one it last served for
 * this direction (`wr`: a store) in this epoch, with the paging state
 * known, no route, the access within the part vouched for and, for a
 * store, the same SMC watch: the stack slot a RET reads after its CALL's
 * push, the second and later MOVs on one page. NULL otherwise (then
 * lcr_pwc_tlb_get()'s renewal, then lcr_pwc_ram()). */
static inline uint8_t *lcr_pwc_tlb_hit(lcr_vcpu *v, uint64_t la,
                                       unsigned len, unsigned wr)
{
    const lcr_pwc_tlb *t = &v->pwc.tlb[wr];

    /* the page first: another page's access (a walk of four pages)
     * misses at one compare; the compiler folds the repeat in covers */
    if (t->lpn != la >> 12 || t->epoch != v->pwc.epoch ||
        !v->pwc.state_known || !lcr_pwc_tlb_covers(v, t, la, len, wr))
        return NULL;
    v->pwc_hits++;
    return t->hva + ((unsigned)(la & 0xfff) - t->lo);
}

/* Make TLB page `wr` (lcr_pwc_tlb) good in this epoch and paging state
 * again, whatever access it is for: 1 if the entry it was made from
 * (e[slot]) still answers as it did (the paging state compared, the entry
 * revalidated: its paging entries read back), else 0 (nothing served; a
 * failed revalidation may drop the cache). The other direction's page,
 * if it was made with this one (lcr_pwc_tlb.pair: a store's fill makes
 * both), is renewed with it (a CALL's push, then its RET's load). */
int lcr_pwc_tlb_revive(lcr_vcpu *v, unsigned wr);

/* TLB page `wr` made good for this run ahead of its use, when it is
 * stale (an earlier epoch, or the paging state to compare again): before
 * the run of a cluster that pushes or pops (the engine's
 * lci_stack_vouch()), so that the stack's inline forms find it current. Only a renewal,
 * which checks what a use would: a page the run then does not use cost
 * the renewal and nothing else. */
static inline void lcr_pwc_tlb_renew(lcr_vcpu *v, unsigned wr)
{
    const lcr_pwc_tlb *t = &v->pwc.tlb[wr];

    /* serial 0: never made, or forgotten (lcr_pwc_tlb.lpn may then be
     * anything: a context zeroed at creation holds page 0) */
    if (t->serial && (t->epoch != v->pwc.epoch || !v->pwc.state_known))
        (void)lcr_pwc_tlb_revive(v, wr);
}

/* lcr_pwc_tlb_hit(), then, for an access the page covers but in an
 * earlier epoch or with the paging state to compare again,
 * lcr_pwc_tlb_revive(): a run's first access to the stack page the run
 * before used costs the state compare and the read-back of its paging
 * entries, with the page's own tests made once. A page renewed stands
 * for the canonical check as a hit does (ram_fast(), exec.c): the same
 * page, in the paging state it was made in. */
static inline uint8_t *lcr_pwc_tlb_get(lcr_vcpu *v, uint64_t la,
                                       unsigned len, unsigned wr)
{
    const lcr_pwc_tlb *t = &v->pwc.tlb[wr];

    if (!lcr_pwc_tlb_covers(v, t, la, len, wr))
        return NULL;
    if ((t->epoch != v->pwc.epoch || !v->pwc.state_known) &&
        !lcr_pwc_tlb_revive(v, wr))
        return NULL;
    v->pwc_hits++;
    return t->hva + ((unsigned)(la & 0xfff) - t->lo);
}

/* Does translation `x` reach only plain RAM, as LCR_ACC_PLAIN would ask
 * for its access (no MMIO; for a store, no traced page)? For an
 * instruction whose second access must be plain only when its first
 * one was not (PUSH and POP with a memory operand). */
int lcr_xlat_plain(const lcr_xlat *x);

/* A guess: the `len` (1..8) bytes at linear address `la` as the page-walk
 * cache last saw their page, whatever its epoch: no revalidation, no
 * gpa_map, no A bit, nothing changed. The page tables or the VMM's map
 * answer may have changed since the entry was made (the host memory read
 * is still guest RAM: the entry is gone once the map changes), so the
 * value is only a prediction, for a decision a wrong value cannot make
 * unsafe (the engine's check whether an empty chained translation still
 * applies, handle_exit.c). 1 and *val (zero extended) when the cache
 * answers, else 0. */
int lcr_pwc_peek(const lcr_vcpu *v, uint64_t la, unsigned len,
                 uint64_t *val);

/* Instructions the translator's run loop (run.c) executes through
 * lcr_exec_inline() instead of the dispatcher, by the shape decoded
 * (lcr_inline_kind(), decided once per translation):
 *  - MOV between a general register (or an immediate) and plain RAM whose
 *    page the cache answers for (lcr_pwc_ram());
 *  - near CALL (relative, or through a register) and near RET / RET imm16
 *    with the stack slot in such RAM and a target that does not fault;
 *  - PUSH of a general register or an immediate, POP to a general
 *    register, with the stack slot in such RAM;
 *  - IN and OUT where no I/O permission bit map must be read (real mode,
 *    or CPL <= IOPL).
 * Each does exactly what lcr_exec() would. 1: done; 0: nothing happened,
 * run lcr_exec(); -1: stopped, v->stop says why: the device refused
 * (nothing happened), or LC_STOP_COHERENCY (done, and its callback moved
 * the flush generation: lcr_vmm_ran()). */
enum lcr_inline {
    LCR_INL_NONE = 0,
    LCR_INL_LOAD,       /* MOV r, m */
    LCR_INL_STORE,      /* MOV m, r / imm */
    LCR_INL_CALL_REL,
    LCR_INL_CALL_REG,
    LCR_INL_RET,        /* RET, RET imm16 */
    LCR_INL_PUSH,       /* PUSH r / imm */
    LCR_INL_POP,        /* POP r */
    LCR_INL_IN,
    LCR_INL_OUT,
};
unsigned lcr_inline_kind(const lcd_insn *in);
/* The function of an inline form that reaches only RAM (every kind but
 * LCR_INL_IN and LCR_INL_OUT), for code of one mode, or NULL for a kind
 * that does not (IN, OUT, none): chosen once per translation (form.c), no
 * dispatch when it runs; a 64-bit one checks the mode and takes the
 * general path if it changed. Called directly it leaves the instruction
 * budget and RFLAGS.TF to its caller, as the translator's chains of gap
 * fillers check them once for the whole chain (run.c): 1 done, 0 nothing
 * happened; no callback runs, so never -1. */
typedef int (*lcr_inline_fn)(lcr_vcpu *v, const lcd_insn *in);
lcr_inline_fn lcr_inline_ram_fn(unsigned kind, lc_cpu_mode mode);
/* The same for instruction `in` at `rip` as a translation runs it there
 * (its RIP checked before each): a leaner form where what it checks is
 * known already, a near CALL's static target canonical with 48-bit
 * linear addresses (so whatever CR4.LA57 says), the operand size 64 of
 * a RET without imm16. */
lcr_inline_fn lcr_inline_ram_fn_at(unsigned kind, lc_cpu_mode mode,
                                   const lcd_insn *in, uint64_t rip);
/* One instruction of kind `kind` through its inline form, `ram_fn` being
 * lcr_inline_ram_fn(kind, mode) as the translation chose it (NULL for IN
 * and OUT), with lcr_exec()'s budget and TF checks. */
int lcr_exec_inline(lcr_vcpu *v, const lcd_insn *in, unsigned kind,
                    lcr_inline_fn ram_fn);

/* Prepare `v` for a run over `st` (derives mode and CPL, clears outputs,
 * drops the page-walk cache). */
void lcr_begin(lcr_vcpu *v, lc_cpu_state *st, const lc_vm_ops *ops,
               void *opaque);

/* The same for a context that persists across runs of one vCPU (the
 * engine's): the page-walk cache is kept, to be revalidated (its epoch
 * ends), unless `*flush_gen` (if not NULL) moved since it was filled. */
/* (lcr_begin_common: what both do; on the hit path, inline) */
static inline void lcr_begin_common(lcr_vcpu *v, lc_cpu_state *st,
                                    const lc_vm_ops *ops, void *opaque)
{
    /* The inputs before `route` stay as the caller set them; everything
     * from `route` up to the page-walk cache is cleared, the cache kept
     * for the callers to drop or revalidate (rt.h): on the hit path every
     * byte cleared costs. */
    memset(&v->route, 0, offsetof(lcr_vcpu, pwc) - offsetof(lcr_vcpu, route));
    v->st = st;
    v->ops = ops;
    v->opaque = opaque;
    if (!v->rep_budget)
        v->rep_budget = 1;
    v->pwc_hits = 0;
    v->mode = lcr_cpu_mode(st);
    /* CPL is SS.DPL (SDM vol. 3 5.5: CS.DPL can differ for conforming
     * code); real mode is CPL 0 and vm86 CPL 3. */
    if (v->mode == LC_MODE_REAL)
        v->cpl = 0;
    else if (v->mode == LC_MODE_VM86)
        v->cpl = 3;
    else
        v->cpl = st->seg[LC_SS].dpl & 3;
}

static inline void lcr_begin_keep(lcr_vcpu *v, lc_cpu_state *st,
                                  const lc_vm_ops *ops, void *opaque,
                                  const uint64_t *flush_gen)
{
    lcr_begin_common(v, st, ops, opaque);
    v->flush_gen = flush_gen;
    v->run_gen = flush_gen ? __atomic_load_n(flush_gen, __ATOMIC_ACQUIRE) : 0;
    /* The guest ran since the last run: the cached walks hold only after
     * their entries read back unchanged (section 11, mmu.c); a changed
     * guest-physical map drops them. */
    if (flush_gen && v->pwc.gen != v->run_gen)
        lcr_pwc_drop(v);
    else
        lcr_pwc_forget(v);
}


/* Result of one step. */
enum lcr_step {
    LCR_DONE = 0,   /* the instruction completed; RIP is the next one */
    LCR_STOP,       /* nothing of it happened; v->stop says why */
};

/* Fetch, decode and execute the instruction at CS:RIP. `scratch` receives
 * the decoded instruction. */
int lcr_step(lcr_vcpu *v, lcd_insn *scratch);

/* Execute an already decoded instruction (the translator's path: no
 * fetch, no decode). `insn` must have been decoded for v->mode. */
int lcr_exec(lcr_vcpu *v, const lcd_insn *insn);

/* ---- the operation table (optab.c) --------------------------------------
 *
 * One const row per lc_op, in the manner of an emulator's opcode table:
 * the executor that runs the operation, how it finds its memory operand,
 * the ALU operation it applies, and whether the translator may run it
 * inline as a register-only gap filler. The decoder's own table
 * (decoder/optable.c) holds what the operation *is* (its exit class
 * facts); this one holds how the runtime runs it. Neither repeats the
 * other: tests/unit/test_exec.c checks that exactly the rows the decoder
 * marks LCD_F_EXEC have an executor. */

struct lcr_ectx;                 /* per-instruction context (exec.h) */
typedef int (*lcr_exec_fn)(lcr_vcpu *v, struct lcr_ectx *c);

/* Register-only gap fillers the translator may run inline, without the
 * executor (translator/run.c), when their operands are full GPRs or an
 * immediate. */
enum lcr_fast {
    LCR_FAST_NONE = 0,
    LCR_FAST_ALU,     /* binary ALU operation `alu` (enum lcr_binop) */
    LCR_FAST_MOV,     /* plain register or immediate move */
};

enum lcr_row_flags {
    LCR_ROW_OWNMEM = 1u << 0,  /* the executor translates its own memory
                                * operands (stack, string I/O) */
    LCR_ROW_STORE  = 1u << 1,  /* an ALU row writes its result back (not
                                * CMP, TEST) */
    LCR_ROW_REP_PARTIAL = 1u << 2, /* with a REP prefix it may stop between
                                * iterations with those done standing (the
                                * one exception to exec.h's "LCR_STOP: no
                                * register written"): INS, OUTS */
    LCR_ROW_PLAINMEM = 1u << 3, /* its memory operand is read before a
                                * check that can still fault (a jump
                                * target, a divisor): plain RAM only
                                * (LCR_ACC_PLAIN) */
    LCR_ROW_LOCKED = 1u << 4,  /* a locked access (XCHG): LCR_ACC_LOCKED */
};

typedef struct lcr_op_row {
    lcr_exec_fn ex;     /* NULL: the runtime does not run it (terminator) */
    uint8_t     flags;  /* enum lcr_row_flags */
    uint8_t     fast;   /* enum lcr_fast */
    uint8_t     alu;    /* enum lcr_binop or lcr_shop (alu.h) */
    uint8_t     pad_;
} lcr_op_row;

extern const lcr_op_row lcr_op_rows[LC_OP_COUNT_];

/* ---- helpers shared with the translator --------------------------------- */

/* Effective address of the memory operand of `in`, an instruction at
 * `rip` (RIP-relative operands count from its end), truncated to the
 * address size. `rsp_adj` is added when the base is rSP (POP to memory
 * computes its address after incrementing rSP). */
uint64_t lcr_eff_addr(const lcr_vcpu *v, const lcd_insn *in, uint64_t rip,
                      int64_t rsp_adj);

/* A memory access at `ea` in segment `seg`: lcr_linear() then
 * lcr_translate(); 0, or -1 with v->stop set. */
int lcr_mem_xlat(lcr_vcpu *v, unsigned seg, uint64_t ea, unsigned bytes,
                 unsigned access, lcr_xlat *x);

/* Value of a register or immediate operand (0 for anything else). */
static inline uint64_t lcr_reg_get(const lcr_vcpu *v, lcd_reg r,
                                   unsigned bytes)
{
    const uint64_t *g = v->st->gpr;

    switch (r.cls) {
    case LCD_REG_GPR:
        return g[r.num & 15] &
               (bytes >= 8 ? ~0ull : (1ull << (bytes * 8)) - 1);
    case LCD_REG_GPR8H:
        return (g[r.num & 3] >> 8) & 0xff;
    default:
        return 0;
    }
}

static inline uint64_t lcr_src_value(const lcr_vcpu *v, const lcd_opnd *o)
{
    if (o->kind == LCD_OPND_REG)
        return lcr_reg_get(v, o->reg, o->bytes);
    return o->kind == LCD_OPND_IMM ? o->imm : 0;
}

/* Linear-address width: 57 bits with 5-level paging (CR4.LA57), else 48
 * (SDM vol. 3 4.5). */
static inline unsigned lcr_la_bits(const lcr_vcpu *v)
{
    return (v->st->cr4 & LC_CR4_LA57) ? 57 : 48;
}

/* Canonical: bits 63:bits-1 all equal (SDM vol. 1 3.3.7.1; vol. 3 4.5.1
 * for LA57). The one check of the runtime, for data, fetches and branch
 * targets. Unsigned shifts only: no implementation-defined right shift of
 * a negative value. */
static inline int lcr_canonical(uint64_t la, unsigned bits)
{
    uint64_t top = la >> (bits - 1);
    return top == 0 || top == (~0ull >> (bits - 1));
}

/* Is `la` canonical for vCPU `v` (64-bit mode)? Canonical at 48 bits is
 * canonical at 57 too (bits 63:47 equal implies bits 63:56 equal), so
 * most addresses answer without reading CR4. At 48 bits: la lies in
 * [0, 2^47) or [2^64 - 2^47, 2^64), which adding 2^47 (mod 2^64) maps
 * onto [0, 2^48): one add, one shift, one test. */
static inline int lcr_canonical_v(const lcr_vcpu *v, uint64_t la)
{
    if (((la + (1ull << 47)) >> 48) == 0)
        return 1;
    return lcr_canonical(la, lcr_la_bits(v));
}

/* Are the `n` bytes from `la` canonical for `v` (64-bit mode), without
 * wrapping around 2^64? Every byte is canonical when the first and the
 * last are (SDM vol. 1 3.3.7.1). The one range check of the runtime:
 * data (lcr_linear(), ram_fast()) and translations (mmu.c). */
static inline int lcr_canonical_range_v(const lcr_vcpu *v, uint64_t la,
                                        uint64_t n)
{
    uint64_t last = la + n - 1;

    return last >= la && lcr_canonical_v(v, la) && lcr_canonical_v(v, last);
}

/* Does `in` open an interrupt shadow (SDM vol. 3 6.8.3: STI, MOV SS, POP
 * SS)? The runtime runs the next instruction inside it, in the same step,
 * and a cluster ends after that one (translator/form_static.c): a shadow
 * is never left open at a stop, and an interrupt STI made deliverable is
 * taken right after it. */
static inline int lcr_opens_shadow(const lcd_insn *in)
{
    return in->info.op == LC_OP_STI ||
           ((in->info.op == LC_OP_MOV_SREG || in->info.op == LC_OP_POP) &&
            in->nopnds > 0 && in->opnd[0].kind == LCD_OPND_REG &&
            in->opnd[0].reg.cls == LCD_REG_SEG && in->opnd[0].reg.num == LC_SS);
}

/* The port of IN or OUT `in` (the runtime's, and the adapter's search
 * for an exiting one): its immediate, or DX. OUT names the port first,
 * IN second. */
static inline uint16_t lcr_io_port(const lcr_vcpu *v, const lcd_insn *in,
                                   int is_out)
{
    const lcd_opnd *port = &in->opnd[is_out ? 0 : 1];

    return port->kind == LCD_OPND_IMM ? (uint16_t)port->imm
                                      : (uint16_t)v->st->gpr[LC_RDX];
}

/* The stack's address size (SDM vol. 1 6.2.3): 8 in 64-bit mode, else 4
 * when SS.B is set and 2 when clear. Real mode too keeps the B bit the
 * last protected-mode load of SS left (SDM vol. 3, "Switching Back to
 * Real-Address Mode": attributes stay until SS is loaded in protected
 * mode again; a real-mode load changes its base alone, sreg.c), so a
 * 32-bit stack goes on with ESP; virtual-8086 mode's segments are 16-bit
 * whatever the state's attributes say. */
static inline unsigned lcr_stack_bytes(const lcr_vcpu *v)
{
    if (v->mode == LC_MODE_LONG64)
        return 8;
    return v->st->seg[LC_SS].db && v->mode != LC_MODE_VM86 ? 4 : 2;
}

/* Does CET (SDM vol. 1 ch. 17, CR4.CET set) guard `in`: a near CALL or
 * RET, which also push or pop the shadow stack and compare its entry
 * (#CP), or an indirect JMP or CALL, which must land on an ENDBR under
 * indirect branch tracking? Neither the shadow-stack pointer nor the
 * tracker is in the state, so the runtime never runs these with CET on:
 * each stops before them as a terminator, and the translator ends a
 * cluster there (a translation is reused only under the CR4 it was made
 * with, lcr_fetch_check()). One test of CR4 when CET is off. */
static inline int lcr_cet_guards(const lc_cpu_state *st, const lcd_insn *in)
{
    if (__builtin_expect(!(st->cr4 & LC_CR4_CET), 1))
        return 0;
    switch (in->info.cflow) {
    case LC_CF_CALL_REL:
    case LC_CF_CALL_IND:
    case LC_CF_RET:
    case LC_CF_JMP_IND:
        return 1;
    default:
        return 0;
    }
}

/* ---- MMU (mmu.c) -------------------------------------------------------- */

/* A record of one code fetch, for revalidation without a page walk: the
 * host address and value of every paging entry the walk read, the host
 * address of the code, and the state the walk depended on. Host addresses
 * stay valid until the VMM changes its guest-physical map, when it must
 * flush the engine (ops.h, gpa_map). */
#define LCR_REC_ENTRIES 10
typedef struct lcr_fetch_rec {
    uint8_t        valid;
    uint8_t        nent;
    uint8_t        npages;
    uint8_t        esize[LCR_REC_ENTRIES];
    const uint8_t *ehva[LCR_REC_ENTRIES];
    uint64_t       eval[LCR_REC_ENTRIES];  /* as the walk left each: its
                                            * A bit set */
    const uint8_t *code[2];
    uint32_t       code_len[2];
    uint64_t       gfn[2];
    /* what the fetch depended on besides memory */
    uint64_t       rip, cr0, cr3, cr4, efer, cs_base;
    uint64_t       cs_attr;  /* CS type .. avl, as stored (cs_attr_of()) */
    uint32_t       cs_limit;
    uint8_t        cs_unusable, cpl, mode;
    uint8_t        e8;       /* every entry 8 bytes at an 8-aligned host
                              * address: the check loads each in one go */
} lcr_fetch_rec;

/* lcr_fetch_at() that also fills `rec` (rec->valid only if every byte
 * came from RAM through a successful walk). */
size_t lcr_fetch_at_rec(lcr_vcpu *v, uint64_t rip, uint8_t *buf, size_t max,
                        uint64_t gfn[2], unsigned *ngfn, lcr_fetch_rec *rec);

/* lcr_fetch_at_rec() of code the run may never reach (a callee, a
 * predicted return site: translator/calls.c, libcluster/coherency.c): a
 * look, which sets no accessed bit (a page whose bits are still clear is
 * not fetched from) and reports nothing, a fault included. `rec` may be
 * NULL (no record: runtime/exec.c, ss_load_check()). */
size_t lcr_fetch_look_rec(lcr_vcpu *v, uint64_t rip, uint8_t *buf,
                          size_t max, uint64_t gfn[2], unsigned *ngfn,
                          lcr_fetch_rec *rec);

/* Does a fetch of `len` bytes at `rip` in the current state still produce
 * `expect`, by the record alone? 1 if every recorded entry still holds
 * its value, the state the walk depended on is unchanged, and the code
 * bytes equal `expect`; 0 otherwise (do a full fetch). No callbacks. */
int lcr_fetch_check(const lcr_vcpu *v, uint64_t rip, const lcr_fetch_rec *rec,
                    const uint8_t *expect, size_t len);
/* The same but the code bytes, which the caller compares its own way
 * (libcluster/engine_int.h: a translation's code in one span). */
static inline int lcr_fetch_check_walk(const lcr_vcpu *v, uint64_t rip,
                                       const lcr_fetch_rec *rec)
{
    return lcr_fetch_check(v, rip, rec, NULL, 0);
}

/* The stack's TLB page as a translation that pushes or pops saw it after
 * a run, for its next hit (lcr_pwc_tlb_stamp(), lcr_pwc_tlb_vouch()):
 * which fill made the page, and the paging entries of the page-walk cache
 * entry it was made from that the translation's fetch record does not
 * read back itself (in a long-mode guest whose stack lies near its code,
 * the page table entry alone). */
typedef struct lcr_tlb_stamp {
    uint64_t serial;      /* lcr_pwc_tlb.serial; 0: no stamp */
    uint8_t  wr;          /* the TLB page: [1] stores, [0] loads */
    uint8_t  n;
    const uint8_t *ehva[LCR_PWC_LEVELS];
    uint64_t eval[LCR_PWC_LEVELS];
} lcr_tlb_stamp;

/* Stamp TLB page `wr` for the translation whose fetch record is `rec`
 * (after its run): 1 with `s` filled when the page is held and was made
 * in the state `rec` was made in (the paging state, 8-byte entries, a
 * flush generation), else 0 with s->serial 0. The page need not be
 * current: the vouch reads back what the stamp records. */
int lcr_pwc_tlb_stamp(const lcr_vcpu *v, unsigned wr,
                      const lcr_fetch_rec *rec, lcr_tlb_stamp *s);

/* The page stamped in `s` made current for this epoch without the state
 * compare: right after lcr_fetch_check() passed the record `s` was made
 * with, in this epoch (the caller's part: a record made again drops its
 * stamp). The fetch check compared CR0, CR3, CR4, EFER and the CPL with
 * the record, which equal the cache's own while the page is the one
 * stamped (every change of the cache's state drops the TLB), and read
 * back the paging entries the page shares with the code; this compares
 * RFLAGS.AC and reads back the rest (s->ehva). The flush generation was
 * compared with the cache's when the epoch began (lcr_begin_keep(): a
 * change drops the cache, and the page with it); one that moves in the
 * epoch is found at the next callback, as for every page the TLB holds
 * (lcr_vmm_ran()). A context without a generation (the runtime used on
 * its own) vouches for nothing: its revalidation asks the VMM again.
 * 1 when the page is current, else 0 (nothing changed: the run renews it
 * as before, lcr_pwc_tlb_renew()). The page-walk cache entry the page was
 * made from is left as it was: current again at its own next use. */
static inline int lcr_pwc_tlb_vouch(lcr_vcpu *v, const lcr_tlb_stamp *s)
{
    lcr_pwc *p = &v->pwc;
    lcr_pwc_tlb *t = &p->tlb[s->wr];
    uint64_t d;

    /* the page held since the stamp: the entry it was made from is
     * unchanged, and so is the cache's paging state (lcr_pwc_tlb) */
    if (t->serial != s->serial || !v->flush_gen ||
        p->ac != ((v->st->rflags & LC_RFLAGS_AC) != 0))
        return 0;
    /* none (a stack on the code's 2 MiB page), one (its page table entry
     * beside the code's: 4 KiB pages), or more. mmu.c's entries_hold8()
     * does the same read-back; called here through a header it cost 8
     * instructions more per exit with 4 KiB pages (its jump table for
     * one entry), measured with bench_engine --small-pages. */
    if (s->n) {
        d = __atomic_load_n((const uint64_t *)(const void *)s->ehva[0],
                            __ATOMIC_RELAXED) ^ s->eval[0];
        for (unsigned i = 1; i < s->n; i++)
            d |= __atomic_load_n((const uint64_t *)(const void *)s->ehva[i],
                                 __ATOMIC_RELAXED) ^ s->eval[i];
        if (d)
            return 0;
    }
    if (t->pair)
        p->tlb[0].epoch = p->tlb[1].epoch = p->epoch;
    else
        t->epoch = p->epoch;
    p->state_known = 1;
    return 1;
}

/* Were `a` and `b` made in the same state through the same paging
 * entries (their RIPs aside)? Then, right after lcr_fetch_check() passed
 * `a`, lcr_fetch_code_equal() (the code bytes alone) decides for `b`: a
 * callee on its caller's page (libcluster/coherency.c). */
int lcr_fetch_same_walk(const lcr_fetch_rec *a, const lcr_fetch_rec *b);
int lcr_fetch_code_equal(const lcr_fetch_rec *rec, const uint8_t *expect,
                         size_t len);

/* Segmentation: effective address `ea` in segment `seg` to a linear
 * address, with limit, type, privilege and canonical checks for an access
 * of `size` bytes. 0 on success; on failure sets v->stop = LC_STOP_FAULT
 * and v->fault_vector (13, or 12 for SS) and returns -1. */
int lcr_linear(lcr_vcpu *v, unsigned seg, uint64_t ea, unsigned size,
               unsigned access, uint64_t *la);

/* Limit check for bytes [ea, ea + size - 1] of an expand-up segment (SDM
 * 5.3): the last offset computed in 64 bits, so an access that would wrap
 * the offset space fails (the SDM leaves that case to the
 * implementation; stopping is always safe). lcr_linear() and
 * lcr_linear_fast() both. */
static inline int lcr_seg_limit_up(const lc_segment *s, uint64_t ea,
                                   unsigned size)
{
    uint64_t last = ea + size - 1;

    return last >= ea && last <= s->limit;
}

/* Learn what lcr_linear_fast() may take of segment register `seg`
 * (lcr_vcpu.seg_known, seg_r, seg_w). */
void lcr_seg_learn(lcr_vcpu *v, unsigned seg);

/* lcr_linear() for a read (`wr` 0) or a write of `size` bytes outside
 * 64-bit mode, when the segment needs the limit check alone: 1 with *la
 * set; 0 for anything else, with nothing changed (lcr_linear() then
 * decides, faults included). The same limit test (lcr_seg_limit_up())
 * and the same 32-bit linear address. */
static inline int lcr_linear_fast(lcr_vcpu *v, unsigned seg, uint64_t ea,
                                  unsigned size, unsigned wr, uint64_t *la)
{
    const lc_segment *s;
    unsigned bit = 1u << (seg & 7);

    if (seg >= LC_NR_SREGS || v->mode == LC_MODE_LONG64)
        return 0;
    if (!(v->seg_known & bit))
        lcr_seg_learn(v, seg);
    if (!((wr ? v->seg_w : v->seg_r) & bit))
        return 0;
    s = &v->st->seg[seg];
    if (!lcr_seg_limit_up(s, ea, size))
        return 0;
    *la = (s->base + ea) & 0xffffffffull;
    return 1;
}

/* v->probe: a real access, or a look (mmu.c, commit_ad()). */
#define LCR_PROBE_NONE   0
#define LCR_PROBE_STRICT 1
#define LCR_PROBE_PEEK   2

/* Paging and guest-physical lookup: linear range to fragments. Walks the
 * guest's page tables in software for the current CR0/CR4/EFER (none,
 * 32-bit with 4 MiB pages, PAE, 4- and 5-level), checks U/S, R/W (with
 * CR0.WP), NX (EFER.NXE) and SMAP/SMEP, and sets accessed and dirty bits
 * exactly as the CPU does. Page-table reads that land outside RAM,
 * in MMIO, or loop stop cleanly. 0 on success; -1 with v->stop set
 * (LC_STOP_FAULT with vector 14, or LC_STOP_TERMINATOR when the data page
 * is unmapped in guest-physical space). */
int lcr_translate(lcr_vcpu *v, uint64_t la, unsigned len, unsigned access,
                  lcr_xlat *x);

/* Where the explicit memory operand of `in`, an instruction starting at
 * `insn_rip`, points in guest-physical space with the current registers:
 * segmentation and paging as a read (accessed bits only; nothing is
 * stored or executed). 0 with *gpa, or -1 (no memory operand, a fault,
 * not mapped). Used to confirm which instruction made an exit that was
 * reported after it completed. */
int lcr_mem_gpa(lcr_vcpu *v, const lcd_insn *in, uint64_t insn_rip,
                uint64_t *gpa);

/* Read or write through a translation. RAM is copied; MMIO goes to
 * ops->mmio with the whole access (split at the page boundary if the
 * access crosses into a second fragment); traced RAM writes go to
 * ops->traced_write. A write into a watched frame sets v->end_after
 * (LC_STOP_SMC).
 * 0 on success; -1 with v->stop set (LC_STOP_CALLBACK, or
 * LC_STOP_TERMINATOR if a needed callback is NULL). Reads must be done
 * before any write of the same instruction. */
int lcr_read(lcr_vcpu *v, const lcr_xlat *x, void *buf);
/* Does a write of `len` bytes at guest-physical `gpa` (within one frame)
 * touch the code the run is watching (v->watching)? */
int lcr_watched(const lcr_vcpu *v, uint64_t gpa, unsigned len);
/* Offset within its 4 KiB page of the first byte a fetch record covers
 * (its linear address's low 12 bits). */
unsigned lcr_fetch_page_off(const lcr_fetch_rec *rec);
/* Guest RAM as other vCPUs and DMA share it: n bytes copied or compared
 * with relaxed atomic accesses of the widest naturally aligned size, so
 * that aligned accesses are single-copy atomic (mmu.c). */
void lcr_ram_read(void *dst, const uint8_t *hva, size_t n);
void lcr_ram_write(uint8_t *hva, const void *src, size_t n);
int lcr_ram_equal(const uint8_t *hva, const void *buf, size_t n);
int lcr_write(lcr_vcpu *v, const lcr_xlat *x, const void *buf);
/* One byte through `x` (a write translation of 1 byte) set to `val` if it
 * still holds `old`, as the CPU's locked update of a descriptor's
 * accessed bit: 0 when it holds `val` now (set here, or by another
 * vCPU); -1 with LC_STOP_TERMINATOR when it holds anything else (changed
 * since it was read: the CPU's). A traced page goes through
 * lcr_write(). */
int lcr_write_byte_if(lcr_vcpu *v, const lcr_xlat *x, uint8_t old,
                      uint8_t val);

/* Fetch up to `max` (<= 15) code bytes at CS:RIP, stopping early at a
 * page that cannot be fetched (not present, NX, not RAM). Returns the
 * number of bytes fetched (0 if the first byte cannot be) and the
 * guest-physical frames they came from in gfn[0..1] (*ngfn set). */
size_t lcr_fetch(lcr_vcpu *v, uint8_t *buf, size_t max, uint64_t gfn[2],
                 unsigned *ngfn);

/* The same at CS:`rip` for up to LCR_FETCH_MAX bytes (the translator's
 * decode-ahead window and the coherency check); still at most two pages. */
#define LCR_FETCH_MAX 512
size_t lcr_fetch_at(lcr_vcpu *v, uint64_t rip, uint8_t *buf, size_t max,
                    uint64_t gfn[2], unsigned *ngfn);

#endif /* LC_RUNTIME_RT_H */
