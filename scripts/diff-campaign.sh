#!/bin/bash
# scripts/diff-campaign.sh: run lc-diff (tests/diff) against Unicorn until
# the guest instructions executed, summed over the four CPU modes (real,
# prot32, pae, long64), reach a target; show progress; stop at the first
# mismatch with its reproducer; record the figures in docs/differential.md.
#
#   scripts/diff-campaign.sh [--instructions N] [--mode runtime|engine|both]
#                            [--seed S] [--chunk-seconds T] [--lc-diff PATH]
#                            [--no-record]
#
# N defaults to 10^8 (suffixes k, M, G and the form 1e8 are accepted) and
# is the total over the modes and, with --mode both (the default), over
# the two sides: `runtime` (lc-diff: single instructions of the runtime)
# and `engine` (lc-diff --engine: whole clusters through the public API).
# The work is spread evenly: each next chunk goes to the (side, CPU mode)
# with the fewest instructions so far. A chunk is one lc-diff run of
# --count cases under a seed of its own (S + chunk number), sized to take
# about T seconds (default 20) from the rate of that pair's last chunk, so
# every case of the campaign is a different one and each chunk can be
# rerun alone: lc-diff [--engine] --mode M --seed SEED --count K.
#
# Runs under `nice -n 19`. Builds lc-diff in build/diff-campaign (through
# the shared build lock, /tmp/lc-build.lock) unless --lc-diff is given.
# Exit status: 0 when the target was reached with no mismatch, 1 at a
# mismatch or setup error (the reproducer is printed), 2 on usage errors.
set -eu
cd "$(dirname "$0")/.."
root=$(pwd)

target=100000000
sides="runtime engine"
seed0=1000
chunk_s=20
lcdiff=""
record=1

die() { echo "diff-campaign: $*" >&2; exit 2; }

parse_count() {
    local v=$1 m=1
    case $v in
        *[kK]) m=1000; v=${v%?} ;;
        *M) m=1000000; v=${v%?} ;;
        *G) m=1000000000; v=${v%?} ;;
    esac
    case $v in
        *e*) v=$(awk -v x="$v" 'BEGIN { printf "%.0f", x }') ;;
    esac
    case $v in ''|*[!0-9]*) die "not a count: $1" ;; esac
    echo $((v * m))
}

while [ $# -gt 0 ]; do
    case $1 in
        --instructions) [ $# -ge 2 ] || die "--instructions needs N"
                        target=$(parse_count "$2"); shift 2 ;;
        --mode) [ $# -ge 2 ] || die "--mode needs runtime|engine|both"
                case $2 in
                    runtime|engine) sides=$2 ;;
                    both) sides="runtime engine" ;;
                    *) die "--mode: runtime, engine or both" ;;
                esac; shift 2 ;;
        --seed) [ $# -ge 2 ] || die "--seed needs S"; seed0=$(parse_count "$2"); shift 2 ;;
        --chunk-seconds) [ $# -ge 2 ] || die "--chunk-seconds needs T"
                         chunk_s=$(parse_count "$2"); shift 2 ;;
        --lc-diff) [ $# -ge 2 ] || die "--lc-diff needs a path"; lcdiff=$2; shift 2 ;;
        --no-record) record=0; shift ;;
        -h|--help) sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) die "unknown argument: $1 (see --help)" ;;
    esac
done
[ "$target" -gt 0 ] || die "--instructions must be positive"

if [ -z "$lcdiff" ]; then
    if [ ! -f build/diff-campaign/build.ninja ]; then
        meson setup build/diff-campaign -Dbuildtype=release -Ddocs=disabled \
            -Dman=disabled >build/diff-campaign.setup.log 2>&1 ||
            { cat build/diff-campaign.setup.log >&2; exit 2; }
    fi
    flock /tmp/lc-build.lock ninja -j2 -C build/diff-campaign tests/diff/lc-diff \
        >build/diff-campaign.build.log 2>&1 ||
        { tail -30 build/diff-campaign.build.log >&2; exit 2; }
    lcdiff=build/diff-campaign/tests/diff/lc-diff
fi
[ -x "$lcdiff" ] || die "no lc-diff at $lcdiff"

