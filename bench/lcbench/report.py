# SPDX-License-Identifier: MIT
"""report.md: the results for a person. Headline first, then the machine,
the method, the measurements, the model, the caveats. Every table says
whether its figures are MEASURED or MODELLED."""
import nested_model

from .analysis import PAPER_E1000
from .workloads import CONFIGS
from . import nicfast
from .util import med


# ---- formatting -----------------------------------------------------------

def f(x, digits=2):
    if x is None:
        return 'n/a'
    if isinstance(x, (int,)) and not isinstance(x, bool):
        return str(x)
    if abs(x) >= 1000:
        return f'{x:,.0f}'
    if abs(x) >= 100:
        return f'{x:.0f}'
    return f'{x:.{digits}f}'


def pct(x):
    return 'n/a' if x is None else f'{round(100 * x)}%'


def spread(s, digits=2):
    """'median [min-max]' of a summary."""
    if not s:
        return 'n/a'
    return f'{f(s["median"], digits)} [{f(s["min"], digits)}-{f(s["max"], digits)}]'


def iqr(s, digits=2):
    if not s:
        return 'n/a'
    return f'{f(s["median"], digits)} [{f(s["q1"], digits)}-{f(s["q3"], digits)}]'


def us(x):
    """Microseconds, as ms when large."""
    if x is None:
        return 'n/a'
    return f'{x / 1000:.2f} ms' if x >= 1000 else f'{x:.1f} us'


def table(header, rows, left=1):
    """A markdown table; the first `left` columns (text) align left, the
    rest (figures) right."""
    out = ['| ' + ' | '.join(header) + ' |',
           '|' + '|'.join('---' if i < left else '---:'
                          for i in range(len(header))) + '|']
    out += ['| ' + ' | '.join(str(c) for c in r) + ' |' for r in rows]
    return '\n'.join(out) + '\n'


def image(results, key, alt):
    name = results.get('plots', {}).get(key)
    return f'![{alt}]({name})\n' if name else f'*({alt}: no plot)*\n'


def workload(results, wid):
    return next((w for w in results['workloads'] if w['id'] == wid), {})


# ---- sections ---------------------------------------------------------------

def title(results):
    m = results['meta']
    g = m.get('git', {})
    quick = (' **QUICK SMOKE RUN: fewer rounds and smaller n; do not quote '
             'these figures.**' if m['mode'] == 'quick' else '')
    return (f'# libcluster benchmarks, {m["date"]}\n\n'
            f'Commit {g.get("commit", "?")}'
            f'{" (with local changes)" if g.get("dirty") else ""}, '
            f'{m["mode"]} run, {f(m.get("duration_s"), 0)} s '
            f'({m.get("started")} to {m.get("finished")}).{quick} '
            'Produced by `scripts/bench.sh` (bench/run_all.py); the raw '
            'figures are in `results.json` beside this file.\n\n'
            '**MEASURED** figures come from runs on this machine; '
            '**MODELLED** ones (the ideal reduction, the nested '
            'projections) are computed from measured traces under stated '
            'assumptions. Each table says which.\n\n')


def headline(results):
    rows = results.get('headline', [])
    if not rows:
        return '## Headline\n\nNo workload completed.\n\n'
    body = []
    fr = results.get('fractions', {})
    marked = False
    for r in rows:
        sr = r.get('speedup_rounds')
        mark = ' (a)' if streams_differ(fr.get(r['id'], {})) else ''
        marked = marked or bool(mark)
        body.append([r['label'], f(r['exits_off']), f(r['exits_on']),
                     f(r['ideal']), 'n/a' if r['reduction_pct'] is None
                     else f'{round(r["reduction_pct"])}%',
                     pct(r['fraction']) + mark,
                     f'{f(r["speedup"])}' + (f' [{f(sr["min"])}-{f(sr["max"])}]'
                                             if sr else ''),
                     us(r['us_off']), us(r['us_on']), us(r['us_qemu'])])
    text = ['## Headline\n',
            'MEASURED on this machine (KVM, lcvmm), except the ideal '
            '(MODELLED from Unicorn gaps) and the fraction that uses it. '
            'Exits and times are per unit of work (exchange, BIOS pass, PAE '
            'round), steady state; speed-up = time per unit off / on in the '
            'same round, median [min-max] over rounds.\n',
            table(['workload', 'exits off', 'exits on', 'ideal', 'reduction',
                   'fraction of ideal', 'speed-up', 'time off', 'time on',
                   'QEMU time'], body)]
    if marked:
        text.append('(a) A lower bound: KVM takes one or two more exits per '
                    'exchange than the Unicorn stream the ideal comes from '
                    '(on KVM the guest reads the NIC\'s cause register once '
                    'per exchange: a poll when it runs natively, its '
                    'interrupt handler with interrupts; see "The ideal '
                    'reduction"). Those exits are missing from the ideal, so '
                    'off - ideal is too large.\n')
    text.append(paper_comparison(results))
    return '\n'.join(text) + '\n'


