# SPDX-License-Identifier: MIT
"""Per-exit traces on Unicorn: the instructions between exits (the
paper's figure 5), the ideal reduction, and what clustering did.

The ideal: an ideal translator with a 16-instruction reach would absorb
every exit that comes at most 16 guest instructions after the previous
one, so every run of consecutive exits whose gaps are <= 16 collapses into
one exit. Ideal exits = exits whose gap is > 16 (the first one counts).

Two exit streams are derived from one Unicorn trace:
- raw: every port and MMIO access exits (Unicorn has no coalescing);
- kvm-like: the same minus the writes KVM never reports to lcvmm, the
  NIC's latch registers that lcvmm registers as coalesced zones
  (--nic-opt latch, docs/vmm.md). They are found empirically: written
  (kind, address) pairs that appear in the Unicorn trace but not once in
  a KVM trace of the same guest with clustering off. The gap of a dropped
  exit is added to the next exit's gap (both count guest instructions).
The kvm-like stream is the one compared with the KVM measurements.
"""
import collections
import csv
import gzip
import os
import shutil

from . import lcvmm
from .util import log

GAP_MAX = 16            # section 4: the translator looks 16 instructions ahead


def read_trace(path):
    """[(gap, key, handled, cluster_insns)] from lcvmm --trace-file, where
    key = (kind, address, is_write)."""
    rows = []
    with open(path, newline='') as f:
        for r in csv.DictReader(f):
            rows.append((int(r['gap']), (r['kind'], r['addr'], r['write']),
                         int(r['handled']), int(r['cluster_insns'])))
    return rows


def kvm_like(rows, latch):
    """Drop the coalesced latch writes, folding their gaps forward."""
    out, carry = [], 0
    for gap, key, handled, ci in rows:
        if key in latch:
            carry += max(gap, 0)
            continue
        out.append((gap + carry, key, handled, ci))
        carry = 0
    return out


def ideal_count(rows):
    return sum(1 for i, (gap, *_rest) in enumerate(rows)
               if i == 0 or gap > GAP_MAX)


def gap_hist(rows):
    return collections.Counter(gap for gap, *_rest in rows)


def latch_keys(unicorn_rows, kvm_rows):
    seen_on_kvm = {key for _g, key, *_r in kvm_rows}
    return {key for _g, key, *_r in unicorn_rows
            if key[2] == '1' and key not in seen_on_kvm}


def trace_run(build, wl, n, args, cpu, path, unicorn):
    """One traced run; the trace is kept gzipped beside the results (the
    nested model replays it)."""
    stats = lcvmm.run(build, wl, n, args, cpu=cpu, trace=path,
                      unicorn=unicorn)
    rows = read_trace(path)
    with open(path, 'rb') as src, gzip.open(path + '.gz', 'wb') as dst:
        shutil.copyfileobj(src, dst)
    os.unlink(path)
    return stats, rows


def measure_workload(build, wl, workdir):
    """Unicorn traces with clustering off and on at two n; KVM traces
    (untimed) with clustering off, to learn the coalesced latch writes,
    and on at the KVM n values, to count the reads the engine handled
    (each costs one more KVM_RUN here, docs/kvm.md). Returns per-unit
    figures and the steady-state gap histogram."""
    n1, n2 = wl['un1'], wl['un2']
    path = lambda tag: os.path.join(workdir, f'{wl["id"]}-{tag}.csv')
    off_args = ['--no-cluster']
    on_args = ['--cluster', 'all', '--cflow', 'm3']
    t = {}
    for tag, n, args in (('off1', n1, off_args), ('off2', n2, off_args),
                         ('on1', n1, on_args), ('on2', n2, on_args)):
        t[tag] = trace_run(build, wl, n, args, 'unicorn', path(tag), True)
    _s, kvm_off = trace_run(build, wl, n1, off_args, 'kvm', path('kvm-off'),
                            False)
    _s, kvm_on1 = trace_run(build, wl, wl['n1'], on_args, 'kvm',
                            path('kvm-on1'), False)
    _s, kvm_on2 = trace_run(build, wl, wl['n2'], on_args, 'kvm',
                            path('kvm-on2'), False)
    out = derive(wl, t, latch_keys(t['off2'][1], kvm_off))
    out['kvm_on_handled_reads'] = per_unit(
        _handled_reads(kvm_on1), _handled_reads(kvm_on2), wl['n2'] - wl['n1'])
    return out


def _handled_reads(rows):
    return sum(1 for _g, key, handled, _c in rows if handled and key[2] == '0')


def per_unit(a, b, dn):
    return (b - a) / dn


def derive(wl, t, latch):
    dn = wl['un2'] - wl['un1']
    (s_off1, off1), (s_off2, off2) = t['off1'], t['off2']
    (s_on1, on1), (s_on2, on2) = t['on1'], t['on2']
    k1, k2 = kvm_like(off1, latch), kvm_like(off2, latch)
    steady = gap_hist(k2) - gap_hist(k1)    # Counter drops counts <= 0
    if not steady:                          # nothing scales with n: whole run
        steady = gap_hist(k2)
    return dict(
        n=(wl['un1'], wl['un2']),
        params=wl['unicorn_params'],
        latch_writes=address_ranges(latch),
        guest_insns=per_unit(s_off1['guest_insns'], s_off2['guest_insns'],
                             dn),
        exits_raw=per_unit(len(off1), len(off2), dn),
        exits_kvm_like=per_unit(len(k1), len(k2), dn),
        ideal_raw=per_unit(ideal_count(off1), ideal_count(off2), dn),
        ideal_kvm_like=per_unit(ideal_count(k1), ideal_count(k2), dn),
        on_exits=per_unit(len(on1), len(on2), dn),
        on_cluster_runs=per_unit(_cluster_runs(on1), _cluster_runs(on2), dn),
        on_cluster_insns=per_unit(sum(r[3] for r in on1),
                                  sum(r[3] for r in on2), dn),
        on_engine_saved=per_unit(s_on1['saved'], s_on2['saved'], dn),
        gap_hist_steady={str(k): v for k, v in sorted(steady.items())},
    )


def address_ranges(keys):
    """Written addresses as compact 'kind lo-hi' ranges (4-byte steps merge),
    for the report: e1000 has ~140 latch registers."""
    by_kind = collections.defaultdict(list)
    for kind, addr, _w in keys:
        by_kind[kind].append(int(addr, 16))
    out = []
    for kind, addrs in sorted(by_kind.items()):
        addrs.sort()
        lo = prev = addrs[0]
        for a in addrs[1:] + [None]:
            if a is not None and a - prev <= 4:
                prev = a
                continue
            out.append(f'{kind} {lo:#x}' + (f'-{prev:#x}' if prev != lo else ''))
            if a is not None:
                lo = prev = a
    return out


def _cluster_runs(rows):
    """Exits the engine handled with a translation (cluster_insns > 0)."""
    return sum(1 for r in rows if r[2] and r[3] > 0)


def measure_all(build, workloads, workdir):
    os.makedirs(workdir, exist_ok=True)
    out = {}
    for wl in workloads:
        log(f'traces: {wl["id"]} on Unicorn ({wl["unicorn_params"] or "-"}, '
            f'n={wl["un1"]},{wl["un2"]})')
        try:
            out[wl['id']] = measure_workload(build, wl, workdir)
        except lcvmm.RunError as e:
            log(f'  {wl["id"]}: trace runs FAILED: {e}')
            out[wl['id']] = dict(error=str(e))
    return out
