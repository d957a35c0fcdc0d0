"""The worker's attempt at one delivery, written once for the simulation and the live mode.

The cleanup design's attempt (``cleanup_attempt``): with ``workers.ack_policy =
"before_processing"`` ack first; a poison job kills the worker; the job's own work
(``workers.service_time_*``); then, up to ``conflict_retries + 1`` times: begin the unit of
work, run the processor step by step (``acksim.world.sandbox.interleave.Attempt``: every store call
is a point where time passes, a pause or partition may hold the worker, and the fault plan
may crash it before or after the call), commit and record what the stores committed. Then
ack, or, after a conflict that outlived its retries or an error of the processor's own,
roll back and nack with the queue's backoff. A crash may land after the commit and during
the ack. The fan-out design's deliverer (``decision_attempt``) runs the same steps and ends
in its processor's decision: ack, nack with a delay, or dead-letter.

Each attempt is a generator driven by a port, the few things a driver does its own way
(``WorkerPort``): the SimPy worker's port waits in virtual time by yielding SimPy events
(``acksim.world.actors.worker``), the live worker's sleeps on the wall clock and yields nothing
(``acksim.live.worker``), and both write the same record kinds through ``port.record``. A
crash is ``WorkerCrash``, raised out of the generator: the driver cleans up (the simulation)
or dies for real (the live mode).
"""

from __future__ import annotations

import random
from typing import Any, Callable, ContextManager, Iterator, Protocol

from acksim.model.errors import ConflictError
from acksim.model.store_api import Blocked
from acksim.printable import error_line
from acksim.world.sandbox.interleave import Attempt, Finished, ProcessorHung, Sleep, StoreCall
from acksim.world.links import StoreUnreachable

WRITE_METHODS = frozenset({"apply_once", "apply_if_current", "add_once", "put", "delete", "mark_sent", "mark_failed"})
WHOLE_WORKER_PHASES = frozenset({"deployment", "killed"})  # the process went, not one job's child


class WorkerCrash(Exception):
    """Raised by an attempt (never inside the processor) when the worker must crash at
    ``phase`` (a fault-plan phase, "poison"); ``down_s`` (virtual s) keeps it down."""

    def __init__(self, phase: str, down_s: float) -> None:
        super().__init__(phase)
        self.phase = phase
        self.down_s = down_s


class WorkerPort(Protocol):
    """What an attempt needs of its driver. Plain attributes: ``name`` (the worker),
    ``rng`` (its random stream), ``session`` (its unit of work: ``begin``, ``commit`` ->
    committed writes, ``rollback``, ``in_transaction``, the stores), ``processor`` (the
    function and the worker's image or None, ``acksim.world.sandbox.code``), ``workers`` (the
    scenario's ``[workers]``), ``queue_config`` (its ``[queue]``), ``plan`` (the
    ``FaultPlan``), ``record`` (``record(kind, actor, **fields)``), ``step_budget_s``,
    ``clock`` and ``now`` (the virtual clock for the code under test, or None),
    ``poison_accounts``, ``current`` (the running ``Attempt``, set by the attempt so that a
    crash can abandon it). The generator methods yield what the driver waits on."""

    name: str
    rng: random.Random
    current: Attempt | None

    def sleep(self, seconds: float) -> Iterator[Any]:
        """The processor's ``time.sleep``."""

    def wait_blocked(self, blocked: Blocked) -> Iterator[Any]:
        """A store call's statement waits on a lock (PostgreSQL): until it may have moved on
        (``acksim.world.db_waits``). Only drivers whose stores park need it (the simulation's)."""

    def work(self, seconds: float, where: str) -> Iterator[Any]:
        """The job's own work, placed at ``where`` ("start", "first_write", "after_call")."""

    def before_call(self, delivery: Any, call: StoreCall) -> Iterator[Any]:
        """A store call's latency (drawn from ``rng`` in the simulation) and whatever holds
        the worker at that call (a pause, a partition)."""

    def before_commit(self) -> Iterator[Any]:
        """The commit's round trip."""

    def backoff(self, seconds: float) -> Iterator[Any]:
        """A conflict's backoff before the attempt is retried."""

    def ack_latency(self) -> Iterator[Any]:
        """The ack's (or nack's) round trip."""

    def commit_scope(self) -> ContextManager[Callable[..., Any]]:
        """Around the commit and its records; gives the ``record`` function to use."""

    def lease_held(self, delivery: Any) -> bool:
        """False when the worker must not commit: its lease is gone (``stop_when_lease_lost``)."""

    def ack(self, delivery: Any) -> None:
        """Ack ``delivery`` (or record why it could not be)."""

    def nack(self, delivery: Any, delay_s: float) -> None:
        """Give ``delivery`` back, visible again ``delay_s`` virtual seconds from now."""

    def dead_letter(self, delivery: Any, reason: str) -> None:
        """Move ``delivery`` to the dead-letter queue at once."""

    def processor_failed(self, delivery: Any, error: BaseException) -> None:
        """The processor raised ``error`` (after it was recorded)."""

    def hung(self, delivery: Any, error: ProcessorHung) -> None:
        """The processor never returned (after it was recorded); may raise or end the worker."""

    def wrote(self, delivery: Any, writes: Any, record: Callable[..., Any]) -> None:
        """Record the effects the stores committed (``record_writes``)."""


