/* SPDX-License-Identifier: MIT */
/*
 * lcvmm: the reference VMM's command line (kvmtool's `lkvm run` in
 * spirit). See `lcvmm --help` and docs/vmm.md.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "vmm.h"

static void usage(FILE *f)
{
    fprintf(f,
"usage: lcvmm [options] -k IMAGE | --bios FILE\n"
"  -k, --kernel IMAGE     Multiboot guest image (a.out kludge, see docs/vmm.md)\n"
"      --bios FILE        PC firmware (SeaBIOS bios.bin): mapped read-only below\n"
"                         4 GiB and its last 128 KiB at 0xE0000; boot at reset\n"
"      --rom FILE|none    the NIC's option ROM (default with --bios: ipxe-qemu's\n"
"                         /usr/lib/ipxe/qemu/pxe-MODEL.rom), offered in fw_cfg\n"
"      --rom-bar          offer the ROM behind the NIC's PCI expansion ROM BAR\n"
"                         instead of fw_cfg\n"
"      --no-fw-cfg-dma    fw_cfg's traditional interface only, without its DMA\n"
"                         interface (QEMU's -global fw_cfg.dma_enabled=off)\n"
"      --debugcon FILE    the firmware debug console (port 0x402) to FILE (- stderr)\n"
"  -p, --params STRING    guest command line (e.g. \"n=100 cpl=3 irq=0\")\n"
"  -m, --mem MIB          guest RAM in MiB (default 64, 2..3072)\n"
"  -c, --cpus N           vCPUs (default 1, at most %d)\n"
"  -n, --nic MODEL        pcnet | e1000 | none (default pcnet)\n"
"      --net BACKEND      peer[,ip=A.B.C.D][,tftp=DIR][,boot=FILE] |\n"
"                         tap,ifname=NAME | dgram,local=HOST:PORT,remote=\n"
"                         HOST:PORT (QEMU's -netdev dgram; default peer;\n"
"                         tftp/boot: DHCP and TFTP for a network boot)\n"
"      --cpu BACKEND      kvm | unicorn | auto (default auto: kvm if usable)\n"
"      --no-cluster       do not use libcluster (every exit goes the usual way)\n"
"      --cluster LIST     techniques: single,pairs,static,dynamic,smc,calls | all\n"
"                         (default all); -NAME removes one (all,-calls)\n"
"      --cflow METHOD     control flow in clusters: none, m1, m2, m3 (default m3)\n"
"      --lost-ticks POLICY  KVM's PIT, a tick the guest could not take in time:\n"
"                         delay (inject it later: QEMU's lost_tick_policy\n"
"                         default) | discard | auto (default: discard where\n"
"                         the KVM probe finds ticks delivered late, else delay)\n"
"      --exit-cost NS|auto  what one exit costs, for libcluster's budgets (memory\n"
"                         gap fillers, decode-ahead window; default auto:\n"
"                         measured at start on KVM, a few ms; 0: the paper's\n"
"                         fixed cap of four and window of 16)\n"
"      --nic-opt LIST     NIC optimizations (Sugerman et al. 3.3): latch,combine,\n"
"                         coalesce, and direct (KVM: the e1000's receive ring\n"
"                         registers mapped into the guest as memory, so RDT\n"
"                         writes neither exit nor trap) | all | none (default\n"
"                         all); combine-always holds every transmit instead of\n"
"                         adapting to the rate\n"
"      --stats FORMAT     table | json | none (default table)\n"
"      --stats-file FILE  write the statistics there instead of stderr\n"
"      --stats-interval SECONDS\n"
"                         while the guest runs, print every SECONDS (0.01 to\n"
"                         3600, e.g. 0.5) each counter's rate and delta to\n"
"                         stderr (stdout is the guest's console)\n"
"      --trace-file FILE  one CSV line per exit (kind, address, cluster; on\n"
"                         Unicorn also the guest instructions since the last)\n"
"      --insn-limit N     Unicorn: stop after N guest instructions\n"
"      --timeout SECONDS  stop the guest after this long (exit status %d)\n"
"      --reboot           a guest reset (port 0xCF9, 0x92, the i8042, a triple\n"
"                         fault) reboots the machine, as QEMU does by default;\n"
"                         without it a reset ends the VM (QEMU's -no-reboot)\n"
"      --max-reboots N    --reboot, and the reset after N reboots ends the VM\n"
"  -q, --quiet            no banner\n"
"  -h, --help\n"
"Exit status: 0 success; a guest's debug-exit code C != 0 as (C << 1) | 1\n"
"(always odd); %d VMM error, %d guest crashed, %d timeout or instruction\n"
"limit.\n", VMM_MAX_VCPUS, LCVMM_EXIT_TIMEOUT, LCVMM_EXIT_ERROR,
            LCVMM_EXIT_CRASH, LCVMM_EXIT_TIMEOUT);
}

/* A comma-separated list of names, OR-ing their bits. With `minus`
 * (--cluster), "-NAME" takes NAME's bits away instead, in order, and a
 * list that starts with a removal starts from `minus_from`: "all,-calls"
 * and "-calls" both mean every technique but calls. */
