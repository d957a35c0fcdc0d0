"""SLO figures: pure functions from the history to the numbers of the report.

The figure names are fixed (see docs/DESIGN.md). Every figure is an upper bound for its threshold
except ``throughput_per_s``, whose threshold is a lower bound. Times are virtual seconds.

Every figure comes with its sample count ``n`` (the values it was computed from: acks,
cleanups, failed messages, published messages) and a figure with a threshold but no sample
does not meet it: an SLO nothing measured is not an SLO kept. Recovery times count each
message that failed and never reached an ack as a *censored* sample (``censored``), the time
from its first failure to the end of the run, so a run that dead-letters everything misses a
recovery threshold instead of passing it for want of a recovery. ``DEFAULT_THRESHOLDS`` apply
to every run; a scenario's ``[slo]`` table overrides them figure by figure.
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence

from acksim.history import Record
from acksim.judges.series import (end_to_end_latencies, message_ages, message_transitions, queue_series,
                                  recovery_samples)

FIGURES: tuple[str, ...] = (
    "throughput_per_s",
    "end_to_end_p50_s", "end_to_end_p95_s", "end_to_end_p99_s",
    "recovery_time_p50_s", "recovery_time_p95_s", "recovery_time_p99_s", "recovery_time_max_s",
    "queue_depth_max", "oldest_message_age_max_s",
    "redeliveries", "dead_lettered", "dead_lettered_share", "retries_p99",
)
LOWER_BOUND_FIGURES: frozenset[str] = frozenset({"throughput_per_s"})
RECOVERY_FIGURES: tuple[str, ...] = ("recovery_time_p50_s", "recovery_time_p95_s", "recovery_time_p99_s",
                                     "recovery_time_max_s")
# Thresholds every run is judged by unless its [slo] table sets that figure: a pipeline that
# dead-letters more than half of its jobs has failed, whatever else it measured. (A processor
# that raises errors of its own fails a run too, always: see acksim.judges.summary.)
DEFAULT_THRESHOLDS: Mapping[str, float] = {"dead_lettered_share": 0.5}


def _pct(values, q: float) -> float | None:
    import numpy as np  # numpy and pandas only where figures are built: a check never needs them

    arr = np.asarray(values, dtype=float)
    return None if arr.size == 0 else float(np.percentile(arr, q))


def measure(history: Sequence[Record]) -> tuple[dict[str, float | None], dict[str, tuple[int, int]]]:
    """``(values, samples)`` for one history: every figure of ``FIGURES`` (None where there is
    no sample: no recovery, nothing cleaned up), and per figure ``(n, censored)``, its sample
    count and how many of those samples are censored (recovery figures only; 0 elsewhere)."""
    # one pass for the counts. A job is done when acked, or on a pop-on-fetch queue when
    # received (nothing acks there)
    acks = jobs = dead = redeliveries = 0
    last_ack = first_delivery = None
    retries: list[int | None] = []
    for r in history:
        kind = r.kind
        if kind == "delivered":
            if first_delivery is None:
                first_delivery = r.time
            if r.detail == "pop_on_fetch":
                acks += 1
                last_ack = r.time
            if r.detail != "duplicate" and (r.receive_count or 0) > 1:
                redeliveries += 1
        elif kind == "acked":
            acks += 1
            last_ack = r.time
            retries.append(r.receive_count)
        elif kind == "published":
            jobs += 1
        elif kind == "dead_lettered":
            dead += 1
            retries.append(r.receive_count)
    if acks >= 2 and first_delivery is not None and last_ack > first_delivery:
        throughput = acks / (last_ack - first_delivery)
    else:
        throughput = None
    import numpy as np

    e2e = end_to_end_latencies(history)
    recovered, censored = recovery_samples(history)
    rec = np.concatenate([recovered.to_numpy(dtype=float), censored.to_numpy(dtype=float)])
    transitions = message_transitions(history)
    depth = queue_series(history, transitions)
    ages = message_ages(history, transitions)
    del transitions
    values = {
        "throughput_per_s": throughput,
        "end_to_end_p50_s": _pct(e2e, 50),
        "end_to_end_p95_s": _pct(e2e, 95),
        "end_to_end_p99_s": _pct(e2e, 99),
        "recovery_time_p50_s": _pct(rec, 50),
        "recovery_time_p95_s": _pct(rec, 95),
        "recovery_time_p99_s": _pct(rec, 99),
        "recovery_time_max_s": None if rec.size == 0 else float(rec.max()),
        "queue_depth_max": float(depth["visible"].max()) if not depth.empty else 0.0,
        "oldest_message_age_max_s": float(ages.max()) if not ages.empty else 0.0,
        "redeliveries": float(redeliveries),
        "dead_lettered": float(dead),
        "dead_lettered_share": dead / jobs if jobs else None,
        "retries_p99": _pct(retries, 99),
    }
    n = {"throughput_per_s": acks if throughput is not None else 0,
         **{f: len(e2e) for f in ("end_to_end_p50_s", "end_to_end_p95_s", "end_to_end_p99_s")},
         **{f: int(rec.size) for f in RECOVERY_FIGURES},
         "queue_depth_max": jobs, "oldest_message_age_max_s": len(ages), "redeliveries": jobs,
         "dead_lettered": jobs, "dead_lettered_share": jobs, "retries_p99": len(retries)}
    samples = {f: (n[f], len(censored) if f in RECOVERY_FIGURES else 0) for f in FIGURES}
    return values, samples


def figures(history: Sequence[Record]) -> dict[str, float | None]:
    """Every figure of ``FIGURES`` for one history (the values of ``measure``); None where
    there is no sample (no recovery happened or was under way, nothing was cleaned up)."""
    return measure(history)[0]


def effective_thresholds(thresholds: Mapping[str, float]) -> dict[str, float]:
    """``DEFAULT_THRESHOLDS`` overridden by a scenario's ``thresholds`` (by figure name)."""
    return {**DEFAULT_THRESHOLDS, **thresholds}


