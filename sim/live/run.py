"""The parent of a live run: the broker, the scheduler, the lifecycle and the worker processes.

``run_live(scenario, broker, ...)`` starts the real broker (``acksim.live.brokers``), declares
the queue, creates the accounts in one SQLite file (WAL mode, the simulation's schema, the
scenario's design options) and starts ``workers.count`` worker processes
(``acksim.live.worker``). Its own loop then runs wall time as the simulation runs virtual time,
``wall = virtual * time_scale``: it publishes every job at its deadline, commits the planned
lifecycle steps at their times with the simulation's own ``Renewals`` actor (its ``env`` port
is ``acksim.live.wall_env.WallEnv``, the wall clock that resumes its generators), restarts a
crashed worker after ``workers.restart_delay_s`` (``acksim.live.worker_slots``), runs the
rolling deployments (SIGTERM to each worker in turn), the pauses (``acksim.live.pauses``) and
the broker restarts (``acksim.live.broker_outage``), and polls the dead-letter target. It
stops when every planned event is over and every published message is acked or
dead-lettered with no worker holding one, or at the wall bound (``stopped_early``). Every
process journals its records (``acksim.live.journal``); the merged history and SQLite's
committed state are the ``Outcome`` the simulation's judges read. What a live run refuses
and how its broker is started is ``acksim.live.preflight``. Brokers and workers are always
stopped, also on KeyboardInterrupt.
"""

from __future__ import annotations

import heapq
import itertools
import os
import shutil
import signal
import tempfile
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

from acksim.live.broker_outage import BrokerOutage, broker_back, broker_down, end_outage
from acksim.live.journal import Journal, merge, read_journal
from acksim.live.ledger import Ledger
from acksim.live.pauses import pause_worker, resume_worker
from acksim.live.preflight import BrokerMissing, broker_context, check_live_scenario
from acksim.live.transports import encode, make_transport
from acksim.live.wall_env import WallEnv
from acksim.live.worker_slots import WorkerSlots
from acksim.model.sqlite_store import SqliteDatabase
from acksim.model.store_api import DbOptions
from acksim.outcome import FinalState, Outcome
from acksim.scenario import Scenario
from acksim.world.core import stream
from acksim.world.actors.renewals import Renewals, plan_workload, planned_workload

