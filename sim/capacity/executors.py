"""Running a sweep's runs: a local process pool (all cores) or a Dask cluster.

Finished rows are appended to ``runs.csv`` one by one (tagged with the sweep id), so an
interrupted sweep keeps them and a rerun into the same folder skips them. The final table is
sorted by run index, so the executor and the order of completion never show in the result.
"""

from __future__ import annotations

import csv
import os
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Callable, Iterable

import pandas as pd

from acksim.capacity.sweep import RunSpec, run_one


def finished_runs(path: Path, sweep_id: str) -> pd.DataFrame:
    """Rows of ``runs.csv`` already written for this sweep (empty frame if none)."""
    if not path.is_file() or path.stat().st_size == 0:
        return pd.DataFrame()
    frame = pd.read_csv(path)
    if "sweep_id" not in frame or frame.empty:
        return pd.DataFrame()
    return frame[frame["sweep_id"] == sweep_id]


def execute(runs: list[RunSpec], out: Path, sweep_id: str, executor: str = "local",
            address: str | None = None, progress: Callable[[int], None] | None = None) -> pd.DataFrame:
    """Run every run of ``runs`` not yet in ``out/runs.csv`` and return all rows, sorted by
    run. ``executor`` "local" uses a process pool over all cores; "dask" submits to the Dask
    scheduler at ``address`` (required). Raises ValueError for an unknown executor or a
    missing address, and what a run raises."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / "runs.csv"
    done = finished_runs(path, sweep_id)
    have = set(done["run"]) if not done.empty else set()
    pending = [r for r in runs if r.run not in have]
    if path.is_file() and done.empty:
        path.unlink()  # another sweep's rows: start afresh
    count = len(have)
    if progress:
        progress(count)
    for row in _run(pending, executor, address):
        _append(path, {"sweep_id": sweep_id, **row})
        count += 1
        if progress:
            progress(count)
    # read back from the file, so resumed and fresh sweeps give the same types and values
    rows = finished_runs(path, sweep_id).drop(columns="sweep_id")
    return rows.sort_values("run").reset_index(drop=True)


def _run(pending: list[RunSpec], executor: str, address: str | None) -> Iterable[dict]:
    if not pending:
        return
    if executor == "local":
        with ProcessPoolExecutor(max_workers=min(os.cpu_count() or 1, len(pending))) as pool:
            for future in as_completed([pool.submit(run_one, r) for r in pending]):
                yield future.result()
    elif executor == "dask":
        if not address:
            raise ValueError("--address: the dask executor needs a scheduler address, e.g. tcp://host:8786")
        from distributed import Client, as_completed as dask_completed

        with Client(address) as client:
            for future in dask_completed(client.map(run_one, pending, pure=False)):
                yield future.result()
    else:
        raise ValueError(f"--executor: unknown {executor!r}; one of local, dask")


def _append(path: Path, row: dict) -> None:
    new = not path.is_file()
    with path.open("a", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=list(row))
        if new:
            writer.writeheader()
        writer.writerow(row)
        f.flush()
