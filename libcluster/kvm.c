/* SPDX-License-Identifier: MIT */
/*
 * libcluster/kvm.c: the KVM adapter (include/cluster/kvm.h).
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
#include <fcntl.h>
#include <linux/kvm.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cluster/cluster.h>
#include <cluster/kvm.h>

#include "../decoder/insn.h"
#include "../runtime/rt.h"
#include "engine_int.h"

#define SYNC_RS (KVM_SYNC_X86_REGS | KVM_SYNC_X86_SREGS)

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

/* ---- state conversion ---------------------------------------------------- */

static void seg_in(lc_segment *d, const struct kvm_segment *s)
{
    memset(d, 0, sizeof(*d));
    d->base = s->base;
    d->limit = s->limit;
    d->selector = s->selector;
    d->type = s->type;
    d->present = s->present;
    d->dpl = s->dpl;
    d->db = s->db;
    d->s = s->s;
    d->l = s->l;
    d->g = s->g;
    d->avl = s->avl;
    d->unusable = s->unusable;
}

static void state_in(lc_cpu_state *st, const struct kvm_sync_regs *sr)
{
    const struct kvm_regs *r = &sr->regs;
    const struct kvm_sregs *s = &sr->sregs;

    memset(st, 0, sizeof(*st));
    st->gpr[LC_RAX] = r->rax; st->gpr[LC_RCX] = r->rcx;
    st->gpr[LC_RDX] = r->rdx; st->gpr[LC_RBX] = r->rbx;
    st->gpr[LC_RSP] = r->rsp; st->gpr[LC_RBP] = r->rbp;
    st->gpr[LC_RSI] = r->rsi; st->gpr[LC_RDI] = r->rdi;
    st->gpr[LC_R8] = r->r8;   st->gpr[LC_R9] = r->r9;
    st->gpr[LC_R10] = r->r10; st->gpr[LC_R11] = r->r11;
    st->gpr[LC_R12] = r->r12; st->gpr[LC_R13] = r->r13;
    st->gpr[LC_R14] = r->r14; st->gpr[LC_R15] = r->r15;
    st->rip = r->rip;
    st->rflags = r->rflags;
    seg_in(&st->seg[LC_ES], &s->es); seg_in(&st->seg[LC_CS], &s->cs);
    seg_in(&st->seg[LC_SS], &s->ss); seg_in(&st->seg[LC_DS], &s->ds);
    seg_in(&st->seg[LC_FS], &s->fs); seg_in(&st->seg[LC_GS], &s->gs);
    seg_in(&st->ldtr, &s->ldt);
    seg_in(&st->tr, &s->tr);
    st->gdtr.base = s->gdt.base; st->gdtr.limit = s->gdt.limit;
    st->idtr.base = s->idt.base; st->idtr.limit = s->idt.limit;
    st->cr0 = s->cr0; st->cr2 = s->cr2; st->cr3 = s->cr3;
    st->cr4 = s->cr4; st->cr8 = s->cr8; st->efer = s->efer;
}

/* The engine changes only GPRs, RIP and RFLAGS. */
static void regs_out(struct kvm_run *run, const lc_cpu_state *st)
{
    struct kvm_regs *r = &run->s.regs.regs;

    r->rax = st->gpr[LC_RAX]; r->rcx = st->gpr[LC_RCX];
    r->rdx = st->gpr[LC_RDX]; r->rbx = st->gpr[LC_RBX];
    r->rsp = st->gpr[LC_RSP]; r->rbp = st->gpr[LC_RBP];
    r->rsi = st->gpr[LC_RSI]; r->rdi = st->gpr[LC_RDI];
    r->r8 = st->gpr[LC_R8];   r->r9 = st->gpr[LC_R9];
    r->r10 = st->gpr[LC_R10]; r->r11 = st->gpr[LC_R11];
    r->r12 = st->gpr[LC_R12]; r->r13 = st->gpr[LC_R13];
    r->r14 = st->gpr[LC_R14]; r->r15 = st->gpr[LC_R15];
    r->rip = st->rip;
    r->rflags = st->rflags;
    run->kvm_dirty_regs |= KVM_SYNC_X86_REGS;
}

/* ---- the probe ------------------------------------------------------------ */

