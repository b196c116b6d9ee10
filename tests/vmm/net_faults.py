#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Integration test: network backends failing, nothing lost silently.

Runs the NIC guests on the reference VMM with faults injected into the
built-in peer's transmit path (--net peer,fault=KIND:P%,fault-seed=N;
backends/fault.c) and its receive stage (rxfault=KIND:P%) and checks per
run that every frame the guest handed the NIC is accounted for:

  NIC tx_frames == net tx_offered == tx_frames + tx_dropped + tx_queued

and every reply the peer made too (rx_offered == rx_frames + rx_dropped
+ rx_queued); replies dropped on receive stop the guest, counted;

and that the peer answered exactly the frames delivered to it (ARP, ICMP
and UDP replies plus ignored == net tx_frames). Then, per kind of fault:
  - transient ones (EAGAIN, ENOBUFS, reordering with one datagram in
    flight) delay frames and lose none: the guest finishes every exchange
    with the checksum of the run without faults;
  - losses (drop, short writes) stop the guest's exchanges: the guest
    reports its time-out (exit status 5), lcvmm says on stderr where the
    losses are counted, and the counters still add up;
  - a host that never takes a frame (eagain:100%) loses nothing silently:
    the backlog holds what it can and counts the rest as dropped;
  - on Unicorn the same seed gives the same faults (deterministic);
  - malformed fault options are refused (exit status 2) with a message.

  net_faults.py LCVMM PCNET_IMAGE E1000_IMAGE

