"""Benchmark: simulated jobs per wall-clock second on a scenario, and the ratio to a bare
SimPy M/M/c loop with the same number of jobs and servers, run in the same process; the
history's memory per job.

    python benchmarks/throughput.py [SCENARIO] [--backend memory|sqlite ...] [--repeat N]
                                    [--accounts N]

Prints one line per backend (default: the memory stores, then SQLite) with jobs/s, the
process CPU seconds of the best run (steadier than wall time on a shared machine), records
and the history's bytes per job (every record and every object it holds, each object counted
once), one line for the bare SimPy loop, and the ratio; the ratio, not the absolute speed, is
what to compare across machines. ``--accounts`` scales the scenario's workload (a
million-job day: ``--accounts 810000 --backend memory``). Wall-clock time is measured here
only, never inside the model.
"""

from __future__ import annotations

import argparse
import gc
import random
import resource
import sys
import time

import simpy

from acksim.cli.main import DEFAULT_SCENARIO
from acksim.scenario import ScenarioError, load, parse
from acksim.scenarios import bundled
from acksim.world.core import World


def bare_mmc(jobs: int, servers: int, seed: int = 1) -> float:
    """Wall seconds for a bare SimPy M/M/c queue serving ``jobs`` customers."""
    rng = random.Random(seed)
    env = simpy.Environment()
    counter = simpy.Resource(env, capacity=servers)

    def customer():
        with counter.request() as req:
            yield req
            yield env.timeout(rng.expovariate(1.0))

    def source():
        for _ in range(jobs):
            env.process(customer())
            yield env.timeout(rng.expovariate(servers * 0.8))

    env.process(source())
    start = time.perf_counter()
    env.run()
    return time.perf_counter() - start


def history_bytes(history) -> int:
    """Bytes held by ``history``: the tuple, each record and each distinct object a record
    refers to (floats, strings; small ints and None cost nothing extra), counted once."""
    seen: set[int] = set()
    total = sys.getsizeof(history)
    for rec in history:
        total += sys.getsizeof(rec)
        for value in rec:  # its fields
            if value is None or isinstance(value, bool) or (isinstance(value, int) and -5 <= value <= 256):
                continue
            if id(value) not in seen:
                seen.add(id(value))
                total += sys.getsizeof(value)
    return total


def process_peak() -> int:
    """This process's peak resident memory so far, in bytes (``ru_maxrss``: KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def with_backend(scenario, backend: str, accounts: int | None):
    """``scenario`` on the ``backend`` stores (and ``accounts`` accounts, when given)."""
    data = scenario.model_dump(exclude_none=True)
    data["stores"]["backend"] = backend
    if accounts is not None:
        data["workload"]["accounts"] = accounts
        data["run"]["max_records"] = max(data["run"].get("max_records", 0), accounts * 40)
        data["run"]["max_events"] = max(data["run"].get("max_events", 0), accounts * 200)
    return parse(data, "benchmark")


def parse_args(description: str, repeat: int, repeat_help: str | None = None):
    """The command line of a benchmark that runs a scenario on each backend: (the arguments,
    the parser, backend name -> scenario). Bad input exits 2 with one line (``--repeat`` or
    ``--accounts`` below 1, a scenario file that is missing or invalid)."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("scenario", nargs="?", default=str(bundled(DEFAULT_SCENARIO)))
    p.add_argument("--backend", action="append", choices=("memory", "sqlite"))
    p.add_argument("--repeat", type=int, default=repeat, help=repeat_help)
    p.add_argument("--accounts", type=int, default=None)
    args = p.parse_args()
    for name in ("repeat", "accounts"):
        value = getattr(args, name)
        if value is not None and value < 1:
            p.error(f"--{name}: at least 1, got {value}")
    try:
        base = load(args.scenario)
        return args, p, {b: with_backend(base, b, args.accounts) for b in args.backend or ["memory", "sqlite"]}
    except ScenarioError as exc:
        p.error(str(exc))


def main() -> int:
    args, p, scenarios = parse_args(__doc__.splitlines()[0], repeat=1)
    rates = {}
    for backend, scenario in scenarios.items():
        best = best_cpu = None
        for _ in range(args.repeat):
            world = outcome = None  # the previous run's world and history go (they refer to each
            gc.collect()            # other: a collection frees them) before the next is built
            world = World(scenario)
            start, start_cpu = time.perf_counter(), time.process_time()
            outcome = world.run()
            elapsed, cpu = time.perf_counter() - start, time.process_time() - start_cpu
            world.close()
            if best is None or elapsed < best:
                best, best_cpu = elapsed, cpu
        peak = process_peak()  # before history_bytes, whose own set of ids is large
        jobs = sum(1 for r in outcome.history if r.kind == "published")
        if not jobs:
            p.error(f"{args.scenario}: the run published no job, so there is no rate to measure")
        rates[backend] = jobs / best
        per_job = history_bytes(outcome.history) / jobs
        print(f"acksim  {scenario.name}: {jobs} jobs, {len(outcome.history)} records in {best:.2f} s "
              f"({best_cpu:.2f} cpu s, {jobs / best_cpu:,.0f} jobs per cpu s) "
              f"-> {jobs / best:,.0f} jobs/s ({backend} stores); history {per_job:,.0f} bytes/job, "
              f"process peak {peak / 2**30:.2f} GiB ({peak / jobs:,.0f} bytes/job)", flush=True)
        del outcome
    bare = min(bare_mmc(jobs, scenario.workers.count) for _ in range(args.repeat))
    print(f"simpy   bare M/M/{scenario.workers.count}: {jobs} jobs in {bare:.3f} s -> {jobs / bare:,.0f} jobs/s")
    for backend, rate in rates.items():
        print(f"ratio   acksim ({backend}) / bare SimPy = {rate / (jobs / bare):.4f} "
              f"(acksim is {(jobs / bare) / rate:.1f}x slower)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