/* Real-mode probe guest at 0x1000; DS = 0x1000 puts DS:0 at 0x10000, past
 * the 64 KiB of RAM: MMIO. The landing pad at 0x1020 reports AL on port
 * 0x81, so a cancelled completion (AL unchanged) can be told from an
 * applied one. */
static const uint8_t probe_code[] = {
    0xba, 0x80, 0x00,           /* 1000: mov dx, 0x80 */
    0xec,                       /* 1003: in al, dx */
    0xee,                       /* 1004: out dx, al */
    0x8a, 0x06, 0x00, 0x00,     /* 1005: mov al, [0] (MMIO read) */
    0x88, 0x06, 0x00, 0x00,     /* 1009: mov [0], al (MMIO write) */
    0xf4,                       /* 100d: hlt */
};
static const uint8_t probe_landing[] = { 0xe6, 0x81, 0xf4 };  /* 1020 */

typedef struct probe_vm {
    int kvm, vm, vcpu;
    struct kvm_run *run;
    size_t run_size;
    uint8_t *mem;
} probe_vm;

static void probe_close(probe_vm *p)
{
    if (p->run && p->run != MAP_FAILED)
        munmap(p->run, p->run_size);
    if (p->mem && p->mem != MAP_FAILED)
        munmap(p->mem, 0x10000);
    if (p->vcpu >= 0) close(p->vcpu);
    if (p->vm >= 0) close(p->vm);
    if (p->kvm >= 0) close(p->kvm);
}

static lc_status probe_open(probe_vm *p)
{
    struct kvm_userspace_memory_region region;
    int mmap_size;

    memset(p, 0, sizeof(*p));
    p->kvm = p->vm = p->vcpu = -1;
    p->kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
    if (p->kvm < 0)
        return LC_ERR_UNSUPPORTED;
    if (ioctl(p->kvm, KVM_GET_API_VERSION, 0) != 12)
        return LC_ERR_UNSUPPORTED;
    p->vm = ioctl(p->kvm, KVM_CREATE_VM, 0);
    if (p->vm < 0)
        return LC_ERR_CALLBACK;
    p->mem = mmap(NULL, 0x10000, PROT_READ | PROT_WRITE,
                  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p->mem == MAP_FAILED)
        return LC_ERR_NOMEM;
    memcpy(p->mem + 0x1000, probe_code, sizeof probe_code);
    memcpy(p->mem + 0x1020, probe_landing, sizeof probe_landing);
    memset(&region, 0, sizeof region);
    region.guest_phys_addr = 0;
    region.memory_size = 0x10000;
    region.userspace_addr = (uint64_t)(uintptr_t)p->mem;
    if (ioctl(p->vm, KVM_SET_USER_MEMORY_REGION, &region) < 0)
        return LC_ERR_CALLBACK;
    p->vcpu = ioctl(p->vm, KVM_CREATE_VCPU, 0);
    mmap_size = ioctl(p->kvm, KVM_GET_VCPU_MMAP_SIZE, 0);
    if (p->vcpu < 0 || mmap_size <= 0)
        return LC_ERR_CALLBACK;
    p->run_size = (size_t)mmap_size;
    p->run = mmap(NULL, p->run_size, PROT_READ | PROT_WRITE, MAP_SHARED,
                  p->vcpu, 0);
    if (p->run == MAP_FAILED)
        return LC_ERR_CALLBACK;
    return LC_OK;
}

/* Start at `rip` in real mode with AL = 0x11 (setup ioctls are fine here:
 * the probe is not on any exit path). */
static lc_status probe_start(probe_vm *p, uint64_t rip)
{
    struct kvm_sregs sregs;
    struct kvm_regs regs;

    if (ioctl(p->vcpu, KVM_GET_SREGS, &sregs) < 0)
        return LC_ERR_CALLBACK;
    sregs.cs.base = 0;
    sregs.cs.selector = 0;
    sregs.ds.base = 0x10000;
    sregs.ds.selector = 0x1000;
    if (ioctl(p->vcpu, KVM_SET_SREGS, &sregs) < 0)
        return LC_ERR_CALLBACK;
    memset(&regs, 0, sizeof regs);
    regs.rip = rip;
    regs.rflags = 2;
    regs.rax = 0x11;
    regs.rdx = 0x80;
    if (ioctl(p->vcpu, KVM_SET_REGS, &regs) < 0)
        return LC_ERR_CALLBACK;
    p->run->kvm_valid_regs = SYNC_RS;
    p->run->kvm_dirty_regs = 0;
    return LC_OK;
}

