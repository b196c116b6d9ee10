#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Integration test: lcvmm --reboot, a guest that resets and boots again.

  reboot_loop.py LCVMM GUEST_REBOOT_IMAGE GUEST_SMP_REBOOT_IMAGE

- guest-reboot (examples/guests/reboot.c) resets the machine n times,
  alternating port 0xCF9 and a triple fault, and writes new exiting code
  at a new address each boot; it checks that the image was loaded again
  and that RAM was kept. With --reboot, clustering on and off: exit 0,
  the same console, `reboots` = n, and with clustering on fewer exits
  and at least one translation per boot (the engine was flushed: every
  boot's site is new code);
- the same with 4 vCPUs (the APs made again in wait-for-SIPI each boot);
- guest-smp-reboot (examples/guests/smp/reboot.c) on 4 vCPUs: each boot
  starts the APs with INIT/SIPI, they run exiting sites of their own, and
  the BSP resets while they run; every AP must start again at every boot
  (clustering on and off);
- without --reboot the first reset ends the VM (status 0, "guest reset
  the machine"), as before the option existed; --max-reboots N ends it at
  the reset after N reboots, with that reset's status (a triple fault: 4);
- firmware (--bios): a 128 KiB image built here counts its boots in CMOS
  RAM (index 0x40, which a reset keeps), prints one letter per boot,
  checks that 0xE0000 shows ROM again after each reset (the PAM registers
  back at 0) and then maps it as shadow RAM and writes a marker there,
  and resets through port 0xCF9, port 0x92 and the i8042 in turn until
  its fourth boot;
- --reboot with the Unicorn back end is refused.

TAP output; KVM cases skip where /dev/kvm is unusable.
"""
import os
import struct
import subprocess
import sys
import tempfile

from vmmtest import read_stats, run_cases, stats_path


def run(cmd, timeout=120):
    """Exit status, console, stderr, statistics (dict)."""
    with stats_path() as path:
        p = subprocess.run(cmd + ['--stats', 'json', '--stats-file', path,
                                  '--timeout', str(timeout)],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=timeout + 30)
        try:
            st = read_stats(path)
        except (OSError, ValueError):
            st = None
        return (p.returncode, p.stdout.decode(errors='replace'),
                p.stderr.decode(errors='replace'), st)


def reboot_firmware(boots):
    """A 128 KiB PC firmware image (real mode, from the reset vector): see
    the module's docstring. Boot k (from 1) resets through port 0xCF9
    (k = 1, 4, ...), port 0x92 (bit 0 from 0 to 1; k = 2, 5, ...) or the
    i8042's pulse (0xFE to port 0x64; k = 3, 6, ...). Exit codes: 0 after
    `boots` boots, 1 if 0xE0000 showed the previous boot's marker (PAM not
    reset), 2 if the shadow RAM did not take the marker."""
    size = 128 << 10
    code = bytearray()
    fixups = []                 # (offset of a rel8, label)
    labels = {}

    def emit(hexstr):
        code.extend(bytes.fromhex(hexstr))

    def jcc(op, label):         # a short jump to a label
        code.extend(bytes([op, 0]))
        fixups.append((len(code) - 1, label))

    emit('fa')                          # cli
    emit('b040e670e471fec088c3')        # CMOS[0x40]: in, inc -> bl
    emit('b040e67088d8e671')            # ... and back
    emit('88d80460baf803ee')            # console: 'a' + boots - 1
    emit('b800e08ec0')                  # es = 0xE000
    emit('26803e00005a')                # cmp byte es:[0], 0x5A
    jcc(0x74, 'fail1')                  # je: the last boot's marker
    emit('baf80c66b85c00008066ef')      # CONFIG_ADDRESS = 0x8000005C
    emit('bafe0cb033ee')                # PAM5 (0x5E) = 0x33: shadow RW
    emit('26c60600005a')                # mov byte es:[0], 0x5A
    emit('26803e00005a')                # cmp byte es:[0], 0x5A
    jcc(0x75, 'fail2')
    emit('80fb' + '%02x' % boots)       # cmp bl, boots
    jcc(0x73, 'done')                   # jae
    emit('88d830e4b103f6f1')            # ax = bl; div cl (3): ah = bl % 3
    emit('80fc01')                      # cmp ah, 1
    jcc(0x74, 'cf9')
    emit('80fc02')                      # cmp ah, 2
    jcc(0x74, 'p92')
    emit('b0fee664f4ebfd')              # i8042: 0xFE to 0x64; hlt loop
    labels['cf9'] = len(code)
    emit('baf90cb006eef4ebfd')          # 0x06 to 0xCF9 (hard reset)
    labels['p92'] = len(code)
    emit('e492'                         # in al, 0x92
         '0c01e692f4ebfd')              # bit 0 set: fast reset
    for name, val in (('done', 0), ('fail1', 1), ('fail2', 2)):
        labels[name] = len(code)
        emit('baf40066b8' + struct.pack('<I', val).hex() + '66eff4')
    for at, name in fixups:
        code[at] = (labels[name] - (at + 1)) & 0xff
    img = bytearray(size)
    img[size - 0x2000:size - 0x2000 + len(code)] = code    # 0xFE000
    # the reset vector (0xFFFFFFF0, and 0xFFFF0): jmp far F000:E000
    img[size - 16:size - 11] = bytes.fromhex('ea00e000f0')
    return bytes(img)


def main():
    lcvmm, image, smp_image = sys.argv[1:4]
    base = [lcvmm, '-q', '-k', image, '--nic', 'none']
    n = 40
    tests = []

    def loop(extra):
        def t():
            res = {}
            for mode in ('on', 'off'):
                cl = [] if mode == 'on' else ['--no-cluster']
                rc, out, err, st = run(base + ['-p', f'n={n}', '--reboot'] +
                                       extra + cl)
                if rc != 0:
                    return f'clustering {mode}: exit status {rc}: {err}'
                if f'guest=reboot boots={n} cf9={n // 2} triple={n // 2}' \
                        not in out:
                    return f'clustering {mode}: no result line: {out!r}'
                if st['vmm']['reboots'] != n:
                    return f'clustering {mode}: {st["vmm"]["reboots"]} reboots'
                res[mode] = (out, st)
            if res['on'][0] != res['off'][0]:
                return 'the console differs with clustering on and off'
            on, off = res['on'][1], res['off'][1]
            if on['vmm']['exits'] >= off['vmm']['exits']:
                return (f'exits {on["vmm"]["exits"]} with clustering, '
                        f'{off["vmm"]["exits"]} without')
            # each boot's site is translated anew (a flush per reboot)
            if on['libcluster']['translations'] < n + 1:
                return f'{on["libcluster"]["translations"]} translations'
            print(f'# {n} reboots{" " + " ".join(extra) if extra else ""}: '
                  f'exits {off["vmm"]["exits"]} -> {on["vmm"]["exits"]}, '
                  f'{on["libcluster"]["translations"]} translations')
            return None
        return t

    tests.append(('reboot loop, clustering on and off', loop([]), True))
    tests.append(('reboot loop with 4 vCPUs', loop(['-c', '4']), True))

    def smp():
        n, cpus = 10, 4
        for cl in ([], ['--no-cluster']):
            rc, out, err, st = run([lcvmm, '-q', '-k', smp_image, '--nic',
                                    'none', '-c', str(cpus), '--reboot', '-p',
                                    f'n={n} cpus={cpus}'] + cl, timeout=60)
            want = (f'guest=smp-reboot cpus={cpus} boots={n} '
                    f'checkins={(n + 1) * (cpus - 1)}')
            if rc != 0 or want not in out or st['vmm']['reboots'] != n:
                return f'{cl}: exit status {rc}, {out[-200:]!r}: {err}'
        return None

    tests.append(('reset while the APs run: they start again each boot',
                  smp, True))

    def no_reboot():
        rc, out, err, st = run(base + ['-p', f'n={n}'])
        if rc != 0 or 'boot 0' not in out or 'boot 1' in out:
            return f'exit status {rc}, console {out!r}'
        if st['vmm']['reboots'] != 0:
            return f'{st["vmm"]["reboots"]} reboots'
        # --max-reboots 1: the second reset (a triple fault) ends it
        rc, out, err, st = run(base + ['-p', f'n={n}', '--max-reboots', '1'])
        if rc != 4 or 'boot 1' not in out or 'boot 2' in out or \
                'after 1 reboots' not in err:
            return f'--max-reboots 1: exit status {rc}, {out!r}, {err!r}'
        rc, out, err, st = run(base + ['-p', f'n={n}', '--max-reboots', '2',
                                       '--no-cluster'])
        if rc != 0 or 'boot 2' not in out or st['vmm']['reboots'] != 2:
            return f'--max-reboots 2: exit status {rc}, {out!r}'
        return None

    tests.append(('without --reboot a reset ends the VM; --max-reboots',
                  no_reboot, True))

    def firmware():
        with tempfile.TemporaryDirectory() as tmp:
            bios = os.path.join(tmp, 'bios.bin')
            with open(bios, 'wb') as f:
                f.write(reboot_firmware(4))
            for cl in ([], ['--no-cluster']):
                rc, out, err, st = run([lcvmm, '-q', '--bios', bios, '--nic',
                                        'none', '--reboot'] + cl, timeout=30)
                if rc != 0 or out != 'abcd' or st['vmm']['reboots'] != 3:
                    return (f'{cl}: exit status {rc}, console {out[:40]!r}'
                            f'{"..." if len(out) > 40 else ""}, '
                            f'{st and st["vmm"]["reboots"]} reboots: {err}')
                if st['firmware']['pam_remaps'] < 8:
                    return f'{st["firmware"]["pam_remaps"]} PAM remaps'
            # without --reboot: one boot
            rc, out, err, st = run([lcvmm, '-q', '--bios', bios, '--nic',
                                    'none'], timeout=30)
            if rc != 0 or out != 'a':
                return f'without --reboot: exit status {rc}, {out[:40]!r}'
        return None

    tests.append(('firmware: reset vector, CMOS kept, PAM reset', firmware,
                  True))

    def unicorn():
        p = subprocess.run(base + ['--reboot', '--cpu', 'unicorn'],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=30)
        if p.returncode != 2 or b'--reboot needs the KVM back end' \
                not in p.stderr:
            return f'exit status {p.returncode}: {p.stderr!r}'
        return None

    tests.append(('--reboot refused on Unicorn', unicorn, False))
    return run_cases(tests)


if __name__ == '__main__':
    sys.exit(main())
