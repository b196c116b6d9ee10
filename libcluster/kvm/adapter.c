/* SPDX-License-Identifier: MIT */
/*
 * libcluster/kvm/adapter.c: the KVM adapter (include/cluster/kvm.h).
 *
 * Completion strategies, per exit (decided from the probe):
 *
 *  IN / MMIO read, RIP at the instruction, KVM cancels the pending
 *  completion when RIP changes: the engine runs from the instruction (it
 *  performs the read itself). If the run ends with RIP back at the same
 *  instruction (a loop stopped at its head), KVM would complete the read
 *  with stale data: the adapter performs the read for real and hands KVM
 *  the genuine value, as if the guest had executed it once more.
 *
 *  Any pending exit KVM does not cancel (and OUT / MMIO write with RIP at
 *  the instruction): the adapter performs the access through the VMM's
 *  callback, completes it with one KVM_RUN under immediate_exit (about one
 *  exit's cost here), and the engine runs from after it.
 *
 *  OUT / MMIO write with RIP already past: the adapter performs the
 *  access, and the engine runs from after it.
 *
 * State is read from and written to kvm_run's sync regs only.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#include "../adapter.h"
#include "kvm_int.h"

/*
 * Sites where running ahead buys nothing. Every exit offered costs the
 * adapter something before the engine can run: reads that changing RIP
 * does not cancel need one extra KVM_RUN (immediate_exit) to complete,
 * about 2-5 us here, more at CPL 3; stores and OUTs reported with RIP
 * past them need a backward decode to find the instruction. Where the
 * engine, once it has decided what to do at a site, keeps saving no exit
 * (SKIP_MISSES runs in a row), the site (exit RIP as reported, and CR3) is
 * declined at once, so the VMM handles it as it would without libcluster;
 * every SKIP_RETRY-th exit there is offered again in case the code or what
 * the engine learned has changed, and a run that saves an exit clears the
 * site. Direct-mapped; a collision only costs a retry.
 */
#define SKIP_SLOTS 64
#define SKIP_RETRY 64
#define SKIP_MISSES 2

typedef struct skip_slot {
    uint64_t rip, cr3;
    uint32_t hits;
    uint8_t  misses;                /* decided runs in a row saving none */
    uint8_t  used;
    uint8_t  anchor_len;            /* exits reported past the instruction:
                                     * its length, once found (0: not yet) */
} skip_slot;

struct lc_kvm_vcpu {
    lc_vcpu *vcpu;
    int fd;
    struct kvm_run *run;
    lc_kvm_caps caps;
    lc_kvm_stats stats;         /* written by the vCPU thread only */
    skip_slot skip[SKIP_SLOTS];
};

static skip_slot *skip_find(lc_kvm_vcpu *kv, uint64_t rip, uint64_t cr3)
{
    uint64_t h = (rip ^ (cr3 >> 12)) * 0x9e3779b97f4a7c15ull;
    return &kv->skip[h >> 58];      /* 64 slots: the top 6 bits */
}


/* ---- the adapter ------------------------------------------------------ */

lc_status lc_kvm_vcpu_attach(lc_vcpu *vcpu, int vcpu_fd, struct kvm_run *run,
                             const lc_kvm_caps *caps, lc_kvm_vcpu **out)
{
    lc_kvm_vcpu *kv;

    if (!out)
        return LC_ERR_INVAL;
    *out = NULL;
    if (!vcpu || vcpu_fd < 0 || !run || !caps)
        return LC_ERR_INVAL;
    if (!caps->sync_regs)
        return LC_ERR_UNSUPPORTED;
    kv = calloc(1, sizeof(*kv));
    if (!kv)
        return LC_ERR_NOMEM;
    kv->vcpu = vcpu;
    kv->fd = vcpu_fd;
    kv->run = run;
    kv->caps = *caps;
    run->kvm_valid_regs |= LCK_SYNC_RS;
    *out = kv;
    return LC_OK;
}
void lc_kvm_vcpu_detach(lc_kvm_vcpu *kv)
{
    free(kv);
}
/* Perform the exiting access `x` through the VMM's own callbacks (the
 * engine's adapter.h). For reads the value is stored where KVM's
 * completion will take it. */
static int perform(lc_kvm_vcpu *kv, const lc_exit *x)
{
    struct kvm_run *run = kv->run;
    int io = x->kind == LC_EXIT_IO;
    uint8_t *data = io ? lck_io_data(run) : run->mmio.data;
    unsigned n = io ? x->u.io.size : x->u.mmio.len;
    int write = io ? x->u.io.is_out : x->u.mmio.is_write;
    uint64_t v = 0;

    if (write)
        memcpy(&v, data, n);
    if (lci_adapter_perform(kv->vcpu, x, &v) < 0)
        return -1;
    if (!write)
        memcpy(data, &v, n);
    return 0;
}

