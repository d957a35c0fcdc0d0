"""queue_depth.png: visible and in-flight messages over virtual time (a step plot, hours)."""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from acksim.history import Record
from acksim.report.plots._canvas import new_figure, note, to_png
from acksim.judges.series import queue_series

RAW_SPAN_S = 3 * 3600.0
BIN_S = 60.0


def plot_queue_depth(history: Sequence[Record]) -> bytes:
    """PNG bytes: ``visible`` and ``in_flight`` from ``queue_series`` as steps, x in virtual
    hours, each held until the end of the history; over runs longer than ``RAW_SPAN_S`` each
    series is the maximum per ``BIN_S`` (so short peaks stay visible without a barcode of
    single steps); a "no messages" note when there are none."""
    fig, ax = new_figure()
    depth = queue_series(history)
    if depth.empty:
        note(ax, "no messages")
        title = "Queue depth"
    else:
        end = max(history[-1].time, float(depth["time"].iloc[-1]))
        binned = end - float(depth["time"].iloc[0]) > RAW_SPAN_S
        if binned:
            depth = per_bin_max(depth, BIN_S)
        hours = np.append(depth["time"].to_numpy(dtype=float), end) / 3600.0
        for column, color in (("visible", "tab:blue"), ("in_flight", "tab:orange")):
            counts = depth[column].to_numpy()
            ax.step(hours, np.append(counts, counts[-1]), where="post", color=color,
                    linewidth=0.9, label=column.replace("_", "-"))
        ax.set_ylim(bottom=0)
        ax.legend(loc="upper right")
        title = f"Queue depth (maximum per {BIN_S / 60:g} min)" if binned else "Queue depth"
    ax.set_title(title)
    ax.set_xlabel("virtual time (h)")
    ax.set_ylabel("messages")
    return to_png(fig)


def per_bin_max(depth: pd.DataFrame, bin_s: float) -> pd.DataFrame:
    """The step function ``depth`` (``queue_series``) as its maximum over each ``bin_s``-second
    bin, counting the value carried into a bin from before it; columns as ``depth``."""
    bins = (depth["time"] // bin_s).astype(int)
    peak = depth.assign(bin=bins).groupby("bin")[["visible", "in_flight"]].max()
    full = range(int(bins.iloc[0]), int(bins.iloc[-1]) + 1)
    carried = depth.assign(bin=bins).groupby("bin")[["visible", "in_flight"]].last().reindex(full).ffill().shift(1)
    peak = peak.reindex(full)
    out = np.fmax(peak.to_numpy(dtype=float), carried.fillna(0).to_numpy(dtype=float))
    return pd.DataFrame({"time": np.asarray(full, dtype=float) * bin_s,
                         "visible": out[:, 0], "in_flight": out[:, 1]})
