#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The libcluster benchmark suite: one command, one report.

  run_all.py [--build build/bench] [--out DIR] [--quick] [--no-qemu]
             [--only ID,ID...] [--nicfast-only]

Writes DIR (default bench/results/<YYYY-MM-DD>/): report.md, results.json,
the PNG plots, and traces/ (the Unicorn exit traces the nested model
replays). Steps, in order:

  1. machine: CPU, kernel, KVM capabilities and measured costs
     (bench/kvm_costs), engine microbenchmarks (bench_engine, bench_runtime)
  2. workloads on KVM with lcvmm: clustering off, on, and each technique,
     interleaved, repeated (lcbench/workloads.py)
  3. exit traces on Unicorn: instructions between exits, the ideal
     reduction (lcbench/traces.py)
  4. QEMU 7.2 on the same guests and peer (lcbench/qemu.py)
  4b. the NIC fast path: lcvmm off/on and QEMU interleaved, exits and
     traps of both counted with the kvm tracepoints (lcbench/nicfast.py)
  5. the nested-virtualization model (nested_model.py)
  6. plots and the report (lcbench/plots.py, lcbench/report.py)

--nicfast-only runs step 4b alone (about 5 minutes) and writes its
section as report.md with results.json.

Runs one benchmark process at a time (this is a shared 2-core machine).
Full run: about 6 minutes; --quick: about 1 (a smoke test: fewer rounds,
smaller n; its figures are not for quoting).
"""
import sys

sys.dont_write_bytecode = True     # keep bench/ free of __pycache__

import argparse   # noqa: E402
import datetime   # noqa: E402
import json       # noqa: E402
import os         # noqa: E402
import subprocess  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from lcbench import analysis, machine, nicfast, qemu, traces, workloads  # noqa: E402
from lcbench.util import elapsed, kvm_usable, log, write_json  # noqa: E402
import nested_model  # noqa: E402
from bench_progress import Progress  # noqa: E402

MODES = dict(full=dict(rounds=9, rounds_tech=4, qemu_rounds=3),
             quick=dict(rounds=2, rounds_tech=1, qemu_rounds=1))


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--build', default=os.path.join(HERE, '..', 'build',
                                                    'bench'),
                    help='Meson build directory (default build/bench)')
    ap.add_argument('--out', help='results directory '
                    '(default bench/results/<date>)')
    ap.add_argument('--quick', action='store_true',
                    help='2-minute smoke run (fewer rounds, smaller n)')
    ap.add_argument('--no-qemu', action='store_true',
                    help='skip the QEMU comparison')
    ap.add_argument('--only', help='comma-separated workload ids')
    ap.add_argument('--no-nicfast', action='store_true',
                    help='skip the NIC fast path vs QEMU step '
                    '(lcbench/nicfast.py)')
    ap.add_argument('--nicfast-only', action='store_true',
                    help='run only the NIC fast path vs QEMU step; its '
                    'section is the report')
    ap.add_argument('--rerender', action='store_true',
                    help='measure nothing: rebuild the model, plots and '
                    'report from the results.json in --out')
    return ap.parse_args()


def git_describe():
    """The commit measured, and whether the tree had local changes."""
    def git(*a):
        return subprocess.run(['git', '-C', HERE] + list(a),
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                              timeout=30).stdout.decode().strip()
    try:
        return dict(commit=git('rev-parse', '--short', 'HEAD'),
                    dirty=bool(git('status', '--porcelain')))
    except (OSError, subprocess.SubprocessError):
        return {}


def select_workloads(build, mode, only):
    ready, missing = workloads.with_paths(build, mode)
    if only:
        keep = set(only.split(','))
        ready = [w for w in ready if w['id'] in keep]
        missing = [w for w in missing if w['id'] in keep]
    gone = [dict(id=w['id'], reason=f'{w["image"]} was not built')
            for w in missing]
    for g in gone:
        log(f'workload {g["id"]} skipped: {g["reason"]}')
    return ready, gone


def public(wl):
    """A workload's description for results.json (no local paths)."""
    keys = ('id', 'label', 'guest', 'nic', 'params', 'unicorn_params', 'unit',
            'n1', 'n2', 'un1', 'un2', 'qn1', 'qn2')
    return {k: wl[k] for k in keys if k in wl}


def step_kvm(results, build, wls, mode, save, progress):
    m = MODES[mode]
    for wl in wls:
        progress.step(f'kvm: {wl["id"]} (n={wl["n1"]},{wl["n2"]}; '
                      f'{m["rounds"]} rounds off/on, {m["rounds_tech"]} '
                      'with every technique)')
        runs = workloads.measure_workload(build, wl, m['rounds'],
                                          m['rounds_tech'])
        results['kvm_runs'][wl['id']] = runs
        results['kvm'][wl['id']] = workloads.derive(wl, runs)
        save()


