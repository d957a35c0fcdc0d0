"""The scheduler: how a business deadline becomes a job on the queue.

Two modes, as in the design documents. ``per_deadline``: one scheduler target per deadline,
which publishes the job as a delayed message (the delay is capped at ``queue.max_delay_s``, 7
days; a farther deadline re-arms the target until it is within reach). ``cron``: a periodic
run with second-level jitter finds the due accounts in the store and publishes their jobs; a
run is cut at the 900 s execution limit, and runs that fall in a paused window are skipped,
never backfilled. A cron run publishes every due account (state-based) or those whose
deadline fell in its window since the previous trigger (window-based); a trigger that a
scheduler stall delays past the misfire grace is skipped or caught up (``catchup``).

Failure modes of the scheduler itself: ``instances`` schedulers without a leader each publish
every job, and an instance may crash between publishing and recording that it published, and
so publish again after its restart.
"""

from __future__ import annotations

import random

from acksim.model.job import CleanupJob
from acksim.scenario import Scheduler as SchedulerConfig
from acksim.world.actors.publish_records import PublishRecords
from acksim.world.queue.core import MessageTooLarge, body_bytes


class Scheduler:
    """Publishes jobs. ``pending`` counts armed targets and publishes under way (the world
    is idle only when it is 0). Times in virtual seconds.

    Its ports: ``env`` (a SimPy environment), ``record`` (``History.record``'s signature),
    ``queue`` (the ``Queue``: ``publish``, ``holds``, and its ``config``'s ``max_delay_s``
    and ``eta_held_by_worker``), ``open_session`` (opens its own unit of work on the stores,
    at the first cron run or idle check that needs one), ``to_virtual`` and ``to_datetime``
    (aware datetime <-> virtual s), ``config`` (the ``[scheduler]`` section),
    ``payload_bytes`` (``workload.payload_bytes``), ``stalls`` (``faults.scheduler_stalls``:
    (start, end) pairs, virtual s) and ``rng`` (its random stream).
    """

    def __init__(self, env, record, queue, open_session, to_virtual, to_datetime, config: SchedulerConfig,
                 payload_bytes: int, stalls, rng: random.Random) -> None:
        self.env, self.record, self.queue, self.open_session = env, record, queue, open_session
        self.to_virtual, self.to_datetime = to_virtual, to_datetime
        self.config, self.payload_bytes, self.stalls = config, payload_bytes, stalls
        self.rng = rng
        self.pending = 0
        self._cron_session = None
        self.window_end = 0.0  # window-based cron: deadlines up to here had their run (or lost it)
        # "record_then_publish" (acksim.world.actors.publish_records)
        self.records = PublishRecords(env, record, config, rng, self._publish, self._delay)

    @property
    def idle(self) -> bool:
        """No armed target, no run under way, and (cron mode) no due account whose job is not
        already in the queue or its dead-letter queue."""
        if self.pending or self.records.pending:
            return False
        if self.config.mode != "cron":
            return True
        now = self.env.now
        if self.config.cron_selection == "window":  # no run will publish a passed window
            due = [a for a in self._session().accounts.all()
                   if not a.renewed and self.window_end < self.to_virtual(a.deadline) <= now]
        else:
            due = self._session().accounts.due(self.to_datetime(now), self.config.cron_batch)
        # a due account whose job is already queued, in flight or dead-lettered needs no run
        return all(self.queue.holds(a.account_id, a.cleanup_version) for a in due)

    def _session(self):
        if self._cron_session is None:
            self._cron_session = self.open_session()
        return self._cron_session

    def schedule(self, account_id: str, cleanup_version: int, deadline_s: float) -> None:
        """Arm a per-deadline target (no-op in cron mode, where runs find due accounts)."""
        if self.config.mode == "per_deadline":
            for actor in self._actors():
                self.pending += 1
                self.env.process(self._target(account_id, cleanup_version, deadline_s, actor))

    def _actors(self) -> list[str]:
        n = self.config.instances
        return ["scheduler"] if n == 1 else [f"scheduler-{k}" for k in range(1, n + 1)]

    def _target(self, account_id: str, version: int, deadline_s: float, actor: str):
        env, queue = self.env, self.queue.config
        if not queue.eta_held_by_worker and deadline_s - env.now > queue.max_delay_s:
            yield env.timeout(deadline_s - env.now - queue.max_delay_s)  # re-armed until within reach
        yield env.timeout(self.config.publish_latency_s)
        yield from self._publish_step(account_id, version, deadline_s, actor)
        self.pending -= 1

    def _publish_step(self, account_id: str, version: int, deadline_s: float, actor: str):
        """Publish one job and record it, in ``scheduler.order``, a crash between the two
        steps included."""
        if self.config.order == "record_then_publish":
            yield from self.records.record_then_publish(account_id, version, deadline_s, actor)
            return
        self._publish(account_id, version, deadline_s, self._delay(deadline_s), actor)
        yield from self._crash_after_publish(account_id, version, deadline_s, actor)

    def _crash_after_publish(self, account_id: str, version: int, deadline_s: float, actor: str):
        """With ``publish_crash_probability``, the instance dies before recording its publish
        and, once restarted, publishes the job again (at most 100 times in a row)."""
        cfg, env = self.config, self.env
        for _ in range(100):
            if not (cfg.publish_crash_probability and self.rng.random() < cfg.publish_crash_probability):
                return
            self.record("scheduler_crashed", actor, account_id=account_id, cleanup_version=version,
                        deadline=deadline_s, detail="after publishing, before recording it")
            yield env.timeout(cfg.restart_delay_s)
            self._publish(account_id, version, deadline_s, self._delay(deadline_s), actor)

    def _delay(self, deadline_s: float) -> float:
        """The message delay (virtual s) of a job for ``deadline_s`` published now: until the
        deadline, capped at ``queue.max_delay_s`` (float rounding must not pass the cap), or 0
        for a countdown job the worker holds until due (``queue.eta_held_by_worker``)."""
        queue = self.queue.config
        if queue.eta_held_by_worker:
            return 0.0
        return min(max(deadline_s - self.env.now, 0.0), queue.max_delay_s)

    def _publish(self, account_id: str, version: int, deadline_s: float, delay_s: float,
                 actor: str = "scheduler") -> None:
        job = CleanupJob(account_id, version, self.to_datetime(deadline_s))
        size = body_bytes(job, self.payload_bytes)
        try:
            self.queue.publish(job, deadline_s, delay_s, actor, size)
        except MessageTooLarge as exc:
            self.record("publish_refused", actor, account_id=account_id,
                        cleanup_version=version, deadline=deadline_s, detail=str(exc))

    def cron(self):
        """SimPy process of the cron mode: one process per scheduler instance."""
        for actor in self._actors():
            self.env.process(self._cron_instance(actor))
        yield self.env.timeout(0)

    def _unfrozen(self, t: float) -> float:
        """The first instant at or after ``t`` outside every scheduler stall."""
        moved = True
        while moved:
            moved = False
            for lo, hi in self.stalls:
                if lo <= t < hi:
                    t, moved = hi, True
        return t

    def _cron_instance(self, actor: str):
        """One scheduler instance's triggers: every ``cron_interval_s`` (plus jitter). A
        trigger a stall delays past ``misfire_grace_s`` is skipped, unless ``catchup`` runs
        it ("all": every missed one, in order, as soon as the stall ends; "latest": only the
        last of them); one that falls while the previous run still goes on is an overrun,
        skipped; one in a paused window is skipped. Window-based selection gives each run the
        deadlines since the previous trigger that ran or was skipped."""
        env, cfg, record = self.env, self.config, self.record
        session = self._session()
        tick, previous = 0, 0.0
        while True:
            tick += 1
            nominal = tick * cfg.cron_interval_s
            at = nominal + self.rng.uniform(0.0, cfg.cron_jitter_s)
            fires = self._unfrozen(at)
            if fires - at > cfg.misfire_grace_s:  # a stall made it late past its grace
                caught_up = cfg.catchup == "all" or (
                    cfg.catchup == "latest" and self._unfrozen(nominal + cfg.cron_interval_s) > fires)
                yield env.timeout(max(fires - env.now, 0.0))
                window, previous = (previous, nominal), nominal
                if not caught_up:
                    record("cron_run_skipped", actor, detail=f"misfire: {fires - at:g} s late")
                    self.window_end = max(self.window_end, nominal)
                    continue
            else:
                if fires < env.now:  # the previous run outlasted the interval: this trigger is missed
                    record("cron_run_skipped", actor, detail="overrun")
                    continue
                yield env.timeout(fires - env.now)
                window, previous = (previous, nominal), nominal
            if any(lo <= env.now < hi for lo, hi in cfg.paused):
                record("cron_run_skipped", actor, detail="paused")
                self.window_end = max(self.window_end, nominal)
                continue
            yield from self._cron_run(actor, session, window)

    def _cron_run(self, actor: str, session, window: tuple[float, float]):
        env, cfg = self.env, self.config
        self.pending += 1
        started = env.now
        self.record("cron_run_started", actor)
        if cfg.cron_selection == "window":  # by deadline, not oldest first: lost ones must not fill the batch
            due = [a for a in session.accounts.all() if not a.renewed
                   and window[0] < self.to_virtual(a.deadline) <= min(window[1], env.now)][:cfg.cron_batch]
        else:
            due = session.accounts.due(self.to_datetime(env.now), cfg.cron_batch)
        published, outcome = 0, "done"
        for acc in due:
            if env.now + cfg.publish_latency_s - started > cfg.cron_run_limit_s:
                outcome = "killed_at_run_limit"
                break
            yield env.timeout(cfg.publish_latency_s)
            deadline_s = self.to_virtual(acc.deadline)
            yield from self._publish_step(acc.account_id, acc.cleanup_version, deadline_s, actor)
            published += 1
        self.record("cron_run_finished", actor, detail=f"{outcome} published={published}")
        self.window_end = max(self.window_end, window[1])
        self.pending -= 1
