"""Benchmark: ``acksim check`` examples per wall-clock second on the default base, the hazard
coverage per example, and how ``--jobs N`` scales, measured in one run.

    python benchmarks/check_speed.py [--examples N] [--jobs N] [--seed S]

Prints, for one search in this process (``check --jobs 1``), examples, wall seconds,
examples/s, CPU milliseconds per example (this process and its supervised children) and the
share of examples that hit each hazard window. With ``--jobs N`` it then runs the N searches
``check --jobs N`` runs (the same seeds and budgets, ``acksim.search.parallel``) twice: one
after another in this process, and on N processes. Both runs try the same examples, so the
ratio of their rates is the scaling of the same work (the N seeds' examples need not cost
what the first seed's do: comparing ``--jobs N`` with ``--jobs 1`` mixes the two). Beside it,
the yardstick of the same run: how N copies of a pure-Python busy loop scale on N processes
here (on a machine shared with other work, fewer cores are free than it has). The ratios, not
the absolute rate, are what to compare across machines. Wall-clock time is measured here
only, never inside the model.

The first line is the search alone: the same Hypothesis search (strategy, settings, seed) with
a body that runs no world, so its CPU per example is what drawing and validating the examples
costs, and one over it the most examples a second one core can reach whatever the world costs.

The second line is the ceiling: the same examples' worlds run in this process with the
design's store and unit-of-work calls timed as ``benchmarks/ceiling.py`` times them, and
their SimPy steps counted at the cheapest step's cost (``benchmarks/floor.py``); the search
alone (wall clock here) plus both is the least an example can cost when the rest of the
harness costs nothing.

A search's examples depend on its seed, budget and base only (``acksim.search.constants``),
so the two runs of the N searches try the same examples.

A short search of another seed warms Hypothesis's and the strategies' caches first, so no
line pays that.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor

from ceiling import Timer, counted_steps, timed_stores, timer_cost_s
from floor import best_us, simpy_timeouts

import acksim.world.skip as skip
from acksim.judges.hazards import HAZARDS
from acksim.search.check import base_scenario, run_check, search_test
from acksim.search.parallel import budgets, default_jobs, merge, run_checks, search_seed
from acksim.world.core import World

REFERENCE = "acksim.model.processor:process"


def _cpu() -> float:
    """CPU seconds of this process and of its reaped children (supervised children, pools)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def measure(examples: int, jobs: int, seed: int, parallel: bool = True):
    """(report, wall seconds, CPU seconds) of a check of the reference on the default base:
    ``jobs`` searches as ``check --jobs`` splits them, on ``jobs`` processes (``parallel``) or
    one after another in this process."""
    started, cpu = time.perf_counter(), _cpu()
    if parallel or jobs == 1:
        report = run_checks(REFERENCE, base_scenario(), jobs=jobs, max_examples=examples, seed=seed)
    else:
        report = merge([run_check(REFERENCE, base_scenario(), max_examples=share, seed=search_seed(seed, i))
                        for i, share in enumerate(budgets(examples, jobs))])
    return report, time.perf_counter() - started, _cpu() - cpu


WARM_UP = 30  # examples of the search that warms the caches


def search_floor(examples: int, seed: int) -> tuple[int, float, float]:
    """(examples drawn, CPU seconds, wall seconds) of ``check --jobs 1``'s Hypothesis search
    on the default base with an empty body: every example drawn and validated, no world run,
    no judge."""
    drawn = 0

    def body(_scenario) -> None:
        nonlocal drawn
        drawn += 1

    search_test(body, base_scenario(), WARM_UP, seed + 1)()  # caches filled, not counted
    drawn = 0
    cpu, wall = _cpu(), time.perf_counter()
    search_test(body, base_scenario(), examples, seed)()
    return drawn, _cpu() - cpu, time.perf_counter() - wall


