"""counterexample.png: the whole of a short run on one time axis, for reading a counterexample.

Lanes, top to bottom: the queue (publishes, deliveries, expiries, dead-lettering), each worker
(deliveries, acks and crashes as markers over its attempts, bars colored by outcome), renewals (every lifecycle
commit), and the stores (committed cleanups and outbox events, rolled-back transactions).
Drawn only for histories of at most ``MAX_RECORDS`` records (a replay, not a day-long run).
The time axis zooms to the span where the counterexample happens (``focus_span``): from the
first delivery of the violating message to the violation and the ack or crash that
follows it; a note says how many events lie outside.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from matplotlib.lines import Line2D

from acksim.history import LIFECYCLE_KINDS, Record
from acksim.report.plots._canvas import new_figure, note, to_png
from acksim.report.plots.timeline import OUTCOME_COLORS, natural_key
from acksim.judges.series import attempt_spans

MAX_RECORDS = 3000
_LIFECYCLE = LIFECYCLE_KINDS | {"account_updated"}
# (lane, marker, color, label) per record kind
_MARKS = {
    "published": ("queue", "|", "black", "published"),
    "visibility_expired": ("queue", "o", "tab:orange", "visibility expired"),
    "dead_lettered": ("queue", "s", "black", "dead-lettered"),
    "retention_expired": ("queue", "s", "tab:gray", "retention expired"),
    "delivered": (None, ">", "tab:green", "delivered"),
    "acked": (None, "|", "tab:green", "acked"),
    "crashed": (None, "X", "red", "crash"),
    "cleanup_applied": ("stores", "o", "tab:green", "cleanup committed"),
    "outbox_added": ("stores", "^", "tab:blue", "outbox event committed"),
    "tx_rolled_back": ("stores", "x", "tab:red", "rolled back"),
}
# kinds that share a lane and often an instant (a commit writes both rows): drawn apart
_OFFSET = {"cleanup_applied": -0.18, "outbox_added": 0.18}


def focus_span(history: Sequence[Record], examples: Sequence[Mapping[str, Any]] = ()) -> tuple[float, float] | None:
    """The span (virtual seconds, start <= end) where the counterexample happens: ``examples``
    are violation examples (``time``, ``message_id``, ``account_id``, ``cleanup_version``, as
    the invariants report them; without any, the processor's own errors are used); the span runs
    from the first delivery of those messages (else the first record of those messages or
    (account, version) jobs) to the last example's time, then to the next ack, nack or crash
    of those messages. None when nothing locates it."""
    if not examples:
        examples = [{"time": r.time, "message_id": r.message_id} for r in history if r.kind == "processor_error"]
    examples = [e for e in examples if isinstance(e, Mapping) and isinstance(e.get("time"), (int, float))]
    if not examples:
        return None
    messages = {e["message_id"] for e in examples if e.get("message_id") is not None}
    jobs = {(e["account_id"], e.get("cleanup_version")) for e in examples if e.get("account_id")}
    end = max(float(e["time"]) for e in examples)
    related = [r for r in history if r.message_id in messages or (r.account_id, r.cleanup_version) in jobs]
    before = [r for r in related if r.time <= end]
    delivered = [r.time for r in before if r.kind == "delivered" and r.message_id in messages]
    start = min(delivered or [r.time for r in before], default=end)
    after = [r.time for r in related if r.time > end and r.message_id in messages
             and r.kind in ("acked", "ack_stale", "nacked", "crashed")]
    return start, (min(after) if after else end)


def plot_counterexample(history: Sequence[Record], examples: Sequence[Mapping[str, Any]] = ()) -> bytes:
    """PNG bytes: the swimlane of ``history`` (virtual seconds on x), zoomed to
    ``focus_span(history, examples)`` when that locates the counterexample."""
    fig, ax = new_figure((11.0, 5.5))
    if not history or len(history) > MAX_RECORDS:
        note(ax, "no events" if not history else f"run too long for a full timeline (> {MAX_RECORDS} records)")
        return to_png(fig)
    spans = attempt_spans(history)
    workers = sorted({r.actor for r in history if r.actor.startswith("worker-")}, key=natural_key)
    lanes = ["queue", *workers, "renewals", "stores"]
    y = {lane: i for i, lane in enumerate(lanes)}
    for row in spans.itertuples(index=False):
        ax.broken_barh([(row.start, max(row.end - row.start, 1e-3))], (y[row.worker] - 0.3, 0.6),
                       facecolors=OUTCOME_COLORS.get(row.outcome, "black"), alpha=0.8)
    legend, seen = [], set()
    for r in history:
        if r.kind in _MARKS:
            lane, marker, color, label = _MARKS[r.kind]
            lane = r.actor if lane is None else lane
        elif r.kind in _LIFECYCLE:
            lane, marker, color, label = "renewals", "D", "tab:purple", "lifecycle commit"
        else:
            continue
        if lane not in y:
            continue
        ax.scatter([r.time], [y[lane] + _OFFSET.get(r.kind, 0.0)], marker=marker, c=color, s=40, zorder=3)
        if label not in seen:
            seen.add(label)
            legend.append(Line2D([], [], marker=marker, color=color, linestyle="none", label=label))
    ax.set_yticks(range(len(lanes)), lanes)
    ax.set_ylim(len(lanes) - 0.5, -0.5)
    ax.set_xlabel("virtual time (s)")
    ax.set_title("Counterexample timeline")
    span = focus_span(history, examples)
    if span is not None:
        start, end = span
        margin = max((end - start) * 0.15, 0.002)
        lo, hi = start - margin, end + margin
        ax.set_xlim(lo, hi)
        ax.ticklabel_format(axis="x", useOffset=False)  # read 10.002 s, not 0.002 + 1e1
        outside = sum(1 for r in history if (r.kind in _MARKS or r.kind in _LIFECYCLE) and not lo <= r.time <= hi)
        if outside:
            ax.set_title(f"Counterexample timeline, {start:.3f} s to {end:.3f} s "
                         f"({outside} events outside, in events.csv)", fontsize=10)
    if legend:
        ax.legend(handles=legend, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    return to_png(fig)