def streams_differ(fr):
    gap = fr.get('stream_gap')
    return gap is not None and abs(gap) >= 0.2


def paper_comparison(results):
    """The paper's e1000 figure next to ours."""
    po, pn = PAPER_E1000['off'], PAPER_E1000['on']
    lines = [f'The paper (section 9, netperf round trips on an e1000): '
             f'{po} -> {pn} exits per round trip ({100 * (pn - po) / po:.0f}%).']
    for r in results.get('headline', []):
        if r['id'].startswith('e1000') and r['exits_off']:
            lines.append(f'Ours, {r["label"]}: {f(r["exits_off"])} -> '
                         f'{f(r["exits_on"])} exits per exchange '
                         f'({-round(r["reduction_pct"])}%).')
    for r in results.get('headline', []):
        if r['us_qemu'] and r['us_on']:
            lines.append(f'{r["label"]}: QEMU\'s time per exchange is '
                         f'{f(r["qemu_over_on"])}x ours with clustering.')
    return ' '.join(lines) + '\n'


def machine_section(results):
    m = results['machine']
    k = m.get('kvm', {})
    out = ['## Machine\n', table(['what', 'value'], machine_rows(m, k), left=2)]
    out.append(caps_table(k))
    out.append(costs_table(k))
    out.append(engine_table(m))
    return '\n'.join(out)


def machine_rows(m, k):
    c = m['cpu']
    virt = ('hypervisor bit ' +
            ('set (this is a VM)' if c['hypervisor_flag'] else 'clear') +
            f'; vmx {c["vmx"]}, svm {c["svm"]} (no hardware virtualization '
            'visible: KVM here is a software implementation, docs/platform.md)')
    load = (f'start {fmt_load(m.get("loadavg_start"))}, end '
            f'{fmt_load(m.get("loadavg_end"))} (other engineers share the '
            'machine)')
    return [
        ['CPU', f'{c["model"]} (as the VM reports it), {c["cpus"]} CPUs, '
                f'{f(c.get("mhz"), 0)} MHz'],
        ['virtualization', virt],
        ['kernel', f'{m["kernel"]} ({m.get("os")})'],
        ['memory', f'{m.get("mem_gib")} GiB'],
        ['build', f'{m["build"]} (buildtype {m.get("buildtype")})'],
        ['load average', load],
        ['KVM API', f'{k.get("api_version", "n/a")}'],
        ['KVM behaviour (lc_kvm_probe)', k.get('probe') or 'n/a'],
    ]


def fmt_load(la):
    return 'n/a' if not la else ' / '.join(f'{x:.2f}' for x in la)


def caps_table(k):
    caps = k.get('caps', {})
    if not caps:
        return 'KVM capabilities: n/a (kvm_costs did not run: ' \
               f'{k.get("error", "?")})\n'
    used = [f'{n}={v["value"]}' for n, v in caps.items() if v['used_by_lcvmm']]
    other = [f'{n}={v["value"]}' for n, v in caps.items()
             if not v['used_by_lcvmm']]
    return (f'KVM capabilities lcvmm and the adapter use (KVM_CHECK_EXTENSION): '
            f'{", ".join(used)}. Others: {", ".join(other)}.\n')


