"""Containment from Python: simulate() on the main thread, in a worker thread (as Dask runs
tasks), in the sweep's process pool and under Dask; the supervised child itself."""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

import pytest

from acksim.scenario import load, parse
from acksim.world.sandbox.contain import Child, Died
from acksim.world.core import simulate

HERE = Path(__file__).parent


def tiny(processor: str):
    data = load(HERE / "tiny.toml").model_dump(exclude_none=True)
    data["processor"], data["processor_path"] = processor, str(HERE)
    return parse(data, "test")


def spins(job, accounts, cleanup_store, outbox):
    accounts.get(job.account_id)
    while True:
        pass


def in_thread(fn):
    box = {}
    thread = threading.Thread(target=lambda: box.setdefault("value", fn()), daemon=True)
    thread.start()
    thread.join(540)  # bounds a hang, never a duration
    assert not thread.is_alive(), "the call never returned"
    return box["value"]


@pytest.mark.timeout(600)
def test_a_spinning_callable_is_stopped_in_a_worker_thread():
    outcome = in_thread(lambda: simulate(tiny("acksim.model.processor:process"), spins))
    assert outcome.final.stop_reason.startswith("the processor hung, so the run ended there: "
                                                "the processor ran over 0.5 s of wall-clock time")
    assert outcome.final.contained == ""  # the child's own watchdog stopped it: the history is kept
    assert [r.kind for r in outcome.history].count("processor_error") == 1


@pytest.mark.timeout(600)
@pytest.mark.parametrize("module, finding, text", [
    ("swallows_interrupt", "processor_hung", "its worker process was killed after 2.5 s"),
    ("exit_in_call", "processor_killed_worker", "it exited with status 0"),
    ("segfaults", "processor_killed_worker", "killed by SIGSEGV"),
])
def test_simulate_from_a_worker_thread_contains_the_processor(module, finding, text):
    outcome = in_thread(lambda: simulate(tiny(f"hostile.{module}:process")))
    assert outcome.final.contained == finding
    assert text in outcome.final.stop_reason
    assert outcome.history == ()


@pytest.mark.timeout(600)
def test_simulate_contained_gives_the_same_history_as_in_process():
    scenario = tiny("acksim.model.processor:process")
    assert simulate(scenario) == simulate(scenario, contained=False)


@pytest.mark.timeout(600)
def test_the_sweep_pool_contains_hostile_processors(tmp_path, monkeypatch):
    from acksim.capacity.executors import execute
    from acksim.capacity.sweep import RunSpec

    monkeypatch.chdir(tmp_path)
    modules = ["exit_in_call", "swallows_interrupt", "leaves_thread"]
    runs = [RunSpec(i, i, (("processor", m),), 3, tiny(f"hostile.{m}:process").model_dump(exclude_none=True))
            for i, m in enumerate(modules)]
    rows = execute(runs, tmp_path / "sweep", "test-sweep")
    assert list(rows["verdict"]) == ["FAIL", "FAIL", "PASS"]
    assert "it exited with status 0" in rows["reasons"][0]
    assert "its worker process was killed after 2.5 s" in rows["reasons"][1]
    assert list(rows["count_jobs"]) == [0, 0, 13]  # 12 accounts, one of them due twice


@pytest.mark.timeout(600)
def test_dask_workers_contain_hostile_processors(tmp_path):
    from distributed import LocalCluster

    from acksim.capacity.executors import execute
    from acksim.capacity.sweep import RunSpec

    modules = ["spins_sigint_ignored", "kills_itself", "sleeps_for_real"]
    runs = [RunSpec(i, i, (("processor", m),), 3, tiny(f"hostile.{m}:process").model_dump(exclude_none=True))
            for i, m in enumerate(modules)]
    with LocalCluster(n_workers=1, threads_per_worker=3, processes=False, dashboard_address=None) as cluster:
        rows = execute(runs, tmp_path / "sweep", "test-dask", executor="dask", address=cluster.scheduler_address)
    assert list(rows["verdict"]) == ["FAIL", "FAIL", "PASS"]
    assert "its worker process was killed after 2.5 s" in rows["reasons"][0]
    assert "killed by SIGKILL" in rows["reasons"][1]


# --- the supervised child itself -------------------------------------------------------------
def test_one_child_serves_call_after_call_and_is_replaced_after_a_death():
    def target(args, emit):
        emit(("got", args))
        if args == "die":
            os._exit(7)
        return os.getpid(), args * 2

    seen = []
    with Child(target) as child:
        first = child.call(2, seen.append).value
        second = child.call(3, seen.append).value
        with pytest.raises(Died) as died:
            child.call("die")
        third = child.call(4).value
    assert first[0] == second[0] != os.getpid() and third[0] != first[0]
    assert (first[1], second[1], third[1]) == (4, 6, 8)
    assert seen == [("got", 2), ("got", 3)]
    assert died.value.finding == "processor_killed_worker"
    assert str(died.value) == "the processor's worker process died: it exited with status 7 (os._exit, or exit() in C code)"
    assert child.forks == 2


def test_the_child_collects_with_the_thresholds_of_when_it_was_made_and_a_search_puts_them_back():
    import gc

    from acksim.search.check import SEARCH_GC_THRESHOLD, _search_gc

    before = gc.get_threshold()
    with Child(lambda args, emit: (gc.get_threshold(), gc.get_freeze_count() > 0)) as child, _search_gc():
        assert gc.get_threshold() == SEARCH_GC_THRESHOLD
        threshold, frozen = child.call(None).value
    assert threshold == before and frozen  # forked under the search: its objects shared, frozen
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0


def test_errors_of_the_target_come_back_as_themselves():
    from acksim.scenario import ScenarioError

    def target(args, emit):
        raise ScenarioError("processor: cannot import 'nope'")

    with Child(target, keep=False) as child, pytest.raises(ScenarioError, match="cannot import 'nope'") as raised:
        child.call(None)
    assert any("in the supervised child" in note for note in raised.value.__notes__)


def test_the_parent_ignores_signals_meant_for_its_child():
    def target(args, emit):
        os.kill(os.getpid(), signal.SIGTERM)

    with Child(target, keep=False) as child, pytest.raises(Died, match="killed by SIGTERM"):
        child.call(None)  # the parent (this test's process) lives on


def test_an_interrupt_during_world_set_up_leaves_no_temporary_folder(tmp_path, monkeypatch):
    import tempfile

    from acksim.world import core

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(core, "Scheduler", interrupted)  # a signal arriving mid-way through __init__
    data = tiny("acksim.model.processor:process").model_dump(exclude_none=True)
    data["stores"]["backend"] = "sqlite"
    with pytest.raises(KeyboardInterrupt):
        core.World(parse(data, "test"))
    assert list(tmp_path.iterdir()) == []
