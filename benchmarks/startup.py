"""Benchmark: how long the command line takes to answer before it does any work
(``acksim presets``, ``acksim --help``, a bad-input error, ``acksim --version``), as the
median wall time of whole processes and its ratio to a bare ``python -c pass``.

    python benchmarks/startup.py [--repeat N]

Wall-clock time is measured here only; the test suite asserts what these commands import
(tests/packaging/test_entry_points.py), not how long they take.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

COMMANDS = {
    "presets": ["-m", "acksim", "presets"],
    "--help": ["-m", "acksim", "--help"],
    "bad input": ["-m", "acksim", "run", "/nonexistent/scenario.toml"],
    "--version": ["-m", "acksim", "--version"],
}


def wall(argv: list[str], repeat: int) -> float:
    """The median wall seconds of ``repeat`` runs of ``python argv``."""
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        subprocess.run([sys.executable, *argv], capture_output=True, check=False)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=7)
    args = p.parse_args()
    bare = wall(["-c", "pass"], args.repeat)
    print(f"bare interpreter: {bare:.3f} s")
    for name, argv in COMMANDS.items():
        t = wall(argv, args.repeat)
        print(f"acksim {name}: {t:.3f} s ({t / bare:.1f}x the bare interpreter)")


if __name__ == "__main__":
    main()
