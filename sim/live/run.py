"""The parent of a live run: the broker, the scheduler, the lifecycle and the worker processes.

``run_live(scenario, broker, ...)`` starts the real broker (``acksim.live.brokers``), declares
the queue, creates the accounts in one SQLite file (WAL mode, the simulation's schema, the
scenario's design options) and starts ``workers.count`` worker processes
(``acksim.live.worker``). Its own loop then runs wall time as the simulation runs virtual time,
``wall = virtual * time_scale``: it publishes every job at its deadline, commits the planned
lifecycle steps at their times with the simulation's own ``Renewals`` actor (driven by a small
wall-clock stand-in for SimPy's environment), restarts a crashed worker after
``workers.restart_delay_s``, runs the rolling deployments (SIGTERM to each worker in turn)
and polls the dead-letter target. It stops when every planned event is over and every
published message is acked or dead-lettered with no worker holding one, or at the wall bound
(``stopped_early``). Every process journals its records (``acksim.live.journal``); the
merged history and SQLite's committed state are the ``Outcome`` the simulation's judges read.
Brokers and workers are always stopped, also on KeyboardInterrupt.
"""

from __future__ import annotations

import heapq
import json
import itertools
import multiprocessing
import os
import shutil
import signal
import tempfile
import time
import sys
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

from acksim.live.journal import Journal, merge, read_journal
from acksim.live.transports import encode, make_transport
from acksim.live.worker import WorkerConfig, run_worker
from acksim.model.sqlite_store import SqliteDatabase
from acksim.model.store_api import DbOptions
from acksim.scenario import Scenario, ScenarioError
from acksim.world.core import FinalState, Outcome, stream
from acksim.world.renewals import Renewals, plan_workload, planned_workload

DEFAULT_TIME_SCALE = 0.05  # wall seconds per virtual second
TICK_S = 0.01  # wall seconds the loop sleeps at most between looks
POLL_S = 0.1  # wall seconds between looks at the journals and the dead-letter target
DEPLOY_JOIN_WALL_S = 2.0  # a deployment's SIGTERM: wall seconds to wait for the worker to be gone
MAX_WORKER_FAILURES = 3  # worker processes ending with an error of their own (not a crash): the run stops


class BrokerMissing(ScenarioError):
    """A broker binary or client module is not installed (one line naming the package)."""


@contextmanager
def broker_context(kind: str):
    """Start broker ``kind`` for the block, stop it after; raises ``BrokerMissing`` when its
    binary or client module is not installed."""
    from acksim.live import brokers

    makers = {"redis": brokers.redis_server, "rabbitmq": brokers.rabbitmq_server, "sqs": brokers.sqs_server}
    cm = makers[kind]()
    try:
        broker = cm.__enter__()
    except brokers.BrokerNotInstalled as exc:
        raise BrokerMissing(f"--broker {kind}: {exc}") from None
    try:
        yield broker
    except BaseException:
        if not cm.__exit__(*sys.exc_info()):
            raise
    else:
        cm.__exit__(None, None, None)


def check_live_scenario(sc: Scenario) -> None:
    """Refuse what the live mode cannot run (one line naming the field; ``ScenarioError``)."""
    if sc.fanout.updates:
        raise ScenarioError("fanout.updates: the shipment fan-out design has no live mode")
    if sc.stores.isolation != "serializable":
        raise ScenarioError("stores.isolation: live runs use SQLite, which offers only serializable isolation")
    if sc.scheduler.mode != "per_deadline":
        raise ScenarioError("scheduler.mode: live runs publish at each deadline (per_deadline); cron is not live yet")
    if sc.queue.eta_held_by_worker:
        raise ScenarioError("queue.eta_held_by_worker: not supported live")


# --- a wall-clock stand-in for the SimPy environment, enough for Renewals --------------------
@dataclass(frozen=True, slots=True)
class _Timeout:
    delay: float


class WallEnv:
    """``now`` (virtual s from the wall clock), ``timeout(d)`` and ``process(gen)``: a
    generator yielding ``timeout`` events is resumed by the parent's loop at that time."""

    def __init__(self, journal: Journal, loop: "LiveRun") -> None:
        self._j, self._loop = journal, loop

    @property
    def now(self) -> float:
        return self._j.now()

    def timeout(self, delay: float) -> _Timeout:
        return _Timeout(max(0.0, float(delay)))

    def process(self, gen) -> None:
        self._loop.at(self.now, ("step", gen))