static int parse_list(const char *arg, const char *const names[],
                      const uint32_t bits[], unsigned n, uint32_t *out,
                      const char *what, int minus, uint32_t minus_from)
{
    char buf[256], *save = NULL, *tok;
    uint32_t m = 0;

    if (strlen(arg) >= sizeof buf) {
        fprintf(stderr, "lcvmm: %s list too long\n", what);
        return -1;
    }
    strcpy(buf, arg);
    if (!arg[strspn(arg, ",")]) {
        /* an empty list would turn the feature on with nothing in it */
        fprintf(stderr, "lcvmm: empty %s list '%s'\n", what, arg);
        return -1;
    }
    for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int first = tok == buf + strspn(arg, ",");
        int drop = minus && tok[0] == '-';
        unsigned i;
        if (drop) {
            tok++;
            if (first)
                m = minus_from;
        }
        for (i = 0; i < n && strcmp(tok, names[i]); i++)
            ;
        if (i == n) {
            fprintf(stderr, "lcvmm: unknown %s '%s' (valid:", what, tok);
            for (i = 0; i < n; i++)
                fprintf(stderr, " %s", names[i]);
            fprintf(stderr, ")\n");
            return -1;
        }
        if (drop)
            m &= ~bits[i];
        else
            m |= bits[i];
    }
    if (minus && !m) {
        fprintf(stderr, "lcvmm: no %s left in '%s'\n", what, arg);
        return -1;
    }
    *out = m;
    return 0;
}

static int parse_uint(const char *s, unsigned long long lo,
                      unsigned long long hi, unsigned long long *out,
                      const char *what)
{
    char *end;
    unsigned long long v;

    /* decimal digits only: strtoull() would skip leading blanks, accept
     * a sign (" -5" wraps to 2^64-5) and read "010" as octal */
    errno = 0;
    v = strtoull(s, &end, 10);
    if (!isdigit((unsigned char)s[0]) || *end || errno || v < lo || v > hi) {
        fprintf(stderr, "lcvmm: %s must be a number in [%llu, %llu], not "
                "'%s'\n", what, lo, hi, s);
        return -1;
    }
    *out = v;
    return 0;
}

enum { O_NET = 256, O_CPU, O_NOCLUSTER, O_CLUSTER, O_CFLOW, O_NICOPT,
       O_STATS, O_STATSFILE, O_TRACE, O_INSNLIMIT, O_TIMEOUT,
       O_STATSINTERVAL, O_BIOS, O_ROM, O_DEBUGCON, O_ROMBAR, O_NOFWDMA, O_REBOOT,
       O_MAXREBOOTS, O_EXITCOST, O_LOSTTICKS };