def service_time(workers, rng: random.Random) -> float:
    """One job's own work in virtual seconds: ``service_time_mean_s``, constant or an
    exponential draw from ``rng`` (``service_time_distribution``)."""
    mean = workers.service_time_mean_s
    return mean if workers.service_time_distribution == "constant" else rng.expovariate(1.0 / mean)


def record_tx(record, kind: str, name: str, d, detail: str) -> None:
    """Record ``kind`` (a transaction's or an attempt's end) for delivery ``d`` by worker ``name``."""
    record(kind, name, message_id=d.message_id, account_id=d.job.account_id, cleanup_version=d.job.cleanup_version,
           receive_count=d.receive_count, deadline=d.deadline_s, detail=detail)


def _steps(port: WorkerPort, attempt: Attempt, delivery, unit_of_work: bool, work_at: str | None, worked: bool):
    """Run ``attempt`` to its end: at each store call the work placed there, the call's
    latency, a pause, and the crash draws before and after it; the writes of an autocommit
    transaction scope recorded as they land. ``worked``: the job's own work is done already.
    Returns the ``Finished`` step and whether the work is done by now. Raises ``WorkerCrash``."""
    workers, rng, plan, number = port.workers, port.rng, port.plan, delivery.number
    crash, restart = plan.crash, workers.restart_delay_s
    # with nothing to record or do after a store call (a unit of work, no work placed after
    # a call) and no crash to draw there (only scheduled ones), whether to stop after the
    # call is known before it (no rng draw)
    decide_after_now = unit_of_work and not plan.draws("after_call") and work_at != "after_call"
    # the same with a crash to draw after the call: the attempt draws it right after the call
    # returns (the very draw, in the same order on the worker's stream) and stops only to crash
    draw_after_in_call = unit_of_work and plan.draws("after_call") and work_at != "after_call"
    if draw_after_in_call:
        attempt.stop_after = lambda index: crash(rng, number, "after_call", index)
    step = attempt.step()
    while not isinstance(step, Finished):
        if type(step) is Sleep:
            yield from port.sleep(step.seconds)
        elif type(step) is Blocked:  # inside a store call: its statement waits on a lock
            yield from port.wait_blocked(step)
        elif step.when == "before":
            if not worked and work_at == "first_write" and step.method in WRITE_METHODS:
                worked = True
                if workers.service_time_mean_s > 0:
                    yield from port.work(service_time(workers, rng), "first_write")
            yield from port.before_call(delivery, step)
            if crash(rng, number, "before_call", step.index):
                raise WorkerCrash("before_call", restart)
            if decide_after_now:  # nothing to record or draw after the call: stop there only to crash
                attempt.pause_after = crash(rng, number, "after_call", step.index)
        elif decide_after_now or draw_after_in_call:  # stopped after the call only to crash
            raise WorkerCrash("after_call", restart)
        else:
            if not unit_of_work:
                port.wrote(delivery, port.session.take_autocommitted(), port.record)
            if crash(rng, number, "after_call", step.index):
                raise WorkerCrash("after_call", restart)
            if not worked and work_at == "after_call" and step.index == workers.service_time_call:
                worked = True  # the work sits after this call (a side effect, then the work)
                if workers.service_time_mean_s > 0:
                    yield from port.work(service_time(workers, rng), "after_call")
        step = attempt.step()
    port.current = None
    return step, worked


