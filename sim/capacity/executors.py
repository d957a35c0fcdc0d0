"""Running a sweep's runs: a local process pool (all cores) or a Dask cluster.

Finished rows are appended to ``runs.csv`` one by one (tagged with the sweep id), each as one
whole line, flushed and fsynced (``acksim.capacity.sweep_dir``), so an interrupted sweep keeps
them and a rerun into the same folder skips them; a torn last line is dropped on resume (that
run is redone, with a note on stderr). The final table is sorted by run index, so the executor
and the order of completion never show in the result.

An interrupt (Ctrl-C, SIGTERM: ``KeyboardInterrupt``) or any error while the pool runs
terminates the pool's worker processes before it propagates: no run goes on in the
background, none is left behind.
"""

from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from contextlib import contextmanager
from typing import Callable, Iterable, Iterator

import pandas as pd

from acksim.capacity.sweep import RunSpec, run_one
from acksim.capacity.sweep_dir import append_row, note, repair_rows
from acksim.interrupts import guarded, in_worker


def finished_runs(path: Path, sweep_id: str) -> pd.DataFrame:
    """Rows of ``runs.csv`` already written for this sweep (empty frame if none). A torn last
    line (a run cut off mid-append) is dropped first, with a note on stderr: that run is redone."""
    dropped = repair_rows(path)
    if dropped:
        note(f"{path.name}: dropped {dropped} torn row{'s' if dropped > 1 else ''} (cut off mid-write); "
             "redoing that run")
    if not path.is_file() or path.stat().st_size == 0:
        return pd.DataFrame()
    frame = pd.read_csv(path, dtype={"sweep_id": str})  # an id like "56897815e359" is no float
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
        append_row(path, {"sweep_id": sweep_id, **row})
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
        with pool_of(min(os.cpu_count() or 1, len(pending))) as pool:
            for future in as_completed([pool.submit(guarded, run_one, r) for r in pending]):
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


@contextmanager
def pool_of(workers: int) -> Iterator[ProcessPoolExecutor]:
    """A ``ProcessPoolExecutor`` of ``workers`` processes that, when the block ends by an
    exception (an interrupt included), terminates its worker processes and waits for them
    before the exception goes on, instead of waiting for the runs in progress. Submit
    ``guarded(fn, arg)`` so a terminated worker removes its temporary stores first
    (``acksim.interrupts``)."""
    pool = ProcessPoolExecutor(max_workers=workers, initializer=in_worker)
    try:
        yield pool
    except BaseException:
        terminate_pool(pool)
        raise
    pool.shutdown(wait=True)


def terminate_pool(pool: ProcessPoolExecutor) -> None:
    """Terminate ``pool``'s worker processes, wait for each, and shut the pool down."""
    processes = list((getattr(pool, "_processes", None) or {}).values())  # no public handle on them
    pool.shutdown(wait=False, cancel_futures=True)  # no further run starts
    for proc in processes:
        if proc.is_alive():
            proc.terminate()
    for proc in processes:
        proc.join(timeout=5)
        if proc.is_alive():
            proc.kill()
            proc.join(timeout=5)
    manager = getattr(pool, "_executor_manager_thread", None)
    if manager is not None:  # let it close its wake-up pipe before the interpreter exits, or
        manager.join(timeout=10)  # the exit hook may write to that pipe as it closes (EBADF)
