#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Integration test: the whole network boot on real firmware. SeaBIOS
(Debian's seabios) runs the iPXE option ROM of the NIC (Debian's
ipxe-qemu); iPXE's own PCnet or e1000 driver gets a DHCP lease from the
server, fetches an iPXE script and then a multiboot guest of ours over
TFTP, and boots it; the guest runs its UDP echo exchanges through the same
NIC and ends through the debug exit port. Once with clustering off and
once on: everything the guest prints must be identical, iPXE must report
the lease and the transfers, and clustering must save exits.

  run_firmware.py LCVMM GUEST_IMAGE --nic pcnet|e1000
                  [--server peer|dnsmasq] [--bios FILE] [--params P]
                  [--idle-ms MS [--max-idle-exits-per-poll X]]
                  [--extra-arg ARG]... [--expect-debugcon TEXT]

--server peer uses lcvmm's built-in peer (DHCP and TFTP, --net
peer,tftp=DIR,boot=FILE); --server dnsmasq runs dnsmasq (a real DHCP and
TFTP server) on a TAP device inside a private network namespace.

--idle-ms makes the script wait first, MS ms by iPXE's clock, for a TFTP
transfer from a port nobody serves (UDP 6900 of the server): iPXE's wait
for a download polls its NIC without pausing (no HLT between polls), the
idle loop a driver costs between frames. Its polls fall in the tftp
phase, and the test reports that phase's exits per poll; with
--max-idle-exits-per-poll the clustered boot must not exceed X. Nothing
the server sends ends that wait early (iPXE ignores the host's ICMP port
unreachable) and no other time-out races it: it ends by iPXE's clock
alone, however fast that runs (docs/platform.md).

Exit status 0 pass, 1 fail, 77 skip (with the reason printed).
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

BIOS = '/usr/share/seabios/bios.bin'
ROM_DIR = '/usr/lib/ipxe/qemu'
SERVER_IP = '10.0.2.2'      # the peer's and dnsmasq's address
# The idle wait's polls the tftp phase must hold to be measured (the
# transfers alone take 20-60)
MIN_IDLE_POLLS = 1000
# The guest's count of frames that were none of its exchanges'
STRAY_LINE = re.compile(r'dropped \d+ unrelated frames$')
# The guest's clock against the host's in that phase, at most, when KVM's
# PIT drops late ticks: the PIT's own rate, and the phase's ends taken at
# exits (a tick or two either way in about 4 s)
MAX_DISCARD_CLOCK = 1.25


def skip(why):
    print(f'SKIP: {why}')
    sys.exit(77)


def fetched(out, image_name):
    """Where iPXE reports each fetch of the image: "NAME... ok", with the
    progress it draws in between when the transfer outlasts a second of
    its timer (" 35%" and backspaces, or a size such as "1.2 MB"). Returns
    the index just past the "o" of "ok" for each report (the guest may
    reset the console before the "k")."""
    pat = re.escape(image_name) + r'\.\.\.(?:[\d.% \x08]|[kMG]B)*? o'
    return [m.end() for m in re.finditer(pat, out)]


def guest_lines(out, image_name):
    """What the guest printed: everything after iPXE's line that names
    the image (the guest's first line may follow on the same line)."""
    ends = fetched(out, image_name)
    if not ends:
        return None
    rest = out[ends[0]:]
    if rest.startswith('k'):
        rest = rest[1:]
    return [l.rstrip('\r') for l in rest.split('\n') if l.strip()]


def run_peer(args, tftp_dir, boot, cluster):
    with tempfile.NamedTemporaryFile(suffix='.json', delete=False) as f:
        stats_path = f.name
    cmd = [args.lcvmm, '-q', '--bios', args.bios, '--nic', args.nic,
           '--net', f'peer,tftp={tftp_dir},boot={boot}',
           '--stats', 'json', '--stats-file', stats_path,
           '--timeout', str(args.timeout)] + args.extra_arg
    if args.expect_debugcon:
        cmd += ['--debugcon', os.path.join(tftp_dir, 'debugcon.txt')]
    if not cluster:
        cmd.append('--no-cluster')
    return run(cmd, stats_path, args.timeout)


def run(cmd, stats_path, timeout, prefix=None):
    t0 = time.monotonic()
    p = subprocess.run((prefix or []) + cmd, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=timeout + 60)
    wall = time.monotonic() - t0
    try:
        with open(stats_path) as f:
            stats = json.load(f)
    except (OSError, ValueError) as e:
        stats = None
        print(f'no statistics from {" ".join(cmd)}: {e}')
    finally:
        if os.path.exists(stats_path):
            os.unlink(stats_path)
    return cmd, p, stats, wall


