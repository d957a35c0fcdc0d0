"""The step watchdog counts the time a step could run: wall time less the thread's waits for a
CPU (``acksim.world.sandbox.runclock``). The arithmetic is tested on made-up readings of both
clocks; one test blocks for real past a small budget and must still be found hung. Where the
watchdog's interrupt lands (in the processor, as the step returns, after the step was
disarmed) it becomes ``ProcessorHung`` or is dropped, never a raw ``KeyboardInterrupt``."""

from __future__ import annotations

import _thread
import select
import signal
import sys
import threading

import pytest

from acksim import interrupts
from acksim.scenario import parse
from acksim.world.core import World
from acksim.world.sandbox import interleave
from acksim.world.sandbox.interleave import Attempt, ProcessorHung, StoreCall
from acksim.world.sandbox.runclock import RunClock, TaskWait, schedstat_path
from helpers.tinyworld import tiny_dict


class Readings:
    """Made-up clocks: ``wall`` and ``wait`` (seconds) as the test sets them; ``None`` for a
    wait that cannot be read."""

    def __init__(self) -> None:
        self.wall, self.wait = 100.0, 5.0

    def clock(self) -> RunClock:
        return RunClock(lambda: self.wait, lambda: self.wall)


def test_a_starved_thread_has_had_no_time_to_run():
    r = Readings()
    clock = r.clock()
    since = r.wall
    r.wall, r.wait = 120.0, 24.5  # 20 wall seconds, 19.5 of them waiting for a CPU
    clock.sample()
    assert clock.runnable_since(since) == pytest.approx(0.5)


def test_a_blocked_thread_counts_its_whole_wall_time():
    r = Readings()
    clock = r.clock()
    r.wall = 130.0  # asleep in select(): no wait for a CPU
    clock.sample()
    assert clock.runnable_since(100.0) == 30.0


def test_a_start_between_samples_takes_the_wait_since_the_sample_before_it():
    r = Readings()
    clock = r.clock()  # (100, 5)
    r.wall, r.wait = 110.0, 8.0
    clock.sample()  # (110, 8)
    r.wall, r.wait = 120.0, 9.0
    clock.sample()  # (120, 9)
    # a step begun at 115: the wait since the sample at 110 (1 s) is left out; never more time than it had
    assert clock.runnable_since(115.0) == 4.0
    assert clock.runnable_since(110.0) == 9.0
    assert clock.runnable_since(50.0) == 66.0  # before the first sample: from the first
    clock.forget_before(115.0)
    assert clock.runnable_since(115.0) == 4.0  # the sample it needs is kept
    assert len(clock._samples) == 2


def test_an_unreadable_wait_counts_as_no_wait_and_a_total_never_shrinks():
    r = Readings()
    clock = r.clock()
    r.wall, r.wait = 110.0, None
    clock.sample()
    assert clock.runnable_since(100.0) == 10.0  # wall time
    r.wall, r.wait = 120.0, 3.0  # a smaller total (a misread): taken as no wait either
    clock.sample()
    assert clock.runnable_since(100.0) == 20.0


def test_the_wait_is_read_before_and_after_the_wall_clock():
    # a wait that grows while the sample is taken counts as before the sample's instant when it
    # starts a span and as after it when it ends one: the figure is never more than the truth
    waits = iter([1.0, 2.0, 2.0, 3.0])
    walls = iter([10.0, 20.0])
    clock = RunClock(lambda: next(waits), lambda: next(walls))
    clock.sample()
    assert clock.runnable_since(10.0) == (20.0 - 10.0) - (3.0 - 1.0)


def test_this_threads_schedstat_file_is_read():
    wait = TaskWait(schedstat_path(threading.get_native_id()))
    try:
        first = wait()
        if first is None:
            pytest.skip("no scheduler statistics here (/proc/self/task/<tid>/schedstat)")
        assert first >= 0.0 and wait() >= first
    finally:
        wait.close()
    assert wait() is None
    assert TaskWait("/proc/self/task/0/schedstat")() is None  # no such thread: wall time


def _watchdog_with(readings: Readings) -> interleave._Watchdog:
    watchdog = interleave._Watchdog()
    watchdog.clock = readings.clock()
    return watchdog


def test_the_watchdog_fires_on_time_it_could_run_not_on_wall_time(monkeypatch):
    sent = []
    monkeypatch.setattr(interleave, "_interrupt_main", lambda: sent.append(1))
    monkeypatch.setattr(interleave, "_REAL_MONOTONIC", lambda: 100.0)
    r = Readings()
    watchdog = _watchdog_with(r)
    watchdog.arm(10.0)
    r.wall, r.wait = 160.0, 60.0  # a minute of wall time, starved for 55 s of it
    assert not watchdog.overdue() and sent == [] and not watchdog.fired
    r.wall, r.wait = 170.0, 65.0  # 10 s more, 5 of them runnable: 10 in all, the budget
    assert not watchdog.overdue()
    r.wall = 170.5  # past it, blocked or running
    assert watchdog.overdue() and sent == [1] and watchdog.fired and watchdog.pending