static int probe_run(probe_vm *p)
{
    return ioctl(p->vcpu, KVM_RUN, 0) < 0 ? -1 : (int)p->run->exit_reason;
}

static uint8_t *io_data(struct kvm_run *run)
{
    return (uint8_t *)run + run->io.data_offset;
}

/* At a pending exit, feed 0x5a as its data, move RIP to the landing pad
 * and see what AL is when it reports: 0x11 means the completion was
 * cancelled; anything else (or another exit) means it was not. */
static int probe_cancels(probe_vm *p, int mmio)
{
    int reason;

    if (mmio)
        p->run->mmio.data[0] = 0x5a;
    else
        io_data(p->run)[0] = 0x5a;
    p->run->s.regs.regs.rip = 0x1020;
    p->run->s.regs.regs.rax = 0x11;
    p->run->kvm_dirty_regs = KVM_SYNC_X86_REGS;
    reason = probe_run(p);
    return reason == KVM_EXIT_IO && p->run->io.port == 0x81 &&
           p->run->io.direction == KVM_EXIT_IO_OUT &&
           io_data(p->run)[0] == 0x11;
}

lc_status lc_kvm_probe(lc_kvm_caps *caps)
{
    probe_vm p;
    lc_status st;
    int r;

    if (!caps)
        return LC_ERR_INVAL;
    memset(caps, 0, sizeof(*caps));
    st = probe_open(&p);
    if (st != LC_OK)
        goto out;
    r = ioctl(p.kvm, KVM_CHECK_EXTENSION, KVM_CAP_SYNC_REGS);
    caps->sync_regs = r > 0 && (r & SYNC_RS) == SYNC_RS;
    if (!caps->sync_regs) {
        st = LC_ERR_UNSUPPORTED;
        goto out;
    }

    /* Where RIP is at each kind of exit (run straight through). */
    st = LC_ERR_CALLBACK;
    if (probe_start(&p, 0x1000) != LC_OK ||
        probe_run(&p) != KVM_EXIT_IO || p.run->io.direction != KVM_EXIT_IO_IN)
        goto out;
    caps->in_rip_past = p.run->s.regs.regs.rip == 0x1004;
    io_data(p.run)[0] = 0x42;
    if (probe_run(&p) != KVM_EXIT_IO || p.run->io.direction != KVM_EXIT_IO_OUT)
        goto out;
    caps->out_rip_past = p.run->s.regs.regs.rip == 0x1005;
    if (probe_run(&p) != KVM_EXIT_MMIO || p.run->mmio.is_write)
        goto out;
    caps->mmio_read_rip_past = p.run->s.regs.regs.rip == 0x1009;
    p.run->mmio.data[0] = 0x42;
    if (probe_run(&p) != KVM_EXIT_MMIO || !p.run->mmio.is_write)
        goto out;
    caps->mmio_write_rip_past = p.run->s.regs.regs.rip == 0x100d;

    /* Does moving RIP cancel each pending completion? */
    if (probe_start(&p, 0x1003) != LC_OK || probe_run(&p) != KVM_EXIT_IO)
        goto out;
    caps->cancel_in = (uint8_t)probe_cancels(&p, 0);
    if (probe_start(&p, 0x1004) != LC_OK || probe_run(&p) != KVM_EXIT_IO)
        goto out;
    caps->cancel_out = (uint8_t)probe_cancels(&p, 0);
    if (probe_start(&p, 0x1005) != LC_OK || probe_run(&p) != KVM_EXIT_MMIO)
        goto out;
    caps->cancel_mmio_read = (uint8_t)probe_cancels(&p, 1);
    if (probe_start(&p, 0x1009) != LC_OK || probe_run(&p) != KVM_EXIT_MMIO)
        goto out;
    caps->cancel_mmio_write = (uint8_t)probe_cancels(&p, 1);
    st = LC_OK;
out:
    probe_close(&p);
    return st;
}

