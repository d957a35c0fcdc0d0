"""The second design of the documents: one shipment update fanned out to N subscribers.

A publisher emits ``fanout.updates`` updates; each becomes N queue tasks (``acksim.model.shipment
.fan_out``), one per subscriber, on the same queue model as the cleanup design (any preset).
Workers run the delivery code under test (``acksim.model.shipment:deliver`` by default) in a unit of
work on the delivery-record store (SQLite, one connection per worker), with the subscriber's
endpoint as a second "store" so that virtual time passes, and crashes may land, around the
HTTP call. "done": commit, then ack (delete-then-ack); "retry": roll back, nack with the
decision's delay (429 Retry-After, 5xx bounded backoff); "dead_letter": roll back and
dead-letter at once (4xx). The queue cannot join the N deliveries; a join actor marks an
update complete once ``acksim.model.shipment.update_complete`` says all N records exist.

History records of this design (besides the queue's): "send" (an HTTP request that got an
answer; detail "<status> <idempotency key>"), "subscriber_effect" and "subscriber_duplicate"
(what the subscriber did with a 2xx request: account_id is the subscriber, detail the
update), "delivery_recorded" (a committed record, ground truth from the store's write),
"update_completed" (the join's verdict). The task key travels in ``account_id`` of the
queue's own records (the queue knows a message by (account_id, cleanup_version)).
"""

from __future__ import annotations

import random
import tempfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import simpy

from acksim.model.errors import ConflictError
from acksim.model.job import CleanupJob
from acksim.model.shipment import Decision, DeliveryTask, ShipmentUpdate, fan_out, update_complete
from acksim.model.shipment_store import SqliteDeliveryRecords, connect
from acksim.world.faults import FaultPlan, fault_injector, killer, stay_down, store_latency
from acksim.history import History, Record
from acksim.world.interleave import Attempt, Finished, ProcessorHung, Sleep
from acksim.world.processor_ref import load_processor
from acksim.world.queue import Queue, body_bytes
from acksim.scenario import Scenario
from acksim.world.core import FinalState, Outcome, stream

FANOUT_PARAMS = ("task", "records", "endpoint")


class Endpoint:
    """The subscribers' HTTPS endpoints (one object for all): ``send`` answers 404 for a
    rejecting subscriber, else 400 / 429 / 503 / 200 by the scenario's probabilities (drawn
    from its own seeded stream), and records what the subscriber did with a 200."""

    def __init__(self, world: "FanoutWorld", rng: random.Random) -> None:
        self.world = world
        self.rng = rng
        cfg = world.scenario.fanout
        self.rejecting = frozenset(f"sub-{k}" for k in cfg.rejecting_subscribers)
        self.seen: set[str] = set()  # idempotency keys a deduplicating subscriber has applied

    def send(self, subscriber: str, update_id: str, idempotency_key: str) -> tuple[int, float | None]:
        """(HTTP status, Retry-After in seconds or None)."""
        cfg, history = self.world.scenario.fanout, self.world.history
        u = self.rng.random()
        p4, p429 = cfg.client_error_probability, cfg.rate_limit_probability
        if subscriber in self.rejecting:
            status, retry_after = 404, None
        elif u < p4:
            status, retry_after = 400, None
        elif u < p4 + p429:
            status, retry_after = 429, cfg.retry_after_s
        elif u < p4 + p429 + cfg.server_error_probability:
            status, retry_after = 503, None
        else:
            status, retry_after = 200, None
        history.record("send", self.world.actor, account_id=subscriber, detail=f"{status} {idempotency_key}")
        if status == 200:
            repeat = cfg.subscriber_dedup and idempotency_key in self.seen
            self.seen.add(idempotency_key)
            history.record("subscriber_duplicate" if repeat else "subscriber_effect", subscriber,
                           account_id=subscriber, detail=update_id)
        return status, retry_after


class _Recording:
    """The records store as the worker sees it: forwards every call, and remembers the keys
    this attempt wrote so the world can record what committed."""

    def __init__(self, inner: SqliteDeliveryRecords) -> None:
        self.inner = inner
        self.written: list[tuple[str, str, str]] = []

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def record_once(self, key: str, update_id: str, subscriber: str) -> None:
        self.inner.record_once(key, update_id, subscriber)
        self.written.append((key, update_id, subscriber))


