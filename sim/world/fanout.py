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
the down time of a crashed worker (``acksim.world.faults``), the worker's crash signal and
phases (``acksim.world.worker``) and the attempt interleaving. Its own are the endpoint, the
delivery-record ledger and the worker's attempt (a decision to ack, nack or dead-letter).
Its invariants and summary are in ``acksim.judges.fanout``.
"""

from __future__ import annotations

import random
import tempfile
from collections.abc import Callable
from pathlib import Path

import simpy

from acksim.model.errors import ConflictError
from acksim.model.job import CleanupJob
from acksim.model.shipment import Decision, DeliveryTask, ShipmentUpdate, fan_out, update_complete
from acksim.model.shipment_store import SqliteDeliveryRecords, connect
from acksim.history import History
from acksim.scenario import Scenario
from acksim.world.budget import run_guarded, stop_reason
from acksim.world.cost import refuse_if_too_costly
from acksim.world.core import FinalState, Outcome, error_line, scenario_queue, stream
from acksim.world.faults import FaultPlan, fault_injector, killer, stay_down, store_latency
from acksim.world.interleave import Attempt, Finished, ProcessorHung, Sleep
from acksim.world.code import CodeUnderTest
from acksim.world.vclock import VirtualClock
from acksim.world.queue import body_bytes
from acksim.world.worker import WHOLE_WORKER_PHASES, WorkerCrash

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
    (a reference, of which every worker start gets a fresh copy, or a callable run as given;
    ``acksim.world.code``) overrides ``fanout.processor``; it reads virtual time while it runs
    (``acksim.world.vclock``). Raises ``ScenarioError`` for a processor that cannot load."""

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
        code = self.code.start()  # this worker process's copy of the code under test
        while True:
            receiving = queue.receive(name)
            delivery = None
            try:
                delivery = yield receiving
                self.busy.add(name)
                yield from self._handle(name, rng, records, delivery, code)
                self.busy.discard(name)
            except (WorkerCrash, simpy.Interrupt) as exc:
                phase, down = exc.cause if isinstance(exc, simpy.Interrupt) else (exc.phase, exc.down_s)
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
                executing = delivery.message_id if delivery is not None and phase not in WHOLE_WORKER_PHASES else None
                queue.consumer_lost(name, executing)
                yield from stay_down(env, self.history, name, down)
                code = self.code.start()  # a new process

    def _handle(self, name, rng, records, delivery, code):
        env, queue, cfg = self.env, self.queue, self.scenario.fanout
        restart = self.scenario.workers.restart_delay_s
        task = self.tasks[delivery.job.account_id]
        recording = _Recording(records)
        records.begin()
        rc = delivery.receive_count
        processor, image = code

        def run(t, r, e):
            return processor(t, r, e, attempt=rc, base_s=cfg.backoff_base_s, max_s=cfg.backoff_max_s)
        attempt = Attempt(run, task, {"records": recording, "endpoint": self.endpoint},
                          self.scenario.run.step_budget_s, image=image, clock=self.clock,
                          now=lambda: self.env.now)
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
                    raise WorkerCrash("before_call", restart)
            elif self.fault_plan.crash(rng, delivery.number, "after_call", step.index):
                raise WorkerCrash("after_call", restart)
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
                                receive_count=rc, detail=error_line(error))
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
                                receive_count=rc, detail=error_line(error, 200))
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
                raise WorkerCrash("after_commit", restart)
            if self.fault_plan.crash(rng, delivery.number, "during_ack"):
                raise WorkerCrash("during_ack", restart)
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
        self._budget_reason = run_guarded(env, env.process(self._until_idle()), sc.run.max_events,
                                          sc.run.max_wall_s)
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
