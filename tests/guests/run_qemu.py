#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Boot the libcluster guests (examples/guests) under QEMU and check them.

Not part of the Meson test suite (QEMU is not a test dependency): run it
by hand after building the guests and lcvmm-peer,

    ninja -C build/dev
    tests/guests/run_qemu.py --build build/dev            # KVM
    tests/guests/run_qemu.py --build build/dev --accel tcg

The cases are the workloads of bench/lcbench/workloads.py (the list the
benchmarks, the demo and the suite's guest tests use), each in its KVM
parameters and, where they differ, its poll-mode (Unicorn) ones. QEMU's
command line and the network peer are the benchmarks' (lcbench/qemu.py):
the NIC guests talk to lcvmm-peer, the reference VMM's built-in peer as a
process, over -netdev dgram; the PAE guest's e1000 and the NIC the BIOS
guest scans on bus 0 get an isolated slirp. It checks QEMU's exit status
(isa-debug-exit: (code << 1) | 1, so 1 means the guest wrote 0), that the
guest's result line echoes its parameters and counts all its units, and
that all NIC runs agree on the checksum (it depends only on n, size and
seed).
"""
import argparse
import contextlib
import os
import subprocess
import sys
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', '..', 'bench'))
from lcbench import qemu  # noqa: E402
from lcbench.lcvmm import all_done  # noqa: E402
from lcbench.util import parse_result_line  # noqa: E402
from lcbench.workloads import WORKLOADS, guest_dir  # noqa: E402


def cases(n):
    """(workload, guest parameters) to boot: every workload as the KVM
    benchmarks run it, plus its poll-mode variant where that differs."""
    out = []
    for w in WORKLOADS:
        for params in dict.fromkeys((w['params'], w['unicorn_params'])):
            out.append((w, f'n={n} {params}'.strip()))
    return out


def expected(w, params, n):
    """What the result line must say: the parameters echoed (cpl, irq),
    all n units done, and the workload's own expectations."""
    want = dict(p.split('=', 1) for p in params.split() if not
                p.startswith('n='))
    if w['unit'] == 'exchange':
        want['exchanges'] = str(n)
    want.update(w.get('expect', {}))
    return want


def run_case(args, w, params, peer_bin):
    image = os.path.join(guest_dir(args.build), w['guest'])
    nic = w['nic'] if w['nic'] != 'none' else 'e1000'
    peer = qemu.Peer(peer_bin) if w['unit'] == 'exchange' else None
    with peer or contextlib.nullcontext():
        netdev = peer.netdev if peer else qemu.NETDEV_ISOLATED
        cmd = qemu.command(args.qemu, image, nic, params, netdev, args.accel)
        t0 = time.monotonic()
        try:
            p = subprocess.run(cmd, stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               timeout=args.timeout)
            out, rc = p.stdout.decode(errors='replace'), p.returncode
            err = p.stderr.decode(errors='replace')
        except subprocess.TimeoutExpired as e:
            out = (e.stdout or b'').decode(errors='replace')
            err, rc = f'timed out after {args.timeout}s', None
    elapsed = time.monotonic() - t0
    out = out.replace('\r', '')
    return (rc, out, err, elapsed, parse_result_line(out),
            peer.counters if peer else None)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--build', default='build/dev', help='Meson build dir')
    ap.add_argument('--qemu', default=qemu.QEMU)
    ap.add_argument('--accel', default='kvm', choices=['kvm', 'tcg'])
    ap.add_argument('-n', type=int, default=100,
                    help='exchanges / passes / rounds')
    ap.add_argument('--timeout', type=int, default=300,
                    help='seconds per case')
    ap.add_argument('--only', nargs='*',
                    help='workload ids to run (bench/lcbench/workloads.py)')
    ap.add_argument('-v', '--verbose', action='store_true',
                    help="print each guest's output")
    args = ap.parse_args()
    peer_bin = qemu.peer_path(args.build)
    if not os.path.exists(peer_bin):
        print(f'{peer_bin} not built (examples/vmm/backends)')
        return 1

    todo = [c for c in cases(args.n)
            if not args.only or c[0]['id'] in args.only]
    failures = 0
    checksums = set()
    print('%-11s %-22s %-6s %8s  %s' % ('workload', 'cmdline', 'status',
                                        'time', 'result'))
    for w, params in todo:
        rc, out, err, elapsed, result, counters = run_case(args, w, params,
                                                           peer_bin)
        problems = []
        if rc != 1:
            problems.append(f'QEMU exit status {rc} (want 1: guest exit '
                            'code 0)')
        if not result:
            problems.append('no result line')
        elif not all_done(result, args.n):
            problems.append(f'not all {args.n} units done')
        for k, v in expected(w, params, args.n).items():
            if result.get(k) != v:
                problems.append(f'{k}={result.get(k)} (want {v})')
        if counters is not None and 'checksum' in result:
            checksums.add(result['checksum'])
        shown = ' '.join(f'{k}={v}' for k, v in result.items())
        print('%-11s %-22s %-6s %7.2fs  %s' % (
            w['id'], params, 'ok' if not problems else 'FAIL', elapsed,
            shown), flush=True)
        if counters and (args.verbose or problems):
            print('        peer: ' + counters.replace('\n', '\n        '))
        if problems or args.verbose:
            for p in problems:
                print(f'        problem: {p}')
            print('        --- guest output ---')
            for line in out.splitlines():
                if line.strip():
                    print('        | ' + line)
            if err.strip():
                print('        --- qemu stderr ---')
                for line in err.splitlines():
                    print('        | ' + line)
        failures += bool(problems)
    if len(checksums) > 1:
        print(f'FAIL: NIC runs disagree on the checksum: {sorted(checksums)}')
        failures += 1
    print(f'{failures} case(s) failed' if failures
          else f'all {len(todo)} cases passed')
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
