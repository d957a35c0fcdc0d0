"""The code under test reads virtual time: ``epoch + env.now``, whatever the real date."""

import textwrap
import time
from datetime import datetime, timezone

import pytest

from acksim.scenario import parse
from acksim.world.core import World
from acksim.world.sandbox.vclock import real_time
from acksim.search.replay import history_digest
from helpers.tinyworld import tiny_dict

TOO_EARLY = textwrap.dedent('''
    from datetime import datetime, timezone

    from acksim.model.processor import process as reference


    class TooEarly(Exception):
        pass


    def process(job, accounts, cleanup_store, outbox):
        if datetime.now(timezone.utc) < job.deadline:
            raise TooEarly(f"{datetime.now(timezone.utc)} < {job.deadline}")
        reference(job, accounts, cleanup_store, outbox)
''')

CLOCKS = textwrap.dedent('''
    import datetime as dt
    import time
    from time import monotonic, perf_counter, sleep

    from acksim.model.processor import process as reference

    OUT = {out!r}


    def process(job, accounts, cleanup_store, outbox):
        t0, m0, p0, n0 = time.time(), monotonic(), perf_counter(), time.time_ns()
        d0, u0, today = dt.datetime.now(dt.timezone.utc), dt.datetime.utcnow(), dt.date.today()
        sleep(30.5)  # bound early: virtual all the same
        t1, m1, p1 = time.time(), monotonic(), perf_counter()
        with open(OUT, "a") as f:
            f.write(repr((t0, m0, p0, n0, d0.isoformat(), u0.isoformat(), today.isoformat(),
                          t1 - t0, m1 - m0, p1 - p0)) + "\\n")
        reference(job, accounts, cleanup_store, outbox)
''')


def run(scenario, ref):
    world = World(scenario, ref)
    try:
        return world.run(), world
    finally:
        world.close()


@pytest.mark.parametrize("epoch", [datetime(2091, 3, 4, 5, 6, 7, tzinfo=timezone.utc),
                                   datetime(1999, 12, 31, 23, 0, tzinfo=timezone.utc)])
def test_a_processor_comparing_now_with_the_deadline_runs_on_virtual_time(tmp_path, epoch):
    (tmp_path / "early.py").write_text(TOO_EARLY)
    scenario = parse(tiny_dict(epoch=epoch))
    (first, world), (second, _) = run(scenario, f"{tmp_path / 'early.py'}:process"), \
        run(scenario, f"{tmp_path / 'early.py'}:process")
    assert world.processor_errors == []
    assert [r.kind for r in first.history if r.kind in ("cleanup_applied", "outbox_added", "acked")] == [
        "cleanup_applied", "outbox_added", "acked"]
    assert history_digest(first.history) == history_digest(second.history)


def test_every_clock_and_early_bound_sleep_follow_the_simulation(tmp_path):
    out = tmp_path / "clocks.txt"
    (tmp_path / "clocks.py").write_text(CLOCKS.format(out=str(out)))
    epoch = datetime(2040, 6, 1, tzinfo=timezone.utc)
    outcome, _world = run(parse(tiny_dict(epoch=epoch)), f"{tmp_path / 'clocks.py'}:process")
    t0, m0, p0, n0, d0, u0, today, dt_, dm, dp = eval(out.read_text().splitlines()[0])
    # delivered at the deadline, 100 s after the epoch
    assert t0 == epoch.timestamp() + 100.0 and n0 == int(epoch.timestamp() + 100) * 10**9
    assert d0 == "2040-06-01T00:01:40+00:00" and u0 == "2040-06-01T00:01:40" and today == "2040-06-01"
    assert m0 == p0 == 10_100.0  # the monotonic origin (10,000 s) + now
    assert (dt_, dm, dp) == (30.5, 30.5, 30.5)
    applied = [r.time for r in outcome.history if r.kind == "cleanup_applied"]
    assert applied == [100.0 + 30.5 + 5.0]  # the sleep, four 1 s store calls and the commit


def test_the_harness_reads_real_time_between_switches(tmp_path):
    (tmp_path / "early.py").write_text(TOO_EARLY)
    run(parse(tiny_dict(epoch=datetime(2091, 1, 1, tzinfo=timezone.utc))), f"{tmp_path / 'early.py'}:process")
    before = time.time()
    assert before <= real_time() <= time.time()  # time.time reads the real clock again, in order
    assert datetime.now(timezone.utc).year < 2090
    assert time.sleep.__module__ == "time" and time.monotonic.__module__ == "time"


def test_huge_and_unprintable_exception_texts_are_kept_safely_and_cut():
    from acksim.printable import error_text

    class Unprintable(Exception):
        def __str__(self):
            raise RuntimeError("no")

    text = error_text(ValueError("x" * 100_000))
    assert len(text) < 20_100 and "characters cut" in text and text.rstrip().endswith("x")
    assert "Unprintable" in error_text(Unprintable())
    assert "\\udcff" in error_text(ValueError("bad \udcff byte"))