/* Let KVM complete the pending exit now, without running the guest.
 * 0: done (-EINTR, the expected answer: the completion has been applied
 * and the sync regs describe the state after it); 1: KVM stopped at
 * another exit first, now in kvm_run (the access came in pieces: an MMIO
 * read across a page boundary, a string instruction), which the VMM must
 * answer; -1: the ioctl failed. */
static int complete_now(lc_kvm_vcpu *kv)
{
    struct kvm_run *run = kv->run;
    int r;

    run->immediate_exit = 1;
    r = ioctl(kv->fd, KVM_RUN, 0);
    run->immediate_exit = 0;
    if (r == 0)
        return 1;
    if (errno != EINTR)
        return -1;
    return 0;
}

/* One exit on its way through the adapter. */
typedef struct kexit {
    lc_exit x;
    int is_read;       /* IN or MMIO read */
    int rip_past;      /* KVM reports RIP already past it (probe) */
    int cancels;       /* moving RIP cancels the pending completion */
    int done;          /* the adapter performed the access itself */
    int mine;          /* the skip slot belongs to this site */
    skip_slot *skip;
    uint64_t site, cr3;
} kexit;

/* Describe the exit in `run`; 0 if the adapter does not take it. */
static int describe(lc_kvm_vcpu *kv, kexit *k)
{
    struct kvm_run *run = kv->run;
    const lc_kvm_caps *c = &kv->caps;

    memset(k, 0, sizeof(*k));
    if (run->exit_reason == KVM_EXIT_IO &&
        (run->io.count != 1 ||
         (run->io.size != 1 && run->io.size != 2 && run->io.size != 4))) {
        kv->stats.string_io_declined++;
        return 0;                         /* string I/O: the VMM's */
    }
    if (run->exit_reason == KVM_EXIT_MMIO && run->mmio.len != 1 &&
        run->mmio.len != 2 && run->mmio.len != 4 && run->mmio.len != 8)
        return 0;
    if (lc_kvm_exit_from_run(run, c, &k->x) != LC_OK)
        return 0;
    k->rip_past = k->x.rip == LC_EXIT_RIP_PAST;
    if (k->x.kind == LC_EXIT_IO) {
        k->is_read = !k->x.u.io.is_out;
        k->cancels = k->is_read ? c->cancel_in : c->cancel_out;
    } else {
        k->is_read = !k->x.u.mmio.is_write;
        k->cancels = k->is_read ? c->cancel_mmio_read : c->cancel_mmio_write;
    }
    /* a read completed later with RIP already moved: nothing safe to do */
    return !(k->rip_past && k->is_read);
}

/* The site's skip slot (claimed if free); 0 if the site is skipped. */
static int skip_claim(lc_kvm_vcpu *kv, kexit *k)
{
    k->site = kv->run->s.regs.regs.rip;
    k->cr3 = kv->run->s.regs.sregs.cr3;
    k->skip = skip_find(kv, k->site, k->cr3);
    k->mine = k->skip->used && k->skip->rip == k->site &&
              k->skip->cr3 == k->cr3;
    if (k->mine && k->skip->misses >= SKIP_MISSES &&
        ++k->skip->hits % SKIP_RETRY != 0) {
        kv->stats.exits_skipped++;
        return 0;                   /* nothing to gain here lately */
    }
    if (!k->skip->used) {
        *k->skip = (skip_slot){ k->site, k->cr3, 0, 0, 1, 0 };
        k->mine = 1;
    }
    return 1;
}

/* The state the engine runs from. A pending read KVM cancels when RIP
 * moves: as it is, RIP at the read. Anything else: perform the access
 * now and, if it is pending at the instruction, let KVM complete it (RIP
 * moves past it); the engine is told where the instruction was, so it
 * can anchor the translation on it. 1: run; 0: decline; -1: error. */
