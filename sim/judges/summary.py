"""The machine-readable summary of one run (summary.json, fixed keys: see docs/DESIGN.md)."""

from __future__ import annotations

from collections import Counter
from typing import Sequence

from acksim.world.faults import EXTERNAL_PHASES, PHASES
from acksim.history import LIFECYCLE_KINDS, Record
from acksim.judges.invariants import AccountReplay, check_all
from acksim.scenario import Scenario
from acksim.judges.slo import evaluate, figures
from acksim.world.core import Outcome


def counts(history: Sequence[Record]) -> dict[str, int]:
    """Event counts derived from the history: jobs, deliveries, crashes (and per phase),
    conflicts, acks, nacks, cleanups, reminders, lifecycle steps."""
    kinds = Counter(r.kind for r in history)
    phases = Counter(r.detail for r in history if r.kind == "crashed")
    conflicts = sum(1 for r in history if r.kind == "tx_rolled_back" and r.detail.startswith("conflict:"))
    out = {
        "accounts": kinds["account_created"],
        "jobs": kinds["published"],
        "deliveries": kinds["delivered"],
        "duplicate_deliveries": sum(1 for r in history if r.kind == "delivered" and r.detail == "duplicate"),
        "crashes": kinds["crashed"],
    }
    for phase in (*PHASES, *EXTERNAL_PHASES):
        out[f"crashes_{phase}"] = phases[phase]
    out.update({
        "conflicts": conflicts,
        "processor_errors": kinds["processor_error"],
        "acks": kinds["acked"],
        "acks_without_delete": kinds["ack_stale"],
        "nacks": kinds["nacked"],
        "visibility_expired": kinds["visibility_expired"],
        "dead_lettered": kinds["dead_lettered"],
        "dropped": kinds["dropped"],
        "trimmed": kinds["trimmed"],
        "retention_expired": kinds["retention_expired"],
        "scheduler_publishes": sum(1 for r in history if r.kind in ("published", "deduplicated")),
        "scheduler_crashes": kinds["scheduler_crashed"],
        "publish_refused": kinds["publish_refused"],
        "deduplicated": kinds["deduplicated"],
        "cleanups": kinds["cleanup_applied"],
        "outbox_events": kinds["outbox_added"],
        "reminders_sent": kinds["reminder_sent"],
        "reminders_failed": kinds["reminder_failed"],
        "renewals": kinds["renewed"],
        "extensions": kinds["extended"],
        "term_rollovers": kinds["term_rolled_over"],
        "resubscriptions": kinds["resubscribed"],
        "deletions": kinds["account_deleted"],
        "lifecycle_during_attempts": lifecycle_during_attempts(history),
        "wasted_worker_s": round(wasted_worker_s(history)),
        **{f"no_op_{why}": n for why, n in no_op_commits(history).items()},
        "records": len(history),
    })
    return out


_LIFECYCLE = LIFECYCLE_KINDS
# an attempt ends at its commit or rollback; under autocommit, at its ack, nack, error or crash
_ATTEMPT_ENDS = frozenset({"tx_committed", "tx_rolled_back", "crashed", "processor_error", "acked",
                           "ack_stale", "nacked"})


def lifecycle_during_attempts(history: Sequence[Record]) -> int:
    """How many lifecycle commits (renewal, extension, roll-over, re-subscription, deletion)
    landed while a worker's attempt on that same account was under way (between its
    ``attempt_started`` and the end of its transaction): the races the design must survive."""
    open_: dict[str, str] = {}  # worker -> account of its running attempt
    hits = 0
    for r in history:
        if r.kind == "attempt_started":
            open_[r.actor] = r.account_id
        elif r.kind in _ATTEMPT_ENDS:
            open_.pop(r.actor, None)
        elif r.kind in _LIFECYCLE and r.actor == "renewals" and r.account_id in open_.values():
            hits += 1
    return hits


_HANDLING_ENDS = frozenset({"acked", "ack_stale", "nacked", "crashed", "lease_lost"})


def wasted_worker_s(history: Sequence[Record]) -> float:
    """Worker seconds spent on deliveries that committed nothing for a job whose cleanup
    another delivery committed (concurrent or repeated runs of finished work: a job that
    outlives its lease, a duplicate): from "delivered" (or the job's deadline, for a job held
    until due) to the end of that delivery's handling (its ack, nack, crash or lost lease)."""
    applied = {(r.account_id, r.cleanup_version) for r in history if r.kind == "cleanup_applied"}
    started: dict[tuple[str, int], tuple[float, tuple[str, int]]] = {}  # (worker, message) -> start
    effective: set[tuple[str, int]] = set()
    wasted = 0.0
    for r in history:
        handle = (r.actor, r.message_id)
        if r.kind == "delivered":  # a job held until its deadline (an ETA) costs nothing before it
            started[handle] = (max(r.time, r.deadline or 0.0), (r.account_id, r.cleanup_version))
            effective.discard(handle)
        elif r.kind == "cleanup_applied":
            effective.add(handle)
        elif r.kind in _HANDLING_ENDS and handle in started:
            t0, job = started.pop(handle)
            if job in applied and handle not in effective:
                wasted += r.time - t0
    return wasted


def no_op_commits(history: Sequence[Record]) -> dict[str, int]:
    """Attempts that committed no write, by why the job was harmless at that moment:
    ``renewed``, ``superseded`` (a newer cleanup version), ``account_gone``,
    ``already_applied`` (a retry of finished work), ``other``. These are the design
    documents' acceptance cases (a job after a renewal, a duplicate, a redelivery after a
    commit) as they actually happened."""
    replay, applied = AccountReplay(), set()
    out = {"renewed": 0, "superseded": 0, "account_gone": 0, "already_applied": 0, "other": 0}
    for r in history:
        replay.apply(r)
        if r.kind == "cleanup_applied":
            applied.add((r.account_id, r.cleanup_version))
        elif r.kind == "tx_committed" and r.detail == "0":
            why = replay.stale(r.account_id, r.cleanup_version)
            if why is None:
                why = "already_applied" if (r.account_id, r.cleanup_version) in applied else "other"
            elif why.startswith("version"):
                why = "superseded"
            out[why.replace(" ", "_")] += 1
    return out


def build_summary(scenario: Scenario, outcome: Outcome) -> dict:
    """``{"scenario", "seed", "invariants", "slo", "counts"}`` for one finished run."""
    history = outcome.history
    return {
        "scenario": scenario.name,
        "seed": scenario.seed,
        "invariants": check_all(history, outcome.final),
        "slo": evaluate(figures(history), scenario.slo.thresholds()),
        "counts": {**counts(history), "stopped_early": int(outcome.final.stopped_early)},
    }


def passed(summary: dict) -> bool:
    """True when every invariant holds, no SLO threshold is missed, the processor raised no
    error of its own (an unexpected exception of the code under test is a finding) and the
    run was not cut at ``run.max_records`` (a run that never drained cannot be judged)."""
    return (all(v["holds"] for v in summary["invariants"].values())
            and all(v["met"] is not False for v in summary["slo"].values())
            and not summary["counts"].get("processor_errors")
            and not summary["counts"].get("stopped_early"))
