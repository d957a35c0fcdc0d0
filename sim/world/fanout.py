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

It runs on the cleanup world's parts: the queue (``acksim.world.core.scenario_queue``), the
seeded streams (``stream``), the fault plan, store latencies, rolling deployments, kills and
the down time of a crashed worker (``acksim.world.faults``), and the worker's attempt
(``acksim.world.attempt.decision_attempt``: the crash phases, the interleaving, and a
decision to ack, nack or dead-letter). Its own are the endpoint, the delivery-record ledger
and the worker's port.
Its invariants and summary are in ``acksim.judges.fanout``.
"""

from __future__ import annotations

import random
import tempfile
from collections.abc import Callable
from pathlib import Path

import simpy

from acksim.model.job import CleanupJob
from acksim.model.shipment import Decision, DeliveryTask, ShipmentUpdate, fan_out, update_complete
from acksim.model.shipment_store import SqliteDeliveryRecords, connect
from acksim.history import History
from acksim.scenario import Scenario
from acksim.world.budget import LoopGuard, run_guarded, stop_reason
from acksim.world.cost import refuse_if_too_costly
from acksim.outcome import FinalState, Outcome
from acksim.world.core import scenario_queue, stream
from acksim.world.faults import FaultPlan, fault_injector, killer, stay_down, store_latency
from acksim.world.attempt import WHOLE_WORKER_PHASES, WorkerCrash, decision_attempt
from acksim.world.sandbox.interleave import Attempt
from acksim.world.sandbox.code import CodeUnderTest
from acksim.world.sandbox.vclock import VirtualClock
from acksim.world.queue.core import body_bytes

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


class FanoutPort:
    """A fan-out worker's side of the attempt (``acksim.world.attempt.WorkerPort``): every
    wait is a SimPy timeout (a store call's latency, the endpoint's for an HTTP call), after
    which the endpoint sees this worker calling; acks, nacks and dead letters go to the
    world's queue. ``session`` is the worker's delivery-record store."""

    def __init__(self, world: "FanoutWorld", name: str, rng: random.Random, records, processor: tuple) -> None:
        sc = world.scenario
        self.world, self.env, self.queue = world, world.env, world.queue
        self.name, self.rng, self.session, self.processor = name, rng, records, processor
        self.workers, self.queue_config, self.plan = sc.workers, world.queue.config, world.fault_plan
        self.record, self.step_budget_s = world.history.record, sc.run.step_budget_s
        self.clock, self.now = world.clock, lambda: world.env.now
        self.current: Attempt | None = None

    def sleep(self, seconds: float):
        yield self.env.timeout(seconds)
        self.world.actor = self.name  # who the endpoint sees calling, if the next step sends

    def before_call(self, delivery, call):
        sc = self.world.scenario
        if call.store == "endpoint":
            yield self.env.timeout(sc.fanout.endpoint_latency_s)
        else:
            yield self.env.timeout(store_latency(sc, self.env.now, self.rng))
        self.world.actor = self.name

    def ack_latency(self):
        yield self.env.timeout(self.queue_config.ack_latency_s)

    def ack(self, delivery) -> None:
        self.queue.ack(delivery, self.name)

    def nack(self, delivery, delay_s: float) -> None:
        self.queue.nack(delivery, self.name, delay_s)

    def dead_letter(self, delivery, reason: str) -> None:
        self.queue.dead_letter(delivery, self.name, reason)


class FanoutWorld:
    """One run of the fan-out design: ``FanoutWorld(scenario).run()`` -> ``Outcome`` (the
    final state's ``markers`` are the committed delivery records as (key, 1)). ``processor``
    (a reference, of which every worker start gets a fresh copy, or a callable run as given;
    ``acksim.world.sandbox.code``) overrides ``fanout.processor``; it reads virtual time while it runs
    (``acksim.world.sandbox.vclock``). Raises ``ScenarioError`` for a processor that cannot load."""

    def __init__(self, scenario: Scenario, processor: Callable | str | None = None) -> None:
        refuse_if_too_costly(scenario)
        self.scenario = scenario
        self._budget_reason: str | None = None  # ``run.max_events`` / ``max_wall_s`` ran out
        self._undrained = False  # ``run.max_time_s`` came before the pipeline drained
        cfg = scenario.fanout
        self.code = CodeUnderTest(processor or cfg.processor, "fanout.processor", FANOUT_PARAMS,
                                  scenario.processor_path)
        self.processor = self.code.function
        self.clock = VirtualClock(scenario.epoch)
        self.env = simpy.Environment()
        self.history = History(lambda: self.env.now)
        self._tmp = tempfile.TemporaryDirectory(prefix="acksim-fanout-")
        self.db_path = str(Path(self._tmp.name) / "records.db")
        self._conns = []
        self.queue = scenario_queue(self.env, self.history, scenario)
        self.fault_plan = FaultPlan(scenario.faults)
        self.endpoint = Endpoint(self, stream(scenario.seed, "endpoint"))
        self.updates = tuple(ShipmentUpdate(f"upd-{u}", tuple(f"sub-{k}" for k in range(1, cfg.subscribers + 1)))
                             for u in range(1, cfg.updates + 1))
        self.tasks: dict[str, DeliveryTask] = {}
        self.completed: set[str] = set()
        self.busy: set[str] = set()
        self.workers: list[simpy.Process] = []
        self.actor = "publisher"
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
        port = FanoutPort(self, name, rng, SqliteDeliveryRecords(self._connect()), self.code.start())
        while True:
            receiving = queue.receive(name)
            delivery = None
            try:
                delivery = yield receiving
                self.busy.add(name)
                yield from self._handle(port, delivery)
                self.busy.discard(name)
            except (WorkerCrash, simpy.Interrupt) as exc:
                phase, down = exc.cause if isinstance(exc, simpy.Interrupt) else (exc.phase, exc.down_s)
                if not receiving.triggered:
                    queue.cancel(receiving)
                if port.current is not None:
                    port.current.abandon()
                port.current = None
                if port.session.in_transaction:
                    port.session.rollback()
                self.history.record("crashed", name, message_id=delivery.message_id if delivery else None,
                                    account_id=delivery.job.account_id if delivery else None, detail=phase)
                self.busy.discard(name)
                executing = delivery.message_id if delivery is not None and phase not in WHOLE_WORKER_PHASES else None
                queue.consumer_lost(name, executing)
                yield from stay_down(env, self.history, name, down)
                port.processor = self.code.start()  # a new process

    def _handle(self, port: "FanoutPort", delivery):
        """One delivery: the task's processor run with the backoff settings and this
        delivery's receive count, as ``acksim.world.attempt.decision_attempt``."""
        cfg, rc = self.scenario.fanout, delivery.receive_count
        task = self.tasks[delivery.job.account_id]
        recording = _Recording(port.session)
        processor = port.processor[0]

        def run(t, r, e):
            return processor(t, r, e, attempt=rc, base_s=cfg.backoff_base_s, max_s=cfg.backoff_max_s)
        self.actor = port.name
        yield from decision_attempt(port, delivery, run, task, {"records": recording, "endpoint": self.endpoint},
                                    Decision, recording.written)

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
        guard = LoopGuard(self.history, sc.run.max_redeliveries_without_progress)
        self._budget_reason = run_guarded(env, env.process(self._until_idle()), sc.run.max_events,
                                          sc.run.max_wall_s, guard)
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
        self._undrained = len(self.history.records) < sc.run.max_records

    def final_state(self) -> FinalState:
        """The committed delivery records (as ``markers``: (key, 1)) and the queue's state."""
        reason = stop_reason(self.scenario.run, self.env.now, len(self.history.records), self._budget_reason,
                             self._undrained)
        return FinalState((), tuple((r.key, 1) for r in self._records.all()), (), self.queue.dead_letter_queue,
                          tuple(self.queue.in_flight()), float(self.env.now), bool(reason), reason)

    def close(self) -> None:
        """Close every connection and remove the temporary database."""
        for conn in self._conns:
            conn.close()
        self._tmp.cleanup()