class FanoutWorld:
    """One run of the fan-out design: ``FanoutWorld(scenario).run()`` -> ``Outcome`` (the
    final state's ``markers`` are the committed delivery records as (key, 1)). ``processor``
    overrides ``fanout.processor``. Raises ``ScenarioError`` for a processor that cannot load."""

    def __init__(self, scenario: Scenario, processor: Callable | None = None) -> None:
        self.scenario = scenario
        cfg = scenario.fanout
        self.processor = processor or load_processor(cfg.processor, "fanout.processor", FANOUT_PARAMS)
        self.env = simpy.Environment()
        self.history = History(lambda: self.env.now)
        self._tmp = tempfile.TemporaryDirectory(prefix="acksim-fanout-")
        self.db_path = str(Path(self._tmp.name) / "records.db")
        self._conns = []
        self.queue = Queue(self.env, self.history, scenario.queue, stream(scenario.seed, "queue"),
                           frozenset(d.delivery for d in scenario.faults.duplicates))
        self.fault_plan = FaultPlan(scenario.faults)
        self.endpoint = Endpoint(self, stream(scenario.seed, "endpoint"))
        self.updates = tuple(ShipmentUpdate(f"upd-{u}", tuple(f"sub-{k}" for k in range(1, cfg.subscribers + 1)))
                             for u in range(1, cfg.updates + 1))
        self.tasks: dict[str, DeliveryTask] = {}
        self.completed: set[str] = set()
        self.busy: set[str] = set()
        self.workers: list[simpy.Process] = []
        self.actor = "publisher"
        self._current: dict[str, Attempt | None] = {}  # worker -> its running attempt
        self.published_all = False
        self._records = SqliteDeliveryRecords(self._connect())  # the join's own read connection

    def _connect(self):
        conn = connect(self.db_path)
        self._conns.append(conn)
        return conn

    # --- actors ----------------------------------------------------------------------------
    def _publisher(self):
        cfg = self.scenario.fanout
        yield self.env.timeout(cfg.start_s)
        for i, update in enumerate(self.updates):
            if i:
                yield self.env.timeout(cfg.update_interval_s)
            for task in fan_out(update.update_id, update):
                self.tasks[task.key] = task
                job = CleanupJob(task.key, 1, self.scenario.epoch)
                self.queue.publish(job, self.env.now, 0.0, "publisher", body_bytes(job))
        self.published_all = True

    def _join(self):
        cfg = self.scenario.fanout
        while True:
            yield self.env.timeout(cfg.join_interval_s)
            for update in self.updates:
                if update.update_id not in self.completed and update_complete(self._records, update):
                    self.completed.add(update.update_id)
                    self.history.record("update_completed", "join", account_id=update.update_id)

    def _worker(self, name: str, rng: random.Random):
        env, queue = self.env, self.queue
        records = SqliteDeliveryRecords(self._connect())
        restart = self.scenario.workers.restart_delay_s
        while True:
            receiving = queue.receive(name)
            delivery = None
            try:
                delivery = yield receiving
                self.busy.add(name)
                yield from self._handle(name, rng, records, delivery)
                self.busy.discard(name)
            except (_Crash, simpy.Interrupt) as exc:
                phase = exc.cause[0] if isinstance(exc, simpy.Interrupt) else exc.phase
                down = exc.cause[1] if isinstance(exc, simpy.Interrupt) else restart
                if not receiving.triggered:
                    queue.cancel(receiving)
                if self._current.get(name) is not None:
                    self._current[name].abandon()
                self._current[name] = None
                if records.in_transaction:
                    records.rollback()
                self.history.record("crashed", name, message_id=delivery.message_id if delivery else None,
                                    account_id=delivery.job.account_id if delivery else None, detail=phase)
                self.busy.discard(name)
                executing = delivery.message_id if delivery is not None and phase not in ("deployment", "killed") else None
                queue.consumer_lost(name, executing)
                yield from stay_down(env, self.history, name, down)

    def _handle(self, name, rng, records, delivery):
        env, queue, cfg = self.env, self.queue, self.scenario.fanout
        task = self.tasks[delivery.job.account_id]
        recording = _Recording(records)
        records.begin()
        rc = delivery.receive_count
        processor = self.processor

        def run(t, r, e):
            return processor(t, r, e, attempt=rc, base_s=cfg.backoff_base_s, max_s=cfg.backoff_max_s)
        attempt = Attempt(run, task, {"records": recording, "endpoint": self.endpoint},
                          self.scenario.run.step_budget_s)
        self._current[name] = attempt
        self.history.record("attempt_started", name, message_id=delivery.message_id,
                            account_id=task.key, receive_count=rc)
        self.actor = name
        step = attempt.step()
        while not isinstance(step, Finished):
            if isinstance(step, Sleep):
                yield env.timeout(step.seconds)
            elif step.when == "before":
                if step.store == "endpoint":
                    yield env.timeout(cfg.endpoint_latency_s)
                else:
                    yield env.timeout(store_latency(self.scenario, env.now, rng))
                if self.fault_plan.crash(rng, delivery.number, "before_call", step.index):
                    raise _Crash("before_call")
            elif self.fault_plan.crash(rng, delivery.number, "after_call", step.index):
                raise _Crash("after_call")
            self.actor = name  # who the endpoint sees calling, if this step sends
            step = attempt.step()
        self._current[name] = None
        error, decision = step.error, step.value
        if isinstance(error, ProcessorHung):
            raise error
        if error is None and not isinstance(decision, Decision):
            error = TypeError(f"the processor returned {decision!r}, not a acksim.model.shipment.Decision")
        if error is not None and not isinstance(error, ConflictError):
            self.history.record("processor_error", name, message_id=delivery.message_id, account_id=task.key,
                                receive_count=rc, detail=f"{type(error).__name__}: {error}".splitlines()[0][:300])
        try:
            if error is None and decision is not None and decision.action == "done":
                records.commit()
            else:
                records.rollback()
        except ConflictError as exc:  # a concurrent delivery of the same task committed first
            error = exc
            if records.in_transaction:
                records.rollback()
        if error is not None:
            self.history.record("tx_rolled_back", name, message_id=delivery.message_id, account_id=task.key,
                                receive_count=rc, detail=f"{type(error).__name__}: {error}"[:200])
            queue.nack(delivery, name, queue.backoff(rc))
            return
        for key, update_id, subscriber in recording.written if decision.action == "done" else ():
            self.history.record("delivery_recorded", name, message_id=delivery.message_id, account_id=subscriber,
                                receive_count=rc, detail=f"{update_id} {key}")
        yield env.timeout(queue.config.ack_latency_s)
        if decision.action == "retry":
            queue.nack(delivery, name, decision.delay_s)
        elif decision.action == "dead_letter":
            queue.dead_letter(delivery, name, "rejected")
        else:
            if self.fault_plan.crash(rng, delivery.number, "after_commit"):
                raise _Crash("after_commit")
            if self.fault_plan.crash(rng, delivery.number, "during_ack"):
                raise _Crash("during_ack")
            queue.ack(delivery, name)

    # --- running ---------------------------------------------------------------------------
    def run(self) -> Outcome:
        """Run until every task is acked, dead-lettered or expired and the join is done, or
        ``run.max_time_s``; returns the history and the final state."""
        sc, env = self.scenario, self.env
        env.process(self._publisher())
        env.process(self._join())
        for i in range(1, sc.workers.count + 1):
            name = f"worker-{i}"
            self.workers.append(env.process(self._worker(name, stream(sc.seed, name))))
        if sc.faults.kills:
            env.process(killer(self, sc.faults.kills))
        if sc.faults.deployments:
            env.process(fault_injector(self, sc.faults.deployments))
        env.run(until=env.process(self._until_idle()))
        return Outcome(tuple(self.history.records), self.final_state())

    def _until_idle(self):
        sc, env = self.scenario, self.env
        published_by = sc.fanout.start_s + max(len(self.updates) - 1, 0) * sc.fanout.update_interval_s
        yield env.timeout(published_by)
        while env.now < sc.run.max_time_s and len(self.history.records) < sc.run.max_records:
            joined = all(u.update_id in self.completed for u in self.updates
                         if update_complete(self._records, u))
            if self.published_all and self.queue.idle and not self.busy and joined:
                return
            yield env.timeout(min(sc.run.idle_check_s, sc.run.max_time_s - env.now))

    def final_state(self) -> FinalState:
        """The committed delivery records (as ``markers``: (key, 1)) and the queue's state."""
        return FinalState((), tuple((r.key, 1) for r in self._records.all()), (), self.queue.dead_letter_queue,
                          tuple(self.queue.in_flight()), float(self.env.now),
                          len(self.history.records) >= self.scenario.run.max_records)

    def close(self) -> None:
        """Close every connection and remove the temporary database."""
        for conn in self._conns:
            conn.close()
        self._tmp.cleanup()


