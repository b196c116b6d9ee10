/* SPDX-License-Identifier: MIT */
/*
 * translator/: forming clusters (paper sections 3-6) and running them.
 *
 * A cluster is the stretch of guest code from an exiting instruction to
 * the last exiting instruction (or last allowed backedge) the translator
 * can reach within its decode-ahead window. Its translation is the
 * pre-decoded instructions with their per-instruction decisions resolved
 * at translation time (which ones are predicted to exit, where taken
 * branches may go, where interrupts are checked), run by lcx_run() through
 * the runtime with no decoding on the way.
 */
#ifndef LC_TRANSLATOR_TRANSLATOR_H
#define LC_TRANSLATOR_TRANSLATOR_H

#include <stddef.h>
#include <stdint.h>

/* Public data headers only, never the engine's API (the build links the
 * translator without the engine). */
#include <cluster/config.h>
#include <cluster/cpu.h>
#include <cluster/stop.h>

#include "../decoder/insn.h"
#include "../runtime/rt.h"

#define LCX_MAX_INSNS 64     /* hard cap on the window (lcx_window()) and
                              * on lc_config.max_cluster_insns */
#define LCX_NO_TARGET 0xff
/* Code ranges of one cluster: the one it starts in, and up to seven more
 * reached by following calls, returns and jumps (translator/calls.c).
 * Each is checked for coherency and watched for self-modification on its
 * own (two frames each, LCR_WATCH_MAX in all). Seven, not the three of
 * before 2026-11-28: from one character's OUT to the next, SeaBIOS's
 * debug printf passes through six stretches of code apart from each
 * other (test_engine_run.c, debug_printf_spans_six_ranges). A range
 * costs only the translations that use it. */
#define LCX_MAX_RANGES 8
/* the runtime's watch (runtime/rt.h) must hold every frame a cluster's
 * ranges may lie in: a frame cut from it would go unwatched */
_Static_assert(LCR_WATCH_MAX >= 2 * LCX_MAX_RANGES,
               "LCR_WATCH_MAX must cover two frames per code range");
#define LCX_RANGE_BYTES 256  /* bytes fetched for a range other than the
                              * first */
#define LCX_MAX_DEPTH 8      /* calls followed without a return between */
#define LCX_RELINK_MISSES 4  /* guard misses in a row that make the engine
                              * re-form a translation (run.c) */

/* Backedge kinds (section 6.3). */
enum lcx_backedge {
    LCX_BE_NONE = 0,   /* a taken backward branch ends the run */
    LCX_BE_WEAK,       /* the loop reaches only weakly exiting instructions:
                        * capped per run (weak_backedge_cap) */
    LCX_BE_STRONG,     /* the loop reaches a strongly exiting instruction */
};

/* Register-only gap fillers resolved at translation time and run inline
 * by lcx_run() without the runtime's generic dispatch; which operations
 * may is their runtime row's `fast` (runtime/rt.h, lcr_op_rows). */
typedef struct lcx_fastop {
    uint8_t  kind;     /* enum lcr_fast */
    uint8_t  binop;    /* enum lcr_binop (runtime/alu.h) */
    uint8_t  store;    /* 0 for CMP and TEST */
    uint8_t  bytes;    /* operand size */
    uint8_t  dst;      /* GPR number */
    uint8_t  src;      /* GPR number, or 0xff for the immediate */
    uint8_t  len;      /* instruction length */
    uint8_t  pad_;
    uint64_t imm;      /* sign-extended and truncated to `bytes` */
} lcx_fastop;

/* What the predictor says about an instruction (lcx_predict_fn). */
#define LCX_PRED_EXITS  (1u << 0)   /* it has exited */
#define LCX_PRED_DEVICE (1u << 1)   /* ... to a device's MMIO range: its
                                     * accesses get a learned route */

typedef struct lcx_insn {
    lcd_insn d;
    lcx_fastop fast;
    lcr_inline_fn ram_fn; /* the runtime's function for an inline form
                           * that reaches only RAM, or NULL (form.c) */
    lcr_route  route;   /* learned device frame (mutable: translations
                         * are per vCPU) */
    uint8_t  routed;    /* use `route` for this instruction's accesses */
    uint8_t  fast_run;  /* inline gap fillers from here on, straight line,
                         * none of them a loop head (0: not inline) */
    uint8_t  inl;       /* enum lcr_inline: the runtime's inline form
                         * (lcr_exec_inline), tried before lcr_exec */
    uint64_t rip;
    uint8_t  exiting;   /* strongly exiting, or weakly and predicted/paired */
    uint8_t  backedge;  /* enum lcx_backedge, for a backward branch */
    uint8_t  target;    /* index of an in-cluster static target, or
                         * LCX_NO_TARGET */
    uint8_t  irq_check; /* check for deliverable interrupts before running
                         * this instruction (loop heads) */
    uint8_t  props;     /* LCX_PRED_* from the predictor */
    uint8_t  follow;    /* a CALL, RET or JMP the cluster follows: the
                         * next instruction is the (predicted) target,
                         * checked by RIP at run time */
    uint8_t  range;     /* the code range it was decoded from */
} lcx_insn;

/* One stretch of guest code the cluster runs: CS-relative start and
 * bytes covered (0: nothing of it is included). */
typedef struct lcx_range {
    uint64_t rip;
    uint16_t len;
    uint8_t  pad_[6];
} lcx_range;

/* The code of ranges 1.. as fetched while forming (ranges[0] is
 * lcx_form_in.code): bytes, how they were fetched (to revalidate without
 * a walk, runtime/rt.h) and the frames they came from. */
