/* SPDX-License-Identifier: MIT */
/*
 * translator/form.h: the pieces of cluster formation, one file per paper
 * section (private to translator/). form.c drives them:
 *
 *   pair.c         section 3, exit pairs (detection and double-width
 *                  delivery)
 *   form_static.c  section 4, the static cluster window
 *   cflow.c        section 6, branches, backedges and loops (control-flow
 *                  methods 1-3)
 *
 * Dynamic clusters (section 5) are the predictor hookup in form.c; the
 * exit-tracking table itself is libcluster/track.c.
 */
#ifndef LC_TRANSLATOR_FORM_H
#define LC_TRANSLATOR_FORM_H

#include "translator.h"

/* ---- beyond the paper: across CALL, RET and JMP (calls.c, s11) ---- */

#define LCX_MAX_PUSHES 8    /* stack slots the register view remembers */

/* The general registers as the walk predicts them at one point
 * (values.c): the exit's, updated by each instruction decoded since; and
 * what the walk's PUSHes and CALLs stored on the stack. */
typedef struct lcx_regview {
    uint64_t gpr[16];
    uint16_t known;         /* bit r: gpr[r] is predicted (rSP: see the
                             * stack view's rsp_delta instead) */
    uint8_t  seg_stale;     /* bit s: segment register s written by the
                             * walk; a RAM read through it now would use
                             * the base the run no longer has (reads
                             * through the others see what the run will
                             * see: SeaBIOS reloads ES around every
                             * variable it reads, and its RETs read SS) */
    uint8_t  npush;
    struct {
        int64_t  delta;     /* the slot: rSP at the exit + delta */
        uint64_t val;
        uint8_t  bytes;
        uint8_t  known;
    } push[LCX_MAX_PUSHES];
} lcx_regview;

/* The walk's stack view at one point: predicted return addresses of the
 * CALLs followed, rSP relative to the exit while only pushes and pops
 * changed it, and the registers (values.c). */
typedef struct lcx_stackview {
    int      rsp_known;
    int64_t  rsp_delta;
    unsigned depth;
    uint64_t ret[LCX_MAX_DEPTH];
    lcx_regview rv;
} lcx_stackview;

#define LCX_MAX_PENDING 4   /* forward branch targets the walk may resume at */

/* The decode-ahead walk beyond one straight line (calls.c):
 *  - calls, returns and jumps it follows (LC_TECH_CALLS);
 *  - forward conditional branches whose target it has not decoded yet: when
 *    the line ends (an unconditional transfer not followed, a terminator)
 *    it resumes at one of them, with the stack view of the branch (a
 *    branch over a CALL or JMP to a later exiting instruction);
 *  - a backward conditional branch to a loop head it has not decoded (the
 *    head lies before the exit: a poll whose exit test precedes the port
 *    read) is followed as taken, speculatively: if the walk does not come
 *    back to the branch it is undone and the walk goes on after the
 *    branch (section 6.3's loops need the head in the cluster). */
typedef struct lcx_trace {
    const lcx_form_in *in;
    lcx_cluster *out;
    int      follow;        /* LC_TECH_CALLS with a control-flow method */
    lcx_stackview sv;
    unsigned npend;
    struct {
        uint64_t      rip;
        unsigned      idx;     /* the branch's index */
        lcx_stackview sv;
    } pend[LCX_MAX_PENDING];
    /* the speculative backward branch: active, its index and fall-through,
     * and the walk's state before it (spec_used: only one per walk) */
    int      spec, spec_used;
    unsigned spec_idx;
    uint64_t spec_fall;
    lcx_stackview spec_sv;
    unsigned spec_npend;
    uint8_t  spec_nrange;
} lcx_trace;

void lcx_trace_init(lcx_trace *t, const lcx_form_in *in, lcx_cluster *out);

/* The walk cannot go on from where it is (its line ended, or the window
 * is full at `*n` of `window`): undo a speculation that did not close its
 * loop, or resume at a pending forward target. Returns 1 with *n and *rip
 * set to go on from, 0 when the walk is over. */
int lcx_trace_end(lcx_trace *t, unsigned *n, unsigned window, uint64_t *rip);

/* How many more instructions the walk may decode after the first `n`
 * with a window of `window`: followed CALLs, RETs and JMPs do not count
 * against it (only against LCX_MAX_INSNS). 0 when it is full. */
unsigned lcx_trace_room(const lcx_trace *t, unsigned n, unsigned window);

/* The code bytes at `rip` (*p, *avail readable) and which range they are
 * in: a range fetched already, or a new one of up to `want` bytes. 0 when
 * there are none. */
