"""What a report says, independent of how it is laid out.

The markdown and HTML renderers both lay out these rows, so the two pages can never disagree:
a one-line verdict, a table of the scenario parameters that ran, an invariants table, an SLO
table and a counts table, every cell already formatted as text.
"""

from __future__ import annotations

from typing import Any, Mapping

from acksim.judges.figure_text import format_against, format_figure
from acksim.judges.violation_text import violation_sentence

INVARIANT_HEADER = ("invariant", "holds", "violations", "first counterexample")
SLO_HEADER = ("figure", "value", "samples", "threshold", "met")
PARAMETER_HEADER = ("parameter", "value")
COUNT_HEADER = ("count", "value", "what it counts")
# a glossary of the counts (summary.json's ``counts``), one line each, in the report's table
COUNT_MEANINGS: dict[str, str] = {
    "accounts": "accounts created (the workload's, then re-subscriptions)",
    "jobs": "messages the scheduler published (a term roll-over or an extension publishes another)",
    "deliveries": "times a worker received a message: jobs plus redeliveries and duplicates",
    "duplicate_deliveries": "spurious second deliveries the queue made on its own (at-least-once)",
    "crashes": "worker crashes, all phases and causes (the crashes_* rows split them)",
    "held_lost": "held (ETA) jobs lost with their worker before they ran",
    "conflicts": "units of work rolled back on a conflict and retried (one job can have many: "
                 "SQLite's single writer makes them common)",
    "processor_errors": "exceptions of the processor's own",
    "retries_requested": "times the processor asked for a retry (RetryLater, workers.retryable_errors): nacked",
    "acks": "acks that deleted their message",
    "acks_without_delete": "acks that came too late to delete (the message had moved on)",
    "nacks": "messages returned to the queue for a later retry",
    "visibility_expired": "leases that ran out before an ack: the message became visible again",
    "dead_lettered": "messages moved to the dead-letter queue",
    "dropped": "messages a queue lost (no persistence, a pop on fetch)",
    "trimmed": "stream entries trimmed while pending",
    "retention_expired": "messages deleted by the queue's retention before anyone acked them",
    "scheduler_publishes": "publishes the scheduler tried, deduplicated ones included",
    "scheduler_crashes": "scheduler crashes between its publish and its record",
    "publish_refused": "publishes the queue refused (length cap)",
    "deduplicated": "publishes a FIFO queue dropped as duplicates within its window",
    "cleanups": "cleanup markers committed (ground truth from the stores)",
    "outbox_events": "outbox rows committed",
    "reminders_sent": "reminders the mail provider accepted",
    "reminder_duplicates": "resends the provider recognised and dropped",
    "reminders_failed": "reminders given up on (a permanent error, or the retries ran out)",
    "renewals": "players' renewals committed",
    "extensions": "deadline extensions committed",
    "term_rollovers": "terms rolled over to the next cleanup version",
    "resubscriptions": "players who came back after their cleanup",
    "deletions": "accounts deleted",
    "lifecycle_during_attempts": "lifecycle commits that landed while a worker was on that account: the races",
    "wasted_worker_s": "virtual worker seconds spent on deliveries of jobs another delivery already did",
    "records": "records in the history (events.csv)",
    "stopped_early": "1 when a guard stopped the run before the pipeline drained",
}

_EXAMPLE_WIDTH = 300
_DASH = "—"
NO_SAMPLE = "no sample"


def verdict(summary: Mapping[str, Any]) -> tuple[bool, str]:
    """``(passed, line)`` from the summary's own ``verdict`` and ``reasons`` (computed once, in
    ``acksim.judges.summary``): "PASS: every invariant holds and every SLO threshold is met", or
    "FAIL: " and the reasons grouped (violated invariants with their violation counts, missed
    figures with value against threshold, figures with no sample, the processor's own errors,
    a run stopped early). A summary without a verdict (built by hand) is judged there first."""
    from acksim.judges.summary import verdict_line, with_verdict

    if "verdict" not in summary:
        summary = with_verdict(summary)
    return summary["verdict"] == "PASS", verdict_line(summary)


def parameter_rows(summary: Mapping[str, Any]) -> list[tuple[str, str]]:
    """One row per scenario parameter that ran (``parameters`` of the summary: the processor
    reference, the queue preset, workers, stores, workload size, faults); none when the summary
    has no ``parameters``."""
    return [(name, str(value)) for name, value in (summary.get("parameters") or {}).items()]


def invariant_rows(summary: Mapping[str, Any]) -> list[tuple[str, str, str, str]]:
    """One row per invariant, in the summary's order: name, yes/no, violations, example."""
    return [(name, _yes_no(inv["holds"]), str(inv["violations"]), summarise_example(inv["example"]))
            for name, inv in summary["invariants"].items()]


def slo_rows(summary: Mapping[str, Any]) -> list[tuple[str, str, str, str, str]]:
    """One row per SLO figure, in the summary's order: name, value ("no sample" when none),
    samples (``n``, with "(k censored)" when some are), threshold (with its direction),
    met: yes, no, "no (no sample)" or "—" without a threshold."""
    rows = []
    for name, slo in summary["slo"].items():
        n = slo.get("n")
        empty = slo["value"] is None or n == 0
        censored = slo.get("censored") or 0
        samples = _DASH if n is None else (f"{n} ({censored} censored)" if censored else str(n))
        value_text, threshold_text = format_against(name, slo["value"], slo["threshold"])
        threshold = (_DASH if slo["threshold"] is None else
                     f"{'>=' if name == 'throughput_per_s' else '<='} {threshold_text}")
        met = "no (no sample)" if slo["met"] is False and empty else _yes_no(slo["met"])
        rows.append((name, NO_SAMPLE if empty else value_text, samples, threshold, met))
    return rows


def count_rows(summary: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """One row per count, in the summary's order: name, value, what it counts
    (``COUNT_MEANINGS``; a crash phase's row says so, another count has none)."""
    return [(name, str(value), count_meaning(name)) for name, value in summary["counts"].items()]


def count_meaning(name: str) -> str:
    """What count ``name`` counts, in a few words ("" for a count the glossary lacks)."""
    if name in COUNT_MEANINGS:
        return COUNT_MEANINGS[name]
    if name.startswith("crashes_"):
        return f"crashes in phase {name.removeprefix('crashes_')}"
    if name.startswith("no_op_"):
        return f"attempts that committed nothing, harmlessly: {name.removeprefix('no_op_').replace('_', ' ')}"
    return ""


def summarise_example(example: Mapping[str, Any] | None) -> str:
    """A counterexample in one sentence (``acksim.judges.violation_text``): ``cleanup
    committed while stale: renewed (account a1 v1, message 1, cleanup_applied by worker-1 at
    10.004 s)``; at most ``_EXAMPLE_WIDTH`` characters (cut with "…"); "—" for None."""
    text = violation_sentence(example)  # one line: no newlines or runs of blanks inside a table cell
    return text if len(text) <= _EXAMPLE_WIDTH else text[: _EXAMPLE_WIDTH - 1] + "…"


def _yes_no(flag: bool | None) -> str:
    return _DASH if flag is None else ("yes" if flag else "no")
