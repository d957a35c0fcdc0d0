"""Benchmark: simulated jobs per wall-clock second on a scenario, and the ratio to a bare
SimPy M/M/c loop with the same number of jobs and servers, run in the same process.

    python benchmarks/throughput.py [SCENARIO] [--repeat N]

Prints one line per measurement and the ratio; the ratio, not the absolute speed, is what to
compare across machines. Wall-clock time is measured here only, never inside the model.
"""

from __future__ import annotations

import argparse
import random
import sys
import time

import simpy

from acksim.cli.main import DEFAULT_SCENARIO
from acksim.scenario import load
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


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("scenario", nargs="?", default=str(bundled(DEFAULT_SCENARIO)))
    p.add_argument("--repeat", type=int, default=1)
    args = p.parse_args()
    scenario = load(args.scenario)
    best = None
    for _ in range(args.repeat):
        world = World(scenario)
        start = time.perf_counter()
        outcome = world.run()
        elapsed = time.perf_counter() - start
        world.close()
        best = elapsed if best is None else min(best, elapsed)
    jobs = sum(1 for r in outcome.history if r.kind == "published")
    bare = min(bare_mmc(jobs, scenario.workers.count) for _ in range(args.repeat))
    print(f"acksim  {scenario.name}: {jobs} jobs, {len(outcome.history)} records in {best:.2f} s "
          f"-> {jobs / best:,.0f} jobs/s ({scenario.stores.backend} stores)")
    print(f"simpy   bare M/M/{scenario.workers.count}: {jobs} jobs in {bare:.3f} s -> {jobs / bare:,.0f} jobs/s")
    print(f"ratio   acksim / bare SimPy = {bare / best:.4f} (acksim is {best / bare:.1f}x slower)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
