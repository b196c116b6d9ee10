#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Integration test: guests that point a NIC's rings at MMIO.

  dma_guests.py LCVMM

Builds two flat 32-bit Multiboot guests (no paging, CPL 0) and runs them
on lcvmm, clustering off and on, on KVM and Unicorn:
  - e1000: the transmit ring at the e1000's own BAR (0xFEBC0000), then a
    kick. The chip must not move TDH and must raise Received Master Abort
    in its PCI Status register; the guest clears it (write 1), points the
    ring at RAM and sends a frame, whose descriptor must come back done.
  - pcnet: the transmit ring at the local APIC (0xFEE00000), INIT, STRT,
    TDMD. CSR0 must show MERR with TXON and RXON off, PCI Status the
    master abort; the guest stops the chip, clears MERR, re-initializes
    with the ring in RAM and the chip must run (TXON, no MERR).
Each check the guest makes exits with its own code (1-6) when it fails;
0 means all held. lcvmm must keep running through the bad DMA (exit
status 0), count the DMA errors (nic dma_errors) and deliver the one
frame the e1000 guest sends after recovering.

TAP output; KVM cases skip where /dev/kvm is unusable.
"""
import json
import os
import struct
import subprocess
import sys
import tempfile

from vmmtest import run_cases

LOAD = 0x100000
BAR = 0xFEBC0000
PCI_CMD = 0x80000000 | 3 << 11 | 0x04       # 00:03.0 command/status


class Asm:
    """Just the 32-bit instructions these guests need."""

    def __init__(self):
        self.b = bytearray()

    def mov_eax(self, v):
        self.b += b'\xb8' + struct.pack('<I', v & 0xffffffff)

    def mov_edx(self, v):
        self.b += b'\xba' + struct.pack('<I', v)

    def out32(self, port, v):
        self.mov_edx(port)
        self.mov_eax(v)
        self.b += b'\xef'                       # out dx, eax

    def out16(self, port, v):
        self.mov_edx(port)
        self.mov_eax(v)
        self.b += b'\x66\xef'                   # out dx, ax

    def in16(self, port):
        self.mov_edx(port)
        self.mov_eax(0)
        self.b += b'\x66\xed'                   # in ax, dx

    def in32(self, port):
        self.mov_edx(port)
        self.b += b'\xed'                       # in eax, dx

    def st32(self, addr, v):
        self.b += b'\xc7\x05' + struct.pack('<II', addr, v & 0xffffffff)

    def st8(self, addr, v):
        self.b += b'\xc6\x05' + struct.pack('<IB', addr, v)

    def ld32(self, addr):
        self.b += b'\xa1' + struct.pack('<I', addr)     # mov eax, [addr]

    def exit(self, code):
        self.b += bytes([0xb0, code, 0xe6, 0xf4, 0xf4, 0xeb, 0xfd])

    def fail_unless_set(self, mask, code):
        """Exit with `code` unless eax & mask != 0."""
        self.b += b'\xa9' + struct.pack('<I', mask) + b'\x75\x07'
        self.exit(code)

    def fail_unless_clear(self, mask, code):
        self.b += b'\xa9' + struct.pack('<I', mask) + b'\x74\x07'
        self.exit(code)

    def pci_w(self, v):
        self.out32(0xcf8, PCI_CMD)
        self.out32(0xcfc, v)

    def pci_r(self):
        self.out32(0xcf8, PCI_CMD)
        self.in32(0xcfc)

    def image(self):
        magic, flags = 0x1BADB002, 0x00010000
        hdr = struct.pack('<8I', magic, flags,
                          (-(magic + flags)) & 0xffffffff, LOAD, LOAD, 0, 0,
                          LOAD + 32)
        return hdr + bytes(self.b)


def e1000_guest():
    a = Asm()
    a.pci_w(6)                                  # memory space, bus master
    a.st32(BAR + 0x3800, BAR)                   # TDBAL: its own registers
    a.st32(BAR + 0x3804, 0)
    a.st32(BAR + 0x3808, 128)                   # TDLEN: 8 descriptors
    a.st32(BAR + 0x3810, 0)
    a.st32(BAR + 0x3818, 0)
    a.st32(BAR + 0x0400, 0x2)                   # TCTL.EN
    a.st32(BAR + 0x3818, 1)                     # TDT: kick
    a.pci_r()
    a.fail_unless_set(0x20000000, 1)            # Received Master Abort
    a.ld32(BAR + 0x3810)
    a.fail_unless_clear(0xffff, 2)              # TDH did not move
    a.pci_w(0x20000006)                         # write 1 to clear it
    a.pci_r()
    a.fail_unless_clear(0x20000000, 3)
    # a frame from RAM: descriptor at 0x3000, buffer at 0x4000
    for i in range(0, 60, 4):
        a.st32(0x4000 + i, 0xffffffff if i < 4 else 0x08005452)
    a.st32(0x3000, 0x4000)
    a.st32(0x3004, 0)
    a.st32(0x3008, 60 | (0x09 << 24))           # length, CMD EOP|RS
    a.st32(0x300c, 0)
    a.st32(BAR + 0x3800, 0x3000)
    a.st32(BAR + 0x3818, 1)
    a.ld32(0x300c)
    a.fail_unless_set(0x1, 4)                   # DD
    a.pci_r()
    a.fail_unless_clear(0x20000000, 5)
    a.exit(0)
    return a.image()


def pcnet_guest():
    io = 0xc000
    a = Asm()

    def csr_w(r, v):
        a.out16(io + 0x12, r)
        a.out16(io + 0x10, v)

    def csr_r(r):
        a.out16(io + 0x12, r)
        a.in16(io + 0x10)

    def init(tdra):
        a.st32(0x1000, 0x30300000)              # MODE 0, RLEN/TLEN 8
        a.st32(0x1004, 0x12005452)              # PADR 52:54:00:12:34:56
        a.st32(0x1008, 0x00005634)
        a.st32(0x1014, 0x2000)                  # RDRA in RAM, no OWN
        a.st32(0x1018, tdra)
        csr_w(1, 0x1000)
        csr_w(2, 0)
        csr_w(0, 0x0001)                        # INIT
        csr_w(0, 0x0102)                        # IDON, STRT

    a.pci_w(5)                                  # I/O space, bus master
    a.in16(io + 0x14)                           # reset
    a.out16(io + 0x12, 20)
    a.out16(io + 0x16, 2)                       # BCR20: SWSTYLE 2
    a.st32(0x1010, 0)
    init(0xfee00000)                            # TX ring at the APIC
    csr_w(0, 0x0008)                            # TDMD
    csr_r(0)
    a.fail_unless_set(0x0800, 1)                # MERR
    a.fail_unless_clear(0x0030, 2)              # TXON, RXON off
    a.pci_r()
    a.fail_unless_set(0x20000000, 3)
    a.pci_w(0x20000005)
    csr_w(0, 0x0004)                            # STOP
    csr_w(0, 0x0800)                            # MERR is write-1-to-clear
    init(0x3000)                                # TX ring in RAM (empty)
    csr_w(0, 0x0008)
    csr_r(0)
    a.fail_unless_clear(0x0800, 4)
    a.fail_unless_set(0x0010, 5)                # TXON
    a.pci_r()
    a.fail_unless_clear(0x20000000, 6)
    a.exit(0)
    return a.image()


def main():
    lcvmm = sys.argv[1]
    tmp = tempfile.mkdtemp()
    images = {}
    for nic, build in (('e1000', e1000_guest), ('pcnet', pcnet_guest)):
        images[nic] = os.path.join(tmp, f'dma-{nic}.bin')
        with open(images[nic], 'wb') as f:
            f.write(build())
    cases = [(nic, cpu, cl) for nic in ('e1000', 'pcnet')
             for cpu in ('kvm', 'unicorn') for cl in (False, True)]

    def check(nic, cpu, cl):
        stats_path = os.path.join(tmp, 'stats.json')
        cmd = [lcvmm, '-q', '-k', images[nic], '--nic', nic, '--cpu', cpu,
               '--stats', 'json', '--stats-file', stats_path,
               '--timeout', '60'] + ([] if cl else ['--no-cluster'])
        p = subprocess.run(cmd, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=120)
        err = p.stderr.decode(errors='replace')
        if p.returncode != 0:
            return f'exit status {p.returncode} (guest code ' + \
                f'{p.returncode >> 1}): {err.strip()[-300:]}'
        with open(stats_path) as f:
            st = json.load(f)
        if st['nic']['dma_errors'] < 1:
            return f'no DMA error counted: {st["nic"]}'
        if nic == 'e1000' and st['net']['tx_offered'] != 1:
            return f'frames sent after recovery: {st["net"]}'
        if 'guest error' not in err:
            return 'no guest error reported on stderr'
        return None
    return run_cases([(f'{nic} rings at MMIO, {cpu}, ' +
                       ('cluster' if cl else 'no-cluster'),
                       lambda c=(nic, cpu, cl): check(*c), cpu == 'kvm')
                      for nic, cpu, cl in cases])


if __name__ == '__main__':
    sys.exit(main())
