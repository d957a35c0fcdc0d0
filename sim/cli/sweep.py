"""The ``acksim sweep`` command: a capacity-planning grid.

Exit codes: 0 at least one grid point passed (kept every invariant and met every SLO) in every
replication; 1 none did; 2 bad input (sweep file, base scenario, executor options, an optional
extra that a flag needs and that is not installed, a folder with files acksim did not write,
a folder another sweep holds); 4 a result file could not be written (the verdict, when
computed, is printed first; the rows already in runs.csv stay, so a rerun resumes).

The optional features need extras, checked before any run: ``--parquet`` needs
``acksim[parquet]`` (PyArrow), ``--executor dask`` needs ``acksim[dask]``. This module imports
only the standard library and the sweep file's validation at load time; pandas, NumPy,
matplotlib and Dask are imported once the runs start, so ``--help`` and bad input are fast.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from acksim.capacity.sweep_dir import check_sweep_dir, locked
from acksim.printable import shown_path
from acksim.report.outdir import UsageError, output_error, safe_name

EXTRAS: dict[str, tuple[str, tuple[str, ...]]] = {  # flag: (extra, modules it installs)
    "--parquet": ("parquet", ("pyarrow",)),
    "--executor dask": ("dask", ("dask", "distributed")),
}


def add_sweep_parser(sub) -> None:
    """Add the ``sweep`` subcommand to the ``acksim`` argument parser."""
    p = sub.add_parser("sweep", help="run a grid of scenarios (capacity planning)")
    p.add_argument("sweep", help="sweep TOML file")
    p.add_argument("--executor", choices=("local", "dask"), default="local",
                   help="local process pool over all cores (default) or a Dask cluster (needs acksim[dask])")
    p.add_argument("--address", help="Dask scheduler address, e.g. tcp://10.0.0.5:8786 (with --executor dask)")
    p.add_argument("--parquet", action="store_true",
                   help="also write runs.parquet (needs acksim[parquet])")
    p.add_argument("--out", help="result folder (default reports/sweep-<sweep file name>); rerunning into "
                                 "the same folder resumes an interrupted sweep")
    p.add_argument("--junit-xml", metavar="FILE", help="also write the verdicts as JUnit XML: a suite per grid "
                                                       "point, a test case per invariant and SLO figure")


def require_extra(flag: str) -> None:
    """Raise ``UsageError`` (one line naming ``flag`` and the pip command) when a module of the
    extra that ``flag`` needs (``EXTRAS``) is not installed. Looks the modules up without
    importing them."""
    extra, modules = EXTRAS[flag]
    if any(_missing(m) for m in modules):
        raise UsageError(f"{flag} needs the extra acksim[{extra}]: pip install 'acksim[{extra}]'")


def _missing(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is None
    except (ImportError, ValueError):  # a blocked import (sys.modules[name] = None) or a broken parent
        return True


def cmd_sweep(args) -> int:
    """Run ``acksim sweep``; returns the exit code."""
    from acksim.capacity.sweep import load_sweep
    from acksim.report.junit import check_junit_path, write_junit

    if args.parquet:
        require_extra("--parquet")
    if args.executor == "dask":
        require_extra("--executor dask")
        if not args.address:
            raise UsageError("--address: the dask executor needs a scheduler address, e.g. tcp://host:8786")
    spec, runs, sweep_id = load_sweep(args.sweep)
    out = Path(args.out) if args.out is not None else Path("reports") / f"sweep-{safe_name(Path(args.sweep).stem)}"
    check_sweep_dir(out)
    junit = check_junit_path(args.junit_xml, out=out) if args.junit_xml else None

    from acksim.capacity.executors import execute
    from acksim.capacity.sweep_report import SweepWriteFailed, write_sweep_report

    with locked(out):
        try:
            rows = execute(runs, out, sweep_id, args.executor, args.address, progress=_bar(len(runs)),
                           screening=spec.screening)
        except OSError as exc:  # runs.csv: the rows written so far are whole; a rerun resumes
            raise output_error(exc) from None
        try:
            result = write_sweep_report(out, rows, list(spec.grid), spec.cost, sweep_id, parquet=args.parquet,
                                        screening=spec.screening, planned=len(runs))
        except SweepWriteFailed as exc:
            for line in point_lines(rows, list(spec.grid), spec.replications):
                print(line)
            print(verdict_line(exc.result, list(spec.grid)))
            raise output_error(exc.error) from None
    dropped = (f"; screening dropped {result['runs_dropped']} replications of points that had failed"
               if result["runs_dropped"] else "")
    print(f"acksim sweep: {result['runs']} runs over {result['points']} grid points ({spec.replications} "
          f"replications each{dropped}), executor {args.executor}; results in {shown_path(out)}")
    for line in point_lines(rows, list(spec.grid), spec.replications):
        print(line)
    if junit is not None:
        write_junit(junit, junit_suites(rows, list(spec.grid)))
    print(verdict_line(result, list(spec.grid)))
    return 0 if result["cheapest"] is not None else 1


def verdict_line(result: dict, params: list[str]) -> str:
    """The last line of ``acksim sweep``, from the sweep.json content ``result``: the
    cheapest passing point and whether it is significant, or FAIL with why no point passed
    (each invariant broken and each threshold missed, with how many points)."""
    best = result["cheapest"]
    if best is None:
        points = result["points"]
        fails = result["failures"]

        def listed(counts: dict[str, int]) -> str:
            return ", ".join(f"{n} ({c} of {points} points)" for n, c in counts.items()) or "none"

        line = (f"FAIL: no grid point passed in every replication; invariants violated: "
                f"{listed(fails['invariants'])}; SLO thresholds missed: {listed(fails['thresholds'])}")
        if fails["other"]:
            line += f"; also: {listed(fails['other'])}"
        return line
    line = f"cheapest grid point passing every replication: {', '.join(f'{k} = {best[k]}' for k in params)}"
    if not best["significant"]:
        return f"{line} (not significant: {best['note']})"
    line += f" (significant: every {result['interval']['level']:.0%} interval clears its threshold)"
    return f"{line}; {best['note']}" if best["note"] else line


def _points(rows, params: list[str]):
    for point, group in rows.sort_values("run").groupby("point", sort=True):
        label = ", ".join(f"{k} = {group[k].iloc[0]}" for k in params)
        yield point, label, group


def _reasons(group) -> str:
    why = group["reasons"] if "reasons" in group else [""] * len(group)
    return " | ".join(f"seed {seed}: {text}" for seed, ok, text in zip(group["seed"], group["passed"], why) if not ok)


def point_lines(rows, params: list[str], replications: int | None = None) -> list[str]:
    """One line per grid point: "PASS: point 0 (workers.count = 4): 3 of 3 runs passed", or
    FAIL with each failed run's seed and reasons, as the runs' own verdicts say; a point with
    fewer runs than ``replications`` (screening stopped it) says how many it did not run."""
    lines = []
    for point, label, group in _points(rows, params):
        ok = int(group["passed"].astype(bool).sum())
        verdict = "PASS" if ok == len(group) else "FAIL"
        skipped = (replications or 0) - len(group)
        lines.append(f"{verdict}: point {point} ({label}): {ok} of {len(group)} runs passed"
                     + (f" ({skipped} not run: screening)" if skipped > 0 else "")
                     + (f"; {_reasons(group)}" if ok < len(group) else ""))
    return lines


def junit_suites(rows, params: list[str]) -> list:
    """One JUnit suite per grid point: a case per invariant (failing when it broke in any
    replication, naming the seeds), per SLO figure with a threshold (failing when missed in
    any replication, with the values; skipped without a threshold) and ``verdict`` (the
    runs' own verdicts, with each failed run's reasons)."""
    import pandas as pd

    from acksim.judges.slo import FIGURES
    from acksim.report.junit import Case, Suite
    from acksim.judges.figure_text import format_figure

    suites = []
    for point, label, group in _points(rows, params):
        cls = f"point {point}"
        cases = []
        for col in (c for c in group.columns if c.startswith("holds_")):
            bad = [int(s) for s, h in zip(group["seed"], group[col]) if not bool(h)]
            cases.append(Case(f"{cls}.invariants", col[len("holds_"):],
                              f"{col[len('holds_'):]} violated with seed(s) {', '.join(map(str, bad))}" if bad else None))
        for fig in FIGURES:
            met = group.get(f"{fig}_met")
            if met is None or met.isna().all():
                cases.append(Case(f"{cls}.slo", fig, skipped="no threshold"))
                continue
            bad = [(int(s), v) for s, v, m in zip(group["seed"], group[fig], met) if not bool(m)]
            text = ", ".join(f"seed {s}: {'no sample' if pd.isna(v) else format_figure(fig, float(v))}" for s, v in bad)
            cases.append(Case(f"{cls}.slo", fig, f"{fig} missed its threshold ({text})" if bad else None))
        failed = _reasons(group)
        cases.append(Case(f"{cls}.run", "verdict", failed.split(" | ")[0] if failed else None, failed))
        suites.append(Suite(f"point {point}: {label}", tuple(cases)))
    return suites


def _bar(total: int):
    if not sys.stderr.isatty():
        return None
    from tqdm import tqdm

    bar = tqdm(total=total, unit="run", desc="sweeping", file=sys.stderr, leave=False)

    def update(done: int, runs: int) -> None:
        bar.n, bar.total = done, runs  # screening may drop runs: the total shrinks
        bar.refresh()

    return update
