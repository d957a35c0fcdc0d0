"""A live worker: one OS process that receives from the real broker and runs the processor.

The same attempt as the simulation's worker (``acksim.world.worker``), in wall time: receive;
begin the unit of work on its own connection to the one SQLite file; run the processor
(``acksim.world.interleave.Attempt``, so store call indices and the crash points are the
simulation's); commit; record what SQLite committed; ack. A write conflict rolls back and is
retried after a jittered backoff, then nacked; an error of the processor's own is rolled back
and nacked. A crash is real: the process records "crashed" and sends itself SIGKILL, so its
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
from pathlib import Path

from acksim.model.errors import ConflictError
from acksim.model.job import CleanupJob

WRITE_METHODS = frozenset({"apply_once", "add_once", "put", "delete", "mark_sent", "mark_failed"})
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


class _Crash(BaseException):
    pass


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
    from acksim.world.processor_ref import load_processor

    scenario = parse(cfg.scenario, "live scenario")
    journal = Journal(Path(cfg.journal), cfg.t0, cfg.time_scale)
    state = {"delivery": None, "in_tx": False}

    def die(phase: str) -> None:
        d = state["delivery"]
        fields = _fields(d) if d is not None else {}
        journal.record("crashed", cfg.name, detail=phase, **fields)
        if state["in_tx"] and d is not None:
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
    w = Worker(cfg, scenario, journal, processor, session, None, FaultPlan(scenario.faults),
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


class Worker:
    """The attempt logic of one worker process (see the module docstring)."""

    def __init__(self, cfg, scenario, journal, processor, session, consumer, plan, rng, state, die) -> None:
        self.cfg, self.sc, self.j, self.processor = cfg, scenario, journal, processor
        self.session, self.consumer, self.plan, self.rng = session, consumer, plan, rng
        self.state, self.die = state, die
        self.name = cfg.name

    def wall(self, virtual_s: float) -> float:
        return virtual_s * self.cfg.time_scale

    def drop_consumer(self) -> None:
        """Close the broker connection (one that was lost, or at the end); the worker's loop
        opens a new one before its next receive."""
        if self.consumer is not None:
            self.consumer.close()
            self.consumer = None

    def work(self) -> None:
        """The job's own work: ``workers.service_time_mean_s`` virtual seconds (constant or an
        exponential draw, as the simulation's), slept on the wall clock (scaled)."""
        cfg = self.sc.workers
        if cfg.service_time_mean_s > 0:
            mean = cfg.service_time_mean_s
            took = mean if cfg.service_time_distribution == "constant" else self.rng.expovariate(1.0 / mean)
            time.sleep(self.wall(took))

    def rec(self, kind: str, d, at: float | None = None, **extra) -> None:
        self.j.record(kind, self.name, at=at, **_fields(d), deadline=d.body["deadline_s"], **extra)

    def handle(self, d, number: int) -> None:
        """One delivery, as ``acksim.world.worker._handle``."""
        self.state["delivery"] = d
        if d.claimed:  # taken from a consumer that went quiet: the claim ended its lease
            self.j.record("visibility_expired", self.name, **{**_fields(d), "receive_count": d.receive_count - 1},
                          deadline=d.body["deadline_s"], detail="claimed")
        if d.dead:
            self.rec("dead_lettered", d, detail="max_receive_count")
            self.state["delivery"] = None
            return
        self.rec("delivered", d)
        cfg = self.sc.workers
        if cfg.ack_policy == "before_processing":
            self.ack(d, number)
        self.attempts(d, number)
        self.state["delivery"] = None

    def attempts(self, d, number: int) -> None:
        from acksim.world.interleave import Attempt, Finished, ProcessorHung, Sleep

        cfg, plan, s = self.sc.workers, self.plan, self.session
        unit_of_work = cfg.transaction_scope == "unit_of_work"
        job = CleanupJob(d.body["account_id"], d.body["cleanup_version"],
                         self.sc.epoch + timedelta(seconds=d.body["deadline_s"]))
        if d.body["account_id"] in self.sc.faults.poison_accounts:
            self.die("poison")
        worked = cfg.service_time_at == "start"
        if worked:  # the job's own work, outside the unit of work
            self.work()
        for attempt_no in range(cfg.conflict_retries + 1):
            if unit_of_work:
                s.begin()
                self.state["in_tx"] = True
            attempt = Attempt(self.processor, job, {"accounts": s.accounts, "cleanup_store": s.cleanup_store,
                                                    "outbox": s.outbox}, self.sc.run.step_budget_s)
            self.rec("attempt_started", d, detail=str(attempt_no))
            error = None
            try:
                step = attempt.step()
                while not isinstance(step, Finished):
                    if isinstance(step, Sleep):
                        time.sleep(self.wall(step.seconds))
                    elif step.when == "before":
                        if not worked and cfg.service_time_at == "first_write" and step.method in WRITE_METHODS:
                            worked = True
                            self.work()
                        if plan.crash(self.rng, number, "before_call", step.index):
                            self.die("before_call")
                    else:
                        if not unit_of_work:
                            self.writes(d, s.take_autocommitted())
                        if plan.crash(self.rng, number, "after_call", step.index):
                            self.die("after_call")
                        if not worked and cfg.service_time_at == "after_call" and step.index == cfg.service_time_call:
                            worked = True  # the work sits after this call (a side effect, then the work)
                            self.work()
                    step = attempt.step()
                error = step.error
                if isinstance(error, ProcessorHung):
                    raise error
                if error is None and unit_of_work:
                    with _deployment_held():  # a commit and its records are one step for a SIGTERM
                        at = time.monotonic()  # the write lock is held (if it wrote): commit order = time order
                        writes = s.commit()
                        self.state["in_tx"] = False
                        self.rec("tx_committed", d, at=at, detail=str(len(writes)))
                        self.writes(d, writes, at)
            except ConflictError as exc:
                error = exc
            except ProcessorHung as exc:
                self.rec("processor_error", d, detail=f"hung: {exc}")
                self.die("hung")
            if error is None:
                break
            if s.in_transaction:
                s.rollback()
            self.state["in_tx"] = False
            if isinstance(error, ConflictError):
                self.rec("tx_rolled_back", d, detail=f"conflict:{type(error).__name__}")
                if attempt_no < cfg.conflict_retries:
                    pause = self.rng.uniform(0.0, cfg.conflict_backoff_s * 2 ** attempt_no)
                    time.sleep(max(self.wall(pause), MIN_BACKOFF_WALL_S))
                    continue
            else:
                summary = f"{type(error).__name__}: {error}".splitlines()[0][:300]
                self.rec("processor_error", d, detail=summary)
                if unit_of_work:
                    self.rec("tx_rolled_back", d, detail="processor_error")
            if cfg.ack_policy == "after_commit":
                q = self.sc.queue
                backoff = min(q.nack_backoff_base_s * 2 ** max(d.receive_count - 1, 0), q.nack_backoff_max_s)
                try:
                    self.consumer.nack(d, self.wall(backoff))
                except Exception as exc:  # noqa: BLE001 - only a lost broker is survived
                    self.broker_lost(exc, d, "nack")
                    return
                self.rec("nacked", d, visible_at=self.j.now() + backoff)
            return
        if cfg.ack_policy == "after_commit":
            if plan.crash(self.rng, number, "after_commit"):
                self.die("after_commit")
            self.ack(d, number)

    def ack(self, d, number: int) -> None:
        if self.plan.crash(self.rng, number, "during_ack"):
            self.die("during_ack")
        with _deployment_held():  # an ack the broker took is recorded before a SIGTERM can end us
            try:
                acked = self.consumer.ack(d)
            except Exception as exc:  # noqa: BLE001 - only a lost broker is survived
                self.broker_lost(exc, d, "ack")
            else:
                self.rec("acked" if acked else "ack_stale", d)
            if self.sc.workers.ack_policy == "after_commit":
                self.state["delivery"] = None  # a deployment from here on holds nothing

    def broker_lost(self, exc: BaseException, d, what: str) -> None:
        """An ack or nack (``what``) of ``d`` failed: on a lost broker connection record
        "ack_failed" (the message is left to the broker's redelivery) and drop the connection;
        any other error is raised again."""
        if not self.cfg.transport.lost_connection(exc):
            raise exc
        self.rec("ack_failed", d, detail=f"{what}:broker_down")
        self.drop_consumer()

    def writes(self, d, writes, at: float | None = None) -> None:
        """Record what SQLite committed (ground truth), as ``acksim.world.worker._record_writes``."""
        for w in writes:
            if w.kind in ("cleanup_applied", "outbox_added"):
                self.j.record(w.kind, self.name, at=at, message_id=d.message_id, account_id=w.account_id,
                              cleanup_version=w.cleanup_version, receive_count=d.receive_count,
                              deadline=d.body["deadline_s"], detail=w.event_key or "")
            elif w.kind == "account_put" and w.account is not None:
                a = w.account
                self.j.record("account_updated", self.name, at=at, message_id=d.message_id,
                              account_id=a.account_id, cleanup_version=a.cleanup_version,
                              receive_count=d.receive_count,
                              deadline=(a.deadline - self.sc.epoch).total_seconds(),
                              detail="renewed" if a.renewed else "")
            elif w.kind == "account_deleted":
                self.j.record("account_deleted", self.name, at=at, message_id=d.message_id,
                              account_id=w.account_id, receive_count=d.receive_count)
