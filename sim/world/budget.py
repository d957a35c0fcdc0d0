"""The guard on simulated work: a world runs under a budget of SimPy events and of wall
seconds, so no scenario inside the allowed ranges can hang the tool; and a run that only
redelivers (``LoopGuard``: ``run.max_redeliveries_without_progress`` redeliveries with no
commit, ack or dead-letter since) stops in seconds with a reason naming the loop.

Records alone cannot bound a run: a lease heartbeat every nanosecond or a claimer sweep that
finds nothing writes no record, yet never lets virtual time move on. The event loop here is
SimPy's own (``Environment.step``), counted in chunks; when a budget runs out the run stops
with a one-line reason naming the scenario field whose actor did most of the recent work.
Like ``run.max_records``, a stopped run is ``stopped_early`` and FAILs.
"""

from __future__ import annotations

import time
from collections import Counter
from operator import itemgetter
from typing import Callable, Mapping

import simpy
from simpy.core import EmptySchedule, StopSimulation

from acksim.world.sandbox.interleave import heartbeat

CHUNK = 10_000  # events between two looks at the budget
SAMPLE = 2_000  # events looked at to tell which actor spends the budget

# the actor (a process's generator, or a named timer) → the scenario field that sets its pace
ACTOR_FIELDS: Mapping[str, str] = {
    "_heartbeat": "queue.heartbeat_interval_s",
    "_lease_timer": "queue.visibility_timeout_s",
    "sweeper": "queue.sweep_interval_s",
    "disconnected": "queue.disconnect_detect_s",
    "Scheduler.cron": "scheduler.cron_interval_s",
    "Scheduler._cron_instance": "scheduler.cron_interval_s",
    "Scheduler._target": "workload.accounts",
    "OutboxRelay.run": "mail.poll_interval_s",
    "World._until_idle": "run.idle_check_s",
    "FanoutWorld._until_idle": "run.idle_check_s",
    "FanoutWorld._join": "fanout.join_interval_s",
    "FanoutWorld._publisher": "fanout.update_interval_s",
    "FanoutWorld._worker": "workers.count",
    "worker": "workers.count",
    "_held": "workers.count",
    "Renewals.run": "workload.accounts",
    "Renewals._perform": "workload.accounts",
}


def run_guarded(env: simpy.Environment, until: simpy.Event, max_events: int, max_wall_s: float,
                guard: Callable[[float], str | None] | None = None) -> str | None:
    """Run ``env`` until ``until`` is processed (like ``env.run(until=...)``) or the schedule
    empties; returns None then, or a one-line reason once ``max_events`` SimPy events (counted
    in chunks of ``CHUNK``) or ``max_wall_s`` wall seconds are spent, or once ``guard`` (called
    after each chunk with the virtual time now, e.g. a ``LoopGuard``) gives one. Exceptions of
    the actors propagate as from ``env.run``."""
    until.callbacks.append(StopSimulation.callback)
    started = time.monotonic()  # the harness's own wall clock, never the world's
    done = 0
    try:
        while True:
            _steps(env, CHUNK)
            done += CHUNK
            heartbeat()
            if guard is not None and (reason := guard(env.now)):
                return reason
            if done >= max_events:
                return (f"run.max_events = {max_events} SimPy events spent by virtual time {env.now:.6g} s"
                        f"{_culprit(env)}")
            if time.monotonic() - started > max_wall_s:
                return (f"run.max_wall_s = {max_wall_s:g} wall seconds spent by virtual time {env.now:.6g} s "
                        f"({done} events){_culprit(env)}")
    except (StopSimulation, EmptySchedule):
        return None
    finally:
        if hasattr(env, "allowance"):
            env.allowance = 0  # every wait a real event again (``_culprit`` samples real ones)


# a message leaving the queue, or an effect committed: what a loop of redeliveries never makes
PROGRESS_KINDS = frozenset({"acked", "dead_lettered", "dropped", "retention_expired", "trimmed",
                            "cleanup_applied", "outbox_added", "account_updated",
                            "subscriber_effect", "delivery_recorded", "update_completed"})
_KIND = itemgetter(2)  # Record.kind


