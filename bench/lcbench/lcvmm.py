# SPDX-License-Identifier: MIT
"""Running the reference VMM (lcvmm) once and reading what it reports."""
import json
import os
import subprocess
import tempfile

from .util import parse_result_line

# The guest's success line must say this many units were done: the key
# differs per guest (docs/vmm.md, examples/guests/README.md).
UNIT_KEYS = ('ok', 'passes', 'n')


class RunError(Exception):
    pass


# lcvmm's own exit statuses (enum lcvmm_exit_status, lcvmm/platform.h):
# even; a guest's debug-exit code C != 0 exits (C << 1) | 1, odd.
OWN_STATUS = {2: 'lcvmm error', 4: 'guest crashed', 6: 'timeout'}


def describe_status(rc):
    """What lcvmm's exit status rc means (docs/vmm.md)."""
    if rc == 0:
        return 'exit status 0 (success)'
    if rc < 0:
        return f'killed by signal {-rc}'
    if rc & 1:
        return f'exit status {rc} (guest debug-exit code {rc >> 1})'
    return f'exit status {rc} ({OWN_STATUS.get(rc, "unknown")})'


def lcvmm_path(build):
    return os.path.join(build, 'examples', 'vmm', 'lcvmm')


def invoke(lcvmm, image, nic, cpu, params, extra=(), timeout=300):
    """Run lcvmm once with JSON statistics; returns (command, process,
    guest console output, statistics dict, possibly empty). Raises
    RunError when it could not run or its statistics are unreadable."""
    fd, stats_path = tempfile.mkstemp(prefix='lcbench-', suffix='.json')
    os.close(fd)
    cmd = [lcvmm, '-q', '-k', image, '--nic', nic, '--cpu', cpu,
           '-p', params.strip(), '--stats', 'json', '--stats-file',
           stats_path, '--timeout', str(timeout)] + list(extra)
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=timeout + 30)
        out = p.stdout.decode(errors='replace')
        with open(stats_path) as f:
            stats = json.load(f) if os.path.getsize(stats_path) else {}
    except (subprocess.TimeoutExpired, OSError, ValueError) as e:
        raise RunError(f'{" ".join(cmd)}: {e}') from e
    finally:
        os.unlink(stats_path)
    return cmd, p, out, stats


def run(build, wl, n, config_args, cpu='kvm', trace=None, unicorn=False,
        timeout=300):
    """One lcvmm run of workload `wl` with n units; returns a flat dict of
    the statistics the suite uses. Raises RunError when the guest did not
    finish all n units with exit status 0."""
    params = wl['unicorn_params'] if unicorn else wl['params']
    extra = list(config_args) + (['--trace-file', trace] if trace else [])
    cmd, p, out, stats = invoke(lcvmm_path(build), wl['image'], wl['nic'],
                                cpu, f'{params} n={n}', extra, timeout)
    result = parse_result_line(out)
    if p.returncode != 0 or not all_done(result, n):
        err = p.stderr.decode(errors='replace').strip().splitlines()[-3:]
        raise RunError(f'{" ".join(cmd)}: {describe_status(p.returncode)}, '
                       f'result {result or "missing"}; {" | ".join(err)}')
    return flatten(stats, result)


def all_done(result, n):
    for k in UNIT_KEYS:
        if k in result:
            return result[k] == str(n)
    return False


def flatten(stats, result):
    """The fields of lcvmm's --stats json the suite uses (vmm.*, the
    engine's counters under libcluster.*), plus the guest's result line
    minus what legitimately differs between runs."""
    vmm = stats.get('vmm', {})
    lc = stats.get('libcluster', {}) if isinstance(stats.get('libcluster'),
                                                   dict) else {}
    nic = stats.get('nic', {}) if isinstance(stats.get('nic'), dict) else {}
    return {
        'wall_s': vmm.get('wall_s'),
        'exits': vmm.get('exits'),
        'exits_io': vmm.get('exits_io'),
        'exits_mmio': vmm.get('exits_mmio'),
        'exits_hlt': vmm.get('exits_hlt'),
        'exits_intr': vmm.get('exits_intr'),
        'coalesced_drained': vmm.get('coalesced_drained'),
        'guest_insns': vmm.get('guest_insns'),
        'saved': lc.get('exits_saved', 0),
        'cluster_insns': lc.get('insns', 0),
        'translated': lc.get('exits_translated', 0),
        'translations': lc.get('translations', 0),
        'latch_accesses': nic.get('latch_accesses'),
        'result': {k: v for k, v in result.items()},
    }