class _History:
    def __init__(self, journal: Journal) -> None:
        self._j = journal

    def record(self, kind: str, actor: str, **fields) -> None:
        self._j.record(kind, actor, **fields)


class _Scheduler:
    def __init__(self, loop: "LiveRun") -> None:
        self._loop = loop

    def schedule(self, account_id: str, cleanup_version: int, deadline_s: float) -> None:
        self._loop.at(deadline_s, ("publish", account_id, cleanup_version, deadline_s))


@dataclass
class _Slot:
    name: str
    proc: object = None
    incarnation: int = -1
    down_until: float | None = None  # virtual s; None while running
    deploying: bool = False


@dataclass
class LiveResult:
    """A finished live run: the ``outcome`` for the judges and the ``live`` section of
    summary.json (broker, version, time scale, wall seconds, queue mechanism, notes)."""

    outcome: Outcome
    live: dict = field(default_factory=dict)


_FAULT_ITEMS = frozenset({"deploy", "deploy_one", "pause", "broker_restart"})


class LiveRun:
    """One live run (see the module docstring). ``time_scale``: wall s per virtual s;
    ``max_wall_s``: the wall bound (default: the planned span scaled, times 1.5, plus 60 s)."""

    def __init__(self, scenario: Scenario, broker: str, processor_ref: str, time_scale: float = DEFAULT_TIME_SCALE,
                 max_wall_s: float | None = None, running=None, namespace: str = "") -> None:
        check_live_scenario(scenario)
        self.sc, self.kind, self.ref, self.scale = scenario, broker, processor_ref, time_scale
        self.max_wall_s = max_wall_s
        self.running, self.namespace = running, namespace
        self._heap: list = []
        self._tie = itertools.count()
        self.published: dict[int, tuple[str, int, float]] = {}
        self.terminal: set[int] = set()
        self.holding: dict[str, int] = {}
        self.dead: list[int] = []
        self.worker_failures: list[str] = []
        self.deployments_running = 0
        self._offsets: dict[str, int] = {}
        self._paused: set[int] = set()  # SIGSTOPped worker pids (resumed before they are killed)
        self.broker_downtimes: list[float] = []  # wall s of each broker restart, stop to ready

    # --- scheduling on the wall clock -----------------------------------------------------
    def at(self, virtual_s: float, item) -> None:
        """Do ``item`` at ``virtual_s``; at one instant faults (deployments, pauses, broker
        restarts) go first, as in the simulation, where the job published at that instant is
        only receivable a publish latency later."""
        first = 0 if item[0] in _FAULT_ITEMS else 1
        heapq.heappush(self._heap, (virtual_s, first, next(self._tie), item))

    def run(self) -> LiveResult:
        with ExitStack() as stack:
            tmp = Path(tempfile.mkdtemp(prefix="acksim-live-"))
            stack.callback(shutil.rmtree, tmp, True)
            broker = self.running if self.running is not None else stack.enter_context(broker_context(self.kind))
            return self._run(broker, tmp, stack)

    def _run(self, broker, tmp: Path, stack: ExitStack) -> LiveResult:
        sc = self.sc
        self.broker = broker
        wall_start = time.monotonic()
        no_claimer = sc.queue.redelivery == "claim" and sc.queue.sweep_interval_s == 0
        transport = make_transport(broker, sc.queue.visibility_timeout_s * self.scale, self.deliveries_before_dead_letter,
                                   self.namespace, claim=not no_claimer)
        stack.callback(transport.close)
        if self.running is not None:  # a shared broker: leave it as found
            stack.callback(_quietly, transport.drop)
        transport.declare()
        self.transport = transport
        st = sc.stores
        options = DbOptions("serializable", st.unique_markers, st.unique_outbox_keys)
        db_path = tmp / "stores.db"
        db = SqliteDatabase(str(db_path), options)
        stack.callback(db.close)
        workload = planned_workload(sc.plan) if sc.plan.accounts else plan_workload(sc.workload, stream(sc.seed, "workload"))
        deadlines, ops = workload
        journals = tmp / "journals"
        journals.mkdir()
        self.t0 = t0 = time.monotonic()
        parent = Journal(journals / "00-parent.jsonl", t0, self.scale)
        stack.callback(parent.close)
        self.journal = parent
        self.env = WallEnv(parent, self)
        world = _LiveWorld(sc, db, self.env, _History(parent), _Scheduler(self))
        renewals = Renewals(world, ops)
        renewals.create_accounts(deadlines)
        self.env.process(renewals.run())
        for dep in sorted(sc.faults.deployments, key=lambda d: d.at_s):
            self.at(dep.at_s, ("deploy", dep.worker_down_s))
        planned_end = max([max(deadlines.values(), default=0.0), ops[-1].at_s if ops else 0.0,
                           *(d.at_s + sc.workers.count * d.worker_down_s for d in sc.faults.deployments)])
        wl = sc.workload  # a roll-over, an extension or a new term arms one more deadline past the plan
        longest_extension = (max((s.amount_s for s in sc.plan.steps), default=0.0) if sc.plan.accounts
                             else wl.extension_s[1])
        horizon = planned_end + wl.rollover_delay_s + wl.term_s + longest_extension
        bound = self.max_wall_s if self.max_wall_s is not None else horizon * self.scale * 1.5 + 60.0
        bound = min(bound, sc.run.max_wall_s, sc.run.max_time_s * self.scale)  # run.max_time_s: as the simulation

        ctx = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn")
        self.ctx, self.deliveries, self.stop = ctx, ctx.Value("q", 0), ctx.Event()
        self.slots = [_Slot(f"worker-{i}") for i in range(1, sc.workers.count + 1)]
        base = dict(t0=t0, time_scale=self.scale, scenario=sc.model_dump(), processor_ref=self.ref,
                    db_path=str(db_path), db_options=("serializable", st.unique_markers, st.unique_outbox_keys),
                    transport=transport)
        self._base, self._journals = base, journals
        stack.callback(self._kill_all)
        for slot in self.slots:
            self._spawn(slot)

        stop_reason = ""
        last_poll = 0.0
        while True:
            now = parent.now()
            while self._heap and self._heap[0][0] <= now:
                _t, _f, _n, item = heapq.heappop(self._heap)
                self._do(item, renewals)
            wall = time.monotonic()
            if wall - last_poll >= POLL_S:
                last_poll = wall
                self._tail()
                for mid in transport.poll_dead_letters():
                    self._dead_lettered(mid)
                self._watch_workers()
                if (now >= planned_end and renewals.pending == 0 and not self._pending_publishes()
                        and not self.deployments_running and self.published.keys() <= self.terminal
                        and not self.holding):
                    break
            if len(self.worker_failures) >= MAX_WORKER_FAILURES:
                stop_reason = (f"live: {len(self.worker_failures)} worker processes failed "
                               f"(first: {self.worker_failures[0]})")
                break
            if wall - t0 > bound:
                left = len(self.published.keys() - self.terminal)
                what = (f"run.max_time_s = {sc.run.max_time_s:g} s" if bound == sc.run.max_time_s * self.scale
                        else f"wall bound {bound:g} s")
                stop_reason = (f"live: {what} reached before the pipeline drained "
                               f"({left} message(s) unfinished)")
                break
            nxt = self._heap[0][0] if self._heap else now + 1.0
            time.sleep(max(0.0, min(TICK_S, (nxt - parent.now()) * self.scale)))

        end_s = parent.now()
        self.stop.set()
        self._join_all()
        self._tail()
        for mid in transport.poll_dead_letters():
            self._dead_lettered(mid)
        dlq = tuple(sorted(set(self.dead) | set(transport.dead_letter_ids())))
        s = db.session()
        try:
            final = FinalState(tuple(s.accounts.all()), tuple(s.cleanup_store.markers()), tuple(s.outbox.events()),
                               dlq, tuple(sorted(self.published.keys() - self.terminal)), float(end_s),
                               bool(stop_reason), stop_reason)
        finally:
            s.close()
        paths = sorted(journals.iterdir())
        history = merge(paths, t0, self.scale)
        live = {"broker": self.kind, "version": broker.version, "time_scale": self.scale,
                "wall_s": round(time.monotonic() - wall_start, 3), "broker_startup_wall_s": round(broker.startup_s, 3),
                "wall_bound_s": round(bound, 3), "workers": sc.workers.count,
                "worker_processes": sum(s.incarnation + 1 for s in self.slots),
                "start_method": ctx.get_start_method(), "queue": transport.describe(),
                "not_live": ["outbox relay and mail provider (no reminder_sent records)",
                             "visibility expiries are not observed (no visibility_expired records)",
                             "store latency, latency spikes, pauses, kills, broker restarts, spurious duplicates"],
                "worker_failures": self.worker_failures[:5], "stop_reason": stop_reason}
        return LiveResult(Outcome(history, final), live)

    # --- the loop's actions ---------------------------------------------------------------
    def _pending_publishes(self) -> bool:
        return any(item[0] == "publish" for _t, _f, _n, item in self._heap)

    def _do(self, item, renewals) -> None:
        what = item[0]
        if what == "step":
            gen = item[1]
            try:
                ev = next(gen)
            except StopIteration:
                return
            self.at(self.env.now + ev.delay, ("step", gen))
        elif what == "publish":
            _w, aid, version, deadline_s = item
            mid = len(self.published) + 1
            self.published[mid] = (aid, version, deadline_s)
            now = self.journal.now()
            self.journal.record("published", "scheduler", message_id=mid, account_id=aid, cleanup_version=version,
                                deadline=deadline_s, visible_at=now)
            self.transport.publish(encode(mid, aid, version, deadline_s))
        elif what == "deploy":
            self.deployments_running += 1
            self.journal.record("deployment_started", "fault-injector", detail=f"worker_down_s={item[1]}")
            self._do(("deploy_one", 0, item[1]), renewals)  # the first worker at once, before a job due now
        elif what == "deploy_one":
            _w, i, down_s = item
            if i >= len(self.slots):
                self.deployments_running -= 1
                return
            slot = self.slots[i]
            now = self.env.now
            if slot.down_until is None:
                slot.deploying = True
                slot.down_until = now + down_s
                if slot.proc is not None and slot.proc.is_alive():
                    os.kill(slot.proc.pid, signal.SIGTERM)
                    # the worker dies where it is, as the simulation's does at once: wait for it
                    # before the loop goes on, so a job due at this instant is not pushed to a
                    # consumer that is about to die (RabbitMQ would, and requeue it at its death)
                    slot.proc.join(DEPLOY_JOIN_WALL_S)
            else:  # down already: it stays down until the later of the two restarts
                slot.down_until = max(slot.down_until, now + down_s)
                self.at(slot.down_until, ("restart", slot))
            self.at(now + down_s, ("deploy_one", i + 1, down_s))
        elif what == "pause":  # ("pause", worker index, down_s): SIGSTOP now, SIGCONT down_s later
            from acksim.live.faults import pause

            _w, i, down_s = item
            slot = self.slots[i]
            if slot.proc is not None and slot.proc.is_alive() and pause(slot.proc.pid):
                self._paused.add(slot.proc.pid)
                self.at(self.env.now + down_s, ("resume", slot.proc.pid))
        elif what == "resume":
            from acksim.live.faults import resume

            self._paused.discard(item[1])
            resume(item[1])
        elif what == "broker_restart":  # ("broker_restart", down_s, hard): the server stops and comes back
            from acksim.live.faults import restart_broker

            _w, down_s, hard = item
            self.broker_downtimes.append(restart_broker(self.broker, down_s * self.scale, hard))
        elif what == "restart":
            slot = item[1]
            if slot.down_until is not None and slot.down_until <= self.env.now + 1e-9 and not self.stop.is_set():
                if slot.proc is not None and slot.proc.is_alive():
                    return  # the SIGTERM of a deployment not yet acted on
                self.journal.record("restarted", slot.name)
                self._spawn(slot)

    def _spawn(self, slot: _Slot) -> None:
        slot.incarnation += 1
        slot.down_until, slot.deploying = None, False
        path = self._journals / f"{slot.name}.{slot.incarnation:03d}.jsonl"
        cfg = WorkerConfig(name=slot.name, incarnation=slot.incarnation, journal=str(path), **self._base)
        slot.proc = self.ctx.Process(target=_worker_entry, args=(cfg, self.deliveries, self.stop),
                                     name=f"acksim-{slot.name}", daemon=True)
        slot.proc.start()

    def _watch_workers(self) -> None:
        """Notice dead workers: schedule the restart (crash: ``restart_delay_s``; deployment:
        its down time) and forget the delivery it held."""
        now = self.env.now
        for slot in self.slots:
            p = slot.proc
            if p is None or p.exitcode is None or getattr(p, "_acksim_seen", False):
                continue
            p._acksim_seen = True
            self.holding.pop(slot.name, None)
            if p.exitcode not in (-signal.SIGKILL, -signal.SIGTERM, 0):
                self.worker_failures.append(f"{slot.name} incarnation {slot.incarnation} exited with {p.exitcode}")
            if slot.down_until is None:
                slot.down_until = now + self.sc.workers.restart_delay_s
            self.at(slot.down_until, ("restart", slot))

    def _tail(self) -> None:
        """Read the workers' new journal lines: which messages ended, who holds what."""
        for path in sorted(self._journals.iterdir()):
            if path.name.startswith("00-"):
                continue
            key = path.name
            with open(path, "rb") as f:
                f.seek(self._offsets.get(key, 0))
                data = f.read()
            cut = data.rfind(b"\n") + 1
            self._offsets[key] = self._offsets.get(key, 0) + cut
            for raw in data[:cut].splitlines():
                line = json.loads(raw)
                k, actor, mid = line["k"], line["a"], line.get("message_id")
                if k in ("acked", "ack_stale", "dead_lettered"):
                    self.terminal.add(mid)
                if k == "dead_lettered":
                    self.dead.append(mid)
                if k == "delivered":
                    self.holding[actor] = mid
                elif k in ("acked", "ack_stale", "nacked", "crashed"):
                    self.holding.pop(actor, None)

    @property
    def deliveries_before_dead_letter(self) -> int:
        """The deliveries a message gets before it is dead-lettered (0: no end):
        ``queue.delivery_limit`` N counts returns, so N + 1 deliveries (a quorum queue's
        ``x-delivery-limit``, RMQ-QQ); else ``queue.max_receive_count``."""
        q = self.sc.queue
        return q.delivery_limit + 1 if q.delivery_limit else q.max_receive_count

    def _dead_lettered(self, mid: int) -> None:
        if mid in self.dead:
            return
        self.dead.append(mid)
        self.terminal.add(mid)
        aid, version, deadline_s = self.published[mid]
        self.journal.record("dead_lettered", "queue", message_id=mid, account_id=aid, cleanup_version=version,
                            receive_count=self.deliveries_before_dead_letter, deadline=deadline_s,
                            detail=f"{self.kind} dead-letter target")

    def _join_all(self) -> None:
        deadline = time.monotonic() + 10.0
        for slot in self.slots:
            p = slot.proc
            if p is not None:
                p.join(max(0.0, deadline - time.monotonic()))
        self._kill_all()

    def _kill_all(self) -> None:
        from acksim.live.faults import resume

        for pid in list(getattr(self, "_paused", ())):
            resume(pid)  # a stopped process would not die of SIGTERM; resume before the kill
        for slot in getattr(self, "slots", []):
            p = slot.proc
            if p is not None and p.is_alive():
                os.kill(p.pid, signal.SIGKILL)
                p.join(5.0)


