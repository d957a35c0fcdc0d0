"""Renewals and the rest of the account lifecycle: the players' side of the world.

A workload is a plan drawn once from the seed: every account is created at time 0 with a
deadline; some players renew minutes before their deadline, some while their cleanup job is
already in flight; some deadlines are extended (a newer cleanup version); a renewed term rolls
over ``rollover_delay_s`` after its deadline into a new, unrenewed term with a bumped version;
some cleaned-up players subscribe again; some accounts are deleted around their deadline.

Each lifecycle step is one short transaction on the real stores, decided on the committed
state it reads (a renewal that arrives after the cleanup committed is a re-subscription). A
write conflict is retried after a backoff, so lifecycle commits land between any two store
calls of a worker.
"""

from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from acksim.model.errors import ConflictError
from acksim.model.job import Account
from acksim.scenario import Workload

_RETRY_BACKOFF_S = 0.01


@dataclass(frozen=True, slots=True)
class LifecycleOp:
    """One planned step: ``kind`` in renew, extend, resubscribe, delete, rollover; ``at_s``
    when (virtual s); ``amount_s`` the extension for "extend"; ``version`` the term a
    "rollover" belongs to."""

    at_s: float
    kind: str
    account_id: str
    amount_s: float = 0.0
    version: int = 0


def account_ids(n: int) -> list[str]:
    """The ids of a workload's accounts: ``acct-000001`` ..."""
    return [f"acct-{i:06d}" for i in range(1, n + 1)]


def planned_workload(plan) -> tuple[dict[str, float], list[LifecycleOp]]:
    """The deadlines and sorted steps of an explicit ``[plan]`` (``acksim.scenario.Plan``)."""
    deadlines = {a.account_id: a.deadline_s for a in plan.accounts}
    ops = [LifecycleOp(s.at_s, s.kind, s.account_id, amount_s=s.amount_s) for s in plan.steps]
    ops.sort(key=lambda op: (op.at_s, op.account_id, op.kind))
    return deadlines, ops


def rate_at(w: Workload, t: float) -> float:
    """The deadline rate (per virtual s) of ``w``'s load shape at virtual time ``t``: linear
    within each stage from the rate before it to the stage's own; 0 outside the stages."""
    at, rate = w.deadline_start_s, w.start_rate_per_s
    for stage in w.stages:
        if t < at + stage.duration_s:
            return rate + (stage.rate_per_s - rate) * max(t - at, 0.0) / stage.duration_s
        at, rate = at + stage.duration_s, stage.rate_per_s
    return 0.0


def staged_arrival(w: Workload, after: float, rng: random.Random) -> float | None:
    """The next deadline of ``w``'s load shape after virtual time ``after`` (a Poisson process
    of rate ``rate_at``, drawn by thinning from ``rng``), or None once the stages are over."""
    peak = max(w.start_rate_per_s, *(st.rate_per_s for st in w.stages))
    end, t = w.stages_end_s, after
    while True:
        t += rng.expovariate(peak)
        if t >= end:
            return None
        if rng.random() * peak < rate_at(w, t):
            return t


