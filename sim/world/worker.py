"""Workers: the consumers that receive a job, run the processor, commit, then ack.

A worker's life, as a SimPy process: wait for a delivery; begin a unit of work; run the
processor (each store call lets virtual time pass and may be a crash point); commit; ack.
A write conflict rolls back and is retried in place after a backoff, then nacked; an error of
the processor's own is rolled back and nacked. A crash (a fault-plan decision, or an interrupt
from the fault injector) abandons the attempt, rolls its transaction back, leaves the message
in flight until its visibility timeout (or as ``queue.on_worker_lost`` says), and keeps the
worker down for its restart delay. An ETA job not yet due (``queue.eta_held_by_worker``,
Celery's countdown) is held in the worker's memory, unacked, and run when due while the
worker goes on receiving; a crash drawn while running a held job kills only that job's child
(the worker lives on), and a worker that goes down loses every job it held.
"""

from __future__ import annotations

import random
import traceback
from collections import deque
from typing import Callable

import simpy

from acksim.model.errors import ConflictError
from acksim.world.faults import latency_of, stay_down
from acksim.world import prefetch, time_limits
from acksim.world.interleave import Attempt, Finished, ProcessorHung, Sleep
from acksim.world.links import StoreUnreachable
from acksim.world.skip import advance
from acksim.world import tombstones
from acksim.world.queue import Delivery

WRITE_METHODS = frozenset({"apply_once", "add_once", "put", "delete", "mark_sent", "mark_failed"})
WHOLE_WORKER_PHASES = frozenset({"deployment", "killed"})  # the process went, not one job's child


class WorkerCrash(Exception):
    """Raised inside the worker process (never inside the processor) when it must crash."""

    def __init__(self, phase: str, down_s: float) -> None:
        super().__init__(phase)
        self.phase = phase
        self.down_s = down_s


class _State:
    """What a crash must clean up: the running attempt and the held delivery."""

    __slots__ = ("attempt", "delivery", "receiving", "held", "prefetched")

    def __init__(self) -> None:
        self.attempt: Attempt | None = None
        self.delivery: Delivery | None = None
        self.receiving: simpy.Event | None = None
        self.held: list[simpy.Process] = []  # ETA jobs waiting in this worker's memory
        self.prefetched: deque[Delivery] = deque()  # received, not yet started (queue.prefetch)


def worker(world, name: str, rng: random.Random):
    """SimPy process of one consumer named ``name`` running the world's code under test.

    Runs forever; the world stops the simulation. ``rng`` is this worker's own random stream
    (store latencies and crash draws). Each start of the worker's process, the first and one
    after every crash, kill or deployment, gets a fresh copy of the code
    (``world.code.start()``: a new process image); the ETA jobs it holds run on that copy.
    """
    env, queue = world.env, world.queue
    session = world.db.session()
    state = _State()
    processor = world.code.start()
    while True:
        try:
            if state.prefetched:  # a batch received before: the next one, its lease running since
                delivery = state.prefetched.popleft()
            else:
                state.receiving = queue.receive(name)
                delivery = yield state.receiving
                state.receiving = None
                if queue.config.prefetch > 1:
                    state.prefetched.extend(prefetch.take_now(queue, name, queue.config.prefetch - 1))
            if delivery.tombstone:  # an id with no payload: nothing to run
                yield from tombstones.handle(world, name, delivery)
                continue
            if queue.config.eta_held_by_worker and delivery.deadline_s > env.now:
                state.held = [p for p in state.held if p.is_alive]
                state.held.append(env.process(_held(world, name, processor, rng, delivery)))
                continue
            state.delivery = delivery
            world.busy.add(name)
            watch = time_limits.start(world, env.active_process)  # workers.execution_timeout_s
            try:
                yield from _handle(world, name, processor, rng, session, state, delivery)
            finally:
                time_limits.stop(watch)
            state.delivery = None
            world.busy.discard(name)
        except (WorkerCrash, simpy.Interrupt) as exc:
            if isinstance(exc, simpy.Interrupt):
                phase, down_s = exc.cause
            else:
                phase, down_s = exc.phase, exc.down_s
            _crash(world, name, session, state, phase)
            if world.links is not None:
                world.links.crashed(name)  # a pause ends with the process
            state.prefetched.clear()  # its memory is gone; their loans are left to their lease
            for held in state.held:  # the worker's memory is gone, and the jobs it held
                if held.is_alive:
                    held.interrupt(phase)
            state.held = []
            yield from stay_down(env, world.history, name, down_s)
            processor = world.code.start()  # a new process: the old one's memory is gone


