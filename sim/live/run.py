"""The parent of a live run: the broker, the scheduler, the lifecycle and the worker processes.

``run_live(scenario, broker, ...)`` starts the real broker (``acksim.live.brokers``), declares
the queue, creates the accounts in one SQLite file (WAL mode, the simulation's schema, the
scenario's design options) and starts ``workers.count`` worker processes
(``acksim.live.worker``). Its own loop then runs wall time as the simulation runs virtual time,
``wall = virtual * time_scale``: it publishes every job at its deadline, commits the planned
lifecycle steps at their times with the simulation's own ``Renewals`` actor (its ``env`` port
is ``WallEnv``, the wall clock that resumes its generators), restarts a crashed worker after
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
from pathlib import Path

from acksim.live.journal import Journal, merge, read_journal
from acksim.live.transports import encode, make_transport
from acksim.live.worker import WorkerConfig, run_worker
from acksim.model.sqlite_store import SqliteDatabase
from acksim.model.store_api import DbOptions
from acksim.outcome import FinalState, Outcome
from acksim.scenario import Scenario, ScenarioError
from acksim.world.core import stream
from acksim.world.actors.renewals import Renewals, plan_workload, planned_workload

DEFAULT_TIME_SCALE = 0.05  # wall seconds per virtual second
TICK_S = 0.01  # wall seconds the loop sleeps at most between looks
POLL_S = 0.1  # wall seconds between looks at the journals and the dead-letter target
DEPLOY_JOIN_WALL_S = 2.0  # a deployment's SIGTERM: wall seconds to wait for the worker to be gone
RECONNECT_WALL_S = 30.0  # after a broker restart: wall seconds the parent keeps trying to reconnect
STOP_WAIT_WALL_S = 0.5  # a pause's SIGSTOP: wall seconds to wait for the process to show as stopped
MAX_WORKER_FAILURES = 3  # worker processes ending with an error of their own (not a crash): the run stops


class BrokerMissing(ScenarioError):
    """A broker binary or client module is not installed (one line naming the package)."""


@contextmanager
def broker_context(kind: str, persistent: bool = False):
    """Start broker ``kind`` for the block, stop it after; raises ``BrokerMissing`` when its
    binary or client module is not installed. ``persistent``: Redis keeps an append-only file
    (``appendfsync everysec``, Redis's default for it) so a restart keeps the stream, the group
    and its pending entries; RabbitMQ's quorum queues persist anyway, moto never does."""
    from acksim.live import brokers

    makers = {"redis": (lambda: brokers.redis_server(appendonly=True)) if persistent else brokers.redis_server,
              "rabbitmq": brokers.rabbitmq_server, "sqs": brokers.sqs_server}
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


def check_live_scenario(sc: Scenario, broker: str | None = None) -> None:
    """Refuse what the live mode cannot run (one line naming the field; ``ScenarioError``);
    ``broker`` ("redis", "rabbitmq", "sqs"; None: any) refuses what one broker cannot do."""
    if any(p.delivery is not None for p in sc.faults.pauses):
        raise ScenarioError("faults.pauses: a pause at a delivery's store call (delivery, call) has no live mode; "
                            "pause a worker at a time instead (worker, at_s)")
    if broker == "sqs" and sc.faults.broker_restarts:
        raise ScenarioError("faults.broker_restarts: moto (the live SQS) keeps its queues in memory, so a restart "
                            "would lose them, which SQS never does; use --broker redis or rabbitmq")
    if sc.fanout.updates:
        raise ScenarioError("fanout.updates: the shipment fan-out design has no live mode")
    if sc.stores.isolation != "serializable":
        raise ScenarioError("stores.isolation: live runs use SQLite, which offers only serializable isolation")
    if sc.scheduler.mode != "per_deadline":
        raise ScenarioError("scheduler.mode: live runs publish at each deadline (per_deadline); cron is not live yet")
    if sc.queue.eta_held_by_worker:
        raise ScenarioError("queue.eta_held_by_worker: not supported live")


# --- the wall clock as an actor's ``env`` port (Renewals): now, timeouts, processes ----------
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
        check_live_scenario(scenario, broker)
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
        self._paused: dict[int, int] = {}  # SIGSTOPped worker pid -> open pauses (resumed before a kill)
        self.deliveries_seen: dict[int, list[tuple[float, str, int]]] = {}  # message -> (wall, actor, count)
        self.acked_by: dict[int, str] = {}  # message -> the worker whose ack ended it
        self.restarting: BrokerOutage | None = None  # the broker restart under way
        self.deferred: list[tuple[str, int, float]] = []  # jobs published while the broker was down
        self.broker_up = True  # False once a restart failed to bring it back
        self.persistent = False  # Redis runs with an append-only file (set by ``run``)
        self.broker_downtimes: list[float] = []  # wall s of each broker restart, stop to ready

    # --- scheduling on the wall clock -----------------------------------------------------
    def schedule(self, account_id: str, cleanup_version: int, deadline_s: float) -> None:
        """Publish the job (account, version) at its deadline (virtual s): the live scheduler."""
        self.at(deadline_s, ("publish", account_id, cleanup_version, deadline_s))

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
            persistent = bool(self.sc.faults.broker_restarts) and self.sc.queue.on_broker_restart != "lost"
            self.persistent = persistent and self.running is None  # a shared broker is as it was started
            broker = (self.running if self.running is not None
                      else stack.enter_context(broker_context(self.kind, persistent)))
            stack.callback(self._end_broker_restart)  # before the broker is stopped
            if self.sc.faults.broker_restarts:  # pika logs the lost connection of a restart with a traceback
                import logging

                log = logging.getLogger("pika")
                stack.callback(log.setLevel, log.level)
                log.setLevel(logging.CRITICAL)
            return self._run(broker, tmp, stack)

    def _run(self, broker, tmp: Path, stack: ExitStack) -> LiveResult:
        sc = self.sc
        self.broker = broker
        wall_start = time.monotonic()
        no_claimer = sc.queue.redelivery == "claim" and sc.queue.sweep_interval_s == 0
        transport = make_transport(broker, sc.queue.visibility_timeout_s * self.scale, self.deliveries_before_dead_letter,
                                   self.namespace, claim=not no_claimer)
        stack.callback(_quietly, transport.close)  # a broker that did not come back: nothing to close
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
        renewals = Renewals(self.env, db.session(), parent.record, self.schedule, sc.workload, sc.epoch, ops)
        renewals.create_accounts(deadlines)
        self.env.process(renewals.run())
        for dep in sorted(sc.faults.deployments, key=lambda d: d.at_s):
            self.at(dep.at_s, ("deploy", dep.worker_down_s))
        for p in sorted((p for p in sc.faults.pauses if p.at_s is not None), key=lambda p: (p.at_s, p.worker)):
            self.at(p.at_s, ("pause", p.worker - 1, p.duration_s))
        for r in sorted(sc.faults.broker_restarts, key=lambda r: r.at_s):
            self.at(r.at_s, ("broker_restart", r.down_s, False))
        planned_end = max([max(deadlines.values(), default=0.0), ops[-1].at_s if ops else 0.0,
                           *(d.at_s + sc.workers.count * d.worker_down_s for d in sc.faults.deployments),
                           *(p.at_s + p.duration_s for p in sc.faults.pauses if p.at_s is not None),
                           *(r.at_s + r.down_s for r in sc.faults.broker_restarts)])
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
            if self.restarting is not None and self.restarting.done():
                stop_reason = self._broker_back()
                if stop_reason:
                    break
            if wall - last_poll >= POLL_S:
                last_poll = wall
                self._tail()
                if self.restarting is None:
                    for mid in transport.poll_dead_letters():
                        self._dead_lettered(mid)
                self._watch_workers()
                if (now >= planned_end and renewals.pending == 0 and not self._pending_publishes()
                        and not self.deployments_running and self.published.keys() <= self.terminal
                        and not self.holding and self.restarting is None and not self.deferred):
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
        if self.restarting is not None:  # the wall bound met a restart: the broker back first
            self.restarting.join()
            stop_reason = self._broker_back(publish=False) or stop_reason
        self._join_all()
        self._tail()
        up = self.broker_up
        for mid in transport.poll_dead_letters() if up else ():
            self._dead_lettered(mid)
        dlq = tuple(sorted(set(self.dead) | set(transport.dead_letter_ids() if up else ())))
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
                             "store latency, latency spikes, kills, partitions, spurious duplicates",
                             "pauses at a delivery's store call (refused)"],
                "broker_restart_wall_s": [round(d, 3) for d in self.broker_downtimes],
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
            if self.restarting is not None:  # the publisher's client retries it once the broker is back
                self.journal.record("publish_deferred", "scheduler", account_id=aid, cleanup_version=version,
                                    deadline=deadline_s, detail="broker_down")
                self.deferred.append((aid, version, deadline_s))
                return
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
            self._pause(self.slots[item[1]], item[2])
        elif what == "resume":
            self._resume(*item[1:])
        elif what == "broker_restart":  # ("broker_restart", down_s, hard): the server stops and comes back
            _w, down_s, hard = item
            if self.restarting is not None:  # still down from the last one: it comes back once
                return
            self.journal.record("broker_down", "broker", detail=f"{down_s:g} s")
            self.restarting = BrokerOutage(self.broker, down_s * self.scale, hard)
        elif what == "restart":
            slot = item[1]
            if slot.down_until is not None and slot.down_until <= self.env.now + 1e-9 and not self.stop.is_set():
                if slot.proc is not None and slot.proc.is_alive():
                    return  # the SIGTERM of a deployment not yet acted on
                self.journal.record("restarted", slot.name)
                self._spawn(slot)

    # --- pauses: SIGSTOP, SIGCONT, and what the history says of the held lease ----------------
    def _pause(self, slot: _Slot, duration_s: float) -> None:
        """SIGSTOP worker ``slot`` now for ``duration_s`` virtual s; record "worker_paused" with the
        delivery it holds (from its journal, read once it has stopped), as the simulation's."""
        from acksim.live.faults import pause, process_state

        p = slot.proc
        if p is None or not p.is_alive() or not pause(p.pid):
            return  # down already (a crash, a deployment): nothing to pause, as in the simulation
        deadline = time.monotonic() + STOP_WAIT_WALL_S
        while process_state(p.pid) not in ("T", "") and time.monotonic() < deadline:
            time.sleep(0.001)
        self._paused[p.pid] = self._paused.get(p.pid, 0) + 1
        self._tail()  # every line it wrote before it stopped
        mid = self.holding.get(slot.name)
        held = next((d for d in reversed(self.deliveries_seen.get(mid, [])) if d[1] == slot.name), None)
        mid = mid if held is not None else None
        self._pause_record("worker_paused", slot.name, mid, f"{duration_s:g} s")
        self.at(self.env.now + duration_s, ("resume", slot, p.pid, mid, held))

    def _resume(self, slot: _Slot, pid: int, mid: int | None, held) -> None:
        """The end of a pause: record "worker_resumed" (unless the process died meanwhile: then
        nothing resumes, as in the simulation), then SIGCONT, unless another pause still holds it.
        The lease of ``mid`` (delivered at ``held``: wall s, actor, receive count) is
        "lease_moved" when the journals show a later delivery of it or its end by another
        worker, "lease_lapsed" when its visibility timeout (Redis: the claim's min idle) has
        passed on the wall clock without that, else "lease_held" (RabbitMQ: always, it has no
        visibility timeout; a connection the broker closed would show at the redelivery)."""
        from acksim.live.faults import resume

        open_pauses = self._paused.get(pid, 0) - 1
        if open_pauses > 0:
            self._paused[pid] = open_pauses
        else:
            self._paused.pop(pid, None)
        alive = slot.proc is not None and slot.proc.pid == pid and slot.proc.is_alive()
        if alive:
            self._tail()
            why = "" if mid is None else self._lease(mid, held)
            self._pause_record("worker_resumed", slot.name, mid, why)
        if open_pauses <= 0:
            resume(pid)

    def _lease(self, mid: int, held) -> str:
        wall, actor, _count = held
        later = [d for d in self.deliveries_seen.get(mid, []) if d[0] > wall]
        if later or (mid in self.terminal and self.acked_by.get(mid) != actor):
            return "lease_moved"
        lapses = self.kind != "rabbitmq"
        if lapses and time.monotonic() - wall >= self.transport.visibility_s:
            return "lease_lapsed"
        return "lease_held"

    def _pause_record(self, kind: str, name: str, mid: int | None, detail: str) -> None:
        aid, version, _deadline = self.published[mid] if mid is not None else (None, None, None)
        self.journal.record(kind, name, message_id=mid, account_id=aid, cleanup_version=version, detail=detail)

    # --- broker restarts ------------------------------------------------------------------
    def _broker_back(self, publish: bool = True) -> str:
        """The restart is over: record "broker_restarted", reconnect, record what the restart
        lost ("dropped"), publish what waited (unless ``publish`` is False: the run is over).
        Returns a stop reason when the broker did not come back."""
        r, self.restarting = self.restarting, None
        error = r.error
        if error is None:
            deadline = time.monotonic() + RECONNECT_WALL_S
            while True:  # a node that takes connections before its queues are ready
                try:
                    self.transport.reconnect()
                    break
                except Exception as exc:  # noqa: BLE001 - only a lost broker is retried
                    if not self.transport.lost_connection(exc) or time.monotonic() > deadline:
                        error = exc
                        break
                    time.sleep(0.2)
        if error is not None:
            self.broker_up = False
            return f"live: the broker did not come back after its restart ({type(error).__name__}: {error})"
        self.broker_downtimes.append(r.wall_s)
        kept = self.transport.surviving_ids()
        # what the real broker did with its deliveries, in the simulation's words: RabbitMQ's
        # closed connections requeue them; Redis keeps its pending entries with an append-only
        # file (started with one unless the scenario says "lost"), else loses everything
        what = "requeue" if self.kind == "rabbitmq" else "lease" if self.persistent else "lost"
        self.journal.record("broker_restarted", "broker", at=r.up_at, detail=what)  # when it answered
        if kept is not None:
            for mid in sorted(self.published.keys() - self.terminal - kept):
                aid, version, deadline_s = self.published[mid]
                self.terminal.add(mid)
                self.journal.record("dropped", "broker", message_id=mid, account_id=aid, cleanup_version=version,
                                    deadline=deadline_s, detail="broker_restart:not_persisted")
        deferred, self.deferred = (self.deferred, []) if publish else ([], self.deferred)
        for aid, version, deadline_s in deferred:
            self._do(("publish", aid, version, deadline_s), None)
        return ""

    def _end_broker_restart(self) -> None:
        """On the way out (an error, Ctrl-C): let a restart under way finish, so the broker it
        started is the one stopped."""
        if self.restarting is not None:
            self.restarting.cancel()
            self.restarting.join()

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
                if k == "acked":
                    self.acked_by.setdefault(mid, actor)
                if k == "delivered":
                    self.holding[actor] = mid
                    self.deliveries_seen.setdefault(mid, []).append((line["w"], actor, line.get("receive_count", 0)))
                elif k in ("acked", "ack_stale", "nacked", "crashed", "ack_failed"):
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

        for pid in list(getattr(self, "_paused", {})):
            resume(pid)  # a stopped process would not die of SIGTERM; resume before the kill
        self._paused = {}
        for slot in getattr(self, "slots", []):
            p = slot.proc
            if p is not None and p.is_alive():
                os.kill(p.pid, signal.SIGKILL)
                p.join(5.0)


