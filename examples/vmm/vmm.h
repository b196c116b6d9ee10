/* SPDX-License-Identifier: MIT */
/*
 * lcvmm: the reference VMM built on libcluster.
 *
 * One struct vmm per VM: guest RAM, the port and MMIO buses, the devices,
 * the libcluster engine and the vCPU back end (KVM or Unicorn). The core
 * (this folder) knows the back ends, the buses and the device list
 * (device.h), never one device; the board (board.c, nic_dev.c) puts the
 * device models (devices/, which know only dev.h) on the buses; network
 * backends (backends/) know only net.h.
 */
#ifndef VMM_VMM_H
#define VMM_VMM_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <cluster/cluster.h>
#include <cluster/kvm.h>

#include "backends/net.h"
#include "bus.h"
#include "device.h"
#include "devices/dev.h"
#include "devices/nic.h"
#include "devices/platform.h"
#include "firmware.h"
#include "lcvmm/platform.h"
#include "kvm_stats.h"

#define VMM_MAX_VCPUS 8
/* Send combining's timer tick on Unicorn: every this many guest
 * instructions, so runs stay deterministic (KVM: 1 ms of wall clock). */
#define VMM_UC_TICK_INSNS (1u << 20)
/* ... and on KVM the I/O thread's tick: 1 ms of wall clock. */
#define SEND_COMBINE_TICK_NS 1000000L

typedef enum vmm_cpu_backend {
    VMM_CPU_AUTO = 0, VMM_CPU_KVM, VMM_CPU_UNICORN
} vmm_cpu_backend;

typedef enum vmm_stats_format {
    VMM_STATS_NONE = 0, VMM_STATS_TABLE, VMM_STATS_JSON
} vmm_stats_format;

/* --lost-ticks: what KVM's PIT does with a tick due while the last one is
 * not yet acknowledged (KVM_REINJECT_CONTROL; QEMU's lost_tick_policy) */
typedef enum {
    VMM_TICKS_AUTO,     /* discard where the probe finds ticks delivered
                         * late (kvm_quirks.c (c)), else delay */
    VMM_TICKS_DELAY,    /* count it and inject it later (KVM's default) */
    VMM_TICKS_DISCARD,  /* drop it */
} vmm_lost_ticks;

typedef struct vmm_options {
    const char *kernel;           /* multiboot image */
    const char *params;           /* guest command line */
    uint64_t ram_mib;             /* guest RAM, MiB */
    unsigned vcpus;
    nic_model nic;
    const char *net;              /* backend argument, "peer" default */
    vmm_cpu_backend cpu;
    bool cluster;                 /* libcluster on the exit path */
    uint32_t techniques;          /* LC_TECH_* */
    lc_cflow_method cflow;
    nic_options nic_opt;
    vmm_stats_format stats;
    const char *stats_file;       /* NULL: stderr */
    uint64_t insn_limit;          /* Unicorn: stop after this many (0: none) */
    double timeout_s;             /* wall-clock limit (0: none) */
    bool quiet;                   /* no banner */
    const char *trace_file;       /* --trace-file */
    double stats_interval_s;      /* --stats-interval (0: off) */
    const char *bios;             /* --bios: firmware image (firmware.c) */
    const char *rom;              /* --rom: the NIC's option ROM */
    const char *debugcon;         /* --debugcon: port 0x402 output */
    bool rom_bar;                 /* --rom-bar: ROM BAR instead of fw_cfg */
    bool no_fw_cfg_dma;           /* --no-fw-cfg-dma */
    bool reboot;                  /* --reboot: a guest reset reboots it */
    uint64_t max_reboots;         /* --max-reboots (0: no limit) */
    int64_t exit_cost_ns;         /* --exit-cost: -1 auto (measured at
                                   * start on KVM), else the value given */
    vmm_lost_ticks lost_ticks;    /* --lost-ticks: the in-kernel PIT's
                                   * policy for ticks the guest could not
                                   * take in time */
} vmm_options;

/* Counting one of them on a vCPU thread: --stats-interval reads them
 * while the guest runs (relaxed loads), and several vCPUs count into the
 * same ones. A relaxed add is one locked instruction, nothing beside an
 * exit. */
#define VMM_STAT_INC(field) __atomic_fetch_add(&(field), 1, __ATOMIC_RELAXED)