def plan_workload(w: Workload, rng: random.Random) -> tuple[dict[str, float], list[LifecycleOp]]:
    """Draw the initial deadlines (by account id) and the sorted lifecycle plan."""
    deadlines: dict[str, float] = {}
    ops: list[LifecycleOp] = []
    u = rng.uniform
    arrival = w.deadline_start_s
    for aid in account_ids(w.accounts):
        if w.arrivals == "stages":
            arrival = staged_arrival(w, arrival, rng)
            if arrival is None:
                break  # the load shape is over: fewer accounts than the cap
            d = arrival
        elif w.arrivals == "poisson":
            arrival += rng.expovariate(w.arrival_rate_per_s)
            d = arrival
        else:
            d = w.deadline_start_s + (u(0.0, w.deadline_window_s) // w.deadline_granularity_s) * w.deadline_granularity_s
        deadlines[aid] = d
        if rng.random() < w.renew_fraction:
            if rng.random() < w.renew_in_flight_fraction:
                at = d + u(0.0, w.renew_in_flight_within_s)
            else:
                at = d - u(*w.renew_lead_s)
            ops.append(LifecycleOp(max(at, 0.0), "renew", aid))
        elif rng.random() < w.extension_fraction:
            ops.append(LifecycleOp(max(d - u(*w.extension_lead_s), 0.0), "extend", aid, amount_s=u(*w.extension_s)))
        if rng.random() < w.resubscribe_fraction:
            ops.append(LifecycleOp(d + u(*w.resubscribe_after_s), "resubscribe", aid))
        if rng.random() < w.delete_fraction:
            ops.append(LifecycleOp(max(d + u(-w.delete_around_deadline_s, w.delete_around_deadline_s), 0.0), "delete", aid))
    ops.sort(key=lambda op: (op.at_s, op.account_id, op.kind))
    return deadlines, ops


class Renewals:
    """The lifecycle actor. ``pending`` counts steps not yet committed (planned, delayed
    roll-overs, retries); the world is idle only when it is 0.

    Its ports: ``env`` (``now``, ``timeout(delay)``, ``process(generator)``: a SimPy
    environment, or the live mode's wall clock), ``session`` (its own unit of work on the
    stores), ``record`` (``History.record``'s signature), ``schedule(account id, cleanup
    version, deadline s)`` (arms a deadline with the scheduler), ``workload`` (the term and
    roll-over delay, virtual s) and ``epoch`` (the aware datetime of virtual time 0). With
    ``waits`` (``acksim.world.db_waits.DbWaits``: stores whose statements wait on locks), each
    step's transaction runs in a greenlet that parks while a statement waits, and the steps
    take the one session in turn (``env.event()`` needed).
    """

    def __init__(self, env, session, record, schedule, workload: Workload, epoch: datetime,
                 ops: list[LifecycleOp], waits=None) -> None:
        self.env, self.session, self.record, self.schedule = env, session, record, schedule
        self.workload, self.epoch = workload, epoch
        self.ops = ops
        self.pending = len(ops)
        self.waits = waits
        self._in_use = False  # a step's transaction is parked on the session (with ``waits``)
        self._turns: deque = deque()  # steps waiting for the session, in arrival order

    def to_datetime(self, t: float) -> datetime:
        """Virtual seconds → aware UTC datetime (microsecond precision)."""
        return self.epoch + timedelta(seconds=t)

    def to_virtual(self, dt: datetime) -> float:
        """Aware datetime → virtual seconds."""
        return (dt - self.epoch).total_seconds()

    def create_accounts(self, deadlines: dict[str, float]) -> None:
        """Create every account at time 0 in one transaction and arm its first deadline."""
        s = self.session
        s.begin()
        for aid, d in deadlines.items():
            s.accounts.put(Account(aid, 1, False, self.to_datetime(d)))
        self._record(s.commit(), "account_created")

    def run(self):
        """SimPy process: perform the planned steps at their times."""
        env = self.env
        for op in self.ops:
            if op.at_s > env.now:
                yield env.timeout(op.at_s - env.now)
            env.process(self._perform(op))

    def _later(self, op: LifecycleOp):
        yield self.env.timeout(max(op.at_s - self.env.now, 0.0))
        yield from self._perform(op)

    def _perform(self, op: LifecycleOp):
        backoff = _RETRY_BACKOFF_S
        while True:
            if self.waits is None:
                done = self._transaction(op)
            else:
                done = yield from self._parked_transaction(op)
            if done is not None:
                kind, follow_up, writes = done
                break
            yield self.env.timeout(backoff)
            backoff = min(backoff * 2, 1.0)
        if kind is not None:
            self._record(writes, kind)
        if follow_up is not None:
            self.pending += 1
            self.env.process(self._later(follow_up))
        self.pending -= 1

    def _transaction(self, op: LifecycleOp):
        """One try of ``op``: (record kind, follow-up, committed writes), or None after a
        conflict (rolled back)."""
        s = self.session
        s.begin()
        try:
            kind, follow_up = self._decide(op)
            return kind, follow_up, s.commit()
        except ConflictError:
            s.rollback()
            return None

    def _parked_transaction(self, op: LifecycleOp):
        """``_transaction`` in a greenlet that parks while a statement waits on a lock, once
        the session is free (steps take it in turn)."""
        while self._in_use:
            turn = self.env.event()
            self._turns.append(turn)
            yield turn
        self._in_use = True
        try:
            return (yield from self.waits.run(self._transaction, op))
        finally:
            self._in_use = False
            if self._turns:
                self._turns.popleft().succeed()

    def _decide(self, op: LifecycleOp) -> tuple[str | None, LifecycleOp | None]:
        """Read, decide and write inside the open transaction; returns the record kind (None
        when nothing changed) and a follow-up step."""
        s = self.session
        acc = s.accounts.get(op.account_id)
        if op.kind == "delete":
            return ("account_deleted" if s.accounts.delete(op.account_id) else None), None
        if acc is None:
            return None, None
        now = self.env.now
        term = self.workload.term_s
        cleaned = s.cleanup_store.was_applied(acc.account_id, acc.cleanup_version)
        if op.kind in ("renew", "resubscribe") and cleaned:
            s.accounts.put(self._next_term(acc, now + term))
            return "resubscribed", None
        if op.kind == "renew" and not acc.renewed:
            s.accounts.put(replace(acc, renewed=True))
            at = max(self.to_virtual(acc.deadline), now) + self.workload.rollover_delay_s
            return "renewed", LifecycleOp(at, "rollover", acc.account_id, version=acc.cleanup_version)
        if op.kind == "rollover" and acc.renewed and acc.cleanup_version == op.version:
            s.accounts.put(self._next_term(acc, self.to_virtual(acc.deadline) + term))
            return "term_rolled_over", None
        if op.kind == "extend" and not acc.renewed and not cleaned:
            s.accounts.put(self._next_term(acc, self.to_virtual(acc.deadline) + op.amount_s))
            return "extended", None
        return None, None

    def _next_term(self, acc: Account, deadline_s: float) -> Account:
        return Account(acc.account_id, acc.cleanup_version + 1, False, self.to_datetime(deadline_s))

    def _record(self, writes, kind: str) -> None:
        """Record committed account writes (ground truth) and arm the new deadlines."""
        record = self.record
        for w in writes:
            if w.kind == "account_deleted":
                record("account_deleted", "renewals", account_id=w.account_id)
            elif w.kind == "account_put" and w.account is not None:
                a = w.account
                d = self.to_virtual(a.deadline)
                record(kind, "renewals", account_id=a.account_id, cleanup_version=a.cleanup_version,
                       deadline=d, detail="renewed" if a.renewed else "")
                if kind != "renewed":
                    self.schedule(a.account_id, a.cleanup_version, d)