static int parse_args(int argc, char **argv, vmm_options *o)
{
    static const struct option longopts[] = {
        { "kernel", required_argument, 0, 'k' },
        { "params", required_argument, 0, 'p' },
        { "mem", required_argument, 0, 'm' },
        { "cpus", required_argument, 0, 'c' },
        { "nic", required_argument, 0, 'n' },
        { "net", required_argument, 0, O_NET },
        { "cpu", required_argument, 0, O_CPU },
        { "no-cluster", no_argument, 0, O_NOCLUSTER },
        { "cluster", required_argument, 0, O_CLUSTER },
        { "cflow", required_argument, 0, O_CFLOW },
        { "nic-opt", required_argument, 0, O_NICOPT },
        { "stats", required_argument, 0, O_STATS },
        { "stats-file", required_argument, 0, O_STATSFILE },
        { "stats-interval", required_argument, 0, O_STATSINTERVAL },
        { "trace-file", required_argument, 0, O_TRACE },
        { "insn-limit", required_argument, 0, O_INSNLIMIT },
        { "timeout", required_argument, 0, O_TIMEOUT },
        { "bios", required_argument, 0, O_BIOS },
        { "rom", required_argument, 0, O_ROM },
        { "debugcon", required_argument, 0, O_DEBUGCON },
        { "rom-bar", no_argument, 0, O_ROMBAR },
        { "no-fw-cfg-dma", no_argument, 0, O_NOFWDMA },
        { "reboot", no_argument, 0, O_REBOOT },
        { "max-reboots", required_argument, 0, O_MAXREBOOTS },
        { "exit-cost", required_argument, 0, O_EXITCOST },
        { "lost-ticks", required_argument, 0, O_LOSTTICKS },
        { "quiet", no_argument, 0, 'q' },
        { "help", no_argument, 0, 'h' },
        { 0, 0, 0, 0 },
    };
    static const char *const techs[] = { "single", "pairs", "static",
                                         "dynamic", "smc", "calls", "all" };
    static const uint32_t tech_bits[] = { LC_TECH_SINGLE, LC_TECH_PAIRS,
        LC_TECH_STATIC, LC_TECH_DYNAMIC, LC_TECH_SMC, LC_TECH_CALLS,
        LC_TECH_ALL };
    static const char *const nopts[] = { "latch", "combine", "coalesce",
                                         "direct", "all", "none",
                                         "combine-always" };
    static const uint32_t nopt_bits[] = { 1, 2, 4, 16, 23, 0, 8 };
    unsigned long long v;
    uint32_t m;
    int c;

    while ((c = getopt_long(argc, argv, "k:p:m:c:n:qh", longopts, NULL)) != -1) {
        switch (c) {
        case 'k': o->kernel = optarg; break;
        case 'p': o->params = optarg; break;
        case 'm':
            if (parse_uint(optarg, 2, 3072, &v, "--mem"))
                return -1;
            o->ram_mib = v;
            break;
        case 'c':
            if (parse_uint(optarg, 1, VMM_MAX_VCPUS, &v, "--cpus"))
                return -1;
            o->vcpus = (unsigned)v;
            break;
        case 'n':
            if (!strcmp(optarg, "none")) {
                o->nic = NIC_NONE;
            } else if ((o->nic = nic_model_parse(optarg)) == NIC_NONE) {
                fprintf(stderr, "lcvmm: unknown NIC model '%s' (valid: "
                        "pcnet, e1000, none)\n", optarg);
                return -1;
            }
            break;
        case O_NET: o->net = optarg; break;
        case O_CPU:
            if (!strcmp(optarg, "kvm")) o->cpu = VMM_CPU_KVM;
            else if (!strcmp(optarg, "unicorn")) o->cpu = VMM_CPU_UNICORN;
            else if (!strcmp(optarg, "auto")) o->cpu = VMM_CPU_AUTO;
            else {
                fprintf(stderr, "lcvmm: unknown CPU back end '%s' (valid: "
                        "kvm, unicorn, auto)\n", optarg);
                return -1;
            }
            break;
        case O_NOCLUSTER: o->cluster = false; break;
        case O_CLUSTER:
            if (parse_list(optarg, techs, tech_bits,
                           sizeof techs / sizeof techs[0], &m, "technique",
                           1, LC_TECH_ALL))
                return -1;
            o->techniques = m;
            o->cluster = true;
            break;
        case O_CFLOW:
            if (!strcmp(optarg, "none")) o->cflow = LC_CFLOW_NONE;
            else if (!strcmp(optarg, "m1")) o->cflow = LC_CFLOW_M1;
            else if (!strcmp(optarg, "m2")) o->cflow = LC_CFLOW_M2;
            else if (!strcmp(optarg, "m3")) o->cflow = LC_CFLOW_M3;
            else {
                fprintf(stderr, "lcvmm: unknown control-flow method '%s' "
                        "(valid: none, m1, m2, m3)\n", optarg);
                return -1;
            }
            break;
        case O_NICOPT:
            if (parse_list(optarg, nopts, nopt_bits, 7, &m, "NIC optimization",
                           0, 0))
                return -1;
            o->nic_opt.latch_fast = m & 1;
            o->nic_opt.send_combine = m & (2 | 8);
            o->nic_opt.combine_adaptive = !(m & 8);
            o->nic_opt.irq_coalesce = m & 4;
            o->nic_opt.direct = m & 16;
            break;
        case O_STATS:
            if (!strcmp(optarg, "table")) o->stats = VMM_STATS_TABLE;
            else if (!strcmp(optarg, "json")) o->stats = VMM_STATS_JSON;
            else if (!strcmp(optarg, "none")) o->stats = VMM_STATS_NONE;
            else {
                fprintf(stderr, "lcvmm: unknown statistics format '%s' "
                        "(valid: table, json, none)\n", optarg);
                return -1;
            }
            break;
        case O_STATSFILE: o->stats_file = optarg; break;
        case O_TRACE: o->trace_file = optarg; break;
        case O_INSNLIMIT:
            if (parse_uint(optarg, 1, ~0ull, &v, "--insn-limit"))
                return -1;
            o->insn_limit = v;
            break;
        case O_TIMEOUT: {
            char *end;
            double t = strtod(optarg, &end);
            if (!*optarg || *end || !(t > 0) || t > 86400) {
                fprintf(stderr, "lcvmm: --timeout must be seconds in "
                        "(0, 86400], not '%s'\n", optarg);
                return -1;
            }
            o->timeout_s = t;
            break;
        }
        case O_STATSINTERVAL: {
            char *end;
            double t = strtod(optarg, &end);
            /* !(t >= 0.01) also refuses NaN, !(t <= 3600) "inf"; below
             * 10 ms the blocks would be the run's main work */
            if (!*optarg || *end || !(t >= 0.01) || !(t <= 3600)) {
                fprintf(stderr, "lcvmm: --stats-interval must be seconds in "
                        "[0.01, 3600], not '%s'\n", optarg);
                return -1;
            }
            o->stats_interval_s = t;
            break;
        }
        case O_BIOS: o->bios = optarg; break;
        case O_ROM: o->rom = optarg; break;
        case O_DEBUGCON: o->debugcon = optarg; break;
        case O_ROMBAR: o->rom_bar = true; break;
        case O_NOFWDMA: o->no_fw_cfg_dma = true; break;
        case O_REBOOT: o->reboot = true; break;
        case O_MAXREBOOTS:
            if (parse_uint(optarg, 1, ~0ull, &v, "--max-reboots"))
                return -1;
            o->max_reboots = v;
            o->reboot = true;
            break;
        case O_EXITCOST:
            if (!strcmp(optarg, "auto")) {
                o->exit_cost_ns = -1;
                break;
            }
            if (parse_uint(optarg, 0, 1000000000, &v,
                           "--exit-cost (or auto)"))
                return -1;
            o->exit_cost_ns = (int64_t)v;
            break;
        case O_LOSTTICKS:
            if (!strcmp(optarg, "auto")) o->lost_ticks = VMM_TICKS_AUTO;
            else if (!strcmp(optarg, "delay")) o->lost_ticks = VMM_TICKS_DELAY;
            else if (!strcmp(optarg, "discard"))
                o->lost_ticks = VMM_TICKS_DISCARD;
            else {
                fprintf(stderr, "lcvmm: unknown lost tick policy '%s' "
                        "(valid: auto, delay, discard)\n", optarg);
                return -1;
            }
            break;
        case 'q': o->quiet = true; break;
        case 'h': usage(stdout); exit(0);
        default: usage(stderr); return -1;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "lcvmm: unexpected argument '%s'\n", argv[optind]);
        return -1;
    }
    if ((o->rom || o->debugcon || o->rom_bar || o->no_fw_cfg_dma) &&
        !o->bios) {
        fprintf(stderr, "lcvmm: %s needs --bios\n",
                o->rom ? "--rom" : o->rom_bar ? "--rom-bar" :
                o->debugcon ? "--debugcon" : "--no-fw-cfg-dma");
        return -1;
    }
    if (o->lost_ticks != VMM_TICKS_AUTO && o->cpu == VMM_CPU_UNICORN) {
        fprintf(stderr, "lcvmm: --lost-ticks is a policy of KVM's in-kernel "
                "PIT; the Unicorn back end has no PIT\n");
        return -1;
    }
    if (o->kernel && o->bios) {
        fprintf(stderr, "lcvmm: -k and --bios exclude each other (the "
                "firmware boots what it finds)\n");
        return -1;
    }
    if (!o->kernel && !o->bios) {
        fprintf(stderr, "lcvmm: no guest image given (-k IMAGE or --bios "
                "FILE)\n");
        usage(stderr);
        return -1;
    }
    return 0;
}

