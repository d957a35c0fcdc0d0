"""A sweep's results: the tidy table, a summary per grid point with 95 % confidence intervals,
why each point failed, the cheapest point that passed, and one plot per figure against the
first grid field with its threshold drawn.

Intervals are Student-t intervals over the replications, clipped at 0: every SLO figure is a
duration, a count or a rate, none can be negative, and an interval reaching below 0 would
claim values the figure cannot take (``acksim.capacity.intervals`` says why not a bootstrap).
The ``<figure>_ci_clipped`` column says where the clip applied.

A point *passes* when every replication passed: every invariant held, every SLO threshold was
met, the processor raised no error of its own and the run drained. A point that fails says
which invariants broke (``failed_invariants``), which thresholds it missed
(``missed_thresholds``) and what else went wrong (``other_failures``). A passing point is
*significant* when, for every figure with a threshold, the interval lies on the right side of
it: the upper bound at or below an upper-bound threshold, the lower bound at or above the
throughput threshold (a lower bound). The cheapest point is the cheapest significant one; when
no passing point is significant, the cheapest passing point, marked ``significant: false``.
"""

from __future__ import annotations

import io
import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from acksim.capacity.intervals import t_interval
from acksim.capacity.sweep_dir import write_whole
from acksim.judges.slo import FIGURES, LOWER_BOUND_FIGURES

if TYPE_CHECKING:
    import pandas as pd

LEVEL = 0.95
INTERVAL = {"method": "student_t", "level": LEVEL, "clipped_at": 0.0,
            "note": "Student-t interval over the replications of a grid point, its lower bound clipped "
                    "at 0 (no SLO figure can be negative; <figure>_ci_clipped marks where); a single "
                    "replication has no interval"}
OTHER_FAILURES: tuple[tuple[str, str], ...] = (("count_processor_errors", "processor_errors"),
                                               ("count_stopped_early", "stopped_early"))
SEPARATOR = ";"  # between names in one summary.csv cell


class SweepWriteFailed(Exception):
    """A result file could not be written; ``error`` is the ``OSError``, ``result`` the
    sweep.json content computed before, so the command still prints the verdict."""

    def __init__(self, error: OSError, result: dict) -> None:
        super().__init__(str(error))
        self.error, self.result = error, result


def point_summary(rows: pd.DataFrame, params: list[str]) -> pd.DataFrame:
    """One row per grid point (in point order): ``point``, the parameters, ``runs``,
    ``runs_passed``, ``all_passed``; ``failed_invariants``, ``missed_thresholds`` and
    ``other_failures`` (names joined by ";", in table order, each broken or missed in at least
    one replication; "" for none); then per SLO figure ``<figure>_threshold`` (NaN: none),
    ``<figure>_met`` (met in every replication; None without a threshold), ``_mean``,
    ``_ci_low``, ``_ci_high`` (95 % Student t over the replications with a sample, low clipped
    at 0; a single value: the interval is that value), ``_ci_clipped``; and last
    ``crossing_thresholds`` (figures whose interval reaches across their threshold, ";") and
    ``significant`` (passed, at least 2 replications and nothing crossing); ``verdict`` (PASS
    when every replication passed) and ``reasons`` ("seed N: <that run's reasons>" for each
    failed replication, joined by " | "; empty for a pass). ``rows``: the runs table of
    ``run_one`` rows (columns it lacks are taken as absent)."""
    import pandas as pd

    invariants = [c for c in rows.columns if c.startswith("holds_")]
    out = []
    for point, group in rows.groupby("point", sort=True):
        passed = group["passed"].astype(bool)
        rec: dict[str, Any] = {"point": point, **{p: group[p].iloc[0] for p in params}, "runs": len(group),
                               "runs_passed": int(passed.sum()), "all_passed": bool(passed.all())}
        rec["verdict"] = "PASS" if rec["all_passed"] else "FAIL"
        rec["reasons"] = " | ".join(f"seed {seed}: {why}" for seed, ok, why in zip(
            group.get("seed", group["run"]), passed,
            group.get("reasons", pd.Series([""] * len(group)))) if not ok)
        rec["failed_invariants"] = SEPARATOR.join(c.removeprefix("holds_") for c in invariants
                                                  if not group[c].astype(bool).all())
        rec["missed_thresholds"] = SEPARATOR.join(f for f in FIGURES if f"{f}_met" in group
                                                  and not as_bools(group[f"{f}_met"].dropna()).all())
        rec["other_failures"] = SEPARATOR.join(name for col, name in OTHER_FAILURES
                                               if col in group and (group[col].fillna(0) > 0).any())
        crossing = []
        for fig in FIGURES:
            if fig not in group:
                continue
            threshold = _threshold(group, fig)
            rec[f"{fig}_threshold"] = math.nan if threshold is None else threshold
            if f"{fig}_met" in group:
                met = group[f"{fig}_met"].dropna()
                rec[f"{fig}_met"] = bool(as_bools(met).all()) if len(met) else None
            values = pd.to_numeric(group[fig], errors="coerce").dropna().tolist()
            mean, low, high, clipped = t_interval(values, LEVEL, floor=0.0)
            rec[f"{fig}_mean"], rec[f"{fig}_ci_low"], rec[f"{fig}_ci_high"] = mean, low, high
            rec[f"{fig}_ci_clipped"] = clipped
            if threshold is not None and _crosses(fig, low, high, threshold):
                crossing.append(fig)
        rec["crossing_thresholds"] = SEPARATOR.join(crossing)
        rec["significant"] = rec["all_passed"] and len(group) >= 2 and not crossing
        out.append(rec)
    return pd.DataFrame(out)


