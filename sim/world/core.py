"""The world: one SimPy environment with every actor wired to one history and one database.

``World(scenario, processor).run()`` builds the stores, plans the workload, starts the actors
(scheduler, queue, workers, renewals, outbox relay, fault injector, operator) and runs virtual
time until the planned events are over and the pipeline is idle, or ``run.max_time_s``.
"""

from __future__ import annotations

import hashlib
import random
import tempfile
from datetime import datetime, timedelta
from pathlib import Path
from contextlib import nullcontext
from typing import Callable, ContextManager

import simpy

from acksim.model.store_api import DbOptions
from acksim.model.stores import open_database
from acksim.collector import young_collections
from acksim.world.budget import LoopGuard, run_guarded, stop_reason
from acksim.world.db_waits import DbWaits
from acksim.world.cost import refuse_if_too_costly
from acksim.world.sandbox.interleave import ProcessorHung
from acksim.world.faults import FaultPlan, fault_injector, killer
from acksim.world import links as _links
from acksim.world import skip
from acksim.history import History
from acksim.outcome import FinalState, Outcome
from acksim.printable import error_line, error_text
from acksim.world.actors.outbox_relay import OutboxRelay
from acksim.world.queue.core import Queue
from acksim.world.sandbox.code import CodeUnderTest
from acksim.world.sandbox.vclock import VirtualClock
from acksim.world.actors.renewals import LifecycleOp, Renewals, plan_workload, planned_workload
from acksim.scenario import Scenario
from acksim.world.actors.scheduler import Scheduler
from acksim.world.ticks import delay_until
from acksim.world.actors.worker import worker