/* ---- the watchdog (--timeout) ------------------------------------------ */

static pthread_t main_thread;

static void *watchdog(void *arg)
{
    vmm *vm = arg;
    struct timespec t = { (time_t)vm->opt.timeout_s,
                          (long)((vm->opt.timeout_s -
                                  (double)(time_t)vm->opt.timeout_s) * 1e9) };
    nanosleep(&t, NULL);
    vmm_request_stop(vm, LCVMM_EXIT_TIMEOUT, "timeout after %g s",
                     vm->opt.timeout_s);
    /* interrupt KVM_RUN (the loop re-checks vm->stop after EINTR) */
    while (1) {
        struct timespec p = { 0, 50 * 1000 * 1000 };
        pthread_kill(main_thread, SIGUSR1);
        nanosleep(&p, NULL);
    }
    return NULL;
}

/* ---- reboot (--reboot) ------------------------------------------------- */

/* The guest reset the machine and every vCPU has left it: the back end
 * has torn its VM down (vCPUs, in-kernel PIC, IOAPIC, PIT, local APICs:
 * the next run makes them again in their power-on state, the APs in
 * wait-for-SIPI, the boot vCPU at its reset or Multiboot entry state).
 * Here the rest of the machine: the devices to their power-on state
 * (vmm_devices_reset), the firmware's memory map to its reset state
 * (PAM registers 0: the BIOS image shows at 0xE0000 again; the back end
 * installs it) or the Multiboot image loaded again, and libcluster's
 * translations dropped: the guest's code after a reboot need not be
 * what it was. Guest RAM is kept, as a warm reset keeps it. */