def test_a_step_disarmed_before_the_decision_is_never_interrupted(monkeypatch):
    sent = []
    monkeypatch.setattr(interleave, "_interrupt_main", lambda: sent.append(1))
    r = Readings()
    watchdog = _watchdog_with(r)
    watchdog.arm(1.0)
    watchdog.started_at = None  # the step returned
    r.wall += 100
    assert not watchdog.overdue() and sent == []
    assert watchdog.settle() is False


def _main_thread_in(name: str) -> bool:
    frame = sys._current_frames().get(threading.main_thread().ident)
    while frame is not None:
        if frame.f_code.co_name == name:
            return True
        frame = frame.f_back
    return False


@pytest.mark.timeout(600)
@pytest.mark.parametrize("handler", ["python's own", "acksim's", "a library's that does not raise"])
def test_an_interrupt_sent_as_the_step_returns_never_reaches_the_harness(handler, monkeypatch):
    # the watchdog's thread decides to fire as the step returns: it holds the lock while the
    # main thread, the step disarmed, waits for it in settle; the interrupt lands there (or,
    # through acksim's handler, is dropped), and the step counts as hung
    watchdog = interleave._Watchdog()
    monkeypatch.setattr(interleave, "_WATCHDOG", watchdog)
    previous = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, {"python's own": signal.default_int_handler, "acksim's": interrupts._handler}.get(
        handler, lambda signum, frame: None))

    decided = threading.Event()

    def fire():  # as the watchdog's thread does, once the main thread waits for its lock in settle
        watchdog.deciding = True
        with watchdog._lock:
            decided.set()
            while not _main_thread_in("settle"):
                interleave._REAL_SLEEP(0.001)
            watchdog.fired = watchdog.pending = True
            interleave._interrupt_main()

    try:
        watchdog.arm(1.0)
        watchdog.started_at = None  # the step returned
        thread = threading.Thread(target=fire)
        thread.start()
        decided.wait()
        assert watchdog.settle() is True
        thread.join()
        assert not watchdog.pending
        for _ in range(100):  # nothing more lands
            interleave._REAL_SLEEP(0.001)
    finally:
        signal.signal(signal.SIGINT, previous)


class Store:
    def get(self, key):
        return key


def _attempt(processor, budget_s: float = 600.0) -> Attempt:
    return Attempt(processor, "job", {"store": Store()}, budget_s)


def test_an_interrupt_that_lands_in_the_step_is_processor_hung():
    def processor(job, store):
        # the watchdog decides now (as its thread would); the interrupt lands in the processor
        watchdog = interleave._WATCHDOG
        watchdog.fired = watchdog.pending = True
        _thread.interrupt_main()
        store.get("x")

    attempt = _attempt(processor)
    with pytest.raises(ProcessorHung, match=r"ran over 600 s of wall-clock time .* \(time spent waiting for a CPU "
                                            r"not counted\)"):
        attempt.step()
    assert attempt.abandoned
    assert not interleave._WATCHDOG.pending and interleave._WATCHDOG.started_at is None


def test_a_step_that_returns_in_time_is_not_touched():
    attempt = _attempt(lambda job, store: store.get(job))
    assert attempt.step() == StoreCall("store", "get", 0, "before")
    assert not interleave._WATCHDOG.fired and interleave._WATCHDOG.started_at is None


@pytest.mark.timeout(600)  # bounds a hang; the step blocks for real and is cut at its budget
def test_a_processor_that_blocks_for_real_past_its_budget_is_hung():
    def blocks(job, accounts, cleanup_store, outbox):
        for _ in range(6000):  # up to 5 minutes of real blocking, no CPU wanted
            select.select([], [], [], 0.05)

    world = World(parse(tiny_dict(run={"step_budget_s": 0.3})), blocks)
    try:
        with pytest.raises(ProcessorHung, match="ran over 0.3 s of wall-clock time"):
            world.run()
    finally:
        world.close()


def test_the_supervising_parent_counts_the_time_its_child_could_run():
    from acksim.world.sandbox.contain import GRACE_S, QUIET_S, Child

    child = Child(lambda args, emit: None)
    r = Readings()
    child._clock = r.clock()  # the child's main thread, read from outside
    child._slots[0], child._slots[1], child._slots[2] = 100.0, 1.0, 99.0  # a step began at 100, budget 1 s
    r.wall, r.wait = 160.0, 5.0 + 60.0 - (1.0 + GRACE_S)  # a minute, all but budget + grace of it starved
    assert child._overdue() == ""
    r.wall += 0.5
    assert child._overdue().startswith("the processor ran over 1 s of wall-clock time without reaching a store call")
    child._slots[0], child._slots[2] = 0.0, r.wall  # between steps: the harness's sign of life
    r.wall, r.wait = r.wall + 100.0, r.wait + 100.0 - QUIET_S  # starved but for QUIET_S
    assert child._overdue() == ""
    r.wall += 0.5
    assert f"showed no progress for {QUIET_S:g} wall seconds outside the processor's steps" in child._overdue()