def cleanup_attempt(port: WorkerPort, delivery):
    """Handle one delivery of a cleanup job (see the module docstring): the ack policy, the
    unit of work and its retries. ``delivery``: ``message_id``, ``job`` (a ``CleanupJob``),
    ``deadline_s``, ``receive_count``, ``number`` (the delivery's number over the run, which
    the fault plan's schedule names). Raises ``WorkerCrash``, and ``ProcessorHung`` when the
    port's ``hung`` does."""
    workers, session, rng, record, name = port.workers, port.session, port.rng, port.record, port.name
    job = delivery.job
    unit_of_work = workers.transaction_scope == "unit_of_work"
    if workers.ack_policy == "before_processing":
        yield from _ack(port, delivery)
    if job.account_id in port.poison_accounts:
        raise WorkerCrash("poison", workers.restart_delay_s)
    work_at = workers.service_time_at
    worked = work_at == "start"
    if worked and workers.service_time_mean_s > 0:  # the job's own work, outside the unit of work
        yield from port.work(service_time(workers, rng), "start")
    stores = {"accounts": session.accounts, "cleanup_store": session.cleanup_store, "outbox": session.outbox}
    function, image = port.processor
    for attempt_no in range(workers.conflict_retries + 1):
        if unit_of_work:
            session.begin()
        attempt = port.current = Attempt(function, job, stores, port.step_budget_s, image=image, clock=port.clock,
                                         now=port.now)
        record("attempt_started", name, message_id=delivery.message_id, account_id=job.account_id,
               cleanup_version=job.cleanup_version, receive_count=delivery.receive_count, detail=str(attempt_no))
        try:
            step, worked = yield from _steps(port, attempt, delivery, unit_of_work, work_at, worked)
            error = step.error
            if isinstance(error, ProcessorHung):
                raise error
            if error is None and unit_of_work:
                yield from port.before_commit()
                if not port.lease_held(delivery):
                    session.rollback()  # another worker may hold the job now: write nothing
                    record_tx(record, "lease_lost", name, delivery, "rolled back before commit")
                    return
                with port.commit_scope() as rec:
                    writes = session.commit()
                    record_tx(rec, "tx_committed", name, delivery, str(len(writes)))
                    port.wrote(delivery, writes, rec)
        except ConflictError as exc:  # the commit itself conflicted
            error = exc
        except ProcessorHung as exc:  # the world cannot go on with a processor that never returns
            record_tx(record, "processor_error", name, delivery, f"hung: {exc}")
            port.hung(delivery, exc)
            raise
        except StoreUnreachable as exc:  # partitioned from the database: roll back, give it back
            _abandon(port)
            record_tx(record, "tx_rolled_back", name, delivery, f"db_unreachable: {exc}")
            if workers.ack_policy == "after_commit":
                yield from _nack(port, delivery)
            return
        if error is None:
            break
        if session.in_transaction:
            session.rollback()
        if isinstance(error, ConflictError):
            record_tx(record, "tx_rolled_back", name, delivery, f"conflict:{type(error).__name__}")
            if attempt_no < workers.conflict_retries:
                yield from port.backoff(rng.uniform(0.0, workers.conflict_backoff_s * 2 ** attempt_no))  # full jitter
                continue
        elif workers.retryable(error):  # "not now": a retry the processor asked for, not a failure
            record_tx(record, "retry_requested", name, delivery, error_line(error))
            if unit_of_work:
                record_tx(record, "tx_rolled_back", name, delivery, "retry_requested")
            if workers.ack_policy == "after_commit":
                yield from _nack(port, delivery, getattr(error, "delay_s", None))
            return
        else:
            record_tx(record, "processor_error", name, delivery, error_line(error))
            port.processor_failed(delivery, error)
            if unit_of_work:
                record_tx(record, "tx_rolled_back", name, delivery, "processor_error")
        if workers.ack_policy == "after_commit":
            yield from _nack(port, delivery)
        return
    if workers.ack_policy == "after_commit":
        if port.plan.crash(rng, delivery.number, "after_commit"):
            raise WorkerCrash("after_commit", workers.restart_delay_s)
        yield from _ack(port, delivery)


def _abandon(port: WorkerPort) -> None:
    """Unwind the running attempt, if any, and roll its transaction back."""
    if port.current is not None:
        port.current.abandon()
        port.current = None
    if port.session.in_transaction:
        port.session.rollback()


def _ack(port: WorkerPort, delivery):
    yield from port.ack_latency()
    if port.plan.crash(port.rng, delivery.number, "during_ack"):
        raise WorkerCrash("during_ack", port.workers.restart_delay_s)
    port.ack(delivery)


def _nack(port: WorkerPort, delivery, delay_s: float | None = None):
    """Give ``delivery`` back after the ack's round trip, to come back in ``delay_s`` virtual
    seconds (a Retry-After) or, when None, after the queue's backoff."""
    yield from port.ack_latency()
    port.nack(delivery, port.queue_config.nack_backoff(delivery.receive_count) if delay_s is None else delay_s)


