"""The clock the watchdogs read: the wall seconds a thread *could* run.

A step of the processor is hung when it has had ``run.step_budget_s`` of time in which it
could have run and still has not reached a store call. Wall time alone mistakes a process
starved of CPU on a loaded machine for a hung one. Linux keeps, per thread, the time it
waited on a run queue for a CPU (``/proc/<pid>/task/<tid>/schedstat``: the time on a CPU,
the time waiting for one, both in nanoseconds, and the number of time slices). Wall time
less that wait is time the thread spent running or blocked of its own accord (a sleep, I/O,
a lock): a blocking call still counts, starvation does not.

The wait is read by the watchdog (a thread of its own, or the supervising parent process),
never on the path of a step: a ``RunClock`` samples ``(wall, wait)`` now and then and
measures the time a thread could run since a wall instant ``since`` as the wall time since
then less the wait since the last sample at or before ``since``. That reading never exceeds
the true figure (the wait since an earlier sample is at least the wait since ``since``), so
a watchdog may fire late by the wait between two samples, never early. The kernel adds a
wait to the total when the thread next gets a CPU, so a wait under way counts from then: at
most one scheduling period (milliseconds) of starvation is taken as run time.

Where the statistics are missing (not Linux, ``/proc`` not mounted, scheduler statistics
off: the file reads ``0 0 0``) the wait is 0 and the clock is the wall clock.
These are the harness's own clocks (``time.monotonic``, bound before any user code runs),
never the world's virtual time.
"""

from __future__ import annotations

import os
import time
from collections import deque
from typing import Callable

_REAL_MONOTONIC = time.monotonic  # bound early: user code may run with time.monotonic virtual


def schedstat_path(tid: int, pid: int | None = None) -> str:
    """The scheduler statistics file of thread ``tid`` of process ``pid`` (None: this one)."""
    return f"/proc/{'self' if pid is None else pid}/task/{tid}/schedstat"


class TaskWait:
    """Reads a thread's total run-queue wait, in seconds, from its ``schedstat`` file (kept
    open: one ``pread`` a reading). Calling it returns the wait, or None when the file is
    missing or unreadable (then the caller counts no wait: wall time). ``close()`` when done."""

    def __init__(self, path: str) -> None:
        try:
            self._fd: int | None = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            self._fd = None

    def __call__(self) -> float | None:
        if self._fd is None:
            return None
        try:
            fields = os.pread(self._fd, 128, 0).split()
            return int(fields[1]) / 1e9
        except (OSError, IndexError, ValueError):
            return None

    def close(self) -> None:
        """Close the file (readings return None after)."""
        fd, self._fd = self._fd, None
        if fd is not None:
            try:
                os.close(fd)
            except OSError:
                pass


class RunClock:
    """Samples of ``(wall, wait)`` for one thread: ``wall()`` is monotonic wall seconds,
    ``read_wait()`` the thread's total run-queue wait in seconds (None: unknown, counted as
    no wait since the last reading). Both are injectable, so the arithmetic can be tested
    with made-up readings. Not for concurrent use: one watchdog samples and reads it."""

    def __init__(self, read_wait: Callable[[], float | None], wall: Callable[[], float] = _REAL_MONOTONIC) -> None:
        self.read_wait, self.wall = read_wait, wall
        self._wait = 0.0  # the last wait read (kept when a reading fails)
        # (wall, the wait read just before it, the wait read just after it)
        self._samples: deque[tuple[float, float, float]] = deque()
        self.sample()

    def _read(self) -> float:
        wait = self.read_wait()
        if wait is not None and wait > self._wait:  # a total never shrinks
            self._wait = wait
        return self._wait

    def sample(self) -> float:
        """Take a sample now; returns its wall time (seconds). The wait is read before and
        after the wall clock: the one before is at most the wait at that instant (a sample as
        the start of a span), the one after at least it (as the end)."""
        before = self._read()
        now = self.wall()
        self._samples.append((now, before, self._read()))
        return now

    def runnable_since(self, since: float) -> float:
        """Seconds the thread could run from wall instant ``since`` to the last sample: the
        wall time between them less the wait since the last sample at or before ``since``
        (the first sample when none is). Never more than the true figure but for a wait under
        way (see the module's text); may be negative (a wait before ``since`` taken as after
        it), and is for a ``since`` after the last sample."""
        samples = self._samples
        base = samples[0][1]
        for wall, before, _after in samples:
            if wall > since:
                break
            base = before
        now, _before, after = samples[-1]
        return (now - since) - (after - base)

    def forget_before(self, since: float) -> None:
        """Drop the samples no later reading from ``since`` (or after) needs: all but the
        last one at or before it."""
        samples = self._samples
        while len(samples) > 1 and samples[1][0] <= since:
            samples.popleft()
