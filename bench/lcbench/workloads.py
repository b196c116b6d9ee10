# SPDX-License-Identifier: MIT
"""The workloads, the clustering configurations, and the interleaved
measurement of every (workload, configuration) pair on KVM.

WORKLOADS is the one list of guest workloads: the benchmarks measure it,
scripts/nic_demo.py shows its NIC workloads ('demo_scale'), the Meson
suite's guest tests run its entries through tests/vmm/run_guest.py
('test_n') and tests/guests/run_qemu.py boots its images under QEMU.

Method (the report's "Method" section says the same in prose):
- Each measurement is a pair of runs with n1 and n2 units (exchanges,
  passes, rounds). Per-unit figures are (x(n2) - x(n1)) / (n2 - n1), which
  removes everything that does not scale with n: VMM start-up, guest boot,
  NIC bring-up, ARP, the console output at the start and the end.
- Rounds interleave the configurations (off, on, techniques...) and flip
  the order every round, so slow drifts of this shared machine (other
  engineers build on it) hit every side alike.
- Every figure is the median over rounds, with min/max and quartiles.
"""
import os

from . import lcvmm
from .util import log, summary, ratio, med

# n pairs are chosen so the n2 run takes ~0.5-1 s on this machine (CPL 0
# code is emulated here at ~0.3-0.6 us per instruction, so the CPL 0
# workloads get few units). 'unicorn_n' is for the trace runs on Unicorn,
# which runs every mode at the same (emulated) speed. 'qemu_n' is for
# QEMU (lcbench/qemu.py): PCnet under QEMU loses an exchange every few
# hundred (the guest counts an rx error and times out), so its n is small;
# the in-run timing keeps that precise enough. 'test_n' is the units of
# the suite's off/on comparison per CPU (tests/vmm/run_guest.py), small so
# the suite stays fast. 'demo_scale' multiplies the demo's -n: CPL 3 poll
# mode runs at native speed on KVM, so it gets 10x the exchanges.
# 'expect' is what the guest's result line must also say.
WORKLOADS = [
    dict(id='pcnet-cpl3', label='PCnet, CPL 3 poll', guest='guest-pcnet.bin',
         nic='pcnet', params='cpl=3 irq=0', unicorn_params='cpl=3 irq=0',
         unit='exchange', n=dict(full=(600, 6000), quick=(200, 800)),
         unicorn_n=dict(full=(50, 250), quick=(20, 80)),
         qemu_n=dict(full=(20, 150), quick=(20, 100)),
         test_n=dict(kvm=20, unicorn=10), demo_scale=10),
    dict(id='e1000-cpl3', label='e1000, CPL 3 poll', guest='guest-e1000.bin',
         nic='e1000', params='cpl=3 irq=0', unicorn_params='cpl=3 irq=0',
         unit='exchange', n=dict(full=(800, 8000), quick=(200, 1000)),
         unicorn_n=dict(full=(50, 250), quick=(20, 80)),
         qemu_n=dict(full=(200, 3000), quick=(100, 1000)),
         test_n=dict(kvm=20, unicorn=10), demo_scale=10),
    # Unicorn has no interrupt controller: its traces of the CPL 0 guests
    # are taken in poll mode (irq=0), the KVM runs use interrupts (irq=1).
    dict(id='pcnet-cpl0', label='PCnet, CPL 0 irq', guest='guest-pcnet.bin',
         nic='pcnet', params='cpl=0 irq=1', unicorn_params='cpl=0 irq=0',
         unit='exchange', n=dict(full=(8, 40), quick=(4, 16)),
         unicorn_n=dict(full=(50, 250), quick=(20, 80)),
         qemu_n=dict(full=(5, 40), quick=(5, 20)),
         test_n=dict(kvm=20, unicorn=10), demo_scale=1),
    dict(id='e1000-cpl0', label='e1000, CPL 0 irq', guest='guest-e1000.bin',
         nic='e1000', params='cpl=0 irq=1', unicorn_params='cpl=0 irq=0',
         unit='exchange', n=dict(full=(8, 40), quick=(4, 16)),
         unicorn_n=dict(full=(50, 250), quick=(20, 80)),
         qemu_n=dict(full=(5, 40), quick=(5, 20)),
         test_n=dict(kvm=20, unicorn=10), demo_scale=1),
    dict(id='bios16', label='BIOS 16-bit (s4)', guest='guest-bios16.bin',
         nic='none', params='', unicorn_params='', unit='pass',
         n=dict(full=(50, 500), quick=(20, 80)),
         unicorn_n=dict(full=(20, 100), quick=(10, 40)),
         test_n=dict(kvm=10, unicorn=5)),
    dict(id='pae', label='PAE pairs (s3)', guest='guest-pae.bin',
         nic='e1000', params='', unicorn_params='', unit='round',
         n=dict(full=(400, 4800), quick=(200, 800)),
         unicorn_n=dict(full=(100, 500), quick=(50, 200)),
         test_n=dict(kvm=20, unicorn=10), expect=dict(mismatches='0')),
]

