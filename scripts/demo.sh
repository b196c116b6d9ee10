#!/bin/sh
# The main demo: build libcluster and the reference VMM, then run the
# PCnet and e1000 request/response guests with clustering off and on and
# print, side by side, exits per exchange, exits saved and the speed-up
# (scripts/nic_demo.py). On KVM when /dev/kvm is usable, else on the
# Unicorn back end.
#   scripts/demo.sh [-n EXCHANGES] [--cpu kvm|unicorn]
#   scripts/demo.sh --paper    the paper's code examples through the engine
#   scripts/demo.sh --firmware [--server peer|dnsmasq]
#                              SeaBIOS + iPXE network-boot a guest over PCnet
#                              and e1000, clustering off and on (KVM only)
set -eu
cd "$(dirname "$0")/.."
. scripts/deps.sh
lc_ensure_deps
lc_setup build/demo -Dtests=false -Dbuildtype=release
ninja -C build/demo >build/demo.build.log 2>&1 ||
    { cat build/demo.build.log >&2; exit 1; }
if [ "${1:-}" = --paper ]; then
    shift
    exec build/demo/examples/paper_demo "$@"
fi
if [ "${1:-}" = --firmware ]; then
    shift
    for nic in pcnet e1000; do
        echo "== SeaBIOS + iPXE ($nic) network boot, clustering off and on"
        python3 tests/vmm/run_firmware.py build/demo/examples/vmm/lcvmm \
            "build/demo/examples/guests/guest-$nic.bin" --nic "$nic" "$@" ||
            [ $? = 77 ]
    done
    exit 0
fi
exec python3 scripts/nic_demo.py build/demo "$@"
