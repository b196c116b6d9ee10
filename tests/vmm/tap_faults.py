#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Integration test: the TAP backend failing, nothing lost silently.

  tap_faults.py LCVMM E1000_IMAGE [IDLE_IMAGE]

Inside a network namespace it makes (unshare --net; it vanishes with the
test), the kernel side of TAP "lcftap0" is 10.0.2.2 and a UDP echo server
answers the guest, as in tap_netns.sh. Cases, each checking that every
frame the guest handed the NIC is accounted for (NIC tx_frames = net
tx_offered = tx_frames + tx_dropped + tx_queued):
  - injected EAGAIN, ENOBUFS and reordering on the TAP's writes: all 100
    exchanges complete, frames retried, none dropped;
  - injected short writes and drops: the guest's exchanges stop (exit
    status 5), the losses are counted and reported on stderr;
  - the interface down: the kernel refuses every write with EIO, a real
    error: the frames are counted as dropped and lcvmm says so;
  - a frame held in the chip before the guest's receiver is on, then
    taken by a register access: the I/O thread is woken to poll the TAP
    again, and the exchanges complete;
  - with IDLE_IMAGE, a guest that never turns the NIC's receiver on, for
    each model: the host sends it frames, and the I/O thread sleeps (one
    frame held in the chip, the rest wait in the kernel) instead of
    polling a readable TAP descriptor without end.

TAP output; skipped (exit 77) without root, /dev/net/tun, unshare(1) or
ip(8).
"""
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

from vmmtest import run_cases

IF = 'lcftap0'


def skip(why):
    print(f'1..0 # SKIP {why}')
    sys.exit(77)


def outer():
    if os.geteuid() != 0:
        skip('needs root to make a network namespace')
    if not os.path.exists('/dev/net/tun'):
        skip('no /dev/net/tun')
    for tool in ('unshare', 'ip'):
        if not shutil.which(tool):
            skip(f'no {tool}')
    env = dict(os.environ, LC_TAP_INNER='1')
    p = subprocess.run(['unshare', '--net', sys.executable,
                        os.path.abspath(__file__)] + sys.argv[1:], env=env)
    sys.exit(p.returncode)


def echo_server(stop):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(('10.0.2.2', 7))
    s.settimeout(0.2)
    while not stop.is_set():
        try:
            data, peer = s.recvfrom(65536)
            s.sendto(data, peer)
        except socket.timeout:
            pass
    s.close()


def run(lcvmm, image, net, params='n=100 cpl=3 irq=0', extra=()):
    cpu = 'kvm' if os.access('/dev/kvm', os.R_OK | os.W_OK) else 'unicorn'
    with tempfile.NamedTemporaryFile(suffix='.json', delete=False) as f:
        path = f.name
    try:
        p = subprocess.run([lcvmm, '-q', '-k', image, '--nic', 'e1000',
                            '--net', net, '--cpu', cpu,
                            '-p', params, '--timeout', '60', *extra,
                            '--stats', 'json', '--stats-file', path],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=120)
        with open(path) as f:
            stats = json.load(f)
    finally:
        os.unlink(path)
    return p.returncode, p.stdout.decode(errors='replace'), \
        p.stderr.decode(errors='replace'), stats


def io_thread(pid):
    """The thread id of lcvmm's I/O thread (named lcvmm-io), or None."""
    try:
        for tid in os.listdir(f'/proc/{pid}/task'):
            with open(f'/proc/{pid}/task/{tid}/comm') as f:
                if f.read().strip() == 'lcvmm-io':
                    return tid
    except OSError:
        pass
    return None


def thread_cpu(pid, tid):
    """Seconds of CPU (user + system) the thread has used, or None."""
    try:
        with open(f'/proc/{pid}/task/{tid}/stat') as f:
            fields = f.read().rsplit(')', 1)[1].split()
    except OSError:
        return None
    # fields from the state on: utime and stime are the 12th and 13th
    return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')