int lcx_trace_code(lcx_trace *t, uint64_t rip, unsigned want,
                   const uint8_t **p, size_t *avail, unsigned *range);

/* After decoding `x` (the n-th instruction, n counting it): does the
 * cluster follow it to another place? Then x->follow is set and *next is
 * the (predicted) target. Also keeps the rSP bookkeeping for every
 * instruction. */
int lcx_trace_follow(lcx_trace *t, lcx_insn *x, unsigned n, uint64_t *next);

/* ---- the registers the walk predicts (values.c) ---- */

/* Read guest RAM without running anything: segmentation and paging as a
 * read, RAM only (never a device), no fault reported. 0, or -1. */
int lcx_peek(lcr_vcpu *v, unsigned seg, uint64_t ea, unsigned n,
             uint64_t *val);

/* lcx_peek() for a prediction that a stale value cannot make unsafe: the
 * page-walk cache's last view of the page first (lcr_pwc_peek: no
 * revalidation, no gpa_map; after a callback a revalidating read costs a
 * re-read of every paging entry and a gpa_map call), else lcx_peek(). */
int lcx_peek_guess(lcr_vcpu *v, unsigned seg, uint64_t ea, unsigned n,
                   uint64_t *val);

/* Start the view at the exit's registers (v NULL: nothing known). */
void lcx_values_init(lcx_regview *rv, const lcr_vcpu *v);

/* Update t->sv.rv (and rSP for LEAVE, PUSHA, POPA) for x, decoded next;
 * called before calls.c counts x's pushes and pops. */
void lcx_values_step(lcx_trace *t, const lcx_insn *x);

/* The target of x, an indirect CALL or JMP, with the predicted registers
 * and memory. 1, or 0 when it cannot be told. */
int lcx_values_target(const lcx_trace *t, const lcx_insn *x, uint64_t *tgt);

/* The `bytes` bytes at rSP-at-the-exit + delta as the walk predicts them:
 * what its PUSH or CALL stored there, else the guest's stack now. */
int lcx_values_stack(const lcx_trace *t, int64_t delta, unsigned bytes,
                     uint64_t *val);

/* ---- section 3 (pair.c) ---- */

/* Mark instruction 1 as the second store of an exit pair with instruction
 * 0 when pairs are enabled and instruction 0 is the weakly exiting
 * instruction the cluster is anchored on (out->pair set). */
void lcx_pair_mark(lcx_cluster *out, unsigned n, const lc_config *cfg,
                   int first_exiting);

/* Deliver the pair at the start of `cl` as one double-width access when
 * the VMM takes that width. Returns -1 when it did not (run the two
 * stores one by one from instruction 0); else the run is over or goes on
 * at instruction 2: *done is set when it is over, with the stop reason in
 * *stop. */
int lcx_pair_run(lcx_cluster *cl, lcr_vcpu *v, int *done,
                 lc_stop_reason *stop);

/* ---- section 4 (form_static.c) ---- */

/* Decode ahead from in->rip, at most `window` instructions, into
 * out->insn. Returns how many; *seen is the bytes the decision depended
 * on (a terminator's included). *err is set to a decode error of the
 * first instruction. */
unsigned lcx_static_decode(const lcx_form_in *in, lcx_cluster *out,
                           unsigned window, size_t *seen, lc_status *err);

/* The last instruction a static cluster of `n` decoded ones may end at:
 * the last exiting instruction (or allowed backedge) before more than
 * max_mem_gap_fillers memory gap fillers or a branch the control-flow
 * method cannot include. `last` is the end so far ((unsigned)-1: none). */
unsigned lcx_static_end(lcx_cluster *out, unsigned n, const lc_config *cfg,
                        int first_exiting, unsigned last);

/* ---- section 6 (cflow.c) ---- */

/* A near branch the formation decides about (relative jump, conditional,
 * indirect jump), unless the cluster follows it (calls.c). */
int lcx_cflow_is_branch(const lcx_insn *x);

/* Nothing after `d` is reached by falling through. */
int lcx_cflow_ends_linear(const lcd_insn *d);

/* The branch at index i of the n decoded instructions: record an
 * in-cluster target the method allows (forward, method 2; backedge of a
 * loop reaching an exiting instruction, method 3, which may also move
 * *last to i). Returns 1 when the walk must stop before going on (method
 * 1 with cflow NONE), else 0. */
int lcx_cflow_branch(lcx_cluster *out, unsigned n, unsigned i,
                     const lc_config *cfg, unsigned *last);

#endif /* LC_TRANSLATOR_FORM_H */
