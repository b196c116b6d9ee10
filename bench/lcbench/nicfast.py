# SPDX-License-Identifier: MIT
"""The NIC fast path against QEMU, both VMMs counted and timed the same way.

For each workload, rounds interleave lcvmm (clustering off, on; for the
streaming guests also on without send combining and with the
unconditional combining of old) and QEMU with KVM, each at n1 and n2
units, the order flipped every round. Per unit = (x(n2) - x(n1)) /
(n2 - n1) within a round; figures are medians over rounds, ratios are
per round (same machine state) and then the median.

What is counted, for both VMMs from the outside, with the kernel's `kvm:`
tracepoints of the VMM's process (`perf stat`):
  exits     kvm:kvm_userspace_exit, returns of KVM_RUN to user space
  traps     device accesses KVM handled in the kernel (a write into a
            coalesced zone, an in-kernel PIC/PIT access): kvm:kvm_pio plus
            kvm:kvm_mmio reads and writes (types 1 and 2: every access
            once) minus the exits. kvm:kvm_exit does not fire on this
            host's KVM, so in-kernel exits cannot be counted directly.
lcvmm also reports the same from KVM's per-vCPU binary statistics
(KVM_GET_STATS_FD, `--stats`): traps = exits - exits to user space -
irq_exits; both are in the table, as a check of the tracepoint method.
The two differ by one thing: when libcluster runs ahead of an exit on a
read whose completion this KVM cannot cancel, the KVM adapter first
completes it with a KVM_RUN whose immediate_exit is set
(libcluster.kvm_completions; the guest does not run, about an ioctl's
cost). The tracepoint counts that return as a kvm_userspace_exit; KVM's
`exits` statistic counts it as well, so the statistics method puts it
among the traps (in every row, stats traps - tracepoint traps =
tracepoint exits - stats exits = completions). The table shows the
completions per unit; lcvmm's frames per exit count the exits that ran
the guest (stats), its traps are the statistics' less the completions.
QEMU makes no such calls.

Time: from the guest's console lines, "icmp echo ok" (just before the
exchange loop) to the result line (just after), for both VMMs: boot, NIC
bring-up and process start-up are not in it.
"""
import os
import shutil
import subprocess
import tempfile
import time
import json

from . import qemu as qemu_mod
from .util import log, summary, med, free_udp_ports, parse_result_line

TIMEOUT = 240
WORKLOADS = [
    dict(id='pcnet-rr', label='PCnet, CPL 3 poll, request/response',
         nic='pcnet', guest='guest-pcnet.bin', params='cpl=3 irq=0'),
    dict(id='e1000-rr', label='e1000, CPL 3 poll, request/response',
         nic='e1000', guest='guest-e1000.bin', params='cpl=3 irq=0'),
    dict(id='e1000-linux', label='e1000, CPL 3, Linux e1000 driver sequence',
         nic='e1000', guest='guest-e1000.bin', params='cpl=3 irq=0 linux=1'),
    dict(id='pcnet-stream', label='PCnet, CPL 3, streaming (burst=6)',
         nic='pcnet', guest='guest-pcnet.bin', params='cpl=3 irq=0 burst=6',
         stream=True),
    dict(id='e1000-stream', label='e1000, CPL 3, streaming (burst=6)',
         nic='e1000', guest='guest-e1000.bin', params='cpl=3 irq=0 burst=6',
         stream=True),
]
ON = ['--cluster', 'all', '--cflow', 'm3']
CONFIGS = [
    dict(id='off', label='lcvmm off', args=['--no-cluster']),
    dict(id='on', label='lcvmm on', args=ON),
    # the same peer as QEMU's, in its own process over UDP: replies arrive
    # while the guest runs, as under QEMU (the built-in peer answers inside
    # the exit that transmits)
    dict(id='on-dgram', label='lcvmm on, lcvmm-peer over dgram', args=ON,
         dgram=True),
    dict(id='on-nodirect', label='lcvmm on, no direct page',
         args=ON + ['--nic-opt', 'latch,combine,coalesce'], nic_only='e1000'),
    dict(id='on-nocombine', label='lcvmm on, no send combining',
         args=ON + ['--nic-opt', 'latch,coalesce'], stream_only=True),
    dict(id='on-always', label='lcvmm on, combining always (old)',
         args=ON + ['--nic-opt', 'latch,combine-always,coalesce'],
         stream_only=True),
    dict(id='qemu', label='QEMU + KVM', args=None),
]
MODES = dict(full=dict(rounds=7, n=(1000, 6000)),
             quick=dict(rounds=2, n=(200, 1000)))
