"""Benchmark: the most jobs/s a harness that steps this world's SimPy events could give on a
scenario, measured in this process: what the design under test's own store and unit-of-work
calls cost per job, plus those SimPy events at the cheapest step's cost, with everything else
acksim does (greenlets, proxies, clocks, queue, history, judges) costing nothing.

    python benchmarks/ceiling.py [SCENARIO] [--backend memory|sqlite ...] [--accounts N]
                                 [--repeat N]

``--repeat`` runs (default 3) of the scenario per backend (default: the memory stores, then
SQLite), the cheapest kept. In each, every public method of the stores and of their session
(``begin``, ``commit``, ``rollback``, ...) is timed and sorted by who called it
(``caller_bucket``): the design under test (the processor's calls, through the proxies; the
worker's unit of work; the outbox relay; the scheduler), with their real conflicts and
snapshots, or not (the simulated players' writes, which a harness could seed more cheaply;
the harness's own reads and the actors' idle checks). Only the design's calls make the
ceiling. The figure errs low, so the ceiling errs high: the timer's cost is measured before
each run with the costliest call shape and taken off every call, nested calls included; the
cyclic collector's pauses are taken off; the processor's own Python between two store calls
is left out. Timing is wall-clock: a run that did not have a whole core says so.

Then the bare SimPy M/M/c loop of ``benchmarks/throughput.py`` (same jobs and servers, the
``ratio`` of that benchmark) and the cheapest SimPy step (a timeout resuming a bare loop on
a small heap, ``benchmarks/floor.py``; the world's heap is larger), and per backend:

* the design's calls, microseconds per job, and every caller's;
* SimPy steps per job (events the world stepped, not counting the waits ``acksim.world.skip``
  let pass in place) at the cheapest step's cost; the count is this world's event design
  (process starts and ends, queue timers), not a floor for every possible design;
* the ceiling: 1e6 / (both) jobs/s, and as a ratio to the bare loop in the same run;
* the run itself, instrumented: jobs per CPU second (slower than uninstrumented).

Wall-clock time is measured here only, never in the model; no figure is asserted.
"""

from __future__ import annotations

import functools
import gc
import inspect
import sys
import time
from contextlib import contextmanager
from typing import Iterator

import simpy

from floor import best_us, simpy_timeouts
from throughput import bare_mmc, parse_args

import acksim.world.skip as skip
from acksim.model.memory_store import MemorySession
from acksim.model.memory_tables import MemoryAccounts, MemoryCleanupStore, MemoryOutbox
from acksim.model.sql_stores import SqlAccounts, SqlCleanupStore, SqlOutbox, SqlSession
from acksim.model.sqlite_store import SqliteSession
from acksim.world.core import World

STORE_CLASSES = {"memory": (MemoryAccounts, MemoryCleanupStore, MemoryOutbox, MemorySession),
                 # the SQL stores and session, written once for SQLite and PostgreSQL, and SQLite's own part
                 "sqlite": (SqlAccounts, SqlCleanupStore, SqlOutbox, SqlSession, SqliteSession)}

# who made a store call, by the module that called it: the design under test (the processor's
# calls come through the proxies of ``acksim.world.sandbox.store_proxy``; the worker's attempt
# (``acksim.world.attempt``) and its crash clean-up own the unit of work; the outbox relay and the scheduler are the design's other actors) or not: the
# simulated players (``acksim.world.actors.renewals``: creating accounts, renewing, deleting), which
# a harness could seed and change far more cheaply, and the harness's own reads
DESIGN = ("processor", "unit of work", "outbox relay", "scheduler")
_CALLERS = {"store_proxy.py": "processor", "attempt.py": "unit of work", "worker.py": "unit of work", "outbox_relay.py": "outbox relay",
            "scheduler.py": "scheduler", "renewals.py": "players"}
# methods the actors call for the harness, not for the design: the writes a run committed
# outside a unit of work (the harness records them), closing a session when its actor ends
HARNESS_METHODS = frozenset({"take_autocommitted", "close"})


