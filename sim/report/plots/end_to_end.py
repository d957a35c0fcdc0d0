"""end_to_end_ecdf.png: ECDF of deadline-to-commit latency, with p50, p95 and p99 marked."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from acksim.history import Record
from acksim.report.plots._canvas import new_figure, note, to_png
from acksim.judges.series import end_to_end_latencies

PERCENTILES = ((50, "tab:green"), (95, "tab:orange"), (99, "tab:red"))


def plot_end_to_end(history: Sequence[Record]) -> bytes:
    """PNG bytes: empirical CDF of ``end_to_end_latencies`` (virtual seconds), with vertical
    lines at the percentiles ``acksim.judges.slo`` reports; a "no committed cleanups" note when empty."""
    fig, ax = new_figure()
    latencies = np.sort(end_to_end_latencies(history).to_numpy(dtype=float))
    if latencies.size == 0:
        note(ax, "no committed cleanups")
    else:
        share = np.arange(1, latencies.size + 1) / latencies.size
        ax.step(np.append(latencies[0], latencies), np.append(0.0, share), where="post",
                color="tab:blue", linewidth=1.2)
        for q, color in PERCENTILES:
            x = float(np.percentile(latencies, q))
            ax.axvline(x, color=color, linestyle="--", linewidth=1, label=f"p{q} = {x:.1f} s")
        ax.legend(loc="lower right")
        ax.set_ylim(0, 1.02)
    ax.set_title("End-to-end latency (deadline to committed cleanup)")
    ax.set_xlabel("virtual seconds after the deadline")
    ax.set_ylabel("share of cleanups")
    return to_png(fig)
