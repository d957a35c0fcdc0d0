"""Benchmark: the floor of one store call in this design, measured in this process, and the
jobs/s ceiling it implies.

    python benchmarks/floor.py [--calls N] [--calls-per-job 18] [--events-per-job 21]

Prints, in microseconds each (the best of 5 rounds of ``--calls`` repetitions):

* a greenlet switch pair (into a greenlet and back: what every store call boundary costs);
* one SimPy timeout event, scheduled and stepped (a process yielding ``env.timeout``);
* one time-machine shift (the virtual wall clock moving to a new instant);
* the world's whole path for one store call, without the store and without SimPy: a
  processor calling a no-op store through ``Attempt`` in session-mode ``VirtualClock`` and
  a process image, the harness stepping it to the "before" and "after" boundaries;

then the jobs/s ceiling each level implies at ``--calls-per-job`` store calls and
``--events-per-job`` SimPy events per job (the bundled day: 18 and 21), with no store, no
model and no history at all. Wall-clock time is measured here only, never in the model; no
figure is asserted.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
import time

import simpy
from greenlet import greenlet
import time_machine

from acksim.world.interleave import Attempt
from acksim.world.vclock import VirtualClock

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


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--calls", type=int, default=100_000)
    p.add_argument("--calls-per-job", type=float, default=18.0)
    p.add_argument("--events-per-job", type=float, default=21.0)
    args = p.parse_args()
    n, calls, events = args.calls, args.calls_per_job, args.events_per_job
    switch = best_us(switch_pair, n)
    event = best_us(simpy_timeouts, n)
    shift = best_us(shifts, n)
    call = best_us(store_calls, n)
    print(f"greenlet switch pair          {switch:7.3f} us")
    print(f"SimPy timeout (schedule+step) {event:7.3f} us")
    print(f"time-machine shift            {shift:7.3f} us")
    print(f"our store call path           {call:7.3f} us  (2 boundaries, clock + watchdog, no store)")
    bare = calls * 2 * switch + events * event + calls * shift
    ours = calls * call + events * event
    print(f"ceiling, primitives only      {1e6 / bare:9,.0f} jobs/s  "
          f"({calls:g} x (2 switch pairs + 1 shift) + {events:g} events = {bare:.1f} us/job)")
    print(f"ceiling, our call path        {1e6 / ours:9,.0f} jobs/s  "
          f"({calls:g} x call path + {events:g} events = {ours:.1f} us/job; no store, model, history)")
    print(f"ratio   call path / primitives = {ours / bare:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
