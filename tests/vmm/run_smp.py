#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Integration test: an SMP guest (examples/guests/smp) on lcvmm's KVM
back end with -c N, clustering off and on.

  run_smp.py LCVMM IMAGE --scenario nic|smc|bar|reboot --cpus N [-n UNITS]
             [--extra-arg=ARG ...]

The guest's application processors are started by the guest itself
(INIT/SIPI/SIPI through its local APIC). Both runs must exit 0, print the
same console output (which carries every per-vCPU count and checksum),
and have done all their units:
  nic  every vCPU exchanged n frames with the peer, each checked and in
       order (cpu=K ok=n lines), frames = cpus * n;
  smc  n rewrites of code the other vCPUs run, none of them ever ran a
       stale copy (stale=0 bad=0);
  bar  n BAR moves while the other vCPUs read the device, no read decoded
       at the wrong base (bad=0);
  reboot  (with --extra-arg=--reboot) n resets while the APs run, every
       AP started again at every boot (checkins = (n + 1) * (cpus - 1)),
       and lcvmm counted n reboots.
Each vCPU must have exited (it really ran). Under ThreadSanitizer (the
tsan build of scripts/test.sh) a report is a failure: lcvmm exits 66
with TSAN_OPTIONS=halt_on_error=1, and any report on stderr fails too.
Prints the wall time and the exits per vCPU of each run (for nic, per
frame). Exit status 0 pass, 1 fail, 77 skip.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', '..', 'bench'))
from lcbench.util import kvm_usable, parse_result_line  # noqa: E402


def run(lcvmm, image, nic, cpus, params, extra, timeout):
    with tempfile.TemporaryDirectory() as d:
        sf = os.path.join(d, 'stats.json')
        cmd = [lcvmm, '-q', '-k', image, '-c', str(cpus), '--nic', nic,
               '-p', params, '--timeout', str(timeout),
               '--stats', 'json', '--stats-file', sf] + extra
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=timeout + 60)
        stats = None
        if os.path.exists(sf) and os.path.getsize(sf):
            with open(sf) as f:
                stats = json.load(f)
    return cmd, p, stats


def check_result(scenario, res, cpus, n, out):
    if scenario == 'nic':
        if res.get('frames') != str(cpus * n):
            return f'frames={res.get("frames")}, want {cpus * n}'
        for c in range(cpus):
            line = f'cpu={c} exchanges={n} ok={n} mismatch=0 '
            if line not in out:
                return f'no "{line.strip()}" line'
    elif scenario == 'smc':
        if res.get('rounds') != str(n) or res.get('stale') != '0' or \
                res.get('bad') != '0':
            return f'rounds/stale/bad {res}'
    elif scenario == 'bar':
        if res.get('moves') != str(n) or res.get('bad') != '0':
            return f'moves/bad {res}'
    elif scenario == 'reboot':
        if res.get('boots') != str(n) or \
                res.get('checkins') != str((n + 1) * (cpus - 1)):
            return f'boots/checkins {res}'
    if res.get('cpus') != str(cpus):
        return f'cpus={res.get("cpus")}, want {cpus}'
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('lcvmm')
    ap.add_argument('image')
    ap.add_argument('--scenario', required=True, choices=('nic', 'smc', 'bar',
                                                         'reboot'))
    ap.add_argument('--cpus', type=int, default=2)
    ap.add_argument('-n', type=int, default=30)
    ap.add_argument('--timeout', type=float, default=200)
    ap.add_argument('--extra-arg', action='append', default=[])
    a = ap.parse_args()
    if not kvm_usable():
        print('SKIP: /dev/kvm is not usable here')
        return 77
    nic = 'none' if a.scenario in ('smc', 'reboot') else 'e1000'
    params = f'n={a.n} cpus={a.cpus}'
    outs = {}
    for tag, extra in (('off', ['--no-cluster']), ('on', [])):
        cmd, p, stats = run(a.lcvmm, a.image, nic, a.cpus, params,
                            a.extra_arg + extra, a.timeout)
        out = p.stdout.decode(errors='replace')
        err = p.stderr.decode(errors='replace')
        print(f'--- clustering {tag}: {" ".join(cmd)}')
        print(out, end='')
        for line in err.splitlines():
            if 'unclaimed mmio' not in line:   # bar: reads racing a move
                print(line)
        if p.returncode != 0:
            print(f'FAIL: exit status {p.returncode} with clustering {tag}')
            return 1
        if 'ThreadSanitizer' in err:
            print(f'FAIL: ThreadSanitizer report with clustering {tag}')
            return 1
        why = check_result(a.scenario, parse_result_line(out), a.cpus, a.n,
                           out)
        if why:
            print(f'FAIL: clustering {tag}: {why}')
            return 1
        if not stats:
            print('FAIL: no statistics')
            return 1
        v = stats['vmm']
        if a.scenario == 'reboot' and v.get('reboots') != a.n:
            print(f'FAIL: {v.get("reboots")} reboots, want {a.n}')
            return 1
        per = [v.get(f'exits_vcpu{i}', 0) for i in range(a.cpus)]
        if a.cpus > 1 and not all(per):
            print(f'FAIL: a vCPU never exited: {per}')
            return 1
        line = (f'clustering {tag}: wall {v["wall_s"]:.3f} s, exits '
                f'{v["exits"]}, per vCPU {per}')
        if a.scenario == 'nic':
            line += ', per frame per vCPU ' + ' '.join(
                f'{e / a.n:.2f}' for e in per)
        lc = stats.get('libcluster', {})
        if lc:
            line += (f', saved {lc.get("exits_saved", 0)}, coherency '
                     f'failures {lc.get("coherency_failures", 0)}')
        print(line)
        outs[tag] = out
    if outs['off'] != outs['on']:
        print('FAIL: the guest saw different results with clustering on')
        return 1
    print('PASS')
    return 0


if __name__ == '__main__':
    sys.exit(main())