def _held(world, name: str, processor: tuple, rng: random.Random, delivery: Delivery):
    """SimPy process of one ETA job held by worker ``name``: wait until due, then run it on
    a session of its own, on the worker's copy of the code (``processor``: (function, image)).
    A crash drawn while it runs ends this job only (its loan is handled as
    ``queue.on_worker_lost`` says); an interrupt means the worker went down."""
    env, key = world.env, f"{name}/held-{delivery.number}"
    world.busy.add(key)
    session = world.db.session()
    state = _State()
    state.delivery = delivery
    due, watch = False, None
    try:
        yield env.timeout(delivery.deadline_s - env.now)
        due = True
        watch = time_limits.start(world, env.active_process)  # the child's time limit
        yield from _handle(world, name, processor, rng, session, state, delivery)
    except WorkerCrash as exc:
        _crash(world, name, session, state, exc.phase, only=delivery.message_id)
    except simpy.Interrupt as exc:  # the worker went down (or the time limit killed this child)
        phase = exc.cause[0] if isinstance(exc.cause, tuple) else exc.cause or "killed"
        if due:  # a job already running is recorded as crashed
            _crash(world, name, session, state, phase, only=delivery.message_id)
        else:  # lost unrun with the worker's memory: its recovery clock starts now
            _held_lost(world, name, delivery, phase)
    finally:
        time_limits.stop(watch)
        world.busy.discard(key)
        session.close()


def _held_lost(world, name: str, delivery: Delivery, phase: str) -> None:
    """Record the loss of a held ETA job that worker ``name`` had not started when it went
    down at ``phase``: a "crashed" record for that message with detail "held_lost:<phase>"
    (its loan was left to its lease by the worker's own crash; nothing else changes)."""
    job = delivery.job
    world.history.record("crashed", name, message_id=delivery.message_id, account_id=job.account_id,
                         cleanup_version=job.cleanup_version, receive_count=delivery.receive_count,
                         detail=f"held_lost:{phase}")


def error_line(error: BaseException) -> str:
    """One printable line naming the processor's error (``acksim.world.core.error_line``)."""
    from acksim.world.core import error_line as line

    return line(error)


def _crash(world, name: str, session, state: _State, phase: str, only: int | None = None) -> None:
    """Clean up after a crash of worker ``name`` (or, with ``only``, of the child running
    the held job of that message id) and record it."""
    held = state.delivery
    if state.receiving is not None:
        if state.receiving.triggered:
            held = state.receiving.value  # received, then died before looking at it
        else:
            world.queue.cancel(state.receiving)
    resisted = None
    if state.attempt is not None:
        resisted = state.attempt.abandon()
        state.attempt = None
    rolled_back = session.in_transaction
    if rolled_back:
        session.rollback()
    job = held.job if held else None
    world.history.record(
        "crashed", name, message_id=held.message_id if held else None,
        account_id=job.account_id if job else None, cleanup_version=job.cleanup_version if job else None,
        receive_count=held.receive_count if held else None, detail=phase)
    if rolled_back and held is not None:
        _log_tx(world, "tx_rolled_back", name, held, "crash")
    if resisted is not None and held is not None:
        _log_tx(world, "processor_error", name, held, resisted)
        world.processor_failed(world.env.now, name, held.message_id, resisted)
    state.delivery = None
    state.receiving = None
    if only is None:
        world.busy.discard(name)
    # on_worker_lost (Celery's acks_late) concerns the child running the job; a worker that is
    # stopped (deployment) or killed leaves every loan to its lease
    executing = held.message_id if held is not None and phase not in WHOLE_WORKER_PHASES else None
    world.queue.consumer_lost(name, executing, only=only is not None)


def _log_tx(world, kind: str, name: str, d: Delivery, detail: str) -> None:
    world.history.record(kind, name, message_id=d.message_id, account_id=d.job.account_id,
                         cleanup_version=d.job.cleanup_version, receive_count=d.receive_count,
                         deadline=d.deadline_s, detail=detail)


def _service_time(cfg, rng: random.Random) -> float:
    mean = cfg.service_time_mean_s
    return mean if cfg.service_time_distribution == "constant" else rng.expovariate(1.0 / mean)