def caller_bucket(filename: str, function: str, method: str) -> str:
    """Who called store ``method`` from ``function`` in file ``filename``: one of ``DESIGN``,
    "players", or "harness" (``HARNESS_METHODS``, the actors' ``idle`` checks, and every other
    caller, such as the final state the judges read)."""
    if method in HARNESS_METHODS or function == "idle":
        return "harness"
    return _CALLERS.get(filename.rsplit("/", 1)[-1], "harness")


class Timer:
    """Seconds and calls spent inside the wrapped methods (``wrap``), by who called them
    (``buckets``: ``caller_bucket`` -> [seconds, calls, nested calls]), the timer's own cost
    included, the cyclic garbage collector's pauses taken off (``gc_seconds``: kept by
    ``timed_stores``). A wrapped method called by another (an autocommitted write calls
    ``begin`` and ``commit``) is counted within the outer call only, as a nested call of its
    caller's bucket. One thread only."""

    def __init__(self) -> None:
        self.buckets: dict[str, list] = {}  # who -> [seconds, calls, nested calls]
        self.depth = 0
        self._outer: list = [0.0, 0, 0]  # the bucket of the call running
        self.gc_seconds = 0.0
        self._gc_started = 0.0
        self._who: dict[tuple, str] = {}

    def wrap(self, fn):
        clock, frame, method = time.perf_counter, sys._getframe, fn.__name__

        @functools.wraps(fn)
        def timed(*args, **kwargs):
            if self.depth:
                self._outer[2] += 1
                return fn(*args, **kwargs)
            code = frame(1).f_code
            key = (code.co_filename, code.co_name, method)
            who = self._who.get(key)
            if who is None:
                who = self._who[key] = caller_bucket(*key)
            bucket = self.buckets.get(who)
            if bucket is None:
                bucket = self.buckets[who] = [0.0, 0, 0]
            self.depth, self._outer = 1, bucket
            paused = self.gc_seconds
            start = clock()
            try:
                return fn(*args, **kwargs)
            finally:
                elapsed = clock() - start - (self.gc_seconds - paused)
                self.depth = 0
                bucket[0] += elapsed
                bucket[1] += 1

        return timed

    def on_gc(self, phase: str, _info: dict) -> None:
        """A ``gc.callbacks`` hook: the collector's pauses, in seconds."""
        if phase == "start":
            self._gc_started = time.perf_counter()
        else:
            self.gc_seconds += time.perf_counter() - self._gc_started

    def figures(self, per_call_s: float, buckets=DESIGN) -> tuple[float, int]:
        """(seconds, calls) of ``buckets``, ``per_call_s`` (``timer_cost_s``) taken off each of
        their calls, nested ones included (the figure errs low)."""
        picked = [self.buckets[b] for b in buckets if b in self.buckets]
        seconds, calls, nested = (sum(b[i] for b in picked) for i in range(3))
        return max(seconds - (calls + nested) * per_call_s, 0.0), calls


def timer_cost_s(n: int = 100_000) -> float:
    """Seconds the timer adds to each call, as the timer itself sees it: the median of 5 rounds
    of a wrapped no-op called with two keywords (the costliest call shape of the stores, so
    taking it off every call errs towards a lower figure, a higher ceiling)."""
    rounds = []
    for _ in range(5):
        t = Timer()
        noop = t.wrap(lambda *, a, b: None)
        for _ in range(n):
            noop(a=1, b=2)
        # the no-op's caller is this module, no actor of a world: its bucket is "harness"
        seconds, calls = t.figures(0.0, buckets=("harness",))
        rounds.append(seconds / calls)
    return sorted(rounds)[2]


@contextmanager
def timed_stores(backend: str, timer: Timer) -> Iterator[Timer]:
    """In the block, every public plain method of ``backend``'s store and session classes is
    timed by ``timer`` and the collector's pauses are taken off; after it, each method is the
    original function again."""
    undo = []
    gc.callbacks.append(timer.on_gc)
    try:
        for cls in STORE_CLASSES[backend]:
            for name, fn in list(vars(cls).items()):
                if not name.startswith("_") and inspect.isfunction(fn):
                    undo.append((cls, name, fn))
                    setattr(cls, name, timer.wrap(fn))
        yield timer
    finally:
        gc.callbacks.remove(timer.on_gc)
        for cls, name, fn in undo:
            setattr(cls, name, fn)