def stream(seed: int, name: str) -> random.Random:
    """An independent, reproducible random stream for the actor ``name``."""
    digest = hashlib.sha256(f"{seed}:{name}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def scenario_queue(env: simpy.Environment, history: History, scenario: Scenario) -> Queue:
    """The scenario's queue on ``env``, recording into ``history``: ``[queue]`` settings, its
    own random stream ("queue") and the spurious copies ``faults.duplicates`` forces (both
    designs build it this way)."""
    return Queue(env, history, scenario.queue, stream(scenario.seed, "queue"),
                 frozenset(d.delivery for d in scenario.faults.duplicates))


class RunStopped(Exception):
    """Ends a run early from inside an actor (see ``World.processor_failed``)."""


class World:
    """Everything one run needs. ``processor`` is the code under test: a reference (by default
    the one the scenario names, the reference ``acksim.model.processor:process`` unless it says
    otherwise), of which every worker start gets a fresh copy (``acksim.world.sandbox.code``), or a
    callable, run as given. While it runs it reads virtual time (``clock``, from the
    scenario's ``epoch``; ``acksim.world.sandbox.vclock``). ``db_path`` is the SQLite file (a temporary one by
    default); ``progress`` is called with the virtual time now and then; ``workload`` is an
    explicit plan (initial deadline by account id, sorted lifecycle steps) instead of the one
    drawn from the scenario's ``[workload]`` table. ``run.step_budget_s`` and
    ``run.stop_on_processor_error`` of the scenario govern a misbehaving processor. Raises
    ValueError (from the stores) for an impossible store configuration and ``ScenarioError``
    for a processor reference that cannot be loaded or a scenario whose estimated cost is over
    ``run.max_events`` (``acksim.world.cost``)."""

    def __init__(self, scenario: Scenario, processor: Callable | str | None = None,
                 db_path: str | Path | None = None, progress: Callable[[float], None] | None = None,
                 workload: tuple[dict[str, float], list[LifecycleOp]] | None = None) -> None:
        refuse_if_too_costly(scenario)
        self.scenario = scenario
        self.code = CodeUnderTest(processor if processor is not None else scenario.processor,
                                  path=scenario.processor_path)
        self.processor = self.code.function  # the harness's own copy (validated); workers run images
        # one time-machine travel for the whole run, only shifted at each switch into user code
        # (``VirtualClock(session=True)``); the harness reads no wall clock while it runs
        self.clock = VirtualClock(scenario.epoch, session=True)
        self.progress = progress
        self.env = skip.Environment()  # a simpy.Environment that can skip a lone timeout
        self.history = History(lambda: self.env.now)
        self._tmp = None
        st = scenario.stores
        options = DbOptions(st.isolation, st.unique_markers, st.unique_outbox_keys)
        if st.backend == "sqlite" and db_path is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="acksim-")
            db_path = Path(self._tmp.name) / "stores.db"
        # PostgreSQL statements wait on locks: they park their actor in virtual time
        self.db_waits = DbWaits(self.env) if st.backend == "postgres" else None
        try:
            self.db = open_database(st.backend, str(db_path) if db_path else None, options, waits=self.db_waits)
            self._build(scenario, workload)
        except BaseException:  # an error or a signal mid-way: no temporary folder left behind
            if getattr(self, "db", None) is not None:
                self.db.close()
            if self._tmp is not None:
                self._tmp.cleanup()
            raise

    def _build(self, scenario: Scenario, workload) -> None:
        seed = scenario.seed
        self.queue = scenario_queue(self.env, self.history, scenario)
        self.fault_plan = FaultPlan(scenario.faults)
        self.scheduler = Scheduler(self.env, self.history.record, self.queue, self.db.session, self.to_virtual,
                                   self.to_datetime, scenario.scheduler, scenario.workload.payload_bytes,
                                   scenario.faults.scheduler_stalls, stream(seed, "scheduler"))
        if workload is None and scenario.plan.accounts:
            workload = planned_workload(scenario.plan)
        if workload is None:
            workload = plan_workload(scenario.workload, stream(seed, "workload"))
        self.initial_deadlines, ops = workload
        self.renewals = Renewals(self.env, self.db.session(), self.history.record, self.scheduler.schedule,
                                 scenario.workload, scenario.epoch, ops, waits=self.db_waits)
        self.relay = OutboxRelay(self.env, self.db.session(), self.history.record, scenario.mail,
                                 stream(seed, "outbox-relay"))
        self.workers: list[simpy.Process] = []
        self.step_budget_s = scenario.run.step_budget_s
        self.stop_on_processor_error = scenario.run.stop_on_processor_error
        self._stopped = False  # a processor error ended a check's run (``stop_on_processor_error``)
        self._budget_reason: str | None = None  # ``run.max_events`` / ``max_wall_s`` ran out
        self._undrained = False  # ``run.max_time_s`` came before the pipeline drained
        self._hung = ""  # the processor ran past ``run.step_budget_s`` between two store calls
        self.processor_errors: list[tuple[float, str, int, str]] = []  # (time, worker, message id, traceback)
        self.import_error: str | None = None  # the first ImportError the processor raised, one line
        self.busy: set[str] = set()  # workers holding a delivery (only its size is read)
        self.poison_accounts = frozenset(scenario.faults.poison_accounts)  # membership only
        self.links = _links.install(self)  # pauses, partitions, broker restarts (None without)
        if scenario.queue.ack_timeout_ends_consumer:
            from acksim.world.queue.consumer_timeout import install

            install(self)

    # --- time ------------------------------------------------------------------------------
    def now(self) -> float:
        """The virtual time now, in seconds (what the code under test's clocks are set to)."""
        return self.env.now

    def to_datetime(self, t: float) -> datetime:
        """Virtual seconds → aware UTC datetime (microsecond precision)."""
        return self.scenario.epoch + timedelta(seconds=t)

    def to_virtual(self, dt: datetime) -> float:
        """Aware datetime → virtual seconds."""
        return (dt - self.scenario.epoch).total_seconds()

    def deadline_of(self, account_id: str, cleanup_version: int) -> float | None:
        """The deadline of (account, version) as recorded by the lifecycle, if known."""
        for r in reversed(self.history.records):  # rare: a processor writing another job's marker
            if (r.account_id, r.cleanup_version) == (account_id, cleanup_version) and r.deadline is not None:
                return r.deadline
        return None

    # --- running ---------------------------------------------------------------------------
    def run(self) -> Outcome:
        """Run to the end; returns the history and the final store state. The cyclic
        collector is set for a long run meanwhile (``acksim.collector.young_collections``)."""
        with young_collections():
            return self._run()

    def _run(self) -> Outcome:
        sc, env = self.scenario, self.env
        self.renewals.create_accounts(self.initial_deadlines)
        env.process(self.renewals.run())
        if sc.scheduler.mode == "cron":
            env.process(self.scheduler.cron())
        env.process(self.relay.run())
        for i in range(1, sc.workers.count + 1):
            name = f"worker-{i}"
            self.workers.append(env.process(worker(self, name, stream(sc.seed, name))))
        if sc.faults.deployments:
            env.process(fault_injector(self, sc.faults.deployments))
        if sc.faults.kills:
            env.process(killer(self, sc.faults.kills))
        if self.links is not None:
            self.links.start()
            if self.links.broker is not None:
                env.process(self.links.broker.run())
        for at in sorted(sc.queue.redrive_at_s):
            env.process(self._redrive(at))
        self.clock.start()
        try:
            guard = LoopGuard(self.history, sc.run.max_redeliveries_without_progress)
            self._budget_reason = run_guarded(env, env.process(self._until_idle()), sc.run.max_events,
                                              sc.run.max_wall_s, guard)
        except RunStopped:
            self._stopped = True
        except ProcessorHung as exc:  # the caller reports what happened up to here
            self._hung = f"the processor hung, so the run ended there: {exc}"
            raise
        finally:
            self.clock.stop()  # real wall clocks again
        return self.outcome()

    def outcome(self) -> Outcome:
        """The history so far and the stores' state now (after ``run``, or after it raised
        ``ProcessorHung``)."""
        return Outcome(self.history.frozen(), self.final_state())

    def _redrive(self, at: float):
        yield self.env.timeout(at)
        self.queue.redrive("operator")

    def _planned_end(self) -> float:
        last_op = self.renewals.ops[-1].at_s if self.renewals.ops else 0.0
        last_deadline = max(self.initial_deadlines.values(), default=0.0)
        n = self.scenario.workers.count
        faults = self.scenario.faults
        ends = [last_op, last_deadline, *self.scenario.queue.redrive_at_s,
                *(d.at_s + n * d.worker_down_s for d in faults.deployments),
                *(k.at_s + k.down_s for k in faults.kills), *(hi for _lo, hi in faults.scheduler_stalls),
                *_links.window_ends(faults)]
        return max(ends)

    def _until_idle(self):
        """SimPy process: check the record limit every ``step`` until the planned end, then
        every ``run.idle_check_s`` whether the pipeline drained. A check can only change its
        answer after some other event, so the checks before the next scheduled event
        (``env.peek()``) are skipped (``_skip_to``): the run ends at the same check instant
        as with every check made, without the events of the idle ones."""
        env, sc = self.env, self.scenario
        end = min(self._planned_end(), sc.run.max_time_s)
        step = max(end / 200.0, sc.run.idle_check_s)
        while env.now < end:  # move in steps so a progress bar can follow
            yield env.timeout(_skip_to(env, step, end))
            if self.progress:
                self.progress(env.now)
            if self.over_record_limit:
                return
        while env.now < sc.run.max_time_s and not self.over_record_limit:
            if (self.renewals.pending == 0 and not self.busy and self.queue.idle
                    and self.scheduler.idle and self.relay.idle):
                return
            yield env.timeout(_skip_to(env, sc.run.idle_check_s, sc.run.max_time_s))
            if self.progress:
                self.progress(env.now)
        self._undrained = not self.over_record_limit

    @property
    def over_record_limit(self) -> bool:
        """True once the history holds ``run.max_records`` records: the world stops early."""
        return len(self.history.records) >= self.scenario.run.max_records

    def stop_reason(self) -> str:
        """One line saying which guard stopped the run before the pipeline drained, or ""."""
        return stop_reason(self.scenario.run, self.env.now, len(self.history.records), self._budget_reason,
                           self._undrained, self._hung)

    def processor_failed(self, when: float, worker: str, message_id: int, error: BaseException | str) -> None:
        """Note an error of the processor's own (kept as its traceback text); with
        ``stop_on_processor_error`` (a check: the example is a finding already) the run ends
        here. An ``ImportError`` is also kept in ``import_error``: a processor that cannot
        import what it needs is a broken environment (exit 2), not a verdict on the design."""
        text = error if isinstance(error, str) else error_text(error)
        self.processor_errors.append((when, worker, message_id, text))
        if isinstance(error, ImportError) and self.import_error is None:
            self.import_error = error_line(error)
        if self.stop_on_processor_error:
            raise RunStopped(text)

    def final_state(self) -> FinalState:
        """Read the stores' committed state through a fresh session."""
        s = self.db.session()
        try:
            reason = self.stop_reason()
            return FinalState(tuple(s.accounts.all()), tuple(s.cleanup_store.markers()),
                              tuple(s.outbox.events()), self.queue.dead_letter_queue,
                              tuple(self.queue.in_flight()), float(self.env.now),
                              bool(reason) or self._stopped, reason)
        finally:
            s.close()

    def close(self) -> None:
        """Close the database and remove a temporary SQLite file."""
        self.db.close()
        if self._tmp is not None:
            self._tmp.cleanup()