def as_bools(column: pd.Series) -> pd.Series:
    """A column of True/False (as bools, or as the strings a CSV round trip may give)."""
    return column.map(lambda v: v if isinstance(v, bool) else str(v).strip().lower() == "true")


def _threshold(group: pd.DataFrame, figure: str) -> float | None:
    """The figure's threshold at this grid point (the same in every replication), or None."""
    column = f"{figure}_threshold"
    if column not in group:
        return None
    values = group[column].dropna()
    return float(values.iloc[0]) if len(values) else None


def _crosses(figure: str, low: float, high: float, threshold: float) -> bool:
    """Whether the interval [low, high] reaches the wrong side of ``threshold`` (NaN: no
    sample, nothing to cross)."""
    if math.isnan(low):
        return False
    return low < threshold if figure in LOWER_BOUND_FIGURES else high > threshold


def cheapest(summary: pd.DataFrame, cost: str) -> dict | None:
    """The chosen grid point as a dict of its summary row plus ``significant`` and ``note``
    (None, or one sentence): the lowest ``cost`` among the significant points (the first on
    a tie), the note naming any cheaper point that passed but whose interval crosses a
    threshold; when no passing point is significant, the lowest-cost passing point with
    ``significant`` False and the note saying why; None when no point passed."""
    ok = summary[summary["all_passed"].astype(bool)].sort_values([cost, "point"], kind="stable")
    if ok.empty:
        return None
    sig = ok[ok["significant"].astype(bool)] if "significant" in ok else ok.iloc[:0]
    if sig.empty:
        best, note = ok.iloc[0], _why_not_significant(ok.iloc[0])
    else:
        best = sig.iloc[0]
        cheaper = ok[ok[cost] < best[cost]]
        note = None if cheaper.empty else (
            f"{cost} = {_plain(cheaper.iloc[0][cost])} passed every replication too, but "
            f"{_why_not_significant(cheaper.iloc[0])}")
    out = {k: _plain(v) for k, v in best.items()}
    out["significant"] = not sig.empty
    out["note"] = note
    return out


def _why_not_significant(row: pd.Series) -> str:
    if row["runs"] < 2:
        return "one replication per point gives no interval to test against the thresholds (set replications >= 2)"
    parts = []
    for fig in filter(None, str(row.get("crossing_thresholds", "")).split(SEPARATOR)):
        parts.append(f"{fig} {LEVEL:.0%} interval [{row[f'{fig}_ci_low']:.4g}, {row[f'{fig}_ci_high']:.4g}] "
                     f"crosses its threshold {row[f'{fig}_threshold']:g}")
    return "; ".join(parts) or "its intervals were not tested"


def _plain(v: Any) -> Any:
    """A JSON-ready scalar: numpy scalars as Python ones, NaN as None."""
    v = v.item() if hasattr(v, "item") else v
    return None if isinstance(v, float) and math.isnan(v) else v


def _names(cell: Any) -> list[str]:
    return [] if cell is None or (isinstance(cell, float) and math.isnan(cell)) else \
        [n for n in str(cell).split(SEPARATOR) if n]


def shared_thresholds(summary: pd.DataFrame) -> dict[str, float]:
    """The thresholds set to one value at every grid point, by figure (a grid over a
    threshold leaves it out)."""
    out = {}
    for fig in FIGURES:
        column = f"{fig}_threshold"
        if column in summary and summary[column].notna().all() and summary[column].nunique() == 1:
            out[fig] = float(summary[column].iloc[0])
    return out


def grid_verdicts(summary: pd.DataFrame, params: list[str]) -> list[dict]:
    """sweep.json's ``grid``: per point (in order) its parameters, ``passed``, ``runs``,
    ``runs_passed``, ``failed_invariants``, ``missed_thresholds``, ``other_failures``
    (lists of names), ``thresholds`` {figure: value} and ``significant``."""
    out = []
    for _, row in summary.iterrows():
        out.append({"point": _plain(row["point"]), "params": {p: _plain(row[p]) for p in params},
                    "passed": bool(row["all_passed"]), "runs": _plain(row["runs"]),
                    "runs_passed": _plain(row["runs_passed"]),
                    "failed_invariants": _names(row["failed_invariants"]),
                    "missed_thresholds": _names(row["missed_thresholds"]),
                    "other_failures": _names(row["other_failures"]),
                    "thresholds": {f: float(row[f"{f}_threshold"]) for f in FIGURES
                                   if f"{f}_threshold" in row and not math.isnan(row[f"{f}_threshold"])},
                    "significant": bool(row["significant"])})
    return out


