#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""lcvmm --stats-interval: while a guest runs, blocks of rates appear on
stderr, parse, and add up to the end-of-run statistics.

  stats_live.py LCVMM GUEST_PCNET_IMAGE

For each back end (KVM skipped with the reason where /dev/kvm is unusable):
  - the guest's console (stdout) has no statistics in it and its exit
    status is 0;
  - several blocks, each a header `lcvmm stats  t=T s  interval=D s`, the
    last one, and only it, marked `final`; t grows by the interval;
  - every counter line parses, its rate is its delta over the interval;
  - the deltas of each of lcvmm's exits, the engine's exits handled and
    saved and (KVM) KVM's own exits and traps add up exactly to the totals
    of the end-of-run JSON: the final block covers the last, partial
    interval;
  - the kvm section is there on KVM and never on Unicorn.
TAP output.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', '..', 'bench'))
from lcbench.util import kvm_usable  # noqa: E402

HEAD = re.compile(r'^lcvmm stats  t=([0-9.]+)s  interval=([0-9.]+)s(  final)?$')
LINE = re.compile(r'^  (\S+) +(\S+) +(-?[0-9.]+)/s +(-?[0-9]+)$')

# (section, counter) whose deltas must add up to the final total
SUMMED = [('vmm', 'exits'), ('vmm', 'exits_io'),
          ('vmm', 'exits_handled_by_engine'),
          ('libcluster', 'exits_saved'), ('libcluster', 'exits_seen')]
SUMMED_KVM = [('kvm', 'exits'), ('kvm', 'io_exits'), ('kvm', 'user_exits'),
              ('kvm', 'traps')]


def parse(err):
    """The blocks of stderr: [(t, interval, final, {(sec, key): (rate,
    delta)})]; raises ValueError on a line inside a block that does not
    parse."""
    blocks = []
    inside = False
    for line in err.splitlines():
        m = HEAD.match(line)
        if m:
            blocks.append((float(m[1]), float(m[2]), bool(m[3]), {}))
            inside = True
            continue
        inside = inside and line.startswith('  ')
        if inside:
            m = LINE.match(line)
            if not m:
                raise ValueError(f'unparsable line {line!r}')
            blocks[-1][3][(m[1], m[2])] = (float(m[3]), int(m[4]))
    return blocks


def check(lcvmm, image, cpu, params, interval):
    """Returns a list of problems (empty: pass)."""
    problems = []
    with tempfile.TemporaryDirectory() as d:
        sf = os.path.join(d, 'stats.json')
        cmd = [lcvmm, '-q', '-k', image, '-n', 'pcnet', '--cpu', cpu,
               '-p', params, '--stats', 'json', '--stats-file', sf,
               '--stats-interval', str(interval), '--timeout', '120']
        p = subprocess.run(cmd, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=180)
        out = p.stdout.decode(errors='replace')
        err = p.stderr.decode(errors='replace')
        if p.returncode != 0:
            return [f'exit status {p.returncode}: {err[-2000:]}']
        with open(sf) as f:
            final = json.load(f)
    if 'lcvmm stats' in out:
        problems.append('statistics on the guest console (stdout)')
    try:
        blocks = parse(err)
    except ValueError as e:
        return [str(e)]
    if len(blocks) < 3:
        return [f'{len(blocks)} blocks, expected several:\n{err[:3000]}']
    finals = [i for i, b in enumerate(blocks) if b[2]]
    if finals != [len(blocks) - 1]:
        problems.append(f'final blocks at {finals} of {len(blocks)}')
    prev_t = 0.0
    for t, dt, _, rows in blocks:
        if abs((t - prev_t) - dt) > 0.0015:
            problems.append(f'block at t={t}: interval {dt} but '
                            f'{t - prev_t:.3f} since the last')
        prev_t = t
        if ('vmm', 'exits') not in rows:
            problems.append(f'block at t={t} has no vmm exits line')
        for (sec, key), (rate, delta) in rows.items():
            # t and the interval are printed to the ms, the rate to 0.1
            lo, hi = dt - 0.0005, dt + 0.0005
            if lo <= 0:
                continue
            if not (min(delta / lo, delta / hi) - 0.06 <= rate <=
                    max(delta / lo, delta / hi) + 0.06):
                problems.append(f'{sec}.{key} at t={t}: rate {rate} is not '
                                f'{delta}/{dt}')
    has_kvm = any(sec == 'kvm' for b in blocks for sec, _ in b[3])
    if cpu == 'kvm' and not has_kvm:
        problems.append('no kvm section on KVM')
    if cpu != 'kvm' and has_kvm:
        problems.append('a kvm section on Unicorn')
    summed = SUMMED + (SUMMED_KVM if cpu == 'kvm' else [])
    for sec, key in summed:
        total = sum(b[3].get((sec, key), (0, 0))[1] for b in blocks)
        want = final.get(sec, {}).get(key)
        if want is None or total != want:
            problems.append(f'{sec}.{key}: deltas add up to {total}, the '
                            f'end-of-run statistics say {want}')
    if final['vmm']['exits'] == 0:
        problems.append('the guest made no exits')
    return problems


def main():
    lcvmm, image = sys.argv[1], sys.argv[2]
    cases = [
        # cpu, guest parameters (long enough for several 0.2 s intervals)
        ('kvm', 'cpl=3 irq=0 n=12000'),
        ('unicorn', 'cpl=3 irq=0 n=4000'),
    ]
    failed = 0
    for i, (cpu, params) in enumerate(cases, 1):
        if cpu == 'kvm' and not kvm_usable():
            print(f'ok {i} - {cpu} # SKIP /dev/kvm is not usable here')
            continue
        problems = check(lcvmm, image, cpu, params, 0.2)
        print(f'{"not ok" if problems else "ok"} {i} - {cpu}: live blocks '
              'parse and add up to the final statistics')
        for pr in problems:
            print('# ' + pr.replace('\n', '\n# '))
        failed += bool(problems)
    print(f'1..{len(cases)}')
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