def costs_table(k):
    rt, io, insn = k.get('round_trip_ns', {}), k.get('ioctl_ns', {}), \
        k.get('insn_ns', {})
    if not rt:
        return ''
    rows = []
    for kind, what in (('pio_out', 'OUT (port I/O write)'),
                       ('pio_in', 'IN (port I/O read)'),
                       ('mmio_write', 'MMIO write'), ('mmio_read', 'MMIO read')):
        rows.append([f'exit round trip, {what}',
                     ns_cell(rt.get(f'{kind}_cpl0')),
                     ns_cell(rt.get(f'{kind}_cpl3'))])
    rows.append(['OUT exit, with sync regs (REGS+SREGS) filled at each exit',
                 ns_cell(rt.get('pio_out_cpl0_sync_regs')),
                 ns_cell(rt.get('pio_out_cpl3_sync_regs'))])
    rows.append(['OUT exit, sync regs filled and written back',
                 ns_cell(rt.get('pio_out_cpl0_dirty_regs')),
                 ns_cell(rt.get('pio_out_cpl3_dirty_regs'))])
    rows.append(['guest instruction (`dec; jnz` loop)',
                 ns_cell(insn.get('cpl0')), ns_cell(insn.get('cpl3'))])
    io_rows = [[name.replace('_', ' '), ns_cell(v)] for name, v in io.items()]
    return ('\nMEASURED by `bench/kvm_costs` (a throwaway VM, 64-bit mode with '
            'paging; CPL 3 ports granted through the TSS I/O bitmap, since '
            'this KVM ignores IOPL at CPL 3). Median of '
            f'{k.get("reps")} batches [min-max]:\n\n' +
            table(['one...', 'CPL 0', 'CPL 3'], rows) + '\n' +
            table(['vCPU ioctl / syscall', 'time'], io_rows))


def ns_cell(v):
    if not v:
        return 'n/a'
    unit, scale = ('us', 1000) if v['median'] >= 1000 else ('ns', 1)
    return (f'{v["median"] / scale:.2f} {unit} '
            f'[{v["min"] / scale:.2f}-{v["max"] / scale:.2f}]')


def engine_table(m):
    e = m.get('bench_engine', {})
    if 'hit' not in e:
        return f'\nEngine microbenchmarks: n/a ({e.get("error", "not run")})\n'
    out = ['\nEngine microbenchmarks, MEASURED (`bench_engine --json`, '
           f'medians of {e.get("runs")} runs x {e.get("iters")} exits, against '
           'the fake VMM of tests/common/fakevm.h):\n',
           table(['cost', 'ns'], [
               ['translation hit (lookup, coherency check, run, return)', f(e['hit'], 1)],
               ['per register gap filler in a cluster', f(e['gap_filler'])],
               ['per memory gap filler in a cluster', f(e['mem_gap_filler'])],
               ['interpreted exit (all techniques off)', f(e['interpreted'], 1)],
               ['making a translation', f(e['translation'], 0)]])]
    rt = m.get('bench_runtime', {}).get('results')
    if rt:
        out.append('\nRuntime, per instruction (`bench_runtime --json --runs 5`, '
                   'ns, MEASURED):\n')
        out.append(table(['instruction', 'exec', 'step (decode+exec)', 'decode'],
                         [[f'`{r["insn"]}`', f(r['exec'], 1), f(r['step'], 1),
                           f(r['decode'], 1)] for r in rt]))
    return '\n'.join(out)


