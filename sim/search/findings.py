"""Findings of a check: the kinds of finding, how one reads, and the check's verdict.

A finding is an example that broke the design: an invariant violated (one kind per
invariant), or the processor's own misbehaviour (an error of its own, a hang, the death of
its worker process). Each kind is shrunk separately, and each shrunk finding reads like a short
program: what broke, the schedule of workload and faults as constructor-like lines
(``Crash(delivery=3, phase='after_commit')``), the timeline of what happened, and the command
that replays it (its replay file: ``acksim.search.replay``). A finding whose replay in a fresh
process differed is *flaky*, reported with what differed, never as a counterexample.
"""

from __future__ import annotations

import shlex
from dataclasses import replace
from pathlib import Path
from typing import Mapping, Sequence

from acksim.history import Record
from acksim.judges.hazards import HAZARDS
from acksim.judges.invariants import INVARIANTS
from acksim.judges.violation_text import violation_sentence
from acksim.judges.summary import verdict_line
from acksim.report.junit import Suite, check_suite
from acksim.scenario import Scenario

# the processor's own misbehaviour: an error of its own, a hang, the death of its worker process
PROCESSOR_FINDINGS = ("processor_error", "processor_hung", "processor_killed_worker")
FINDINGS = tuple(name for name, _ in INVARIANTS) + PROCESSOR_FINDINGS

# the record kinds a timeline shows
_TIMELINE_KINDS = {
    "published", "delivered", "crashed", "restarted", "tx_committed", "tx_rolled_back", "cleanup_applied",
    "outbox_added", "acked", "ack_stale", "nacked", "visibility_expired", "dead_lettered", "redriven",
    "retention_expired", "renewed", "extended", "term_rolled_over", "resubscribed", "account_deleted",
    "account_updated", "processor_error", "retry_requested", "reminder_sent", "deployment_started", "cron_run_skipped",
    "publish_refused",
    # pauses, partitions, broker restarts
    "worker_paused", "worker_resumed", "partition_started", "partition_healed", "ack_failed", "broker_down",
    "broker_restarted", "publish_deferred",
}


# what a record's detail is, where a bare value would not say
_DETAIL_LABELS = {"tx_committed": "{} writes"}


def timeline(history: Sequence[Record], limit: int = 80) -> list[str]:
    """The counterexample as lines: who received what, crashes, commits, renewals, acks; at
    most ``limit`` lines and one saying how many more there were. A line: virtual time,
    actor, record kind, then what it names, labelled: ``msg 3  account a1 v1  receive #2
    (after_commit)``, the record's detail in brackets."""
    lines = []
    for r in history:
        if r.kind not in _TIMELINE_KINDS:
            continue
        what = "  ".join(p for p in (
            f"msg {r.message_id}" if r.message_id is not None else "",
            f"account {r.account_id} v{r.cleanup_version}" if r.account_id and r.cleanup_version is not None
            else (f"account {r.account_id}" if r.account_id else ""),
            f"receive #{r.receive_count}" if r.receive_count else "",
            f"({_DETAIL_LABELS.get(r.kind, '{}').format(r.detail)})" if r.detail else "") if p)
        lines.append(f"{r.time:12.4f}s  {r.actor:<14} {r.kind:<18} {what}")
    if len(lines) > limit:
        lines = lines[:limit] + [f"... {len(lines) - limit} more lines in the replay's events.csv"]
    return lines


def schedule(scenario: Scenario) -> list[str]:
    """The example's workload and faults (of ``scenario``, a ``Scenario``) as
    constructor-like lines, for reading and pasting."""
    out = [repr(a) for a in scenario.plan.accounts] + [repr(s) for s in scenario.plan.steps]
    f = scenario.faults
    out += [repr(x) for x in (*f.crashes, *f.duplicates, *f.latency_spikes, *f.deployments)]
    out += [repr(o) for o in scenario.mail.outages]
    out += [repr(x) for x in (*f.pauses, *f.partitions, *f.broker_restarts)]
    if f.broker_restarts:
        out.append(f"Queue(on_broker_restart={scenario.queue.on_broker_restart!r})")
    if scenario.workers.execution_timeout_s:
        out.append(f"Workers(execution_timeout_s={scenario.workers.execution_timeout_s})")
    out += [f"SchedulerPause(start_s={a}, end_s={b})" for a, b in scenario.scheduler.paused]
    q = scenario.queue
    mechanisms = {k: getattr(q, k) for k in ("prefetch", "ack_by", "redelivery", "sweep_interval_s", "recovery_sweep",
                                              "heartbeat_ttl_s", "tombstones", "max_length")
                  if getattr(q, k) != type(q).model_fields[k].default}
    if mechanisms:  # the drawn mechanisms away from their defaults
        out.append("Queue(" + ", ".join(f"{k}={v!r}" for k, v in mechanisms.items()) + ")")
    sc = scenario.scheduler
    if sc.order != "publish_then_record" or sc.publish_crash_probability:
        out.append(f"Scheduler(order={sc.order!r}, publish_crash_probability={sc.publish_crash_probability})")
    out.append(f"Queue(visibility_timeout_s={q.visibility_timeout_s}, max_receive_count={q.max_receive_count}, "
               f"redrive_at_s={list(q.redrive_at_s)}) Workers(count={scenario.workers.count}) "
               f"Scheduler(mode={scenario.scheduler.mode!r}) seed={scenario.seed}")
    return out