static int prepare(lc_kvm_vcpu *kv, kexit *k, lc_cpu_state *st)
{
    struct kvm_run *run = kv->run;
    uint64_t at_rip = run->s.regs.regs.rip;
    unsigned len;

    if (k->is_read && k->cancels) {
        k->x.rip = LC_EXIT_RIP_AT;
        return lc_kvm_state_from_run(run, st) == LC_OK;
    }
    if (perform(kv, &k->x) < 0)
        return 0;                         /* the VMM handles it */
    k->done = 1;
    if (!k->rip_past) {
        int c;

        kv->stats.completions++;
        if ((c = complete_now(kv)) < 0)
            return -1;
        if (c > 0)
            return 0;         /* the next piece's exit: the VMM's */
    }
    k->x.rip = LC_EXIT_RIP_PAST;
    if (lc_kvm_state_from_run(run, st) != LC_OK)
        return -1;
    if (!k->rip_past) {
        k->x.insn_rip = at_rip;
        return 1;
    }
    len = lci_adapter_insn_len(kv->vcpu, st, &k->x,
                               k->mine ? k->skip->anchor_len : 0);
    if (len && k->mine)
        k->skip->anchor_len = (uint8_t)len;
    k->x.insn_rip = len ? st->rip - len : 0;
    return 1;
}

/* Judge a site only once the engine has decided about it. */
static void judge(kexit *k, const lc_result *res)
{
    if (res->exits_saved) {
        if (k->mine)
            k->skip->misses = 0;
    } else if (!res->learning) {
        if (!k->mine)
            *k->skip = (skip_slot){ k->site, k->cr3, 0, 0, 1, 0 };
        if (k->skip->misses < 255)
            k->skip->misses++;
    }
}

static lc_status handle_exit(lc_kvm_vcpu *kv, lc_result *res)
{
    struct kvm_run *run;
    lc_cpu_state st;
    kexit k;
    uint64_t exit_rip;
    lc_status s;
    int r;

    if (res)
        memset(res, 0, sizeof(*res));
    if (!kv || !res)
        return LC_ERR_INVAL;
    run = kv->run;
    kv->stats.exits_offered++;
    res->disposition = LC_DECLINED;
    if ((run->kvm_valid_regs & LCK_SYNC_RS) != LCK_SYNC_RS ||
        !describe(kv, &k) || !skip_claim(kv, &k))
        return LC_OK;
    r = prepare(kv, &k, &st);
    if (r <= 0)
        return r < 0 ? LC_ERR_CALLBACK : LC_OK;

    exit_rip = st.rip;
    s = lc_vcpu_handle_exit(kv->vcpu, &st, &k.x, res);
    judge(&k, res);
    if (res->disposition != LC_HANDLED) {
        if (k.done) {
            /* The exiting access is done and RIP is past it (in the sync
             * regs): the exit is handled, with nothing more. */
            memset(res, 0, sizeof(*res));
            res->disposition = LC_HANDLED;
            res->insns = 1;
            res->exits_done = 1;
        }
        return s == LC_ERR_CALLBACK ? LC_OK : s;
    }
    /* the engine changes GPRs, RIP and RFLAGS (and says if more) */
    lc_kvm_state_to_run(run, &st, LC_DIRTY_GPRS | LC_DIRTY_RIP |
                                  LC_DIRTY_RFLAGS | res->dirty);
    if (k.x.rip == LC_EXIT_RIP_AT && st.rip == exit_rip) {
        /* Back at the exiting read: KVM will complete it on entry, so
         * give it the genuine value by doing the read for real, of the
         * port or address the instruction names now (the loop may have
         * moved DX or its pointer), which kvm_run then reports too. If
         * the VMM's callback refuses it, the read is the VMM's to answer,
         * as any declined exit, at the state the run left. */
        lc_exit now = k.x;

        if (lci_adapter_exit_now(kv->vcpu, &st, &now) == 0) {
            if (now.kind == LC_EXIT_IO)
                run->io.port = now.u.io.port;
            else
                run->mmio.phys_addr = now.u.mmio.gpa;
        }
        if (perform(kv, &now) < 0) {
            res->disposition = LC_DECLINED;
            return LC_OK;
        }
    }
    /* The state is written: an error of the engine's (a callback that
     * failed ended the run, its completed effects kept) still means
     * re-enter, as LC_HANDLED says (kvm.h). */
    return s;
}

lc_status lc_kvm_handle_exit(lc_kvm_vcpu *kv, lc_result *res)
{
    lc_status s = handle_exit(kv, res);

    if (s == LC_OK && res->disposition == LC_HANDLED)
        kv->stats.exits_handled++;
    return s;
}

lc_status lc_kvm_vcpu_get_stats(const lc_kvm_vcpu *kv, lc_kvm_stats *out)
{
    if (!kv || !out)
        return LC_ERR_INVAL;
    *out = kv->stats;
    return LC_OK;
}
