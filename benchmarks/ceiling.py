"""Benchmark: the most jobs/s any harness could give on a scenario, measured in this process:
the code under test's own cost per job plus the SimPy events the world steps per job, with
the harness itself (greenlets, proxies, clocks, queue, history) costing nothing.

    python benchmarks/ceiling.py [SCENARIO] [--backend memory|sqlite ...] [--accounts N]
                                 [--repeat N]

``--repeat`` runs (default 3) of the scenario per backend (default: the memory stores, then
SQLite), the cheapest kept, with every public method of the stores and of their session
(``begin``, ``commit``, ``rollback``, ...) timed, so the figure covers what the design under test runs, as it runs it in this world:
the processor's store calls and unit of work with their real conflicts and snapshots, the
scheduler's and the outbox relay's store calls. The timer's own cost per call is measured and
taken off. The processor's own Python between two store calls is left out (it would raise the
floor): the figure is a lower bound on what running the code under test costs.

Then the bare SimPy M/M/c loop of ``benchmarks/throughput.py`` (same jobs and servers, the
``ratio`` of that benchmark) and the cheapest SimPy step (a timeout resuming a bare loop,
``benchmarks/floor.py``), and per backend:

* the code under test, microseconds per job;
* SimPy steps per job (events the world stepped, not counting the waits ``acksim.world.skip``
  let pass in place) at the cheapest step's cost;
* the ceiling: 1e6 / (both) jobs/s, and as a ratio to the bare loop in the same run;
* the run itself, instrumented: jobs per CPU second (slower than uninstrumented).

Wall-clock time is measured here only, never in the model; no figure is asserted.
"""

from __future__ import annotations

import argparse
import gc
import inspect
import sys
import time
from contextlib import contextmanager
from typing import Iterator

import simpy

from floor import best_us, simpy_timeouts
from throughput import bare_mmc, with_backend

import acksim.world.skip as skip
from acksim.cli.main import DEFAULT_SCENARIO
from acksim.model.memory_store import MemoryAccounts, MemoryCleanupStore, MemoryOutbox, MemorySession
from acksim.model.sqlite_store import SqliteAccounts, SqliteCleanupStore, SqliteOutbox, SqliteSession
from acksim.scenario import load
from acksim.scenarios import bundled
from acksim.world.core import World

STORE_CLASSES = {"memory": (MemoryAccounts, MemoryCleanupStore, MemoryOutbox, MemorySession),
                 "sqlite": (SqliteAccounts, SqliteCleanupStore, SqliteOutbox, SqliteSession)}


class Timer:
    """Seconds and calls spent inside the wrapped methods (``wrap``), timer cost included.
    A wrapped method called by another (an autocommitted write calls ``begin`` and
    ``commit``) is counted within the outer call only."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.calls = 0
        self.depth = 0

    def wrap(self, fn):
        clock = time.perf_counter

        def timed(*args, **kwargs):
            if self.depth:
                return fn(*args, **kwargs)
            self.depth = 1
            start = clock()
            try:
                return fn(*args, **kwargs)
            finally:
                self.seconds += clock() - start
                self.calls += 1
                self.depth = 0

        timed.__name__ = timed.__qualname__ = fn.__name__
        return timed


def timer_cost_s(n: int = 200_000) -> float:
    """Seconds the timer adds to each call, as the timer itself sees it (a wrapped no-op)."""
    best = None
    for _ in range(5):
        t = Timer()
        noop = t.wrap(lambda: None)
        for _ in range(n):
            noop()
        best = t.seconds / n if best is None else min(best, t.seconds / n)
    return best


@contextmanager
def timed_stores(backend: str, timer: Timer) -> Iterator[Timer]:
    """In the block, every public plain method of ``backend``'s store and session classes is
    timed by ``timer``; after it, each is the original function again."""
    undo = []
    try:
        for cls in STORE_CLASSES[backend]:
            for name, fn in list(vars(cls).items()):
                if not name.startswith("_") and inspect.isfunction(fn):
                    undo.append((cls, name, fn))
                    setattr(cls, name, timer.wrap(fn))
        yield timer
    finally:
        for cls, name, fn in undo:
            setattr(cls, name, fn)


@contextmanager
def counted_steps(cls: type) -> Iterator[list[int]]:
    """In the block, ``cls.step`` (a SimPy environment class) counts the events it processes
    in the list yielded (one int; a call on an empty schedule, which raises, is none); after
    it, ``step`` is the original again."""
    count = [0]
    real = cls.step

    def counted(env) -> None:
        if env._queue:  # SimPy's heap of scheduled events
            count[0] += 1
        real(env)

    cls.step = counted
    try:
        yield count
    finally:
        cls.step = real


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("scenario", nargs="?", default=str(bundled(DEFAULT_SCENARIO)))
    p.add_argument("--backend", action="append", choices=("memory", "sqlite"))
    p.add_argument("--accounts", type=int, default=None)
    p.add_argument("--repeat", type=int, default=3, help="runs per backend; the cheapest is kept")
    args = p.parse_args()
    base = load(args.scenario)
    per_call = timer_cost_s()
    rows = []
    for backend in args.backend or ["memory", "sqlite"]:
        scenario = with_backend(base, backend, args.accounts)
        best = None
        for _ in range(args.repeat):
            gc.collect()
            with timed_stores(backend, Timer()) as timer, counted_steps(skip.Environment) as steps:
                world = World(scenario)
                start_cpu = time.process_time()
                outcome = world.run()
                cpu = time.process_time() - start_cpu
                world.close()
            jobs = sum(1 for r in outcome.history if r.kind == "published")
            row = (backend, jobs, timer.calls, timer.seconds - timer.calls * per_call, steps[0], cpu)
            best = row if best is None or row[3] < best[3] else best
            del outcome, world
        rows.append(best)
    jobs, servers = rows[0][1], scenario.workers.count
    bare_s = min(bare_mmc(jobs, servers) for _ in range(5))  # the best of 5, as for the steps
    bare_rate = jobs / bare_s
    step_us = best_us(simpy_timeouts, 100_000)  # the cheapest step: a timeout resuming a bare loop
    print(f"timer cost {per_call * 1e9:.0f} ns a call (taken off); bare M/M/{servers}: {bare_rate:,.0f} jobs/s "
          f"({bare_steps_per_job(jobs, servers):.2f} steps a job); cheapest SimPy step (a timeout) {step_us:.2f} us")
    for backend, jobs, calls, code_s, stepped, cpu in rows:
        code_us, steps_us = code_s / jobs * 1e6, stepped / jobs * step_us
        ceiling = 1e6 / (code_us + steps_us)
        print(f"{backend:<7} {jobs} jobs: code under test {code_us:.1f} us/job ({calls / jobs:.1f} store and "
              f"unit-of-work calls a job) + SimPy {stepped / jobs:.2f} steps/job >= {steps_us:.1f} us/job "
              f"-> ceiling {ceiling:,.0f} jobs/s = {ceiling / bare_rate:.3f} of the bare loop "
              f"(the run itself, instrumented: {jobs / cpu:,.0f} jobs per cpu s)")
    return 0


def bare_steps_per_job(jobs: int, servers: int) -> float:
    """SimPy steps a job of ``bare_mmc`` takes (counted on a run of ``jobs`` jobs)."""
    with counted_steps(simpy.Environment) as steps:
        bare_mmc(jobs, servers)
    return steps[0] / jobs


if __name__ == "__main__":
    sys.exit(main())