class _LiveWorld:
    """What ``Renewals`` reads of a world: scenario, db, env, history, scheduler, time maps."""

    def __init__(self, scenario, db, env, history, scheduler) -> None:
        self.scenario, self.db, self.env, self.history, self.scheduler = scenario, db, env, history, scheduler

    def to_datetime(self, t: float):
        return self.scenario.epoch + timedelta(seconds=t)

    def to_virtual(self, dt) -> float:
        return (dt - self.scenario.epoch).total_seconds()


def _quietly(fn) -> None:
    try:
        fn()
    except Exception:  # noqa: BLE001 - cleaning up a shared broker must not hide the run's own outcome
        pass


def _worker_entry(cfg, deliveries, stop) -> None:
    run_worker(cfg, deliveries, stop)


def run_live(scenario: Scenario, broker: str, processor_ref: str, time_scale: float = DEFAULT_TIME_SCALE,
             max_wall_s: float | None = None, running=None, namespace: str = "") -> LiveResult:
    """Run ``scenario`` live on ``broker`` ("redis", "rabbitmq", "sqs") with the processor
    ``processor_ref``; see ``LiveRun``. ``running``: a broker already started (``broker_context``)
    to use instead of starting one; the run's queues carry ``namespace`` in their names and are
    deleted afterwards. Raises ``ScenarioError`` (``BrokerMissing``) for what cannot run, and
    whatever the broker raises."""
    return LiveRun(scenario, broker, processor_ref, time_scale, max_wall_s, running, namespace).run()


__all__ = ["run_live", "LiveRun", "LiveResult", "BrokerMissing", "DEFAULT_TIME_SCALE", "read_journal"]
