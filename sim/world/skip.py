"""Skipping a timeout nothing can come before: the clock moves on in place, no heap event.

A worker that waits ``delay`` virtual seconds (a store call's latency, an ack, a backoff) is
often the next thing SimPy would wake anyway: no event is scheduled before ``env.now +
delay`` and nothing else runs in the current step. ``advance(env, delay)`` then sets the
clock to ``env.now + delay`` (the very float SimPy's ``Timeout`` would give) and the worker
goes on without scheduling, popping and resuming through a ``Timeout``; the world does
exactly what it would have done, one SimPy event fewer. Ties go through the heap (events
at equal times run in the order they were scheduled), and so does every wait while another
callback of the event being processed is still to run (``Environment.sole``).

Skips count as events for ``run.max_events``: ``Environment.allowance`` is how many may
still be skipped before the budget (``acksim.world.budget``) looks again; outside
``run_guarded`` it is 0 and every wait is a real event.
"""

from __future__ import annotations

from heapq import heappop

import simpy
from simpy.core import EmptySchedule, EventPriority, StopSimulation


class Environment(simpy.Environment):
    """``simpy.Environment`` whose ``step`` notes whether the event it processes has one
    callback (``sole``: the process it resumes is all that runs in this step), and which
    counts the timeouts skipped by ``advance`` (``skipped``) within ``allowance``."""

    def __init__(self) -> None:
        super().__init__()
        self.sole = False
        self.allowance = 0  # skips still allowed (set by the event budget); 0: none
        self.skipped = 0

    def step(self) -> None:
        """SimPy's ``Environment.step`` (simpy 4.1), plus ``sole``. Raises ``EmptySchedule``
        when no event is left, and what SimPy raises for a failed, undefused event."""
        try:
            self._now, _, _, event = heappop(self._queue)
        except IndexError:
            raise EmptySchedule from None
        callbacks, event.callbacks = event.callbacks, None
        self.sole = len(callbacks) == 1
        try:
            for callback in callbacks:
                callback(event)
        except StopSimulation:
            event.callbacks = callbacks[callbacks.index(callback) + 1:]
            self.schedule(event, EventPriority(-1))
            raise
        if not event._ok and not hasattr(event, "_defused"):
            exc = type(event._value)(*event._value.args)
            exc.__cause__ = event._value
            raise exc


def advance(env: simpy.Environment, delay: float) -> bool:
    """Let ``delay`` virtual seconds (>= 0) pass in place when nothing could happen before
    they end; returns True then, False when the caller must ``yield env.timeout(delay)``
    (another event is due by then, another callback is still to run in this step, the
    budget allows no skip now, or ``env`` is a plain ``simpy.Environment``)."""
    if not getattr(env, "allowance", 0) or not env.sole or not delay >= 0:
        return False
    at = env._now + delay  # SimPy's own sum for a Timeout's time
    queue = env._queue
    if queue and queue[0][0] <= at:
        return False
    env._now = at  # SimPy's clock is private: only here and in ``Environment.step``
    env.allowance -= 1
    env.skipped += 1
    return True
