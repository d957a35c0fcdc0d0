"""A figure's value as people read it: one format for every output that prints one.

The verdict's reasons (``acksim.judges.summary.judge``), the report's SLO table
(``acksim.report.tables``) and the command line's comparisons and sweeps all print a figure
or a threshold through ``format_figure``, so a value reads the same everywhere. Figures are
in their own units: counts, shares, jobs per second, virtual seconds.
"""

from __future__ import annotations

import math

_DASH = "—"
_PLAIN_NUMBERS = frozenset({"queue_depth_max", "redeliveries", "dead_lettered", "retries_p99"})
_SHARES = frozenset({"dead_lettered_share"})


def format_figure(name: str, value: float | None) -> str:
    """A figure's value (or threshold) for people: "—" for None, plain numbers for counts and
    receive counts, "/s" for throughput, seconds (with minutes or hours when long) otherwise."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return _DASH
    v = float(value)
    if name in _PLAIN_NUMBERS:
        return str(int(v)) if v.is_integer() else f"{v:.3g}"
    if name in _SHARES:
        return f"{v:.3g}"
    if name == "throughput_per_s":
        return f"{v:.3g} /s"
    if name.endswith("_s"):
        return format_seconds(v)
    return f"{v:.6g}"


def format_against(name: str, value: float | None, threshold: float | None) -> tuple[str, str]:
    """``value`` and ``threshold`` of figure ``name`` as ``format_figure`` gives them, with
    more digits on both while they would read the same but differ (``150.008 s`` against
    ``150 s``, not ``150.0 s`` against ``150.0 s``): a figure never hides why it missed."""
    shown = format_figure(name, value), format_figure(name, threshold)
    if shown[0] != shown[1] or value is None or threshold is None or float(value) == float(threshold):
        return shown
    unit = " /s" if name == "throughput_per_s" else (" s" if name.endswith("_s") else "")
    for digits in range(1, 13):
        shown = f"{float(value):.{digits}f}{unit}", f"{float(threshold):.{digits}f}{unit}"
        if shown[0] != shown[1]:
            break
    return shown


def format_seconds(v: float) -> str:
    """Virtual seconds for people: "0.25 s", "42.0 s", "750 s (12.5 min)", "7200 s (2.00 h)"."""
    a = abs(v)
    if a < 10:
        return f"{v:.3g} s"
    if a < 600:
        return f"{v:.1f} s"
    if a < 7200:
        return f"{v:.0f} s ({v / 60:.1f} min)"
    return f"{v:.0f} s ({v / 3600:.2f} h)"