def method_section(results):
    m = results['meta']
    rows = [[w['id'], w['label'], f'`{w["params"] or "-"}`', w['unit'],
             f'{w["n1"]}, {w["n2"]}', f'`{w["unicorn_params"] or "-"}` '
             f'{w["un1"]}, {w["un2"]}',
             f'{w["qn1"]}, {w["qn2"]}' if 'qn1' in w else '-']
            for w in results['workloads']]
    missing = ''.join(f'- **{g["id"]} not run**: {g["reason"]}\n'
                      for g in results.get('missing_workloads', []))
    cfg = ''.join(f'- `{c["id"]}` ({c["label"]}): `lcvmm {" ".join(c["args"])}`\n'
                  for c in CONFIGS)
    return f'''## Method

- **Per-unit figures by difference.** Every measurement is a pair of runs
  with n1 and n2 units of work; exits, engine counters and time per unit
  are (x(n2) - x(n1)) / (n2 - n1). This removes lcvmm's start-up, the
  guest's boot and NIC bring-up, ARP, and the console output at both ends
  (a few hundred exits), leaving the steady state. Time is lcvmm's own
  `vmm.wall_s` (`--stats json`).
- **Interleaving.** A round runs every configuration once (both n), the
  configurations in a fixed order that is reversed every other round, and
  the n1/n2 order alternating too, so drifts of this shared machine fall on
  all sides alike. Clustering off and on: {m["rounds"]} rounds; the single
  techniques and control-flow methods: {m["rounds_tech"]} rounds.
- **Summaries.** Medians over rounds; spreads as [min-max] (or [q1-q3]
  where marked). Speed-up = the median over rounds of time off / time on
  within the same round (same machine state), [min-max] of those ratios;
  `results.json` also keeps the ratio of the median times
  (`speedup_of_medians`).
- **One process at a time**: every run is sequential.
- **The ideal** (MODELLED from measured traces): the same guest on Unicorn
  (`--cpu unicorn --no-cluster --trace-file`) gives the guest instructions
  between consecutive exits; every run of exits whose gaps are <= 16
  instructions collapses into one exit. Unicorn exits on every port and MMIO
  access, while on KVM lcvmm registers the NIC's latch registers as
  coalesced zones (`--nic-opt latch`), whose writes never exit; those
  writes are dropped from the Unicorn stream first (found as the written
  addresses that never appear in a KVM trace of the same guest), their gaps
  added to the next exit's. Fraction of the ideal = (off - on) / (off -
  ideal) with off/on MEASURED on KVM; n/a when off - ideal < 0.05 (no
  opportunity). Unicorn has no interrupt controller, so the CPL 0 guests are
  traced in poll mode (`irq=0`) while KVM runs them with interrupts
  (`irq=1`).
- **QEMU**: QEMU 7.2 with `-accel kvm`, the same images, `-netdev dgram`
  to `lcvmm-peer` (the same peer code as lcvmm's built-in one). Time per
  exchange = (t(n2) - t(n1)) / (n2 - n1), where t is the time from the
  guest's `icmp echo` console line (just before its exchange loop) to its
  result line (just after), taken as the lines arrive from QEMU's unbuffered
  serial port: this also removes SeaBIOS and boot-time noise (+-0.2 s
  here), which whole-process wall time (also recorded) does not. {m["qemu_rounds"]}
  rounds; a failed QEMU run is retried up to twice.
- **Configurations** (the engine forms multi-instruction clusters only with
  static formation, so "dynamic" is static plus the exit-tracking
  predictions; every technique needs `single`, the translation cache):
{cfg}
Workloads (n values: KVM runs; Unicorn trace runs; QEMU runs):

{table(['id', 'guest', 'KVM params', 'unit', 'KVM n1, n2',
        'Unicorn params, n1, n2', 'QEMU n1, n2'], rows, left=4)}
{missing}'''


