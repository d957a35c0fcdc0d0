"""``acksim check --jobs N``: N independent searches on N processes, one merged report.

Each search is ``run_check`` with its own seed (the first keeps the given one) and its
share of ``max_examples``. A search's examples depend on its seed, budget and base only,
not on what the pool worker has imported (``acksim.search.constants``), so each command
repeats its own search for a seed. All the searches read
and write one Hypothesis example database, so a counterexample any of them saved is tried first
by every later check. The report adds up examples, hazard coverage and crash phases; a kind
of finding found by several searches is reported from the lowest-numbered one, so the report
depends on the seeds and budgets only, never on which process finished first. The pool is
``acksim.capacity.executors.pool_of``: an interrupt terminates every search before it goes
on (no search is left running).
"""

from __future__ import annotations

import hashlib
import os
import time
from concurrent.futures import FIRST_COMPLETED, wait
from pathlib import Path
from typing import Callable

from acksim.scenario import Scenario
from acksim.search.check import CheckReport, run_check


def default_jobs() -> int:
    """The processors this process may run on (``sched_getaffinity``), at least 1."""
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def search_seed(seed: int, job: int) -> int:
    """The seed of search ``job`` (0-based) of a check seeded ``seed``: ``seed`` itself for
    the first, a SHA-256-derived 0 .. 2**63-1 for the others (distinct, reproducible)."""
    if job == 0:
        return seed
    return int.from_bytes(hashlib.sha256(f"acksim-check:{seed}:{job}".encode()).digest()[:8], "big") >> 1


def budgets(max_examples: int, jobs: int) -> list[int]:
    """``max_examples`` split over ``jobs`` searches (the first ones get the remainder); a
    search with no example is not started, so fewer come back when ``jobs`` > ``max_examples``."""
    share, extra = divmod(max_examples, jobs)
    return [b for b in (share + (i < extra) for i in range(jobs)) if b]


def run_checks(processor: Callable | str, base: Scenario, *, jobs: int, max_examples: int = 500, seed: int = 0,
               database: Path | None = None, key: str = "", progress: Callable[[int], None] | None = None,
               stop_at: frozenset[str] | None = None, all_findings: bool = False,
               max_time_s: float | None = None) -> CheckReport:
    """``run_check`` as ``jobs`` independent searches on as many processes (``jobs`` 1: in
    this process), merged (see the module). ``processor`` must pickle for ``jobs`` > 1 (a
    reference does; a lambda does not). ``progress`` is called with the examples run so far,
    summed over the searches. ``stop_at``, ``all_findings`` and ``max_time_s`` (wall
    seconds) apply to each search: each ends at its own first finding (by default), so the
    merged report still depends on the seeds and budgets only. Raises what a search raises."""
    options = {"stop_at": stop_at, "all_findings": all_findings, "max_time_s": max_time_s}
    if jobs <= 1:
        return run_check(processor, base, max_examples=max_examples, seed=seed, database=database, key=key,
                         progress=progress, **options)
    from acksim.capacity.executors import pool_of
    from acksim.interrupts import guarded

    shares = budgets(max_examples, jobs)
    started = time.monotonic()
    counts, queue, manager = [0] * len(shares), None, None
    if progress is not None:
        import multiprocessing

        manager = multiprocessing.Manager()
        queue = manager.Queue()
    try:
        with pool_of(len(shares)) as pool:
            futures = [pool.submit(guarded, _search, processor, base, share, search_seed(seed, i), database, key,
                                   options, queue, i) for i, share in enumerate(shares)]
            pending = set(futures)
            while pending:
                _done, pending = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
                if queue is not None:
                    while not queue.empty():
                        i, n = queue.get()
                        counts[i] = max(counts[i], n)
                    progress(sum(counts))
            reports = [f.result() for f in futures]
    finally:
        if manager is not None:
            manager.shutdown()
    merged = merge(reports)
    merged.seconds = time.monotonic() - started
    return merged


def run_checks_on_dask(processor: str, base: Scenario, *, address: str, jobs: int | None = None,
                       max_examples: int = 500, seed: int = 0, database: Path | None = None, key: str = "",
                       stop_at: frozenset[str] | None = None, all_findings: bool = False,
                       max_time_s: float | None = None) -> CheckReport:
    """``run_checks`` on the Dask cluster whose scheduler is at ``address``: the same
    searches (seeds ``search_seed(seed, i)``, budgets ``budgets(max_examples, jobs)``), each a
    task on a worker, merged the same way, so the report is the one ``run_checks`` gives for
    the same ``jobs`` (without a shared ``database``: each worker reads and writes the folder
    at that path on its own machine). ``jobs`` None: one search per thread of the cluster's
    workers. ``processor`` must be a reference (it travels to the workers). Raises what a
    search raises, and what ``distributed`` raises for a scheduler it cannot reach."""
    from distributed import Client

    options = {"stop_at": stop_at, "all_findings": all_findings, "max_time_s": max_time_s}
    started = time.monotonic()
    with Client(address) as client:
        if jobs is None:
            jobs = max(sum(client.nthreads().values()), 1)
        shares = budgets(max_examples, jobs)
        futures = [client.submit(_search, processor, base, share, search_seed(seed, i), database, key, options,
                                 None, i, pure=False) for i, share in enumerate(shares)]
        reports = client.gather(futures)
    merged = merge(reports)
    merged.seconds = time.monotonic() - started
    return merged


def _search(processor, base, share, seed, database, key, options, queue, job) -> CheckReport:
    """One search in a pool process; reports its example count on ``queue`` (or not, None)."""
    progress = (lambda n: queue.put((job, n))) if queue is not None else None
    return run_check(processor, base, max_examples=share, seed=seed, database=database, key=key,
                     progress=progress, **options)


def merge(reports: list[CheckReport]) -> CheckReport:
    """One report of several searches, in search order: examples, coverage and phases
    added, each kind of finding (with the settings it depends on) from the first search that
    found it (``seconds`` the sum),
    the ``first`` finding the one of the lowest-numbered search that found any (its example
    count and time are that search's), ``out_of_time`` if any search ran out of time."""
    out = CheckReport()
    for r in reports:
        out.examples += r.examples
        out.seconds += r.seconds
        out.coverage.update(r.coverage)
        out.phases.update(r.phases)
        for name, finding in r.findings.items():
            if name not in out.findings:
                out.findings[name] = finding
                out.depends[name] = r.depends.get(name, ())
        out.first = out.first or r.first
        out.out_of_time = out.out_of_time or r.out_of_time
    return out
