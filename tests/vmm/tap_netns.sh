#!/bin/sh
# SPDX-License-Identifier: MIT
# Integration test of the TAP backend: run a NIC guest on the reference
# VMM with --net tap inside a network namespace this test makes (and that
# disappears with it). In the namespace the kernel side of the TAP is
# 10.0.2.2, so the kernel answers the guest's ARP and ICMP echo, and a
# small UDP echo server answers the exchanges.
#
#   tap_netns.sh LCVMM IMAGE NIC "GUEST PARAMS"
# Exit status 0 pass, 1 fail, 77 skip with the reason printed.
set -u
lcvmm=$1 image=$2 nic=$3 params=$4

if [ "${LC_TAP_INNER:-}" != 1 ]; then
    [ "$(id -u)" = 0 ] || { echo "SKIP: needs root to make a network namespace"; exit 77; }
    [ -c /dev/net/tun ] || { echo "SKIP: no /dev/net/tun"; exit 77; }
    command -v unshare >/dev/null || { echo "SKIP: no unshare(1)"; exit 77; }
    command -v ip >/dev/null || { echo "SKIP: no ip(8) (iproute2)"; exit 77; }
    if ! { [ -r /dev/kvm ] && [ -w /dev/kvm ]; }; then
        echo "note: /dev/kvm is not usable; running on the Unicorn back end"
    fi
    LC_TAP_INNER=1 exec unshare --net "$0" "$@"
    echo "SKIP: unshare --net failed"; exit 77
fi

set -e
ip link set lo up
ip tuntap add dev lctap0 mode tap
ip addr add 10.0.2.2/24 dev lctap0
ip link set lctap0 up
python3 - <<'PY' &
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("10.0.2.2", 7))
s.settimeout(60)
try:
    while True:
        data, peer = s.recvfrom(65536)
        s.sendto(data, peer)
except socket.timeout:
    pass
PY
server=$!
sleep 0.3
set +e
cpu=kvm
{ [ -r /dev/kvm ] && [ -w /dev/kvm ]; } || cpu=unicorn
"$lcvmm" -q -k "$image" --nic "$nic" --net tap,ifname=lctap0 --cpu "$cpu" \
    -p "$params" --timeout 60 --stats table
rc=$?
kill "$server" 2>/dev/null
if [ $rc -ne 0 ]; then
    echo "FAIL: the guest's exit status over TAP was $rc"
    exit 1
fi
echo "PASS"
