#!/usr/bin/env python3
"""Boot the libcluster guests (examples/guests) under QEMU and check them.

Not part of the Meson test suite (QEMU is not a test dependency): run it
by hand after building the guests,

    ninja -C build/guests -j1
    tests/guests/run_qemu.py --build build/guests            # KVM
    tests/guests/run_qemu.py --build build/guests --accel tcg

Each case boots one flat image with `-kernel` (Multiboot, a.out kludge)
and the matching device at PCI 00:03.0 (the reference VMM's layout):
PCnet or e1000 on a `-netdev dgram` Unix socket served by qemu_peer.py
(ARP, ICMP echo, UDP echo), an e1000 for the PAE guest, and an e1000 as
the bus-0 NIC the BIOS guest scans. It checks QEMU's exit status
(isa-debug-exit: (code << 1) | 1, so 1 means the guest wrote 0) and the
guest's result line, and that all NIC runs agree on the checksum (it
depends only on n, size and seed).
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import qemu_peer  # noqa: E402

NIC_MODES = [("cpl=0 irq=1", 0, 1), ("cpl=0 irq=0", 0, 0), ("cpl=3", 3, 0)]
RESULT = re.compile(r"^guest=(\S+)(.*)$", re.M)


def kv(text):
    return dict(w.split("=", 1) for w in text.split() if "=" in w)


def run_case(args, name, cmdline, device, with_peer):
    image = os.path.join(args.build, "examples", "guests", "guest-%s.bin" % name)
    tmp = tempfile.mkdtemp(prefix="lc-guest-")
    peer_sock = os.path.join(tmp, "peer.sock")
    qemu_sock = os.path.join(tmp, "qemu.sock")
    stop = threading.Event()
    peer = None
    if with_peer:
        peer = qemu_peer.Peer(qemu_peer.open_socket(peer_sock))
        thread = threading.Thread(target=peer.serve, args=(stop,), daemon=True)
        thread.start()
        netdev = ("dgram,id=n0,local.type=unix,local.path=%s,"
                  "remote.type=unix,remote.path=%s" % (qemu_sock, peer_sock))
    else:
        netdev = "user,id=n0,restrict=on"
    cmd = [args.qemu, "-accel", args.accel, "-m", "64", "-nodefaults",
           "-nographic", "-no-reboot", "-display", "none", "-monitor", "none",
           "-serial", "stdio", "-kernel", image, "-append", cmdline,
           "-device", "isa-debug-exit,iobase=0xf4,iosize=4",
           "-netdev", netdev,
           "-device", "%s,netdev=n0,bus=pci.0,addr=3,romfile=" % device]
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=args.timeout)
        out, rc = p.stdout.decode(errors="replace"), p.returncode
        err = p.stderr.decode(errors="replace")
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode(errors="replace")
        err, rc = "timed out after %ds" % args.timeout, None
    elapsed = time.monotonic() - t0
    stop.set()
    shutil.rmtree(tmp, ignore_errors=True)
    out = out.replace("\r", "")
    m = RESULT.findall(out)
    result = kv(m[-1][1]) if m else {}
    return rc, out, err, elapsed, result, (peer.stats if peer else None)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default="build/guests", help="Meson build dir")
    ap.add_argument("--qemu", default="qemu-system-x86_64")
    ap.add_argument("--accel", default="kvm", choices=["kvm", "tcg"])
    ap.add_argument("-n", type=int, default=100, help="exchanges / passes / rounds")
    ap.add_argument("--timeout", type=int, default=300, help="seconds per case")
    ap.add_argument("--only", nargs="*", help="guest names to run (pcnet e1000 bios16 pae)")
    ap.add_argument("-v", "--verbose", action="store_true", help="print each guest's output")
    args = ap.parse_args()

    cases = []
    for nic in ("pcnet", "e1000"):
        for label, cpl, irq in NIC_MODES:
            cases.append((nic, "n=%d %s" % (args.n, label), nic, True,
                          dict(cpl=str(cpl), irq=str(irq), exchanges=str(args.n), ok=str(args.n))))
    cases.append(("bios16", "n=%d" % args.n, "e1000", False, dict(passes=str(args.n))))
    cases.append(("pae", "n=%d" % args.n, "e1000", False, dict(n=str(args.n), mismatches="0")))
    if args.only:
        cases = [c for c in cases if c[0] in args.only]

    failures = 0
    checksums = set()
    print("%-7s %-14s %-6s %8s  %s" % ("guest", "cmdline", "status", "time", "result"))
    for name, cmdline, device, with_peer, expect in cases:
        rc, out, err, elapsed, result, stats = run_case(args, name, cmdline, device, with_peer)
        problems = []
        if rc != 1:
            problems.append("QEMU exit status %s (want 1: guest exit code 0)" % rc)
        if not result:
            problems.append("no result line")
        for k, v in expect.items():
            if result.get(k) != v:
                problems.append("%s=%s (want %s)" % (k, result.get(k), v))
        if with_peer and "checksum" in result:
            checksums.add(result["checksum"])
        status = "ok" if not problems else "FAIL"
        shown = " ".join("%s=%s" % kv_ for kv_ in result.items())
        print("%-7s %-14s %-6s %7.2fs  %s" % (name, cmdline.replace("n=%d " % args.n, "").replace("n=%d" % args.n, "-"),
                                              status, elapsed, shown), flush=True)
        if stats and (args.verbose or problems):
            print("        peer: %s" % stats)
        if problems or args.verbose:
            for p in problems:
                print("        problem: %s" % p)
            print("        --- guest output ---")
            for line in out.splitlines():
                if line.strip():
                    print("        | " + line)
            if err.strip():
                print("        --- qemu stderr ---")
                for line in err.splitlines():
                    print("        | " + line)
        failures += bool(problems)
    if len(checksums) > 1:
        print("FAIL: NIC runs disagree on the checksum: %s" % sorted(checksums))
        failures += 1
    print("%d case(s) failed" % failures if failures else "all %d cases passed" % len(cases))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
