"""The instrumentation of ``benchmarks/ceiling.py`` (and of ``check_speed.py``'s ceiling line):
it times the design's store calls without changing what the world does, sorts them by caller,
counts a nested call once, takes the collector's pauses off, and puts every method back."""

from __future__ import annotations

import gc
import sys
from pathlib import Path

import pytest
import simpy

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from ceiling import DESIGN, STORE_CLASSES, Timer, caller_bucket, counted_steps, timed_stores  # noqa: E402

from acksim.model.memory_store import MemoryDatabase, MemorySession  # noqa: E402
from acksim.model.store_api import DbOptions  # noqa: E402
from acksim.scenario import load, parse  # noqa: E402
from acksim.scenarios import bundled  # noqa: E402
from acksim.world.core import World  # noqa: E402


def _history(backend: str) -> tuple:
    data = load(bundled("smoke.toml")).model_dump(exclude_none=True)
    data["stores"]["backend"] = backend
    world = World(parse(data, "smoke"))
    try:
        return tuple(world.run().history)
    finally:
        world.close()


def _methods(backend: str) -> dict:
    return {(cls, name): fn for cls in STORE_CLASSES[backend] for name, fn in vars(cls).items()}


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
def test_the_timed_run_is_the_same_run_sorted_by_caller_and_every_method_is_put_back(backend):
    before = _methods(backend)
    plain = _history(backend)
    with timed_stores(backend, Timer()) as timer:
        timed = _history(backend)
    assert timed == plain
    assert len(plain) > 1000
    assert _methods(backend) == before
    calls = {who: bucket[1] for who, bucket in timer.buckets.items()}
    attempts = sum(1 for r in plain if r.kind == "attempt_started")
    committed = sum(1 for r in plain if r.kind == "tx_committed")
    rolled_back = sum(1 for r in plain if r.kind == "tx_rolled_back")
    # the worker's unit of work: a begin for each attempt, a commit or a rollback for each
    assert calls["unit of work"] == attempts + committed + rolled_back
    # the reference processor reads the account first in every attempt
    assert calls["processor"] >= attempts > 0
    # the players created the accounts (one put each), and the final state was read
    created = sum(1 for r in plain if r.kind == "account_created")
    assert calls["players"] >= created > 0
    assert calls["harness"] >= 3
    assert set(calls) <= {*DESIGN, "players", "harness"}
    seconds, design_calls = timer.figures(0.0)
    assert design_calls == sum(calls.get(b, 0) for b in DESIGN)
    assert 0 < seconds < sum(b[0] for b in timer.buckets.values())
    # the buckets add up to the design's figure, the timer's cost taken off too
    cost = 1e-8
    assert sum(timer.figures(cost, (b,))[0] for b in DESIGN) == pytest.approx(timer.figures(cost)[0])


def test_callers_are_sorted_by_module_and_bookkeeping_is_the_harness():
    assert caller_bucket("/x/acksim/world/sandbox/store_proxy.py", "call", "get") == "processor"
    assert caller_bucket("/x/acksim/world/actors/worker.py", "_handle", "commit") == "unit of work"
    assert caller_bucket("/x/acksim/world/actors/worker.py", "_handle", "take_autocommitted") == "harness"
    assert caller_bucket("/x/acksim/world/actors/outbox_relay.py", "run", "pending") == "outbox relay"
    assert caller_bucket("/x/acksim/world/actors/outbox_relay.py", "idle", "pending") == "harness"
    assert caller_bucket("/x/acksim/world/actors/renewals.py", "_perform", "put") == "players"
    assert caller_bucket("/x/acksim/world/core.py", "final_state", "all") == "harness"
    assert caller_bucket("/x/acksim/world/actors/scheduler.py", "_sweep", "all") == "scheduler"


def test_a_call_made_by_another_timed_call_is_counted_once_and_errs_low():
    with timed_stores("memory", Timer()) as timer:
        session = MemoryDatabase(DbOptions()).session()
        # outside begin(): an autocommitted write, which calls begin(), itself in a
        # transaction, and commit()
        assert session.cleanup_store.apply_once(account_id="a", cleanup_version=1) is True
        assert timer.buckets["harness"][1:] == [1, 3]  # one call, three nested in it
        session.begin()
        session.cleanup_store.was_applied("a", 1)
        session.commit()
        assert sum(b[1] for b in timer.buckets.values()) == 4
        # this test module is no actor of the world: its calls are the harness's
        assert set(timer.buckets) == {"harness"}
        seconds, calls = timer.figures(0.0, ("harness",))
        assert calls == 4
        # the timer's cost is taken off the 4 calls and the 3 nested ones
        assert timer.figures(seconds / 7, ("harness",))[0] == pytest.approx(0.0, abs=1e-12)
        assert timer.figures(seconds, ("harness",))[0] == 0.0  # never below nothing
        assert timer.figures(seconds / 9, ("harness",))[0] == pytest.approx(seconds * 2 / 9)
    assert MemorySession.begin.__qualname__ == "MemorySession.begin"
    assert timer.on_gc not in gc.callbacks


def test_the_collectors_pauses_are_taken_off():
    timer = Timer()
    slow = timer.wrap(lambda: gc.collect())
    slow()
    timed, _calls = timer.figures(0.0, ("harness",))
    assert timer.gc_seconds == 0.0  # not hooked outside timed_stores
    with timed_stores("memory", timer):
        slow()
    assert timer.gc_seconds > 0
    assert timer.figures(0.0, ("harness",))[0] < timed + timer.gc_seconds


def test_methods_are_put_back_after_an_error_in_the_block():
    before = _methods("memory")
    with pytest.raises(RuntimeError):
        with timed_stores("memory", Timer()):
            assert _methods("memory") != before
            raise RuntimeError("boom")
    assert _methods("memory") == before


def test_steps_are_counted_in_the_block_only():
    class Env(simpy.Environment):  # inherits step: the class is left as it was
        pass

    with counted_steps(Env) as steps:
        env = Env()
        env.timeout(1.0)
        env.timeout(2.0)
        env.run()
    assert steps == [2]
    assert "step" not in vars(Env) and Env.step is simpy.Environment.step
    env = Env()
    env.timeout(1.0)
    env.run()
    assert steps == [2]
