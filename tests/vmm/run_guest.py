#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Integration test: run one guest on the reference VMM with clustering
off and on, and check that everything the guest can see is identical
(its console output, which carries its replies' checksum, and its exit
code) while the exits drop.

  run_guest.py LCVMM IMAGE --cpu kvm|unicorn [--nic pcnet|e1000|none]
               [--params "n=20 irq=0"] [--expect-saved] [--same-insns]
               [--extra-arg=ARG ...]

Exit status 0 pass, 1 fail, 77 skip (with the reason printed), as Meson
expects.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile


def run(args, lcvmm, image, cluster, extra):
    with tempfile.NamedTemporaryFile(suffix='.json', delete=False) as f:
        stats_path = f.name
    cmd = [lcvmm, '-q', '-k', image, '--cpu', args.cpu, '--nic', args.nic,
           '--stats', 'json', '--stats-file', stats_path,
           '--timeout', str(args.timeout)]
    if args.params:
        cmd += ['-p', args.params]
    if not cluster:
        cmd.append('--no-cluster')
    cmd += extra
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=args.timeout + 30)
    try:
        with open(stats_path) as f:
            stats = json.load(f)
    except (OSError, ValueError) as e:
        stats = None
        print(f'no statistics from {" ".join(cmd)}: {e}')
    finally:
        if os.path.exists(stats_path):
            os.unlink(stats_path)
    return cmd, p, stats


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('lcvmm')
    ap.add_argument('image')
    ap.add_argument('--cpu', default='kvm')
    ap.add_argument('--nic', default='none')
    ap.add_argument('--params', default='')
    ap.add_argument('--timeout', type=float, default=120)
    ap.add_argument('--expect-saved', action='store_true',
                    help='clustering must save exits')
    ap.add_argument('--same-insns', action='store_true',
                    help='Unicorn: the guest must retire exactly as many '
                    'instructions with clustering as without')
    ap.add_argument('--extra-arg', action='append', default=[],
                    help='an lcvmm argument, as --extra-arg=--nic-opt=none')
    args = ap.parse_args()

    if args.cpu == 'kvm':
        try:
            fd = os.open('/dev/kvm', os.O_RDWR)
            os.close(fd)
        except OSError as e:
            print(f'SKIP: /dev/kvm is not usable here ({e.strerror}); '
                  'the Unicorn variant of this test still runs')
            return 77

    results = {}
    for cluster in (False, True):
        cmd, p, stats = run(args, args.lcvmm, args.image, cluster,
                            args.extra_arg)
        tag = 'on' if cluster else 'off'
        print(f'--- clustering {tag}: {" ".join(cmd)}')
        print(p.stdout.decode(errors='replace'), end='')
        sys.stdout.write(p.stderr.decode(errors='replace'))
        if p.returncode != 0:
            print(f'FAIL: guest exit status {p.returncode} with clustering '
                  f'{tag}')
            return 1
        if stats is None:
            return 1
        results[tag] = (p.stdout, stats)

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
