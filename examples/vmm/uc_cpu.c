/* SPDX-License-Identifier: MIT */
/*
 * The Unicorn back end: the same VM, devices and guests with Unicorn
 * Engine (QEMU's TCG) as the CPU, for machines without /dev/kvm and for
 * deterministic measurements (it counts the guest instructions between
 * exits, the input of the benchmarks' "ideal reduction").
 *
 * An exit here is what it is under KVM: every IN, OUT and MMIO access.
 * The access is performed in the hook (Unicorn needs the value at once),
 * and emulation stops before the next instruction, so the VMM sees the
 * exit with RIP past the instruction, exactly like KVM's OUT exits. The
 * engine then runs its cluster anchored on that instruction.
 *
 * Booting: Unicorn 2.0.1 reads and writes R8-R15 and the upper register
 * halves only in UC_MODE_64, and a 32-bit guest may enter long mode. So
 * the CPU is opened in UC_MODE_64 and a short trampoline (below) leaves
 * long mode the architectural way (compatibility mode, CR0.PG off, then
 * EFER.LME off) into the flat 32-bit protected mode Multiboot promises.
 * Unicorn 2.0.1 ignores the result of its page walks (tests/diff/
 * UNICORN_BUGS.md, item 1), so guests must identity-map what they use;
 * ours do.
 *
 * No interrupt controller: guests run in poll mode (irq=0). A guest that
 * unmasks an 8259 line is stopped with that reason rather than left
 * waiting for an interrupt that cannot come (pic_bus below).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vmm.h"

#ifndef HAVE_UNICORN
/* Built without Unicorn (meson option `unicorn` disabled or not found). */
bool vmm_unicorn_available(void)
{
    return false;
}

int vmm_unicorn_run(vmm *vm, const vmm_boot *boot)
{
    (void)boot;
    vmm_request_stop(vm, LCVMM_EXIT_ERROR,
                     "this lcvmm was built without Unicorn");
    return -1;
}
#else
#include <unicorn/unicorn.h>

#define TRAMP_PML4  0x1000u
#define TRAMP_PDPT  0x2000u
#define TRAMP_PD    0x3000u
#define TRAMP_CODE  0x4000u
#define TRAMP_STACK 0x5000u
#define MMIO_HOLE   0xC0000000ull
#define MMIO_HOLE_END 0x100000000ull
#define UC_UNTIL    0xfffffffffffff000ull

typedef struct pic_chip {
    struct uc_vm *u;
    unsigned idx;                   /* 0 master (0x20), 1 slave (0xA0) */
    uint8_t icw_left;               /* ICWs still expected on the data port */
    uint8_t mask;
} pic_chip;

typedef struct uc_vm {
    vmm_vcpu core;
    uc_engine *uc;
    uint64_t insns;                 /* since the guest's entry */
    bool at_entry;
    uint32_t entry;
    /* the exit taken in a hook, reported when emulation stops */
    bool exit_pending;
    bool tick_pending;
    uint64_t tick_at;               /* insns when the last tick stopped */
    lc_exit ex;
    uint64_t cur_rip;               /* the instruction being executed */
    uint64_t last_exit_insns;
    bool tick_enabled;              /* a device may wait (want_tick) */
    pic_chip pic[2];
} uc_vm;

bool vmm_unicorn_available(void)
{
    return true;
}

static void note_exit(uc_vm *u, const lc_exit *e)
{
    /* send combining's clock here (nic_dev.c nic_clock): guest instructions */
    __atomic_store_n(&u->core.vm->stats.insns, u->insns, __ATOMIC_RELAXED);
    if (u->exit_pending)            /* string I/O: one exit per insn */
        return;
    u->ex = *e;
    u->ex.rip = LC_EXIT_RIP_PAST;
    u->ex.insn_rip = u->cur_rip;
    u->exit_pending = true;
}