def _handle(world, name, processor, rng, session, state: _State, delivery: Delivery):
    """Process one delivery: the ack policy, the unit of work and its retries. ``processor``:
    (the function to call, the worker's image or None), from ``world.code.start()``.

    Per attempt: begin (unit-of-work scope), run the processor step by step (latency and crash
    draws at each store call), commit, record what committed. A conflict rolls back and
    retries in place after a jittered backoff, ``conflict_retries`` times, then nacks; a
    processor error rolls back and nacks. With "after_commit" the ack follows the commit (a
    crash may land between them); with "before_processing" it precedes everything. Raises
    ``WorkerCrash`` when the fault plan says so; the caller cleans up.
    """
    env, queue, cfg, links = world.env, world.queue, world.scenario.workers, world.links
    plan, restart = world.fault_plan, cfg.restart_delay_s
    crash, store_latency = plan.crash, latency_of(world.scenario)
    work_at_first_write = cfg.service_time_at == "first_write"
    unit_of_work = cfg.transaction_scope == "unit_of_work"
    # with nothing to record or do after a store call (a unit of work, no work placed after
    # a call) and no crash to draw there (only scheduled ones), whether to stop after the
    # call is known before it (no rng draw)
    decide_after_now = unit_of_work and not plan.draws("after_call") and cfg.service_time_at != "after_call"
    # the same with a crash to draw after the call: the attempt draws it right after the call
    # returns (the very draw, in the same order on the worker's stream) and stops only to crash
    draw_after_in_call = unit_of_work and plan.draws("after_call") and cfg.service_time_at != "after_call"
    if cfg.ack_policy == "before_processing":
        yield from _ack(world, name, rng, delivery)
    if delivery.job.account_id in world.poison_accounts:
        raise WorkerCrash("poison", restart)
    work_at_start = cfg.service_time_at == "start"
    if cfg.service_time_mean_s > 0 and work_at_start:  # the job's own work, outside the unit of work
        yield env.timeout(_service_time(cfg, rng))
    worked = work_at_start
    for attempt_no in range(cfg.conflict_retries + 1):
        if unit_of_work:
            session.begin()
        attempt = Attempt(processor[0], delivery.job, {
            "accounts": session.accounts, "cleanup_store": session.cleanup_store, "outbox": session.outbox},
            world.step_budget_s, image=processor[1], clock=world.clock, now=world.now)
        state.attempt = attempt
        if draw_after_in_call:
            attempt.stop_after = lambda index: crash(rng, delivery.number, "after_call", index)
        world.history.record("attempt_started", name, message_id=delivery.message_id,
                             account_id=delivery.job.account_id,
                             cleanup_version=delivery.job.cleanup_version,
                             receive_count=delivery.receive_count, detail=str(attempt_no))
        error = None
        try:
            step = attempt.step()
            while not isinstance(step, Finished):
                if type(step) is Sleep:
                    yield from _pass(world, name, step.seconds)
                elif step.when == "before":
                    if not worked and work_at_first_write and step.method in WRITE_METHODS:
                        worked = True
                        if cfg.service_time_mean_s > 0:
                            work_s = _service_time(cfg, rng)
                            if not advance(env, work_s):
                                yield env.timeout(work_s)
                    latency = store_latency(env.now, rng)
                    if latency and not advance(env, latency):  # zero latency: the call happens at once
                        yield env.timeout(latency)
                    if links is not None:  # a pause at this call, a frozen worker, no database
                        yield from links.at_call(name, delivery, step.index)
                    if crash(rng, delivery.number, "before_call", step.index):
                        raise WorkerCrash("before_call", restart)
                    if decide_after_now:  # nothing to record or draw after the call: stop there only to crash
                        attempt.pause_after = crash(rng, delivery.number, "after_call", step.index)
                elif decide_after_now or draw_after_in_call:  # stopped after the call only to crash
                    raise WorkerCrash("after_call", restart)
                else:
                    if not unit_of_work:
                        _record_writes(world, name, delivery, session.take_autocommitted())
                    if crash(rng, delivery.number, "after_call", step.index):
                        raise WorkerCrash("after_call", restart)
                    if not worked and cfg.service_time_at == "after_call" and step.index == cfg.service_time_call:
                        worked = True  # the work sits after this call (a side effect, then the work)
                        if cfg.service_time_mean_s > 0:
                            yield from _pass(world, name, _service_time(cfg, rng))
                step = attempt.step()
            state.attempt = None
            error = step.error
            if isinstance(error, ProcessorHung):
                raise error
            if error is None and unit_of_work:
                latency = store_latency(env.now, rng)  # the commit's round trip
                if latency and not advance(env, latency):
                    yield env.timeout(latency)
                if links is not None:
                    yield from links.at_commit(name)
                if cfg.stop_when_lease_lost and not queue.lease_held(delivery):
                    session.rollback()  # another worker may hold the job now: write nothing
                    _log_tx(world, "lease_lost", name, delivery, "rolled back before commit")
                    return
                writes = session.commit()
                _log_tx(world, "tx_committed", name, delivery, str(len(writes)))
                _record_writes(world, name, delivery, writes)
        except ConflictError as exc:  # the commit itself conflicted
            error = exc
        except ProcessorHung as exc:  # the world cannot go on with a processor that never returns
            _log_tx(world, "processor_error", name, delivery, f"hung: {exc}")
            world.processor_errors.append((env.now, name, delivery.message_id, f"hung: {exc}"))
            raise  # a processor that never returns cannot be run on
        except StoreUnreachable as exc:  # partitioned from the database: roll back, give it back
            yield from _db_unreachable(world, name, session, state, delivery, str(exc))
            return
        if error is None:
            break
        if session.in_transaction:
            session.rollback()
        if isinstance(error, ConflictError):
            _log_tx(world, "tx_rolled_back", name, delivery, f"conflict:{type(error).__name__}")
            if attempt_no < cfg.conflict_retries:
                backoff_s = rng.uniform(0.0, cfg.conflict_backoff_s * 2 ** attempt_no)  # full jitter
                if not advance(env, backoff_s):
                    yield env.timeout(backoff_s)
                continue
        else:
            summary = error_line(error)
            _log_tx(world, "processor_error", name, delivery, summary)
            world.processor_failed(env.now, name, delivery.message_id, error)
            if unit_of_work:
                _log_tx(world, "tx_rolled_back", name, delivery, "processor_error")
        if cfg.ack_policy == "after_commit":
            yield from _nack(world, name, delivery)
        return
    if cfg.ack_policy == "after_commit":
        if plan.crash(rng, delivery.number, "after_commit"):
            raise WorkerCrash("after_commit", restart)
        yield from _ack(world, name, rng, delivery)


