"""The ``acksim sweep`` command: a capacity-planning grid.

Exit codes: 0 at least one grid point met every SLO (and kept every invariant) in every
replication; 1 none did; 2 bad input (sweep file, base scenario, executor options).
"""

from __future__ import annotations

import sys
from pathlib import Path

from acksim.report.outdir import check_out_dir, safe_name
from acksim.scenario import parse
from acksim.capacity.sweep import load_sweep
from acksim.capacity.executors import execute
from acksim.capacity.sweep_report import write_sweep_report


def add_sweep_parser(sub) -> None:
    """Add the ``sweep`` subcommand to the ``acksim`` argument parser."""
    p = sub.add_parser("sweep", help="run a grid of scenarios (capacity planning)")
    p.add_argument("sweep", help="sweep TOML file")
    p.add_argument("--executor", choices=("local", "dask"), default="local",
                   help="local process pool over all cores (default) or a Dask cluster")
    p.add_argument("--address", help="Dask scheduler address, e.g. tcp://10.0.0.5:8786 (with --executor dask)")
    p.add_argument("--out", help="result folder (default reports/sweep-<sweep file name>); rerunning into "
                                 "the same folder resumes an interrupted sweep")


def cmd_sweep(args) -> int:
    """Run ``acksim sweep``; returns the exit code."""
    spec, runs, sweep_id = load_sweep(args.sweep)
    if args.executor == "dask" and not args.address:
        from acksim.report.outdir import UsageError

        raise UsageError("--address: the dask executor needs a scheduler address, e.g. tcp://host:8786")
    out = Path(args.out) if args.out is not None else Path("reports") / f"sweep-{safe_name(Path(args.sweep).stem)}"
    if not (out / "runs.csv").is_file():
        check_out_dir(out)
    thresholds = parse(runs[0].scenario).slo.thresholds()
    bar = _bar(len(runs))
    rows = execute(runs, out, sweep_id, args.executor, args.address, progress=bar)
    result = write_sweep_report(out, rows, list(spec.grid), spec.cost, thresholds, sweep_id)
    best = result["cheapest"]
    print(f"acksim sweep: {result['runs']} runs over {result['points']} grid points ({spec.replications} "
          f"replications each), executor {args.executor}; results in {out}")
    if best is None:
        print("FAIL: no grid point met every SLO in every replication")
        return 1
    params = ", ".join(f"{k} = {best[k]}" for k in spec.grid)
    print(f"cheapest grid point meeting every SLO: {params}")
    return 0


def _bar(total: int):
    if not sys.stderr.isatty():
        return None
    from tqdm import tqdm

    bar = tqdm(total=total, unit="run", desc="sweeping", file=sys.stderr, leave=False)

    def update(done: int) -> None:
        bar.n = done
        bar.refresh()

    return update
