#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The NIC demo: run the PCnet and e1000 request/response guests on the
reference VMM with clustering off and on, and print side by side the
exits per exchange, the exits saved and the speed-up.

  nic_demo.py BUILD_DIR [--cpu kvm|unicorn] [-n EXCHANGES] [--repeats N]
              [--json FILE]
"""
import argparse
import json
import os
import subprocess
import sys

sys.dont_write_bytecode = True
# the benchmark suite's lcvmm driver (bench/lcbench/)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', 'bench'))
from lcbench.lcvmm import RunError, invoke  # noqa: E402
from lcbench.util import kvm_usable, parse_result_line  # noqa: E402
# the one workload list (images, NICs, guest parameters, the demo's
# exchanges per -n) of the benchmarks, the demo and the guest tests
from lcbench.workloads import demo_workloads, guest_dir  # noqa: E402


def run(lcvmm, image, nic, params, cpu, cluster):
    """One run; the guest's console output, lcvmm's statistics and the
    exchanges done (all of them answered, or the demo stops)."""
    try:
        cmd, p, out, stats = invoke(lcvmm, image, nic, cpu, params,
                                    [] if cluster else ['--no-cluster'])
    except RunError as e:
        raise SystemExit(f'nic_demo: {e}')
    result = parse_result_line(out)
    if p.returncode != 0 or not stats or \
            result.get('exchanges') != result.get('ok', '-'):
        sys.stderr.write(out + p.stderr.decode(errors='replace'))
        raise SystemExit(f'nic_demo: {" ".join(cmd)} failed (exit status '
                         f'{p.returncode}, not every exchange answered)')
    return out, stats, int(result['ok'])


def steady(lcvmm, image, nic, params, cpu, n, repeats):
    """Per-exchange exits, exits saved and time without the set-up (PCI
    probe, link, ARP, ping): runs of n exchanges minus runs of none, with
    clustering off and on interleaved (this machine is noisy); the time is
    the median over `repeats` pairs of runs."""
    out = {False: None, True: None}
    base = {}
    for cluster in (False, True):
        _, base[cluster], _ = run(lcvmm, image, nic, f'{params} n=0', cpu,
                                  cluster)
    fulls = {False: [], True: []}
    for _ in range(repeats):
        for cluster in (False, True):
            o, full, got = run(lcvmm, image, nic, f'{params} n={n}', cpu,
                               cluster)
            if got != n:
                raise SystemExit(f'nic_demo: {got} exchanges, not {n}')
            out[cluster] = o
            fulls[cluster].append(full)
    res = {}
    for cluster in (False, True):
        full, b = fulls[cluster][0], base[cluster]

        def diff(section, key):
            return (full.get(section, {}).get(key, 0) -
                    b.get(section, {}).get(key, 0)) / n
        us = sorted((f['vmm']['wall_s'] - b['vmm']['wall_s']) / n * 1e6
                    for f in fulls[cluster])
        res[cluster] = dict(exits=diff('vmm', 'exits'),
                            saved=diff('libcluster', 'exits_saved'),
                            us=us[len(us) // 2], us_min=us[0], us_max=us[-1])
    return out[False], out[True], res[False], res[True]


def exit_costs(build):
    """What an exit and a CPL 0 instruction cost on this machine, measured
    now (bench/kvm_costs --quick, well under a second), or None: costs
    drift between days and hosts, so the demo quotes no fixed figure."""
    exe = os.path.join(build, 'bench', 'kvm_costs')
    try:
        p = subprocess.run([exe, '--quick'], capture_output=True, text=True,
                           timeout=60, check=True)
        d = json.loads(p.stdout)
        rt, insn = d['round_trip_ns'], d['insn_ns']
        cpl0 = rt['pio_out_cpl0']['median'] / 1000
        cpl3 = rt['pio_out_cpl3']['median'] / 1000
        per_insn = insn['cpl0']['median'] / 1000
    except (OSError, subprocess.SubprocessError, ValueError, KeyError):
        return None
    return (f'Measured just now (bench/kvm_costs --quick): an exit costs '
            f'{cpl0:.1f} us at CPL 0 and {cpl3:.1f} us\nat CPL 3; CPL 0 '
            f'guest code runs at {per_insn:.2f} us per instruction (this '
            f'host emulates it), so\nat CPL 0 the time per exchange is '
            f'mostly guest code and a saved exit is within the noise.')


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('build')
    ap.add_argument('--cpu', choices=('kvm', 'unicorn'))
    ap.add_argument('-n', type=int, default=100,
                    help='exchanges per run at CPL 0 (10x at CPL 3)')
    ap.add_argument('--repeats', type=int, default=3,
                    help='interleaved off/on pairs; the median time is shown')
    ap.add_argument('--json')
    args = ap.parse_args()
    cpu = args.cpu or ('kvm' if kvm_usable() else 'unicorn')
    lcvmm = os.path.join(args.build, 'examples', 'vmm', 'lcvmm')
    gdir = guest_dir(args.build)
    rows = []
    print(f'== the reference VMM (lcvmm) on {cpu}: UDP echo exchanges '
          f'with the built-in peer, {args.n} per run at CPL 0, '
          f'{10 * args.n} at CPL 3')
    if cpu == 'unicorn':
        print('   (Unicorn has no interrupt controller: poll-mode runs only)')
    hdr = (f'{"guest":18} {"exits/exchange":>16} {"saved/exch":>10} '
           f'{"us/exchange":>17} {"speed-up":>8}  same output')
    print(hdr)
    print(f'{"":18} {"off":>8}{"on":>8} {"":>10} {"off":>8}{"on":>9}')
    print(f'{"":18} (steady state: runs of n exchanges minus runs of none; '
          f'time: median of {args.repeats} interleaved pairs)')
    for w in demo_workloads():
        label, params = w['label'], w['params']
        if cpu == 'unicorn' and 'irq=1' in params:
            continue
        img = os.path.join(gdir, w['guest'])
        n = args.n * w['demo_scale']
        o_out, c_out, off, on = steady(lcvmm, img, w['nic'], params, cpu, n,
                                       args.repeats)
        same = 'yes' if o_out == c_out else 'NO'
        speedup = off['us'] / on['us'] if on['us'] > 0 else float('nan')
        print(f'{label:18} {off["exits"]:8.2f}{on["exits"]:8.2f} '
              f'{on["saved"]:10.2f} {off["us"]:8.1f}{on["us"]:9.1f} '
              f'{speedup:7.2f}x  {same}   '
              f'(time ranges {off["us_min"]:.0f}-{off["us_max"]:.0f} / '
              f'{on["us_min"]:.0f}-{on["us_max"]:.0f})')
        rows.append(dict(workload=label, cpu=cpu, exchanges=n,
                         exits_per_exchange_off=off['exits'],
                         exits_per_exchange_on=on['exits'],
                         saved_per_exchange=on['saved'],
                         us_per_exchange_off=off['us'],
                         us_per_exchange_on=on['us'],
                         us_range_off=[off['us_min'], off['us_max']],
                         us_range_on=[on['us_min'], on['us_max']],
                         same_output=o_out == c_out))
        if o_out != c_out:
            print('nic_demo: the guest saw different results', file=sys.stderr)
            return 1
    if cpu == 'kvm':
        costs = exit_costs(args.build)
        if costs:
            print(costs)
    if args.json:
        with open(args.json, 'w') as f:
            json.dump(rows, f, indent=2)
    return 0


if __name__ == '__main__':
    sys.exit(main())