static void hk_code(uc_engine *uc, uint64_t addr, uint32_t size, void *user)
{
    uc_vm *u = user;
    (void)size;
    if (u->exit_pending || atomic_load_explicit(&u->core.vm->stop,
                                                memory_order_relaxed)) {
        uc_emu_stop(uc);            /* before this instruction */
        return;
    }
    if (!u->at_entry) {
        if (addr != u->entry)
            return;                 /* the boot trampoline */
        u->at_entry = true;
    }
    u->cur_rip = addr;
    if (u->tick_enabled && (u->insns + 1) % VMM_UC_TICK_INSNS == 0 &&
        u->tick_at != u->insns) {
        /* send combining's timer tick, before this instruction (which
         * the hook sees again, uncounted so far, when emulation resumes) */
        u->tick_at = u->insns;
        u->tick_pending = true;
        uc_emu_stop(uc);
        return;
    }
    u->insns++;
    if (u->core.vm->opt.insn_limit && u->insns > u->core.vm->opt.insn_limit) {
        vmm_request_stop(u->core.vm, LCVMM_EXIT_TIMEOUT,
                         "instruction limit (%llu) reached",
                         (unsigned long long)u->core.vm->opt.insn_limit);
        uc_emu_stop(uc);
    }
}

/*
 * The 8259s as far as the Unicorn back end needs them: enough of the
 * initialisation sequence (ICW1 on the command port, then ICW2, ICW3 and,
 * if ICW1 asked, ICW4 on the data port) to tell the interrupt mask (OCW1)
 * apart. Masking everything, as firmware and poll-mode guests do, is
 * fine; unmasking a line means the guest waits for interrupts that
 * cannot come here, and the VM stops with that reason.
 */

/* On the port bus at 0x20 and 0xA0 (two ports each), so clusters run by
 * the engine and exits reach the same model. */
static void pic_bus(void *opaque, uint64_t off, unsigned size, bool w,
                    uint64_t *v)
{
    pic_chip *p = opaque;
    (void)size;

    if (!w) {
        *v = off ? p->mask : 0;
        return;
    }
    if (!off) {                     /* command: ICW1 or an OCW2/3 */
        if (*v & 0x10)
            p->icw_left = (*v & 1) ? 3 : 2;
        return;
    }
    if (p->icw_left) {
        p->icw_left--;
        return;
    }
    p->mask = (uint8_t)*v;
    /* all masked, or only the cascade input (IRQ 2) open on the master */
    if (p->mask != 0xff && !(p->idx == 0 && p->mask == 0xfb))
        vmm_request_stop(p->u->core.vm, LCVMM_EXIT_ERROR,
                         "the guest unmasks 8259 "
                         "interrupts, but the Unicorn back end has no "
                         "interrupt controller: run the guest in poll mode "
                         "(irq=0)");
}

static uint32_t hk_in(uc_engine *uc, uint32_t port, int size, void *user)
{
    uc_vm *u = user;
    uint64_t v = 0;
    lc_exit e = { .kind = LC_EXIT_IO };
    (void)uc;
    e.u.io.port = (uint16_t)port;
    e.u.io.size = (uint8_t)size;
    e.u.io.count = 1;
    note_exit(u, &e);
    bus_access(&u->core.vm->pio, port, (unsigned)size, false, &v);
    return (uint32_t)v;
}

static void hk_out(uc_engine *uc, uint32_t port, int size, uint32_t value,
                   void *user)
{
    uc_vm *u = user;
    uint64_t v = value;
    lc_exit e = { .kind = LC_EXIT_IO };
    (void)uc;
    e.u.io.port = (uint16_t)port;
    e.u.io.size = (uint8_t)size;
    e.u.io.is_out = 1;
    e.u.io.count = 1;
    e.u.io.value = value;
    note_exit(u, &e);
    bus_access(&u->core.vm->pio, port, (unsigned)size, true, &v);
}

static uint64_t hk_mmio_read(uc_engine *uc, uint64_t off, unsigned size,
                             void *user)
{
    uc_vm *u = user;
    uint64_t v = 0;
    lc_exit e = { .kind = LC_EXIT_MMIO };
    (void)uc;
    e.u.mmio.gpa = MMIO_HOLE + off;
    e.u.mmio.len = (uint8_t)size;
    note_exit(u, &e);
    bus_access(&u->core.vm->mmio, MMIO_HOLE + off, size, false, &v);
    return v;
}

