"""Benchmark: the floor of one store call boundary in this design, measured in this process,
and the jobs/s ceiling it implies.

    python benchmarks/floor.py [--calls N]

Prints, in microseconds each (the best of 5 rounds of ``--calls`` repetitions):

* a greenlet switch pair (into a greenlet and back: what every store call boundary costs);
* one SimPy timeout event, scheduled and stepped (a process yielding ``env.timeout``);
* one time-machine shift (the virtual wall clock moving to a new instant);
* the world's whole path for one boundary, without the store and without SimPy: a processor
  calling a no-op store through ``Attempt`` in a session-mode ``VirtualClock``, the harness
  stepping it to the "before" and "after" boundaries of each call (two per call, the clock
  shifted at each);

then the jobs/s ceiling each level implies for the bundled day's counts per job (``PROFILES``:
switch pairs, SimPy events and clock shifts per job, counted on main and on this branch),
with no store, no model, no queue and no history at all. Wall-clock time is measured here
only, never in the model; no figure is asserted.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
import time

import simpy
from greenlet import greenlet
import time_machine

from acksim.world.sandbox.interleave import Attempt
from acksim.world.sandbox.vclock import VirtualClock

ROUNDS = 5


def best_us(fn, n: int) -> float:
    """The best of ``ROUNDS`` runs of ``fn(n)``, in microseconds per repetition."""
    best = None
    for _ in range(ROUNDS):
        start = time.perf_counter()
        fn(n)
        elapsed = time.perf_counter() - start
        best = elapsed if best is None else min(best, elapsed)
    return best / n * 1e6


def switch_pair(n: int) -> None:
    """``n`` switches into a greenlet and back."""
    def body():
        while True:
            main.switch()
    main = greenlet.getcurrent()
    g = greenlet(body)
    for _ in range(n):
        g.switch()


def simpy_timeouts(n: int) -> None:
    """``n`` SimPy timeouts of one process, each scheduled and stepped."""
    env = simpy.Environment()

    def proc():
        timeout = env.timeout
        for _ in range(n):
            yield timeout(0.001)

    env.process(proc())
    env.run()


def shifts(n: int) -> None:
    """``n`` time-machine shifts of a travel that does not tick."""
    with time_machine.travel(1_700_000_000, tick=False) as traveller:
        for _ in range(n):
            traveller.shift(0.001)


class _NoOpStore:
    def get(self, key):
        return None


def store_calls(n: int) -> None:
    """``n`` store calls of a processor run by ``Attempt``: each stepped to its "before" and
    "after" boundaries inside a session clock entered at a new instant every call."""
    def processor(job, store):
        for i in range(n):
            store.get(i)

    clock = VirtualClock(dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc), session=True)
    now = [0.0]
    with clock:
        attempt = Attempt(processor, None, {"store": _NoOpStore()}, clock=clock, now=lambda: now[0])
        step = attempt.step()
        while step.__class__.__name__ != "Finished":
            now[0] += 0.001
            step = attempt.step()


# per job on the bundled day (scenarios/game-renewal.toml, memory stores, 24,617 jobs):
# (greenlet switch pairs, SimPy events stepped, time-machine shifts)
PROFILES = {"main": (18.28, 20.96, 10.91),  # 450,036 switches, 515,995 events, 268,599 shifts
            "skip + stop_after": (11.37, 17.38, 10.91)}  # 279,909 switches, 427,750 events (88,245 skipped)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--calls", type=int, default=100_000)
    args = p.parse_args()
    n = args.calls
    switch = best_us(switch_pair, n)
    event = best_us(simpy_timeouts, n)
    shift = best_us(shifts, n)
    boundary = best_us(store_calls, n) / 2  # two boundaries per call
    print(f"greenlet switch pair          {switch:7.3f} us")
    print(f"SimPy timeout (schedule+step) {event:7.3f} us")
    print(f"time-machine shift            {shift:7.3f} us")
    print(f"our boundary path             {boundary:7.3f} us  (switch pair, clock enter/exit + shift, watchdog)")
    print(f"ratio   our boundary path / switch pair = {boundary / switch:.2f}")
    for name, (pairs, events, shifted) in PROFILES.items():
        bare = pairs * switch + events * event + shifted * shift
        ours = pairs * boundary + events * event
        print(f"ceiling [{name}: {pairs:g} switch pairs, {events:g} events, {shifted:g} shifts per job]  "
              f"primitives {1e6 / bare:,.0f} jobs/s, our path {1e6 / ours:,.0f} jobs/s "
              f"(no store, model, queue, history)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
