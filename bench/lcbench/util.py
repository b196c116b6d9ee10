# SPDX-License-Identifier: MIT
"""Small helpers shared by the suite: robust summaries, progress output,
JSON files, free UDP ports."""
import json
import os
import socket
import statistics
import sys
import time

_T0 = time.monotonic()


def log(msg):
    """Progress on stderr with the elapsed time, so a long run shows where
    it is (stdout stays free for the final summary)."""
    sys.stderr.write(f'[{time.monotonic() - _T0:6.1f}s] {msg}\n')
    sys.stderr.flush()


def elapsed():
    return time.monotonic() - _T0


def summary(values):
    """Median and spread of a list of numbers (None entries dropped).

    Quartiles come from statistics.quantiles (exclusive method) when there
    are at least 4 values; with fewer, q1/q3 fall back to min/max so the
    report never shows a spread narrower than the data."""
    v = sorted(x for x in values if x is not None)
    if not v:
        return None
    s = {'median': statistics.median(v), 'min': v[0], 'max': v[-1],
         'n': len(v)}
    if len(v) >= 4:
        q = statistics.quantiles(v, n=4)
        s['q1'], s['q3'] = q[0], q[2]
    else:
        s['q1'], s['q3'] = v[0], v[-1]
    return s


def ratio(a, b):
    """a / b, or None when either is missing or b is not positive."""
    if a is None or b is None or b <= 0:
        return None
    return a / b


def med(s):
    """The median of a summary() result, or None."""
    return s['median'] if s else None


def write_json(path, data):
    tmp = path + '.tmp'
    with open(tmp, 'w') as f:
        json.dump(data, f, indent=1, sort_keys=False)
        f.write('\n')
    os.replace(tmp, path)       # never leave a half-written results file


def free_udp_ports(count):
    """`count` distinct UDP ports the kernel says are free right now (a
    small race with other programs is acceptable for a benchmark)."""
    socks, ports = [], []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.bind(('127.0.0.1', 0))
            socks.append(s)
            ports.append(s.getsockname()[1])
    finally:
        for s in socks:
            s.close()
    return ports


def kvm_usable():
    """Can this process open /dev/kvm read-write?"""
    try:
        os.close(os.open('/dev/kvm', os.O_RDWR))
        return True
    except OSError:
        return False


def parse_result_line(text):
    """The guest's `guest=NAME key=value...` result line as a dict."""
    for line in reversed(text.replace('\r', '').splitlines()):
        line = line.strip()
        i = line.find('guest=')
        if i >= 0:
            return dict(w.split('=', 1) for w in line[i:].split() if '=' in w)
    return {}