def kvm_section(results):
    out = ['## Results on KVM (MEASURED)\n',
           'Per unit of work, steady state. "exits" = exits lcvmm saw; '
           '"reduction" = exits off - exits of the configuration; "engine '
           'saved" = the engine\'s own `exits_saved`, which also counts the '
           'coalesced latch writes a cluster performs (they would not have '
           'exited), so it can exceed the reduction. Time: median [q1-q3].\n']
    for w in results['workloads']:
        k = results['kvm'].get(w['id'])
        if not k or 'off' not in k:
            out.append(f'### {w["label"]} (`{w["id"]}`)\n\nNo result: '
                       'every clustering-off run failed.\n')
            continue
        rows = []
        for c in CONFIGS:
            d = k.get(c['id'])
            if not d:
                continue
            rows.append([c['label'], d['rounds'], spread(d['exits']),
                         f(d.get('exits_reduction')), f(med(d['engine_saved'])),
                         f(med(d['cluster_insns']), 1),
                         iqr(d['time_us'], 1), '1' if c['id'] == 'off' else
                         spread(d.get('speedup_rounds')) if d.get('speedup_rounds')
                         else f(d.get('speedup'))])
        out.append(f'### {w["label"]} (`{w["id"]}`, per {w["unit"]})\n')
        out.append(table(['configuration', 'rounds', f'exits/{w["unit"]}',
                          'reduction', 'engine saved', 'cluster insns',
                          f'us/{w["unit"]}', 'speed-up'], rows))
        bad = k.get('output_mismatches', [])
        out.append(f'Guest output identical to clustering off in every run: '
                   f'{"yes" if not bad else "NO, " + str(len(bad)) + " runs differ"}.\n')
        errs = sum(1 for r in results['kvm_runs'].get(w['id'], [])
                   if 'error' in r)
        if errs:
            out.append(f'{errs} runs failed (see results.json, kvm_runs).\n')
    out.append(image(results, 'speedup', 'speed-up per workload and technique'))
    out.append(image(results, 'exits', 'exits per unit, off / on / ideal'))
    return '\n'.join(out)


def ideal_section(results):
    rows = []
    for w in results['workloads']:
        tr = results.get('traces', {}).get(w['id'], {})
        fr = results.get('fractions', {}).get(w['id'], {})
        if 'error' in tr or not tr:
            rows.append([w['id'], 'trace runs failed: ' +
                         tr.get('error', 'not run')[-160:]] + [''] * 9)
            continue
        rows.append([w['id'], f(tr['exits_raw']), f(tr['exits_kvm_like']),
                     f(tr['ideal_kvm_like']), f(fr.get('off')),
                     f(fr.get('on')), pct(fr.get('fraction')),
                     f(tr['on_exits']), f(tr['ideal_raw']),
                     pct(fr.get('fraction_unicorn')),
                     ', '.join(tr.get('latch_writes', [])[:3]) +
                     (' ...' if len(tr.get('latch_writes', [])) > 3 else '')
                     or '-'])
    return ('## The ideal reduction (Unicorn traces MEASURED; the ideal '
            'MODELLED)\n\n'
            'Per unit of work. Unicorn columns: exits off (raw: every access; '
            'KVM-like: coalesced latch writes removed), the ideal of the '
            'KVM-like stream, exits with clustering on (raw), the ideal of '
            'the raw stream, and the fraction computed on Unicorn alone '
            '(off, on and ideal from the same back end: a consistency check). '
            'KVM columns: MEASURED off and on (from the table above) and the '
            'fraction of the ideal as specified.\n\n' +
            table(['workload', 'Unicorn off raw', 'Unicorn off KVM-like',
                   'ideal', 'KVM off', 'KVM on', 'fraction of ideal',
                   'Unicorn on', 'ideal raw', 'fraction (Unicorn only)',
                   'coalesced latch writes'], rows) + '\n' +
            stream_note(results) + '\n' +
            image(results, 'gaps', 'instructions between exits (CDF)') +
            '\nThe curves are the steady state: the gap histogram of the n2 '
            'trace minus that of the n1 trace, with the coalesced latch '
            'writes removed (the exits KVM would take).\n')


def stream_note(results):
    """Say where KVM and Unicorn see different exit streams."""
    notes = []
    for wid, fr in results.get('fractions', {}).items():
        gap = fr.get('stream_gap')
        if streams_differ(fr):
            notes.append(f'`{wid}`: KVM takes {f(gap)} more exits per unit '
                         'than the KVM-like Unicorn stream')
    if not notes:
        return ''
    return ('**The two back ends do not see the same exit stream** for the '
            'NIC guests: ' + '; '.join(notes) + '. On KVM the guest reads '
            '(PCnet: and acknowledges) the NIC\'s cause register once per '
            'exchange: in poll mode because natively running CPL 3 code '
            'reaches its receive check before the reply is there (the reply '
            'is sent when the next exit flushes send combining), in interrupt '
            'mode in its interrupt handler. On Unicorn the guest runs in poll '
            'mode, emulated and slower, and the reply is usually there '
            'already. The ideal, taken from Unicorn, lacks those exits, so '
            'the fraction of the ideal is a lower bound for these workloads. '
            'The Unicorn-only fraction compares like with like, but '
            'clustering changes the timing on Unicorn too: with it the PCnet '
            'guest reaches its receive check sooner and polls once per '
            'exchange, as on KVM, so "Unicorn on" shows no reduction although '
            'the engine saves three accesses in every poll.\n')