def evaluate(values: Mapping[str, float | None], thresholds: Mapping[str, float],
             samples: Mapping[str, tuple[int, int]] | None = None) -> dict[str, dict]:
    """The ``slo`` section of summary.json: ``{figure: {"value", "n", "censored", "threshold",
    "met"}}``, judged against ``effective_thresholds(thresholds)``.

    ``n`` and ``censored`` come from ``samples`` (as ``measure`` returns them); without it,
    ``n`` is 1 for a figure with a value and 0 for one without, ``censored`` 0. ``met`` is None
    without a threshold and False for a figure with a threshold and no sample (``n`` 0 or no
    value): nothing measured meets no threshold. Raises KeyError for a threshold naming no
    figure (the scenario loader checks this first).
    """
    for name in thresholds:
        if name not in FIGURES:
            raise KeyError(f"no SLO figure named {name!r}")
    limits = effective_thresholds(thresholds)
    out: dict[str, dict] = {}
    for name in FIGURES:
        value = values[name]
        if isinstance(value, float) and math.isnan(value):
            value = None
        n, censored = samples[name] if samples is not None else (0 if value is None else 1, 0)
        threshold = limits.get(name)
        if threshold is None:
            met = None
        elif value is None or n == 0:
            met = False
        elif name in LOWER_BOUND_FIGURES:
            met = value >= threshold
        else:
            met = value <= threshold
        out[name] = {"value": value, "n": n, "censored": censored, "threshold": threshold, "met": met}
    return out


def slo_section(history: Sequence[Record], thresholds: Mapping[str, float]) -> dict[str, dict]:
    """``evaluate`` of ``measure(history)``: the ``slo`` section of one run's summary."""
    values, samples = measure(history)
    return evaluate(values, thresholds, samples)
