"""The virtual clock: user code in a greenlet sees ``epoch + env.now``; the harness real time."""

from __future__ import annotations

import datetime as dt
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timezone

import pytest
import simpy
import time_machine
from greenlet import greenlet

from acksim.world.sandbox import vclock
from acksim.world.sandbox.images import Image
from acksim.world.sandbox.vclock import VirtualClock

UTC = timezone.utc
PAST = datetime(2001, 9, 9, 1, 46, 40, tzinfo=UTC)  # timestamp 1_000_000_000
FUTURE = datetime(2090, 6, 15, 8, 30, 0, 250_000, tzinfo=UTC)


@dataclass(frozen=True)
class Sleep:
    seconds: float


class Abandoned(BaseException):
    pass


def simulate(clock: VirtualClock, fn, *args, start: float = 0.0, crash_at: float | None = None):
    """Run ``fn(*args)`` in a greenlet driven by a SimPy process starting at ``start``; every
    ``time.sleep`` is a virtual sleep. Returns (result, env). ``crash_at``: abandon the greenlet
    at the first switch at or after that virtual time."""
    env = simpy.Environment(initial_time=start)
    out = {}

    def proc():
        g = greenlet(lambda: fn(*args))
        sleeper = lambda s: g.parent.switch(Sleep(s))  # noqa: E731
        while True:
            clock.enter(env.now, sleeper)
            try:
                if crash_at is not None and env.now >= crash_at:
                    try:
                        g.throw(Abandoned())
                    except Abandoned:
                        out["crashed"] = env.now
                    return
                request = g.switch()
            finally:
                clock.exit()
            if g.dead:
                out["result"] = request
                return
            assert isinstance(request, Sleep)
            yield env.timeout(request.seconds)

    env.process(proc())
    env.run()
    return out, env


@pytest.fixture(params=[False, True], ids=["per-switch", "session"])
def make_clock(request):
    """``make_clock(epoch, **kw)``: a VirtualClock in either mode (a session clock started for
    the test and stopped after it)."""
    made = []

    def make(epoch, **kw):
        clock = VirtualClock(epoch, session=request.param, **kw)
        if clock.session:
            clock.start()
        made.append(clock)
        return clock

    yield make
    for clock in made:
        if clock.session:
            clock.stop()
    assert not time_machine.escape_hatch.is_travelling()


class TooEarly(Exception):
    pass


def deadline_processor(job_deadline: datetime):
    if datetime.now(timezone.utc) < job_deadline:
        raise TooEarly(datetime.now(timezone.utc))
    return "applied"


@pytest.mark.parametrize("epoch", [PAST, FUTURE], ids=["past", "future"])
def test_deadline_check_follows_virtual_time(epoch, make_clock):
    clock = make_clock(epoch)
    deadline = epoch + dt.timedelta(seconds=60)
    with pytest.raises(TooEarly) as info:
        clock.run(59.999, lambda s: None, deadline_processor, deadline)
    assert info.value.args[0] == epoch + dt.timedelta(seconds=59.999)
    assert clock.run(60.0, lambda s: None, deadline_processor, deadline) == "applied"
    # in a greenlet under SimPy: start before the deadline, sleep past it
    def waits_then_applies():
        try:
            return deadline_processor(deadline)
        except TooEarly:
            time.sleep(61)
            return deadline_processor(deadline)

    out, env = simulate(clock, waits_then_applies, start=10.0)
    assert out["result"] == "applied" and env.now == 71.0


@pytest.mark.parametrize("now", [0.0, 12.5, 3600.25, 86_400.0 * 365])
def test_clocks_inside_the_greenlet_read_epoch_plus_now_exactly(now, make_clock):
    from time import time as early_time  # bound early: time-machine patches the C function
    from time import monotonic as early_monotonic
    epoch = datetime(2024, 2, 29, 23, 59, 59, 500_000, tzinfo=UTC)
    clock = make_clock(epoch, monotonic_origin=5_000.0)

    def read():
        return dict(time=time.time(), early=early_time(), ns=time.time_ns(),
                    now=datetime.now(UTC), naive_utc=datetime.utcnow(), today=dt.date.today(),
                    mono=time.monotonic(), mono_ns=time.monotonic_ns(), perf=time.perf_counter(),
                    perf_ns=time.perf_counter_ns(), early_mono=early_monotonic(),
                    gettime=time.clock_gettime(time.CLOCK_REALTIME))

    out, _ = simulate(clock, read, start=now)
    r = out["result"]
    expected_dt = epoch + dt.timedelta(seconds=now)
    assert r["ns"] == clock.epoch_ns + round(now * 1e9)
    assert r["time"] == r["early"] == r["gettime"] == clock.timestamp(now) == epoch.timestamp() + now
    assert r["now"] == expected_dt == clock.datetime(now)
    assert r["naive_utc"] == expected_dt.replace(tzinfo=None)
    assert r["today"] == datetime.fromtimestamp(clock.timestamp(now)).date()  # the local zone's
    assert r["mono"] == r["perf"] == 5_000.0 + now
    assert r["mono_ns"] == r["perf_ns"] == round((5_000.0 + now) * 1e9)
    # an early-bound monotonic is not rebound in a module-level test function (no Image)
    assert r["early_mono"] != 5_000.0 + now


