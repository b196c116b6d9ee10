#!/bin/sh
# The main demo: build libcluster and decode the paper's code examples,
# printing each instruction's exit class beside the paper's marking.
set -eu
cd "$(dirname "$0")/.."
. scripts/deps.sh
lc_ensure_deps
lc_setup build/demo -Dtests=false
ninja -C build/demo >build/demo.build.log 2>&1 ||
    { cat build/demo.build.log >&2; exit 1; }
exec build/demo/examples/paper_demo "$@"
