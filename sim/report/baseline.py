"""A run against a baseline: what changed per invariant and per SLO figure between two
``summary.json`` files, and whether anything got worse than its tolerance.

Like a load-testing tool's comparison with last week's run: an invariant that held in the
baseline and is violated now is a regression whatever the tolerance; a figure is worse when
it moved the wrong way (up for a time, a count or a depth; down for ``throughput_per_s``,
``acksim.judges.slo.LOWER_BOUND_FIGURES``) by more than its tolerance, a share of the
baseline's value (``--tolerance p99=10%``). A figure with no sample on one side, or a
baseline of 0 (a share of 0 is 0), is compared by value: any worsening is a regression.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Mapping

from acksim.judges.figure_text import format_against
from acksim.judges.slo import LOWER_BOUND_FIGURES

DEFAULT_TOLERANCE = 0.10  # a figure may get 10 % worse before it counts as a regression


class BaselineError(ValueError):
    """A summary that cannot be read, or a tolerance that cannot be parsed; one line."""


def read_summary(path: str | Path) -> dict:
    """The summary at ``path``: a ``summary.json`` file or a report folder holding one.
    Raises ``BaselineError`` for a missing file or one that is not a run's summary."""
    p = Path(path)
    file = p / "summary.json" if p.is_dir() else p
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BaselineError(f"{path}: no summary.json there") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BaselineError(f"{path}: not a readable summary.json: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("invariants"), dict) or \
            not isinstance(data.get("slo"), dict):
        raise BaselineError(f"{path}: not a run's summary.json (no invariants and slo tables)")
    return data


def parse_tolerances(specs: list[str]) -> tuple[float, dict[str, float]]:
    """``--tolerance`` arguments: ``10%`` (every figure) or ``NAME=10%`` (the figures whose name
    contains NAME, e.g. ``p99`` or ``recovery_time_p99_s``); a share without ``%`` is a
    fraction (0.1). Returns (the default, {name part: share}). Raises ``BaselineError``."""
    default, named = DEFAULT_TOLERANCE, {}
    for spec in specs:
        name, _, amount = spec.rpartition("=")
        m = re.fullmatch(r"\s*(\d+(?:\.\d*)?)\s*(%?)\s*", amount)
        if m is None or (name and not re.fullmatch(r"[a-z0-9_]+", name)):
            raise BaselineError(f"--tolerance: must be PERCENT% or NAME=PERCENT% (e.g. p99=10%), got {spec!r}")
        share = float(m.group(1)) / (100.0 if m.group(2) else 1.0)
        if name:
            named[name] = share
        else:
            default = share
    return default, named


def tolerance_of(figure: str, default: float, named: Mapping[str, float]) -> float:
    """The tolerance of ``figure``: the longest name part of ``named`` it contains, else ``default``."""
    parts = [part for part in named if part in figure]
    return named[max(parts, key=len)] if parts else default


def compare(base: Mapping[str, Any], new: Mapping[str, Any], default: float = DEFAULT_TOLERANCE,
            named: Mapping[str, float] | None = None) -> dict:
    """What changed from summary ``base`` to summary ``new``: ``{"invariants": [{name, base,
    new, change}], "slo": [{name, base, new, change_share, tolerance, worse, text}],
    "regressions": [text], "verdict": "PASS" | "FAIL"}``; ``change`` is "held", "fixed",
    "broke" or "still violated"; ``change_share`` the figure's change as a share of the
    baseline (None with no sample or a zero baseline)."""
    named = named or {}
    out: dict[str, Any] = {"invariants": [], "slo": [], "regressions": []}
    for name, inv in new["invariants"].items():
        before = base["invariants"].get(name)
        held_before = None if before is None else before["holds"]
        change = ("held" if inv["holds"] else "broke") if held_before in (True, None) else \
            ("fixed" if inv["holds"] else "still violated")
        out["invariants"].append({"name": name, "base": before and before["violations"],
                                  "new": inv["violations"], "change": change})
        if change == "broke":
            out["regressions"].append(f"{name}: held in the baseline, {inv['violations']} violation(s) now")
    for name, fig in new["slo"].items():
        before = (base["slo"].get(name) or {}).get("value")
        value, tolerance = fig.get("value"), tolerance_of(name, default, named)
        lower_is_worse = name in LOWER_BOUND_FIGURES
        share = None if before in (None, 0) or value is None else (value - before) / abs(before)
        if before is None or value is None:
            worse = before is not None and value is None and fig.get("threshold") is not None
        elif share is None:
            worse = value < before if lower_is_worse else value > before
        else:
            worse = (-share if lower_is_worse else share) > tolerance
        base_text, new_text = format_against(name, before, value)
        text = f"{name}: {base_text} -> {new_text}" + (f" ({share:+.1%})" if share is not None else "")
        out["slo"].append({"name": name, "base": before, "new": value, "change_share": share,
                           "tolerance": tolerance, "worse": worse, "text": text})
        if worse:
            out["regressions"].append(f"{text}, worse than the tolerance of {tolerance:.0%}")
    out["verdict"] = "FAIL" if out["regressions"] else "PASS"
    return out


def diff_lines(result: Mapping[str, Any]) -> list[str]:
    """``compare``'s result as lines: the invariants that changed, every figure, the verdict."""
    lines = ["invariants:"]
    for inv in result["invariants"]:
        lines.append(f"  {inv['name']:<26} {inv['change']}" + (
            f" ({inv['base']} -> {inv['new']} violations)" if inv["change"] != "held" else ""))
    lines.append("SLO figures (baseline -> now):")
    for fig in result["slo"]:
        lines.append(f"  {fig['text']}" + ("   WORSE" if fig["worse"] else ""))
    if result["regressions"]:
        lines += [f"FAIL: {len(result['regressions'])} regression(s): " + "; ".join(result["regressions"])]
    else:
        lines.append("PASS: no invariant broke and no figure got worse than its tolerance")
    return lines