def qemu_section(results):
    q = results.get('qemu', {})
    head = '## Ours vs QEMU (MEASURED)\n\n'
    if not q.get('available'):
        return head + f'Not run: {q.get("reason", "?")}.\n'
    rows = []
    for wid, d in q['workloads'].items():
        k = results['kvm'].get(wid, {})
        on = med(k.get('all', {}).get('time_us'))
        rows.append([wid, f'{d["n"][0]}, {d["n"][1]}',
                     us(med(k.get('off', {}).get('time_us'))), us(on),
                     spread_us(d.get('time_us')), spread_us(d.get('time_us_wall')),
                     f(med(d.get('boot_s'))),
                     f(on and med(d.get('time_us')) and
                       med(d['time_us']) / on),
                     f'{d.get("failed_attempts", 0)} / {d.get("failed_runs", 0)}'])
    return (head + f'{q.get("version")}, `-accel kvm`, same guest images and '
            'peer code (lcvmm-peer over -netdev dgram). QEMU\'s exits cannot '
            'be counted from outside, so only time per exchange is compared; '
            'ours is from the KVM table above. Per exchange, median '
            '[min-max]:\n\n' +
            table(['workload', 'QEMU n1, n2', 'ours off', 'ours on',
                   'QEMU (in-run)', 'QEMU (whole process, boot noise)',
                   'QEMU boot s',
                   'QEMU / ours on', 'failed attempts / runs'], rows) + '\n' +
            image(results, 'qemu', 'time per exchange, ours vs QEMU'))


def spread_us(s):
    if not s:
        return 'n/a'
    return f'{us(s["median"])} [{us(s["min"])}-{us(s["max"])}]'