static void hk_mmio_write(uc_engine *uc, uint64_t off, unsigned size,
                          uint64_t value, void *user)
{
    uc_vm *u = user;
    lc_exit e = { .kind = LC_EXIT_MMIO };
    (void)uc;
    e.u.mmio.gpa = MMIO_HOLE + off;
    e.u.mmio.len = (uint8_t)size;
    e.u.mmio.is_write = 1;
    e.u.mmio.value = value;
    note_exit(u, &e);
    bus_access(&u->core.vm->mmio, MMIO_HOLE + off, size, true, &value);
}

/* ---- state for the engine ------------------------------------------------ */

static const int gpr_ids[LC_NR_GPRS] = {
    UC_X86_REG_RAX, UC_X86_REG_RCX, UC_X86_REG_RDX, UC_X86_REG_RBX,
    UC_X86_REG_RSP, UC_X86_REG_RBP, UC_X86_REG_RSI, UC_X86_REG_RDI,
    UC_X86_REG_R8, UC_X86_REG_R9, UC_X86_REG_R10, UC_X86_REG_R11,
    UC_X86_REG_R12, UC_X86_REG_R13, UC_X86_REG_R14, UC_X86_REG_R15,
};
static const int seg_ids[LC_NR_SREGS] = {
    UC_X86_REG_ES, UC_X86_REG_CS, UC_X86_REG_SS, UC_X86_REG_DS,
    UC_X86_REG_FS, UC_X86_REG_GS,
};

/*
 * Unicorn 2.0.1 exposes selectors but not the hidden descriptor caches,
 * so they are rebuilt from the GDT in guest memory (real mode: base =
 * selector << 4). This is exact as long as the guest does not rewrite a
 * loaded descriptor, which none of ours does; an unreadable descriptor
 * marks the segment unusable, and the engine then declines.
 */
static void seg_from_gdt(vmm *vm, const lc_cpu_state *st, uint16_t sel,
                         lc_segment *s)
{
    uint64_t d;
    uint8_t *p;

    memset(s, 0, sizeof *s);
    s->selector = sel;
    if (!(st->cr0 & LC_CR0_PE)) {
        s->base = (uint64_t)sel << 4;
        s->limit = 0xffff;
        s->type = 3;
        s->present = s->s = 1;
        return;
    }
    if ((sel & ~3u) == 0 || (sel & 4) ||
        (uint32_t)(sel | 7) > st->gdtr.limit ||
        !(p = vmm_gpa(vm, st->gdtr.base + (sel & ~7u), 8))) {
        s->unusable = 1;
        return;
    }
    memcpy(&d, p, 8);
    s->base = ((d >> 16) & 0xffffff) | ((d >> 32) & 0xff000000);
    s->limit = (uint32_t)((d & 0xffff) | ((d >> 32) & 0xf0000));
    s->type = (d >> 40) & 0xf;
    s->s = (d >> 44) & 1;
    s->dpl = (d >> 45) & 3;
    s->present = (d >> 47) & 1;
    s->avl = (d >> 52) & 1;
    s->l = (d >> 53) & 1;
    s->db = (d >> 54) & 1;
    s->g = (d >> 55) & 1;
    if (s->g)
        s->limit = (s->limit << 12) | 0xfff;
}