const char *lc_kvm_caps_describe(const lc_kvm_caps *c, char *buf,
                                 unsigned size)
{
    if (!buf || size == 0)
        return "";
    if (!c) {
        snprintf(buf, size, "(no probe)");
        return buf;
    }
    snprintf(buf, size,
             "sync regs %s; RIP at exit: IN %s, OUT %s, MMIO read %s, MMIO "
             "write %s; moving RIP cancels: IN %s, OUT %s, MMIO read %s, "
             "MMIO write %s",
             c->sync_regs ? "yes" : "no",
             c->in_rip_past ? "past" : "at", c->out_rip_past ? "past" : "at",
             c->mmio_read_rip_past ? "past" : "at",
             c->mmio_write_rip_past ? "past" : "at",
             c->cancel_in ? "yes" : "no", c->cancel_out ? "yes" : "no",
             c->cancel_mmio_read ? "yes" : "no",
             c->cancel_mmio_write ? "yes" : "no");
    return buf;
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
    run->kvm_valid_regs |= SYNC_RS;
    *out = kv;
    return LC_OK;
}

void lc_kvm_vcpu_detach(lc_kvm_vcpu *kv)
{
    free(kv);
}

/* Perform the exiting access through the VMM's own callbacks. For reads
 * the value is stored where KVM's completion will take it. */
static int perform(lc_kvm_vcpu *kv)
{
    struct kvm_run *run = kv->run;
    const lc_vm_ops *ops = lci_vcpu_ops(kv->vcpu);
    void *opaque = lci_vcpu_opaque(kv->vcpu);
    lc_cb_result r;

    if (run->exit_reason == KVM_EXIT_IO) {
        uint32_t v = 0;
        if (!ops->pio)
            return -1;
        if (run->io.direction == KVM_EXIT_IO_OUT)
            memcpy(&v, io_data(run), run->io.size);
        r = ops->pio(opaque, run->io.port, run->io.size,
                     run->io.direction == KVM_EXIT_IO_OUT, &v);
        if (r != LC_CB_OK)
            return -1;
        if (run->io.direction == KVM_EXIT_IO_IN)
            memcpy(io_data(run), &v, run->io.size);
        return 0;
    }
    {
        uint64_t v = 0;
        if (!ops->mmio)
            return -1;
        if (run->mmio.is_write)
            memcpy(&v, run->mmio.data, run->mmio.len);
        r = ops->mmio(opaque, run->mmio.phys_addr, (uint8_t)run->mmio.len,
                      run->mmio.is_write, &v);
        if (r != LC_CB_OK)
            return -1;
        if (!run->mmio.is_write)
            memcpy(run->mmio.data, &v, run->mmio.len);
        return 0;
    }
}

/* Let KVM complete the pending exit now, without running the guest. */
static int complete_now(lc_kvm_vcpu *kv)
{
    struct kvm_run *run = kv->run;
    int r;

    run->immediate_exit = 1;
    r = ioctl(kv->fd, KVM_RUN, 0);
    run->immediate_exit = 0;
    /* -EINTR is the expected answer; the completion has been applied and
     * the sync regs describe the state after it. */
    if (r < 0 && errno != EINTR)
        return -1;
    return 0;
}

/*
 * With RIP already past the exiting instruction (KVM here completes OUT
 * and MMIO writes before exiting), where did it start? Decoding backwards
 * is ambiguous, so a candidate of k bytes ending at RIP is accepted only
 * if it decodes to exactly those bytes and is what KVM reported:
 *  - an OUT of the reported port and size;
 *  - a plain MOV store of the reported width (which changes no register
 *    its address uses, unlike PUSH, string or exchange forms) whose
 *    memory operand, computed with the registers as they are now through
 *    the guest's segmentation and page tables, is the very guest-physical
 *    address KVM reported (lcr_mem_gpa).
 * The shortest candidate is taken: a longer one differs only by bytes in
 * front that leave the instruction the same (a redundant prefix, or the
 * tail of the previous instruction read as one), and the anchor only
 * names the translation and the target a loop must branch to to stay
 * inside it (a branch to the true start just leaves the cluster). The
 * length found is kept in the site's slot, so later exits there cost one
 * decode to confirm. No candidate: 0 (no anchor: the engine starts at
 * RIP, still correct, just unanchored).
 */
