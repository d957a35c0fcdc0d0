"""Workers: the consumers that receive a job, run the processor, commit, then ack.

A worker's life, as a SimPy process: wait for a delivery, then drive the attempt at it
(``acksim.world.attempt.cleanup_attempt``: begin a unit of work; run the processor, each
store call letting virtual time pass and maybe a crash point; commit; ack; a conflict
retried, then nacked; an error of the processor's own rolled back and nacked) through its
``SimPort``. A crash (a fault-plan decision, or an interrupt
from the fault injector) abandons the attempt, rolls its transaction back, leaves the message
in flight until its visibility timeout (or as ``queue.on_worker_lost`` says), and keeps the
worker down for its restart delay. An ETA job not yet due (``queue.eta_held_by_worker``,
Celery's countdown) is held in the worker's memory, unacked, and run when due while the
worker goes on receiving; a crash drawn while running a held job kills only that job's child
(the worker lives on), and a worker that goes down loses every job it held. With
``workers.concurrency`` > 0 the worker's attempts (its own and the held jobs come due) share
that many slots, a SimPy ``Resource`` per worker process (a fresh one at every start).
"""

from __future__ import annotations

import random
from collections import deque
from contextlib import nullcontext

import simpy

from acksim.world.attempt import WHOLE_WORKER_PHASES, WorkerCrash, cleanup_attempt, record_tx, record_writes
from acksim.world.faults import latency_of, stay_down
from acksim.world.queue import prefetch
from acksim.world.actors import time_limits
from acksim.world.sandbox.interleave import Attempt
from acksim.world.skip import advance
from acksim.world.queue import tombstones
from acksim.world.queue.core import Delivery


class SimPort:
    """A SimPy worker's side of the attempt (``acksim.world.attempt.WorkerPort``): waits are
    SimPy timeouts in virtual time (skipped in place when nothing else can happen first,
    ``acksim.world.skip``) and, where a pause may hold the worker, a wait for it
    (``acksim.world.links``); acks and nacks go to the world's queue; records to its history.
    Also what a crash must clean up: the running attempt (``current``), the held delivery,
    the pending receive, the ETA jobs held and the prefetched deliveries."""

    __slots__ = ("world", "env", "links", "queue", "name", "rng", "session", "processor", "workers",
                 "queue_config", "plan", "record", "step_budget_s", "clock", "now", "poison_accounts",
                 "current", "delivery", "receiving", "held", "prefetched", "_latency", "_scope")

    def __init__(self, world, name: str, rng: random.Random, session, processor: tuple) -> None:
        self.world, self.env, self.links, self.queue = world, world.env, world.links, world.queue
        self.name, self.rng, self.session, self.processor = name, rng, session, processor
        self.workers, self.queue_config, self.plan = world.scenario.workers, world.queue.config, world.fault_plan
        self.record, self.step_budget_s = world.history.record, world.step_budget_s
        self.clock, self.now, self.poison_accounts = world.clock, world.now, world.poison_accounts
        self.current: Attempt | None = None
        self.delivery: Delivery | None = None
        self.receiving: simpy.Event | None = None
        self.held: list[simpy.Process] = []  # ETA jobs waiting in this worker's memory
        self.prefetched: deque[Delivery] = deque()  # received, not yet started (queue.prefetch)
        self._latency = latency_of(world.scenario)
        self._scope = nullcontext(self.record)

    def _pass(self, seconds: float):
        """Let ``seconds`` pass, then wait out a pause that holds the worker."""
        if not advance(self.env, seconds):
            yield self.env.timeout(seconds)
        if self.links is not None:
            yield from self.links.hold(self.name)

    def _advance(self, seconds: float):
        if not advance(self.env, seconds):
            yield self.env.timeout(seconds)

    def sleep(self, seconds: float):
        return self._pass(seconds)

    def wait_blocked(self, blocked):
        return self.world.db_waits.wait(blocked)

    def work(self, seconds: float, where: str):
        if where == "start":
            yield self.env.timeout(seconds)
        elif where == "first_write":
            yield from self._advance(seconds)
        else:
            yield from self._pass(seconds)

    def before_call(self, delivery: Delivery, call):
        latency = self._latency(self.env.now, self.rng)
        if latency and not advance(self.env, latency):  # zero latency: the call happens at once
            yield self.env.timeout(latency)
        if self.links is not None:  # a pause at this call, a frozen worker, no database
            yield from self.links.at_call(self.name, delivery, call.index)

    def before_commit(self):
        latency = self._latency(self.env.now, self.rng)  # the commit's round trip
        if latency and not advance(self.env, latency):
            yield self.env.timeout(latency)
        if self.links is not None:
            yield from self.links.at_commit(self.name)

    def backoff(self, seconds: float):
        return self._advance(seconds)

    def ack_latency(self):
        return self._pass(self.queue_config.ack_latency_s)

    def commit_scope(self):
        return self._scope

    def lease_held(self, delivery: Delivery) -> bool:
        return not self.workers.stop_when_lease_lost or self.queue.lease_held(delivery)

    def ack(self, delivery: Delivery) -> None:
        if self.links is not None and not self.links.queue_reachable(self.name):
            self.links.ack_failed(self.name, delivery)  # lost to a partition or a broker restart
            return
        self.queue.ack(delivery, self.name)

    def nack(self, delivery: Delivery, delay_s: float) -> None:
        if self.links is not None and not self.links.queue_reachable(self.name):
            self.links.ack_failed(self.name, delivery, "nack")
            return
        self.queue.nack(delivery, self.name, delay_s)

    def dead_letter(self, delivery: Delivery, reason: str) -> None:
        self.queue.dead_letter(delivery, self.name, reason)

    def processor_failed(self, delivery: Delivery, error: BaseException) -> None:
        self.world.processor_failed(self.env.now, self.name, delivery.message_id, error)

    def hung(self, delivery: Delivery, error: BaseException) -> None:
        self.world.processor_errors.append((self.env.now, self.name, delivery.message_id, f"hung: {error}"))

    def wrote(self, delivery: Delivery, writes, record) -> None:
        world = self.world
        record_writes(record, self.name, delivery, writes, world.deadline_of, world.to_virtual, world.relay.poke)