/* Counters of the VMM itself (the engine keeps its own, lc_stats). */
typedef struct vmm_stats {
    uint64_t exits;               /* returns from KVM_RUN / Unicorn stops */
    uint64_t exits_vcpu[VMM_MAX_VCPUS];   /* the same, per vCPU */
    uint64_t exits_io, exits_mmio, exits_hlt, exits_other, exits_intr;
    uint64_t exits_handled_by_engine;
    uint64_t coalesced_drained;   /* latch writes taken from the ring */
    uint64_t io_wakes;            /* I/O thread woken: a descriptor is back */
    uint64_t direct_maps;         /* KVM: device pages mapped as memory */
    uint64_t insns;               /* Unicorn: guest instructions */
    uint64_t quirk_irets;         /* IRETs completed for KVM (kvm_quirks.c) */
    uint64_t quirk_late_ticks;    /* late BIOS ticks: breakpoints armed */
    uint64_t quirk_bp_exits;      /* ... and hit */
    bool     ticks_discarded;     /* KVM's PIT drops late ticks (--lost-ticks) */
    uint64_t reboots;             /* --reboot: guest resets that rebooted */
    /* libcluster's tcache_bytes counts what live vCPU contexts hold: 0
     * once the back end destroyed them (the end of a run, each reboot).
     * What they held then, for the statistics (vmm_engine_vcpus_gone). */
    uint64_t tcache_end;
    bool     tcache_end_valid;
    lc_kvm_stats adapter;         /* KVM: the adapter's counters, summed */
    /* KVM: its own per-vCPU counters over the run, summed (kvm_stats.h) */
    uint64_t kvm[KVM_STAT_COUNT_];
    bool     kvm_stats;           /* the kernel has KVM_GET_STATS_FD */
    double   wall_s;
} vmm_stats;

typedef struct vmm vmm;

/* Per-vCPU state of the core, the opaque of libcluster's callbacks. */
typedef struct vmm_vcpu {
    vmm *vm;
    unsigned id;
    unsigned irq_epoch_seen;      /* vm->irq_epoch when the exit began */
    lc_vcpu *lc;
    /* The guest's TSC as the host's plus this offset (KVM's
     * KVM_VCPU_TSC_OFFSET, read when the vCPU was made): libcluster's
     * rdtsc callback. tsc_known false: RDTSC ends clusters. */
    bool tsc_known;
    uint64_t tsc_offset;
} vmm_vcpu;

struct vmm {
    vmm_options opt;
    uint8_t *ram;
    uint64_t ram_size;
    bus pio, mmio;
    pci_bus *pci;                 /* configuration space (the pci-cfg device) */
    struct vmm_fw *fw;            /* --bios: images and memory map, or NULL */
    /* The devices of the board, in init order (device.h). */
    vmm_device dev[VMM_MAX_DEVICES];
    unsigned ndev;
    pthread_mutex_t dev_lock;     /* serialises device models */
    /* Serialises configuration cycles (the 0xCF8 latch and the functions'
     * registers) against each other and against the NIC's decode check;
     * taken before dev_lock, never after it. */
    pthread_mutex_t pci_lock;
    /* Getting every vCPU out of KVM_RUN once the VM stops (any thread may
     * stop it): the back end's kick, or NULL; under kick_lock. */
    pthread_mutex_t kick_lock;
    void (*kick)(vmm *vm);
    /* Interrupts: the back end's line setter, and an epoch bumped when a
     * line goes high so clusters stop for the guest to take it
     * (vmm_irq_line gives devices a line that does both). */
    vm_irq irq;                   /* the back end's line setter */
    vm_dma dma;                   /* guest memory as devices reach it */
    atomic_uint irq_epoch;
    atomic_uint map_gen;          /* vmm_map_changed() bumps it */
    /* Ending the VM. */
    atomic_bool stop;
    int exit_code;                /* the guest's, or an lcvmm_exit_status */
    char stop_reason[160];
    /* --reboot: stop was set for a guest reset, not to end the VM; a real
     * stop request clears it (it wins). stop, reset_pending and the
     * reason change together under stop_lock. */
    pthread_mutex_t stop_lock;
    bool reset_pending;
    /* libcluster */
    lc_engine *engine;
    lc_vm_ops ops;
    /* Back end. */
    void *cpu;                    /* kvm_vm or uc_vm */
    vmm_stats stats;
    FILE *trace;                  /* --trace-file, or NULL */
    uint64_t trace_seq;
    /* I/O thread (TAP receive, send-combining ticks). */
    pthread_t io_thread;
    bool io_thread_running;
    int io_stop_fd;
    /* Its tick (vm.c): a timerfd armed only while a device waits for it
     * (vmm_device_ops.waits; under dev_lock), and the back end's replay of
     * deferred (coalesced) writes it calls first, or NULL. */
    int io_timer_fd;
    bool io_timer_armed;
    void (*io_drain)(vmm *vm);
    /* Its wakeup (vmm_io_update): an eventfd, written when a device's
     * descriptor the thread left out of its poll set (io_left_out; it
     * polls io_polled of them) is back. Under dev_lock. */
    int io_wake_fd;
    bool io_left_out;
    unsigned io_polled;
    struct vmm_live *live;        /* --stats-interval (stats_live.c) */
};

