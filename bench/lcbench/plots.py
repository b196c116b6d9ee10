# SPDX-License-Identifier: MIT
"""The report's figures (matplotlib, Agg: no display here). Each function
writes one PNG into the results directory and returns its file name, or
None when there is nothing to plot."""
import os

import matplotlib
matplotlib.use('Agg')
import matplotlib.pyplot as plt  # noqa: E402  (after choosing the backend)

from .workloads import CONFIGS  # noqa: E402

DPI = 110


def _save(fig, out_dir, name):
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, name), dpi=DPI)
    plt.close(fig)
    return name


def _err(s):
    """Error bar lengths (below, above the median) from a summary."""
    if not s:
        return [0], [0]
    return [s['median'] - s['min']], [s['max'] - s['median']]


def gap_cdf(results, out_dir):
    """The paper's figure 5: cumulative share of exits whose distance (in
    guest instructions) from the previous exit is <= x, per workload."""
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    drawn = 0
    for wid, tr in results.get('traces', {}).items():
        hist = tr.get('gap_hist_steady')
        if not hist:
            continue
        pts = sorted((int(k), v) for k, v in hist.items())
        total = sum(v for _k, v in pts)
        xs, ys, acc = [], [], 0
        for k, v in pts:
            acc += v
            xs.append(max(k, 0))
            ys.append(100.0 * acc / total)
        # The CPL 3 and CPL 0 NIC guests run the same code in poll mode on
        # Unicorn, so their curves coincide: dashes keep both visible.
        ax.step(xs, ys, where='post', label=wid,
                ls='--' if 'cpl0' in wid else '-', lw=1.6)
        drawn += 1
    if not drawn:
        plt.close(fig)
        return None
    ax.axvline(16, color='grey', ls='--', lw=1)
    ax.text(17, 3, '16 (translator reach)', color='grey', fontsize=8)
    ax.set_xscale('symlog', linthresh=1)
    ax.set_xlim(0, 1e6)
    ax.set_ylim(0, 100)
    ax.set_xlabel('guest instructions since the previous exit (Unicorn)')
    ax.set_ylabel('% of exits (steady state)')
    ax.set_title('Instructions between exits (cf. paper figure 5)')
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return _save(fig, out_dir, 'gaps_cdf.png')


def speedup_bars(results, out_dir):
    """The paper's figure 4: wall-clock speed-up per unit of work against
    clustering off, per workload and configuration (median; bars: min-max
    of the same-round ratios)."""
    kvm = results.get('kvm', {})
    wids = [w for w in kvm if 'off' in kvm[w]]
    cfgs = [c for c in CONFIGS if c['id'] != 'off']
    if not wids:
        return None
    fig, ax = plt.subplots(figsize=(10, 4.5))
    width = 0.8 / len(cfgs)
    for i, c in enumerate(cfgs):
        xs, ys, lo, hi = [], [], [], []
        for j, w in enumerate(wids):
            d = kvm[w].get(c['id'])
            if not d or d.get('speedup') is None:
                continue
            xs.append(j + (i - len(cfgs) / 2 + 0.5) * width)
            ys.append(d['speedup'])
            s = d.get('speedup_rounds')
            lo.append(max(d['speedup'] - s['min'], 0) if s else 0)
            hi.append(max(s['max'] - d['speedup'], 0) if s else 0)
        ax.bar(xs, ys, width, label=c['label'], yerr=[lo, hi], capsize=2,
               error_kw=dict(lw=0.7))
    ax.axhline(1.0, color='black', lw=0.8)
    # Noisy rounds can have huge ratios: keep the medians readable and let
    # such error bars run off the top.
    top = max([kvm[w][c['id']]['speedup'] for w in wids for c in cfgs
               if kvm[w].get(c['id'], {}).get('speedup')] + [1.5])
    ax.set_ylim(0, max(2.0, 1.25 * top))
    ax.set_xticks(range(len(wids)), wids, fontsize=9)
    ax.set_ylabel('speed-up vs clustering off (time per unit)')
    ax.set_title('Speed-up per workload and technique on KVM (cf. paper '
                 'figure 4)')
    ax.legend(fontsize=7, ncol=4)
    ax.grid(axis='y', alpha=0.3)
    return _save(fig, out_dir, 'speedup.png')


def _panels(n, width=2.6, height=3.4):
    fig, axes = plt.subplots(1, n, figsize=(width * n, height), squeeze=False)
    return fig, axes[0]


