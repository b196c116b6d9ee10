#!/usr/bin/env python3
"""Sum Meson test logs into one closing line: N passed, N failed[, N skipped].

TAP-protocol tests (the Check suites) count each test case; other tests
count once. A TAP test that died without reporting a failing case counts
as one failure so a crash can never pass silently.
"""
import json
import re
import sys

TAP = re.compile(r'^(not ok|ok)\b[^#\n]*(#\s*(SKIP|skip)\b)?', re.M)


def count(build_dir):
    passed = failed = skipped = 0
    try:
        lines = open(f'{build_dir}/meson-logs/testlog.json').read().splitlines()
    except OSError:
        print(f'{build_dir}: no test log (build failed?)')
        return 0, 1, 0
    for line in lines:
        entry = json.loads(line)
        result = entry.get('result')
        tap = TAP.findall(entry.get('stdout') or '')
        if tap:
            p = sum(1 for r, _, s in tap if r == 'ok' and not s)
            s = sum(1 for r, _, sk in tap if sk)
            f = sum(1 for r, _, sk in tap if r == 'not ok' and not sk)
            if result not in ('OK', 'SKIP', 'EXPECTEDFAIL') and f == 0:
                f = 1
            passed, failed, skipped = passed + p, failed + f, skipped + s
        elif result == 'SKIP':
            skipped += 1
        elif result in ('OK', 'EXPECTEDFAIL'):
            passed += 1
        else:
            failed += 1
    print(f'{build_dir}: {passed} passed, {failed} failed, {skipped} skipped')
    return passed, failed, skipped


def main(dirs):
    total = [0, 0, 0]
    for d in dirs:
        for i, v in enumerate(count(d)):
            total[i] += v
    line = f'{total[0]} passed, {total[1]} failed'
    if total[2]:
        line += f', {total[2]} skipped'
    print(line)
    return 1 if total[1] or total[0] == 0 else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