DEFAULT_TIME_SCALE = 0.05  # wall seconds per virtual second
TICK_S = 0.01  # wall seconds the loop sleeps at most between looks
POLL_S = 0.1  # wall seconds between looks at the journals and the dead-letter target
DEPLOY_JOIN_WALL_S = 2.0  # a deployment's SIGTERM: wall seconds to wait for the worker to be gone
MAX_WORKER_FAILURES = 3  # worker processes ending with an error of their own (not a crash): the run stops


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
        self.ledger = Ledger()  # what was published, and what the journals say became of it
        self.worker_failures: list[str] = []
        self.deployments_running = 0
        self.workers: WorkerSlots | None = None  # the worker processes (set by ``run``)
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
        """Run it (see the module docstring) and return the ``LiveResult``; the broker (unless
        ``running``) and the workers are stopped however it ends. Raises ``BrokerMissing``, and
        whatever the broker or the transport raises."""
        with ExitStack() as stack:
            tmp = Path(tempfile.mkdtemp(prefix="acksim-live-"))
            stack.callback(shutil.rmtree, tmp, True)
            persistent = bool(self.sc.faults.broker_restarts) and self.sc.queue.on_broker_restart != "lost"
            self.persistent = persistent and self.running is None  # a shared broker is as it was started
            broker = (self.running if self.running is not None
                      else stack.enter_context(broker_context(self.kind, persistent)))
            stack.callback(end_outage, self)  # before the broker is stopped
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

        base = dict(t0=t0, time_scale=self.scale, scenario=sc.model_dump(), processor_ref=self.ref,
                    db_path=str(db_path), db_options=("serializable", st.unique_markers, st.unique_outbox_keys),
                    transport=transport)
        self.workers = workers = WorkerSlots(sc.workers.count, base, journals)
        ledger = self.ledger
        ledger.journals = journals
        stack.callback(workers.kill_all)
        for slot in workers.slots:
            workers.spawn(slot)

        stop_reason = ""
        last_poll = 0.0
        while True:
            now = parent.now()
            while self._heap and self._heap[0][0] <= now:
                _t, _f, _n, item = heapq.heappop(self._heap)
                self._do(item, renewals)
            wall = time.monotonic()
            if self.restarting is not None and self.restarting.done():
                stop_reason = broker_back(self)
                if stop_reason:
                    break
            if wall - last_poll >= POLL_S:
                last_poll = wall
                ledger.tail()
                if self.restarting is None:
                    for mid in transport.poll_dead_letters():
                        self._dead_lettered(mid)
                self._watch_workers()
                if (now >= planned_end and renewals.pending == 0 and not self._pending_publishes()
                        and not self.deployments_running and not ledger.unfinished()
                        and not ledger.holding and self.restarting is None and not self.deferred):
                    break
            if len(self.worker_failures) >= MAX_WORKER_FAILURES:
                stop_reason = (f"live: {len(self.worker_failures)} worker processes failed "
                               f"(first: {self.worker_failures[0]})")
                break
            if wall - t0 > bound:
                left = len(ledger.unfinished())
                what = (f"run.max_time_s = {sc.run.max_time_s:g} s" if bound == sc.run.max_time_s * self.scale
                        else f"wall bound {bound:g} s")
                stop_reason = (f"live: {what} reached before the pipeline drained "
                               f"({left} message(s) unfinished)")
                break
            nxt = self._heap[0][0] if self._heap else now + 1.0
            time.sleep(max(0.0, min(TICK_S, (nxt - parent.now()) * self.scale)))

        end_s = parent.now()
        workers.stop.set()
        if self.restarting is not None:  # the wall bound met a restart: the broker back first
            self.restarting.join()
            stop_reason = broker_back(self, publish=False) or stop_reason
        workers.join_all()
        ledger.tail()
        up = self.broker_up
        for mid in transport.poll_dead_letters() if up else ():
            self._dead_lettered(mid)
        dlq = tuple(sorted(set(ledger.dead) | set(transport.dead_letter_ids() if up else ())))
        s = db.session()
        try:
            final = FinalState(tuple(s.accounts.all()), tuple(s.cleanup_store.markers()), tuple(s.outbox.events()),
                               dlq, tuple(sorted(ledger.unfinished())), float(end_s),
                               bool(stop_reason), stop_reason)
        finally:
            s.close()
        paths = sorted(journals.iterdir())
        history = merge(paths, t0, self.scale)
        live = {"broker": self.kind, "version": broker.version, "time_scale": self.scale,
                "wall_s": round(time.monotonic() - wall_start, 3), "broker_startup_wall_s": round(broker.startup_s, 3),
                "wall_bound_s": round(bound, 3), "workers": sc.workers.count,
                "worker_processes": sum(s.incarnation + 1 for s in workers.slots),
                "start_method": workers.ctx.get_start_method(), "queue": transport.describe(),
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

    def publish(self, aid: str, version: int, deadline_s: float) -> None:
        """Publish job (``aid``, ``version``) due ``deadline_s`` (virtual s) now as the next
        message, or, while the broker restarts, defer it ("publish_deferred") to its return."""
        if self.restarting is not None:  # the publisher's client retries it once the broker is back
            self.journal.record("publish_deferred", "scheduler", account_id=aid, cleanup_version=version,
                                deadline=deadline_s, detail="broker_down")
            self.deferred.append((aid, version, deadline_s))
            return
        published = self.ledger.published
        mid = len(published) + 1
        published[mid] = (aid, version, deadline_s)
        now = self.journal.now()
        self.journal.record("published", "scheduler", message_id=mid, account_id=aid, cleanup_version=version,
                            deadline=deadline_s, visible_at=now)
        self.transport.publish(encode(mid, aid, version, deadline_s))

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
            self.publish(*item[1:])
        elif what == "deploy":
            self.deployments_running += 1
            self.journal.record("deployment_started", "fault-injector", detail=f"worker_down_s={item[1]}")
            self._do(("deploy_one", 0, item[1]), renewals)  # the first worker at once, before a job due now
        elif what == "deploy_one":
            _w, i, down_s = item
            if i >= len(self.workers.slots):
                self.deployments_running -= 1
                return
            slot = self.workers.slots[i]
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
            pause_worker(self, self.workers.slots[item[1]], item[2])
        elif what == "resume":
            resume_worker(self, *item[1:])
        elif what == "broker_restart":  # ("broker_restart", down_s, hard): the server stops and comes back
            broker_down(self, *item[1:])
        elif what == "restart":
            slot = item[1]
            if (slot.down_until is not None and slot.down_until <= self.env.now + 1e-9
                    and not self.workers.stop.is_set()):
                if slot.proc is not None and slot.proc.is_alive():
                    return  # the SIGTERM of a deployment not yet acted on
                self.journal.record("restarted", slot.name)
                self.workers.spawn(slot)

    def _watch_workers(self) -> None:
        """Notice dead workers: schedule the restart (crash: ``restart_delay_s``; deployment:
        its down time) and forget the delivery it held."""
        now = self.env.now
        for slot in self.workers.exited():
            p = slot.proc
            self.ledger.holding.pop(slot.name, None)
            if p.exitcode not in (-signal.SIGKILL, -signal.SIGTERM, 0):
                self.worker_failures.append(f"{slot.name} incarnation {slot.incarnation} exited with {p.exitcode}")
            if slot.down_until is None:
                slot.down_until = now + self.sc.workers.restart_delay_s
            self.at(slot.down_until, ("restart", slot))

    @property
    def deliveries_before_dead_letter(self) -> int:
        """The deliveries a message gets before it is dead-lettered (0: no end):
        ``queue.delivery_limit`` N counts returns, so N + 1 deliveries (a quorum queue's
        ``x-delivery-limit``, RMQ-QQ); else ``queue.max_receive_count``."""
        q = self.sc.queue
        return q.delivery_limit + 1 if q.delivery_limit else q.max_receive_count

    def _dead_lettered(self, mid: int) -> None:
        if not self.ledger.dead_lettered(mid):
            return
        aid, version, deadline_s = self.ledger.published[mid]
        self.journal.record("dead_lettered", "queue", message_id=mid, account_id=aid, cleanup_version=version,
                            receive_count=self.deliveries_before_dead_letter, deadline=deadline_s,
                            detail=f"{self.kind} dead-letter target")


def _quietly(fn) -> None:
    try:
        fn()
    except Exception:  # noqa: BLE001 - cleaning up a shared broker must not hide the run's own outcome
        pass


def run_live(scenario: Scenario, broker: str, processor_ref: str, time_scale: float = DEFAULT_TIME_SCALE,
             max_wall_s: float | None = None, running=None, namespace: str = "") -> LiveResult:
    """Run ``scenario`` live on ``broker`` ("redis", "rabbitmq", "sqs") with the processor
    ``processor_ref``; see ``LiveRun``. ``running``: a broker already started (``broker_context``)
    to use instead of starting one; the run's queues carry ``namespace`` in their names and are
    deleted afterwards. Raises ``ScenarioError`` (``BrokerMissing``) for what cannot run, and
    whatever the broker raises."""
    return LiveRun(scenario, broker, processor_ref, time_scale, max_wall_s, running, namespace).run()


__all__ = ["run_live", "LiveRun", "LiveResult", "BrokerMissing", "DEFAULT_TIME_SCALE", "read_journal"]