class LoopGuard:
    """Stops a run that only redelivers: ``limit`` redeliveries (deliveries of a message
    received before; spurious duplicate copies not counted) with no progress since
    (``PROGRESS_KINDS``: an ack, a dead-letter or another way out of the queue, a committed
    effect; a commit that wrote nothing is none). Reads the records ``history`` (an
    ``acksim.history.History``) gained since its last call, at each chunk of ``run_guarded``:
    the stop falls on the same event at every run. ``limit`` 0: never stops."""

    def __init__(self, history, limit: int) -> None:
        self.history, self.limit = history, limit
        self._seen = 0  # records looked at so far
        self._since: float | None = None  # virtual time of the last progress (None: none yet)
        self.redeliveries = 0  # since then
        self._loop: Counter = Counter()  # (message id, account id) -> redeliveries since then

    def __call__(self, now: float) -> str | None:
        """Look at the new records; a one-line reason to stop at virtual time ``now`` (s), or None."""
        if not self.limit:
            return None
        records = self.history.records
        new = records[self._seen:]
        self._seen = len(records)
        kinds = set(map(_KIND, new))
        if not kinds.isdisjoint(PROGRESS_KINDS):
            last = next(i for i in range(len(new) - 1, -1, -1) if new[i].kind in PROGRESS_KINDS)
            self._since, self.redeliveries = new[last].time, 0
            self._loop.clear()
            new = new[last + 1:]
        if "delivered" not in kinds:
            return None
        for r in new:
            if r.kind == "delivered" and (r.receive_count or 0) > 1 and r.detail != "duplicate":
                self.redeliveries += 1
                self._loop[(r.message_id, r.account_id)] += 1
        if self.redeliveries < self.limit:
            return None
        top = sorted(self._loop.items(), key=lambda item: (-item[1], item[0][0]))
        named = ", ".join(f"message {mid} (account {account}) {n} times" for (mid, account), n in top[:3])
        more = f" and {len(top) - 3} more" if len(top) > 3 else ""
        since = "the run began" if self._since is None else f"virtual time {self._since:.6g} s"
        return (f"run.max_redeliveries_without_progress = {self.limit} redeliveries and no ack, dead-letter or "
                f"committed effect since {since}, by virtual time {now:.6g} s: a loop of redeliveries of "
                f"{named}{more}")


def _steps(env: simpy.Environment, count: int) -> None:
    """Process ``count`` SimPy events, the timeouts skipped in place
    (``acksim.world.skip``) included, so that the budget looks at the same event as with none
    skipped: each batch of real steps may skip at most as many as are left after it."""
    step = env.step
    if not hasattr(env, "allowance"):  # a plain simpy.Environment: nothing is skipped
        for _ in range(count):
            step()
        return
    left = count
    while left:
        real = (left + 1) // 2
        env.allowance = left - real
        before = env.skipped
        for _ in range(real):
            step()
        left -= real + env.skipped - before
    env.allowance = 0


def stop_reason(run, now: float, records: int, budget_reason: str | None = None, undrained: bool = False,
                hung: str = "") -> str:
    """One line saying which guard of ``run`` (the scenario's ``[run]`` table) stopped a run
    before the pipeline drained, or "": a hung processor (``hung``), the spent budget
    (``budget_reason``, from ``run_guarded``), ``run.max_records`` (``records`` in the
    history by virtual time ``now``) or ``run.max_time_s`` (``undrained``), in that order."""
    if hung or budget_reason:
        return hung or budget_reason
    if records >= run.max_records:
        return f"run.max_records = {run.max_records} records reached by virtual time {now:.6g} s"
    if undrained:
        return f"run.max_time_s = {run.max_time_s:g} s reached before the pipeline drained"
    return ""


def _culprit(env: simpy.Environment) -> str:
    """``; most of the work: <actor> (set by <field>)`` for the actor behind most of the next
    ``SAMPLE`` events, found by stepping them and looking at who each one wakes (the run is
    over anyway; the extra steps are as deterministic as the rest)."""
    names: Counter = Counter()
    try:
        for _ in range(SAMPLE):
            names[_owner(env._queue[0][3])] += 1
            env.step()
    except (StopSimulation, EmptySchedule, IndexError):
        pass
    if not names:
        return ""
    actor, _count = max(sorted(names.items()), key=lambda item: item[1])
    field = ACTOR_FIELDS.get(actor)
    return f"; most of the work: {actor}" + (f" (set by {field})" if field else "")


def _owner(event: simpy.Event) -> str:
    """The name of what an event will wake: a process's generator, or a named timer."""
    for callback in event.callbacks or ():
        process = getattr(callback, "__self__", None)
        if isinstance(process, simpy.Process):
            return process._generator.__qualname__
    if isinstance(getattr(event, "_delay", None), (int, float)) and isinstance(event._value, str):
        return event._value
    return type(event).__name__