def idle_polls(args, off, on):
    """Report the tftp phase's exits per poll, which the idle wait fills;
    1 (fail) when it holds too few polls to say, or when the clustered
    boot's figure is above --max-idle-exits-per-poll."""
    per = {}
    for t, st in (('off', off), ('on', on)):
        p = st.get('phases', {})
        polls, exits = p.get('tftp_polls', 0), p.get('tftp_exits', 0)
        ms, ticks = p.get('tftp_ms', 0), p.get('tftp_ticks', 0)
        # the guest's clock against the host's (18.2065 ticks a second)
        rate = ticks / 18.2065 * 1000 / ms if ms else 0
        print(f'# {t}: tftp phase (idle wait of {args.idle_ms} ms) '
              f'{exits} exits, {polls} polls, {ms} ms, {ticks} ticks, '
              f'guest clock {rate:.2f}x'
              + (f', {exits / polls:.3f} exits per poll' if polls else ''))
        # Where lcvmm has KVM's PIT drop late ticks (--lost-ticks auto on
        # a KVM that delivers them late), none can pile up: a clock
        # running fast is a burst of reinjected ones, which ends the wait
        # early and fills it with tick handlers (13 times fast over 1.5 s,
        # 2.65 exits per poll, before the policy).
        if st.get('firmware', {}).get('pit_ticks_discarded') and \
                rate > MAX_DISCARD_CLOCK:
            print(f'FAIL: clustering {t}: the guest clock ran {rate:.2f} '
                  f'times the host\'s with late ticks discarded, want at '
                  f'most {MAX_DISCARD_CLOCK}')
            return 1
        if polls < MIN_IDLE_POLLS:
            print(f'FAIL: clustering {t}: {polls} polls in the tftp phase, '
                  f'want at least {MIN_IDLE_POLLS} (did the idle wait run?)')
            return 1
        per[t] = exits / polls
    lim = args.max_idle_exits_per_poll
    if lim is not None and per['on'] > lim:
        print(f'FAIL: {per["on"]:.3f} exits per idle poll with clustering '
              f'on, want at most {lim}')
        return 1
    return 0


