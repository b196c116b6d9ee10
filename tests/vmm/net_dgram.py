#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Integration test: the dgram backend (QEMU's -netdev dgram transport)
against lcvmm-peer in its own process, as the benchmarks run QEMU.

  net_dgram.py LCVMM LCVMM_PEER PCNET_IMAGE E1000_IMAGE

For each NIC, polling (CPL 3) and interrupt-driven (CPL 0), with
clustering on, the guest's exchanges with the peer over UDP must all
complete with the checksum the built-in peer gives (the same replies),
and the NIC must have received exactly what the backend took from the
socket (ARP, ICMP echo and n UDP replies). The replies arrive while the
guest runs, from the I/O thread's poll of the socket: the path the
built-in peer, answering inside the transmitting exit, never takes.
TAP output; KVM cases skip where /dev/kvm is not usable.
"""
import socket
import subprocess
import sys
import time

from vmmtest import run_cases, stats_path, read_stats


def free_ports(n):
    socks, ports = [], []
    for _ in range(n):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind(('127.0.0.1', 0))
        socks.append(s)
        ports.append(s.getsockname()[1])
    for s in socks:
        s.close()
    return ports


def result(out):
    return next((l for l in out.splitlines() if l.startswith('guest=')), '')


def run(lcvmm, image, nic, params, net, stats):
    cmd = [lcvmm, '-q', '-k', image, '--nic', nic, '--cpu', 'kvm', '-p',
           params, '--net', net, '--stats', 'json', '--stats-file', stats,
           '--timeout', '60']
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          timeout=120)


def case(lcvmm, peer, image, nic, params):
    n = int(params.split('n=')[1].split()[0])

    def fn():
        with stats_path() as sp:
            base = run(lcvmm, image, nic, params, 'peer', sp)
        want = result(base.stdout.decode(errors='replace'))
        if base.returncode or f'ok={n} ' not in want:
            return f'the built-in peer run failed: {want or base.returncode}'
        lport, pport = free_ports(2)
        p = subprocess.Popen([peer, '--listen', f'127.0.0.1:{pport}',
                              '--remote', f'127.0.0.1:{lport}'],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            time.sleep(0.1)
            with stats_path() as sp:
                r = run(lcvmm, image, nic, params,
                        f'dgram,local=127.0.0.1:{lport},'
                        f'remote=127.0.0.1:{pport}', sp)
                st = read_stats(sp)
        finally:
            p.terminate()
            p.wait(timeout=10)
        got = result(r.stdout.decode(errors='replace'))
        if r.returncode:
            err = r.stderr.decode(errors='replace').strip().splitlines()
            return f'exit status {r.returncode}: {err[-1:] or got}'
        if got != want:
            return f'over dgram "{got}", with the built-in peer "{want}"'
        nst, net = st.get('nic', {}), st.get('net', {})
        if not (nst.get('rx_frames') == net.get('rx_frames') == n + 2 and
                nst.get('tx_frames') == net.get('tx_frames') == n + 2):
            return (f'frames: nic rx {nst.get("rx_frames")} tx '
                    f'{nst.get("tx_frames")}, backend rx {net.get("rx_frames")}'
                    f' tx {net.get("tx_frames")}, want {n + 2} each')
        return None
    return fn


def main():
    lcvmm, peer, pcnet, e1000 = sys.argv[1:5]
    cases = []
    for nic, image in (('pcnet', pcnet), ('e1000', e1000)):
        for params in ('n=300 cpl=3 irq=0', 'n=20 cpl=0 irq=1',
                       'n=300 cpl=3 irq=0 burst=6'):
            cases.append((f'{nic} "{params}" over dgram',
                          case(lcvmm, peer, image, nic, params), True))
    return run_cases(cases)


if __name__ == '__main__':
    sys.exit(main())
