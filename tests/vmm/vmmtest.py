"""Shared pieces of the Python drivers in tests/vmm: the /dev/kvm probe
(the one in bench/lcbench/util.py, so a test and the benchmarks agree on
when KVM runs), the TAP case loop every driver prints, and the temporary
file lcvmm writes its --stats json to.

Each case is (name, fn, needs_kvm): fn() returns None when the case
passes, or the reason it failed; it raises Skip(reason) when it cannot run
here. A case that needs KVM is skipped with the reason, without calling
fn, where /dev/kvm is not usable.
"""
import contextlib
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', '..', 'bench'))
from lcbench.util import kvm_usable  # noqa: E402,F401


class Skip(Exception):
    """The case cannot run on this host; the message says why."""


def run_cases(cases):
    """Print the TAP plan and one `ok N - name` or `not ok N - name: why`
    line per case; 1 if any case failed, else 0 (the exit status)."""
    print(f'1..{len(cases)}')
    kvm, failed = kvm_usable(), 0
    for i, (name, fn, needs_kvm) in enumerate(cases, 1):
        if needs_kvm and not kvm:
            print(f'ok {i} - {name} # SKIP /dev/kvm is not usable')
            continue
        try:
            why = fn()
        except Skip as e:
            print(f'ok {i} - {name} # SKIP {e}')
            continue
        if why:
            failed += 1
            print(f'not ok {i} - {name}: {why}')
        else:
            print(f'ok {i} - {name}')
        sys.stdout.flush()
    return 1 if failed else 0


@contextlib.contextmanager
def stats_path():
    """A fresh file name for lcvmm's --stats-file, removed afterwards."""
    with tempfile.NamedTemporaryFile(suffix='.json', delete=False) as f:
        path = f.name
    try:
        yield path
    finally:
        os.unlink(path)


def read_stats(path):
    """The statistics lcvmm wrote, or {} where it wrote none or only part
    (a run killed or stopped early): the caller's checks say what is
    missing."""
    try:
        with open(path) as f:
            return json.load(f)
    except ValueError:
        return {}
