"""What a report says, independent of how it is laid out.

The markdown and HTML renderers both lay out these rows, so the two pages can never disagree:
a one-line verdict, an invariants table, an SLO table and a counts table, every cell already
formatted as text.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

INVARIANT_HEADER = ("invariant", "holds", "violations", "first counterexample")
SLO_HEADER = ("figure", "value", "threshold", "met")
COUNT_HEADER = ("count", "value")

_EXAMPLE_WIDTH = 160
_DASH = "—"
_PLAIN_NUMBERS = frozenset({"queue_depth_max", "redeliveries", "dead_lettered", "retries_p99"})


def verdict(summary: Mapping[str, Any]) -> tuple[bool, str]:
    """``(passed, line)``: PASS when every invariant holds and no SLO has ``met`` False;
    otherwise FAIL naming the violated invariants (with their violation counts) and the missed
    figures (value against threshold)."""
    broken = [f"{name} ({inv['violations']})"
              for name, inv in summary["invariants"].items() if not inv["holds"]]
    missed = [f"{name} ({format_figure(name, slo['value'])} vs threshold "
              f"{format_figure(name, slo['threshold'])})"
              for name, slo in summary["slo"].items() if slo["met"] is False]
    if not broken and not missed:
        return True, "PASS: every invariant holds and every SLO threshold is met"
    parts = []
    if broken:
        parts.append("invariants violated: " + ", ".join(broken))
    if missed:
        parts.append("SLOs missed: " + ", ".join(missed))
    return False, "FAIL: " + "; ".join(parts)


def invariant_rows(summary: Mapping[str, Any]) -> list[tuple[str, str, str, str]]:
    """One row per invariant, in the summary's order: name, yes/no, violations, example."""
    return [(name, _yes_no(inv["holds"]), str(inv["violations"]), summarise_example(inv["example"]))
            for name, inv in summary["invariants"].items()]


def slo_rows(summary: Mapping[str, Any]) -> list[tuple[str, str, str, str]]:
    """One row per SLO figure, in the summary's order: name, value, threshold, yes/no/—."""
    return [(name, format_figure(name, slo["value"]), format_figure(name, slo["threshold"]),
             _yes_no(slo["met"]))
            for name, slo in summary["slo"].items()]


def count_rows(summary: Mapping[str, Any]) -> list[tuple[str, str]]:
    """One row per count, in the summary's order."""
    return [(name, str(value)) for name, value in summary["counts"].items()]


def summarise_example(example: Mapping[str, Any] | None) -> str:
    """A counterexample on one line, constructor-like: ``account_id='a1', time=12.5``; at most
    160 characters (cut with "…"); "—" for None."""
    if example is None:
        return _DASH
    text = ", ".join(f"{key}={value!r}" for key, value in example.items())
    text = " ".join(text.split())  # no newlines or runs of blanks inside a table cell
    return text if len(text) <= _EXAMPLE_WIDTH else text[: _EXAMPLE_WIDTH - 1] + "…"


def format_figure(name: str, value: float | None) -> str:
    """A figure's value (or threshold) for people: "—" for None, plain numbers for counts and
    receive counts, "/s" for throughput, seconds (with minutes or hours when long) otherwise."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return _DASH
    v = float(value)
    if name in _PLAIN_NUMBERS:
        return str(int(v)) if v.is_integer() else f"{v:.3g}"
    if name == "throughput_per_s":
        return f"{v:.3g} /s"
    if name.endswith("_s"):
        return format_seconds(v)
    return f"{v:.6g}"


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


def _yes_no(flag: bool | None) -> str:
    return _DASH if flag is None else ("yes" if flag else "no")
