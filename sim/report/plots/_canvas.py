"""Shared drawing helpers: a fixed-size Agg figure, a note for empty plots, PNG bytes.

Figures are made with ``matplotlib.figure.Figure`` on an explicit Agg canvas, never through
``pyplot``: nothing is registered in pyplot's global figure list, the process-wide backend is
left alone, and a figure is freed as soon as its last reference goes (``to_png`` also clears
it). PNGs are written without the "Software" metadata, so equal figures give equal bytes.
"""

from __future__ import annotations

import io

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

FIGSIZE = (10.0, 4.0)  # inches
DPI = 100


def new_figure(figsize: tuple[float, float] = FIGSIZE) -> tuple[Figure, object]:
    """A figure with one axes, ``figsize`` inches at ``DPI``, on an Agg canvas."""
    fig = Figure(figsize=figsize, dpi=DPI)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    return fig, ax


def note(ax, text: str) -> None:
    """Write ``text`` in the middle of ``ax`` (for "no data" plots)."""
    ax.text(0.5, 0.5, text, transform=ax.transAxes, ha="center", va="center",
            fontsize=14, color="#777777")


def to_png(fig: Figure) -> bytes:
    """The figure as PNG bytes (fixed dpi, no Software metadata); the figure is cleared."""
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, metadata={"Software": None})
    fig.clear()
    return buf.getvalue()
