"""The machine-readable summary of one run (summary.json, fixed keys: see docs/DESIGN.md)."""

from __future__ import annotations

from collections import Counter
from typing import Any, Mapping, Sequence

from acksim.collector import young_collections
from acksim.history import LIFECYCLE_KINDS, Record
from acksim.judges.figure_text import format_against, format_figure
from acksim.judges.custom import custom_invariants
from acksim.judges.invariants import INVARIANTS, REPLAY_KINDS, AccountReplay, check_all
from acksim.scenario import CRASH_PHASES, EXTERNAL_CRASH_PHASES, Scenario
from acksim.judges.slo import LOWER_BOUND_FIGURES, slo_section
from acksim.outcome import Outcome


def counts(history: Sequence[Record]) -> dict[str, int]:
    """Event counts derived from the history: jobs, deliveries, crashes (and per phase),
    conflicts, acks, nacks, cleanups, reminders, lifecycle steps."""
    kinds = Counter(r.kind for r in history)
    phases: Counter = Counter()  # crashes by detail (their phase, or held_lost:...)
    conflicts = duplicates = 0
    for r in history:  # the counts that depend on a record's detail too, in one pass
        kind = r.kind
        if kind == "crashed":
            phases[r.detail] += 1
        elif kind == "tx_rolled_back":
            conflicts += r.detail.startswith("conflict:")
        elif kind == "delivered":
            duplicates += r.detail == "duplicate"
    held_lost = sum(n for detail, n in phases.items() if detail.startswith("held_lost:"))
    out = {
        "accounts": kinds["account_created"],
        "jobs": kinds["published"],
        "deliveries": kinds["delivered"],
        "duplicate_deliveries": duplicates,
        "crashes": kinds["crashed"] - held_lost,
        "held_lost": held_lost,
    }
    for phase in (*CRASH_PHASES, *EXTERNAL_CRASH_PHASES):
        out[f"crashes_{phase}"] = phases[phase]
    for phase in sorted(set(phases) - {*CRASH_PHASES, *EXTERNAL_CRASH_PHASES}):  # a newer kind, when it happened
        out[f"crashes_{phase}"] = phases[phase]  # (execution_timeout): older summaries stay the same
    out.update({
        "conflicts": conflicts,
        "processor_errors": kinds["processor_error"],
        "retries_requested": kinds["retry_requested"],
        "acks": kinds["acked"],
        "acks_without_delete": kinds["ack_stale"],
        "nacks": kinds["nacked"],
        "visibility_expired": kinds["visibility_expired"],
        "dead_lettered": kinds["dead_lettered"],
        "dropped": kinds["dropped"],
        "trimmed": kinds["trimmed"],
        "retention_expired": kinds["retention_expired"],
        "scheduler_publishes": kinds["published"] + kinds["deduplicated"],
        "scheduler_crashes": kinds["scheduler_crashed"],
        "publish_refused": kinds["publish_refused"],
        "deduplicated": kinds["deduplicated"],
        "cleanups": kinds["cleanup_applied"],
        "outbox_events": kinds["outbox_added"],
        "reminders_sent": kinds["reminder_sent"],
        "reminder_duplicates": kinds["reminder_duplicate"],
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
    until due) to the end of that delivery's handling (its ack, nack, crash or lost lease).
    A handling that ended before its work could start (a held job lost before its deadline)
    cost nothing. Each loan is its own span: a worker's loans of one message are told apart
    by their receive count, and copies with the same count (a duplicate) are paired first in,
    first out. Never negative."""
    applied = {(r.account_id, r.cleanup_version) for r in history if r.kind == "cleanup_applied"}
    # (worker, message, receive count) -> the open loans: [start, job, committed something]
    started: dict[tuple[str, int, int | None], list[list]] = {}
    wasted = 0.0
    for r in history:
        kind = r.kind
        if kind == "delivered":  # a job held until its deadline (an ETA) costs nothing before it
            loan = [max(r.time, r.deadline or 0.0), (r.account_id, r.cleanup_version), False]
            started.setdefault((r.actor, r.message_id, r.receive_count), []).append(loan)
        elif kind == "cleanup_applied":
            loans = started.get((r.actor, r.message_id, r.receive_count))
            if loans:
                loans[0][2] = True
        elif kind in _HANDLING_ENDS and (loans := started.get(key := (r.actor, r.message_id, r.receive_count))):
            t0, job, effective = loans.pop(0)
            if not loans:
                del started[key]
            if job in applied and not effective:
                wasted += max(0.0, r.time - t0)
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
        if r.kind in REPLAY_KINDS:
            replay.apply(r)
        elif r.kind == "cleanup_applied":
            applied.add((r.account_id, r.cleanup_version))
        elif r.kind == "tx_committed" and r.detail == "0":
            why = replay.stale(r.account_id, r.cleanup_version)
            if why is None:
                why = "already_applied" if (r.account_id, r.cleanup_version) in applied else "other"
            elif why.startswith("version"):
                why = "superseded"
            out[why.replace(" ", "_")] += 1
    return out


SCHEMA_VERSION = 1  # of summary.json; sim/schemas/summary.schema.json describes it


def parameters(scenario: Scenario, processor: str | None = None) -> dict[str, Any]:
    """The scenario fields a reader needs to know what ran, flat and in display order:
    the processor reference (``processor`` overrides the scenario's, as ``--processor`` does),
    the queue preset and its main semantics, workers, stores, workload size and faults (each
    key a scenario field by dotted name; a list field such as ``faults.crashes`` gives its
    length)."""
    q, w, st, wl, f = scenario.queue, scenario.workers, scenario.stores, scenario.workload, scenario.faults
    if scenario.fanout.updates:
        size = {"fanout.updates": scenario.fanout.updates, "fanout.subscribers": scenario.fanout.subscribers}
        ref = processor or scenario.fanout.processor
    else:
        size = {"workload.accounts": len(scenario.plan.accounts) or wl.accounts}
        ref = processor or scenario.processor
    return {
        "processor": ref,
        "queue.preset": q.preset, "queue.kind": q.kind, "queue.redelivery": q.redelivery,
        "queue.visibility_timeout_s": q.visibility_timeout_s, "queue.max_receive_count": q.max_receive_count,
        "workers.count": w.count, "workers.ack_policy": w.ack_policy,
        "workers.transaction_scope": w.transaction_scope,
        "stores.backend": st.backend, "stores.isolation": st.isolation,
        "stores.unique_markers": st.unique_markers, "stores.unique_outbox_keys": st.unique_outbox_keys,
        **size,
        "faults.crash_before_call": f.crash_before_call, "faults.crash_after_call": f.crash_after_call,
        "faults.crash_after_commit": f.crash_after_commit, "faults.crash_during_ack": f.crash_during_ack,
        "faults.crashes": len(f.crashes), "faults.deployments": len(f.deployments), "faults.kills": len(f.kills),
        "faults.duplicates": len(f.duplicates),
        **_mechanisms(scenario),
    }


def _mechanisms(scenario: Scenario) -> dict[str, Any]:
    """The queue mechanisms a scenario enables (only those not at their defaults, so a
    scenario without them reports what it reported before): the delivery limit, ack by id,
    recovery sweeps, tombstones, the scheduler's record-then-publish order."""
    q, w, sc = scenario.queue, scenario.workers, scenario.scheduler
    out: dict[str, Any] = {}
    if q.delivery_limit:
        out["queue.delivery_limit"] = q.delivery_limit
    if q.ack_by != "receipt":
        out["queue.ack_by"] = q.ack_by
    if q.recovery_sweep != "none":
        out.update({"queue.recovery_sweep": q.recovery_sweep, "queue.recovery_interval_s": q.recovery_interval_s,
                    "queue.heartbeat_ttl_s": q.heartbeat_ttl_s})
    if q.tombstones:
        out.update({"queue.tombstones": True, "workers.on_tombstone": w.on_tombstone})
    if sc.order != "publish_then_record":
        out.update({"scheduler.order": sc.order, "scheduler.sweep_after_s": sc.sweep_after_s,
                    "scheduler.sweep_interval_s": sc.sweep_interval_s})
    return out


def build_summary(scenario: Scenario, outcome: Outcome, processor: str | None = None) -> dict:
    """summary.json for one finished run: ``{"schema_version", "scenario", "seed", "verdict",
    "reasons", "invariants", "slo", "counts", "parameters", "stop_reason"}`` (see ``with_verdict`` and
    ``parameters``; ``processor`` is the reference that ran when not the scenario's). The
    cyclic collector's full collections wait meanwhile (``young_collections``)."""
    history = outcome.history
    with young_collections():
        return with_verdict({
            "scenario": scenario.name,
            "seed": scenario.seed,
            "invariants": check_all(history, outcome.final, INVARIANTS + custom_invariants(scenario)),
            "slo": slo_section(history, scenario.slo.thresholds()),
            "counts": {**counts(history), "stopped_early": int(outcome.final.stopped_early)},
            "parameters": parameters(scenario, processor),
            "stop_reason": outcome.final.stop_reason,
            **contained_section(outcome.final),
        })


def contained_section(final) -> dict:
    """``{"contained": {"finding", "text"}}`` when the run's supervised child process died or
    was killed (``FinalState.contained``: ``processor_killed_worker`` or ``processor_hung``;
    the text is its ``stop_reason``), else ``{}``: the key is there only then."""
    finding = getattr(final, "contained", "")
    if not finding:
        return {}
    return {"contained": {"finding": finding, "text": final.stop_reason}}


def with_verdict(summary: Mapping[str, Any]) -> dict:
    """``summary`` (with ``scenario``, ``seed``, ``invariants``, ``slo``, ``counts``) with the
    verdict added, computed here once for every output: ``schema_version`` first, then
    ``scenario`` and ``seed``, ``verdict`` ("PASS" or "FAIL") and ``reasons`` (``judge``),
    then the remaining keys in their order."""
    verdict, reasons = judge(summary)
    rest = {k: v for k, v in summary.items() if k not in ("schema_version", "scenario", "seed", "verdict", "reasons")}
    return {"schema_version": SCHEMA_VERSION, "scenario": summary.get("scenario"), "seed": summary.get("seed"),
            "verdict": verdict, "reasons": reasons, **rest}


def judge(summary: Mapping[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    """``(verdict, reasons)``: "PASS" when there is no reason to fail, else "FAIL". Each
    reason is ``{"kind", "name", "text"}``, in this order: ``invariant`` (a violated invariant,
    name and violation count), ``slo`` (a missed threshold: value against threshold),
    ``no_sample`` (a figure with a threshold and no sample), ``processor_errors`` (the
    processor raised errors of its own: an unexpected exception of the code under test is a
    finding; threshold 0, always; named ``processor_killed_worker`` or ``processor_hung`` when
    the processor's process died or was killed, ``contained``; then no ``stopped_early``) and ``stopped_early`` (a guard of ``[run]`` stopped the run
    before the pipeline drained, as ``stop_reason`` says: a run that never drained cannot be
    judged)."""
    reasons: list[dict[str, Any]] = []
    for name, inv in summary["invariants"].items():
        if not inv["holds"]:
            reasons.append({"kind": "invariant", "name": name, "text": f"{name} ({inv['violations']})"})
    for kind in ("slo", "no_sample"):
        for name, fig in summary["slo"].items():
            if fig["met"] is not False:
                continue
            sign = ">=" if name in LOWER_BOUND_FIGURES else "<="
            value_text, threshold_text = format_against(name, fig["value"], fig["threshold"])
            limit = f"threshold {sign} {threshold_text}"
            empty = fig["value"] is None or fig.get("n", 1) == 0
            if kind == "no_sample" and empty:
                reasons.append({"kind": kind, "name": name, "text": f"{name} (no sample, {limit})"})
            elif kind == "slo" and not empty:
                censored = fig.get("censored") or 0
                note = f", {censored} of {fig['n']} samples censored" if censored else ""
                reasons.append({"kind": kind, "name": name,
                                "text": f"{name} ({value_text} vs {limit}{note})"})
    counts = summary.get("counts") or {}
    errors = counts.get("processor_errors") or 0
    if errors:
        reasons.append({"kind": "processor_errors", "name": "processor_errors",
                        "text": f"the processor raised {errors} error(s) of its own"})
    contained = summary.get("contained")
    if contained:
        reasons.append({"kind": "processor_errors", "name": contained["finding"], "text": contained["text"]})
    if counts.get("stopped_early") and not contained:  # a dead process: said once, just above
        reasons.append({"kind": "stopped_early", "name": "stopped_early",
                        "text": f"stopped early: {summary.get('stop_reason') or 'before the pipeline drained'}"})
    return ("FAIL" if reasons else "PASS"), reasons


_GROUPS = (("invariant", "invariants violated"), ("slo", "SLOs missed"), ("no_sample", "no sample"),
           ("processor_errors", None), ("stopped_early", None))
PASS_TEXT = "every invariant holds and every SLO threshold is met"


def reasons_text(summary: Mapping[str, Any], pass_text: str = PASS_TEXT) -> str:
    """The reasons of ``summary`` on one line, grouped: "invariants violated: a (2); SLOs
    missed: x (31.5 s vs threshold <= 10.0 s); no sample: y (...); the processor raised 3
    error(s) of its own", then the texts of reasons of any other kind (a check's findings) in
    their order; ``pass_text`` when there are none."""
    reasons = summary["reasons"]
    parts = []
    for kind, label in _GROUPS:
        texts = [r["text"] for r in reasons if r["kind"] == kind]
        if texts:
            parts.append(f"{label}: {', '.join(texts)}" if label else "; ".join(texts))
    grouped = {kind for kind, _label in _GROUPS}
    parts += [r["text"] for r in reasons if r["kind"] not in grouped]
    return "; ".join(parts) or pass_text


def verdict_line(summary: Mapping[str, Any], pass_text: str = PASS_TEXT) -> str:
    """``"PASS: " + pass_text`` or ``"FAIL: " + reasons_text``: the verdict as every output
    prints it (``pass_text``: what a PASS means, ``PASS_TEXT`` for a run)."""
    return f"{summary['verdict']}: {reasons_text(summary, pass_text)}"


def passed(summary: Mapping[str, Any]) -> bool:
    """True when the summary's verdict is PASS (see ``judge``): every invariant holds, no SLO
    threshold is missed or left without a sample, the processor raised no error of its own and
    the run drained. A summary without a ``verdict`` (built by hand) is judged here."""
    verdict = summary.get("verdict") or judge(summary)[0]
    return verdict == "PASS"
