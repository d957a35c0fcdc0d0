"""A live worker: one OS process that receives from the real broker and runs the processor.

The simulation's attempt (``acksim.world.attempt.cleanup_attempt``, the very code), driven
in wall time through a ``LivePort``: receive; begin the unit of work on its own connection to
the one SQLite file; run the processor (so store call indices and the crash points are the
simulation's); commit; record what SQLite committed; ack. A write conflict rolls back and is
retried after a jittered backoff, then nacked; an error of the processor's own is rolled back
and nacked with the queue's backoff. A crash is real: the process records "crashed" and sends itself SIGKILL, so its
connection to the broker and its SQLite transaction die with it; the parent restarts it after
``workers.restart_delay_s``. SIGTERM (a deployment) is the same crash, phase "deployment".
The job's own work (``workers.service_time_mean_s``, placed at ``service_time_at``) is a
sleep of that many virtual seconds, scaled. A broker that goes away (a broker restart) is
survived: a receive that fails on a lost connection is retried on a new one every
``RECONNECT_WALL_S`` until the broker is back, and an ack or nack that fails is recorded
"ack_failed" (detail "ack:broker_down" or "nack:broker_down", as the simulation's) and left
to the broker's own redelivery. Between deliveries the worker leaves when the parent sets the
stop event. SIGSTOP / SIGCONT (a pause) need nothing here: the process simply stops.
"""

from __future__ import annotations

import os
import signal
import time
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from functools import partial
from pathlib import Path

from acksim.model.job import CleanupJob
from acksim.world.attempt import WorkerCrash, cleanup_attempt, record_writes

MIN_BACKOFF_WALL_S = 0.001  # a conflict backoff shorter than this on the wall clock is this
RECONNECT_WALL_S = 0.2  # wall seconds between attempts to reach a broker that went away


@dataclass(frozen=True)
class WorkerConfig:
    """What a worker process needs (picklable, for the 'spawn' start method). ``scenario``
    is the validated scenario as a dict (``Scenario.model_dump``); ``t0`` the run's wall
    origin (``time.monotonic()``); ``time_scale`` wall s per virtual s; ``incarnation``
    counts this worker's restarts (0 first)."""

    name: str
    incarnation: int
    journal: str
    t0: float
    time_scale: float
    scenario: dict
    processor_ref: str
    db_path: str
    db_options: tuple[str, bool, bool]
    transport: object


def run_worker(cfg: WorkerConfig, deliveries, stop) -> None:
    """Process body. ``deliveries``: a shared ``multiprocessing.Value`` counting deliveries
    over the whole run (the delivery number of ``faults.crashes``); ``stop``: a
    ``multiprocessing.Event`` the parent sets at the end. Never returns on a crash."""
    from acksim.live.journal import Journal
    from acksim.model.sqlite_store import SqliteDatabase
    from acksim.model.store_api import DbOptions
    from acksim.scenario.loading import parse
    from acksim.world.core import stream
    from acksim.world.faults import FaultPlan
    from acksim.world.sandbox.processor_ref import load_processor

    scenario = parse(cfg.scenario, "live scenario")
    journal = Journal(Path(cfg.journal), cfg.t0, cfg.time_scale)
    state = {"delivery": None}
    session = None

    def die(phase: str) -> None:
        d = state["delivery"]
        fields = _fields(d) if d is not None else {}
        journal.record("crashed", cfg.name, detail=phase, **fields)
        if session is not None and session.in_transaction and d is not None:
            journal.record("tx_rolled_back", cfg.name, detail="crash", **fields, deadline=d.body["deadline_s"])
        os.kill(os.getpid(), signal.SIGKILL)

    import logging

    # a broker restart makes pika log each lost connection with a traceback; the worker's
    # journal records what happened (ack_failed), and its own loop reconnects
    logging.getLogger("pika").setLevel(logging.CRITICAL)
    signal.signal(signal.SIGTERM, lambda *_: die("deployment"))
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's: it stops us
    processor = load_processor(cfg.processor_ref, "processor")
    db = SqliteDatabase(cfg.db_path, DbOptions(*cfg.db_options))
    session = db.session()
    w = LivePort(cfg, scenario, journal, processor, session, FaultPlan(scenario.faults),
                 stream(scenario.seed, f"{cfg.name}#{cfg.incarnation}"), state, die)
    lost = cfg.transport.lost_connection
    while not stop.is_set():
        if w.consumer is None:
            try:
                w.consumer = cfg.transport.consumer(cfg.name)
            except Exception as exc:  # noqa: BLE001 - only a lost broker is retried
                if not lost(exc):
                    raise
                time.sleep(RECONNECT_WALL_S)
                continue
        try:
            got = w.consumer.receive(0.1)
        except Exception as exc:  # noqa: BLE001 - only a lost broker is retried
            if not lost(exc):
                raise
            w.drop_consumer()
            time.sleep(RECONNECT_WALL_S)
            continue
        if got is None:
            continue
        with _deployment_held(), deliveries.get_lock():  # killed holding the lock, it would stop every worker
            deliveries.value += 1
            number = deliveries.value
        w.handle(got, number)
    w.drop_consumer()
    session.close()
    journal.close()


@contextmanager
def _deployment_held():
    """Hold SIGTERM (a deployment) for the block: a commit or an ack and the records of it
    happen together, or not at all, so the history never misses what SQLite or the broker
    took. A pending SIGTERM is delivered when the block ends (the worker dies right after)."""
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _fields(d) -> dict:
    return {"message_id": d.message_id, "account_id": d.body["account_id"],
            "cleanup_version": d.body["cleanup_version"], "receive_count": d.receive_count}


