/* SPDX-License-Identifier: MIT */
/*
 * The phases of a firmware network boot, for --stats: exits, exits the
 * engine handled, latch writes and NIC polls in each of
 *
 *   post     from the reset vector (SeaBIOS's power-on self test)
 *   optrom   from fw_cfg's selection of the NIC's option ROM (SeaBIOS
 *            loads and initialises it)
 *   ipxe     from the first NIC register access (iPXE's driver probes)
 *   dhcp     from the first DHCP datagram the guest sends (UDP port 67)
 *   tftp     from the first TFTP request (UDP port 69)
 *   guest    from the first ARP request after that (our guest, booted by
 *            iPXE, looks for the peer; iPXE had it cached)
 *
 * Boundaries are taken from what the devices see, so they hold against
 * any DHCP/TFTP server (the built-in peer, dnsmasq over TAP). A "poll" is
 * one read of the register a driver polls (PCnet: RDP, where iPXE reads
 * CSR0; e1000: ICR), so exits per poll in the dhcp and tftp phases, where
 * iPXE mostly waits, is the cost of its idle loop. Each phase also has
 * the BIOS tick count's advance (0x46C, 18.2 a second), so its length by
 * the guest's clock stands next to its length by the host's: the in-kernel
 * PIT reinjects late ticks (docs/platform.md), and a wait the guest times
 * (iPXE's time-outs) lasts as long as its ticks take, not its ms. (post's
 * is no length: the count starts at 0 and SeaBIOS sets it from the RTC.)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vmm.h"

static const char *const phase_name[FW_PHASES] = {
    "post", "optrom", "ipxe", "dhcp", "tftp", "guest"
};

static double mono(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

#define TICKS_PER_DAY   0x1800b0u       /* where SeaBIOS wraps FW_BDA_TICKS */

static void snap(vmm *vm, fw_phase_stats *s)
{
    s->exits = vm->stats.exits;
    s->engine = vm->stats.exits_handled_by_engine;
    s->latched = vm->stats.coalesced_drained;
    s->polls = vm->fw->polls;
    s->ticks = vm->ram_size >= FW_BDA_TICKS + 4 ?
        __atomic_load_n((const uint32_t *)(const void *)(vm->ram + FW_BDA_TICKS),
                        __ATOMIC_RELAXED) : 0;
    s->t = mono();
}

void vmm_fw_phase(vmm *vm, unsigned phase)
{
    vmm_fw *fw = vm->fw;

    if (!fw || phase >= FW_PHASES || phase <= fw->phase)
        return;
    if (!fw->phase_start[0].t)
        vmm_fw_phase_begin(vm);
    for (unsigned p = fw->phase + 1; p <= phase; p++)
        snap(vm, &fw->phase_start[p]);
    fw->phase = phase;
}

void vmm_fw_phase_begin(vmm *vm)
{
    if (vm->fw && !vm->fw->phase_start[0].t)
        snap(vm, &vm->fw->phase_start[0]);
}

/* A read of the NIC's registers at `off` in its BAR. */
void vmm_fw_nic_read(vmm *vm, uint64_t off)
{
    vmm_fw *fw = vm->fw;
    uint64_t poll_reg = vm->opt.nic == NIC_E1000 ? 0xc0 : 0x10;

    if (!fw)
        return;
    vmm_fw_phase(vm, FW_PHASE_IPXE);
    if (off == poll_reg)
        fw->polls++;
}

/* ---- watching the guest's frames: a backend in front of the real one -- */

typedef struct watch {
    net_backend be;
    net_backend *inner;
    vmm *vm;
} watch;

static void classify(vmm *vm, const uint8_t *f, size_t len)
{
    unsigned phase = vm->fw->phase;

    if (len >= 42 && f[12] == 0x08 && f[13] == 0x06 && f[21] == 1) {
        if (phase == FW_PHASE_TFTP)     /* ARP request after TFTP */
            vmm_fw_phase(vm, FW_PHASE_GUEST);
        return;
    }
    if (len >= 14 + 20 + 8 && f[12] == 0x08 && f[13] == 0x00 &&
        f[14 + 9] == 17) {
        size_t ihl = (size_t)(f[14] & 0xf) * 4;
        unsigned dport;
        if (ihl < 20 || 14 + ihl + 4 > len)
            return;
        dport = (unsigned)(f[14 + ihl + 2] << 8 | f[14 + ihl + 3]);
        if (dport == 67)
            vmm_fw_phase(vm, FW_PHASE_DHCP);
        else if (dport == 69)
            vmm_fw_phase(vm, FW_PHASE_TFTP);
    }
}

static int watch_tx(net_backend *be, const uint8_t *f, size_t len)
{
    watch *w = (watch *)be;
    int rc;

    if (f)
        classify(w->vm, f, len);
    rc = net_tx(w->inner, f, len);
    be->stats = w->inner->stats;
    return rc;
}

static size_t watch_rx(net_backend *be, uint8_t *buf, size_t cap)
{
    watch *w = (watch *)be;
    size_t n = net_rx(w->inner, buf, cap);
    be->stats = w->inner->stats;
    return n;
}

static int watch_poll_fd(net_backend *be)
{
    watch *w = (watch *)be;
    return net_poll_fd(w->inner);
}

static void watch_destroy(net_backend *be)
{
    watch *w = (watch *)be;
    net_destroy(w->inner);
    free(w);
}

static const net_backend_ops watch_ops = {
    .name = "watch", .tx = watch_tx, .rx = watch_rx,
    .poll_fd = watch_poll_fd, .destroy = watch_destroy,
};

net_backend *vmm_fw_watch_net(vmm *vm, net_backend *inner)
{
    watch *w;

    if (!vm->fw || !inner)
        return inner;
    w = calloc(1, sizeof *w);
    if (!w)
        return inner;           /* no phases, but a working NIC */
    w->be.ops = &watch_ops;
    w->be.stats = inner->stats;
    w->inner = inner;
    w->vm = vm;
    return &w->be;
}

/* The guest's ticks from a to b: across midnight's wrap, and none when the
 * count went back otherwise (a guest that sets its clock). */
static uint64_t ticks_between(uint32_t a, uint32_t b)
{
    if (b >= a)
        return b - a;
    return a < TICKS_PER_DAY && b < 0x10000 ? TICKS_PER_DAY - a + b : 0;
}

/* The "phases" section of --stats. */
void vmm_fw_phase_stats(vmm *vm, vmm_stat_fn put, void *ctx)
{
    vmm_fw *fw = vm->fw;
    fw_phase_stats end;
    /* the sink keeps the key pointers until it prints: static names */
    static char keys[FW_PHASES][6][24];
    unsigned k;

    if (!fw || !fw->phase_start[0].t)
        return;
    snap(vm, &end);
    for (unsigned p = 0; p <= fw->phase; p++) {
        const fw_phase_stats *a = &fw->phase_start[p];
        const fw_phase_stats *b = p < fw->phase ? &fw->phase_start[p + 1]
                                                : &end;
        k = 0;
#define PUT(what, v) do { \
        char *key = keys[p][k++]; \
        snprintf(key, sizeof keys[p][0], "%s_%s", phase_name[p], what); \
        put(ctx, "phases", key, v); } while (0)
        PUT("exits", b->exits - a->exits);
        PUT("engine", b->engine - a->engine);
        PUT("latched", b->latched - a->latched);
        PUT("polls", b->polls - a->polls);
        PUT("ms", (uint64_t)((b->t - a->t) * 1000));
        PUT("ticks", ticks_between(a->ticks, b->ticks));
#undef PUT
    }
}