def worker(world, name: str, rng: random.Random):
    """SimPy process of one consumer named ``name`` running the world's code under test.

    Runs forever; the world stops the simulation. ``rng`` is this worker's own random stream
    (store latencies and crash draws). Each start of the worker's process, the first and one
    after every crash, kill or deployment, gets a fresh copy of the code
    (``world.code.start()``: a new process image); the ETA jobs it holds run on that copy.
    """
    env, queue = world.env, world.queue
    port = SimPort(world, name, rng, world.db.session(), world.code.start())
    pool = _pool(world)
    while True:
        try:
            if port.prefetched:  # a batch received before: the next one, its lease running since
                delivery = port.prefetched.popleft()
            else:
                port.receiving = queue.receive(name)
                delivery = yield port.receiving
                port.receiving = None
                if queue.config.prefetch > 1:
                    port.prefetched.extend(prefetch.take_now(queue, name, queue.config.prefetch - 1))
            if delivery.tombstone:  # an id with no payload: nothing to run
                yield from tombstones.handle(world, name, delivery)
                continue
            if queue.config.eta_held_by_worker and delivery.deadline_s > env.now:
                port.held = [p for p in port.held if p.is_alive]
                port.held.append(env.process(_held(world, name, port.processor, rng, delivery, pool)))
                continue
            port.delivery = delivery
            world.busy.add(name)
            with _slot(pool) as slot:
                if slot is not None:
                    yield slot  # a free slot of the worker's pool (workers.concurrency)
                watch = time_limits.start(world, env.active_process)  # workers.execution_timeout_s
                try:
                    yield from cleanup_attempt(port, delivery)
                finally:
                    time_limits.stop(watch)
            port.delivery = None
            world.busy.discard(name)
        except (WorkerCrash, simpy.Interrupt) as exc:
            if isinstance(exc, simpy.Interrupt):
                phase, down_s = exc.cause
            else:
                phase, down_s = exc.phase, exc.down_s
            _crash(world, port, phase)
            if world.links is not None:
                world.links.crashed(name)  # a pause ends with the process
            port.prefetched.clear()  # its memory is gone; their loans are left to their lease
            for held in port.held:  # the worker's memory is gone, and the jobs it held
                if held.is_alive:
                    held.interrupt(phase)
            port.held = []
            yield from stay_down(env, world.history, name, down_s)
            port.processor = world.code.start()  # a new process: the old one's memory is gone
            pool = _pool(world)  # and a new pool


