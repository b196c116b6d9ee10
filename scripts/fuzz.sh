#!/bin/bash
# scripts/fuzz.sh: fuzzing campaigns with figures (docs/fuzzing.md).
#
#   scripts/fuzz.sh [--minutes N | --seconds N] [--jobs N] [--cap-kb K]
#                   [--no-record] [--no-merge] [TARGET...]
#
# Builds the libFuzzer targets with clang, ASan and UBSan in build/fuzz
# (meson -Dfuzz=true, through the shared build lock /tmp/lc-build.lock),
# then for each TARGET (default: all of fuzz_decode fuzz_runtime
# fuzz_engine fuzz_nic fuzz_platform), one after the other, under
# `nice -n 19`:
#
#  1. runs it for N minutes (default 10) from its committed corpus
#     (tests/fuzz/corpus/TARGET/, read only) with its dictionary
#     (tests/fuzz/dict/TARGET.dict); new inputs go to a scratch folder;
#     --jobs N runs N fuzzing processes (libFuzzer -fork=N);
#  2. merges (-merge=1) the committed corpus and the new inputs into a
#     fresh folder, which keeps only inputs that add coverage, and, if it
#     is within the size cap (--cap-kb, default 2048 KiB per target),
#     replaces the committed corpus with it; over the cap it stops with an
#     error and leaves the committed corpus as it was;
#  3. prints executions, exec/s, coverage (cov: and ft: of libFuzzer's
#     final status line), CPU time, the corpus and the findings (crash-,
#     leak-, timeout-, oom- and slow-unit- files, kept in
#     build/fuzz-campaign/findings/TARGET-TIME/ and named here), and appends a
#     row to the campaign table of docs/fuzzing.md (not with --no-record).
#
# Exit status: 0 when no target had a finding, 1 when one did (the run goes
# on to the next target), 2 on a usage, build or corpus-cap error.
set -eu
cd "$(dirname "$0")/.."
root=$(pwd)

all="fuzz_decode fuzz_runtime fuzz_engine fuzz_nic fuzz_platform"
seconds=600
jobs=1
cap_kb=2048
record=1
merge=1
targets=""

die() { echo "fuzz.sh: $*" >&2; exit 2; }

num() { case $2 in ''|*[!0-9]*) die "$1 needs a number, not '$2'" ;; esac; }

while [ $# -gt 0 ]; do
    case $1 in
        --minutes) [ $# -ge 2 ] || die "--minutes needs N"; num "$1" "$2"; seconds=$(($2 * 60)); shift 2 ;;
        --seconds) [ $# -ge 2 ] || die "--seconds needs N"; num "$1" "$2"; seconds=$2; shift 2 ;;
        --jobs) [ $# -ge 2 ] || die "--jobs needs N"; num "$1" "$2"; jobs=$2; shift 2 ;;
        --cap-kb) [ $# -ge 2 ] || die "--cap-kb needs K"; num "$1" "$2"; cap_kb=$2; shift 2 ;;
        --no-record) record=0; shift ;;
        --no-merge) merge=0; shift ;;
        -h|--help) sed -n '2,28p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) die "unknown option $1 (see --help)" ;;
        *) case " $all " in
               *" $1 "*) targets="$targets $1" ;;
               *) die "unknown target $1 (one of: $all)" ;;
           esac; shift ;;
    esac
done
[ -n "$targets" ] || targets=$all
[ "$seconds" -gt 0 ] && [ "$jobs" -gt 0 ] || die "the time and --jobs must be positive"
if [ $((seconds % 60)) = 0 ]; then span="$((seconds / 60)) min"; else span="$seconds s"; fi

# clang, and the sanitizer and libFuzzer runtimes Debian ships apart from
# it (a clang installed without its recommended packages links nothing).
. scripts/deps.sh
lc_ensure_deps clang libclang-rt-14-dev || die "needs clang and libclang-rt-14-dev"
build=build/fuzz
if [ ! -f $build/build.ninja ]; then
    CC=clang meson setup $build -Dfuzz=true -Db_sanitize=address,undefined \
        -Db_lundef=false -Ddocs=disabled -Dman=disabled \
        >build/fuzz.setup.log 2>&1 || { cat build/fuzz.setup.log >&2; exit 2; }