def nested_section(results):
    m = results.get('nested', {})
    if 'error' in m or not m.get('results'):
        return ('## Nested virtualization (MODELLED)\n\nNot computed: '
                f'{m.get("error", "no traces")}.\n')
    a = m['assumed']
    hd = m['handlers']
    prof = next((p for p in m['profiles'] if p['measured']), None)
    inputs = [[wid, f(w['G'], 0), f(w['X']),
               f(w['G'] / w['X'], 0) if w['X'] else 'n/a',
               f(w['E_win']), f(w['E_eng'])]
              for wid, w in m['workloads'].items()]
    text = ['## Nested virtualization (MODELLED)\n',
            'A trace-driven model (`bench/nested_model.py`, formula in its '
            'docstring), not a measurement on nested hardware. It replays '
            'the Unicorn traces above (the inner guest: instructions per '
            'unit, exiting instructions, and what a 16-instruction window '
            'would cluster) and synthetic inner-VMM exit handlers built '
            'from section 8\'s VMREAD sequences, under exit-cost profiles: '
            'table 1\'s hardware round trips, the nested round trip of '
            f'{m["nested_rt_sb"]} cycles (Sandy Bridge; other generations '
            'scaled by their hardware round trip: an assumption), and this '
            'machine\'s measured costs. Speed-ups are against clustering off '
            'at both levels, in table 2\'s corners.\n',
            table(['model input', 'value', 'source'], left=3, rows=[
                ['hardware round trip', 'table 1, per generation', 'paper'],
                ['nested round trip', f'{m["nested_rt_sb"]} cycles (SB)', 'paper, section 8'],
                ['cluster run / per cluster instruction',
                 f'{f(results["machine"]["bench_engine"]["hit"], 1)} / '
                 f'{f(results["machine"]["bench_engine"]["gap_filler"])} ns, '
                 f'as cycles at {f(results["machine"]["cpu"].get("mhz"), 0)} MHz',
                 'MEASURED (bench_engine)'],
                ['inner guest: instructions, exits per unit', 'Unicorn traces', 'MEASURED'],
                ['inner clustering', '16-instruction window over the trace '
                 '(engine result beside it)', 'MODELLED'],
                ['inner VMM handler', f'{hd["vmware"]["V"]} VMREAD/VMWRITEs in '
                 f'{hd["vmware"]["length"]} instructions; outer clustering leaves '
                 f'{hd["vmware"]["E_on"]} (VMware-style) or {hd["hyperv"]["E_on"]} '
                 '(Hyper-V-style) exits', 'synthetic, from section 8'],
                ['software per exit: transition (saved) / handling (not saved)',
                 f'{a["sw_transition"]} / {a["handling"]} cycles',
                 'ASSUMED (section 9: 3000 cycles per exit in all)'],
                ['guest CPI; handler body; VMREAD emulation',
                 f'{a["cpi"]}; {a["handler_body"]} instructions; {a["vmx_emulation"]} cycles',
                 'ASSUMED'],
                ['AMD', 'no VMREAD/VMWRITE exits (VMCB in memory)', 'paper, section 8'],
            ]),
            '\nInner guest per unit (MEASURED on Unicorn, raw stream):\n',
            table(['workload', 'guest instructions', 'exiting instructions',
                   'instructions per exit', 'exits, window-clustered',
                   'exits, engine on Unicorn'], inputs),
            '\nThe projections scale with exit density: the BIOS and PAE '
            'guests exit every few instructions, far more often than the '
            'paper\'s kernel compile, hence speed-ups well above table 2\'s; '
            'the NIC guests exit about every 10,000 instructions.\n',
            '\n' + nested_model.markdown(m)]
    if prof:
        text.append(f'"this machine" profile: inner exit = measured CPL 3 '
                    f'exit round trip ({f(prof["rt_nested"] / 1000)} us), outer '
                    f'"VMREAD" = measured KVM_GET_REGS ({f(prof["rt_hw"] / 1000)} '
                    'us; by analogy: a VMM reading vCPU state through the '
                    'hypervisor below it), guest instructions at the measured '
                    'CPL 3 speed; assumed software costs at this clock.\n')
    text.append(image(results, 'nested', 'modelled nested speed-ups'))
    text.append(check_table(m))
    return '\n'.join(text)


def check_table(m):
    rows = [[c['workload'], f(c['exits_off']), f(c['exits_on']),
             f(c.get('handled_reads')), f'{c["rt_exit_ns"] / 1000:.2f} us',
             f'{c["insn_ns"]:.2f} ns', f(c['modelled']), f(c['measured'])]
            for c in m.get('check', [])]
    if not rows:
        return ''
    return ('\n**This machine is itself nested** (a VM whose KVM is a '
            'software implementation; exits cost about what a nested exit '
            'costs). Its MEASURED speed-ups (KVM table above, clustering on '
            'vs off) against what the same model predicts for one level '
            '(lcvmm as the only VMM, measured round trips and instruction '
            'costs, the KVM-measured exits, and one extra KVM_RUN '
            '(immediate_exit) per read the engine handles, as this KVM '
            'needs):\n\n' +
            table(['workload', 'exits off', 'exits on', 'reads handled',
                   'exit round trip', 'guest insn', 'speed-up MODELLED',
                   'speed-up MEASURED'], rows))