EVENTS = ['kvm:kvm_userspace_exit', 'kvm:kvm_pio', 'kvm:kvm_mmio',
          'kvm:kvm_mmio']
FILTERS = [None, None, 'type==1', 'type==2']


# ---- counting ----------------------------------------------------------------

def tracepoints_ready():
    """perf with the kvm tracepoints, mounting tracefs if it is not (as
    root); (True, '') or (False, reason)."""
    if not shutil.which('perf'):
        return False, 'perf not found (Debian: linux-perf)'
    tdir = '/sys/kernel/tracing/events/kvm'
    if not os.path.isdir(tdir):
        subprocess.run(['mount', '-t', 'tracefs', 'nodev',
                        '/sys/kernel/tracing'], stderr=subprocess.DEVNULL)
    if not os.path.isdir(tdir):
        return False, f'{tdir} missing (tracefs not mounted, no root?)'
    p = subprocess.run(['perf', 'stat', '-x,', '-e', 'kvm:kvm_pio', '--',
                        'true'], stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE)
    if p.returncode != 0:
        return False, 'perf stat -e kvm:kvm_pio failed: ' + \
            p.stderr.decode(errors='replace').strip()[-200:]
    return True, ''


def perf_prefix(out):
    cmd = ['perf', 'stat', '-x,', '-o', out]
    for ev, flt in zip(EVENTS, FILTERS):
        cmd += ['-e', ev] + (['--filter', flt] if flt else [])
    return cmd + ['--']


def perf_counts(path):
    """(exits to user space, device accesses) from perf stat's CSV."""
    vals = []
    with open(path) as f:
        for line in f:
            parts = line.strip().split(',')
            if len(parts) > 2 and parts[2].startswith('kvm:'):
                vals.append(int(parts[0]) if parts[0].isdigit() else None)
    if len(vals) != 4 or None in vals:
        return None, None
    return vals[0], vals[1] + vals[2] + vals[3]


# ---- one run ------------------------------------------------------------------