/* Guest-physical memory helpers (mem.c). */
int  vmm_mem_init(vmm *vm, uint64_t bytes);
void vmm_mem_fini(vmm *vm);
/* Host pointer for [gpa, gpa + len) if all of it is RAM, else NULL. */
void *vmm_gpa(vmm *vm, uint64_t gpa, uint64_t len);
extern const vm_dma vmm_dma_template;   /* opaque = vm */
void vmm_fill_lc_ops(vmm *vm, lc_vm_ops *ops);

/* End the VM (any thread): `code` is the process exit status, the guest's
 * own or one of enum lcvmm_exit_status (lcvmm/platform.h). Every vCPU
 * leaves KVM_RUN (vm->kick), a halted one too. */
void vmm_request_stop(vmm *vm, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The guest reset the machine (port 0xCF9, 0x92, the i8042's pulse, a
 * triple fault; any thread). With --reboot, and below --max-reboots, every
 * vCPU leaves the guest as for a stop and the run returns with
 * vmm_reset_pending() true: main.c then reboots the machine. Otherwise it
 * is vmm_request_stop(code, why), as QEMU's -no-reboot does. A reset while
 * the VM already stops or resets changes nothing. */
void vmm_request_reset(vmm *vm, int code, const char *why);
bool vmm_reset_pending(vmm *vm);
/* After the reboot's work: the VM runs again (stop cleared), or false if
 * a real stop arrived meanwhile (then it ends). */
bool vmm_reset_finish(vmm *vm);

/* A back end made its libcluster vCPU contexts (made: the engine's
 * figures are live again) or is about to destroy them (gone: keep what
 * their translation caches held for --stats). */
void vmm_engine_vcpus_made(vmm *vm);
void vmm_engine_vcpus_gone(vmm *vm);

/* Called by a back end first at every exit (`kind`: LC_EXIT_IO,
 * LC_EXIT_MMIO, or 0): counts it, sends what send combining queued. */
void vmm_exit_begin(vmm *vm, lc_exit_kind kind);
/* A device changed the guest-physical map: flush the engine now, and
 * bump the map's generation. */
void vmm_map_changed(vmm *vm);
/* The map's generation: a back end that keeps anything that follows the
 * map (KVM's coalesced zones and device memory slots) compares it with
 * the one it applied before every entry into the guest. */
unsigned vmm_map_gen(vmm *vm);
/* Called by a back end after every exit, before the guest runs again:
 * adaptive send combining's "next world switch" (the devices' exit_done
 * hooks, vm.c). */
void vmm_exit_done(vmm *vm);
/* Called last at a port or MMIO exit offered to libcluster: counts what
 * the engine handled (`res`, or NULL if it declined) and traces it, with
 * `pc` (vmm_trace_exit()). */
void vmm_exit_end(vmm *vm, const lc_exit *ex, int64_t gap, uint64_t pc,
                  const lc_result *res);

/* The I/O thread: backend receive and send-combining ticks. */
int  vmm_io_start(vmm *vm);
void vmm_io_stop(vmm *vm);

/* Loader (loader.c): put a multiboot image into RAM and describe the
 * entry state. */
typedef struct vmm_boot {
    uint32_t entry;
    uint32_t mbi;        /* EBX */
    uint32_t gdt;        /* a flat GDT the loader wrote: 0x08 code, 0x10 data */
    bool reset;          /* firmware: start at the reset vector instead */
} vmm_boot;
int vmm_load_multiboot(vmm *vm, const char *path, const char *cmdline,
                       vmm_boot *boot, char *err, size_t errlen);

/* A user's file (an image, firmware, an option ROM) read whole: a
 * regular file of `min` to `max` bytes (`what` names the kind in the
 * error, "an image"), never blocking on a FIFO; in pages of its own
 * (mmap, for a back end to map as guest memory) when `pages`. NULL with
 * the reason in err, errno kept from a failed open() (ENOENT: missing).
 * Freed with vmm_free_file(). */
uint8_t *vmm_read_file(const char *path, size_t min, size_t max,
                       const char *what, bool pages, size_t *len,
                       char *err, size_t errlen);
void vmm_free_file(uint8_t *buf, size_t len, bool pages);

/* The flat 32-bit protected-mode state of multiboot's entry. */
void vmm_boot_state(const vmm_boot *boot, lc_cpu_state *st);

/* Back ends. Each runs the VM until it stops and returns 0, or -1 with
 * the reason in vm->stop_reason. */
bool vmm_kvm_available(char *why, size_t len);
int  vmm_kvm_run(vmm *vm, const vmm_boot *boot);
/* kvm_quirks.c: the firmware map's slot setter (opaque: &vm_fd), and the
 * fix-ups of this KVM's faults where the probe found them (true: the
 * exit was dealt with, resume). */
int  vmm_kvm_set_slot(void *vm_fd, unsigned slot, uint64_t gpa,
                      uint64_t size, void *hva, bool ro);
bool vmm_kvm_quirk_fixup(vmm *vm, int vcpu_fd, void *kvm_run);
/* once per process; true when timer ticks come late here, (c) */
bool vmm_kvm_quirks_probe(vmm *vm);
/* kvm_calibrate.c: one exit's round trip on a throwaway VM, in ns (0 when
 * it cannot be measured): libcluster's lc_config.exit_cost_ns. */
uint32_t vmm_kvm_exit_cost_ns(void);
/* fw_phase.c: a backend in front of `inner` that sees the guest's frames
 * (boot phases), and the phases' statistics. */
net_backend *vmm_fw_watch_net(vmm *vm, net_backend *inner);
void vmm_fw_phase_stats(vmm *vm, vmm_stat_fn put, void *ctx);
/* at every exit of vCPU 0 (the firmware's, the only one that touches the
 * quirk's state) while paging is off */
void vmm_kvm_quirk_exit(vmm *vm, int vcpu_fd);
bool vmm_kvm_quirk_debug(vmm *vm, int vcpu_fd); /* KVM_EXIT_DEBUG */
/* A port of KVM's in-kernel PIC or PIT: never an exit of ours */
bool vmm_kvm_port_in_kernel(uint16_t port, unsigned size);
bool vmm_unicorn_available(void);
int  vmm_unicorn_run(vmm *vm, const vmm_boot *boot);

/* Statistics output (stats.c). */
/* 0, or -1 when the statistics could not be written (said on stderr) */
int  vmm_print_stats(vmm *vm, const char *backend);
/* The trace file's first line, before any vCPU runs. */
void vmm_trace_header(vmm *vm);

/* Live statistics (--stats-interval, stats_live.c): a thread prints the
 * rates of every counter to stderr each interval. Start before the run;
 * the KVM back end hands it the reader of KVM's own counters (summed over
 * the vCPUs since they were created) once it has them, and stops it
 * before they go; stop prints the last, partial interval. Stop is
 * idempotent; without the option both do nothing. */
typedef void vmm_kvm_read_fn(vmm *vm, uint64_t v[KVM_STAT_COUNT_]);
int  vmm_stats_live_start(vmm *vm);
void vmm_stats_live_kvm(vmm *vm, vmm_kvm_read_fn *read);
void vmm_stats_live_stop(vmm *vm);

/* The exit trace (--trace-file): one CSV line per exit taken, for the
 * benchmarks' trace-driven models and for finding where a guest's exits
 * come from. `gap` is the number of guest instructions since the previous
 * exit (Unicorn; -1 when unknown, KVM), `pc` the linear address CS base +
 * RIP as the exit left it (at the exiting instruction or past it, as the
 * back end reports: docs/vmm.md; VMM_PC_UNKNOWN: not known), `res` what
 * the engine did with it (NULL: not offered or declined). */
#define VMM_PC_UNKNOWN (~0ull)
void vmm_trace_exit(vmm *vm, const lc_exit *ex, int64_t gap, uint64_t pc,
                    const lc_result *res);
/* The trace's pc from a back end's registers: CS base + RIP, wrapped at
 * 4 GiB unless the code is 64-bit (EFER.LMA and CS.L). */
uint64_t vmm_trace_pc(uint64_t cs_base, uint64_t rip, uint64_t efer,
                      bool cs_l);

#endif /* VMM_VMM_H */