static int read_state(uc_vm *u, lc_cpu_state *st)
{
    uc_engine *uc = u->uc;
    uc_x86_mmr gdtr = { 0 };
    uc_x86_msr efer = { 0xc0000080u, 0 };
    uint64_t v;

    memset(st, 0, sizeof *st);
    for (int i = 0; i < LC_NR_GPRS; i++)
        if (uc_reg_read(uc, gpr_ids[i], &st->gpr[i]))
            return -1;
    if (uc_reg_read(uc, UC_X86_REG_RIP, &st->rip) ||
        uc_reg_read(uc, UC_X86_REG_RFLAGS, &st->rflags) ||
        uc_reg_read(uc, UC_X86_REG_CR0, &st->cr0) ||
        uc_reg_read(uc, UC_X86_REG_CR3, &st->cr3) ||
        uc_reg_read(uc, UC_X86_REG_CR4, &st->cr4) ||
        uc_reg_read(uc, UC_X86_REG_GDTR, &gdtr) ||
        uc_reg_read(uc, UC_X86_REG_MSR, &efer))
        return -1;
    st->efer = efer.value;
    st->gdtr.base = gdtr.base;
    st->gdtr.limit = (uint16_t)gdtr.limit;
    for (int s = 0; s < LC_NR_SREGS; s++) {
        v = 0;
        if (uc_reg_read(uc, seg_ids[s], &v))
            return -1;
        seg_from_gdt(u->core.vm, st, (uint16_t)v, &st->seg[s]);
    }
    if ((st->efer & LC_EFER_LMA) && st->seg[LC_CS].l) {
        uc_reg_read(uc, UC_X86_REG_FS_BASE, &st->seg[LC_FS].base);
        uc_reg_read(uc, UC_X86_REG_GS_BASE, &st->seg[LC_GS].base);
    }
    st->tr = (lc_segment){ .limit = 0xffff, .type = 0xb, .present = 1 };
    return 0;
}

static int write_state(uc_vm *u, const lc_cpu_state *st, uint32_t dirty)
{
    uc_engine *uc = u->uc;
    if (dirty & LC_DIRTY_GPRS)
        for (int i = 0; i < LC_NR_GPRS; i++)
            if (uc_reg_write(uc, gpr_ids[i], &st->gpr[i]))
                return -1;
    if ((dirty & LC_DIRTY_RFLAGS) &&
        uc_reg_write(uc, UC_X86_REG_RFLAGS, &st->rflags))
        return -1;
    if (dirty & LC_DIRTY_SREGS)
        return -1;                  /* not representable here; never set */
    return 0;
}

/* ---- boot ---------------------------------------------------------------- */

static int boot_trampoline(uc_vm *u, const vmm_boot *boot)
{
    vmm *vm = u->core.vm;
    uint64_t *pml4 = vmm_gpa(vm, TRAMP_PML4, 4096);
    uint64_t *pdpt = vmm_gpa(vm, TRAMP_PDPT, 4096);
    uint64_t *pd = vmm_gpa(vm, TRAMP_PD, 4096);
    uint8_t code[] = {
        /* 64-bit: far return into the 32-bit code segment 0x08 */
        0x6a, 0x08,                         /* push 0x08 */
        0x68, 0x10, 0x40, 0x00, 0x00,       /* push 0x4010 */
        0x48, 0xcb,                         /* retfq */
        0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90,
        /* 0x4010, compatibility mode: leave long mode */
        0x0f, 0x20, 0xc0,                   /* mov eax, cr0 */
        0x25, 0xff, 0xff, 0xff, 0x7f,       /* and eax, ~PG */
        0x0f, 0x22, 0xc0,                   /* mov cr0, eax */
        0xb9, 0x80, 0x00, 0x00, 0xc0,       /* mov ecx, IA32_EFER */
        0x0f, 0x32,                         /* rdmsr */
        0x25, 0xff, 0xfe, 0xff, 0xff,       /* and eax, ~LME */
        0x0f, 0x30,                         /* wrmsr */
        0x31, 0xc0,                         /* xor eax, eax */
        0x0f, 0x22, 0xe0,                   /* mov cr4, eax */
        0x66, 0xb8, 0x10, 0x00,             /* mov ax, 0x10 */
        0x8e, 0xd8, 0x8e, 0xc0, 0x8e, 0xd0, /* mov ds/es/ss, ax */
        0x8e, 0xe0, 0x8e, 0xe8,             /* mov fs/gs, ax */
        0xb8, 0x02, 0xb0, 0xad, 0x2b,       /* mov eax, 0x2badb002 */
        0xbb, 0, 0, 0, 0,                   /* mov ebx, mbi */
        0xb9, 0, 0, 0, 0,                   /* mov ecx, entry */
        0xff, 0xe1,                         /* jmp ecx */
    };
    size_t n = sizeof code;
    uint64_t cr0 = 0x80000011ull, cr4 = 0x20, cr3 = TRAMP_PML4,
             rip = TRAMP_CODE, rsp = TRAMP_STACK;
    uc_x86_mmr gdtr = { 0, boot->gdt, 3 * 8 - 1, 0 };

    if (!pml4 || !pdpt || !pd || !vmm_gpa(vm, TRAMP_CODE, 4096))
        return -1;
    memcpy(&code[n - 11], &boot->mbi, 4);    /* after 0xbb */
    memcpy(&code[n - 6], &boot->entry, 4);   /* after 0xb9 */
    memset(pml4, 0, 4096);
    memset(pdpt, 0, 4096);
    memset(pd, 0, 4096);
    pml4[0] = TRAMP_PDPT | 3;
    pdpt[0] = TRAMP_PD | 3;
    pd[0] = 0x83;                           /* 2 MiB, present, writable */
    pd[1] = 0x200000 | 0x83;
    memcpy(vmm_gpa(vm, TRAMP_CODE, n), code, n);
    if (uc_reg_write(u->uc, UC_X86_REG_CR3, &cr3) ||
        uc_reg_write(u->uc, UC_X86_REG_CR4, &cr4) ||
        uc_reg_write(u->uc, UC_X86_REG_CR0, &cr0) ||
        uc_reg_write(u->uc, UC_X86_REG_GDTR, &gdtr) ||
        uc_reg_write(u->uc, UC_X86_REG_RSP, &rsp) ||
        uc_reg_write(u->uc, UC_X86_REG_RIP, &rip))
        return -1;
    return 0;
}

