"""The instrumentation of ``benchmarks/ceiling.py`` (and of ``check_speed.py``'s ceiling line):
it times the code under test without changing what the world does, counts a nested call once,
and puts every method back."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from ceiling import STORE_CLASSES, Timer, counted_steps, timed_stores  # noqa: E402

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


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
def test_the_timed_run_is_the_same_run_and_every_method_is_put_back(backend):
    before = {(cls, name): fn for cls in STORE_CLASSES[backend] for name, fn in vars(cls).items()}
    plain = _history(backend)
    with timed_stores(backend, Timer()) as timer:
        timed = _history(backend)
    assert timed == plain
    assert len(plain) > 1000
    # every store and unit-of-work call of the run was counted: at least one per attempt's
    # begin, and the smoke day's store calls
    attempts = sum(1 for r in plain if r.kind == "attempt_started")
    assert timer.calls > 3 * attempts > 0
    assert timer.seconds > 0
    assert {(cls, name): fn for cls in STORE_CLASSES[backend] for name, fn in vars(cls).items()} == before


def test_a_call_made_by_another_timed_call_is_counted_once():
    with timed_stores("memory", Timer()) as timer:
        session = MemoryDatabase(DbOptions()).session()
        # outside begin(): an autocommitted write, which calls begin() and commit() itself
        assert session.cleanup_store.apply_once(account_id="a", cleanup_version=1) is True
        assert timer.calls == 1
        session.begin()
        session.cleanup_store.was_applied("a", 1)
        session.commit()
        assert timer.calls == 4
    assert MemorySession.begin.__qualname__ == "MemorySession.begin"


def test_steps_are_counted_in_the_block_only():
    import simpy

    real = simpy.Environment.step
    with counted_steps(simpy.Environment) as steps:
        env = simpy.Environment()
        env.timeout(1.0)
        env.timeout(2.0)
        env.run()
    assert steps == [2]
    assert simpy.Environment.step is real
    env = simpy.Environment()
    env.timeout(1.0)
    env.run()
    assert steps == [2]