def _skip_to(env: simpy.Environment, step: float, end: float) -> float:
    """The delay (s) to the next check of a grid ``now, now + min(step, end - now), ...`` that
    comes at or after the next scheduled event (or at ``end``): the checks before it would
    see the same state."""
    now, upcoming = env.now, env.peek()
    at = now + min(step, end - now)
    while at < upcoming and at < end:
        at += min(step, end - at)
    return delay_until(now, at)


def simulate(scenario: Scenario, processor: Callable | str | None = None, *, contained: bool = True) -> Outcome:
    """Run ``scenario`` to the end in a fresh ``World`` (with ``processor``, or the one the
    scenario names) and close it; returns the history and final state.

    ``contained`` (the default): the world runs in a supervised child process
    (``acksim.world.sandbox.supervised``), from any thread: a processor that hangs ends the run
    there (``final.stop_reason``), and one whose process dies or is killed for hanging gives
    an empty history with ``final.contained`` naming the finding (``processor_killed_worker``,
    ``processor_hung``). ``contained=False`` runs it in this process, as ``World`` does:
    ``ProcessorHung`` is raised then, and a processor's ``os._exit`` or blocking call ends or
    hangs the caller. A PostgreSQL the stores need is started here and stopped after
    (``stores_server``). Raises as ``World`` (``ScenarioError``, ValueError)."""
    with stores_server(scenario):
        if contained:
            from acksim.world.sandbox.supervised import run_world

            return run_world(scenario, processor, world=World).outcome
        world = World(scenario, processor)
        try:
            return world.run()
        finally:
            world.close()


def stores_server(scenario: Scenario) -> ContextManager[object]:
    """A block within which the server ``scenario``'s stores need runs (a private PostgreSQL
    for ``stores.backend = "postgres"``, ``acksim.postgres_server.held_server``; nothing for
    the others), started in this process so that the supervised child a run happens in uses
    it, and always stopped after."""
    if scenario.stores.backend != "postgres":
        return nullcontext()
    from acksim.postgres_server import held_server

    return held_server()
