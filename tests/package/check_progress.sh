#!/bin/sh
# tests/package/check_progress.sh LC_DIFF SOURCE_DIR
# Long runs report progress on a terminal and stay quiet elsewhere:
# lc-diff --soak prints "[i/n mode] ... elapsed ..., about ... left" lines
# when forced (LC_PROGRESS=1, as on a terminal) and none when its stderr
# is a file; bench/bench_progress.py likewise, with its estimate rescaled
# by the steps already done.
set -eu
lcdiff=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

LC_PROGRESS=1 "$lcdiff" --mode real --soak 2 --seed 7 >"$tmp/out" 2>"$tmp/err"
grep -q 'lc-diff runtime: \[1/1 real\] start,' "$tmp/err" ||
    { cat "$tmp/err"; echo "progress: no start line"; exit 1; }
grep -qE 'lc-diff runtime: \[1/1 real\] done, [0-9]+ cases, 0 mismatches; elapsed 0:0[1-9], about 0:00 left' "$tmp/err" ||
    { cat "$tmp/err"; echo "progress: no done line with elapsed and estimate"; exit 1; }
LC_PROGRESS=1 "$lcdiff" --engine --mode all --count 200 --seed 7 >"$tmp/out" 2>"$tmp/err"
[ "$(grep -c 'lc-diff engine: \[[1-4]/4 [a-z0-9]*\] done, 200 cases' "$tmp/err")" = 4 ] ||
    { cat "$tmp/err"; echo "progress: --engine --count: not one done line per mode"; exit 1; }
# not a terminal, not forced: nothing on stderr
LC_PROGRESS= "$lcdiff" --mode real --soak 1 --seed 7 >"$tmp/out" 2>"$tmp/err"
[ ! -s "$tmp/err" ] || { cat "$tmp/err"; echo "progress: lines without a terminal"; exit 1; }

PYTHONDONTWRITEBYTECODE=1 python3 - "$src/bench" <<'PY'
import io, sys
sys.path.insert(0, sys.argv[1])
import bench_progress as bp

class Tty(io.StringIO):
    def isatty(self):
        return True

t = [0.0]
out = Tty()
p = bp.Progress([('machine', 'm'), ('kvm', 'a'), ('kvm', 'b'), ('finish', 'f')],
                'full', stream=out, clock=lambda: t[0])
for dt in (0, 80, 70, 70):          # every step twice as slow as expected
    t[0] += dt
    p.step()
lines = out.getvalue().splitlines()
assert len(lines) == 4, lines
assert lines[0] == 'bench: [1/4] 0:00 elapsed, about 2:05 left: m', lines[0]
# after the first step took 80 s instead of 40: the rest is scaled by 2
assert lines[1] == 'bench: [2/4] 1:20 elapsed, about 2:50 left: a', lines[1]
assert lines[3].startswith('bench: [4/4] 3:40 elapsed'), lines[3]
quiet = io.StringIO()               # not a terminal
bp.Progress([('machine', 'm')], 'quick', stream=quiet).step()
assert quiet.getvalue() == '', quiet.getvalue()
PY
echo "progress: lc-diff and bench report steps with elapsed and estimated time on a terminal, nothing otherwise"
