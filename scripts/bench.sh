#!/bin/sh
# The benchmark suite in one command: install what it needs beyond the
# build (matplotlib for the plots, QEMU as the peer VMM), build a release
# tree in build/bench, run bench/run_all.py. The report lands in
# bench/results/<YYYY-MM-DD>/report.md (see bench/README.md).
#
#   scripts/bench.sh [--quick] [run_all.py options...]
#
# --quick is a ~2-minute smoke run. LC_BENCH_JOBS sets the build's
# parallelism (default 2: the machine is shared; the benchmarks themselves
# always run one process at a time).
set -eu
cd "$(dirname "$0")/.."
. scripts/deps.sh
lc_ensure_deps python3-matplotlib qemu-system-x86

# Progress on a terminal only (LC_PROGRESS=1 forces it, 0 silences it);
# run_all.py then prints a line per step with the time elapsed and left.
t0=$(date +%s)
progress() {
    case "${LC_PROGRESS:-}" in
    0) return 0 ;;
    1) ;;
    *) [ -t 2 ] || return 0 ;;
    esac
    echo "bench.sh: [$(( $(date +%s) - t0 )) s] $*" >&2
}

progress "configuring and building build/bench (about a minute when up to date, a few from scratch)"
lc_setup build/bench -Dbuildtype=release -Dtests=false
# -k 0: a guest image that fails to build must not stop the others; the
# suite reports any workload whose image is missing.
if ! ninja -C build/bench -j "${LC_BENCH_JOBS:-2}" -k 0 >build/bench.build.log 2>&1; then
    echo "bench.sh: parts of build/bench failed to build (build/bench.build.log):" >&2
    grep -E "FAILED|error" build/bench.build.log | head -20 >&2
    [ -x build/bench/examples/vmm/lcvmm ] || exit 1
fi

progress "build done; running the suite (bench/run_all.py)"

# Debian's python3 has python3-matplotlib; a python3 earlier on PATH (pyenv,
# a venv) may not.
PY=python3
[ -x /usr/bin/python3 ] && PY=/usr/bin/python3
exec "$PY" bench/run_all.py --build build/bench "$@"
