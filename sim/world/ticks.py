"""Periodic actors without idle ticks: arithmetic on a polling grid.

An actor that polls every ``interval`` seconds and finds nothing to do changes nothing; it
can sleep until something happens and then wake at the tick it would have reached by
polling on. The tick instants must be the ones repeated polling gives, bit for bit: SimPy
adds each delay to ``now`` in floating point, so the grid is ``t, t + i, (t + i) + i, ...``
(not ``t + k * i``), and a timeout to a grid instant needs the delay whose sum with ``now``
gives exactly that instant (``delay_until``). Times are virtual seconds.
"""

from __future__ import annotations

import math


def delay_until(now: float, at: float) -> float:
    """The delay (s, >= 0) that SimPy adds to ``now`` to land exactly on ``at`` (>= ``now``):
    ``now + delay_until(now, at) == at`` in floating point."""
    delay = at - now
    while now + delay < at:
        delay = math.nextafter(delay, math.inf)
    while delay > 0.0 and now + delay > at:
        delay = math.nextafter(delay, -math.inf)
    return delay


def next_tick(tick: float, interval: float, after: float) -> float:
    """The first instant of the grid ``tick, tick + interval, ...`` (repeated addition) that
    is strictly after ``after``. A poll due at the very instant something happened is taken
    to have run just before it (it was scheduled an interval earlier, before the event that
    woke the actor, whenever that event's own wait was shorter than the interval), so the
    actor wakes at the next one."""
    while tick <= after:
        tick += interval
    return tick