/* ---- the run loop -------------------------------------------------------- */

#define UCK(x, what) do { uc_err e_ = (x); if (e_ != UC_ERR_OK) { \
    vmm_request_stop(vm, LCVMM_EXIT_ERROR, "unicorn: %s: %s", what, \
                     uc_strerror(e_)); \
    goto out; } } while (0)

int vmm_unicorn_run(vmm *vm, const vmm_boot *boot)
{
    uc_vm *u = calloc(1, sizeof *u);
    uc_hook h;
    int rc = -1;

    if (!u) {
        vmm_request_stop(vm, LCVMM_EXIT_ERROR, "out of memory");
        return -1;
    }
    if (vm->opt.vcpus > 1)
        fprintf(stderr, "lcvmm: the Unicorn back end runs one vCPU; "
                "ignoring -c %u\n", vm->opt.vcpus);
    if (vm->ram_size > MMIO_HOLE) {
        vmm_request_stop(vm, LCVMM_EXIT_ERROR,
                         "the Unicorn back end needs -m 3072 or less");
        free(u);
        return -1;
    }
    u->core.vm = vm;
    u->entry = boot->entry;
    u->tick_at = ~0ull;
    u->tick_enabled = vmm_devices_want_tick(vm);
    for (unsigned i = 0; i < 2; i++) {
        u->pic[i] = (pic_chip){ u, i, 0, 0xff };
        if (bus_register(&vm->pio, i ? LCVMM_PIC2_PORT : LCVMM_PIC1_PORT,
                         LCVMM_PIC_PORTS, pic_bus, &u->pic[i],
                         i ? "pic-slave" : "pic-master")) {
            vmm_request_stop(vm, LCVMM_EXIT_ERROR,
                             "cannot register the 8259 ports");
            free(u);
            return -1;
        }
    }
    vm->cpu = u;
    vm->irq = (vm_irq){ 0 };        /* lines are levels nobody delivers */
    UCK(uc_open(UC_ARCH_X86, UC_MODE_64, &u->uc), "uc_open");
    UCK(uc_mem_map_ptr(u->uc, 0, vm->ram_size, UC_PROT_ALL, vm->ram),
        "mapping guest RAM");
    UCK(uc_mmio_map(u->uc, MMIO_HOLE, MMIO_HOLE_END - MMIO_HOLE,
                    hk_mmio_read, u, hk_mmio_write, u), "mapping MMIO");
    UCK(uc_hook_add(u->uc, &h, UC_HOOK_INSN, (void *)hk_in, u, 1, 0,
                    UC_X86_INS_IN), "IN hook");
    UCK(uc_hook_add(u->uc, &h, UC_HOOK_INSN, (void *)hk_out, u, 1, 0,
                    UC_X86_INS_OUT), "OUT hook");
    UCK(uc_hook_add(u->uc, &h, UC_HOOK_CODE, (void *)hk_code, u, 1, 0),
        "code hook");
    if (boot_trampoline(u, boot))
        UCK(UC_ERR_EXCEPTION, "setting up the boot trampoline");
    vmm_engine_vcpus_made(vm);
    if (vm->engine &&
        lc_vcpu_create(vm->engine, 0, &u->core, &u->core.lc) != LC_OK) {
        vmm_request_stop(vm, LCVMM_EXIT_ERROR,
                         "libcluster: cannot create the vCPU context");
        goto out;
    }

    while (!atomic_load(&vm->stop)) {
        uint64_t rip;
        uc_err e;

        UCK(uc_reg_read(u->uc, UC_X86_REG_RIP, &rip), "reading RIP");
        vmm_exit_done(vm);          /* the previous exit is complete */
        e = uc_emu_start(u->uc, rip, UC_UNTIL, 0, 0);
        if (e != UC_ERR_OK) {
            lc_cpu_state st;
            if (read_state(u, &st) == 0)
                fprintf(stderr, "lcvmm: unicorn stopped at rip=%#llx "
                        "(cs=%#x)\n", (unsigned long long)st.rip,
                        st.seg[LC_CS].selector);
            vmm_request_stop(vm, LCVMM_EXIT_CRASH, "unicorn: guest fault: %s",
                             uc_strerror(e));
            break;
        }
        if (u->tick_pending) {
            u->tick_pending = false;
            __atomic_store_n(&vm->stats.insns, u->insns, __ATOMIC_RELAXED);
            /* as the KVM back end's I/O thread ticks (vm.c): what is held
             * goes, a received frame held in the chip is retried */
            pthread_mutex_lock(&vm->dev_lock);
            vmm_devices_tick(vm);
            vmm_io_update(vm);
            pthread_mutex_unlock(&vm->dev_lock);
        }
        if (!u->exit_pending)
            continue;               /* stopped for another reason */
        u->exit_pending = false;
        int64_t gap = (int64_t)(u->insns - u->last_exit_insns);
        const lc_result *done = NULL;
        lc_result res;
        u->last_exit_insns = u->insns;
        vmm_exit_begin(vm, u->ex.kind);
        bool offer = u->core.lc && !atomic_load(&vm->stop);
        uint64_t pc = VMM_PC_UNKNOWN;
        lc_cpu_state st;
        if (offer || vm->trace) {
            if (read_state(u, &st))
                UCK(UC_ERR_EXCEPTION, "reading the vCPU state");
            pc = vmm_trace_pc(st.seg[LC_CS].base, st.rip, st.efer,
                              st.seg[LC_CS].l);  /* past the instruction */
        }
        if (offer) {
            u->core.irq_epoch_seen = atomic_load(&vm->irq_epoch);
            lc_status s = lc_vcpu_handle_exit(u->core.lc, &st, &u->ex, &res);
            if (s == LC_OK && res.disposition == LC_HANDLED) {
                done = &res;
                /* with RIP past the exit, res.insns counts only what
                 * the engine ran after the instruction Unicorn did */
                u->insns += res.insns;
                if (write_state(u, &st, res.dirty) ||
                    uc_reg_write(u->uc, UC_X86_REG_RIP, &st.rip))
                    UCK(UC_ERR_EXCEPTION, "writing the vCPU state");
            }
        }
        vmm_exit_end(vm, &u->ex, gap, pc, done);
    }
    rc = 0;
out:
    vm->stats.insns = u->insns;
    vmm_engine_vcpus_gone(vm);
    lc_vcpu_destroy(u->core.lc);
    if (u->uc)
        uc_close(u->uc);
    vm->cpu = NULL;
    free(u);
    return rc;
}
#endif /* HAVE_UNICORN */