@contextmanager
def counted_steps(cls: type) -> Iterator[list[int]]:
    """In the block, ``cls.step`` (a SimPy environment class) counts the events it processes
    in the list yielded (one int; a call on an empty schedule, which raises, is none); after
    it, ``step`` is the original again."""
    count = [0]
    own = "step" in vars(cls)
    real = cls.step

    def counted(env) -> None:
        if env._queue:  # SimPy's heap of scheduled events
            count[0] += 1
        real(env)

    cls.step = counted
    try:
        yield count
    finally:
        if own:
            cls.step = real
        else:
            del cls.step


def main() -> int:
    args, p, scenarios = parse_args(__doc__.splitlines()[0], repeat=3,
                                    repeat_help="runs per backend; the cheapest is kept")
    rows = []
    for backend, scenario in scenarios.items():
        best = None
        for _ in range(args.repeat):
            per_call = timer_cost_s()  # just before the run: the machine as it is now
            gc.collect()
            with timed_stores(backend, Timer()) as timer, counted_steps(skip.Environment) as steps:
                world = World(scenario)
                start, start_cpu = time.perf_counter(), time.process_time()
                outcome = world.run()
                wall, cpu = time.perf_counter() - start, time.process_time() - start_cpu
                world.close()
            jobs = sum(1 for r in outcome.history if r.kind == "published")
            if not jobs:
                p.error(f"{args.scenario}: the run published no job, so there is no cost a job to measure")
            code_s, calls = timer.figures(per_call)
            others = {b: timer.figures(per_call, (b,))[0] / jobs * 1e6 for b in sorted(timer.buckets)}
            row = (backend, jobs, calls, code_s, steps[0], cpu, wall, per_call, others)
            best = row if best is None or row[3] < best[3] else best
            del outcome, world
        rows.append(best)
    jobs, servers = rows[0][1], next(iter(scenarios.values())).workers.count
    bare_s = min(bare_mmc(jobs, servers) for _ in range(5))  # the best of 5, as for the steps
    bare_rate = jobs / bare_s
    step_us = best_us(simpy_timeouts, 100_000)  # the cheapest step: a timeout resuming a bare loop
    print(f"bare M/M/{servers}: {bare_rate:,.0f} jobs/s ({bare_steps_per_job(jobs, servers):.2f} steps a job); "
          f"cheapest SimPy step (a timeout) {step_us:.2f} us")
    for backend, jobs, calls, code_s, stepped, cpu, wall, per_call, others in rows:
        code_us, steps_us = code_s / jobs * 1e6, stepped / jobs * step_us
        ceiling = 1e6 / (code_us + steps_us)
        print(f"{backend:<7} {jobs} jobs: the design's store and unit-of-work calls {code_us:.1f} us/job "
              f"({calls / jobs:.1f} calls a job) + SimPy {stepped / jobs:.2f} steps/job >= {steps_us:.1f} us/job "
              f"-> ceiling {ceiling:,.0f} jobs/s = {ceiling / bare_rate:.3f} of the bare loop")
        design = ", ".join(f"{b} {others[b]:.1f}" for b in DESIGN if b in others)
        rest = ", ".join(f"{b} {us:.1f}" for b, us in others.items() if b not in DESIGN)
        print(f"        us/job by caller: the design's {design}; not counted: {rest} (timer cost "
              f"{per_call * 1e9:.0f} ns a call taken off; the run itself, instrumented: {jobs / cpu:,.0f} "
              "jobs per cpu s)")
        if cpu < 0.95 * wall:
            print(f"        warning: the run had {cpu / wall:.0%} of a core (another process, or waiting on "
                  "the disk): its wall-clock figures are high")
    return 0


def bare_steps_per_job(jobs: int, servers: int) -> float:
    """SimPy steps a job of ``bare_mmc`` takes (counted on a run of ``jobs`` jobs)."""
    with counted_steps(simpy.Environment) as steps:
        bare_mmc(jobs, servers)
    return steps[0] / jobs


if __name__ == "__main__":
    sys.exit(main())
