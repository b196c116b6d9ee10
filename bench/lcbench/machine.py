# SPDX-License-Identifier: MIT
"""The machine description: CPU, kernel, KVM (API version, capabilities,
measured exit and ioctl costs from bench/kvm_costs), the engine's
microbenchmarks (bench_engine, bench_runtime), the build."""
import json
import os
import platform
import subprocess

from .util import log


def cpuinfo():
    """Model name, MHz and the flags that matter here (the hypervisor bit:
    this machine is itself a VM; vmx/svm: hardware virtualization)."""
    info = {}
    try:
        with open('/proc/cpuinfo') as f:
            for line in f:
                if ':' not in line:
                    continue
                k, v = (x.strip() for x in line.split(':', 1))
                if k in ('model name', 'cpu MHz', 'flags') and k not in info:
                    info[k] = v
    except OSError:
        pass
    flags = set(info.get('flags', '').split())
    return dict(model=info.get('model name', platform.processor()),
                mhz=float(info['cpu MHz']) if 'cpu MHz' in info else None,
                cpus=os.cpu_count(),
                hypervisor_flag='hypervisor' in flags,
                vmx='vmx' in flags, svm='svm' in flags)


def os_release():
    try:
        with open('/etc/os-release') as f:
            for line in f:
                if line.startswith('PRETTY_NAME='):
                    return line.split('=', 1)[1].strip().strip('"')
    except OSError:
        pass
    return None


def meminfo_gib():
    try:
        with open('/proc/meminfo') as f:
            kib = int(f.readline().split()[1])
        return round(kib / 2**20, 1)
    except (OSError, ValueError, IndexError):
        return None


def build_type(build):
    """The Meson buildtype of the build directory the suite runs."""
    path = os.path.join(build, 'meson-info', 'intro-buildoptions.json')
    try:
        with open(path) as f:
            opts = json.load(f)
        return next(o['value'] for o in opts if o['name'] == 'buildtype')
    except (OSError, ValueError, StopIteration):
        return None


def run_json(cmd, timeout=300):
    """Run a benchmark tool that prints JSON; {'error': ...} on failure."""
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=timeout)
        if p.returncode != 0:
            return dict(error=f'exit status {p.returncode}: '
                        f'{p.stderr.decode(errors="replace").strip()[-300:]}')
        return json.loads(p.stdout)
    except (OSError, subprocess.SubprocessError, ValueError) as e:
        return dict(error=f'{" ".join(cmd)}: {e}')


def describe(build, quick):
    tools = os.path.join(build, 'bench')
    out = dict(cpu=cpuinfo(), kernel=platform.release(),
               kernel_version=platform.version(), os=os_release(),
               mem_gib=meminfo_gib(), python=platform.python_version(),
               build=build, buildtype=build_type(build),
               loadavg_start=os.getloadavg())
    log('machine: kvm_costs (exit round trips, ioctls)')
    out['kvm'] = run_json([os.path.join(tools, 'kvm_costs')] +
                          (['--reps', '3', '--batch-ms', '20'] if quick
                           else []))
    log('machine: bench_engine --json')
    out['bench_engine'] = run_json([os.path.join(tools, 'bench_engine'),
                                    '--json'] + (['--runs', '3'] if quick
                                                 else []))
    if not quick:
        log('machine: bench_runtime --json --runs 5')
        out['bench_runtime'] = run_json([os.path.join(tools, 'bench_runtime'),
                                         '--json', '--runs', '5'])
    return out