def caveats(results):
    items = [
        'The machine is shared (other engineers build on its 2 cores) and is '
        'itself a VM: times are noisy. Interleaving and medians reduce, not '
        'remove, that; read the spreads.',
        'CPL 0 guest code is emulated by this host (see the instruction '
        'cost above): the CPL 0 workloads spend most of their time in guest '
        'code, so avoided exits move their time little; the CPL 3 poll-mode '
        'workloads show the exit costs best.',
        'Exit counts on KVM include timing-dependent polls and, for the '
        'interrupt-driven runs, HLT and timer exits.',
        'lcvmm coalesces latch writes (`--nic-opt latch`): those are not '
        'exits to begin with, in either configuration; the engine\'s '
        '"exits saved" counts them when a cluster performs them.',
        'On this KVM every IN or MMIO read the engine handles costs one '
        'more KVM_RUN (immediate_exit, measured above), because moving RIP '
        'does not cancel a pending completion here (docs/kvm.md): '
        'configurations that handle exits without avoiding any ("single '
        'only") are slower than off, and part of the others\' savings goes '
        'to it.',
        'lcvmm has no shadow page tables, so the PAE guest\'s page-table '
        'pairs (section 3) do not exit at all; its exits are the e1000 '
        'base-register pairs: the writes are coalesced latch writes, the '
        'reads back exit, and dynamic clustering (exit tracking of weakly '
        'exiting MMIO loads) joins each pair of reads.',
        'The e1000 guests offer (almost) nothing to cluster: per exchange '
        'they touch the device three times (the ICR poll, RDT, TDT), each '
        'far more than 16 instructions from the next, so the Unicorn ideal '
        'equals the off count and the engine rightly changes nothing. The '
        'paper\'s e1000 figure comes from a Linux driver under netperf, '
        'whose interrupt path touches more registers back to back.',
        'Where clustering saves no exit (the e1000 guests), its speed-up '
        f'is about 1 or slightly below ({e1000_speedups(results)}): '
        'handling an exit it cannot avoid costs the engine '
        'something, most for reads (above). KVM\'s sync regs and their '
        'write-back are not the cost: kvm_costs measures an exit with them '
        'no slower than without.',
        '"pairs only" can save nothing here: this KVM reports MMIO writes '
        'with RIP already past the store (docs/kvm.md), and a pair is '
        'formed only when the first store is still pending; static '
        'formation catches the second store instead.',
        'The ideal comes from Unicorn, whose exit stream lacks the NIC '
        'guests\' cause-register exits that KVM takes (see above): their '
        'fractions of the ideal are lower bounds, and the 0% for e1000 '
        'means nothing was there to cluster, not that the engine missed it.',
        'The nested figures are a model with stated assumptions, not '
        'measurements; the paper\'s table 2 is a kernel compile, ours are '
        'small device-bound guests.',
    ]
    for g in results.get('missing_workloads', []):
        items.append(f'`{g["id"]}` was not run: {g["reason"]}.')
    for wid, tr in results.get('traces', {}).items():
        if 'error' in tr:
            items.append(f'`{wid}` has no Unicorn trace (no ideal, not in '
                         f'the model): {tr["error"][-200:]}')
    q = results.get('qemu', {})
    for wid, d in q.get('workloads', {}).items():
        if d.get('failed_attempts'):
            items.append(f'QEMU `{wid}`: {d["failed_attempts"]} failed '
                         'attempts (the guest reported no reply and timed '
                         'out; under QEMU the PCnet guest counts an rx error '
                         'every few hundred exchanges), retried.')
    return '## Caveats\n\n' + ''.join(f'- {i}\n' for i in items) + '\n'


def e1000_speedups(results):
    k = results.get('kvm', {})
    return ', '.join(f'{w}: {f(k[w]["all"].get("speedup"))}'
                     for w in ('e1000-cpl3', 'e1000-cpl0')
                     if 'all' in k.get(w, {})) or 'not measured'


def files_section(results):
    return ('## Files\n\n'
            '- `report.md`: this report; `results.json`: every figure, the '
            'raw KVM runs (`kvm_runs`), the machine description, the model.\n'
            '- `traces/*.csv.gz`: the Unicorn exit traces (lcvmm '
            '`--trace-file`: seq, gap, kind, addr, size, write, handled, '
            'cluster_insns, exits_saved) off/on at n1/n2 (`-off1`, `-off2`, '
            '`-on1`, `-on2`), and KVM traces (`-kvm-off`, `-kvm-on1/2`; gap '
            '-1: KVM counts no instructions); `bench/nested_model.py` '
            'replays the Unicorn ones.\n'
            '- Plots: ' + ', '.join(f'`{v}`' for k, v in
                                     results.get('plots', {}).items()
                                     if v and k.isalpha()) + '.\n')


def render(results):
    parts = [title(results), headline(results), nicfast.section(results),
             machine_section(results),
             method_section(results), kvm_section(results),
             ideal_section(results), qemu_section(results),
             nested_section(results), caveats(results), files_section(results)]
    return '\n'.join(parts)

