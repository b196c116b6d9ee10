#!/bin/sh
# The main demo: build libcluster, decode the paper's code examples and
# run them through the engine, then (with /dev/kvm) a KVM guest with and
# without the adapter.
set -eu
cd "$(dirname "$0")/.."
. scripts/deps.sh
lc_ensure_deps
lc_setup build/demo -Dtests=false
ninja -C build/demo >build/demo.build.log 2>&1 ||
    { cat build/demo.build.log >&2; exit 1; }
build/demo/examples/paper_demo "$@" || exit 1
echo
if [ -x build/demo/examples/embed ] && [ -r /dev/kvm ] && [ -w /dev/kvm ]; then
    echo "== on real KVM: examples/embed (a guest printing through a polled UART)"
    build/demo/examples/embed --no-cluster
    build/demo/examples/embed
else
    echo "== on real KVM: skipped (/dev/kvm is not usable here)"
fi