def _ack(world, name, rng, delivery: Delivery):
    yield from _pass(world, name, world.queue.config.ack_latency_s)
    if world.fault_plan.crash(rng, delivery.number, "during_ack"):
        raise WorkerCrash("during_ack", world.scenario.workers.restart_delay_s)
    if world.links is not None and not world.links.queue_reachable(name):
        world.links.ack_failed(name, delivery)  # lost to a partition or a broker restart
        return
    world.queue.ack(delivery, name)


def _nack(world, name, delivery: Delivery):
    """Give ``delivery`` back with the queue's backoff, after the ack latency (the nack is
    lost when the worker cannot reach the queue)."""
    yield from _pass(world, name, world.queue.config.ack_latency_s)
    if world.links is not None and not world.links.queue_reachable(name):
        world.links.ack_failed(name, delivery, "nack")
        return
    world.queue.nack(delivery, name, world.queue.backoff(delivery.receive_count))


def _pass(world, name: str, seconds: float):
    """SimPy sub-process: let ``seconds`` of virtual time pass for worker ``name``, then wait
    out a pause that holds it (``acksim.world.links``)."""
    if not advance(world.env, seconds):
        yield world.env.timeout(seconds)
    if world.links is not None:
        yield from world.links.hold(name)


def _db_unreachable(world, name, session, state: _State, delivery: Delivery, what: str):
    """A store call or commit failed (partitioned from the database): abandon the attempt,
    roll back, record it and nack (no error of the processor's own)."""
    if state.attempt is not None:
        state.attempt.abandon()
        state.attempt = None
    if session.in_transaction:
        session.rollback()
    _log_tx(world, "tx_rolled_back", name, delivery, f"db_unreachable: {what}")
    if world.scenario.workers.ack_policy == "after_commit":
        yield from _nack(world, name, delivery)


def _record_writes(world, name: str, delivery: Delivery, writes) -> None:
    """Record the effects the stores committed (ground truth), not what the processor meant.
    Account writes (a candidate design whose cleanup changes or deletes the account) are
    recorded too, so the invariants replay the committed account state. A committed outbox
    event wakes the outbox relay (``OutboxRelay.poke``)."""
    history, mid, rc = world.history, delivery.message_id, delivery.receive_count
    for w in writes:
        if w.kind in ("cleanup_applied", "outbox_added"):
            if w.kind == "outbox_added":
                world.relay.poke()
            same_job = (w.account_id, w.cleanup_version) == (delivery.job.account_id, delivery.job.cleanup_version)
            deadline = delivery.deadline_s if same_job else world.deadline_of(w.account_id, w.cleanup_version)
            history.record(w.kind, name, message_id=mid, account_id=w.account_id, cleanup_version=w.cleanup_version,
                           receive_count=rc, deadline=deadline, detail=w.event_key or "")
        elif w.kind == "account_put" and w.account is not None:
            a = w.account
            history.record("account_updated", name, message_id=mid, account_id=a.account_id,
                           cleanup_version=a.cleanup_version, receive_count=rc,
                           deadline=world.to_virtual(a.deadline), detail="renewed" if a.renewed else "")
        elif w.kind == "account_deleted":
            history.record("account_deleted", name, message_id=mid, account_id=w.account_id, receive_count=rc)
