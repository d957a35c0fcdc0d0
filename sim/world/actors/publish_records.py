"""Scheduler-side ordering: publish then record, or record then publish with a sweeper.

A scheduler instance does two things per job: publish it to the queue and record (in its
own store) that the job is scheduled. Which comes first decides what a crash between the two
costs. "publish_then_record" (``acksim.world.actors.scheduler``): a crash after the publish leaves
no record, so the restarted instance publishes the job again, a duplicate the processor must
absorb. "record_then_publish" (this module, a transactional-outbox on the scheduler's side):
the instance records the job first and a crash before the publish leaves a record with no
message; nothing reaches the queue until a sweeper, every ``scheduler.sweep_interval_s``
(at multiples of it, from time 0), publishes each record still unpublished
``scheduler.sweep_after_s`` after it was written ("published" by "publish-sweeper"), then
marks it published. So the job is late by up to ``sweep_after_s + sweep_interval_s``, never
lost, and the sweeper never publishes a record whose instance published it. The crash
between the two steps is ``scheduler.publish_crash_probability`` in either order
("scheduler_crashed", detail naming the step). Times are virtual seconds.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from acksim.scenario import Scheduler as SchedulerConfig


@dataclass
class _Entry:
    """One recorded job: when it was recorded, by whom, and whether it has been published."""

    account_id: str
    version: int
    deadline_s: float
    recorded_at: float
    published: bool = False


class PublishRecords:
    """The scheduler's records of "record_then_publish" and their sweeper. ``pending``: the
    number of records not yet published (the scheduler is idle only when it is 0).

    Its ports, the scheduler's: ``env`` (a SimPy environment), ``record``
    (``History.record``'s signature), ``config`` (the ``[scheduler]`` section), ``rng`` (the
    scheduler's random stream), ``publish(account id, version, deadline s, delay s, actor)``
    (sends the job to the queue) and ``delay(deadline s)`` (the message delay of a job
    published now, virtual s)."""

    def __init__(self, env, record, config: SchedulerConfig, rng: random.Random, publish, delay) -> None:
        self.env, self.record, self.config, self.rng = env, record, config, rng
        self.publish, self.delay = publish, delay
        self._entries: list[_Entry] = []
        self._sweeper = None

    @property
    def pending(self) -> int:
        """Records written and not yet published."""
        return sum(1 for e in self._entries if not e.published)

    def record_then_publish(self, account_id: str, version: int, deadline_s: float, actor: str):
        """SimPy steps of one job: record it ("publish_recorded"), then, unless the instance
        crashes in between (``publish_crash_probability``: it stays down
        ``restart_delay_s`` and, finding the record, does not publish), publish it and mark
        the record published."""
        cfg = self.config
        entry = _Entry(account_id, version, deadline_s, self.env.now)
        self._entries.append(entry)
        self.record("publish_recorded", actor, account_id=account_id, cleanup_version=version,
                    deadline=deadline_s)
        self._start_sweeper()
        if cfg.publish_crash_probability and self.rng.random() < cfg.publish_crash_probability:
            self.record("scheduler_crashed", actor, account_id=account_id, cleanup_version=version,
                        deadline=deadline_s, detail="after recording, before publishing")
            yield self.env.timeout(cfg.restart_delay_s)
            return
        self.publish(account_id, version, deadline_s, self.delay(deadline_s), actor)
        entry.published = True

    def _start_sweeper(self) -> None:
        if self._sweeper is None:
            self._sweeper = self.env.process(self._sweep())

    def _sweep(self):
        """SimPy process: at every multiple of ``sweep_interval_s``, publish the records
        unpublished for at least ``sweep_after_s``, oldest first."""
        env, cfg = self.env, self.config
        while True:
            tick = (math.floor(env.now / cfg.sweep_interval_s) + 1) * cfg.sweep_interval_s
            yield env.timeout(tick - env.now)
            for entry in self._entries:
                if not entry.published and env.now - entry.recorded_at >= cfg.sweep_after_s:
                    self.publish(entry.account_id, entry.version, entry.deadline_s,
                                 self.delay(entry.deadline_s), "publish-sweeper")
                    entry.published = True
            self._entries = [e for e in self._entries if not e.published]
