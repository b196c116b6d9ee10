# SPDX-License-Identifier: MIT
"""Figures derived from several measurements: the fraction of the ideal
reduction, and the headline rows."""
from .util import med, ratio

# Below this many exits per unit of possible reduction, a fraction of it
# means nothing (the workload offers no clustering opportunity).
MIN_OPPORTUNITY = 0.05

PAPER_E1000 = dict(off=2.6, on=1.97)     # section 9, netperf round trips


def fraction(off, on, ideal):
    """(off - on) / (off - ideal), or None without an opportunity."""
    if None in (off, on, ideal) or off - ideal < MIN_OPPORTUNITY:
        return None
    return (off - on) / (off - ideal)


def fractions(results):
    """Per workload: the fraction as specified (KVM off/on measured, ideal
    from the Unicorn gaps with the coalesced latch writes removed), and a
    consistency check computed on Unicorn alone (off, on and ideal from
    the same back end)."""
    out = {}
    for wid, k in results.get('kvm', {}).items():
        tr = results.get('traces', {}).get(wid, {})
        off = med(k.get('off', {}).get('exits'))
        on = med(k.get('all', {}).get('exits'))
        ideal = tr.get('ideal_kvm_like')
        out[wid] = dict(
            off=off, on=on, ideal=ideal,
            fraction=fraction(off, on, ideal),
            unicorn_off=tr.get('exits_raw'), unicorn_on=tr.get('on_exits'),
            unicorn_ideal=tr.get('ideal_raw'),
            fraction_unicorn=fraction(tr.get('exits_raw'), tr.get('on_exits'),
                                      tr.get('ideal_raw')),
            # the streams differ when Unicorn's off count (coalesced writes
            # removed) is not KVM's: timing changes how often guests poll
            stream_gap=(None if off is None or tr.get('exits_kvm_like') is None
                        else off - tr['exits_kvm_like']))
    return out


def headline(results):
    """One row per workload: exits off/on/ideal, reduction, fraction,
    speed-up, time per unit ours off/on and QEMU."""
    rows = []
    fr = results.get('fractions', {})
    q = results.get('qemu', {}).get('workloads', {})
    for wl in results.get('workloads', []):
        k = results.get('kvm', {}).get(wl['id'])
        if not k or 'off' not in k or 'all' not in k:
            continue
        f = fr.get(wl['id'], {})
        qt = med(q.get(wl['id'], {}).get('time_us'))
        off_t, on_t = med(k['off']['time_us']), med(k['all']['time_us'])
        rows.append(dict(
            id=wl['id'], label=wl['label'], unit=wl['unit'],
            exits_off=f.get('off'), exits_on=f.get('on'),
            ideal=f.get('ideal'),
            reduction_pct=(None if not f.get('off') else
                           100 * (f['off'] - f['on']) / f['off']),
            fraction=f.get('fraction'),
            speedup=k['all'].get('speedup'),
            speedup_rounds=k['all'].get('speedup_rounds'),
            us_off=off_t, us_on=on_t, us_qemu=qt,
            qemu_over_on=ratio(qt, on_t)))
    return rows
