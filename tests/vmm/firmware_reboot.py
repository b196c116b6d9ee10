#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Integration test: real firmware rebooted by the guest (lcvmm --reboot).

SeaBIOS runs iPXE's PCnet option ROM, which fetches guest-reboot over
TFTP from lcvmm's built-in peer and boots it; the guest resets the machine
n times, through the chipset's reset register (port 0xCF9) and a triple
fault in turn, and each reset boots the whole firmware again: a new KVM
VM, the board's devices rebuilt, the PAM registers back at reset (SeaBIOS
copies itself to RAM anew), fw_cfg offering the option ROM again, iPXE's
DHCP and TFTP again, guest RAM kept (the guest's record at 8 MiB counts
the boots). Once with clustering off and once on (the engine flushed at
each reboot): SeaBIOS's and iPXE's banners must appear n + 1 times, the
guest's result line must be identical, and lcvmm must count n reboots.

  firmware_reboot.py LCVMM GUEST_REBOOT_IMAGE [--reboots N]

Exit status 0 pass, 1 fail, 77 skip (with the reason printed).
"""
import argparse
import os
import shutil
import sys
import tempfile

from run_firmware import BIOS, ROM_DIR, fetched, run, skip


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('lcvmm')
    ap.add_argument('image')
    ap.add_argument('--reboots', type=int, default=2)
    ap.add_argument('--timeout', type=float, default=150)
    args = ap.parse_args()

    if not os.access('/dev/kvm', os.R_OK | os.W_OK):
        skip('/dev/kvm is not usable here (firmware boots need KVM)')
    if not os.path.exists(BIOS):
        skip(f'{BIOS} missing (Debian package seabios)')
    if not os.path.exists(os.path.join(ROM_DIR, 'pxe-pcnet.rom')):
        skip(f'{ROM_DIR}/pxe-pcnet.rom missing (Debian package ipxe-qemu)')

    n = args.reboots
    tftp_dir = tempfile.mkdtemp(prefix='lcvmm-tftp-')
    os.chmod(tftp_dir, 0o755)
    name = os.path.basename(args.image)
    shutil.copy(args.image, os.path.join(tftp_dir, name))
    with open(os.path.join(tftp_dir, 'boot.ipxe'), 'w') as f:
        f.write(f'#!ipxe\nkernel {name} n={n}\nboot\n')
    for f in (name, 'boot.ipxe'):
        os.chmod(os.path.join(tftp_dir, f), 0o644)

    ok = True
    lines = {}
    try:
        for cluster in (False, True):
            with tempfile.NamedTemporaryFile(suffix='.json',
                                             delete=False) as f:
                stats_path = f.name
            cmd = [args.lcvmm, '-q', '--bios', BIOS, '--nic', 'pcnet',
                   '--net', f'peer,tftp={tftp_dir},boot=boot.ipxe',
                   '--debugcon', '/dev/null', '--reboot',
                   '--stats', 'json', '--stats-file', stats_path,
                   '--timeout', str(args.timeout)]
            if not cluster:
                cmd.append('--no-cluster')
            cmd, p, stats, wall = run(cmd, stats_path, args.timeout)
            out = p.stdout.decode('utf-8', 'replace')
            tag = 'on' if cluster else 'off'
            print(f'# clustering {tag}: {" ".join(cmd)}')
            print(f'#   exit {p.returncode}, {wall:.1f} s')
            if p.returncode != 0:
                print(f'FAIL: exit status {p.returncode}\n'
                      f'{p.stderr.decode("utf-8", "replace")[-2000:]}')
                print(out[-3000:])
                ok = False
                continue
            for what, want in (('SeaBIOS (version', n + 1),
                               ('iPXE (http', n + 1),
                               (f'{name}... ok', n + 1)):
                got = (len(fetched(out, name)) if what.startswith(name)
                       else out.count(what))
                if got != want:
                    print(f'FAIL: "{what}" {got} times on the console, '
                          f'want {want}')
                    ok = False
            result = [l for l in out.splitlines() if 'guest=reboot' in l]
            lines[tag] = result
            want = f'boots={n} cf9={(n + 1) // 2} triple={n // 2}'
            if not result or want not in result[-1]:
                print(f'FAIL: no result line with "{want}": {result}')
                ok = False
            reboots = (stats or {}).get('vmm', {}).get('reboots')
            if reboots != n:
                print(f'FAIL: lcvmm counted {reboots} reboots, want {n}')
                ok = False
            if stats:
                v = stats['vmm']
                print(f'#   reboots {reboots}, exits {v["exits"]}, handled '
                      f'by the engine {v["exits_handled_by_engine"]}')
        if ok and lines.get('off') != lines.get('on'):
            print(f'FAIL: the guest printed differently: off {lines["off"]}'
                  f', on {lines["on"]}')
            ok = False
        if ok:
            print(f'# {n} firmware reboots off and on: {lines["on"][-1]}')
    finally:
        shutil.rmtree(tftp_dir, ignore_errors=True)
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