def headline(name: str, result) -> str:
    """What finding ``name`` of ``result`` (an ``ExampleResult``) is, in one sentence: its
    first violation (``acksim.judges.violation_text``), or the first line of the processor's
    own error; the other kinds the example broke after it."""
    verdict = result.verdicts.get(name)
    if verdict is not None and not verdict["holds"]:
        text = violation_sentence(verdict["example"])
    elif result.errors:
        text = next((line.strip() for line in reversed(result.errors[0].strip().splitlines()) if line.strip()), name)
    else:
        text = name.replace("_", " ")
    others = [kind for kind in result.failures if kind != name]
    return text + (f"; also {', '.join(others)}" if others else "")


def render_findings(report, replay_paths: Sequence[Path]) -> list[str]:
    """Each finding of ``report`` (a ``CheckReport``) as lines of text: what broke, the shrunk
    schedule, the timeline, the replay command of its replay file in ``replay_paths`` (one per
    finding, in order)."""
    lines: list[str] = []
    for (name, (scenario, result)), path in zip(report.findings.items(), replay_paths):
        lines.append(f"\nFOUND {name}: {headline(name, result)}")
        depends = report.depends.get(name, ())
        if depends:
            lines.append("  depends on drawn settings (a configuration limit as much as the design's): "
                         + "; ".join(depends))
        for kind, verdict in result.verdicts.items():
            if not verdict["holds"] and name not in PROCESSOR_FINDINGS:
                lines.append(f"  {kind}: {verdict['violations']} violation(s); first: "
                             f"{violation_sentence(verdict['example'])}")
        if result.errors:
            lines.append("  the processor's own error:\n    " + result.errors[0].rstrip().replace("\n", "\n    "))
        lines.append("  schedule (shrunk):" if report.scope is None else "  schedule (a smallest in the scope):")
        lines += [f"    {line}" for line in schedule(scenario)]
        lines.append("  timeline:")
        lines += [f"    {line}" for line in timeline(result.history)]
        lines.append(f"  replay: acksim run {shlex.quote(str(Path(path).resolve()))}")  # verbatim, from any folder
    return lines


def render_flaky(flaky: Mapping) -> list[str]:
    """Each flaky finding (``{name: (scenario, result, what differed)}``, as
    ``acksim.search.replay.confirm_findings`` gives them) as lines of text: what the search
    saw, what a fresh process saw instead, the schedule."""
    lines: list[str] = []
    for name, (scenario, result, diff) in flaky.items():
        lines.append(f"\nflaky finding {name}: the search saw {', '.join(result.failures)}, but its replay in a "
                     f"fresh process gave {'; '.join(diff)}; not a counterexample")
        lines.append("  schedule (as searched):")
        lines += [f"    {line}" for line in schedule(scenario)]
    return lines


def search_lines(report, max_examples: int, max_time_s: float | None, all_findings: bool,
                 exhaustive: bool = False) -> list[str]:
    """How the search of ``report`` (a ``CheckReport``) ended, as lines: when the first
    finding came (its example and wall seconds), and why the search stopped before its
    ``max_examples`` examples (the first finding, unless ``all_findings``; the wall-clock
    budget ``max_time_s``, seconds or None); ``exhaustive``: the report is of enumerated
    schedules (``acksim.search.exhaustive``), not a random search's examples."""
    lines = []
    if report.first is not None:
        first = report.first
        what = "finding" if first.kind in PROCESSOR_FINDINGS else "violation"
        unit = "schedules" if exhaustive else "examples"
        lines.append(f"first {what} ({first.kind}) after {first.example} {unit}, {first.seconds:.1f} s")
        if not all_findings:
            how = "a smallest schedule in the order of enumeration" if exhaustive else "shrunk"
            lines.append(f"stopped at the first finding ({how}, then confirmed in a fresh process); "
                         "--all-findings searches on for every kind")
    if report.out_of_time:
        asked = "in the scope" if exhaustive else f"of {max_examples} asked for"
        lines.append(f"stopped by --max-time {max_time_s:g} s after {report.examples} "
                     f"{'schedules' if exhaustive else 'examples'} ({asked}): the coverage below is what it reached")
    return lines