def failure_counts(grid: list[dict]) -> dict[str, dict[str, int]]:
    """How many grid points broke each invariant, missed each threshold and had each other
    failure: ``{"invariants": {name: points}, "thresholds": {...}, "other": {...}}``, names in
    order of first appearance."""
    out: dict[str, dict[str, int]] = {"invariants": {}, "thresholds": {}, "other": {}}
    for entry in grid:
        for key, field in (("invariants", "failed_invariants"), ("thresholds", "missed_thresholds"),
                           ("other", "other_failures")):
            for name in entry[field]:
                out[key][name] = out[key].get(name, 0) + 1
    return out


def plot_figure(summary: pd.DataFrame, figure: str, x: str, others: list[str], threshold: float | None) -> bytes:
    """PNG: ``figure``'s mean with its 95 % interval against ``x``, one line per combination
    of the ``others`` grid fields, the threshold as a dashed line."""
    import numpy as np

    from acksim.report.plots._canvas import new_figure, to_png

    fig, ax = new_figure((8.0, 4.5))
    groups = summary.groupby(others, sort=True) if others else [((), summary)]
    for key, group in groups:
        g = group.sort_values(x)
        mean = g[f"{figure}_mean"].to_numpy(dtype=float)
        err = np.vstack([mean - g[f"{figure}_ci_low"], g[f"{figure}_ci_high"] - mean])
        label = ", ".join(f"{o}={v}" for o, v in zip(others, key if isinstance(key, tuple) else (key,))) or None
        ax.errorbar(g[x].to_numpy(), mean, yerr=err, marker="o", capsize=3, label=label)
    if threshold is not None:
        ax.axhline(threshold, color="red", linestyle="--", label=f"threshold {threshold:g}")
    ax.set_xlabel(x)
    ax.set_ylabel(figure)
    ax.set_title(f"{figure} against {x} (mean, 95 % CI)")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8)
    return to_png(fig)


def write_sweep_report(out: Path, rows: pd.DataFrame, params: list[str], cost: str, sweep_id: str,
                       parquet: bool = False, screening: str = "none", planned: int | None = None) -> dict:
    """Write runs.csv (sorted by run), runs.parquet (with ``parquet``; needs pyarrow),
    summary.csv, sweep.json and one plot per SLO figure (plots/<figure>.png) into ``out``;
    each file written whole (``acksim.capacity.sweep_dir.write_whole``: a full disk leaves the
    previous file or none, never a half one); returns the sweep.json content: ``sweep_id``, ``runs``,
    ``screening`` (the sweep file's), ``runs_dropped`` (of the ``planned`` runs, grid points x
    replications, those screening did not run; 0 without ``planned``), ``points``, ``points_passed``,
    ``thresholds`` (those shared by every point), ``interval`` (the method), ``failures``
    (``failure_counts``), ``grid`` (``grid_verdicts``) and ``cheapest`` (``cheapest``). Raises
    ``SweepWriteFailed`` (the OS error and the computed result) when a file cannot be written."""
    rows = rows.sort_values("run").reset_index(drop=True)
    summary = point_summary(rows, params)
    thresholds = shared_thresholds(summary)
    grid = grid_verdicts(summary, params)
    result = {"sweep_id": sweep_id, "runs": int(len(rows)), "screening": screening,
              "runs_dropped": max(0, planned - len(rows)) if planned is not None else 0, "points": int(len(summary)),
              "points_passed": sum(g["passed"] for g in grid), "thresholds": thresholds,
              "interval": INTERVAL, "failures": failure_counts(grid), "grid": grid,
              "cheapest": cheapest(summary, cost)}
    try:
        # the column order of the rows ``append_row`` writes, so a rerun that fills in runs appends alike
        tagged = rows.assign(sweep_id=sweep_id)[["sweep_id", *rows.columns]]
        write_whole(out / "runs.csv", tagged.to_csv(index=False).encode("utf-8"))
        if parquet:
            buf = io.BytesIO()
            rows.to_parquet(buf, index=False)
            write_whole(out / "runs.parquet", buf.getvalue())
        write_whole(out / "summary.csv", summary.to_csv(index=False).encode("utf-8"))
        plots = out / "plots"
        plots.mkdir(exist_ok=True)
        for figure in FIGURES:
            write_whole(plots / f"{figure}.png",
                        plot_figure(summary, figure, params[0], params[1:], thresholds.get(figure)))
        write_whole(out / "sweep.json", (json.dumps(result, indent=2, default=str) + "\n").encode("utf-8"))
    except OSError as exc:
        raise SweepWriteFailed(exc, result) from exc
    return result
