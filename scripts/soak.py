#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Long soaks of the reference VMM with its resident memory sampled.

  soak.py BUILD_DIR [--workload pcnet|e1000|bios16|sites|reboot]...
          [-n UNITS]
          [--interval SECONDS] [--cpu kvm|unicorn] [--json FILE]
          [--markdown]

Each workload is one lcvmm run of n units (NIC guests: UDP echo
exchanges, CPL 3 poll mode; bios16: passes of the BIOS-style PCI
enumeration, whose BAR sizing moves the NIC's BAR twice a pass, so the
VMM flushes libcluster's translations every pass, the engine flush a
guest reboot causes; sites: a guest, built by tests/vmm/memory_bounded.py,
that writes n new exiting sites and runs each until it is translated, so
every exit is at code the cache has not seen; reboot: guest-reboot under
`lcvmm --reboot`, n resets and boots, each one making the KVM VM, the
devices and libcluster's vCPU contexts anew and flushing the engine,
with new exit sites every boot). While it runs, /proc/PID/status VmRSS is read
every --interval seconds, and the Rss of the guest RAM mapping in
/proc/PID/smaps (RSS minus it: lcvmm's own memory, which a guest that
touches new RAM does not move). Printed per workload: units done, wall time,
RSS at the first sample after 2 s and a tenth of the run (start-up
done), its peak and at the
last sample, and the engine's translation cache at the end (bytes held, translations made,
evictions). The run fails (exit status 1) when the guest did not finish
all its units or RSS grew by more than --max-growth KiB between the
first sample after start-up and the end.

Soaks run for minutes: start them with `nice -n 19` (the script lowers
its own priority too) and outside the build lock; docs/reliability.md
keeps the figures of the runs made.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

GUESTS = {
    'pcnet': ('guest-pcnet.bin', 'pcnet', 'cpl=3 irq=0', 'exchanges'),
    'e1000': ('guest-e1000.bin', 'e1000', 'cpl=3 irq=0', 'exchanges'),
    'bios16': ('guest-bios16.bin', 'pcnet', '', 'passes'),
    # built here (tests/vmm/memory_bounded.py): n new exiting sites
    'sites': (None, 'none', '', 'sites'),
    # lcvmm --reboot: n guest resets and boots (examples/guests/reboot.c)
    'reboot': ('guest-reboot.bin', 'none', '', 'boots'),
}


def rss_kib(pid):
    """VmRSS of pid in KiB, or None once it is gone."""
    try:
        with open('/proc/%d/status' % pid) as f:
            for line in f:
                if line.startswith('VmRSS:'):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


GUEST_RAM_KIB = 64 << 10     # lcvmm's default -m 64: one mapping


def guest_ram_rss_kib(pid):
    """Rss of pid's guest RAM (the one anonymous mapping of exactly
    GUEST_RAM_KIB), or None: RSS minus this is lcvmm's own memory."""
    try:
        with open('/proc/%d/smaps' % pid) as f:
            size = None
            for line in f:
                if line.startswith('Size:'):
                    size = int(line.split()[1])
                elif line.startswith('Rss:') and size == GUEST_RAM_KIB:
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def sites_image(tmp, n):
    sys.path.insert(0, os.path.join(os.path.dirname(
        os.path.abspath(__file__)), '..', 'tests', 'vmm'))
    from memory_bounded import new_sites_image
    path = os.path.join(tmp, 'sites.bin')
    with open(path, 'wb') as f:
        f.write(new_sites_image(n))
    return path


