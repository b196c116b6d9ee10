# SPDX-License-Identifier: MIT
"""Progress lines for the benchmark suite (run_all.py).

One line on stderr when each step starts, with the step's number, the
time elapsed and an estimate of the time left:

  bench: [ 4/11] 1:12 elapsed, about 4:40 left: kvm: e1000-cpl3

The estimate starts from each step's expected duration (STEP_SECONDS) and
is rescaled by how long the finished steps actually took, so a slow or
busy machine converges on its own pace. The lines are written only when
stderr is a terminal (LC_PROGRESS=1 forces them, LC_PROGRESS=0 silences
them): logs and CI output stay as they were.
"""
import os
import sys
import time

# Expected seconds per kind of step on the reference machine (2 cores),
# full run and --quick.
STEP_SECONDS = dict(
    full=dict(machine=40, kvm=35, traces=30, qemu=60, nicfast=300, finish=15),
    quick=dict(machine=15, kvm=6, traces=10, qemu=15, nicfast=60,
               finish=10),
)


def hms(s):
    s = int(max(0, s) + 0.5)
    if s >= 3600:
        return f'{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}'
    return f'{s // 60}:{s % 60:02d}'


class Progress:
    """steps: list of (kind, label) in the order they will run."""

    def __init__(self, steps, mode, stream=None, clock=time.monotonic):
        self.stream = stream or sys.stderr
        env = os.environ.get('LC_PROGRESS', '')
        self.on = env != '0' if env else self.stream.isatty()
        table = STEP_SECONDS[mode]
        self.steps = [(kind, label, table[kind]) for kind, label in steps]
        self.clock = clock
        self.t0 = clock()
        self.index = -1
        self.started = None       # when the current step started
        self.done_expected = 0.0  # expected seconds of the finished steps
        self.done_actual = 0.0    # and what they took

    def left(self, now):
        """Estimated seconds left, the current step included."""
        if self.index < 0:
            return sum(e for _, _, e in self.steps)
        scale = (self.done_actual / self.done_expected
                 if self.done_expected > 0 else 1.0)
        cur = self.steps[self.index][2] * scale - (now - self.started)
        rest = sum(e for _, _, e in self.steps[self.index + 1:]) * scale
        return max(cur, 0) + rest

    def step(self, label=None):
        """The next step starts; `label` overrides the planned label."""
        now = self.clock()
        if self.index >= 0:
            self.done_expected += self.steps[self.index][2]
            self.done_actual += now - self.started
        self.index = min(self.index + 1, len(self.steps) - 1)
        self.started = now
        if not self.on:
            return None
        label = label or self.steps[self.index][1]
        n = len(self.steps)
        w = len(str(n))
        text = (f'bench: [{self.index + 1:{w}d}/{n}] '
                f'{hms(now - self.t0)} elapsed, about '
                f'{hms(self.left(now))} left: {label}')
        self.stream.write(text + '\n')
        self.stream.flush()
        return text