def test_fractional_now_is_exact_to_the_nanosecond(make_clock):
    clock = make_clock(FUTURE)
    for now in (0.1, 1e-9, 123.456789123, 7 / 3, 86_400.0 * 400 + 0.3, 5.0, 0.1):
        clock.enter(now, lambda s: None)
        try:
            ns, t = time.time_ns(), time.time()
        finally:
            clock.exit()
        assert ns == clock.epoch_ns + round(now * 1e9)
        assert t == ns / 10**9 == clock.timestamp(now)  # int / int: correctly rounded


SLEEPER_MODULE = {
    "sleeper/__init__.py": "",
    "sleeper/proc.py": """
        from time import sleep, time
        from datetime import datetime, timezone

        def process(job, *stores):
            t0, d0 = time(), datetime.now(timezone.utc)
            sleep(5)
            from . import later     # imported while the clock is entered
            later.pause(2.5)
            return t0, d0, time(), datetime.now(timezone.utc)
    """,
    "sleeper/later.py": """
        import time
        from time import sleep as nap

        def pause(s):
            nap(s / 2)
            time.sleep(s / 2)
    """,
}


def test_early_bound_sleep_is_virtual_and_blocks_no_wall_time(user_code):
    user_code(SLEEPER_MODULE)
    image = Image("sleeper.proc:process", rebind=vclock.EARLY_BOUND)
    clock = VirtualClock(PAST)
    env = simpy.Environment()
    out = {}

    def proc():
        g = greenlet(lambda: image.function("job"))
        while True:
            image.enter()
            clock.enter(env.now, lambda s: g.parent.switch(Sleep(s)))
            try:
                request = g.switch()
            finally:
                clock.exit()
                image.exit()
            if g.dead:
                out["result"] = request
                return
            out.setdefault("sleeps", []).append(request.seconds)
            yield env.timeout(request.seconds)

    env.process(proc())
    env.run()
    t0, d0, t1, d1 = out["result"]
    assert out["sleeps"] == [5.0, 1.25, 1.25]
    assert env.now == 7.5
    assert t1 - t0 == 7.5 and d1 - d0 == dt.timedelta(seconds=7.5)
    assert t0 == PAST.timestamp()  # the sleeps went to the scheduler above: no real sleeping


def test_time_sleep_attribute_is_virtual_without_an_image():
    clock = VirtualClock(PAST)
    out, env = simulate(clock, lambda: (time.sleep(3), time.sleep(0), time.time())[-1])
    assert env.now == 3.0 and out["result"] == PAST.timestamp() + 3


def test_harness_outside_the_greenlet_sees_real_time():
    clock = VirtualClock(PAST)
    seen_outside = []
    env = simpy.Environment()

    def proc():
        g = greenlet(lambda: [time.sleep(100) for _ in range(3)])
        while not g.dead:
            clock.enter(env.now, lambda s: g.parent.switch(Sleep(s)))
            try:
                request = g.switch()
            finally:
                clock.exit()
            seen_outside.append((time.time(), datetime.now(UTC), time.monotonic(), time.sleep))
            if not g.dead:
                yield env.timeout(request.seconds)

    real_before = time.time()
    env.process(proc())
    env.run()
    real_after = time.time()
    assert env.now == 300
    for t, d, mono, sleep in seen_outside:
        assert real_before <= t <= real_after
        assert real_before - 1e-6 <= d.timestamp() <= real_after + 1e-6  # (whole microseconds)
        assert mono != vclock.DEFAULT_MONOTONIC_ORIGIN_S + env.now
        assert sleep is vclock.real_sleep
    assert not time_machine.escape_hatch.is_travelling()