# The engine forms multi-instruction clusters only with static formation
# (translator/form.c): 'dynamic' adds the exit-tracking predictions to it,
# so its row is static+dynamic and its gain over 'static' is section 5's.
# Every technique needs 'single' (the translation cache itself); 'smc'
# (self-modifying-code stops) is a safety net, on everywhere.
CONFIGS = [
    dict(id='off', label='off', args=['--no-cluster']),
    dict(id='all', label='on (all, m3)', args=['--cluster', 'all',
                                               '--cflow', 'm3']),
    dict(id='single', label='single only', args=['--cluster', 'single,smc']),
    dict(id='pairs', label='pairs only', args=['--cluster',
                                               'single,pairs,smc']),
    dict(id='static', label='static only', args=['--cluster',
                                                 'single,static,smc']),
    dict(id='dynamic', label='static+dynamic',
         args=['--cluster', 'single,static,dynamic,smc']),
    dict(id='cflow-none', label='all, cflow none',
         args=['--cluster', 'all', '--cflow', 'none']),
    dict(id='m1', label='all, m1', args=['--cluster', 'all', '--cflow', 'm1']),
    dict(id='m2', label='all, m2', args=['--cluster', 'all', '--cflow', 'm2']),
]
MAIN_CONFIGS = ('off', 'all')


def config(cid):
    return next(c for c in CONFIGS if c['id'] == cid)


def workload(wid):
    """The workload with id `wid` (KeyError if there is none)."""
    for w in WORKLOADS:
        if w['id'] == wid:
            return w
    raise KeyError(f'no workload {wid!r}; there are '
                   f'{", ".join(w["id"] for w in WORKLOADS)}')


def guest_dir(build):
    return os.path.join(build, 'examples', 'guests')


def guest_params(w, cpu):
    """The guest's parameters on `cpu`: Unicorn has no interrupt
    controller, so it runs every guest in poll mode."""
    return w['unicorn_params'] if cpu == 'unicorn' else w['params']


def demo_workloads():
    """The NIC workloads of the demo, PCnet first."""
    return sorted((w for w in WORKLOADS if 'demo_scale' in w),
                  key=lambda w: w['nic'] != 'pcnet')


def with_paths(build, mode):
    """The workloads whose guest image exists in this build, with paths
    and the n values of this mode; the missing ones are returned apart."""
    gdir = guest_dir(build)
    ready, missing = [], []
    for w in WORKLOADS:
        w = dict(w, image=os.path.join(gdir, w['guest']))
        w['n1'], w['n2'] = w['n'][mode]
        w['un1'], w['un2'] = w['unicorn_n'][mode]
        if 'qemu_n' in w:
            w['qn1'], w['qn2'] = w['qemu_n'][mode]
        (ready if os.path.exists(w['image']) else missing).append(w)
    return ready, missing


def round_order(rnd, rounds_tech):
    """Configurations of round `rnd`: off and all every round, the
    technique variants in the first `rounds_tech` rounds; reversed every
    other round."""
    ids = list(MAIN_CONFIGS)
    if rnd < rounds_tech:
        ids += [c['id'] for c in CONFIGS if c['id'] not in MAIN_CONFIGS]
    return ids if rnd % 2 == 0 else ids[::-1]


