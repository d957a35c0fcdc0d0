"""queue_depth.png: visible and in-flight messages over virtual time (a step plot, hours)."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from sim.history import Record
from sim.report.plots._canvas import new_figure, note, to_png
from sim.series import queue_series


def plot_queue_depth(history: Sequence[Record]) -> bytes:
    """PNG bytes: ``visible`` and ``in_flight`` from ``queue_series`` as steps, x in virtual
    hours, each held until the end of the history; a "no messages" note when there are none."""
    fig, ax = new_figure()
    depth = queue_series(history)
    if depth.empty:
        note(ax, "no messages")
    else:
        end = max(history[-1].time, float(depth["time"].iloc[-1]))
        hours = np.append(depth["time"].to_numpy(dtype=float), end) / 3600.0
        for column, color in (("visible", "tab:blue"), ("in_flight", "tab:orange")):
            counts = depth[column].to_numpy()
            ax.step(hours, np.append(counts, counts[-1]), where="post", color=color,
                    linewidth=0.9, label=column.replace("_", "-"))
        ax.set_ylim(bottom=0)
        ax.legend(loc="upper right")
    ax.set_title("Queue depth")
    ax.set_xlabel("virtual time (h)")
    ax.set_ylabel("messages")
    return to_png(fig)
