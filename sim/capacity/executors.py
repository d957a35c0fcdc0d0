"""Running a sweep's runs: a local process pool (all cores) or a Dask cluster.

With screening ("drop_failed", ``RunOrder``) a grid point's replications run one after
another and stop at its first failure; different points run side by side (so at most as many
runs as points are in flight).

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
import queue
from collections import deque
from concurrent.futures import ProcessPoolExecutor
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Callable, Iterable, Iterator

import pandas as pd

from acksim.capacity.sweep import RunSpec, run_one
from acksim.capacity.sweep_dir import append_row, note, repair_rows
from acksim.capacity.sweep_report import as_bools
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
            address: str | None = None, progress: Callable[[int, int], None] | None = None,
            screening: str = "none") -> pd.DataFrame:
    """Run every run of ``runs`` not yet in ``out/runs.csv`` (with ``screening``
    "drop_failed", only those ``RunOrder`` does not drop) and return all rows, sorted by
    run. ``executor`` "local" uses a process pool over all cores; "dask" submits to the Dask
    scheduler at ``address`` (required). ``progress(done, total)`` hears the runs done so far
    and the runs the sweep will have (fewer than ``runs`` once screening drops some). Raises
    ValueError for an unknown executor or a missing address, and what a run raises."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / "runs.csv"
    done = finished_runs(path, sweep_id)
    passed = dict(zip(done["run"].tolist(), as_bools(done["passed"]).tolist())) if not done.empty else {}
    if path.is_file() and done.empty:
        path.unlink()  # another sweep's rows: start afresh
    order = RunOrder(runs, passed, screening)
    count = len(passed)
    if progress:
        progress(count, len(runs) - order.dropped)
    with closing(_run(order, executor, address)) as finished:  # an error here stops the pool at once
        for row in finished:
            append_row(path, {"sweep_id": sweep_id, **row})
            count += 1
            if progress:
                progress(count, len(runs) - order.dropped)
    # read back from the file, so resumed and fresh sweeps give the same types and values
    rows = finished_runs(path, sweep_id).drop(columns="sweep_id")
    return rows.sort_values("run").reset_index(drop=True)


class RunOrder:
    """Which runs of a sweep to start, and which to start next as each one finishes.

    ``screening`` "none": every run not yet done is ready at once. "drop_failed": a grid
    point's replications run one after another, in replication order, and stop at the first
    that failed; the rest of that point's runs are dropped (``dropped`` counts them). A point
    that failed once cannot pass (every replication must) and so cannot be the cheapest: its
    other replications would not change the sweep's choice. ``passed``: run index -> passed,
    for the rows already in runs.csv (a resumed sweep; they count as run). Which runs run
    depends on the rows only, never on the order in which runs finish, so a screened sweep's
    rows are as deterministic as any other's."""

    def __init__(self, runs: list[RunSpec], passed: dict[int, bool], screening: str = "none") -> None:
        if screening not in ("none", "drop_failed"):
            raise ValueError(f"screening: unknown {screening!r}; one of none, drop_failed")
        self.screening = screening
        self.dropped = 0
        self._passed = dict(passed)
        self._point = {r.run: r.point for r in runs}
        self._chains: dict[int, deque[RunSpec]] = {}
        for r in sorted(runs, key=lambda r: (r.point, r.run)):  # a point's runs: its seeds in order
            self._chains.setdefault(r.point, deque()).append(r)
        self._ready = ([r for r in runs if r.run not in self._passed] if screening == "none" else
                       [r for r in map(self._next, self._chains) if r is not None])

    def first(self) -> list[RunSpec]:
        """The runs to start now, in run order."""
        return sorted(self._ready, key=lambda r: r.run)

    def finished(self, run: int, passed: bool) -> RunSpec | None:
        """Note that run ``run`` finished (``passed`` or not); returns the run to start next
        in its place (screening: the point's next replication), or None."""
        self._passed[run] = passed
        return None if self.screening == "none" else self._next(self._point[run])

    def _next(self, point: int) -> RunSpec | None:
        chain = self._chains[point]
        while chain and chain[0].run in self._passed:
            if not self._passed[chain.popleft().run]:  # failed: the point's other runs are dropped
                self.dropped += sum(1 for r in chain if r.run not in self._passed)
                chain.clear()
        return chain[0] if chain else None


def _run(order: RunOrder, executor: str, address: str | None) -> Iterable[dict]:
    ready = order.first()
    if not ready:
        return
    if executor == "local":
        with pool_of(min(os.cpu_count() or 1, len(ready))) as pool:
            done: queue.SimpleQueue = queue.SimpleQueue()  # futures, as they finish

            def start(spec: RunSpec) -> None:
                pool.submit(guarded, run_one, spec).add_done_callback(done.put)

            for spec in ready:
                start(spec)
            running = len(ready)
            while running:
                row = done.get().result()
                running -= 1
                after = order.finished(row["run"], bool(row["passed"]))  # the next starts before the row is written
                if after is not None:
                    start(after)
                    running += 1
                yield row
    elif executor == "dask":
        if not address:
            raise ValueError("--address: the dask executor needs a scheduler address, e.g. tcp://host:8786")
        from distributed import Client, as_completed as dask_completed

        with Client(address) as client:
            finished = dask_completed(client.map(run_one, ready, pure=False))
            for future in finished:
                row = future.result()
                after = order.finished(row["run"], bool(row["passed"]))
                if after is not None:
                    finished.add(client.submit(run_one, after, pure=False))
                yield row
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