typedef struct lcx_code {
    struct {
        size_t        avail;
        unsigned      ngfn;
        uint64_t      gfn[2];
        lcr_fetch_rec rec;
        uint8_t       buf[LCX_RANGE_BYTES];
    } r[LCX_MAX_RANGES - 1];
} lcx_code;

typedef struct lcx_cluster {
    uint64_t    rip;        /* first instruction */
    uint64_t    end_rip;    /* RIP after the last instruction */
    lc_cpu_mode mode;
    lc_cflow_method cflow;
    uint16_t    ninsn;
    uint16_t    nexits;     /* exiting instructions (predicted) */
    uint16_t    nbytes;     /* guest code bytes covered, from rip */
    uint8_t     first_done; /* the exiting instruction at rip-… was already
                             * completed by the VMM (RIP past it) */
    uint8_t     pair;       /* instructions 0 and 1 form an exit pair (s3) */
    uint8_t     solo;       /* one instruction, with an inline form, not
                             * routed, no target: lcx_run() runs it
                             * without the loop */
    uint8_t     stack;      /* its first push or pop run inline: 0 none,
                             * 1 a read (RET, POP), 2 a write (CALL,
                             * PUSH): the engine has that TLB page
                             * current before the run */
    uint8_t     nrange;     /* code ranges (range[0] starts at rip and
                             * covers nbytes) */
    uint8_t     guessed;    /* the walk followed a RET or indirect transfer
                             * to a target read from the guest's state at
                             * formation (calls.c): the layout, and whether
                             * anything is worth running, hold for that
                             * state only (lcx_guess_read); 2: more than
                             * one such read */
    uint8_t     end_none;   /* engine: nothing worth running was found
                             * after end_rip (no chained run from there) */
    uint8_t     guess_kind; /* enum lcx_guess: the first such read */
    uint8_t     guess_bytes;
    lcd_reg     guess_reg;  /* LCX_GUESS_REG: the register */
    int64_t     guess_delta;/* LCX_GUESS_STACK: the slot, from rSP */
    uint64_t    guess_val;  /* the target it read */
    uint8_t     guard_misses; /* runs in a row that left at a followed
                               * transfer's guard (run.c; mutable) */
    lcx_range   range[LCX_MAX_RANGES];
    lcx_insn    insn[LCX_MAX_INSNS];
} lcx_cluster;

/* What a translation's first guessed target was read from (calls.c). */
enum lcx_guess {
    LCX_GUESS_NONE = 0,
    LCX_GUESS_STACK,    /* a RET's slot on the guest's stack */
    LCX_GUESS_REG,      /* an indirect CALL or JMP through a register */
    LCX_GUESS_OTHER,    /* through memory: not read again */
};

/* The target forming `cl` again in the state of `v` would read for its
 * first guessed transfer (cl->guessed): 0 with *val, -1 when it cannot
 * be told. A different value proves the layout does not hold in that
 * state; an equal one proves it only when the walk read nothing more
 * (cl->guessed == 1: a RET after the first may have read another
 * return address). */
int lcx_guess_read(const lcx_cluster *cl, lcr_vcpu *v, uint64_t *val);

/* Does the instruction at `rip` (decoded as `d`) exit? Returns LCX_PRED_*
 * bits, 0 if the exit-tracking table has not seen it exit. */
typedef uint8_t (*lcx_predict_fn)(void *ctx, uint64_t rip,
                                  const lcd_insn *d);

typedef struct lcx_form_in {
    const lc_config *cfg;
    lc_cpu_mode      mode;
    uint64_t         rip;
    const uint8_t   *code;       /* guest bytes from rip */
    size_t           code_len;
    int              first_done; /* RIP is already past the exiting one */
    lcx_predict_fn   predict;    /* NULL: no dynamic prediction */
    void            *predict_ctx;
    uint8_t          first_pred; /* LCX_PRED_* of the exiting instruction */
    /* Following calls, returns and jumps (calls.c): the run context at
     * the exit, to fetch code of other ranges and to read a return
     * address or a pointer the translation then predicts (NULL: only
     * targets inside `code` are followed, and no return or pointer is
     * predicted from memory); where the other ranges' code goes (NULL: no
     * other range). */
    lcr_vcpu        *v;
    lcx_code        *extra;
} lcx_form_in;

/* The decode-ahead window in instructions (section 4's 16, the
 * configured max_cluster_insns) as the cost model scales it
 * (form_static.c): longer where an exit costs more than the paper's, at
 * most LCX_MAX_INSNS. Formation decodes this far, and the engine fetches
 * and chains by it (libcluster/handle_exit.c). */
unsigned lcx_window(const lc_config *cfg);

/* Form the cluster starting at in->rip into *out. Returns LC_OK with
 * out->ninsn >= 1 (the exiting instruction alone at least, unless
 * first_done), or a decode error for the first instruction. */
lc_status lcx_form(const lcx_form_in *in, lcx_cluster *out);

/* Are a and b (b right after a) two stores to adjacent locations through
 * the same addressing form, b's address = a's +/- width (section 3)? */
int lcx_is_pair(const lcd_insn *a, const lcd_insn *b);

/* Run a formed cluster through the runtime. `v` must have been prepared
 * with lcr_begin() on the state whose RIP is cl->rip. Returns the stop
 * reason (LC_STOP_END when it ran to its end or left through a taken
 * branch). Device routes are learned into `cl` as it runs. `start` is
 * the first instruction to run: 1 when the VMM already completed the
 * exiting instruction the cluster is anchored on (RIP is then that of
 * instruction 1), else 0. */
lc_stop_reason lcx_run(lcx_cluster *cl, lcr_vcpu *v,
                       uint32_t weak_backedge_cap, unsigned start);

#endif /* LC_TRANSLATOR_TRANSLATOR_H */
