#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Integration test: the TAP backend failing, nothing lost silently.

  tap_faults.py LCVMM E1000_IMAGE

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
    error: the frames are counted as dropped and lcvmm says so.

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


def run(lcvmm, image, net):
    cpu = 'kvm' if os.access('/dev/kvm', os.R_OK | os.W_OK) else 'unicorn'
    with tempfile.NamedTemporaryFile(suffix='.json', delete=False) as f:
        path = f.name
    try:
        p = subprocess.run([lcvmm, '-q', '-k', image, '--nic', 'e1000',
                            '--net', net, '--cpu', cpu,
                            '-p', 'n=100 cpl=3 irq=0', '--timeout', '60',
                            '--stats', 'json', '--stats-file', path],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=120)
        with open(path) as f:
            stats = json.load(f)
    finally:
        os.unlink(path)
    return p.returncode, p.stdout.decode(errors='replace'), \
        p.stderr.decode(errors='replace'), stats


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

    status = run_cases([(name, fn, False) for name, fn in tests])
    stop.set()
    server.join()
    return status


if __name__ == '__main__':
    sys.exit(main())
