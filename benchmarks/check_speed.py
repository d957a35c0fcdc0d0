"""Benchmark: ``acksim check`` examples per wall-clock second on the default base, the hazard
coverage per example, and how ``--jobs N`` scales, measured in one run.

    python benchmarks/check_speed.py [--examples N] [--jobs N] [--seed S]

Prints, for one search in this process and for N searches on N processes (``run_checks``):
examples, wall seconds, examples/s, the share of examples that hit each hazard window, and
the ratio of the two rates (the scaling), next to the yardstick of the same run: how N copies
of a pure-Python busy loop scale on N processes here (on a machine shared with other work,
fewer cores are free than it has). The ratios, not the absolute rate, are what to compare
across machines. Wall-clock time is measured here only, never inside the model.
"""

from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ProcessPoolExecutor

from acksim.judges.hazards import HAZARDS
from acksim.model import process
from acksim.search.check import base_scenario
from acksim.search.parallel import default_jobs, run_checks


def measure(examples: int, jobs: int, seed: int):
    """(report, wall seconds) of a check of the reference on the default base."""
    started = time.perf_counter()
    report = run_checks("acksim.model.processor:process" if jobs > 1 else process, base_scenario(),
                        jobs=jobs, max_examples=examples, seed=seed)
    return report, time.perf_counter() - started


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


def line(label: str, report, seconds: float) -> str:
    """One line: examples, seconds, rate, coverage share per hazard window."""
    n = max(report.examples, 1)
    cover = " ".join(f"{name}={report.coverage[name] / n:.2f}" for name, _fn in HAZARDS)
    return (f"{label}: {report.examples} examples in {seconds:.2f} s -> {report.examples / seconds:.1f} examples/s; "
            f"coverage per example: {cover}")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--examples", type=int, default=400)
    p.add_argument("--jobs", type=int, default=default_jobs())
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    one, t1 = measure(args.examples, 1, args.seed)
    print(line("check --jobs 1", one, t1))
    if args.jobs > 1:
        many, tn = measure(args.examples, args.jobs, args.seed)
        print(line(f"check --jobs {args.jobs}", many, tn))
        scaling = (many.examples / tn) / (one.examples / t1)
        free = yardstick(args.jobs)
        print(f"scaling --jobs {args.jobs} / --jobs 1 = {scaling:.2f}x (examples/s); yardstick: {args.jobs} busy loops "
              f"scale {free:.2f}x here; check / yardstick = {scaling / free:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