def world_floor(examples: int, seed: int) -> tuple[int, float, int]:
    """(worlds run, wall seconds in the design's store and unit-of-work calls, SimPy steps) of
    the examples of ``check --jobs 1``'s search on the default base, each world run in this
    process with its stores' and sessions' public methods timed as ``benchmarks/ceiling.py``
    times them (the design's callers only; the timer's cost and the collector's pauses taken
    off, so the figure errs low)."""
    timer, worlds = Timer(), [0]
    per_call = timer_cost_s()

    def body(scenario) -> None:
        worlds[0] += 1
        with timed_stores(scenario.stores.backend, timer):
            world = World(scenario)
            try:
                world.run()
            finally:
                world.close()

    with counted_steps(skip.Environment) as steps:
        search_test(body, base_scenario(), examples, seed)()
    return worlds[0], timer.figures(per_call)[0], steps[0]


def burn(n: int) -> int:
    """A pure-Python busy loop of ``n`` additions (the yardstick's unit of work)."""
    total = 0
    for i in range(n):
        total += i
    return total


def yardstick(jobs: int, n: int = 10_000_000) -> float:
    """How ``jobs`` busy loops on ``jobs`` processes scale against one (1.0: no free core)."""
    started = time.perf_counter()
    burn(n)
    one = time.perf_counter() - started
    with ProcessPoolExecutor(jobs) as pool:
        started = time.perf_counter()
        list(pool.map(burn, [n] * jobs))
        many = time.perf_counter() - started
    return jobs * one / many


def line(label: str, report, seconds: float, cpu: float) -> str:
    """One line: examples, seconds, rate, CPU per example, coverage share per hazard window."""
    n = max(report.examples, 1)
    cover = " ".join(f"{name}={report.coverage[name] / n:.2f}" for name, _fn in HAZARDS)
    return (f"{label}: {report.examples} examples in {seconds:.2f} s -> {report.examples / seconds:.1f} examples/s, "
            f"{cpu / n * 1e3:.1f} ms CPU an example; coverage per example: {cover}")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--examples", type=int, default=400, help="examples per line, at least 1")
    p.add_argument("--jobs", type=int, default=default_jobs())
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    if args.examples < 1 or args.jobs < 1:
        p.error("--examples and --jobs: at least 1")
    drawn, cpu, search_wall = search_floor(args.examples, args.seed)
    cpu = max(cpu, 0.01)  # the CPU clock counts in 10 ms ticks: a tiny search may read 0
    print(f"the search alone (no world): {drawn} examples, {cpu / drawn * 1e3:.2f} ms CPU an example -> "
          f"at most {drawn / cpu:.0f} examples/s on one core, whatever the world costs")
    worlds, code_s, steps = world_floor(args.examples, args.seed)
    worlds = max(worlds, 1)
    search_ms, code_ms = search_wall / drawn * 1e3, code_s / worlds * 1e3
    steps_ms = steps / worlds * best_us(simpy_timeouts, 100_000) / 1e3
    print(f"ceiling (wall clock): the search alone {search_ms:.2f} ms + the design's store and unit-of-work "
          f"calls {code_ms:.2f} ms + SimPy {steps / worlds:.0f} steps >= {steps_ms:.2f} ms an example ({worlds} "
          f"worlds in this process) -> at most {1e3 / (search_ms + code_ms + steps_ms):.0f} examples/s with the "
          "rest of the harness costing nothing")
    print(line("check --jobs 1", *measure(args.examples, 1, args.seed)))
    if args.jobs > 1:
        seq, t_seq, c_seq = measure(args.examples, args.jobs, args.seed, parallel=False)
        print(line(f"the {args.jobs} searches of --jobs {args.jobs}, one after another", seq, t_seq, c_seq))
        many, tn, cn = measure(args.examples, args.jobs, args.seed)
        print(line(f"check --jobs {args.jobs}", many, tn, cn))
        scaling = (many.examples / tn) / (seq.examples / t_seq)
        free = yardstick(args.jobs)
        print(f"scaling --jobs {args.jobs} / the same searches one after another = {scaling:.2f}x (examples/s); "
              f"yardstick: {args.jobs} busy loops scale {free:.2f}x here; check / yardstick = {scaling / free:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