class BrokerOutage:
    """A broker restart under way, in a thread of its own so the parent's loop goes on (the
    lifecycle commits, worker restarts, journals): stop the server (SIGTERM, or SIGKILL when
    ``hard``), wait ``down_wall_s``, start it again on the same port and data folder
    (``Broker.stop`` / ``Broker.start``). ``wall_s``: wall seconds from the stop to ready;
    ``error``: what the stop or start raised (``BrokerStartError``, ``BrokerStopError``)."""

    def __init__(self, broker, down_wall_s: float, hard: bool = False) -> None:
        import threading

        self.broker, self.down_wall_s, self.hard = broker, down_wall_s, hard
        self.wall_s = 0.0
        self.up_at: float | None = None  # the wall time (monotonic) it answered again
        self.error: BaseException | None = None
        self._cancel = threading.Event()
        self._thread = threading.Thread(target=self._run, name="acksim-broker-restart", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        t = time.monotonic()
        try:
            self.broker.stop(hard=self.hard)
            self._cancel.wait(self.down_wall_s)
            self.broker.start()
        except BaseException as exc:  # noqa: BLE001 - reported to the loop, which stops the run
            self.error = exc
        self.up_at = time.monotonic()
        self.wall_s = self.up_at - t

    def done(self) -> bool:
        return not self._thread.is_alive()

    def cancel(self) -> None:
        """Cut the down time short (the run is ending)."""
        self._cancel.set()

    def join(self) -> None:
        self._thread.join()


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
