#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Integration test: RDTSC as a gap filler in lcvmm (lc_vm_ops.rdtsc).

  rdtsc_cluster.py LCVMM GUEST_TSC_IMAGE

guest-tsc (examples/guests/tsc.c) runs n rounds of
`rdtsc (a); out 0x80; rdtsc (b); out 0x80; rdtsc (c)`, fenced by CPUID,
and fails (exit status 3) if a <= b <= c does not hold in some round.

- clustering off: 2 port exits per round, and the TSC monotonic;
- clustering on: the pair is one cluster with the RDTSC inside, so at
  most n + SLACK port exits (2n if lcvmm gave the engine no rdtsc
  callback, or one that declines: RDTSC would end the cluster), the
  engine handles them, and b, which lcvmm's callback returned (host TSC
  plus the vCPU's KVM TSC offset), lies between the native reads a and c
  in every round;
- the same with -c 2 (vCPU 1 waits for SIPI meanwhile: the offsets are
  read per vCPU, and the callback takes the one of the vCPU whose exit
  the engine runs).

TAP output; KVM cases skip where /dev/kvm is unusable.
"""
import re
import subprocess
import sys

from vmmtest import read_stats, run_cases, stats_path

N = 2000
SLACK = 200     # the boot stub's and the result line's own exits


def run(cmd):
    with stats_path() as path:
        p = subprocess.run(cmd + ['--stats', 'json', '--stats-file', path,
                                  '--timeout', '60'],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=90)
        st = read_stats(path) if p.returncode in (0, 3) else None
        return p.returncode, p.stdout.decode(errors='replace'), \
            p.stderr.decode(errors='replace'), st


def main():
    lcvmm, image = sys.argv[1:3]
    base = [lcvmm, '-q', '-k', image, '--nic', 'none', '-p', f'n={N}']
    tests = []

    def case(extra):
        def t():
            got = {}
            for mode, cl in (('off', ['--no-cluster']), ('on', [])):
                rc, out, err, st = run(base + extra + cl)
                m = re.search(r'guest=tsc rounds=(\d+) backwards=(\d+) '
                              r'max_ab=(\d+) max_bc=(\d+)', out)
                if rc != 0 or not m:
                    return f'clustering {mode}: exit status {rc}: {out!r} {err}'
                if int(m.group(2)):
                    return f'clustering {mode}: TSC went backwards: {out!r}'
                got[mode] = (st['vmm'], m)
            off, on = got['off'][0], got['on'][0]
            if off['exits_io'] < 2 * N:
                return f'{off["exits_io"]} port exits without clustering'
            if on['exits_io'] > N + SLACK:
                return (f'{on["exits_io"]} port exits for {N} rounds: '
                        'RDTSC ends the cluster')
            if on['exits_handled_by_engine'] < N:
                return f'{on["exits_handled_by_engine"]} handled by the engine'
            print(f'# {" ".join(extra) or "1 vCPU"}: port exits '
                  f'{off["exits_io"]} -> {on["exits_io"]} for {N} rounds; '
                  f'max b-a {got["on"][1].group(3)}, c-b '
                  f'{got["on"][1].group(4)} TSC ticks with clustering')
            return None
        return t

    tests.append(('out; rdtsc; out is one exit, TSC monotonic', case([]),
                  True))
    tests.append(('the same with 2 vCPUs', case(['-c', '2']), True))
    return run_cases(tests)


if __name__ == '__main__':
    sys.exit(main())