@dataclass(frozen=True, slots=True)
class LiveDelivery:
    """A broker's delivery as the attempt sees it: the job from its body, its deadline
    (virtual s), receive count and number over the run; ``raw`` the transport's own."""

    message_id: str
    job: CleanupJob
    deadline_s: float
    receive_count: int
    number: int
    raw: object


class LivePort:
    """A live worker process's side of the attempt (``acksim.world.attempt.WorkerPort``):
    waits are wall-clock sleeps of the virtual seconds times the time scale (a store call
    takes what it takes: no drawn latency); acks and nacks go to the broker, a lost
    connection recorded "ack_failed"; a crash is ``die`` (SIGKILL); records go to the
    worker's journal."""

    current = None

    def __init__(self, cfg, scenario, journal, processor, session, plan, rng, state, die) -> None:
        self.cfg, self.sc, self.j = cfg, scenario, journal
        self.session, self.plan, self.rng, self.state, self.die = session, plan, rng, state, die
        self.consumer = None
        self.name = cfg.name
        self.processor = (processor, None)
        self.workers, self.queue_config, self.record = scenario.workers, scenario.queue, journal.record
        self.step_budget_s, self.clock, self.now = scenario.run.step_budget_s, None, None
        self.poison_accounts = frozenset(scenario.faults.poison_accounts)

    def wall(self, virtual_s: float) -> float:
        return virtual_s * self.cfg.time_scale

    def drop_consumer(self) -> None:
        """Close the broker connection (one that was lost, or at the end); the worker's loop
        opens a new one before its next receive."""
        if self.consumer is not None:
            self.consumer.close()
            self.consumer = None

    def sleep(self, seconds: float):
        time.sleep(self.wall(seconds))
        return ()

    def work(self, seconds: float, where: str):
        time.sleep(self.wall(seconds))
        return ()

    def before_call(self, delivery, call):
        return ()

    def before_commit(self):
        return ()

    def backoff(self, seconds: float):
        time.sleep(max(self.wall(seconds), MIN_BACKOFF_WALL_S))
        return ()

    def ack_latency(self):
        return ()

    @contextmanager
    def commit_scope(self):
        """A commit and its records are one step for a SIGTERM; they are stamped with the
        wall time before the commit (the write lock is held: commit order is time order)."""
        with _deployment_held():
            yield partial(self.j.record, at=time.monotonic())

    def lease_held(self, delivery) -> bool:
        return True

    def processor_failed(self, delivery, error: BaseException) -> None:
        pass

    def hung(self, delivery, error: BaseException) -> None:
        self.die("hung")

    def wrote(self, delivery, writes, record) -> None:
        epoch = self.sc.epoch
        record_writes(record, self.name, delivery, writes, lambda account_id, version: None,
                      lambda dt: (dt - epoch).total_seconds(), lambda: None)

    def rec(self, kind: str, d, **extra) -> None:
        self.j.record(kind, self.name, **_fields(d), deadline=d.body["deadline_s"], **extra)

    def handle(self, d, number: int) -> None:
        """One delivery ``d`` of the transport, the ``number``-th of the run."""
        self.state["delivery"] = d
        if d.claimed:  # taken from a consumer that went quiet: the claim ended its lease
            self.j.record("visibility_expired", self.name, **{**_fields(d), "receive_count": d.receive_count - 1},
                          deadline=d.body["deadline_s"], detail="claimed")
        if d.dead:
            self.rec("dead_lettered", d, detail="max_receive_count")
            self.state["delivery"] = None
            return
        self.rec("delivered", d)
        body = d.body
        job = CleanupJob(body["account_id"], body["cleanup_version"], self.sc.epoch + timedelta(seconds=body["deadline_s"]))
        try:
            for _ in cleanup_attempt(self, LiveDelivery(d.message_id, job, body["deadline_s"], d.receive_count, number, d)):
                pass  # the live port's waits are sleeps: nothing is ever yielded
        except WorkerCrash as crash:
            self.die(crash.phase)
        self.state["delivery"] = None

    def ack(self, delivery) -> None:
        d = delivery.raw
        with _deployment_held():  # an ack the broker took is recorded before a SIGTERM can end us
            try:
                acked = self.consumer.ack(d)
            except Exception as exc:  # noqa: BLE001 - only a lost broker is survived
                self.broker_lost(exc, d, "ack")
            else:
                self.rec("acked" if acked else "ack_stale", d)
            if self.workers.ack_policy == "after_commit":
                self.state["delivery"] = None  # a deployment from here on holds nothing

    def nack(self, delivery, delay_s: float) -> None:
        d = delivery.raw
        try:
            self.consumer.nack(d, self.wall(delay_s))
        except Exception as exc:  # noqa: BLE001 - only a lost broker is survived
            self.broker_lost(exc, d, "nack")
            return
        self.rec("nacked", d, visible_at=self.j.now() + delay_s)

    def broker_lost(self, exc: BaseException, d, what: str) -> None:
        """An ack or nack (``what``) of ``d`` failed: on a lost broker connection record
        "ack_failed" (the message is left to the broker's redelivery) and drop the connection;
        any other error is raised again."""
        if not self.cfg.transport.lost_connection(exc):
            raise exc
        self.rec("ack_failed", d, detail=f"{what}:broker_down")
        self.drop_consumer()