def _pool(world) -> simpy.Resource | None:
    """A worker process's pool of ``workers.concurrency`` slots, or None (no bound)."""
    slots = world.scenario.workers.concurrency
    return simpy.Resource(world.env, capacity=slots) if slots else None


def _slot(pool: simpy.Resource | None):
    """A request for a slot of ``pool`` to use as a context (the slot, granted or still asked
    for, is given back on the way out), or a context of None without a pool."""
    return nullcontext() if pool is None else pool.request()


def _held(world, name: str, processor: tuple, rng: random.Random, delivery: Delivery,
          pool: simpy.Resource | None = None):
    """SimPy process of one ETA job held by worker ``name``: wait until due (and for a slot of
    the worker's ``pool``, when it has one), then run it on a session of its own, on the
    worker's copy of the code (``processor``: (function, image)). A crash drawn while it runs
    ends this job only (its loan is handled as ``queue.on_worker_lost`` says); an interrupt
    means the worker went down: a job not started yet is lost unrun."""
    env, key = world.env, f"{name}/held-{delivery.number}"
    world.busy.add(key)
    port = SimPort(world, name, rng, world.db.session(), processor)
    port.delivery = delivery
    due, watch = False, None
    try:
        yield env.timeout(delivery.deadline_s - env.now)
        with _slot(pool) as slot:
            if slot is not None:
                yield slot  # every slot taken: it starts when one frees
            due = True
            watch = time_limits.start(world, env.active_process)  # the child's time limit
            yield from cleanup_attempt(port, delivery)
    except WorkerCrash as exc:
        _crash(world, port, exc.phase, only=delivery.message_id)
    except simpy.Interrupt as exc:  # the worker went down (or the time limit killed this child)
        phase = exc.cause[0] if isinstance(exc.cause, tuple) else exc.cause or "killed"
        if due:  # a job already running is recorded as crashed
            _crash(world, port, phase, only=delivery.message_id)
        else:  # lost unrun with the worker's memory: its recovery clock starts now
            _held_lost(world, name, delivery, phase)
    finally:
        time_limits.stop(watch)
        world.busy.discard(key)
        port.session.close()


def _held_lost(world, name: str, delivery: Delivery, phase: str) -> None:
    """Record the loss of a held ETA job that worker ``name`` had not started when it went
    down at ``phase``: a "crashed" record for that message with detail "held_lost:<phase>"
    (its loan was left to its lease by the worker's own crash; nothing else changes)."""
    job = delivery.job
    world.history.record("crashed", name, message_id=delivery.message_id, account_id=job.account_id,
                         cleanup_version=job.cleanup_version, receive_count=delivery.receive_count,
                         detail=f"held_lost:{phase}")


def _crash(world, port: SimPort, phase: str, only: int | None = None) -> None:
    """Clean up after a crash of worker ``port.name`` (or, with ``only``, of the child
    running the held job of that message id) and record it."""
    name, session = port.name, port.session
    held = port.delivery
    if port.receiving is not None:
        if port.receiving.triggered:
            held = port.receiving.value  # received, then died before looking at it
        else:
            world.queue.cancel(port.receiving)
    resisted = None
    if port.current is not None:
        resisted = port.current.abandon()
        port.current = None
    rolled_back = session.in_transaction
    if rolled_back:
        session.rollback()
    job = held.job if held else None
    world.history.record(
        "crashed", name, message_id=held.message_id if held else None,
        account_id=job.account_id if job else None, cleanup_version=job.cleanup_version if job else None,
        receive_count=held.receive_count if held else None, detail=phase)
    if rolled_back and held is not None:
        record_tx(world.history.record, "tx_rolled_back", name, held, "crash")
    if resisted is not None and held is not None:
        record_tx(world.history.record, "processor_error", name, held, resisted)
        world.processor_failed(world.env.now, name, held.message_id, resisted)
    port.delivery = None
    port.receiving = None
    if only is None:
        world.busy.discard(name)
    # on_worker_lost (Celery's acks_late) concerns the child running the job; a worker that is
    # stopped (deployment) or killed leaves every loan to its lease
    executing = held.message_id if held is not None and phase not in WHOLE_WORKER_PHASES else None
    world.queue.consumer_lost(name, executing, only=only is not None)