def run_once(build, wl, cfg, n, counting):
    """One process of lcvmm or QEMU; returns a record (loop_s, exits,
    traps, lcvmm's own statistics) or one with 'error'."""
    fd, perf_out = tempfile.mkstemp(prefix='lcbench-perf-')
    os.close(fd)
    fd, stats_path = tempfile.mkstemp(prefix='lcbench-', suffix='.json')
    os.close(fd)
    image = os.path.join(build, 'examples', 'guests', wl['guest'])
    peer = None
    rec = dict(config=cfg['id'], n=n)
    try:
        if cfg['args'] is None or cfg.get('dgram'):
            qport, pport = free_udp_ports(2)
            peer = subprocess.Popen(
                [qemu_mod.peer_path(build), '--listen', f'127.0.0.1:{pport}',
                 '--remote', f'127.0.0.1:{qport}'],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(0.05)
        if cfg['args'] is None:
            cmd = qemu_mod.command(qemu_mod.QEMU, image, wl['nic'],
                                   f'n={n} {wl["params"]}',
                                   qemu_mod.netdev_dgram(qport, pport))
        else:
            cmd = [os.path.join(build, 'examples', 'vmm', 'lcvmm'), '-q',
                   '-k', image, '--nic', wl['nic'], '--cpu', 'kvm',
                   '-p', f'n={n} {wl["params"]}', '--stats', 'json',
                   '--stats-file', stats_path, '--timeout',
                   str(TIMEOUT)] + cfg['args'] + \
                (['--net', f'dgram,local=127.0.0.1:{qport},'
                  f'remote=127.0.0.1:{pport}'] if cfg.get('dgram') else [])
        if counting:
            cmd = perf_prefix(perf_out) + cmd
        p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        lines = qemu_mod.read_lines_timed(p, TIMEOUT)
        rc = p.wait()
        rec['loop_s'] = qemu_mod.in_run_time(lines)
        result = parse_result_line(''.join(l for _t, l in lines))
        want_rc = 1 if cfg['args'] is None else 0   # isa-debug-exit: 0*2+1
        if rc != want_rc or result.get('ok') != str(n) or \
                rec['loop_s'] is None:
            rec['error'] = f'exit status {rc}, result {result or "missing"}'
            return rec
        if counting:
            rec['exits'], acc = perf_counts(perf_out)
            rec['traps'] = None if acc is None else acc - rec['exits']
        if cfg['args'] is not None and os.path.getsize(stats_path):
            with open(stats_path) as f:
                st = json.load(f)
            k, nic = st.get('kvm', {}), st.get('nic', {})
            rec.update(stat_exits=st['vmm']['exits'],
                       stat_traps=k.get('traps'),
                       completions=st.get('libcluster', {}).get(
                           'kvm_completions', 0),
                       tx_frames=nic.get('tx_frames'),
                       tx_batches=nic.get('tx_batches'),
                       tx_batched=nic.get('tx_batched'),
                       combine_tries=nic.get('combine_tries'))
    finally:
        if peer:
            peer.terminate()
            peer.wait()
        os.unlink(perf_out)
        os.unlink(stats_path)
    return rec


# ---- a workload -----------------------------------------------------------------

def configs_of(wl, have_qemu):
    return [c for c in CONFIGS
            if (wl.get('stream') or not c.get('stream_only')) and
            c.get('nic_only', wl['nic']) == wl['nic'] and
            (c['args'] is not None or have_qemu)]


def measure_workload(build, wl, mode, have_qemu, counting):
    m = MODES[mode]
    n1, n2 = m['n']
    cfgs = configs_of(wl, have_qemu)
    runs = []
    for rnd in range(m['rounds']):
        order = cfgs if rnd % 2 == 0 else cfgs[::-1]
        for i, cfg in enumerate(order):
            for n in ((n1, n2) if (rnd + i) % 2 == 0 else (n2, n1)):
                rec = None
                for _attempt in range(3):
                    rec = run_once(build, wl, cfg, n, counting)
                    if 'error' not in rec:
                        break
                    log(f'  {wl["id"]} {cfg["id"]} n={n}: {rec["error"]}')
                rec['round'] = rnd
                runs.append(rec)
    return dict(n=(n1, n2), runs=runs, **derive(runs, cfgs, n1, n2))


PER_UNIT = ('loop_s', 'exits', 'traps', 'stat_exits', 'stat_traps',
            'completions', 'tx_frames', 'tx_batches', 'tx_batched')


def per_round(runs, cid, n1, n2):
    by = {}
    for r in runs:
        if r['config'] == cid and 'error' not in r:
            by.setdefault(r['round'], {})[r['n']] = r
    out = {}
    for rnd, pair in by.items():
        if n1 in pair and n2 in pair:
            a, b = pair[n1], pair[n2]
            out[rnd] = {k: (b[k] - a[k]) / (n2 - n1)
                        for k in PER_UNIT
                        if a.get(k) is not None and b.get(k) is not None}
    return out


def derive(runs, cfgs, n1, n2):
    per = {c['id']: per_round(runs, c['id'], n1, n2) for c in cfgs}
    res = {}
    for cid, rounds in per.items():
        d = {k: summary([r[k] for r in rounds.values() if k in r])
             for k in PER_UNIT}
        d['time_us'] = summary([r['loop_s'] * 1e6 for r in rounds.values()
                                if 'loop_s' in r])
        d['frames_per_batch'] = summary(
            [r['tx_batched'] / r['tx_batches'] for r in rounds.values()
             if r.get('tx_batches')])
        # guest exits: KVM's statistics for lcvmm (the tracepoint adds the
        # adapter's completions), the tracepoint for QEMU
        d['frames_per_exit'] = summary(
            [1 / r.get('stat_exits', r.get('exits')) for r in rounds.values()
             if r.get('stat_exits', r.get('exits'))])
        d['rounds'] = len(rounds)
        d['failed_runs'] = sum(1 for r in runs
                               if r['config'] == cid and 'error' in r)
        for ref in ('qemu', 'off', 'on-nocombine', 'on-nodirect', 'on-dgram'):
            if ref in per and ref != cid:
                d[f'time_vs_{ref}'] = summary(
                    [r['loop_s'] / per[ref][k]['loop_s']
                     for k, r in rounds.items()
                     if k in per[ref] and per[ref][k].get('loop_s')])
        res[cid] = d
    return dict(configs=res)


def measure_all(build, mode):
    qpath, qinfo = qemu_mod.available()
    counting, why = tracepoints_ready()
    if not counting:
        log(f'nicfast: exits and traps not counted: {why}')
    out = dict(available=True, qemu=qinfo if qpath else None,
               counting=counting, counting_reason=why, mode=mode,
               rounds=MODES[mode]['rounds'], workloads={})
    for wl in WORKLOADS:
        if not os.path.exists(os.path.join(build, 'examples', 'guests',
                                           wl['guest'])):
            continue
        log(f'nicfast: {wl["id"]} ({MODES[mode]["rounds"]} rounds, n='
            f'{MODES[mode]["n"]})')
        out['workloads'][wl['id']] = dict(
            label=wl['label'], params=wl['params'],
            **measure_workload(build, wl, mode, qpath is not None, counting))
    return out


# ---- the report section -------------------------------------------------------

def _f(x, d=2):
    return 'n/a' if x is None else f'{x:.{d}f}'


def section(results):
    nf = results.get('nicfast')
    head = '## NIC fast path vs QEMU (MEASURED, one interleaved run)\n\n'
    if not nf or not nf.get('workloads'):
        return head + 'Not run.\n'
    text = [head, f'{nf.get("rounds")} rounds, each VMM and configuration '
            'at n1 and n2 units in every round, the order flipped every '
            'round; per unit = difference / (n2 - n1); medians over rounds; '
            'ratios are per round, then the median [min-max]. Exits = '
            'returns to user space (`kvm:kvm_userspace_exit`), traps = '
            'device accesses KVM handled in the kernel (`kvm:kvm_pio` + '
            '`kvm:kvm_mmio` reads and writes - exits), both from the '
            'tracepoints of the VMM\'s process; for lcvmm also from KVM\'s '
            f'own per-vCPU statistics (stats). Completions: KVM_RUN calls '
            'with immediate_exit by which lcvmm\'s KVM adapter completes a '
            'read before running ahead of it (the guest does not run); the '
            'tracepoint counts them as exits, the statistics as traps. '
            'Frames per exit: per exit that ran the guest (lcvmm: stats). '
            f'QEMU: {nf.get("qemu")}.\n']
    if not nf.get('counting'):
        text.append(f'Exits and traps were not counted: '
                    f'{nf.get("counting_reason")}.\n')
    rows = []
    for wid, w in nf['workloads'].items():
        for cid, d in w['configs'].items():
            tq = d.get('time_vs_qemu')
            rows.append([wid, cid, f'{w["n"][0]}, {w["n"][1]}',
                         _f(med(d.get('time_us')), 1),
                         _f(med(d.get('exits'))), _f(med(d.get('traps'))),
                         _f(med(d.get('stat_exits'))),
                         _f(med(d.get('stat_traps'))),
                         _f(med(d.get('completions'))),
                         'n/a' if not tq else
                         f'{_f(med(tq))} [{_f(tq["min"])}-{_f(tq["max"])}]',
                         _f(med(d.get('frames_per_batch'))),
                         _f(med(d.get('frames_per_exit'))),
                         f'{d["rounds"]} / {d["failed_runs"]}'])
    hdr = ['workload', 'config', 'n1, n2', 'us per unit', 'exits', 'traps',
           'exits (stats)', 'traps (stats)', 'completions',
           'time / QEMU (same round)',
           'frames per batch', 'frames per exit', 'rounds / failed runs']
    text.append('| ' + ' | '.join(hdr) + ' |\n|' + '---|' * len(hdr) + '\n' +
                ''.join('| ' + ' | '.join(r) + ' |\n' for r in rows))
    text.append('\nStreaming guests (burst=6): the unit is one datagram and '
                'its reply; throughput = 1e6 / (us per unit) datagrams per '
                'second each way. Frames per batch = kicks a send-combining '
                'batch served / batches.\n')
    text.append(goals(nf))
    text.append(BEFORE)
    return '\n'.join(text) + '\n'


def _cfg(nf, wid, cid):
    return nf['workloads'].get(wid, {}).get('configs', {}).get(cid, {})


def _ratio_text(s):
    return 'n/a' if not s else f'{_f(med(s))} [{_f(s["min"])}-{_f(s["max"])}]'


def _ex(d):
    """Exits that ran the guest: KVM's statistics for lcvmm, else the
    tracepoint (QEMU)."""
    return med(d.get('stat_exits')) if d.get('stat_exits') else \
        med(d.get('exits'))


def _tr(d):
    """Traps: for lcvmm KVM's statistics less the completions they count
    (see the module's docstring), else the tracepoint (QEMU)."""
    if d.get('stat_traps') is None:
        return med(d.get('traps'))
    return med(d.get('stat_traps')) - (med(d.get('completions')) or 0)


def goals(nf):
    """The headline of this step, computed from the table above."""
    out = ['**Headline** (from the table above, same-round ratios, median '
           '[min-max]; lcvmm\'s exits and traps from KVM\'s statistics, '
           'completions apart):\n']
    for wid, name in (('pcnet-rr', 'PCnet'), ('e1000-rr', 'e1000')):
        on = _cfg(nf, wid, 'on')
        if on:
            out.append(f'- {name} request/response at CPL 3: time per '
                       f'exchange, lcvmm on / QEMU = '
                       f'{_ratio_text(on.get("time_vs_qemu"))}; lcvmm '
                       f'{_f(_ex(on))} exits, {_f(_tr(on))} traps and '
                       f'{_f(med(on.get("completions")))} completions per '
                       f'exchange, QEMU '
                       f'{_f(med(_cfg(nf, wid, "qemu").get("exits")))} exits '
                       f'and {_f(med(_cfg(nf, wid, "qemu").get("traps")))} '
                       'traps.')
        dg = _cfg(nf, wid, 'on-dgram')
        if dg:
            out.append(f'  - the same peer as QEMU\'s (lcvmm-peer over UDP, '
                       f'replies arriving while the guest runs): lcvmm on / '
                       f'QEMU = {_ratio_text(dg.get("time_vs_qemu"))}, '
                       f'{_f(_ex(dg))} exits and {_f(_tr(dg))} traps per '
                       f'exchange ({_f(med(dg.get("time_us")), 1)} us; with '
                       f'the built-in peer {_f(med(on.get("time_us")), 1)} '
                       'us).')
    for wid in ('e1000-rr', 'e1000-linux'):
        on, nd = _cfg(nf, wid, 'on'), _cfg(nf, wid, 'on-nodirect')
        if on and nd:
            out.append(f'- {wid}, the receive ring\'s registers as memory '
                       f'(`--nic-opt direct`): {_f(_ex(nd))} exits and '
                       f'{_f(_tr(nd))} traps per exchange without it, '
                       f'{_f(_ex(on))} and {_f(_tr(on))} with it; time with / '
                       f'without {_ratio_text(on.get("time_vs_on-nodirect"))}'
                       f', without it / QEMU '
                       f'{_ratio_text(nd.get("time_vs_qemu"))}.')
    off, on = _cfg(nf, 'e1000-linux', 'off'), _cfg(nf, 'e1000-linux', 'on')
    if off and on and _ex(off) and med(off.get('time_us')):
        cut = 1 - _ex(on) / _ex(off)
        tcut = on.get('time_vs_off')
        out.append(f'- e1000 in Linux\'s register sequence: clustering takes '
                   f'{_f(_ex(off))} -> {_f(_ex(on))} exits per exchange '
                   f'({cut * 100:.0f}% fewer; plus '
                   f'{_f(med(on.get("completions")))} completions, which the '
                   f'tracepoint counts as exits: {_f(med(off.get("exits")))} '
                   f'-> {_f(med(on.get("exits")))}; the paper\'s netperf: '
                   f'2.6 -> 1.97, -24%), time on / off {_ratio_text(tcut)}.')
    for wid, name in (('e1000-stream', 'e1000'), ('pcnet-stream', 'PCnet')):
        on, nc = _cfg(nf, wid, 'on'), _cfg(nf, wid, 'on-nocombine')
        if on:
            out.append(f'- {name} streaming (burst=6), combining on: '
                       f'{_f(med(on.get("frames_per_exit")))} frames per exit '
                       f'({_f(_tr(on))} traps and '
                       f'{_f(med(on.get("completions")))} completions per '
                       f'frame), {_f(med(on.get("frames_per_batch")))} frames '
                       f'per batch, {_f(med(on.get("time_us")), 1)} us per '
                       f'frame (without combining {_f(_ex(nc))} exits, '
                       f'{_f(_tr(nc))} traps and '
                       f'{_f(med(nc.get("time_us")), 1)} us per frame; '
                       f'time on / without '
                       f'{_ratio_text(on.get("time_vs_on-nocombine"))}).')
    return '\n'.join(out) + '\n'


BEFORE = """
**The figures these replace** (the same step earlier on 2026-11-23):
PCnet request/response 98 / 73 / 174 us (lcvmm off / on / QEMU, 0.41x);
e1000 request/response 96 / 94 / 120 us (0.81x); the Linux-sequence e1000
guest 6.00 -> 4.02 exits per exchange (tracepoint), 389 / 276 / 449 us:
the cluster at its ICR read was the read alone (the decode-ahead window
ended at the `return` of `if (!icr) return`), saved nothing, and the KVM
adapter stopped offering the site; now the window goes on at the
branch's target (translator/form_static.c) and the ICR read, IMC write
and STATUS read are one exit (3.00 exits and 1 completion per exchange).
PCnet streaming: 0.95 frames per exit with combining on and 1.13x the
time without it, since its kick (a CSR0 write through RDP) still exited;
now RDP and RAP writes are deferred while combining holds frames and
interrupts are off, so the kicks trap (2 per frame) instead of exiting.
**And the ones before those** (2026-11-23, before adaptive send combining;
the same guests at CPL 3, 7 rounds): PCnet 262 / 186 / 173 us per
exchange (lcvmm off / on / QEMU), 2.93 / 1.96 / 2.57 exits and 2.93 /
1.96 / 0 traps; e1000 202 / 198 / 117 us, 2.97 / 2.97 / 1.21 exits and
0 / 0 / about 1 trap. Why they were what they were: send combining held
every transmit until the next exit, and a polling guest's next exit was
its own poll for the reply, so each exchange took one or two exits more
than it needed (PCnet 3 exits and 3 coalesced RAP writes instead of 1
and 1); the e1000's RDT write exited where QEMU coalesces it; the
coalesced writes were counted for lcvmm only as "drained" and not at all
for QEMU, whose exits were assumed rather than counted; and QEMU ran 130
exchanges per run in 3 rounds against lcvmm's thousands in 9.
"""
