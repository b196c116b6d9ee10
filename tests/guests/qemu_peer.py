#!/usr/bin/env python3
"""The network peer of the libcluster guests, for QEMU's -netdev dgram.

The guests (examples/guests) talk to 10.0.2.2, MAC 52:55:0a:00:02:02,
which must answer ARP, ICMP echo and UDP echo on port 7 (docs/vmm.md,
"Network"). The reference VMM has that peer built in; under QEMU, slirp
(-netdev user) answers ARP and ICMP but does not echo UDP, so this script
plays the peer instead. QEMU 7.2's dgram netdev carries one Ethernet
frame (without FCS) per datagram on a Unix datagram socket:

    qemu_peer.py --socket /tmp/x/peer.sock &
    qemu-system-x86_64 ... \\
        -netdev dgram,id=n0,local.type=unix,local.path=/tmp/x/qemu.sock,\\
                remote.type=unix,remote.path=/tmp/x/peer.sock \\
        -device e1000,netdev=n0,bus=pci.0,addr=3,romfile=

Replies go to the address each frame came from. Frames with a bad IPv4,
ICMP or UDP checksum are counted and dropped (so a guest's checksum bugs
show up as time-outs, not as silently accepted frames); everything else
not addressed to the peer is ignored. Also importable: run_qemu.py runs
Peer.serve in a thread.
"""
import argparse
import os
import select
import socket
import struct
import sys
import threading

PEER_MAC = bytes.fromhex("52550a000202")
PEER_IP = bytes([10, 0, 2, 2])
ETH_ARP = 0x0806
ETH_IPV4 = 0x0800
PROTO_ICMP = 1
PROTO_UDP = 17
UDP_ECHO_PORT = 7


def inet_checksum(data: bytes) -> int:
    """RFC 1071 ones'-complement sum, complemented."""
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def udp_checksum(src: bytes, dst: bytes, udp: bytes) -> int:
    pseudo = src + dst + struct.pack("!BBH", 0, PROTO_UDP, len(udp))
    c = inet_checksum(pseudo + udp)
    return c or 0xFFFF


class Peer:
    def __init__(self, sock: socket.socket):
        self.sock = sock
        self.ip_id = 0
        self.stats = dict(frames=0, arp=0, icmp=0, udp=0, bad_checksum=0,
                          ignored=0)

    # ---- frame handling ----
    def handle(self, frame: bytes):
        """The reply frame for one received frame, or None."""
        self.stats["frames"] += 1
        if len(frame) < 14:
            return self._ignore()
        dst, src, ethertype = frame[0:6], frame[6:12], struct.unpack("!H", frame[12:14])[0]
        if dst not in (PEER_MAC, b"\xff" * 6):
            return self._ignore()
        if ethertype == ETH_ARP:
            return self._arp(src, frame[14:])
        if ethertype == ETH_IPV4 and dst == PEER_MAC:
            return self._ipv4(src, frame[14:])
        return self._ignore()

    def _ignore(self):
        self.stats["ignored"] += 1
        return None

    def _arp(self, src_mac, arp):
        if len(arp) < 28:
            return self._ignore()
        htype, ptype, hlen, plen, op = struct.unpack("!HHBBH", arp[:8])
        sha, spa, tpa = arp[8:14], arp[14:18], arp[24:28]
        if (htype, ptype, hlen, plen, op) != (1, ETH_IPV4, 6, 4, 1) or tpa != PEER_IP:
            return self._ignore()
        self.stats["arp"] += 1
        reply = struct.pack("!HHBBH", 1, ETH_IPV4, 6, 4, 2) + PEER_MAC + PEER_IP + sha + spa
        return self._eth(src_mac, ETH_ARP, reply)

    def _ipv4(self, src_mac, ip):
        if len(ip) < 20 or ip[0] >> 4 != 4:
            return self._ignore()
        ihl = (ip[0] & 0xF) * 4
        total = struct.unpack("!H", ip[2:4])[0]
        if ihl < 20 or total < ihl or total > len(ip):
            return self._ignore()
        if inet_checksum(ip[:ihl]) != 0:
            self.stats["bad_checksum"] += 1
            return None
        proto, src_ip, dst_ip = ip[9], ip[12:16], ip[16:20]
        if dst_ip != PEER_IP:
            return self._ignore()
        payload = ip[ihl:total]
        if proto == PROTO_ICMP:
            if len(payload) < 8 or payload[0] != 8:
                return self._ignore()
            if inet_checksum(payload) != 0:
                self.stats["bad_checksum"] += 1
                return None
            self.stats["icmp"] += 1
            body = b"\0\0\0\0" + payload[4:]
            c = inet_checksum(body)
            body = body[:2] + struct.pack("!H", c) + body[4:]
            return self._eth(src_mac, ETH_IPV4, self._ip(src_ip, PROTO_ICMP, body))
        if proto == PROTO_UDP:
            if len(payload) < 8:
                return self._ignore()
            sport, dport, ulen, csum = struct.unpack("!HHHH", payload[:8])
            if dport != UDP_ECHO_PORT or ulen < 8 or ulen > len(payload):
                return self._ignore()
            udp = payload[:ulen]
            if csum and inet_checksum(src_ip + dst_ip + struct.pack("!BBH", 0, PROTO_UDP, ulen) + udp) != 0:
                self.stats["bad_checksum"] += 1
                return None
            self.stats["udp"] += 1
            data = udp[8:]
            out = struct.pack("!HHHH", UDP_ECHO_PORT, sport, ulen, 0) + data
            c = udp_checksum(PEER_IP, src_ip, out)
            out = out[:6] + struct.pack("!H", c) + out[8:]
            return self._eth(src_mac, ETH_IPV4, self._ip(src_ip, PROTO_UDP, out))
        return self._ignore()

    def _ip(self, dst_ip, proto, payload):
        self.ip_id = (self.ip_id + 1) & 0xFFFF
        hdr = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(payload), self.ip_id,
                          0x4000, 64, proto, 0, PEER_IP, dst_ip)
        hdr = hdr[:10] + struct.pack("!H", inet_checksum(hdr)) + hdr[12:]
        return hdr + payload

    @staticmethod
    def _eth(dst_mac, ethertype, payload):
        frame = dst_mac + PEER_MAC + struct.pack("!H", ethertype) + payload
        return frame + b"\0" * max(0, 60 - len(frame))

    # ---- the socket loop ----
    def serve(self, stop: threading.Event = None, verbose=False):
        while stop is None or not stop.is_set():
            ready, _, _ = select.select([self.sock], [], [], 0.1)
            if not ready:
                continue
            try:
                frame, addr = self.sock.recvfrom(65536)
            except OSError:
                continue
            reply = self.handle(frame)
            if verbose:
                print("peer: %d bytes in, %s" % (len(frame), "%d out" % len(reply) if reply else "no reply"),
                      file=sys.stderr)
            if reply and addr:
                try:
                    self.sock.sendto(reply, addr)
                except OSError as e:   # QEMU gone
                    print("peer: send failed: %s" % e, file=sys.stderr)


def open_socket(path: str) -> socket.socket:
    if os.path.exists(path):
        os.unlink(path)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind(path)
    return s


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--socket", required=True, help="Unix datagram socket to bind (QEMU's remote.path)")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    peer = Peer(open_socket(args.socket))
    try:
        peer.serve(verbose=args.verbose)
    except KeyboardInterrupt:
        pass
    finally:
        print("peer: %s" % peer.stats, file=sys.stderr)
        os.unlink(args.socket)


if __name__ == "__main__":
    main()