fi
ninja_targets=""
for t in $targets; do ninja_targets="$ninja_targets tests/fuzz/$t"; done
# (the lock only when something is out of date: other builds queue on it)
# shellcheck disable=SC2086
if ! ninja -C $build -n $ninja_targets 2>/dev/null | grep -q "no work to do"; then
    flock /tmp/lc-build.lock ninja -j2 -C $build $ninja_targets >build/fuzz.build.log 2>&1 ||
        { tail -40 build/fuzz.build.log >&2; exit 2; }
fi

commit=$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
if [ -n "$(git status --porcelain --untracked-files=no -- . ':!tests/fuzz/corpus' ':!docs/*.md' 2>/dev/null)" ]; then
    commit="$commit+dirty"
fi
camp=build/fuzz-campaign
mkdir -p $camp
status=0
summary=""

# The flags every target runs with: the `flag = value` lines of
# tests/fuzz/libfuzzer.options, picked by the same expression the
# OSS-Fuzz build copies into each TARGET.options, as -flag=value.
lf_opts=()
while read -r flag _ value; do
    lf_opts+=("-$flag=$value")
done < <(grep -E '^[a-z_]+ = [^ ]+$' tests/fuzz/libfuzzer.options ||
         [ $? = 1 ])

for t in $targets; do
    bin=$build/tests/fuzz/$t
    corpus=tests/fuzz/corpus/$t
    dict=tests/fuzz/dict/$t.dict
    work=$camp/$t
    findings=$camp/findings/$t-$(date -u +%Y%m%dT%H%M%S)
    [ -x "$bin" ] || die "$bin was not built"
    [ -d "$corpus" ] || die "no committed corpus $corpus"
    [ -f "$dict" ] || die "no dictionary $dict"
    rm -rf "$work"
    mkdir -p "$work/new" "$findings"
    before_n=$(find "$corpus" -type f | wc -l)
    echo "== $t: $span, $jobs job(s), corpus $corpus ($before_n files), dictionary $dict"

    opts=(-max_total_time=$seconds -print_final_stats=1 -timeout=25
          -rss_limit_mb=2048 -dict="$dict" -artifact_prefix="$findings/"
          "${lf_opts[@]}")
    [ "$jobs" -gt 1 ] && opts+=(-fork="$jobs" -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1)
    # bash's `time` gives the CPU time of the fuzzer and its children
    TIMEFORMAT='%U %S'
    set +e
    { time nice -n 19 "$bin" "${opts[@]}" "$work/new" "$corpus" \
        >"$work/fuzz.log" 2>&1; } 2>"$work/time"
    rc=$?
    set -e
    cpu=$(awk '{ printf "%.0f", $1 + $2 }' "$work/time")

    # final figures: libFuzzer's stat:: lines, and the last status line's
    # cov: and ft: (in fork mode the stats are the parent's totals)
    execs=$(awk -F': *' '/^stat::number_of_executed_units/ { s += $2 } END { print s + 0 }' "$work/fuzz.log")
    rate=$(awk -F': *' '/^stat::average_exec_per_sec/ { s += $2 } END { print s + 0 }' "$work/fuzz.log")
    last=$(grep -E '^#[0-9]+.*cov: [0-9]+' "$work/fuzz.log" | tail -1 || true)
    cov=$(echo "$last" | sed -nE 's/.*cov: ([0-9]+).*/\1/p')
    ft=$(echo "$last" | sed -nE 's/.*ft: ([0-9]+).*/\1/p')
    if [ "$execs" = 0 ] && [ -n "$last" ]; then   # fork mode: from the status line
        execs=$(echo "$last" | sed -nE 's/^#([0-9]+).*/\1/p')
        rate=$(awk -v e="$execs" -v t="$seconds" 'BEGIN { printf "%.0f", e / t }')
    fi

    found=$(find "$findings" -type f \( -name 'crash-*' -o -name 'leak-*' \
        -o -name 'timeout-*' -o -name 'oom-*' -o -name 'slow-unit-*' \) | sort)
    nfound=$(printf '%s' "$found" | grep -c . || true)
    if [ "$rc" -ne 0 ] && [ "$nfound" = 0 ]; then
        echo "fuzz.sh: $t exited with status $rc and left no finding; its log:" >&2
        tail -30 "$work/fuzz.log" >&2
        nfound="?"
    fi

    # merge what adds coverage into a fresh folder; replace the corpus if
    # it is within the cap
    after_n=$before_n
    size_kb=$(du -sk "$corpus" | cut -f1)
    if [ "$merge" = 1 ]; then
        mkdir -p "$work/merged"
        nice -n 19 "$bin" -merge=1 -timeout=25 -rss_limit_mb=2048 \
            "$work/merged" "$corpus" "$work/new" >"$work/merge.log" 2>&1 ||
            { tail -20 "$work/merge.log" >&2; die "$t: merge failed (log $work/merge.log)"; }
        m_n=$(find "$work/merged" -type f | wc -l)
        m_b=$(find "$work/merged" -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')
        if [ "$m_n" = 0 ]; then
            die "$t: the merge kept no input (log $work/merge.log)"
        fi
        if [ "$m_b" -gt $((cap_kb * 1024)) ]; then
            echo "fuzz.sh: $t: the merged corpus is $m_b bytes, over the cap of $cap_kb KiB;" >&2
            echo "fuzz.sh: the committed corpus is left as it was; merged inputs in $work/merged" >&2
            exit 2
        fi
        # The merge names every input by the SHA-1 of its bytes: inputs
        # kept from the committed corpus keep their committed names.
        (cd "$corpus" && sha1sum -- *) >"$work/names"
        while read -r sum name; do
            if [ -f "$work/merged/$sum" ] && [ "$sum" != "$name" ]; then
                mv "$work/merged/$sum" "$work/merged/$name"
            fi
        done <"$work/names"
        rm -f "$corpus"/*
        cp "$work/merged"/* "$corpus"/
        after_n=$m_n
        size_kb=$(( (m_b + 1023) / 1024 ))
    fi

    printf '%s: %s executions, %s exec/s, cov %s, ft %s, CPU %s s, corpus %s -> %s files (%s KiB), findings %s\n' \
        "$t" "$execs" "$rate" "${cov:-?}" "${ft:-?}" "$cpu" "$before_n" "$after_n" "$size_kb" "$nfound"
    if [ "$nfound" != 0 ]; then
        status=1
        printf '%s\n' "$found" | sed 's/^/    finding: /'
    fi
    names=$(printf '%s' "$found" | xargs -r -n1 basename | tr '\n' ' ')
    summary="$summary$t $execs $rate ${cov:-?} ${ft:-?} $cpu $after_n $size_kb $nfound ${names% }
"
    if [ "$record" = 1 ] && [ -f docs/fuzzing.md ]; then
        d=$(date -u +%Y-%m-%d)
        fnd=$nfound
        [ "$nfound" != 0 ] && fnd="$nfound: ${names% }"
        row="| $d | \`$commit\` | $t | $span, $jobs job(s), $cpu s CPU | $execs | $rate | $cov / $ft | $after_n files, $size_kb KiB | $fnd |"
        awk -v row="$row" '/^<!-- campaigns -->$/ { print row } { print }' docs/fuzzing.md >docs/fuzzing.md.tmp
        mv docs/fuzzing.md.tmp docs/fuzzing.md
    fi
done

echo
echo "fuzz.sh summary (commit $commit, $span per target):"
printf '%-14s %12s %8s %6s %7s %7s %8s %8s %s\n' target executions exec/s cov ft CPU-s files KiB findings
printf '%s' "$summary" | while read -r t e r c f cpu n kb nf names; do
    printf '%-14s %12s %8s %6s %7s %7s %8s %8s %s %s\n' "$t" "$e" "$r" "$c" "$f" "$cpu" "$n" "$kb" "$nf" "$names"
done
exit $status