modes="real prot32 pae long64"
commit=$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
if [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then
    commit="$commit+dirty"
fi
log=$(mktemp)
trap 'rm -f "$log"' EXIT

declare -A insns cases secs rate chunks
for s in $sides; do
    for m in $modes; do
        insns[$s.$m]=0; cases[$s.$m]=0; secs[$s.$m]=0; chunks[$s.$m]=0
        # first chunk: cases per second measured here on 2026-11-23
        # (runtime about 13000 sequences/s, engine about 4500 cases/s)
        if [ "$s" = runtime ]; then rate[$s.$m]=13000; else rate[$s.$m]=4500; fi
    done
done

total=0
chunk=0
t_start=$(date +%s.%N)
cpu_start=$(awk '{ print $14 + $15 + $16 + $17 }' /proc/$$/stat)
echo "diff-campaign: $target instructions over modes {$modes}, sides {$sides}; commit $commit; $lcdiff"

while [ "$total" -lt "$target" ]; do
    # the (side, mode) pair with the fewest instructions so far
    best=""
    for s in $sides; do
        for m in $modes; do
            if [ -z "$best" ] || [ "${insns[$s.$m]}" -lt "${insns[$best]}" ]; then
                best=$s.$m
            fi
        done
    done
    side=${best%%.*}; mode=${best#*.}
    count=$(awk -v r="${rate[$best]}" -v t="$chunk_s" 'BEGIN { c = int(r * t); if (c < 500) c = 500; print c }')
    seed=$((seed0 + chunk))
    args=(--mode "$mode" --seed "$seed" --count "$count" --max-report 1)
    [ "$side" = engine ] && args=(--engine "${args[@]}")
    set +e
    LC_PROGRESS=0 nice -n 19 "$lcdiff" "${args[@]}" >"$log" 2>&1
    rc=$?
    set -e
    if [ "$side" = engine ]; then
        line=$(grep -E '^engine mode [a-z0-9]+ *:' "$log" | tail -1)
        # engine mode long64: C cases, K calls, I instructions, B mismatches (T s, ...)
        read -r n i b t < <(echo "$line" | sed -E \
            's/^engine mode [a-z0-9]+ *: ([0-9]+) cases, [0-9]+ calls, ([0-9]+) instructions, ([0-9]+) mismatches \(([0-9.]+) s.*/\1 \2 \3 \4/')
    else
        line=$(grep -E '^mode [a-z0-9]+ *:' "$log" | tail -1)
        # mode real  : N sequences, I instructions executed, B mismatches (T s)
        read -r n i b t < <(echo "$line" | sed -E \
            's/^mode [a-z0-9]+ *: ([0-9]+) sequences, ([0-9]+) instructions executed, ([0-9]+) mismatches \(([0-9.]+) s\).*/\1 \2 \3 \4/')
    fi
    if [ "$rc" -ne 0 ] || [ -z "$line" ] || [ "${b:-1}" != 0 ]; then
        echo
        echo "diff-campaign: STOPPED at chunk $chunk ($side, $mode, seed $seed, exit status $rc)"
        echo "diff-campaign: the chunk: $lcdiff ${args[*]}"
        grep -E -A40 '^(MISMATCH|SETUP ERROR)' "$log" | head -60 || tail -40 "$log"
        [ -n "$line" ] || tail -20 "$log"
        echo "diff-campaign: $total instructions before this chunk, 0 mismatches in them"
        exit 1
    fi
    insns[$best]=$((insns[$best] + i))
    cases[$best]=$((cases[$best] + n))
    secs[$best]=$(awk -v a="${secs[$best]}" -v b="$t" 'BEGIN { printf "%.1f", a + b }')
    chunks[$best]=$((chunks[$best] + 1))
    rate[$best]=$(awk -v n="$n" -v t="$t" -v r="${rate[$best]}" 'BEGIN { if (t > 0.2) printf "%.0f", n / t; else print r * 4 }')
    total=$((total + i))
    chunk=$((chunk + 1))
    now=$(date +%s.%N)
    awk -v tot="$total" -v tgt="$target" -v t0="$t_start" -v now="$now" \
        -v s="$side" -v m="$mode" -v i="$i" -v t="$t" 'BEGIN {
        el = now - t0; left = tot > 0 ? el * (tgt - tot) / tot : 0
        if (left < 0) left = 0
        printf "[%5.1f%%] %.3g of %.3g instructions, %dm%02ds elapsed, about %dm%02ds left (last: %s %s, %d in %.1f s), 0 mismatches\n",
            100 * tot / tgt, tot, tgt, el / 60, el % 60, left / 60, left % 60, s, m, i, t
    }'
done

t_end=$(date +%s.%N)
wall=$(awk -v a="$t_start" -v b="$t_end" 'BEGIN { printf "%.0f", b - a }')
hz=$(getconf CLK_TCK)
cpu_end=$(awk '{ print $14 + $15 + $16 + $17 }' /proc/$$/stat)
cpu=$(awk -v a="$cpu_start" -v b="$cpu_end" -v hz="$hz" 'BEGIN { printf "%.0f", (b - a) / hz }')
date_utc=$(date -u +%Y-%m-%d)

echo
echo "diff-campaign: done, $total instructions, 0 mismatches, ${wall} s wall, ${cpu} s CPU (nice 19, shared machine)"
printf '%-8s %-7s %12s %10s %8s\n' side mode instructions cases seconds
for s in $sides; do
    for m in $modes; do
        printf '%-8s %-7s %12s %10s %8s\n' "$s" "$m" "${insns[$s.$m]}" "${cases[$s.$m]}" "${secs[$s.$m]}"
    done
done

if [ "$record" = 1 ]; then
    doc=docs/differential.md
    [ -f "$doc" ] || die "$doc is missing (it holds the table the rows go into)"
    for s in $sides; do
        per=""; sum=0; nc=0; ts=0
        for m in $modes; do
            per="$per ${insns[$s.$m]} /"
            sum=$((sum + insns[$s.$m])); nc=$((nc + cases[$s.$m]))
            ts=$(awk -v a="$ts" -v b="${secs[$s.$m]}" 'BEGIN { printf "%.1f", a + b }')
        done
        per=${per% /}
        row="| $date_utc | \`$commit\` | $s |$per | $sum | $nc | $ts s | ${wall} s / ${cpu} s | 0 |"
        # rows go after the last row of the campaign table (its marker line
        # `<!-- campaigns -->` ends it)
        awk -v row="$row" '/^<!-- campaigns -->$/ { print row } { print }' "$doc" >"$doc.tmp"
        mv "$doc.tmp" "$doc"
    done
    echo "diff-campaign: rows added to $doc (wall ${wall} s, CPU ${cpu} s for the whole run)"
fi
