# SPDX-License-Identifier: MIT
"""The peer VMM: QEMU (KVM accelerator) running the same guest images,
talking to the same network peer (lcvmm-peer over -netdev dgram).

QEMU's exits are not observable from outside, so only time is compared:
per-exchange time = (t(n2) - t(n1)) / (n2 - n1), where t is the time the
guest's exchange loop took, taken from when its console lines arrive
(see in_run_time); the whole-process wall-clock difference is kept too.
Both remove QEMU start-up, SeaBIOS and the guest's boot; the in-run one
also removes their run-to-run noise (about +-0.2 s here).

command() and Peer are also what tests/guests/run_qemu.py boots the guests
with: one QEMU command line and one peer (lcvmm-peer, the reference VMM's
built-in peer as a process) for the benchmarks and the QEMU check.
"""
import os
import shutil
import subprocess
import threading
import time

from .util import log, summary, free_udp_ports, parse_result_line

QEMU = 'qemu-system-x86_64'
TIMEOUT = 180


def available():
    """(path, version line) or (None, reason)."""
    path = shutil.which(QEMU)
    if not path:
        return None, f'{QEMU} not found (scripts/bench.sh installs ' \
                     'qemu-system-x86)'
    try:
        v = subprocess.run([path, '--version'], stdout=subprocess.PIPE,
                           timeout=30).stdout.decode().splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError) as e:
        return None, f'{QEMU} --version failed: {e}'
    return path, v


# For guests that need a NIC on the bus but no network (the PAE guest's
# e1000, the BIOS guest's bus scan): slirp with no way out.
NETDEV_ISOLATED = 'user,id=n0,restrict=on'


def netdev_dgram(qport, pport):
    """QEMU 7.2's -netdev dgram with inet endpoints (`qemu-system-x86_64
    -help`: local.type=inet,local.host=,local.port=,remote.type=inet,...):
    QEMU at qport, the peer at pport."""
    return ('dgram,id=n0,local.type=inet,local.host=127.0.0.1,'
            f'local.port={qport},remote.type=inet,remote.host=127.0.0.1,'
            f'remote.port={pport}')


def command(qemu, image, nic, cmdline, netdev, accel='kvm'):
    """Boot `image` (Multiboot, a.out kludge) with `nic` at PCI 00:03.0,
    the reference VMM's layout, and isa-debug-exit at 0xf4 (QEMU then
    exits with (code << 1) | 1). -nodefaults keeps QEMU from adding its
    own NIC and VGA; romfile= skips the iPXE option ROM, which SeaBIOS
    would otherwise run at POST (slow here: CPL 0 code is emulated)."""
    return [qemu, '-accel', accel, '-m', '64', '-nodefaults', '-nographic',
            '-no-reboot', '-display', 'none', '-monitor', 'none',
            '-serial', 'stdio', '-kernel', image, '-append', cmdline,
            '-device', 'isa-debug-exit,iobase=0xf4,iosize=4',
            '-netdev', netdev,
            '-device', f'{nic},netdev=n0,bus=pci.0,addr=3,romfile=']


def peer_path(build):
    return os.path.join(build, 'examples', 'vmm', 'backends', 'lcvmm-peer')