class _Crash(Exception):
    def __init__(self, phase: str) -> None:
        super().__init__(phase)
        self.phase = phase


# --- invariants of this design ----------------------------------------------------------

def _update_of(task_key: str) -> str:
    """The update id in a task key ``cleanup:<update id>:<subscriber>``."""
    return task_key.split(":", 2)[1]


def _tasks_per_update(history) -> Counter:
    """How many delivery tasks each update was fanned out to (its N), from the publishes."""
    return Counter(_update_of(r.account_id) for r in history if r.kind == "published")


def exactly_once_in_effect(history: tuple[Record, ...] | list[Record], final: FinalState) -> list[dict]:
    """Every (update, subscriber) got exactly one effect at the subscriber, or none and its
    task was dead-lettered because the subscriber rejected it (a 4xx: counted, not a
    violation). Anything else is a violation: two effects, or none (retries exhausted, left
    in the queue)."""
    effects: dict[tuple[str, str], int] = {}
    for r in history:
        if r.kind == "subscriber_effect":
            effects[(r.detail, r.account_id)] = effects.get((r.detail, r.account_id), 0) + 1
    dead = {r.account_id for r in history if r.kind == "dead_lettered" and r.detail == "rejected"}
    expected = {(r.detail.split()[0], r.account_id) for r in history if r.kind == "delivery_recorded"}
    tasks = sorted({r.account_id for r in history if r.kind == "published"})
    out = []
    for key in tasks:
        _c, job_id, subscriber = key.split(":", 2)
        pair = (job_id, subscriber)
        n = effects.get(pair, 0)
        if n == 1 or (n == 0 and key in dead):
            continue
        why = f"{n} effects at the subscriber" if n else "never delivered, and not rejected by the subscriber"
        out.append({"update_id": job_id, "subscriber": subscriber, "recorded": pair in expected, "why": why})
    return out