TAP output. KVM cases skip where /dev/kvm is unusable.
"""
import re
import subprocess
import sys

from vmmtest import read_stats, run_cases, stats_path

N = 300


def run(lcvmm, image, nic, params, net, cpu='kvm', extra=()):
    with stats_path() as path:
        cmd = [lcvmm, '-q', '-k', image, '--nic', nic, '--cpu', cpu,
               '-p', params, '--net', net, '--stats', 'json',
               '--stats-file', path, '--timeout', '60'] + list(extra)
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=120)
        return cmd, p, read_stats(path)


def result(p):
    out = p.stdout.decode(errors='replace')
    m = re.search(r'exchanges=(\d+) ok=(\d+) checksum=(0x[0-9a-f]+)', out)
    return (int(m.group(1)), int(m.group(2)), m.group(3)) if m else None


def accounting(stats):
    """None if every frame the guest handed over is accounted for."""
    nic, net = stats.get('nic', {}), stats.get('net', {})
    if not nic or not net:
        return 'no statistics'
    off = net.get('tx_offered')
    if nic.get('tx_frames') != off:
        return f'NIC took {nic.get("tx_frames")} frames, backend got {off}'
    done = net['tx_frames'] + net['tx_dropped'] + net['tx_queued']
    if off != done:
        return (f'offered {off} != delivered {net["tx_frames"]} + dropped '
                f'{net["tx_dropped"]} + queued {net["tx_queued"]}')
    answered = net['arp_replies'] + net['icmp_replies'] + \
        net['udp_replies'] + net['ignored']
    if answered != net['tx_frames']:
        return f'peer saw {answered} frames, delivered {net["tx_frames"]}'
    # the other direction: every reply the peer made is handed to the NIC,
    # dropped (counted) or held back
    rx = net['rx_frames'] + net['rx_dropped'] + net['rx_queued']
    if net['rx_offered'] != rx:
        return (f'peer offered {net["rx_offered"]} != to the NIC '
                f'{net["rx_frames"]} + dropped {net["rx_dropped"]} + held '
                f'{net["rx_queued"]}')
    return None


def main():
    lcvmm, pcnet, e1000 = sys.argv[1:4]
    images = {'pcnet': pcnet, 'e1000': e1000}
    tests = []

    def case(name, fn, needs_kvm=True):
        tests.append((name, fn, needs_kvm))

    base = {}
    params = f'n={N} cpl=3 irq=0'
    for nic in ('pcnet', 'e1000'):
        def clean(nic=nic):
            cmd, p, st = run(lcvmm, images[nic], nic, params, 'peer')
            r = result(p)
            if p.returncode or not r or r[1] != N:
                return f'run without faults: status {p.returncode}, {r}'
            base[nic] = r[2]
            if st['net']['faults'] or st['net']['tx_retries']:
                return f'faults without fault=: {st["net"]}'
            return accounting(st)
        case(f'{nic}: without faults, every frame delivered', clean)

        for seed in (1, 2):
            spec = ('peer,fault=eagain:10%,fault=enobufs:5%,'
                    f'fault=reorder:3%,fault-seed={seed}')

            def transient(nic=nic, spec=spec):
                cmd, p, st = run(lcvmm, images[nic], nic, params, spec)
                r = result(p)
                if p.returncode != 0 or not r or r[:2] != (N, N):
                    return (f'status {p.returncode}, {r}: ' +
                            p.stderr.decode(errors='replace')[-300:])
                if nic in base and r[2] != base[nic]:
                    return f'checksum {r[2]}, without faults {base[nic]}'
                net = st['net']
                if net['tx_dropped'] or net['tx_queued']:
                    return f'transient faults lost frames: {net}'
                if net['faults'] < 20 or net['tx_retries'] < 10:
                    return f'too few faults injected: {net}'
                return accounting(st)
            case(f'{nic}: EAGAIN, ENOBUFS, reorder (seed {seed}) lose '
                 'nothing, same checksum', transient)

        for spec in ('peer,fault=drop:2%,fault=eagain:5%,fault-seed=3',
                     'peer,fault=short:2%,fault=enobufs:5%,fault-seed=4'):
            def lossy(nic=nic, spec=spec):
                cmd, p, st = run(lcvmm, images[nic], nic, params, spec)
                err = p.stderr.decode(errors='replace')
                r = result(p)
                if p.returncode != 5:       # the guest's time-out, code 2
                    return f'status {p.returncode}, want 5: {err[-300:]}'
                if not r or r[0] >= N:
                    return f'the guest finished despite losses: {r}'
                if 'counted in the statistics' not in err:
                    return f'no message about the losses: {err[-300:]}'
                net = st['net']
                if net['tx_dropped'] < 1:
                    return f'nothing counted as dropped: {net}'
                if 'short' in spec and net['tx_short'] < 1:
                    return f'no short write counted: {net}'
                return accounting(st)
            case(f'{nic}: {spec.split(",")[1]} stops the guest, losses '
                 'counted', lossy)

        def rx_lossy(nic=nic):
            spec = 'peer,rxfault=drop:2%,fault-seed=5'
            cmd, p, st = run(lcvmm, images[nic], nic, params, spec)
            r = result(p)
            if p.returncode != 5:
                return f'status {p.returncode}, want 5 (replies lost)'
            if not r or r[0] >= N:
                return f'the guest finished despite lost replies: {r}'
            net = st['net']
            if net['rx_dropped'] < 1 or net['rx_faults'] != net['rx_dropped']:
                return f'lost replies not counted: {net}'
            return accounting(st)
        case(f'{nic}: replies lost on receive (rxfault=drop) stop the '
             'guest, counted', rx_lossy)

        def rx_reorder(nic=nic):
            # one datagram in flight: never a second reply behind the
            # first, so nothing is reordered and nothing changes
            spec = 'peer,rxfault=reorder:50%,fault-seed=6'
            cmd, p, st = run(lcvmm, images[nic], nic, params, spec)
            r = result(p)
            if p.returncode != 0 or not r or r[:2] != (N, N):
                return f'status {p.returncode}, {r}'
            if nic in base and r[2] != base[nic]:
                return f'checksum {r[2]}, without faults {base[nic]}'
            if st['net']['rx_faults'] or st['net']['rx_dropped']:
                return f'reordered with nothing behind: {st["net"]}'
            return accounting(st)
        case(f'{nic}: rxfault=reorder with one reply in flight changes '
             'nothing', rx_reorder)

        def stuck(nic=nic):
            cmd, p, st = run(lcvmm, images[nic], nic, params,
                             'peer,fault=eagain:100%')
            if p.returncode != 5:
                return f'status {p.returncode}, want 5'
            net = st['net']
            if net['tx_frames'] != 0 or net['tx_offered'] < 1:
                return f'a host that takes nothing delivered: {net}'
            return accounting(st)
        case(f'{nic}: a host that never takes a frame, all accounted', stuck)

    def deterministic():
        spec = 'peer,fault=eagain:20%,fault=reorder:5%,fault-seed=9'
        got = []
        for _ in range(2):
            cmd, p, st = run(lcvmm, e1000, 'e1000', 'n=60 cpl=3 irq=0', spec,
                             cpu='unicorn')
            if p.returncode:
                return f'status {p.returncode}'
            got.append((st['net']['faults'], st['net']['tx_retries'],
                        st['vmm'].get('guest_insns')))
            why = accounting(st)
            if why:
                return why
        if got[0] != got[1]:
            return f'two runs with one seed differ: {got}'
        return None
    case('unicorn: the same seed, the same faults', deterministic, False)

    for bad in ('peer,fault=bogus:1%', 'peer,fault=eagain:120%',
                'peer,fault=eagain', 'peer,fault=eagain:60%,fault=drop:50%',
                'peer,fault=drop:1%,fault=drop:2%', 'peer,fault-seed=x',
                'peer,fault-seed=1,fault-seed=2', 'peer,fault=',
                'tap,ifname=lcx0,fault=nope:1', 'peer,rxfault=eagain:5%',
                'peer,rxfault=short:1%', 'peer,rxfault=drop'):
        def refused(bad=bad):
            p = subprocess.run([lcvmm, '-q', '-k', pcnet, '--net', bad,
                                '--stats', 'none'], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, timeout=30)
            err = p.stderr.decode(errors='replace')
            if p.returncode != 2 or 'fault' not in err:
                return f'status {p.returncode}: {err.strip()[-200:]}'
            return None
        case(f'--net {bad} refused', refused, False)

    return run_cases(tests)


if __name__ == '__main__':
    sys.exit(main())