static int is_exiting_insn(lcr_vcpu *v, const struct kvm_run *run,
                           const uint8_t *bytes, unsigned k, uint64_t at)
{
    lcd_insn d;
    uint64_t gpa;

    if (lcd_decode(v->mode, bytes, k, &d) != LC_OK || d.info.length != k)
        return 0;
    if (run->exit_reason == KVM_EXIT_IO) {
        const lcd_opnd *port = &d.opnd[0], *data = &d.opnd[1];
        return d.info.op == LC_OP_OUT && d.nopnds >= 2 &&
               data->bytes == run->io.size &&
               (port->kind == LCD_OPND_IMM
                    ? (uint16_t)port->imm
                    : (uint16_t)v->st->gpr[LC_RDX]) == run->io.port;
    }
    return d.info.exit_class == LC_CLASS_WEAK && d.info.op == LC_OP_MOV &&
           d.mem.present && d.mem.write && !d.mem.read &&
           d.mem.bytes == run->mmio.len &&
           lcr_mem_gpa(v, &d, at, &gpa) == 0 && gpa == run->mmio.phys_addr;
}

static uint64_t exiting_insn_start(lc_kvm_vcpu *kv, lc_cpu_state *st,
                                   skip_slot *slot, int mine)
{
    /* an OUT is 1 to 4 bytes (EE/EF, E6/E7 ib, with 66h or REX) */
    unsigned max = kv->run->exit_reason == KVM_EXIT_IO ? 4 : LC_INSN_MAX_LEN;
    uint8_t buf[LC_INSN_MAX_LEN];
    uint64_t gfn[2];
    unsigned ngfn;
    size_t got;
    lcr_vcpu v;

    if (max > st->rip)
        max = (unsigned)st->rip;
    memset(&v, 0, sizeof v);
    lcr_begin(&v, st, lci_vcpu_ops(kv->vcpu), lci_vcpu_opaque(kv->vcpu));
    /* one fetch of the bytes before RIP; if the page before this one
     * cannot be fetched, what lies in this page */
    got = lcr_fetch_at(&v, st->rip - max, buf, max, gfn, &ngfn);
    if (got < max) {
        max = (unsigned)(st->rip & 0xfff) < max ? (unsigned)(st->rip & 0xfff)
                                                : max;
        got = max ? lcr_fetch_at(&v, st->rip - max, buf, max, gfn, &ngfn) : 0;
        if (got < max)
            return 0;
    }
    if (mine && slot->anchor_len && slot->anchor_len <= max &&
        is_exiting_insn(&v, kv->run, buf + max - slot->anchor_len,
                        slot->anchor_len, st->rip - slot->anchor_len))
        return st->rip - slot->anchor_len;
    for (unsigned k = 1; k <= max; k++) {
        if (is_exiting_insn(&v, kv->run, buf + max - k, k, st->rip - k)) {
            if (mine)
                slot->anchor_len = (uint8_t)k;
            return st->rip - k;     /* the shortest */
        }
    }
    return 0;
}

