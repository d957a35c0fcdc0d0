"""A sweep's results: the tidy table, a summary per grid point with 95 % confidence intervals,
the cheapest grid point that meets every SLO, and one plot per figure against the swept
parameter with its threshold drawn."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from acksim.report.plots._canvas import new_figure, to_png
from acksim.judges.slo import FIGURES


def point_summary(rows: pd.DataFrame, params: list[str]) -> pd.DataFrame:
    """One row per grid point: the parameters, ``runs``, ``all_passed``, ``verdict`` (PASS when
    every replication passed) and ``reasons`` ("seed N: <that run's reasons>" for each failed
    replication, joined by " | "; empty for a pass) and, per SLO figure,
    ``<figure>_met`` (its threshold met in every replication; None without a threshold),
    ``<figure>_mean``, ``_ci_low``, ``_ci_high`` (Student t, 95 %, over replications; the
    interval collapses to the mean for a single replication)."""
    out = []
    for point, group in rows.groupby("point", sort=True):
        rec = {"point": point, **{p: group[p].iloc[0] for p in params}, "runs": len(group),
               "all_passed": bool(group["passed"].astype(bool).all())}
        rec["verdict"] = "PASS" if rec["all_passed"] else "FAIL"
        rec["reasons"] = " | ".join(f"seed {seed}: {why}" for seed, ok, why in zip(
            group.get("seed", group["run"]), group["passed"].astype(bool),
            group.get("reasons", pd.Series([""] * len(group)))) if not ok)
        for fig in FIGURES:
            if fig not in group:
                continue
            if f"{fig}_met" in group:  # the threshold met in every replication (empty: no threshold)
                met = group[f"{fig}_met"].dropna()
                rec[f"{fig}_met"] = bool(met.astype(bool).all()) if len(met) else None
            values = pd.to_numeric(group[fig], errors="coerce").dropna().to_numpy(dtype=float)
            mean = float(values.mean()) if values.size else np.nan
            half = (float(stats.t.ppf(0.975, values.size - 1) * values.std(ddof=1) / np.sqrt(values.size))
                    if values.size > 1 else 0.0)
            rec[f"{fig}_mean"], rec[f"{fig}_ci_low"], rec[f"{fig}_ci_high"] = mean, mean - half, mean + half
        out.append(rec)
    return pd.DataFrame(out)


def cheapest(summary: pd.DataFrame, cost: str) -> dict | None:
    """The grid point with the lowest ``cost`` among those whose every run passed (every
    invariant held and every SLO threshold was met); the first such point on a tie; None
    when no point passed."""
    ok = summary[summary["all_passed"]]
    if ok.empty:
        return None
    best = ok.sort_values([cost, "point"], kind="stable").iloc[0]
    return {k: (v.item() if hasattr(v, "item") else v) for k, v in best.items()
            if not k.endswith(("_ci_low", "_ci_high"))}


def plot_figure(summary: pd.DataFrame, figure: str, x: str, others: list[str], threshold: float | None) -> bytes:
    """PNG: ``figure``'s mean with its 95 % interval against ``x``, one line per combination
    of the ``others`` grid fields, the threshold as a dashed line."""
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


def write_sweep_report(out: Path, rows: pd.DataFrame, params: list[str], cost: str,
                       thresholds: dict[str, float], sweep_id: str) -> dict:
    """Write runs.csv (sorted), runs.parquet, summary.csv, sweep.json and one plot per SLO
    figure (plots/<figure>.png) into ``out``; returns the sweep.json content (``sweep_id``, ``runs``, ``points``,
    ``thresholds``, ``cheapest``)."""
    rows = rows.sort_values("run").reset_index(drop=True)
    rows.assign(sweep_id=sweep_id).to_csv(out / "runs.csv", index=False)
    rows.to_parquet(out / "runs.parquet", index=False)
    summary = point_summary(rows, params)
    summary.to_csv(out / "summary.csv", index=False)
    plots = out / "plots"
    plots.mkdir(exist_ok=True)
    for figure in FIGURES:
        (plots / f"{figure}.png").write_bytes(
            plot_figure(summary, figure, params[0], params[1:], thresholds.get(figure)))
    result = {"sweep_id": sweep_id, "runs": int(len(rows)), "points": int(len(summary)),
              "thresholds": thresholds, "cheapest": cheapest(summary, cost)}
    (out / "sweep.json").write_text(json.dumps(result, indent=2, default=str) + "\n", encoding="utf-8")
    return result
