#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Integration test: run one workload's guest on the reference VMM with
clustering off and on, and check that everything the guest can see is
identical (its console output, which carries its replies' checksum, and
its exit code), that it did all its units, while the exits drop.

  run_guest.py LCVMM GUEST_DIR --workload ID --cpu kvm|unicorn [-n UNITS]
               [--expect-saved] [--same-insns] [--extra-arg=ARG ...]

The workload (image, NIC, guest parameters, units per CPU) comes from the
one list the benchmarks and the demo use, bench/lcbench/workloads.py, and
lcvmm runs through the benchmarks' driver (lcbench.lcvmm.invoke).

Exit status 0 pass, 1 fail, 77 skip (with the reason printed), as Meson
expects.
"""
import argparse
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', '..', 'bench'))
from lcbench.lcvmm import (RunError, all_done, describe_status,  # noqa: E402
                           invoke)
from lcbench.util import kvm_usable, parse_result_line  # noqa: E402
from lcbench.workloads import guest_params, workload  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('lcvmm')
    ap.add_argument('guest_dir')
    ap.add_argument('--workload', required=True,
                    help='an id of bench/lcbench/workloads.py')
    ap.add_argument('--cpu', default='kvm', choices=('kvm', 'unicorn'))
    ap.add_argument('-n', type=int, help="units (default: the workload's "
                    'test_n for this CPU)')
    ap.add_argument('--timeout', type=float, default=120)
    ap.add_argument('--expect-saved', action='store_true',
                    help='clustering must save exits')
    ap.add_argument('--same-insns', action='store_true',
                    help='Unicorn: the guest must retire exactly as many '
                    'instructions with clustering as without')
    ap.add_argument('--extra-arg', action='append', default=[],
                    help='an lcvmm argument, as --extra-arg=--nic-opt=none')
    args = ap.parse_args()
    w = workload(args.workload)
    n = args.n if args.n is not None else w['test_n'][args.cpu]
    image = os.path.join(args.guest_dir, w['guest'])
    params = f'{guest_params(w, args.cpu)} n={n}'.strip()

    if args.cpu == 'kvm' and not kvm_usable():
        print('SKIP: /dev/kvm is not usable here; the Unicorn variant of '
              'this test still runs')
        return 77

    results = {}
    for cluster in (False, True):
        try:
            cmd, p, out, stats = invoke(
                args.lcvmm, image, w['nic'], args.cpu, params,
                args.extra_arg + ([] if cluster else ['--no-cluster']),
                timeout=args.timeout)
        except RunError as e:
            print(f'FAIL: {e}')
            return 1
        tag = 'on' if cluster else 'off'
        print(f'--- clustering {tag}: {" ".join(cmd)}')
        print(out, end='')
        sys.stdout.write(p.stderr.decode(errors='replace'))
        if p.returncode != 0:
            print(f'FAIL: {describe_status(p.returncode)} with clustering '
                  f'{tag}')
            return 1
        if not stats:
            print(f'FAIL: no statistics from {" ".join(cmd)}')
            return 1
        result = parse_result_line(out)
        want = dict(w.get('expect', {}))
        if not all_done(result, n) or any(result.get(k) != v
                                          for k, v in want.items()):
            print(f'FAIL: result line {result or "missing"}: not all {n} '
                  f'units done{" or not " + str(want) if want else ""}')
            return 1
        results[tag] = (out, stats)

    off_out, off = results['off']
    on_out, on = results['on']
    if off_out != on_out:
        print('FAIL: the guest saw different results with clustering on')
        return 1
    if not off_out.strip():
        print('FAIL: the guest printed nothing')
        return 1
    e_off, e_on = off['vmm']['exits'], on['vmm']['exits']
    lc = on.get('libcluster', {})
    saved = lc.get('exits_saved', 0)
    errors = on['vmm']['guest_errors'] + off['vmm']['guest_errors']
    print(f'exits off={e_off} on={e_on} saved={saved} '
          f'translations={lc.get("translations", 0)} '
          f'wall off={off["vmm"]["wall_s"]:.3f}s on={on["vmm"]["wall_s"]:.3f}s')
    if errors:
        print(f'FAIL: {errors} guest errors logged by devices')
        return 1
    if args.same_insns:
        i_off, i_on = off['vmm']['guest_insns'], on['vmm']['guest_insns']
        print(f'guest instructions off={i_off} on={i_on}')
        if i_off != i_on or not i_off:
            print('FAIL: clustering changed the instructions the guest ran')
            return 1
    if args.expect_saved and not (saved > 0 and e_on < e_off):
        print('FAIL: clustering saved no exits')
        return 1
    print('PASS')
    return 0


if __name__ == '__main__':
    sys.exit(main())