static int reboot(vmm *vm, vmm_boot *boot, char *err, size_t errlen)
{
    vmm_io_stop(vm);            /* the back end did; a no-op then */
    if (vm->fw)
        vmm_fw_reset(vm);
    if (vmm_devices_reset(vm, err, errlen))
        return -1;
    if (!vm->fw) {
        memset(boot, 0, sizeof *boot);
        if (vmm_load_multiboot(vm, vm->opt.kernel, vm->opt.params, boot,
                               err, errlen))
            return -1;
    }
    if (vm->engine)
        lc_engine_flush(vm->engine);
    VMM_STAT_INC(vm->stats.reboots);
    if (vmm_io_start(vm)) {
        snprintf(err, errlen, "cannot start the I/O thread");
        return -1;
    }
    return 0;
}

static void on_sigusr1(int sig)
{
    (void)sig;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    static vmm vm_;
    vmm *vm = &vm_;
    vmm_options *o = &vm->opt;
    char err[PATH_MAX + 256] = "";     /* room for a path and its reason */
    const char *backend;
    vmm_boot boot;
    pthread_t wd;
    double t0;
    bool lost;

    *o = (vmm_options){ .ram_mib = 64, .vcpus = 1, .nic = NIC_PCNET,
                        .net = "peer", .cluster = true,
                        .techniques = LC_TECH_ALL, .cflow = LC_CFLOW_M3,
                        .nic_opt = { .latch_fast = true, .send_combine = true,
                                     .irq_coalesce = true, .combine_max = 3,
                                     .combine_adaptive = true,
                                     .direct = true },
                        .stats = VMM_STATS_TABLE, .exit_cost_ns = -1 };
    if (parse_args(argc, argv, o))
        return LCVMM_EXIT_ERROR;
    if (o->stats_file) {
        /* before the guest runs, not after: its statistics would be lost */
        FILE *f = fopen(o->stats_file, "w");
        if (!f || fclose(f)) {
            fprintf(stderr, "lcvmm: --stats-file %s: %s\n", o->stats_file,
                    strerror(errno));
            return LCVMM_EXIT_ERROR;
        }
    }
    pthread_mutex_init(&vm->dev_lock, NULL);
    pthread_mutex_init(&vm->pci_lock, NULL);
    pthread_mutex_init(&vm->kick_lock, NULL);
    pthread_mutex_init(&vm->stop_lock, NULL);
    /* firmware images are checked first: a bad file is status 2 on any
     * host, KVM or not */
    if (o->bios && vmm_fw_load(vm, err, sizeof err)) {
        fprintf(stderr, "lcvmm: %s\n", err);
        return LCVMM_EXIT_ERROR;
    }
    if (o->cpu != VMM_CPU_UNICORN) {
        char why[160];
        if (vmm_kvm_available(why, sizeof why)) {
            o->cpu = VMM_CPU_KVM;
        } else if (o->cpu == VMM_CPU_KVM) {
            fprintf(stderr, "lcvmm: KVM unavailable: %s\n", why);
            return LCVMM_EXIT_ERROR;
        } else {
            if (!o->quiet)
                fprintf(stderr, "lcvmm: KVM unavailable (%s): using the "
                        "Unicorn back end\n", why);
            o->cpu = VMM_CPU_UNICORN;
        }
    }
    if (o->cpu == VMM_CPU_UNICORN && o->bios) {
        fprintf(stderr, "lcvmm: --bios needs the KVM back end\n");
        return LCVMM_EXIT_ERROR;
    }
    if (o->cpu == VMM_CPU_UNICORN && !vmm_unicorn_available()) {
        fprintf(stderr, "lcvmm: this build has no Unicorn back end\n");
        return LCVMM_EXIT_ERROR;
    }
    if (o->reboot && o->cpu == VMM_CPU_UNICORN) {
        /* the reboot builds the machine again around a new KVM VM
         * (reboot below); the Unicorn back end has no reset state */
        fprintf(stderr, "lcvmm: --reboot needs the KVM back end\n");
        return LCVMM_EXIT_ERROR;
    }
    if (o->insn_limit && o->cpu == VMM_CPU_KVM) {
        /* KVM cannot count guest instructions: refuse rather than ignore */
        fprintf(stderr, "lcvmm: --insn-limit needs the Unicorn back end "
                "(--cpu unicorn)\n");
        return LCVMM_EXIT_ERROR;
    }
    backend = o->cpu == VMM_CPU_KVM ? "kvm" : "unicorn";
    if (vmm_mem_init(vm, o->ram_mib << 20)) {
        fprintf(stderr, "lcvmm: cannot allocate %llu MiB of guest RAM\n",
                (unsigned long long)o->ram_mib);
        return LCVMM_EXIT_ERROR;
    }
    memset(&boot, 0, sizeof boot);
    boot.reset = o->bios != NULL;
    if ((!o->bios && vmm_load_multiboot(vm, o->kernel, o->params, &boot, err,
                                        sizeof err)) ||
        vmm_devices_init(vm, err, sizeof err)) {
        fprintf(stderr, "lcvmm: %s\n", err);
        return LCVMM_EXIT_ERROR;
    }
    if (o->trace_file && !(vm->trace = fopen(o->trace_file, "w"))) {
        perror(o->trace_file);
        return LCVMM_EXIT_ERROR;
    }
    if (vm->trace)
        vmm_trace_header(vm);
    if (o->cluster) {
        lc_config cfg;
        lc_config_init(&cfg);
        cfg.techniques = o->techniques;
        cfg.cflow = o->cflow;
        /* Paper section 11: the cost model calibrated at power-on. On
         * Unicorn an "exit" is a return from uc_emu_start, not a world
         * switch: not known, the paper's cap. */
        if (o->exit_cost_ns >= 0)
            cfg.exit_cost_ns = (uint32_t)o->exit_cost_ns;
        else if (o->cpu == VMM_CPU_KVM &&
                 !(cfg.exit_cost_ns = vmm_kvm_exit_cost_ns()))
            fprintf(stderr, "lcvmm: could not measure the exit cost: "
                    "libcluster keeps the paper's memory-gap cap and window\n");
        if (!o->quiet && o->cpu == VMM_CPU_KVM)
            fprintf(stderr, "lcvmm: exit cost %u ns (%s)\n",
                    cfg.exit_cost_ns,
                    o->exit_cost_ns >= 0 ? "--exit-cost" :
                    "measured at start");
        vmm_fill_lc_ops(vm, &vm->ops);
        lc_status s = lc_engine_create(&cfg, &vm->ops, &vm->engine);
        if (s != LC_OK) {
            fprintf(stderr, "lcvmm: libcluster: %s\n", lc_strerror(s));
            return LCVMM_EXIT_ERROR;
        }
    }
    if (!o->quiet)
        fprintf(stderr, "lcvmm: %s, %llu MiB, %u vCPU, nic %s, net %s, cpu %s, "
                "libcluster %s\n", o->bios ? o->bios : o->kernel, (unsigned long long)o->ram_mib,
                o->vcpus, nic_model_name(o->nic), o->net, backend,
                o->cluster ? lc_version_string() : "off");

    struct sigaction sa = { .sa_handler = on_sigusr1 };
    sigaction(SIGUSR1, &sa, NULL);
    main_thread = pthread_self();
    if (o->timeout_s > 0 && pthread_create(&wd, NULL, watchdog, vm)) {
        fprintf(stderr, "lcvmm: cannot start the watchdog\n");
        return LCVMM_EXIT_ERROR;
    }
    if (vmm_io_start(vm)) {
        fprintf(stderr, "lcvmm: cannot start the I/O thread\n");
        return LCVMM_EXIT_ERROR;
    }
    if (vmm_stats_live_start(vm)) {
        fprintf(stderr, "lcvmm: cannot start the live statistics\n");
        return LCVMM_EXIT_ERROR;
    }
    t0 = now_s();
    /* the back end's failure is in vm->exit_code and vm->stop_reason */
    for (;;) {
        if (o->cpu == VMM_CPU_KVM)
            vmm_kvm_run(vm, &boot);
        else
            vmm_unicorn_run(vm, &boot);
        if (!vmm_reset_pending(vm))
            break;
        if (reboot(vm, &boot, err, sizeof err)) {
            vmm_request_stop(vm, LCVMM_EXIT_ERROR, "reboot: %s", err);
            break;
        }
        if (!vmm_reset_finish(vm))
            break;          /* a stop (the timeout) came during the reboot */
    }
    vmm_stats_live_stop(vm);
    vm->stats.wall_s = now_s() - t0;
    vmm_io_stop(vm);
    vmm_devices_flush(vm);
    fflush(stdout);
    if (!o->quiet || vm->exit_code)
        fprintf(stderr, "lcvmm: %s (exit status %d)\n",
                vm->stop_reason[0] ? vm->stop_reason : "stopped",
                vm->exit_code);
    /* output asked for and lost (a full disk): an error, whatever the
     * guest's status (said above) */
    lost = vmm_print_stats(vm, backend) != 0;
    if (vm->trace && (ferror(vm->trace) | fclose(vm->trace))) {
        fprintf(stderr, "lcvmm: %s: the trace could not be written\n",
                o->trace_file);
        lost = true;
    }
    vmm_devices_fini(vm);
    lc_engine_destroy(vm->engine);
    vmm_fw_free(vm);
    vmm_mem_fini(vm);
    return lost ? LCVMM_EXIT_ERROR : vm->exit_code;
}
