"""The report's plots, one PNG each, rendered from the history alone.

``PLOTS`` lists them in display order as ``(file name, caption, renderer)``; every renderer
takes the history and returns PNG bytes, and renders an empty history as an empty plot with a
note instead of failing.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

from acksim.history import Record
from acksim.report.plots.counterexample import MAX_RECORDS, plot_counterexample
from acksim.report.plots.end_to_end import plot_end_to_end
from acksim.report.plots.queue_depth import plot_queue_depth
from acksim.report.plots.recovery import plot_recovery_times
from acksim.report.plots.throughput import plot_throughput
from acksim.report.plots.timeline import plot_worker_timeline

PLOTS: tuple[tuple[str, str, Callable[[Sequence[Record]], bytes]], ...] = (
    ("queue_depth.png", "Queue depth: visible and in-flight messages", plot_queue_depth),
    ("throughput.png", "Throughput: acks per second, per minute", plot_throughput),
    ("recovery_time.png", "Recovery times: first failure to ack", plot_recovery_times),
    ("end_to_end_ecdf.png", "End-to-end latency: deadline to committed cleanup (ECDF)", plot_end_to_end),
    ("worker_timeline.png", "Worker timeline: attempts, crashes and redeliveries", plot_worker_timeline),
)


COUNTEREXAMPLE = ("counterexample.png", "Counterexample: the whole run, lane by lane", plot_counterexample)


def render_plots(history: Sequence[Record], full_timeline: bool = False,
                 examples: Sequence[Mapping[str, Any]] = ()) -> list[tuple[str, str, bytes]]:
    """Every plot of ``PLOTS`` for ``history``: ``(file name, caption, PNG bytes)`` in order;
    with ``full_timeline`` (a replayed counterexample) first the run's swimlane too, when the
    history is short enough to read, zoomed to where the violation ``examples`` happen."""
    plots = [(name, caption, render(history)) for name, caption, render in PLOTS]
    if full_timeline and len(history) <= MAX_RECORDS:
        name, caption, _render = COUNTEREXAMPLE
        plots.insert(0, (name, caption, plot_counterexample(history, examples)))
    return plots