def test_harness_reads_real_time_during_user_code():
    """The harness's own real reads while the clock is entered: ``real_time()`` and other
    threads' monotonic clock and sleep (the watchdog's)."""
    clock = VirtualClock(PAST)
    thread_readings = []

    def watchdog():
        t0 = time.monotonic()
        time.sleep(0.02)  # a real sleep: this thread is not the one that entered the clock
        thread_readings.append(time.monotonic() - t0)

    clock.enter(0.0, lambda s: pytest.fail("the watchdog's sleep must not be virtual"))
    try:
        assert time.time() == PAST.timestamp()
        before = time_machine.escape_hatch.time.time()
        real = vclock.real_time()
        assert before <= real <= time_machine.escape_hatch.time.time() and real > PAST.timestamp() + 1e8
        assert vclock.real_time_ns() // 10**9 >= int(real)
        worker = threading.Thread(target=watchdog)
        worker.start()
        worker.join()
    finally:
        clock.exit()
    assert thread_readings[0] > 0.015  # a real sleep (however long the machine took)
    before = time.time()
    assert before <= vclock.real_time() <= time.time()  # works outside travel too


def test_two_runs_are_identical(make_clock):
    def processor():
        values = []
        for _ in range(4):
            values.append((time.time(), time.time_ns(), datetime.now(UTC).isoformat(),
                           datetime.now().isoformat(), time.monotonic(), time.perf_counter()))
            time.sleep(0.123)
        return values

    runs = [simulate(make_clock(FUTURE), processor, start=1.5)[0]["result"] for _ in range(2)]
    time.sleep(0.01)  # real time moves between and after runs; virtual values must not
    runs.append(simulate(make_clock(FUTURE), processor, start=1.5)[0]["result"])
    assert runs[0] == runs[1] == runs[2]
    assert runs[0][1][0] == FUTURE.timestamp() + 1.5 + 0.123


def test_crash_during_a_virtual_sleep_unwinds_and_restores_the_clocks(make_clock):
    clock = make_clock(PAST)
    finally_times = []

    def processor():
        try:
            time.sleep(10)
        finally:
            finally_times.append(time.time())  # runs under the clock: the harness entered it

    out, env = simulate(clock, processor, crash_at=10.0)
    assert out["crashed"] == 10.0 and finally_times == [PAST.timestamp() + 10]
    assert time.sleep is vclock.real_sleep and time.monotonic is vclock.real_monotonic
    assert time_machine.escape_hatch.is_travelling() is clock.session


def test_sleep_argument_errors_match_the_real_sleep():
    clock = VirtualClock(PAST)
    for bad, error in ((-1, ValueError), (float("nan"), ValueError), ("5", TypeError),
                       (None, TypeError), (float("inf"), OverflowError)):
        with pytest.raises(error):
            clock.run(0.0, lambda s: pytest.fail("no sleep expected"), time.sleep, bad)
        with pytest.raises(error):
            vclock.real_sleep(bad)  # the real sleep raises the same (none of these blocks)


def test_misuse_is_reported():
    with pytest.raises(ValueError, match="timezone-aware"):
        VirtualClock(datetime(2030, 1, 1))
    a, b = VirtualClock(PAST), VirtualClock(FUTURE)
    with pytest.raises(RuntimeError, match="not entered"):
        a.exit()
    a.enter(0.0, lambda s: None)
    try:
        with pytest.raises(RuntimeError, match="already entered"):
            b.enter(0.0, lambda s: None)
        with pytest.raises(RuntimeError, match="not entered"):
            b.exit()
    finally:
        a.exit()
    assert not time_machine.escape_hatch.is_travelling()


def test_non_utc_epoch_is_the_same_instant():
    paris = dt.timezone(dt.timedelta(hours=2))
    clock = VirtualClock(datetime(2030, 6, 1, 14, 0, tzinfo=paris))
    assert clock.run(30.0, lambda s: None, lambda: datetime.now(UTC)) == datetime(2030, 6, 1, 12, 0, 30, tzinfo=UTC)


def test_session_mode_leaves_the_harness_at_the_last_virtual_instant():
    """The trade-off of session mode: between switches wall clocks stay virtual (frozen), so
    the harness reads real time through ``real_time()`` / escape_hatch."""
    with VirtualClock(PAST, session=True) as clock:
        assert time.time() == PAST.timestamp()  # started: at the epoch
        clock.run(42.0, lambda s: None, lambda: None)
        assert time.time() == PAST.timestamp() + 42  # outside user code, still virtual
        assert time.monotonic is vclock.real_monotonic and time.sleep is vclock.real_sleep
        before = time_machine.escape_hatch.time.time()
        assert before <= vclock.real_time() <= time_machine.escape_hatch.time.time()
        assert vclock.real_time() > PAST.timestamp() + 1e8
        clock.enter(1.0, lambda s: None)
        try:
            with pytest.raises(RuntimeError, match="outside enter/exit"):
                clock.stop()
        finally:
            clock.exit()
    assert not time_machine.escape_hatch.is_travelling()
    with pytest.raises(RuntimeError, match="not started"):
        VirtualClock(PAST, session=True).enter(0.0, lambda s: None)
    with pytest.raises(RuntimeError, match="session clock"):
        VirtualClock(PAST).start()