def run_dnsmasq(args, tftp_dir, boot, cluster):
    """dnsmasq on one end of a TAP device in a fresh network namespace,
    lcvmm on the other (tap_netns.sh does the same for the TAP test)."""
    with tempfile.NamedTemporaryFile(suffix='.json', delete=False) as f:
        stats_path = f.name
    # a fresh lease file each run, and no ping of the address before the
    # offer (--no-ping): that 3-s wait raced iPXE's DHCP time-out, whose
    # clock (the BIOS tick count) runs ahead of wall time when this KVM
    # delivers late ticks in a burst (docs/platform.md; a 1-s
    # --dhcp-reply-delay still races it). The DHCP phase then holds few
    # of iPXE's idle polls (5-12, where the wait held thousands).
    script = f'''
set -e
rm -f {tftp_dir}/leases
ip link set lo up
ip tuntap add dev fwtap0 mode tap
ip link set fwtap0 address 52:55:0a:00:02:02
ip addr add 10.0.2.2/24 dev fwtap0
ip -6 addr add fd00::2/64 dev fwtap0 nodad
ip link set fwtap0 up
dnsmasq --no-daemon --port=0 --interface=fwtap0 --bind-interfaces \\
  --dhcp-range=10.0.2.15,10.0.2.15,255.255.255.0,1h \\
  --enable-ra --dhcp-range=fd00::,ra-only \\
  --dhcp-option=encap:175,176,1 --no-ping \\
  --enable-tftp --tftp-root={tftp_dir} \\
  --dhcp-boot={boot} --pid-file= --log-facility=- \\
  --dhcp-leasefile={tftp_dir}/leases >{tftp_dir}/dnsmasq.log 2>&1 &
D=$!
python3 -c '
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("10.0.2.2", 7))
s.settimeout(120)
try:
    while True:
        data, peer = s.recvfrom(65536)
        s.sendto(data, peer)
except socket.timeout:
    pass
' &
E=$!
sleep 0.5
set +e
"$@"
rc=$?
kill $D $E
exit $rc
'''
    cmd = [args.lcvmm, '-q', '--bios', args.bios, '--nic', args.nic,
           '--net', 'tap,ifname=fwtap0',
           '--stats', 'json', '--stats-file', stats_path,
           '--timeout', str(args.timeout)] + args.extra_arg
    if not cluster:
        cmd.append('--no-cluster')
    return run(cmd, stats_path, args.timeout,
               prefix=['unshare', '-n', 'sh', '-c', script, 'sh'])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('lcvmm')
    ap.add_argument('image')
    ap.add_argument('--nic', required=True)
    ap.add_argument('--server', default='peer')
    ap.add_argument('--bios', default=BIOS)
    ap.add_argument('--params', default='n=10 cpl=0 irq=0')
    ap.add_argument('--timeout', type=float, default=60)
    ap.add_argument('--extra-arg', action='append', default=[],
                    help='one more lcvmm argument (e.g. --rom-bar)')
    ap.add_argument('--expect-debugcon', default=None,
                    help='text SeaBIOS must print to its debug console '
                         '(built-in peer only)')
    ap.add_argument('--min-saved', type=float, default=0.25,
                    help='fraction of exits clustering must save')
    ap.add_argument('--idle-ms', type=int, default=0,
                    help="iPXE's idle wait in the script, in its ms")
    ap.add_argument('--max-idle-exits-per-poll', type=float, default=None,
                    help='most exits per poll of the tftp phase, clustered')
    args = ap.parse_args()

    if not os.access('/dev/kvm', os.R_OK | os.W_OK):
        skip('/dev/kvm is not usable here (firmware boots need KVM)')
    if not os.path.exists(args.bios):
        skip(f'{args.bios} missing (Debian package seabios)')
    rom = os.path.join(ROM_DIR, f'pxe-{args.nic}.rom')
    for a in args.extra_arg:            # a --rom=FILE of its own
        if a.startswith('--rom='):
            rom = a[len('--rom='):]
    if not os.path.exists(rom):
        skip(f'{rom} missing (Debian package ipxe-qemu)')
    if args.server == 'dnsmasq':
        if os.geteuid() != 0:
            skip('dnsmasq over TAP needs root for the network namespace')
        if not shutil.which('dnsmasq'):
            skip('dnsmasq is not installed (Debian package dnsmasq)')
        if not os.path.exists('/dev/net/tun'):
            skip('/dev/net/tun missing')

    tftp_dir = tempfile.mkdtemp(prefix='lcvmm-tftp-')
    os.chmod(tftp_dir, 0o755)
    name = os.path.basename(args.image)
    shutil.copy(args.image, os.path.join(tftp_dir, name))
    boot = f'boot-{args.nic}.ipxe'
    idle = (f'imgfetch --timeout {args.idle_ms} '
            f'tftp://{SERVER_IP}:6900/idle || echo idle wait over\n'
            if args.idle_ms > 0 else '')
    with open(os.path.join(tftp_dir, boot), 'w') as f:
        f.write(f'#!ipxe\n{idle}kernel {name} {args.params}\nboot\n')
    os.chmod(os.path.join(tftp_dir, name), 0o644)
    os.chmod(os.path.join(tftp_dir, boot), 0o644)

    runner = run_dnsmasq if args.server == 'dnsmasq' else run_peer
    ok = True
    results = {}
    try:
        for cluster in (False, True):
            cmd, p, stats, wall = runner(args, tftp_dir, boot, cluster)
            out = p.stdout.decode('utf-8', 'replace')
            err = p.stderr.decode('utf-8', 'replace')
            tag = 'on' if cluster else 'off'
            results[tag] = (p, stats, out)
            print(f'# clustering {tag}: {" ".join(cmd)}')
            print(f'#   exit {p.returncode}, {wall:.1f} s')
            if p.returncode != 0:
                print(f'FAIL: exit status {p.returncode}\n{err[-2000:]}')
                print(out[-3000:])
                if args.server == 'dnsmasq':
                    try:
                        print(open(os.path.join(tftp_dir,
                                                'dnsmasq.log')).read()[-2000:])
                    except OSError:
                        pass
                ok = False
                continue
            for want in ('iPXE', 'net0: 10.0.2.15/255.255.255.0',
                         f'{boot} : ', '[script]', f'guest={args.nic} '):
                if want not in out:
                    print(f'FAIL: "{want}" missing from the console')
                    ok = False
            if args.expect_debugcon:
                dbg = os.path.join(tftp_dir, 'debugcon.txt')
                try:
                    with open(dbg, errors='replace') as f:
                        text = f.read()
                except OSError as e:
                    text = ''
                    print(f'FAIL: no debug console output: {e}')
                if args.expect_debugcon not in text:
                    print(f'FAIL: "{args.expect_debugcon}" missing from '
                          f'SeaBIOS\'s debug console')
                    ok = False
                else:
                    print(f'#   debug console: "{args.expect_debugcon}"')
            if stats:
                v = stats['vmm']
                print(f'#   exits {v["exits"]}, handled by the engine '
                      f'{v["exits_handled_by_engine"]}, wall '
                      f'{v["wall_s"]:.1f} s; firmware '
                      f'{json.dumps(stats.get("firmware", {}))}')
                if 'phases' in stats:
                    print(f'#   phases {json.dumps(stats["phases"])}')
                # SeaBIOS reads fw_cfg by DMA when the ID offers it, and
                # every transfer of a working boot succeeds
                fw = stats.get('firmware', {})
                dma = fw.get('fw_cfg_dma_transfers', 0)
                if '--no-fw-cfg-dma' in args.extra_arg:
                    if dma:
                        print(f'FAIL: {dma} fw_cfg DMA transfers with '
                              '--no-fw-cfg-dma')
                        ok = False
                elif not dma or fw.get('fw_cfg_dma_errors', 0):
                    print(f'FAIL: fw_cfg DMA: {dma} transfers, '
                          f'{fw.get("fw_cfg_dma_errors")} failed')
                    ok = False
        if not ok:
            return 1
        g = {t: guest_lines(results[t][2], name) for t in results}
        if args.server == 'dnsmasq' and g['off'] and g['on']:
            # Over TAP the host's stack sends what it likes (IPv6 router
            # solicitations, MLD reports, as the link comes up): how many
            # such frames the guest dropped is the host's timing, not the
            # guest's work. Reported, not compared.
            for t in g:
                stray = [l for l in g[t] if STRAY_LINE.match(l)]
                if stray:
                    print(f'# {t}: the guest printed {stray[0]!r} (the '
                          f'host\'s frames over TAP): not compared')
                g[t] = [l for l in g[t] if not STRAY_LINE.match(l)]
        if not g['off'] or g['off'] != g['on']:
            print('FAIL: the guest printed differently:')
            print(f'  off: {g["off"]}\n  on:  {g["on"]}')
            return 1
        if not any('ok=' in l and 'exchanges=' in l for l in g['on']):
            print(f'FAIL: no result line from the guest: {g["on"]}')
            return 1
        print(f'# guest output identical ({len(g["on"])} lines): '
              f'{g["on"][-1]}')
        off, on = results['off'][1], results['on'][1]
        if not off or not on:
            print('FAIL: a boot left no statistics (see above): the exits '
                  'cannot be compared')
            return 1
        e_off, e_on = off['vmm']['exits'], on['vmm']['exits']
        print(f'# exits off {e_off}, on {e_on}: '
              f'{100 * (1 - e_on / e_off):.1f}% fewer')
        for t, st in (('off', off), ('on', on)):
            p = st.get('phases', {})
            polls = p.get('dhcp_polls', 0)
            if polls:
                print(f'# {t}: dhcp phase {p["dhcp_exits"]} exits, '
                      f'{polls} polls, {p["dhcp_exits"] / polls:.2f} '
                      f'exits per poll, {p["dhcp_ms"]} ms')
        if args.idle_ms > 0 and idle_polls(args, off, on):
            return 1
        # The exits of the DHCP phase follow the host's timing, not
        # the code: iPXE waits for the offer on its timer, whose ticks
        # come late and irregularly on this KVM (docs/vmm.md); with
        # the built-in peer the same boot took 372 to 976 exits there
        # off and 203 to 666 on (2026-11-26/27). So do those of
        # iPXE's own start (from its banner to DHCP), which waits out
        # its drivers' delays on a timer too: the same boot took 2389
        # exits there in 682 ms and 3357 in 3062 ms off, 2070 to 2424
        # on (2026-11-27; one run saved 24.5% with the phase counted,
        # 41% without). Over TAP our booted guest also polls
        # for dnsmasq's replies as long as they take (8 polls in one
        # run, 316 in the next on a loaded machine). And so do
        # the TFTP transfer's: the same polls cost more exits the
        # longer the transfer takes (one pcnet boot's took 370 exits
        # in 391 ms off and 401 in 523 ms on, both with 20 polls, in a
        # suite's ASan build; the e1000 ROM-BAR boot's took 234-255
        # on alone and 636 and 750 in a loaded suite run, 2026-11-27). The saving is judged on the
        # work that is the same in every run: POST, the option ROM
        # and, with the peer, the guest's exchanges.
        phases = ('ipxe', 'dhcp', 'tftp', 'guest') \
            if args.server == 'dnsmasq' else ('ipxe', 'dhcp', 'tftp')
        for ph in phases:
            e_off -= off.get('phases', {}).get(f'{ph}_exits', 0)
            e_on -= on.get('phases', {}).get(f'{ph}_exits', 0)
        print(f'# without the {", ".join(phases)} phases: '
              f'off {e_off}, on {e_on}')
        saved = 1 - e_on / e_off if e_off else 0
        if saved < args.min_saved:
            print(f'FAIL: clustering saved {100 * saved:.1f}% of exits, '
                  f'want at least {100 * args.min_saved:.0f}%')
            return 1
        print('PASS')
        return 0
    finally:
        shutil.rmtree(tftp_dir, ignore_errors=True)


if __name__ == '__main__':
    sys.exit(main())