def accounting(st):
    nic, net = st['nic'], st['net']
    if nic['tx_frames'] != net['tx_offered']:
        return f'NIC sent {nic["tx_frames"]}, backend got {net["tx_offered"]}'
    if net['tx_offered'] != net['tx_frames'] + net['tx_dropped'] + \
            net['tx_queued']:
        return f'frames unaccounted for: {net}'
    return None


def main():
    if os.environ.get('LC_TAP_INNER') != '1':
        outer()
    lcvmm, image = sys.argv[1:3]
    idle = sys.argv[3] if len(sys.argv) > 3 else None
    for cmd in (['ip', 'link', 'set', 'lo', 'up'],
                ['ip', 'tuntap', 'add', 'dev', IF, 'mode', 'tap'],
                ['ip', 'addr', 'add', '10.0.2.2/24', 'dev', IF],
                ['ip', 'link', 'set', IF, 'up']):
        if subprocess.run(cmd).returncode:
            skip(' '.join(cmd) + ' failed')
    stop = threading.Event()
    server = threading.Thread(target=echo_server, args=(stop,))
    server.start()
    tap = f'tap,ifname={IF}'
    tests = []

    def transient():
        rc, out, err, st = run(lcvmm, image, tap + ',fault=eagain:15%,'
                               'fault=enobufs:5%,fault=reorder:3%,'
                               'fault-seed=11')
        if rc != 0 or 'exchanges=100 ok=100' not in out:
            return f'exit status {rc}: {err.strip()[-300:]}'
        net = st['net']
        if net['tx_dropped'] or net['tx_queued'] or net['tx_retries'] < 5:
            return f'{net}'
        return accounting(st)
    tests.append(('EAGAIN, ENOBUFS, reorder on TAP writes lose nothing',
                  transient))

    def rx_transient():
        # a receive poll answered "nothing" while a frame waits: the frame
        # keeps the TAP readable and the I/O thread polls again
        rc, out, err, st = run(lcvmm, image, tap + ',rxfault=eagain:30%,'
                               'rxfault=reorder:10%,fault-seed=12')
        if rc != 0 or 'exchanges=100 ok=100' not in out:
            return f'exit status {rc}: {err.strip()[-300:]}'
        net = st['net']
        if net['rx_dropped'] or net['rx_queued'] or net['rx_faults'] < 20:
            return f'{net}'
        if net['rx_offered'] != net['rx_frames']:
            return f'offered {net["rx_offered"]} != handed over: {net}'
        return accounting(st)
    tests.append(('EAGAIN on TAP reads loses nothing', rx_transient))

    def lossy():
        rc, out, err, st = run(lcvmm, image, tap + ',fault=short:3%,'
                               'fault=drop:3%,fault-seed=2')
        if rc != 5:
            return f'exit status {rc}, want 5: {err.strip()[-300:]}'
        if st['net']['tx_dropped'] < 1 or 'net tap:' not in err:
            return f'losses not counted or reported: {st["net"]} {err!r}'
        return accounting(st)
    tests.append(('short writes and drops on TAP: counted, reported, guest '
                  'stops', lossy))

    def down():
        subprocess.run(['ip', 'link', 'set', IF, 'down'])
        try:
            rc, out, err, st = run(lcvmm, image, tap)
        finally:
            subprocess.run(['ip', 'link', 'set', IF, 'up'])
        if rc != 5:
            return f'exit status {rc}, want 5: {err.strip()[-300:]}'
        if st['net']['tx_dropped'] < 1 or st['net']['tx_frames'] or \
                os.strerror(5) not in err:
            return f'EIO not counted or reported: {st["net"]} {err!r}'
        return accounting(st)
    tests.append(('interface down (EIO from the kernel): frames counted as '
                  'dropped', down))

    def receiver_off(nic):
        # the guest (guest-tsc) never touches the NIC: its receiver stays
        # off, bus mastering too; the kernel sends broadcasts meanwhile
        cpu = 'kvm' if os.access('/dev/kvm', os.R_OK | os.W_OK) else \
            'unicorn'
        with tempfile.NamedTemporaryFile(suffix='.json', delete=False) as f:
            path = f.name
        p = subprocess.Popen([lcvmm, '-q', '-k', idle, '--nic', nic,
                              '--net', tap, '--cpu', cpu,
                              '-p', 'n=4000000000', '--timeout', '5',
                              '--stats', 'json', '--stats-file', path],
                             stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE)
        try:
            io = None
            for _ in range(100):
                io = io_thread(p.pid)
                if io or p.poll() is not None:
                    break
                time.sleep(0.05)
            if not io:
                return 'no thread named lcvmm-io in lcvmm'
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_BROADCAST, 1)
            s.bind(('10.0.2.2', 0))
            for i in range(20):
                s.sendto(b'x' * 64, ('10.0.2.255', 9))
            s.close()
            time.sleep(0.3)
            c0, t0 = thread_cpu(p.pid, io), time.monotonic()
            time.sleep(1.5)
            c1, t1 = thread_cpu(p.pid, io), time.monotonic()
            _, err = p.communicate(timeout=60)
            if c0 is None or c1 is None:
                return 'lcvmm ended before the measurement'
            with open(path) as f:
                st = json.load(f)
            net, placed = st['net'], st['nic']['rx_frames']
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
            os.unlink(path)
        busy = (c1 - c0) / (t1 - t0)
        print(f'# {nic}: I/O thread busy {busy:.1%} of {t1 - t0:.1f} s; '
              f'frames taken from TAP {net["rx_offered"]}, placed in the '
              f'guest {placed}')
        if busy > 0.2:
            return f'the I/O thread spins: busy {busy:.0%} of the time'
        if net['rx_offered'] != 1 or placed:
            return f'not one frame held in the chip: {net}, placed {placed}'
        return None

    def held_then_taken():
        # broadcasts from the host all along (every 5 ms; booting to the
        # receiver takes longer): the first arrives before the guest turns
        # its receiver on and is held in the chip, the TAP descriptor out
        # of the I/O thread's poll set; the guest's register write takes
        # it, and the I/O thread must be woken to poll the TAP again
        # (vmm.io_wakes), not left to a tick nothing arms (--nic-opt none)
        # or to the guest's next register access. Every exchange must
        # complete and every frame be accounted for.
        stop_noise = threading.Event()

        def noise():
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_BROADCAST, 1)
            s.bind(('10.0.2.2', 0))
            while not stop_noise.wait(0.005):
                s.sendto(b'n' * 64, ('10.0.2.255', 9))
            s.close()
        t = threading.Thread(target=noise)
        t.start()
        t0 = time.monotonic()
        try:
            # no deferred writes or held kicks: nothing else arms the tick
            rc, out, err, st = run(lcvmm, image, tap, 'n=20 cpl=0 irq=1',
                                   ('--nic-opt', 'none', '--timeout', '20'))
        finally:
            stop_noise.set()
            t.join()
        if rc != 0 or 'exchanges=20 ok=20' not in out:
            return f'exit status {rc}: {out.strip()[-200:]} ' \
                   f'{err.strip()[-300:]}'
        wakes = st['vmm']['io_wakes']
        print(f'# frames taken from TAP {st["net"]["rx_offered"]}, placed '
              f'{st["nic"]["rx_frames"]}, I/O thread woken {wakes} times, '
              f'{time.monotonic() - t0:.2f} s')
        if wakes < 1:
            return 'the I/O thread was never woken to poll TAP again'
        return accounting(st)
    tests.append(('a frame held before the receiver is on, then taken: the '
                  'I/O thread polls TAP again (irq-driven guest)',
                  held_then_taken))

    if idle:
        for nic in ('e1000', 'pcnet'):
            tests.append((f'{nic} receiver off while the host sends: the '
                          'I/O thread sleeps', lambda nic=nic:
                          receiver_off(nic)))

    status = run_cases([(name, fn, False) for name, fn in tests])
    stop.set()
    server.join()
    return status


if __name__ == '__main__':
    sys.exit(main())