class Peer:
    """lcvmm-peer on two free UDP ports for one QEMU run: `netdev` is the
    -netdev argument that reaches it; `counters` its statistics line(s),
    printed when it is stopped on leaving the with block."""

    def __init__(self, peer_bin):
        self.peer_bin = peer_bin
        self.counters = ''

    def __enter__(self):
        qport, pport = free_udp_ports(2)
        self.netdev = netdev_dgram(qport, pport)
        self.proc = subprocess.Popen(
            [self.peer_bin, '--listen', f'127.0.0.1:{pport}',
             '--remote', f'127.0.0.1:{qport}'],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        time.sleep(0.05)                # let the peer bind its socket
        return self

    def __exit__(self, *exc):
        self.proc.terminate()
        out, _ = self.proc.communicate()
        self.counters = out.decode(errors='replace').strip()
        return False


def read_lines_timed(p, timeout=TIMEOUT):
    """The process's stdout lines, each with the time it arrived. A VMM's
    serial port on stdio is unbuffered, so arrival time is guest time.
    A watchdog kills the process after `timeout` seconds, which also ends
    the reading."""
    watchdog = threading.Timer(timeout, p.kill)
    watchdog.start()
    try:
        return [(time.monotonic(), raw.decode(errors='replace'))
                for raw in iter(p.stdout.readline, b'')]
    finally:
        watchdog.cancel()


def in_run_time(lines):
    """Seconds from the guest's "icmp echo" line (printed just before the
    exchange loop) to its result line (just after): the exchanges plus a
    constant amount of console output, which the n1/n2 difference
    cancels. Boot time and its noise are not in it."""
    t_start = next((t for t, l in lines if 'icmp echo ok=' in l), None)
    t_end = next((t for t, l in lines if 'guest=' in l), None)
    if t_start is None or t_end is None:
        return None
    return t_end - t_start


def one_run(qemu, peer_bin, wl, n):
    """One QEMU process (the peer is started first and stopped after).
    Returns a record with 'wall_s' (whole process) and 'loop_s' (in-run
    time of the exchanges), or 'error'."""
    rec = dict(n=n)
    with Peer(peer_bin) as peer:
        t0 = time.monotonic()
        p = subprocess.Popen(command(qemu, wl['image'], wl['nic'],
                                     f'n={n} {wl["params"]}', peer.netdev),
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL)
        lines = read_lines_timed(p)
        rc = p.wait()
        rec['wall_s'] = time.monotonic() - t0
        rec['loop_s'] = in_run_time(lines)
        result = parse_result_line(''.join(l for _t, l in lines))
        rec['result'] = result
        # isa-debug-exit: QEMU exits with (code << 1) | 1; 1 = guest's 0.
        if rc != 1 or result.get('ok') != str(n) or rec['loop_s'] is None:
            tail = [l.strip() for _t, l in lines if 'error' in l][:2]
            rec['error'] = (f'exit status {rc}, result {result or "missing"}'
                            + (f'; {" | ".join(tail)}' if tail else ''))
    return rec


def run_with_retries(qemu, peer_bin, wl, n, attempts=3):
    """PCnet under QEMU sometimes loses an exchange (the guest counts an
    rx error and times out): retry, and keep the failures on record."""
    failures = []
    for _ in range(attempts):
        rec = one_run(qemu, peer_bin, wl, n)
        if 'error' not in rec:
            break
        log(f'  qemu {wl["id"]} n={n}: failed: {rec["error"]}')
        failures.append(rec['error'])
    rec['failed_attempts'] = failures
    return rec


def measure_workload(qemu, peer_bin, wl, rounds):
    runs = []
    for rnd in range(rounds):
        ns = (wl['qn1'], wl['qn2'])
        for n in (ns if rnd % 2 == 0 else ns[::-1]):
            rec = run_with_retries(qemu, peer_bin, wl, n)
            rec['round'] = rnd
            runs.append(rec)
    return dict(n=(wl['qn1'], wl['qn2']), runs=runs, **derive(wl, runs))


def derive(wl, runs):
    """Per-exchange time from each round's n1/n2 pair, two ways: the
    in-run time (headline: no boot noise) and whole-process wall time."""
    n1, n2 = wl['qn1'], wl['qn2']
    by = {}
    for r in runs:
        if 'error' not in r:
            by.setdefault(r['round'], {})[r['n']] = r
    loop, wall, boot = [], [], []
    for pair in by.values():
        if n1 in pair and n2 in pair:
            a, b = pair[n1], pair[n2]
            loop.append((b['loop_s'] - a['loop_s']) / (n2 - n1) * 1e6)
            t = (b['wall_s'] - a['wall_s']) / (n2 - n1)
            wall.append(t * 1e6)
            boot.append(a['wall_s'] - t * n1)
    return dict(time_us=summary(loop), time_us_wall=summary(wall),
                boot_s=summary(boot),
                failed_attempts=sum(len(r['failed_attempts']) for r in runs),
                failed_runs=sum(1 for r in runs if 'error' in r))


def measure_all(build, workloads, rounds):
    qemu, info = available()
    if not qemu:
        log(f'qemu: skipped: {info}')
        return dict(available=False, reason=info)
    peer_bin = peer_path(build)
    if not os.path.exists(peer_bin):
        return dict(available=False, reason=f'{peer_bin} not built')
    out = dict(available=True, version=info, workloads={})
    for wl in workloads:
        if 'qn1' not in wl:
            continue
        log(f'qemu: {wl["id"]} (n={wl["qn1"]},{wl["qn2"]}, {rounds} rounds)')
        out['workloads'][wl['id']] = measure_workload(qemu, peer_bin, wl,
                                                      rounds)
    return out
