"""The scheduler: how a business deadline becomes a job on the queue.

Two modes, as in the design documents. ``per_deadline``: one scheduler target per deadline,
which publishes the job as a delayed message (the delay is capped at ``queue.max_delay_s``, 7
days; a farther deadline re-arms the target until it is within reach). ``cron``: a periodic
run with second-level jitter finds the due accounts in the store and publishes their jobs; a
run is cut at the 900 s execution limit, and runs that fall in a paused window are skipped,
never backfilled.
"""

from __future__ import annotations

import random

from model.job import CleanupJob
from sim.queue import MessageTooLarge, body_bytes


class Scheduler:
    """Publishes jobs. ``pending`` counts armed targets and publishes under way (the world
    is idle only when it is 0). Times in virtual seconds."""

    def __init__(self, world, rng: random.Random) -> None:
        self.world = world
        self.rng = rng
        self.pending = 0
        self._cron_session = None

    @property
    def idle(self) -> bool:
        """No armed target, no run under way, and (cron mode) no due account whose job is not
        already in the queue or its dead-letter queue."""
        if self.pending:
            return False
        if self.world.scenario.scheduler.mode != "cron":
            return True
        world = self.world
        due = self._session().accounts.due(world.to_datetime(world.env.now), world.scenario.scheduler.cron_batch)
        # a due account whose job is already queued, in flight or dead-lettered needs no run
        return all(world.queue.holds(a.account_id, a.cleanup_version) for a in due)

    def _session(self):
        if self._cron_session is None:
            self._cron_session = self.world.db.session()
        return self._cron_session

    def schedule(self, account_id: str, cleanup_version: int, deadline_s: float) -> None:
        """Arm a per-deadline target (no-op in cron mode, where runs find due accounts)."""
        if self.world.scenario.scheduler.mode == "per_deadline":
            self.pending += 1
            self.world.env.process(self._target(account_id, cleanup_version, deadline_s))

    def _target(self, account_id: str, version: int, deadline_s: float):
        env, world = self.world.env, self.world
        max_delay = world.scenario.queue.max_delay_s
        if deadline_s - env.now > max_delay:
            yield env.timeout(deadline_s - env.now - max_delay)  # re-armed until within reach
        yield env.timeout(world.scenario.scheduler.publish_latency_s)
        delay = min(max(deadline_s - env.now, 0.0), max_delay)  # float rounding must not pass the cap
        self._publish(account_id, version, deadline_s, delay)
        self.pending -= 1

    def _publish(self, account_id: str, version: int, deadline_s: float, delay_s: float) -> None:
        world = self.world
        job = CleanupJob(account_id, version, world.to_datetime(deadline_s))
        size = body_bytes(job, world.scenario.workload.payload_bytes)
        try:
            world.queue.publish(job, deadline_s, delay_s, "scheduler", size)
        except MessageTooLarge as exc:
            world.history.record("publish_refused", "scheduler", account_id=account_id,
                                 cleanup_version=version, deadline=deadline_s, detail=str(exc))

    def cron(self):
        """SimPy process of the cron mode: one run every ``cron_interval_s``."""
        world = self.world
        env, cfg = world.env, world.scenario.scheduler
        session = self._session()
        tick = 0
        while True:
            tick += 1
            at = tick * cfg.cron_interval_s + self.rng.uniform(0.0, cfg.cron_jitter_s)
            if at < env.now:  # the previous run outlasted the interval: this trigger is missed
                world.history.record("cron_run_skipped", "scheduler", detail="overrun")
                continue
            yield env.timeout(at - env.now)
            if any(lo <= env.now < hi for lo, hi in cfg.paused):
                world.history.record("cron_run_skipped", "scheduler", detail="paused")
                continue
            self.pending += 1
            started = env.now
            world.history.record("cron_run_started", "scheduler")
            due = session.accounts.due(world.to_datetime(env.now), cfg.cron_batch)
            published, outcome = 0, "done"
            for acc in due:
                if env.now + cfg.publish_latency_s - started > cfg.cron_run_limit_s:
                    outcome = "killed_at_run_limit"
                    break
                yield env.timeout(cfg.publish_latency_s)
                self._publish(acc.account_id, acc.cleanup_version, world.to_virtual(acc.deadline), 0.0)
                published += 1
            world.history.record("cron_run_finished", "scheduler", detail=f"{outcome} published={published}")
            self.pending -= 1
