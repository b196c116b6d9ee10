#!/bin/bash
# scripts/bench-layouts.sh: bench_engine's paired figure (call+ret against
# straight code by time, `bench_engine --only paired`) over several code
# layouts, for the working tree or to compare revisions.
#
#   scripts/bench-layouts.sh [--layouts N] [--rounds R] [--small-pages]
#                            [REV...]
#
# On a shared host a time figure of one build can move by 10% with the
# code's layout alone: the same source built in two directories (whose
# binaries differ only in the source paths their assertions carry)
# measured 1.017 and 1.119 (docs/engine.md, "Measured", 2026-11-28). So
# each REV is built N times (default 4, at most 8), release builds that
# differ only in -falign-functions, -falign-loops and -falign-jumps, and
# the figure is the mean over those layouts of each layout's median.
#
# REV is a git revision (its tree, exported with git archive; one from
# 273c31d on, the first whose bench_engine has --only paired) or `.`, the
# working tree (the default). Builds go to build/layouts/<rev>/L<i>
# through the shared build lock (/tmp/lc-build.lock); then every binary
# runs R times (default 12), round robin over all of them, so the host's
# drift falls on every one alike, under `nice`. Each run is
# `bench_engine --only paired --runs 25`: 99 rounds of 5,000 exits each
# of a hit, the straight and the call cluster, about half a second.
# Prints each REV's per-layout medians and mean, and with two REVs the
# second's mean against the first's. Exit status 0, 1 on a build or run
# failure, 2 on usage errors.
set -eu
cd "$(dirname "$0")/.."
root=$(pwd)

layouts=4
rounds=12
extra=""
revs=""

die() { echo "bench-layouts: $*" >&2; exit 2; }

while [ $# -gt 0 ]; do
    case "$1" in
    --layouts) [ $# -ge 2 ] || die "--layouts needs a count"; layouts=$2; shift 2 ;;
    --rounds) [ $# -ge 2 ] || die "--rounds needs a count"; rounds=$2; shift 2 ;;
    --small-pages) extra="--small-pages"; shift ;;
    -h|--help) sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) die "unknown option $1 (see --help)" ;;
    *) revs="$revs $1"; shift ;;
    esac
done
case "$layouts" in ''|*[!0-9]*) die "--layouts: not a number: $layouts" ;; esac
case "$rounds" in ''|*[!0-9]*) die "--rounds: not a number: $rounds" ;; esac
[ "$layouts" -ge 1 ] && [ "$layouts" -le 8 ] || die "--layouts: 1 to 8"
[ "$rounds" -ge 1 ] || die "--rounds: at least 1"
[ -n "$revs" ] || revs="."

. scripts/deps.sh
lc_ensure_deps python3

flags=("" "-falign-functions=64" "-falign-loops=64"
       "-falign-functions=32 -falign-jumps=16" "-falign-functions=16"
       "-falign-loops=32" "-falign-jumps=32"
       "-falign-functions=64 -falign-loops=32")

# name and source directory of each REV
names=""
for rev in $revs; do
    if [ "$rev" = . ]; then
        name=worktree
        src=$root
    else
        sha=$(git rev-parse --verify -q "$rev^{commit}") ||
            die "not a revision: $rev"
        name=${sha:0:12}
        src=$root/build/layouts/$name/src
        if [ ! -f "$src/meson.build" ]; then
            rm -rf "$src"
            mkdir -p "$src"
            git archive "$sha" | tar -x -C "$src"
        fi
    fi
    case " $names " in *" $name "*) die "$rev given twice" ;; esac
    names="$names $name"
    for i in $(seq 0 $((layouts - 1))); do
        dir=$root/build/layouts/$name/L$i
        echo "bench-layouts: building $rev, layout $i (${flags[$i]:-default})" >&2
        lc_setup "$dir" "$src" -Dbuildtype=release -Dtests=false \
            -Dc_args="${flags[$i]}" || exit 1
        flock /tmp/lc-build.lock ninja -j2 -C "$dir" bench/bench_engine \
            >"$dir.build.log" 2>&1 ||
            { tail -20 "$dir.build.log" >&2; echo "bench-layouts: build of $dir failed" >&2; exit 1; }
    done
done

out=$(mktemp)
trap 'rm -f "$out"' EXIT
echo "bench-layouts: $rounds rounds over $(echo $names | wc -w) tree(s) x $layouts layout(s)" >&2
for r in $(seq 1 "$rounds"); do
    for name in $names; do
        for i in $(seq 0 $((layouts - 1))); do
            bin=$root/build/layouts/$name/L$i/bench/bench_engine
            line=$(nice "$bin" --only paired --runs 25 $extra) ||
                { echo "bench-layouts: $bin --only paired failed (a revision before 273c31d has no such mode)" >&2; exit 1; }
            echo "$name $i ${line##*paired: }" >>"$out"
        done
    done
    echo "bench-layouts: round $r of $rounds done" >&2
done

python3 - "$out" $names <<'PY'
import collections, statistics, sys
path, names = sys.argv[1], sys.argv[2:]
d = collections.defaultdict(list)
for line in open(path):
    name, lay, v = line.split()
    d[(name, int(lay))].append(float(v))
means = {}
print("call+ret / straight by time, paired: each layout's median over its runs, and the mean over layouts")
for name in names:
    lays = sorted(l for n, l in d if n == name)
    meds = [statistics.median(d[(name, l)]) for l in lays]
    means[name] = statistics.mean(meds)
    print("%-12s %s   mean %.3f" % (name, " ".join("L%d %.3f" % (l, m) for l, m in zip(lays, meds)), means[name]))
if len(names) == 2:
    a, b = names
    print("%s against %s: %.3f" % (b, a, means[b] / means[a]))
PY
