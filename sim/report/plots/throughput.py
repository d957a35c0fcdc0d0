"""throughput.png: acks per virtual second, in one-minute bins, over virtual time (hours)."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from acksim.history import Record
from acksim.report.plots._canvas import new_figure, note, to_png
from acksim.judges.series import throughput_series

BIN_S = 60.0


def plot_throughput(history: Sequence[Record]) -> bytes:
    """PNG bytes: ``throughput_series`` with 60 s bins as a filled step plot, x in virtual
    hours; a "no acks" note when nothing was acked."""
    fig, ax = new_figure()
    rate = throughput_series(history, bin_s=BIN_S)
    if rate.empty:
        note(ax, "no acks")
    else:
        hours = np.append(rate["time"].to_numpy(dtype=float), rate["time"].iloc[-1] + BIN_S) / 3600.0
        values = rate["acks_per_s"].to_numpy(dtype=float)
        values = np.append(values, values[-1])
        ax.fill_between(hours, values, step="post", color="tab:green", alpha=0.35, linewidth=0)
        ax.step(hours, values, where="post", color="tab:green", linewidth=0.9)
        ax.set_ylim(bottom=0)
    ax.set_title("Throughput (acks per second, 1-minute bins)")
    ax.set_xlabel("virtual time (h)")
    ax.set_ylabel("acks/s")
    return to_png(fig)