def measure_workload(build, wl, rounds, rounds_tech):
    """All runs of one workload, interleaved; returns the raw run list."""
    runs = []
    for rnd in range(rounds):
        for i, cid in enumerate(round_order(rnd, rounds_tech)):
            ns = (wl['n1'], wl['n2'])
            if (rnd + i) % 2:
                ns = ns[::-1]
            for n in ns:
                runs.append(one_run(build, wl, cid, rnd, n))
    return runs


def one_run(build, wl, cid, rnd, n):
    rec = dict(config=cid, round=rnd, n=n)
    try:
        rec.update(lcvmm.run(build, wl, n, config(cid)['args']))
    except lcvmm.RunError as e:
        rec['error'] = str(e)
        log(f'  {wl["id"]} {cid} n={n}: FAILED: {e}')
    return rec


def per_unit_rounds(runs, cid, n1, n2):
    """Per round, per unit: time (s), exits, and the engine's counters
    (exits saved, exits handled by a translation, instructions run in
    clusters)."""
    by = {}
    for r in runs:
        if r['config'] == cid and 'error' not in r:
            by.setdefault(r['round'], {})[r['n']] = r
    out = {}
    dn = n2 - n1
    for rnd, pair in by.items():
        if n1 in pair and n2 in pair:
            a, b = pair[n1], pair[n2]
            out[rnd] = dict(
                time_s=(b['wall_s'] - a['wall_s']) / dn,
                exits=(b['exits'] - a['exits']) / dn,
                saved=(b['saved'] - a['saved']) / dn,
                translated=(b['translated'] - a['translated']) / dn,
                cluster_insns=(b['cluster_insns'] - a['cluster_insns']) / dn)
    return out


def summarize_rounds(rounds):
    vals = list(rounds.values())
    return dict(rounds=len(vals),
                time_us=summary([r['time_s'] * 1e6 for r in vals]),
                exits=summary([r['exits'] for r in vals]),
                engine_saved=summary([r['saved'] for r in vals]),
                translated=summary([r['translated'] for r in vals]),
                cluster_insns=summary([r['cluster_insns'] for r in vals]))


def derive(wl, runs):
    """Per-configuration summaries, and against 'off': the speed-up
    (median of the same-round ratios) and the exits avoided per unit
    (difference of the medians)."""
    per = {c['id']: per_unit_rounds(runs, c['id'], wl['n1'], wl['n2'])
           for c in CONFIGS}
    off_rounds = per['off']
    res = {}
    if off_rounds:
        res['off'] = summarize_rounds(off_rounds)
    for c in CONFIGS[1:]:
        rounds = per[c['id']]
        if not rounds:
            continue
        d = summarize_rounds(rounds)
        if 'off' in res:
            # Paired by round (same machine state): the median of the
            # per-round ratios is the speed-up; the ratio of the median
            # times is kept for reference.
            d['speedup_rounds'] = summary(
                [ratio(off_rounds[k]['time_s'], rounds[k]['time_s'])
                 for k in rounds if k in off_rounds])
            d['speedup'] = med(d['speedup_rounds'])
            d['speedup_of_medians'] = ratio(med(res['off']['time_us']),
                                            med(d['time_us']))
            d['exits_reduction'] = med(res['off']['exits']) - med(d['exits'])
        res[c['id']] = d
    res['output_mismatches'] = output_mismatches(runs)
    return res


def output_mismatches(runs):
    """Runs whose guest result line differs from the 'off' run with the
    same n: clustering must not change what the guest computes."""
    ref = {}
    for r in runs:
        if r['config'] == 'off' and 'error' not in r:
            ref.setdefault(r['n'], r['result'])
    bad = []
    for r in runs:
        if 'error' in r or r['n'] not in ref:
            continue
        if r['result'] != ref[r['n']]:
            bad.append(dict(config=r['config'], round=r['round'], n=r['n'],
                            got=r['result'], want=ref[r['n']]))
    return bad
