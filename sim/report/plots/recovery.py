"""recovery_time.png: histogram of recovery times (first failed execution to the ack)."""

from __future__ import annotations

from typing import Sequence

from acksim.history import Record
from acksim.report.plots._canvas import new_figure, note, to_png
from acksim.judges.series import recovery_times

BINS = 40


def plot_recovery_times(history: Sequence[Record]) -> bytes:
    """PNG bytes: histogram of ``recovery_times`` in virtual seconds; a "no recoveries" note
    when no message recovered from a failure."""
    fig, ax = new_figure()
    times = recovery_times(history).to_numpy(dtype=float)
    if times.size == 0:
        note(ax, "no recoveries")
        ax.set_title("Recovery time")
    else:
        lo, hi = float(times.min()), float(times.max())
        if hi - lo < 1e-3:  # (nearly) equal times: one bar a second wide, not 40 bins of nothing
            ax.hist(times, bins=1, range=(lo - 0.5, hi + 0.5), color="tab:purple", alpha=0.8)
        else:
            ax.hist(times, bins=BINS, color="tab:purple", alpha=0.8)
        ax.set_yscale("log")  # the tail (second and third timeouts) matters as much as the mode
        ax.set_title(f"Recovery time ({times.size} messages, max {times.max():.1f} s)")
    ax.set_xlabel("virtual seconds from first failure to ack")
    ax.set_ylabel("messages")
    return to_png(fig)
