#!/bin/sh
# The whole test suite: a -Werror build and its tests, then the same
# tests again under AddressSanitizer and UndefinedBehaviorSanitizer, then
# the multi-vCPU suite under ThreadSanitizer.
# Ends with "N passed, N failed[, N skipped]" over both runs; exits
# non-zero on any failure.
set -u
cd "$(dirname "$0")/.."
. scripts/deps.sh
lc_ensure_deps || exit 1

status=0
run() {   # run NAME BUILD_DIR [meson test args...]
    name=$1; dir=$2; shift 2
    # A failed build must not leave an earlier run's results to be counted.
    rm -f "$dir/meson-logs/testlog.json"
    echo "== $name: building $dir"
    if ! ninja -C "$dir" >"$dir.build.log" 2>&1; then
        cat "$dir.build.log"; echo "== $name: BUILD FAILED"; status=1; return
    fi
    meson test -C "$dir" --print-errorlogs "$@" || status=1
}

lc_setup build/ci -Dwerror=true -Dbuildtype=debugoptimized || exit 1
run "werror build" build/ci

lc_setup build/asan -Dwerror=true -Db_sanitize=address,undefined \
    -Db_lundef=false -Dbuildtype=debug -Dexamples=true || exit 1
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    run "ASan+UBSan build" build/asan --no-suite install

# Concurrency under ThreadSanitizer: the multi-vCPU suites, the engine's
# (threads: its thread tests and lc-diff's concurrent vCPUs) and lcvmm's
# SMP guests on KVM (smp: skipped without /dev/kvm).
lc_setup build/tsan -Dwerror=true -Db_sanitize=thread -Db_lundef=false \
    -Dbuildtype=debugoptimized || exit 1
rm -f build/tsan/meson-logs/testlog.json
echo "== ThreadSanitizer build: building build/tsan (threads and smp suites)"
if ninja -C build/tsan tests/test_threads tests/diff/lc-diff examples/vmm/lcvmm \
        examples/guests/guest-smp-nic.bin examples/guests/guest-smp-smc.bin \
        examples/guests/guest-smp-bar.bin examples/guests/guest-smp-reboot.bin \
        >build/tsan.build.log 2>&1; then
    TSAN_OPTIONS=halt_on_error=1 \
        meson test -C build/tsan --no-rebuild --print-errorlogs \
            --suite threads --suite smp ||
        status=1
else
    cat build/tsan.build.log; echo "== ThreadSanitizer build: BUILD FAILED"; status=1
fi

python3 scripts/summarize.py build/ci build/asan build/tsan || status=1
exit $status