static lc_status handle_exit(lc_kvm_vcpu *kv, lc_result *res)
{
    struct kvm_run *run;
    lc_cpu_state st;
    lc_exit x;
    int is_read, rip_past, cancels, mine, done_by_adapter = 0;
    skip_slot *skip;
    uint64_t site;
    uint64_t exit_rip;
    lc_status s;

    if (res)
        memset(res, 0, sizeof(*res));
    if (!kv || !res)
        return LC_ERR_INVAL;
    run = kv->run;
    kv->stats.exits_offered++;
    res->disposition = LC_DECLINED;
    if ((run->kvm_valid_regs & SYNC_RS) != SYNC_RS)
        return LC_OK;

    memset(&x, 0, sizeof x);
    if (run->exit_reason == KVM_EXIT_IO) {
        if (run->io.count != 1 ||
            (run->io.size != 1 && run->io.size != 2 && run->io.size != 4)) {
            kv->stats.string_io_declined++;
            return LC_OK;                 /* string I/O: the VMM's */
        }
        x.kind = LC_EXIT_IO;
        x.u.io.port = run->io.port;
        x.u.io.size = run->io.size;
        x.u.io.is_out = run->io.direction == KVM_EXIT_IO_OUT;
        if (x.u.io.is_out)
            memcpy(&x.u.io.value, io_data(run), run->io.size);
        is_read = !x.u.io.is_out;
        rip_past = is_read ? kv->caps.in_rip_past : kv->caps.out_rip_past;
        cancels = is_read ? kv->caps.cancel_in : kv->caps.cancel_out;
    } else if (run->exit_reason == KVM_EXIT_MMIO) {
        if (run->mmio.len != 1 && run->mmio.len != 2 && run->mmio.len != 4 &&
            run->mmio.len != 8)
            return LC_OK;
        x.kind = LC_EXIT_MMIO;
        x.u.mmio.gpa = run->mmio.phys_addr;
        x.u.mmio.len = (uint8_t)run->mmio.len;
        x.u.mmio.is_write = run->mmio.is_write;
        is_read = !run->mmio.is_write;
        rip_past = is_read ? kv->caps.mmio_read_rip_past
                           : kv->caps.mmio_write_rip_past;
        cancels = is_read ? kv->caps.cancel_mmio_read
                          : kv->caps.cancel_mmio_write;
    } else {
        return LC_OK;
    }

    if (rip_past && is_read)
        return LC_OK;   /* a read completed later with RIP already moved:
                         * nothing safe to do here */
    site = run->s.regs.regs.rip;
    skip = skip_find(kv, site, run->s.regs.sregs.cr3);
    mine = skip->used && skip->rip == site &&
           skip->cr3 == run->s.regs.sregs.cr3;
    if (mine && skip->misses >= SKIP_MISSES &&
        ++skip->hits % SKIP_RETRY != 0) {
        kv->stats.exits_skipped++;
        return LC_OK;               /* nothing to gain here lately */
    }
    if (!skip->used) {              /* claim a free slot for this site */
        *skip = (skip_slot){ site, run->s.regs.sregs.cr3, 0, 0, 1, 0 };
        mine = 1;
    }
    if (!is_read || !cancels) {
        /* Perform the exiting access now; for anything pending at the
         * instruction, let KVM complete it (RIP moves past it). The
         * engine is told where the instruction was, so it can anchor the
         * translation on it. */
        uint64_t at_rip = run->s.regs.regs.rip;
        if (perform(kv) < 0)
            return LC_OK;                 /* the VMM handles it */
        done_by_adapter = 1;
        if (!rip_past) {
            kv->stats.completions++;
            if (complete_now(kv) < 0)
                return LC_ERR_CALLBACK;
        }
        x.rip = LC_EXIT_RIP_PAST;
        state_in(&st, &run->s.regs);
        if (!rip_past)
            x.insn_rip = at_rip;
        else
            x.insn_rip = exiting_insn_start(kv, &st, skip, mine);
    } else {
        x.rip = LC_EXIT_RIP_AT;
        state_in(&st, &run->s.regs);
    }

    exit_rip = st.rip;
    s = lc_vcpu_handle_exit(kv->vcpu, &st, &x, res);
    {
        /* judge a site only once the engine has decided about it */
        if (res->exits_saved) {
            if (mine)
                skip->misses = 0;
        } else if (!res->learning) {
            if (!mine)
                *skip = (skip_slot){ site, run->s.regs.sregs.cr3, 0, 0, 1, 0 };
            if (skip->misses < 255)
                skip->misses++;
        }
    }
    if (res->disposition != LC_HANDLED) {
        if (done_by_adapter) {
            /* The exiting access is done and RIP is past it (in the sync
             * regs): the exit is handled, with nothing more. */
            memset(res, 0, sizeof(*res));
            res->disposition = LC_HANDLED;
            res->insns = 1;
            res->exits_done = 1;
        }
        return s == LC_ERR_CALLBACK ? LC_OK : s;
    }
    regs_out(run, &st);
    if (x.rip == LC_EXIT_RIP_AT && st.rip == exit_rip) {
        /* Back at the exiting read: KVM will complete it on entry, so
         * give it the genuine value by doing the read for real. */
        if (perform(kv) < 0)
            return LC_ERR_CALLBACK;
    }
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
