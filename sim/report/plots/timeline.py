"""worker_timeline.png: a swimlane of who held which delivery, where crashes and redeliveries
happen.

One lane per worker, one bar per attempt (from ``attempt_spans``) colored by its outcome, a red
cross where a worker crashed and a blue triangle where a worker received a redelivery (a
delivery with receive count above one; spurious duplicate copies excluded, as in the SLO figure
``redeliveries``). The window is chosen by ``timeline_window.choose_window`` and cut to its
events by ``timeline_window.trimmed``; at most
``MAX_LANES`` lanes are drawn, preferring workers that crashed, then those that got
redeliveries, then the busiest. Bars are drawn with one ``broken_barh`` per (lane, outcome), so
the cost does not grow with the number of records.
"""

from __future__ import annotations

import re
from typing import Sequence

import numpy as np
import pandas as pd
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter, MaxNLocator

from acksim.history import Record
from acksim.report.plots._canvas import new_figure, note, to_png
from acksim.report.plots.timeline_window import WINDOW_S, choose_window, trimmed
from acksim.judges.series import attempt_spans

MAX_LANES = 16
FIGSIZE = (10.0, 6.0)
OUTCOME_COLORS = {"acked": "tab:green", "ack_stale": "tab:olive", "nacked": "tab:orange",
                  "crashed": "tab:red", "open": "tab:gray"}
_BAR = 0.6  # bar height, in lanes


def plot_worker_timeline(history: Sequence[Record], width: float = WINDOW_S) -> bytes:
    """PNG bytes: the swimlane for a ``width``-second window (virtual seconds) of ``history``;
    a "no worker activity" note when no worker held a delivery or crashed."""
    fig, ax = new_figure(FIGSIZE)
    spans = attempt_spans(history)
    crashes = [(r.time, r.message_id, r.actor) for r in history if r.kind == "crashed"]
    redeliveries = [(r.time, r.message_id, r.actor) for r in history
                    if r.kind == "delivered" and (r.receive_count or 0) > 1 and r.detail != "duplicate"]
    if spans.empty and not crashes:
        note(ax, "no worker activity")
        ax.set_title("Worker timeline")
        return to_png(fig)

    events = ([c[:2] for c in crashes], [r[:2] for r in redeliveries], spans["start"].to_numpy(dtype=float))
    w0, w1 = trimmed(*choose_window(*events, history[0].time, history[-1].time, width), *events)
    spans = spans[(spans["start"] <= w1) & (spans["end"] >= w0)]
    crashes = [c for c in crashes if w0 <= c[0] <= w1]
    redeliveries = [r for r in redeliveries if w0 <= r[0] <= w1]
    lanes, total = choose_lanes(spans, crashes, redeliveries)
    lane_of = {worker: i for i, worker in enumerate(lanes)}
    if not lanes:
        note(ax, "no worker activity in this window")

    _draw_bars(ax, spans[spans["worker"].isin(lane_of)], lane_of, w0, w1)
    for events, marker, color, offset, size in ((crashes, "X", "red", 0.0, 70),
                                                (redeliveries, "v", "tab:blue", -0.42, 36)):
        events = [e for e in events if e[2] in lane_of]
        if events:
            ax.scatter([e[0] for e in events], [lane_of[e[2]] + offset for e in events],
                       marker=marker, s=size, c=color, edgecolors="black", linewidths=0.5, zorder=3)

    ax.set_xlim(w0, w1)
    ax.set_ylim(len(lanes) - 0.5, -0.75)
    ax.set_yticks(range(len(lanes)), lanes)
    ax.xaxis.set_major_locator(MaxNLocator(nbins=10, steps=[1, 2, 3, 6, 10]))  # whole minutes
    ax.xaxis.set_major_formatter(FuncFormatter(lambda t, _pos: clock(t)))
    ax.set_xlabel("virtual time (h:mm:ss)")
    shown = f", {len(lanes)} of {total} workers" if len(lanes) < total else ""
    ax.set_title(f"Worker timeline {clock(w0)} to {clock(w1)}{shown}")
    ax.legend(handles=_legend(set(spans["outcome"]), bool(crashes), bool(redeliveries)),
              loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    return to_png(fig)


def clock(t: float) -> str:
    """Virtual seconds as ``h:mm:ss`` (``-`` sign for negative times)."""
    sign, t = ("-", -t) if t < 0 else ("", t)
    h, rest = divmod(int(round(t)), 3600)
    m, s = divmod(rest, 60)
    return f"{sign}{h}:{m:02d}:{s:02d}"


def natural_key(name: str) -> tuple:
    """Sort key putting "worker-2" before "worker-10"."""
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name))


def choose_lanes(spans: pd.DataFrame, crashes: Sequence[tuple], redeliveries: Sequence[tuple],
                 max_lanes: int = MAX_LANES) -> tuple[list[str], int]:
    """``(lanes, number of workers seen)``: at most ``max_lanes`` workers in natural order, from
    ``spans`` (an ``attempt_spans`` frame) and the ``(time, message_id, worker)`` crashes and
    redeliveries of the window; workers that crashed first, then redelivered to, then busiest."""
    crashed = pd.Series([c[2] for c in crashes], dtype=object).value_counts()
    redelivered = pd.Series([r[2] for r in redeliveries], dtype=object).value_counts()
    busy = spans["worker"].value_counts()
    workers = set(busy.index) | set(crashed.index) | set(redelivered.index)
    ranked = sorted(workers, key=lambda w: (-crashed.get(w, 0), -redelivered.get(w, 0),
                                            -busy.get(w, 0), natural_key(w)))
    return sorted(ranked[:max_lanes], key=natural_key), len(workers)


def _draw_bars(ax, spans: pd.DataFrame, lane_of: dict[str, int], w0: float, w1: float) -> None:
    lo = spans["start"].clip(lower=w0).to_numpy(dtype=float)
    hi = spans["end"].clip(upper=w1).to_numpy(dtype=float)
    frame = pd.DataFrame({"worker": spans["worker"].to_numpy(), "outcome": spans["outcome"].to_numpy(),
                          "lo": lo, "width": np.maximum(hi - lo, (w1 - w0) * 6e-3)})  # millisecond attempts read as blocks
    for (worker, outcome), group in frame.groupby(["worker", "outcome"], sort=True):
        ax.broken_barh(group[["lo", "width"]].to_numpy(), (lane_of[worker] - _BAR / 2, _BAR),
                       facecolors=OUTCOME_COLORS.get(outcome, "black"), edgecolor="white",
                       linewidth=0.3)


def _legend(outcomes: set, crashes: bool, redeliveries: bool) -> list:
    """Legend entries for what the window shows, nothing more."""
    handles: list = [Patch(facecolor=color, label=outcome) for outcome, color in OUTCOME_COLORS.items()
                     if outcome in outcomes]
    if crashes:
        handles.append(Line2D([], [], marker="X", color="red", markeredgecolor="black",
                              linestyle="none", label="crash"))
    if redeliveries:
        handles.append(Line2D([], [], marker="v", color="tab:blue", markeredgecolor="black",
                              linestyle="none", label="redelivery"))
    return handles