def exits_bars(results, out_dir):
    """Exits per unit: ours off, ours on, the ideal (from the Unicorn gaps,
    coalesced latch writes removed). One panel per workload: the scales
    differ by two orders of magnitude."""
    kvm, tr = results.get('kvm', {}), results.get('traces', {})
    wids = [w for w in kvm if 'off' in kvm[w] and 'all' in kvm[w]]
    if not wids:
        return None
    fig, axes = _panels(len(wids))
    for ax, w in zip(axes, wids):
        vals = [kvm[w]['off']['exits'], kvm[w]['all']['exits']]
        labels = ['off', 'on']
        ideal = tr.get(w, {}).get('ideal_kvm_like')
        heights = [v['median'] for v in vals]
        errs = [_err(v) for v in vals]
        if ideal is not None:
            heights.append(ideal)
            errs.append(([0], [0]))
            labels.append('ideal')
        ax.bar(labels, heights, color=['#c44', '#48c', '#7a7'][:len(labels)],
               yerr=[[e[0][0] for e in errs], [e[1][0] for e in errs]],
               capsize=3)
        unit = next((x['unit'] for x in results['workloads']
                     if x['id'] == w), 'unit')
        ax.set_title(w, fontsize=9)
        ax.set_ylabel(f'exits per {unit}', fontsize=8)
        ax.grid(axis='y', alpha=0.3)
    fig.suptitle('Exits per unit of work: ours off / on / ideal', fontsize=10)
    return _save(fig, out_dir, 'exits.png')


def qemu_bars(results, out_dir):
    """Time per exchange: ours off, ours on, QEMU (its exits cannot be
    counted from outside). One panel per NIC workload."""
    q = results.get('qemu', {})
    if not q.get('available'):
        return None
    kvm = results.get('kvm', {})
    wids = [w for w in q['workloads'] if w in kvm and 'off' in kvm[w]]
    if not wids:
        return None
    fig, axes = _panels(len(wids), width=2.9)
    for ax, w in zip(axes, wids):
        sums = [kvm[w]['off']['time_us'], kvm[w].get('all', {}).get('time_us'),
                q['workloads'][w].get('time_us')]
        labels = ['ours off', 'ours on', 'QEMU']
        pairs = [(lab, s) for lab, s in zip(labels, sums) if s]
        scale, unit = (1000, 'ms') if pairs[0][1]['median'] > 2000 else (1, 'us')
        ax.bar([p[0] for p in pairs], [p[1]['median'] / scale for p in pairs],
               yerr=[[_err(p[1])[0][0] / scale for p in pairs],
                     [_err(p[1])[1][0] / scale for p in pairs]],
               color=['#c44', '#48c', '#999'][:len(pairs)], capsize=3)
        ax.set_title(w, fontsize=9)
        ax.set_ylabel(f'{unit} per exchange', fontsize=8)
        ax.tick_params(axis='x', labelsize=8)
        ax.grid(axis='y', alpha=0.3)
    fig.suptitle('Time per exchange: lcvmm (clustering off / on) vs QEMU 7.2',
                 fontsize=10)
    return _save(fig, out_dir, 'qemu.png')


def nested_bars(results, out_dir):
    """The nested model's Sandy Bridge projection (MODELLED, not
    measured): inner / outer / both, Intel and AMD, per workload."""
    m = results.get('nested', {}).get('results', {})
    if not m:
        return None
    wids = list(m)
    series = [(v, c) for v in ('intel', 'amd') for c in ('inner', 'outer',
                                                         'both')]
    fig, ax = plt.subplots(figsize=(9, 4))
    width = 0.8 / len(series)
    for i, (v, c) in enumerate(series):
        xs = [j + (i - len(series) / 2 + 0.5) * width for j in range(len(wids))]
        ys = [m[w]['Sandy Bridge']['vmware'][v][c] for w in wids]
        ax.bar(xs, ys, width, label=f'{v} {c}',
               hatch='//' if v == 'amd' else None)
    ax.axhline(1.0, color='black', lw=0.8)
    ax.set_xticks(range(len(wids)), wids, fontsize=9)
    ax.set_ylabel('modelled speed-up')
    ax.set_title('MODEL: nested speed-ups on Sandy Bridge costs (cf. paper '
                 'table 2)')
    ax.legend(fontsize=7, ncol=2)
    ax.grid(axis='y', alpha=0.3)
    return _save(fig, out_dir, 'nested_model.png')


def all_plots(results, out_dir):
    made = {}
    for name, fn in (('gaps', gap_cdf), ('speedup', speedup_bars),
                     ('exits', exits_bars), ('qemu', qemu_bars),
                     ('nested', nested_bars)):
        try:
            made[name] = fn(results, out_dir)
        except Exception as e:         # a plot must never lose the results
            made[name] = None
            made[name + '_error'] = repr(e)
    return made