def check_verdict(report, flaky: Mapping, require_coverage: bool = False) -> dict:
    """The verdict of a check in the shape of a run's (``acksim.judges.summary.judge``):
    ``{"verdict": "PASS" | "FAIL", "reasons": [{"kind", "name", "text"}], "pass_text"}``.
    The reasons, in order: ``finding`` (the confirmed findings of ``report``, a
    ``CheckReport``), ``flaky`` (``flaky``, as ``confirm_findings`` gives them), and, with
    neither and ``require_coverage``, ``uncovered`` (hazard windows never hit). ``pass_text``
    says what a PASS means: no violation in so many examples, and the windows never hit."""
    reasons = []
    if report.findings:
        reasons.append({"kind": "finding", "name": "findings",
                        "text": f"{len(report.findings)} kind(s) of finding: {', '.join(report.findings)}"})
    if flaky:
        reasons.append({"kind": "flaky", "name": "flaky",
                        "text": f"{len(flaky)} flaky finding(s), not reproduced in a fresh process: "
                                f"{', '.join(flaky)}; the search itself is not deterministic for this processor "
                                "(state that outlives a run: see docs/production.md)"})
    uncovered = report.uncovered
    if not reasons and uncovered and require_coverage:
        reasons.append({"kind": "uncovered", "name": "uncovered",
                        "text": f"hazard windows never hit: {', '.join(uncovered)} (--require-coverage)"})
    pass_text = f"no violation in {report.examples} examples" + (
        " (the time budget ended the search)" if report.out_of_time else "") + (
        f"; never hit: {', '.join(uncovered)}" if uncovered else
        "; every hazard window hit" if report.scope is None else "; every hazard window of the scope hit")
    return {"verdict": "FAIL" if reasons else "PASS", "reasons": reasons, "pass_text": pass_text}


def verdict_lines(verdict: Mapping) -> list[str]:
    """A check's verdict (``check_verdict``) as it prints, each line from the one verdict
    function of run and check alike (``acksim.judges.summary.verdict_line``): the PASS line,
    or a FAIL line per reason."""
    if not verdict["reasons"]:
        return [verdict_line(verdict, pass_text=verdict["pass_text"])]
    return [verdict_line({**verdict, "reasons": [reason]}) for reason in verdict["reasons"]]


def check_json(report, ref: str, design: str, verdict: Mapping, replay_paths: Sequence[Path],
               flaky: Mapping) -> dict:
    """A check's result as plain data (``acksim check --json``): the processor ``ref`` and
    ``design``, the ``verdict`` and its reasons (``check_verdict``), examples and wall
    seconds, the first finding (kind, example, seconds) or None, whether the time budget
    ended the search, each confirmed finding (its headline, the drawn settings it depends on,
    its replay file in ``replay_paths``), the flaky ones, and the examples per hazard window
    and crash phase."""
    first = report.first
    return {
        "processor": ref, "design": design, "verdict": verdict["verdict"], "reasons": list(verdict["reasons"]),
        "examples": report.examples, "seconds": round(report.seconds, 3),
        "first": None if first is None else {"kind": first.kind, "example": first.example,
                                             "seconds": round(first.seconds, 3)},
        "out_of_time": report.out_of_time,
        "findings": {name: {"headline": headline(name, result), "depends_on": list(report.depends.get(name, ())),
                            "replay": str(Path(path).resolve())}
                     for (name, (_scenario, result)), path in zip(report.findings.items(), replay_paths)},
        "flaky": {name: list(diff) for name, (_s, _r, diff) in flaky.items()},
        "hazard_windows": {name: report.coverage[name] for name, _fn in HAZARDS},
        "crash_phases": dict(sorted(report.phases.items())),
    }


def junit_suite(report, ref: str, replay_paths: Sequence[Path], require_coverage: bool,
                custom: Sequence[str] = ()) -> Suite:
    """The JUnit suite of a check of ``ref``: a case per finding kind (an invariant, the
    processor's own error, a hung processor), failing with the finding as
    ``render_findings`` prints it (the first violation, the shrunk schedule, the timeline, the
    replay command), and a case per hazard window (failing when never hit under
    ``require_coverage``); ``custom``: the names of the base scenario's own invariants, a case
    each after the built-in kinds."""
    texts = {name: "\n".join(render_findings(replace(report, findings={name: finding}), [path])).strip()
             for (name, finding), path in zip(report.findings.items(), replay_paths)}
    return check_suite(f"check {ref}", texts, (*FINDINGS, *custom),
                       {name: report.coverage[name] for name, _fn in HAZARDS}, require_coverage)