def decision_attempt(port: WorkerPort, delivery, function: Callable, task, stores: dict, decision_type: type,
                     written: list):
    """Handle one delivery of the fan-out design: run the processor on ``task`` with
    ``stores`` by calling ``function(task, *stores.values())`` on the worker's image
    (``port.processor[1]``) (its records store is ``port.session``, whose writes this attempt appends to
    ``written`` as (key, update id, subscriber)), in a transaction; its return value, a
    ``decision_type`` (``action`` "done", "retry" or "dead_letter", ``delay_s``), decides:
    "done" commits then acks, "retry" rolls back and nacks with its delay, "dead_letter" rolls
    back and dead-letters. An error of the processor's own or a conflict rolls back and nacks
    with the queue's backoff. Raises ``WorkerCrash`` and ``ProcessorHung``."""
    records, record, name, rng = port.session, port.record, port.name, port.rng
    rc, mid, key = delivery.receive_count, delivery.message_id, task.key
    records.begin()
    attempt = port.current = Attempt(function, task, stores, port.step_budget_s, image=port.processor[1],
                                     clock=port.clock,
                                     now=port.now)
    record("attempt_started", name, message_id=mid, account_id=key, receive_count=rc)
    step, _ = yield from _steps(port, attempt, delivery, True, None, True)
    error, decision = step.error, step.value
    if isinstance(error, ProcessorHung):
        raise error
    if error is None and not isinstance(decision, decision_type):
        error = TypeError(f"the processor returned {decision!r}, not a {decision_type.__module__}.{decision_type.__name__}")
    if error is not None and not isinstance(error, ConflictError):
        record("processor_error", name, message_id=mid, account_id=key, receive_count=rc, detail=error_line(error))
    try:
        if error is None and decision.action == "done":
            records.commit()
        else:
            records.rollback()
    except ConflictError as exc:  # a concurrent delivery of the same task committed first
        error = exc
        if records.in_transaction:
            records.rollback()
    if error is not None:
        record("tx_rolled_back", name, message_id=mid, account_id=key, receive_count=rc, detail=error_line(error, 200))
        port.nack(delivery, port.queue_config.nack_backoff(rc))
        return
    for rkey, update_id, subscriber in written if decision.action == "done" else ():
        record("delivery_recorded", name, message_id=mid, account_id=subscriber, receive_count=rc,
               detail=f"{update_id} {rkey}")
    yield from port.ack_latency()
    if decision.action == "retry":
        port.nack(delivery, decision.delay_s)
    elif decision.action == "dead_letter":
        port.dead_letter(delivery, "rejected")
    else:
        if port.plan.crash(rng, delivery.number, "after_commit"):
            raise WorkerCrash("after_commit", port.workers.restart_delay_s)
        if port.plan.crash(rng, delivery.number, "during_ack"):
            raise WorkerCrash("during_ack", port.workers.restart_delay_s)
        port.ack(delivery)


def record_writes(record, name: str, delivery, writes, deadline_of, to_virtual, on_outbox) -> None:
    """Record the effects the stores committed (ground truth), not what the processor meant.
    Account writes (a candidate design whose cleanup changes or deletes the account) are
    recorded too, so the invariants replay the committed account state. ``deadline_of(account
    id, version)`` gives the deadline (virtual s) of a job other than the delivery's, or None;
    ``to_virtual(datetime)`` virtual seconds; ``on_outbox()`` is called for each committed
    outbox event (the simulation's relay wakes)."""
    mid, rc, job = delivery.message_id, delivery.receive_count, delivery.job
    for w in writes:
        if w.kind in ("cleanup_applied", "outbox_added"):
            if w.kind == "outbox_added":
                on_outbox()
            same_job = (w.account_id, w.cleanup_version) == (job.account_id, job.cleanup_version)
            deadline = delivery.deadline_s if same_job else deadline_of(w.account_id, w.cleanup_version)
            record(w.kind, name, message_id=mid, account_id=w.account_id, cleanup_version=w.cleanup_version,
                   receive_count=rc, deadline=deadline, detail=w.event_key or "")
        elif w.kind == "account_put" and w.account is not None:
            a = w.account
            record("account_updated", name, message_id=mid, account_id=a.account_id,
                   cleanup_version=a.cleanup_version, receive_count=rc,
                   deadline=to_virtual(a.deadline), detail="renewed" if a.renewed else "")
        elif w.kind == "account_deleted":
            record("account_deleted", name, message_id=mid, account_id=w.account_id, receive_count=rc)
