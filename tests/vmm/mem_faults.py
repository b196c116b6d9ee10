#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Integration test: KVM refusing guest memory ends lcvmm cleanly.

Loads fault_preload.so into lcvmm (LD_PRELOAD) to make the N-th
KVM_SET_USER_MEMORY_REGION fail with a chosen errno, and checks that
lcvmm then stops with exit status 2 and a message naming what failed (the
ioctl and the kernel's reason, libcluster's probe, or the PAM remap of
the firmware platform), never crashes, never reports a sanitizer error,
and that a run where no registration fails is unaffected:
  - a Multiboot guest: its RAM slot (call 1) with ENOMEM, EEXIST, EINVAL,
    EFAULT; libcluster's KVM probe (call 2, it maps a scratch VM);
  - the exit-cost calibration's scratch VM (call 1 without --exit-cost):
    lcvmm says it could not measure, keeps the paper's cap and runs;
  - with --bios: each of the firmware map's slots (calls 1-8), and every
    registration from the 9th on, which fails the PAM remap SeaBIOS asks
    for while it runs.

  mem_faults.py LCVMM PRELOAD_SO E1000_IMAGE

TAP output; skipped (exit 77 protocol-free: every case SKIP) without
/dev/kvm.
"""
import errno
import os
import subprocess
import sys

from vmmtest import Skip, run_cases

BIOS = '/usr/share/seabios/bios.bin'


def run(lcvmm, preload, spec, args, timeout=60):
    env = dict(os.environ)
    env['LD_PRELOAD'] = preload
    env['LCFAULT_MEMSLOT'] = spec
    # an ASan build wants its runtime first; the hook only forwards
    env['ASAN_OPTIONS'] = (env.get('ASAN_OPTIONS', '') +
                           ':verify_asan_link_order=0').lstrip(':')
    p = subprocess.run([lcvmm, '-q', '--stats', 'none'] + args, env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=timeout)
    return p.returncode, p.stdout.decode(errors='replace'), \
        p.stderr.decode(errors='replace')


def clean(rc, err):
    if rc < 0:
        return f'killed by signal {-rc}'
    if 'Sanitizer' in err or 'runtime error' in err:
        return 'sanitizer report: ' + err[-400:]
    return None


def main():
    lcvmm, preload, e1000 = sys.argv[1:4]
    # (--exit-cost 0: no calibration VM, whose slot would come first)
    guest = ['-k', e1000, '--nic', 'e1000', '-p', 'n=5 cpl=3 irq=0',
             '--exit-cost', '0']
    cases = []
    for e in (errno.ENOMEM, errno.EEXIST, errno.EINVAL, errno.EFAULT):
        cases.append((f'guest RAM slot refused ({errno.errorcode[e]})',
                      f'1:{e}', guest, 2,
                      ['KVM_SET_USER_MEMORY_REGION', os.strerror(e)]))
    cases.append(('libcluster probe slot refused', '2', guest, 2,
                  ['libcluster KVM probe']))
    cases.append(('no probe without clustering: the guest runs', '2',
                  guest + ['--no-cluster'], 0, ['']))
    cases.append(('no registration refused: the guest runs', '3', guest, 0,
                  ['']))
    cases.append(('exit-cost calibration slot refused: the guest runs', '1',
                  guest[:-2], 0, ['']))
    have_bios = os.path.exists(BIOS)
    fw = ['--bios', BIOS, '--rom', 'none', '--debugcon', '/dev/null',
          '--timeout', '30', '--exit-cost', '0']
    for n in range(1, 9):
        cases.append((f'--bios: firmware map slot {n} refused', f'{n}:12',
                      fw, 2, ['KVM_SET_USER_MEMORY_REGION',
                              os.strerror(12)]))
    cases.append(('--bios: PAM remap refused while SeaBIOS runs', '9+',
                  fw + ['--no-cluster'], 2, ['cannot remap']))

    def check(spec, args, want, words):
        if '--bios' in args and not have_bios:
            raise Skip(f'no {BIOS} (Debian seabios)')
        rc, out, err = run(lcvmm, preload, spec, args)
        why = clean(rc, err)
        if not why and rc != want:
            why = f'exit status {rc}, want {want}: {err.strip()[-300:]}'
        if not why and want == 0 and 'exchanges=5 ok=5' not in out:
            why = 'the guest did not finish: ' + out[-200:]
        if (not why and '--exit-cost' not in args and '--no-cluster' not in
                args and 'could not measure the exit cost' not in err):
            why = 'no word of the failed calibration: ' + err[-200:]
        if not why and want:
            last = [l for l in err.splitlines() if l.startswith('lcvmm:')]
            if not last or not all(w in last[-1] for w in words):
                why = f'message {last[-1:]!r} does not name {words}'
        return why
    return run_cases([(name, lambda c=c: check(*c), True)
                      for name, *c in cases])


if __name__ == '__main__':
    sys.exit(main())