def main():
    a = parse_args()
    mode = 'quick' if a.quick else 'full'
    build = os.path.normpath(a.build)
    today = datetime.date.today().isoformat()
    out = a.out or os.path.join(HERE, 'results', today)
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, 'results.json')
    if a.rerender:
        with open(path) as f:
            results = json.load(f)
        if 'kvm' not in results:              # a --nicfast-only run
            nicfast_report(results, out)
            return 0
        finish(results, out, lambda: write_json(path, results), rerender=True)
        log(f'report rebuilt: {os.path.join(out, "report.md")}')
        return 0
    if not kvm_usable():
        log('/dev/kvm is not usable here: the suite measures KVM; stopping')
        return 1
    if not os.path.exists(os.path.join(build, 'examples', 'vmm', 'lcvmm')):
        log(f'{build}: no lcvmm; build it first (scripts/bench.sh does)')
        return 1

    if a.nicfast_only:
        results = dict(meta=dict(date=today, mode=mode,
                                 started=datetime.datetime.now()
                                 .isoformat(timespec='seconds'),
                                 git=git_describe(),
                                 command=' '.join(sys.argv)))
        log(f'results go to {out}')
        results['nicfast'] = nicfast.measure_all(build, mode)
        write_json(path, results)
        nicfast_report(results, out)
        log(f'done in {elapsed():.0f} s: {os.path.join(out, "report.md")}')
        return 0
    wls, gone = select_workloads(build, mode, a.only)
    results = dict(
        meta=dict(date=today, mode=mode, started=datetime.datetime.now()
                  .isoformat(timespec='seconds'), **MODES[mode],
                  git=git_describe(), command=' '.join(sys.argv)),
        workloads=[public(w) for w in wls], missing_workloads=gone,
        configs=workloads.CONFIGS, kvm={}, kvm_runs={})

    def save():
        write_json(path, results)

    # One progress line per step on a terminal (bench_progress.py).
    progress = Progress([('machine', 'machine: costs and microbenchmarks')] +
                        [('kvm', 'kvm: ' + w['id']) for w in wls] +
                        [('traces', 'exit traces on Unicorn'),
                         ('qemu', 'QEMU comparison')] +
                        ([] if a.no_nicfast else
                         [('nicfast', 'NIC fast path against QEMU')]) +
                        [('finish', 'nested model, plots, report')], mode)
    log(f'results go to {out}')
    progress.step()
    results['machine'] = machine.describe(build, a.quick)
    save()
    step_kvm(results, build, wls, mode, save, progress)
    progress.step()
    results['traces'] = traces.measure_all(build, wls,
                                           os.path.join(out, 'traces'))
    save()
    progress.step()
    results['qemu'] = (dict(available=False, reason='--no-qemu')
                       if a.no_qemu else
                       qemu.measure_all(build, wls, MODES[mode]['qemu_rounds']))
    save()
    if not a.no_nicfast:
        progress.step()
        results['nicfast'] = nicfast.measure_all(build, mode)
        save()
    progress.step()
    finish(results, out, save)
    log(f'done in {elapsed():.0f} s: {os.path.join(out, "report.md")}')
    return 0


def nicfast_report(results, out):
    """report.md of a --nicfast-only run: the step's own section."""
    m = results.get('meta', {})
    g = m.get('git', {})
    head = (f'# NIC fast path vs QEMU, {m.get("date")}\n\n{m.get("mode")} '
            f'mode, commit {g.get("commit", "?")}'
            f'{" with local changes" if g.get("dirty") else ""}; '
            f'command: `{m.get("command")}`\n\n')
    with open(os.path.join(out, 'report.md'), 'w') as f:
        f.write(head + nicfast.section(results))


def finish(results, out, save, rerender=False):
    """Everything computed from the measurements: fractions, the model,
    plots, the report (--rerender runs only this)."""
    from lcbench import report
    results['fractions'] = analysis.fractions(results)
    results['headline'] = analysis.headline(results)
    log('nested model')
    results['nested'] = nested_model.model(results,
                                           os.path.join(out, 'traces'))
    if not rerender:
        results['machine']['loadavg_end'] = os.getloadavg()
        results['meta']['finished'] = datetime.datetime.now().isoformat(
            timespec='seconds')
        results['meta']['duration_s'] = round(elapsed(), 1)
    log('plots')
    try:
        from lcbench import plots    # matplotlib: python3-matplotlib
        results['plots'] = plots.all_plots(results, out)
    except ImportError as e:
        results['plots'] = dict(error=f'no plots: {e} (install '
                                'python3-matplotlib, run with /usr/bin/python3)')
        log(results['plots']['error'])
    save()
    with open(os.path.join(out, 'report.md'), 'w') as f:
        f.write(report.render(results))


if __name__ == '__main__':
    sys.exit(main())