def complete_only_when_all_recorded(history, final: FinalState) -> list[dict]:
    """An update is marked complete only once all N subscribers' records committed, and
    every update whose N records committed is marked complete by the end."""
    recorded: dict[str, set[str]] = {}
    n_of = _tasks_per_update(history)
    out, completed = [], set()
    for r in history:
        if r.kind == "delivery_recorded":
            recorded.setdefault(r.detail.split()[0], set()).add(r.account_id)
        elif r.kind == "update_completed":
            completed.add(r.account_id)
            have = len(recorded.get(r.account_id, ()))
            if have < n_of[r.account_id]:
                out.append({"update_id": r.account_id, "time": r.time,
                            "why": f"marked complete with {have} of {n_of[r.account_id]} records"})
    for upd, subs in sorted(recorded.items()):
        if len(subs) == n_of[upd] and upd not in completed:
            out.append({"update_id": upd, "why": "all records committed, never marked complete"})
    return out


def every_update_completes(history, final: FinalState) -> list[dict]:
    """Every update none of whose subscribers rejected its delivery (a 4xx) ends complete: its
    N records committed and the join marked it. Reported: updates left incomplete (a delivery
    whose retries ran out, or whose effect happened and whose record never committed)."""
    n_of = _tasks_per_update(history)
    rejected = {_update_of(r.account_id) for r in history if r.kind == "dead_lettered" and r.detail == "rejected"}
    completed = {r.account_id for r in history if r.kind == "update_completed"}
    recorded = Counter(r.detail.split()[0] for r in history if r.kind == "delivery_recorded")
    return [{"update_id": upd, "why": f"never complete: {recorded[upd]} of {n} records"}
            for upd, n in sorted(n_of.items()) if upd not in rejected and upd not in completed]


FANOUT_INVARIANTS = (("exactly_once_in_effect", exactly_once_in_effect),
                     ("complete_only_when_all_recorded", complete_only_when_all_recorded),
                     ("every_update_completes", every_update_completes))


def build_fanout_summary(scenario: Scenario, outcome: Outcome, processor: str | None = None) -> dict:
    """The summary.json of a fan-out run: the keys of ``acksim.judges.summary.build_summary``, with
    this design's invariants and counts (``processor``: the reference that ran, when not the
    scenario's)."""
    from acksim.judges.invariants import check_all
    from acksim.judges.slo import slo_section
    from acksim.judges.summary import parameters, with_verdict

    h = outcome.history
    kinds = Counter(r.kind for r in h)
    invariants = check_all(h, outcome.final, FANOUT_INVARIANTS)
    counts = {"updates": scenario.fanout.updates, "jobs": kinds["published"],
              "deliveries": kinds["delivered"], "crashes": kinds["crashed"], "sends": kinds["send"],
              "subscriber_effects": kinds["subscriber_effect"], "subscriber_duplicates": kinds["subscriber_duplicate"],
              "records": kinds["delivery_recorded"], "updates_completed": kinds["update_completed"],
              "retries": kinds["nacked"], "dead_lettered": kinds["dead_lettered"], "acks": kinds["acked"],
              "acks_without_delete": kinds["ack_stale"], "conflicts": kinds["tx_rolled_back"],
              "processor_errors": kinds["processor_error"], "stopped_early": int(outcome.final.stopped_early)}
    return with_verdict({"scenario": scenario.name, "seed": scenario.seed, "invariants": invariants,
                         "slo": slo_section(h, scenario.slo.thresholds()), "counts": counts,
                         "parameters": parameters(scenario, processor)})