def soak(lcvmm, guest_dir, name, n, interval, cpu):
    image, nic, params, unit = GUESTS[name]
    with tempfile.TemporaryDirectory() as tmp:
        stats_file = os.path.join(tmp, 'stats.json')
        out_file = os.path.join(tmp, 'console.txt')
        image = os.path.join(guest_dir, image) if image else \
            sites_image(tmp, n)
        cmd = [lcvmm, '-q', '-k', image,
               '--nic', nic, '-p', ('n=%d %s' % (n, params)).strip(),
               '--stats', 'json', '--stats-file', stats_file]
        if cpu:
            cmd += ['--cpu', cpu]
        if name == 'reboot':
            cmd += ['--reboot']
        samples, own = [], []
        t0 = time.monotonic()
        with open(out_file, 'wb') as out:
            p = subprocess.Popen(cmd, stdout=out, stderr=subprocess.PIPE)
            next_report = t0 + 60
            while p.poll() is None:
                r = rss_kib(p.pid)
                g = guest_ram_rss_kib(p.pid)
                now = time.monotonic()
                if r is not None:
                    samples.append((now - t0, r))
                    if g is not None:
                        own.append((now - t0, r - g))
                if now >= next_report:
                    print('  %s: %.0f s, RSS %d KiB (without guest RAM %s '
                          'KiB)' % (name, now - t0,
                                    samples[-1][1] if samples else 0,
                                    own[-1][1] if own else '?'), flush=True)
                    next_report += 60
                time.sleep(interval)
            err = p.stderr.read().decode(errors='replace')
        wall = time.monotonic() - t0
        with open(out_file, errors='replace') as f:
            console = f.read()
        try:
            with open(stats_file) as f:
                stats = json.load(f)
        except (OSError, ValueError):
            stats = {}
    m = re.search(r'\b%s=(\d+)' % {'passes': 'passes', 'boots': 'boots'}.get(
        unit, 'exchanges'), console)
    done = int(m.group(1)) if m else 0
    if unit == 'sites':     # the image prints nothing: it ran to its end
        done = n if p.returncode == 0 else 0
    lc = stats.get('libcluster', {})
    return dict(workload=name, units=n, unit=unit, done=done,
                status=p.returncode, wall_s=round(wall, 1),
                samples=len(samples),
                rss_start_kib=samples[0][1] if samples else None,
                rss_peak_kib=max(s[1] for s in samples) if samples else None,
                rss_end_kib=samples[-1][1] if samples else None,
                # the first sample after 2 s and a tenth of the run: the
                # guest RAM a guest touches as it starts is in by then
                rss_settled_kib=next((s[1] for s in samples
                                      if s[0] >= max(2, wall / 10)),
                                     samples[-1][1] if samples else None),
                # lcvmm's own memory: RSS minus the guest RAM's pages, at
                # the settled sample and at the end
                own_settled_kib=next((o[1] for o in own
                                      if o[0] >= max(2, wall / 10)),
                                     own[-1][1] if own else None),
                own_end_kib=own[-1][1] if own else None,
                tcache_bytes=lc.get('tcache_bytes'),
                translations=lc.get('translations'),
                evictions=lc.get('evictions'),
                exits=stats.get('vmm', {}).get('exits'),
                reboots=stats.get('vmm', {}).get('reboots'),
                exits_saved=lc.get('exits_saved'),
                net=stats.get('net', {}),
                stderr=err.strip()[-400:])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('build')
    ap.add_argument('--workload', action='append', choices=sorted(GUESTS))
    ap.add_argument('-n', type=int, default=1000000)
    ap.add_argument('--interval', type=float, default=1.0)
    ap.add_argument('--cpu', choices=['kvm', 'unicorn'])
    ap.add_argument('--max-growth', type=int, default=1024,
                    help='KiB of RSS growth tolerated after start-up')
    ap.add_argument('--json', help='write the results there')
    ap.add_argument('--markdown', action='store_true',
                    help='print the table rows of docs/reliability.md')
    a = ap.parse_args()
    try:
        os.nice(19)
    except OSError:
        pass
    lcvmm = os.path.join(a.build, 'examples', 'vmm', 'lcvmm')
    guest_dir = os.path.join(a.build, 'examples', 'guests')
    results, ok = [], True
    for w in a.workload or ['pcnet', 'e1000']:
        print('soak %s: n=%d, RSS every %.1f s' % (w, a.n, a.interval),
              flush=True)
        r = soak(lcvmm, guest_dir, w, a.n, a.interval, a.cpu)
        results.append(r)
        growth = (r['rss_end_kib'] or 0) - (r['rss_settled_kib'] or 0)
        good = r['status'] == 0 and r['done'] == a.n and \
            growth <= a.max_growth
        ok = ok and good
        print('%s %s: %d/%d %s in %.1f s, RSS start %s peak %s end %s KiB '
              '(growth after start-up %d KiB; without guest RAM %s -> %s '
              'KiB), tcache %s bytes, %s '
              'translations, %s evictions%s' % (
                  'ok' if good else 'FAIL', w, r['done'], a.n, r['unit'],
                  r['wall_s'], r['rss_settled_kib'], r['rss_peak_kib'],
                  r['rss_end_kib'], growth, r['own_settled_kib'],
                  r['own_end_kib'], r['tcache_bytes'],
                  r['translations'], r['evictions'],
                  '' if good else ' (exit status %d: %s)' % (r['status'],
                                                             r['stderr'])),
              flush=True)
    if a.markdown:
        for r in results:
            print('| %s | %d %s | %.0f s | %.1f / %.1f / %.1f MB | %s B | '
                  '%s | %s |' % (r['workload'], r['done'], r['unit'],
                                 r['wall_s'], r['rss_settled_kib'] / 1024,
                                 r['rss_peak_kib'] / 1024,
                                 r['rss_end_kib'] / 1024, r['tcache_bytes'],
                                 r['translations'], r['evictions']))
    if a.json:
        with open(a.json, 'w') as f:
            json.dump(results, f, indent=1)
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
