"""SLO figures: pure functions from the history to the numbers of the report.

The figure names are fixed (see docs/DESIGN.md). Every figure is an upper bound for its threshold
except ``throughput_per_s``, whose threshold is a lower bound. Times are virtual seconds.
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence

import numpy as np

from acksim.history import Record
from acksim.judges.series import end_to_end_latencies, message_ages, queue_series, recovery_times

FIGURES: tuple[str, ...] = (
    "throughput_per_s",
    "end_to_end_p50_s", "end_to_end_p95_s", "end_to_end_p99_s",
    "recovery_time_p50_s", "recovery_time_p95_s", "recovery_time_p99_s", "recovery_time_max_s",
    "queue_depth_max", "oldest_message_age_max_s",
    "redeliveries", "dead_lettered", "retries_p99",
)
LOWER_BOUND_FIGURES: frozenset[str] = frozenset({"throughput_per_s"})


def _pct(values, q: float) -> float | None:
    arr = np.asarray(values, dtype=float)
    return None if arr.size == 0 else float(np.percentile(arr, q))


def figures(history: Sequence[Record]) -> dict[str, float | None]:
    """Every figure of ``FIGURES`` for one history; None where there is no sample (no
    recovery happened, nothing was cleaned up)."""
    # a job is done when acked, or on a pop-on-fetch queue when received (nothing acks there)
    acks = [r for r in history if r.kind == "acked" or (r.kind == "delivered" and r.detail == "pop_on_fetch")]
    first_delivery = next((r.time for r in history if r.kind == "delivered"), None)
    if len(acks) >= 2 and first_delivery is not None and acks[-1].time > first_delivery:
        throughput = len(acks) / (acks[-1].time - first_delivery)
    else:
        throughput = None
    e2e = end_to_end_latencies(history)
    rec = recovery_times(history)
    depth = queue_series(history)
    ages = message_ages(history)
    return {
        "throughput_per_s": throughput,
        "end_to_end_p50_s": _pct(e2e, 50),
        "end_to_end_p95_s": _pct(e2e, 95),
        "end_to_end_p99_s": _pct(e2e, 99),
        "recovery_time_p50_s": _pct(rec, 50),
        "recovery_time_p95_s": _pct(rec, 95),
        "recovery_time_p99_s": _pct(rec, 99),
        "recovery_time_max_s": None if rec.empty else float(rec.max()),
        "queue_depth_max": float(depth["visible"].max()) if not depth.empty else 0.0,
        "oldest_message_age_max_s": float(ages.max()) if not ages.empty else 0.0,
        "redeliveries": float(sum(1 for r in history if r.kind == "delivered"
                                  and r.detail != "duplicate" and (r.receive_count or 0) > 1)),
        "dead_lettered": float(sum(1 for r in history if r.kind == "dead_lettered")),
        "retries_p99": _pct([r.receive_count for r in history if r.kind in ("acked", "dead_lettered")], 99),
    }


def evaluate(values: Mapping[str, float | None], thresholds: Mapping[str, float]) -> dict[str, dict]:
    """The ``slo`` section of summary.json: ``{figure: {"value", "threshold", "met"}}``.

    ``met`` is None without a threshold; a figure with no sample meets its threshold
    (nothing to recover from is not a recovery-time breach), except ``throughput_per_s``.
    Raises KeyError for a threshold naming no figure (the scenario loader checks this first).
    """
    out: dict[str, dict] = {}
    for name in FIGURES:
        value = values[name]
        threshold = thresholds.get(name)
        if threshold is None:
            met = None
        elif value is None or (isinstance(value, float) and math.isnan(value)):
            met = name not in LOWER_BOUND_FIGURES
        elif name in LOWER_BOUND_FIGURES:
            met = value >= threshold
        else:
            met = value <= threshold
        out[name] = {"value": value, "threshold": threshold, "met": met}
    for name in thresholds:
        if name not in out:
            raise KeyError(f"no SLO figure named {name!r}")
    return out
