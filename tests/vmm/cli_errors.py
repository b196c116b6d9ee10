#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""lcvmm given mistaken arguments and broken or hostile images: each must
end with exit status 2 and a clear message naming the problem, never a
crash, a hang or a guest run.

  cli_errors.py LCVMM
"""
import os
import struct
import subprocess
import sys
import tempfile

MAGIC = 0x1BADB002


def header(flags=0x00010003, header_addr=0x100000, load_addr=0x100000,
           load_end=0, bss_end=0, entry=0x100020, checksum=None):
    if checksum is None:
        checksum = (-(MAGIC + flags)) & 0xffffffff
    return struct.pack('<8I', MAGIC, flags, checksum, header_addr, load_addr,
                       load_end, bss_end, entry)


def image(hdr, pad=64, prefix=b''):
    return prefix + hdr + b'\xf4' * pad      # HLT after the header


# A guest's debug-exit code C != 0 must never look like lcvmm's own
# statuses (2 error, 4 crash, 6 timeout): it exits (C << 1) | 1. Each image
# runs `mov eax, C; out 0xf4, eax` at its entry (just after the header).
def guest_exit(code):
    return header() + \
        b'\xb8' + struct.pack('<I', code) + b'\xe7\xf4' + b'\xf4' * 64


# Images that are not regular files: a callable makes one at `path` (or
# names another) and returns the path lcvmm is given.
def fifo(path):
    os.mkfifo(path)            # nobody writes: opening it could block
    return path


def directory(path):
    os.mkdir(path)
    return path


def dev_zero(path):
    return '/dev/zero'         # endless, and "size" 0


CASES = [
    # (name, image bytes or None for a missing file, extra args, expected
    #  text in the message)
    ('missing file', None, [], 'No such file'),
    ('empty file', b'', [], 'empty file'),
    ('no header', b'\x90' * 9000, [], 'no Multiboot header'),
    ('bad checksum', image(header(checksum=1)), [], 'no Multiboot header'),
    ('truncated header', header()[:20], [], 'truncated Multiboot header'),
    ('ELF multiboot', image(header(flags=0x3)), [], 'a.out kludge'),
    ('video mode asked', image(header(flags=0x10007)), [], 'video mode'),
    ('header_addr below load_addr',
     image(header(header_addr=0xfff00)), [], 'disagree'),
    ('load_end beyond the file',
     image(header(load_end=0x200000)), [], 'does not fit'),
    ('bss_end below load_end',
     image(header(load_end=0x100040, bss_end=0x100010)), [],
     'bss_end_addr 0x100010 is below'),
    ('below 1 MiB',
     image(header(header_addr=0x1000, load_addr=0x1000, entry=0x1020)), [],
     'above 1 MiB'),
    ('bss beyond RAM',
     image(header(load_end=0x100040, bss_end=0x7fffffff)), ['-m', '2'],
     'not inside guest RAM'),
    ('entry outside the image',
     image(header(entry=0x300000)), [], 'entry'),
    ('huge command line', image(header()), ['-p', 'x' * 2000],
     'command line longer'),
    ('unknown NIC', image(header()), ['--nic', 'rtl8139'],
     "unknown NIC model 'rtl8139'"),
    ('unknown backend', image(header()), ['--net', 'vde'],
     "unknown network backend 'vde'"),
    ('tap without ifname', image(header()), ['--net', 'tap'], 'ifname'),
    ('dgram without local', image(header()), ['--net', 'dgram'],
     'missing local'),
    ('dgram without remote', image(header()),
     ['--net', 'dgram,local=127.0.0.1:9'], 'missing remote'),
    ('dgram with a port that is no number', image(header()),
     ['--net', 'dgram,local=127.0.0.1:x,remote=127.0.0.1:9'], 'local=127.0.0.1:x: '),
    ('dgram with an address that is no HOST:PORT', image(header()),
     ['--net', 'dgram,local=127.0.0.1,remote=127.0.0.1:9'], 'expected HOST:PORT'),
    ('bad memory size', image(header()), ['-m', '0'], '--mem must be'),
    ('bad vCPU count', image(header()), ['-c', '99'], '--cpus must be'),
    ('unknown technique', image(header()), ['--cluster', 'pairs,loops'],
     "unknown technique 'loops'"),
    ('unknown cflow', image(header()), ['--cflow', 'm4'],
     "unknown control-flow method 'm4'"),
    ('bad timeout', image(header()), ['--timeout', '-1'], '--timeout must'),
    ('stray argument', image(header()), ['extra'], "unexpected argument"),
    # the findings on the command line, each kept as a case
    ('FIFO as the image', fifo, [], 'not a regular file (a FIFO)'),
    ('directory as the image', directory, [],
     'not a regular file (a directory)'),
    ('/dev/zero as the image', dev_zero, [],
     'not a regular file (a character device)'),
    ('header straddling byte 8192',
     image(header(), prefix=b'\x90' * 8176), [], 'crosses byte 8192'),
    ('unwritable stats file', image(header()),
     ['--stats', 'json', '--stats-file', '/nonexistent-dir/stats.json'],
     '--stats-file /nonexistent-dir/stats.json'),
    ('empty technique list', image(header()), ['--cluster', ''],
     'empty technique list'),
    ('commas only', image(header()), ['--cluster', ',,'],
     'empty technique list'),
    ('every technique removed', image(header()),
     ['--cluster', 'calls,-calls'], "no technique left in 'calls,-calls'"),
    ('unknown technique removed', image(header()), ['--cluster', 'all,-loops'],
     "unknown technique 'loops'"),
    ('empty NIC optimization list', image(header()), ['--nic-opt', ''],
     'empty NIC optimization list'),
    ('negative instruction limit', image(header()), ['--insn-limit', ' -5'],
     '--insn-limit must be'),
    ('signed instruction limit', image(header()), ['--insn-limit', '+5'],
     '--insn-limit must be'),
    ('instruction limit overflow', image(header()),
     ['--insn-limit', '18446744073709551616'], '--insn-limit must be'),
    ('memory size with a leading zero', image(header(load_end=0x100040, bss_end=0xa80000)),
     ['-m', '010'], 'not inside guest RAM above 1 MiB (10 MiB'),
    ('hex memory size', image(header()), ['-m', '0x10'], "not '0x10'"),
    ('instruction limit under KVM', image(header()),
     ['--cpu', 'kvm', '--insn-limit', '1000'], '--insn-limit needs'),
    ('--rom without --bios', image(header()), ['--rom', '/dev/null'],
     '--rom needs --bios'),
    ('--rom-bar without --bios', image(header()), ['--rom-bar'],
     '--rom-bar needs --bios'),
    ('--no-fw-cfg-dma without --bios', image(header()),
     ['--no-fw-cfg-dma'], '--no-fw-cfg-dma needs --bios'),
    # output asked for and lost: an error, after the guest's own status
    ('statistics on a full disk', guest_exit(3),
     ['--stats', 'json', '--stats-file', '/dev/full'],
     '/dev/full: the statistics could not be written'),
    ('trace on a full disk', guest_exit(3), ['--trace-file', '/dev/full'],
     '/dev/full: the trace could not be written'),
    ('-k and --bios', image(header()), ['--bios', '/dev/null'],
     'exclude each other'),
    ('a lost tick policy on Unicorn', image(header()),
     ['--cpu', 'unicorn', '--lost-ticks', 'discard'],
     "the Unicorn back end has no PIT"),
] + [
    (f'bad lost tick policy {v!r}', image(header()), ['--lost-ticks', v],
     'unknown lost tick policy')
    for v in ('Delay', 'slew', '')
] + [
    (f'bad stats interval {v!r}', image(header()), ['--stats-interval', v],
     '--stats-interval must be')
    for v in ('0', '-1', '0.001', 'nan', 'inf', '3601', '1e9', '0.5s', '')
] + [
    (f'bad reboot limit {v!r}', image(header()), ['--max-reboots', v],
     '--max-reboots must be')
    for v in ('0', ' 5', '-1', '18446744073709551616', '5x', '')
] + [
    (f'bad exit cost {v!r}', image(header()), ['--exit-cost', v],
     '--exit-cost (or auto) must be')
    for v in ('-1', ' 9000', '9us', '1000000001', 'Auto', '')
]



GUEST_EXITS = [(0, 0), (1, 3), (2, 5), (3, 7), (4, 9), (0x7e, 253)]

# cases that need a back end this machine may not have
NEEDS_KVM = {'instruction limit under KVM'}


def fake_bios(size=128 << 10, jump=True):
    b = bytearray(size)
    if jump and size >= 16:
        b[size - 16] = 0xea             # far JMP at the reset vector
    return bytes(b)


def fake_rom(vendor=0x1022, device=0x2000, blocks=8, size=4096,
             checksum=True, image_blocks=0, code_type=0, last=0):
    b = bytearray(size)
    b[0:3] = bytes([0x55, 0xaa, blocks])
    b[0x18:0x1a] = struct.pack('<H', 0x40)
    b[0x40:0x48] = b'PCIR' + struct.pack('<HH', vendor, device)
    # the PCI data structure's image length, code type, last-image bit
    b[0x50:0x52] = struct.pack('<H', image_blocks)
    b[0x54:0x56] = bytes([code_type, last])
    n = min(blocks * 512, size)
    if checksum:                        # the last byte makes the sum 0
        b[n - 1] = (-sum(b[:n - 1])) & 0xff
    else:
        b[n - 1] = (1 - sum(b[:n - 1])) & 0xff
    return bytes(b)


# --bios and --rom: (name, bios bytes or None, rom bytes or None or 'absent',
#  extra args, expected text)
FW_CASES = [
    ('bios missing', 'absent', None, [], 'No such file'),
    ('bios empty', b'', None, [], 'a firmware image has'),
    ('bios truncated to 64 KiB', fake_bios(64 << 10), None, [],
     'a firmware image has'),
    ('bios oversized', fake_bios(17 << 20), None, [], 'a firmware image has'),
    ('bios not firmware', fake_bios(jump=False), None, [],
     'no jump instruction at the reset vector'),
    ('bios not whole pages', fake_bios((128 << 10) + 100), None, [],
     'multiple of 4 KiB'),
    ('rom missing', fake_bios(), 'absent', [], 'No such file'),
    ('rom not a ROM', fake_bios(), bytes(4096), [], 'no 55 AA signature'),
    ('rom truncated', fake_bios(), fake_rom(blocks=100), [], 'truncated'),
    ('rom oversized', fake_bios(), fake_rom(size=(16 << 20) + 4096), [],
     'an option ROM has'),
    ('rom x86 image larger than the ROM area', fake_bios(),
     fake_rom(blocks=255, image_blocks=400, size=400 * 512, last=0x80), [],
     'larger than the 128 KiB option ROM area'),
    ('rom chain without an x86 image', fake_bios(),
     fake_rom(code_type=3, image_blocks=8, last=0x80), [],
     'no x86 BIOS image'),
    ('rom chain running past its end', fake_bios(),
     fake_rom(code_type=3, image_blocks=8, size=8192), [],
     'no 55 AA signature'),
    ('rom for another NIC', fake_bios(), fake_rom(0x8086, 0x100e), [],
     'for another PCI device'),
    ('rom without a NIC', fake_bios(), fake_rom(), ['--nic', 'none'],
     '--rom needs a NIC'),
    ('rom bad checksum', fake_bios(), fake_rom(checksum=False), [],
     'bad checksum'),
    ('rom a FIFO', fake_bios(), fifo, [], 'not a regular file (a FIFO)'),
    ('bios a directory', directory, None, [],
     'not a regular file (a directory)'),
    ('rom path of 300 characters', fake_bios(), 'long', [],
     'File name too long'),
    ('--rom-bar with --rom none', fake_bios(), None,
     ['--rom', 'none', '--rom-bar'], '--rom-bar needs an option ROM'),
]


def run_fw_cases(lcvmm, d, first):
    failed = 0
    for i, (name, bios, rom, extra, want) in enumerate(FW_CASES):
        bpath = os.path.join(d, f'bios{i}.bin')
        rpath = os.path.join(d, f'rom{i}.rom')
        if callable(bios):
            bpath = bios(bpath)
        elif bios != 'absent':
            with open(bpath, 'wb') as f:
                f.write(bios)
        cmd = [lcvmm, '-q', '--bios', bpath, '--nic', 'pcnet',
               '--stats', 'none', '--timeout', '10']
        if rom is not None:
            if callable(rom):
                rpath = rom(rpath)
            elif rom == 'long':
                rpath = os.path.join(d, 'r' * 300 + '.rom')
            elif rom != 'absent':
                with open(rpath, 'wb') as f:
                    f.write(rom)
            cmd += ['--rom', rpath]
        cmd += extra
        try:
            p = subprocess.run(cmd, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, timeout=30)
        except subprocess.TimeoutExpired:
            print(f'not ok {first + i} - {name}: hung')
            failed += 1
            continue
        err = p.stderr.decode(errors='replace')
        ok = p.returncode == 2 and want in err
        print(f'{"ok" if ok else "not ok"} {first + i} - {name}')
        if not ok:
            print(f'# exit status {p.returncode}, stderr: {err.strip()}')
            failed += 1
    return failed


def main():
    lcvmm = sys.argv[1]
    failed = 0
    with tempfile.TemporaryDirectory() as d:
        for i, (name, data, extra, want) in enumerate(CASES):
            path = os.path.join(d, f'img{i}.bin')
            if name in NEEDS_KVM and not os.access('/dev/kvm', os.R_OK | os.W_OK):
                print(f'ok {i + 1} - {name} # SKIP no /dev/kvm')
                continue
            if callable(data):
                path = data(path)
            elif data is not None:
                with open(path, 'wb') as f:
                    f.write(data)
            cmd = [lcvmm, '-q', '-k', path, '--cpu', 'unicorn',
                   '--stats', 'none', '--timeout', '10'] + extra
            try:
                p = subprocess.run(cmd, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, timeout=30)
            except subprocess.TimeoutExpired:
                print(f'not ok {i + 1} - {name}: hung')
                failed += 1
                continue
            err = p.stderr.decode(errors='replace')
            ok = p.returncode == 2 and want in err
            print(f'{"ok" if ok else "not ok"} {i + 1} - {name}')
            if not ok:
                print(f'# exit status {p.returncode}, stderr: {err.strip()}')
                failed += 1
        for j, (code, want_rc) in enumerate(GUEST_EXITS):
            path = os.path.join(d, f'exit{code}.bin')
            with open(path, 'wb') as f:
                f.write(guest_exit(code))
            p = subprocess.run([lcvmm, '-q', '-k', path, '--cpu', 'unicorn',
                                '--stats', 'none', '--timeout', '10'],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               timeout=30)
            ok = p.returncode == want_rc
            print(f'{"ok" if ok else "not ok"} {len(CASES) + j + 1} - guest '
                  f'debug-exit code {code} exits {want_rc}')
            if not ok:
                print(f'# exit status {p.returncode}')
                failed += 1
        failed += run_fw_cases(lcvmm, d, len(CASES) + len(GUEST_EXITS) + 1)
    print(f'1..{len(CASES) + len(GUEST_EXITS) + len(FW_CASES)}')
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
