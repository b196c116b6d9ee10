#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Integration test: clusters through ports no device claims, on real
firmware.

  absent_ports.py LCVMM [BIOS]

SeaBIOS prints its banner to QEMU's debug console port (0x402) before it
checks that the port is there (a read of it must give 0xe9); without
--debugcon no model of lcvmm's claims it, so each write is dropped and
counted (vmm.unclaimed_pio), as QEMU drops writes to an unassigned port.
Its POST also probes absent parallel and serial ports. The firmware runs
POST and waits for a boot device (--nic none: there is none) until
--timeout.

- clustering off: the banner's writes are one exit each (at least 100);
- clustering on: the engine runs them (lcvmm's port callback answers an
  absent port as the exit would; only the ports of KVM's in-kernel PIC
  and PIT stop a cluster, examples/vmm/vm.c), at most a quarter of those
  exits remain, and the unclaimed accesses counted are the same as
  without clustering and the consoles agree as far as both got by the
  timeout (one begins the other): none lost, none made twice.

TAP output; skipped without /dev/kvm or the seabios package.
"""
import csv
import os
import subprocess
import sys
import tempfile

from vmmtest import Skip, read_stats, run_cases, stats_path

BIOS = '/usr/share/seabios/bios.bin'
DEBUG_PORT = '0x402'


def boot(lcvmm, bios, cluster):
    """(console, stats, exits writing the debug port, exits saved there)"""
    with stats_path() as path, \
            tempfile.NamedTemporaryFile(suffix='.csv') as trace:
        cmd = [lcvmm, '-q', '--bios', bios, '--nic', 'none', '--stats',
               'json', '--stats-file', path, '--trace-file', trace.name,
               '--timeout', '4'] + ([] if cluster else ['--no-cluster'])
        p = subprocess.run(cmd, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=60)
        if p.returncode != 6:       # stopped by --timeout, as intended
            raise RuntimeError(f'exit status {p.returncode}: '
                               f'{p.stderr.decode(errors="replace")[-400:]}')
        st = read_stats(path)
        with open(trace.name, newline='') as f:
            rows = [r for r in csv.DictReader(f)
                    if r['addr'] == DEBUG_PORT and r['write'] == '1']
    saved = sum(int(r['exits_saved'] or 0) for r in rows)
    return p.stdout.decode(errors='replace'), st, len(rows), saved


def main():
    lcvmm = sys.argv[1]
    bios = sys.argv[2] if len(sys.argv) > 2 else BIOS

    def case():
        if not os.path.exists(bios):
            raise Skip(f'{bios} missing (Debian package seabios)')
        out_off, st_off, n_off, _ = boot(lcvmm, bios, False)
        out_on, st_on, n_on, saved = boot(lcvmm, bios, True)
        if not st_off or not st_on:
            return 'a boot left no statistics'
        u_off = st_off['vmm']['unclaimed_pio']
        u_on = st_on['vmm']['unclaimed_pio']
        print(f'# debug port writes: {n_off} exits off, {n_on} on '
              f'({saved} saved there); unclaimed port accesses {u_off} '
              f'off, {u_on} on; all exits {st_off["vmm"]["exits"]} off, '
              f'{st_on["vmm"]["exits"]} on')
        if n_off < 100:
            return f'{n_off} exits writing {DEBUG_PORT} without clustering'
        if n_on > n_off // 4:
            return (f'{n_on} exits writing {DEBUG_PORT} with clustering: '
                    'runs stop at the absent port')
        if u_on != u_off:
            return (f'unclaimed port accesses {u_off} off, {u_on} on: '
                    'one was lost or made twice')
        # Both runs end at --timeout, each wherever the firmware's serial
        # output had got to: one console must begin the other (none lost,
        # none made twice), and both must show the banner.
        short, long_ = sorted((out_off, out_on), key=len)
        if 'SeaBIOS' not in short:
            return f'no SeaBIOS banner on the console: {short[-200:]!r}'
        if not long_.startswith(short):
            at = next(i for i, (a, b) in enumerate(zip(short, long_))
                      if a != b)
            return (f'the console differs with clustering on, at byte {at}:'
                    f' off {out_off[at:at + 60]!r}, on {out_on[at:at + 60]!r}')
        return None

    return run_cases([('a cluster runs through absent ports (SeaBIOS POST)',
                       case, True)])


if __name__ == '__main__':
    sys.exit(main())
