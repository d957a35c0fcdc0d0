"""The guards on simulated work: a run that would spin without moving time on is refused
before set-up (its estimated cost) or stopped by the event budget, with one line naming the
field; a run that ends at ``run.max_time_s`` before draining is stopped early. Each test is
bounded by pytest-timeout, not by the code under test."""

from __future__ import annotations

import pytest

from acksim.judges.summary import build_summary
from acksim.scenario import ScenarioError, parse
from acksim.world.core import World, simulate
from helpers.tinyworld import tiny_dict

pytestmark = pytest.mark.timeout(600)


def _sleeper(seconds: float):
    def process(job, accounts, cleanup_store, outbox):
        import time

        from acksim.model.processor import process as reference

        time.sleep(seconds)  # virtual: the lease is held, heartbeats run
        return reference(job, accounts, cleanup_store, outbox)

    return process


def test_a_heartbeat_every_nanosecond_is_refused_before_set_up_naming_the_field():
    scenario = parse(tiny_dict(queue={"heartbeat_interval_s": 1e-9}))
    with pytest.raises(ScenarioError) as err:
        World(scenario)
    assert str(err.value) == (
        "run.max_events: the scenario would take about 5e+09 SimPy events, over run.max_events = 50000000; most "
        "of it from queue.heartbeat_interval_s = 1e-09 (a heartbeat per interval of each job's ~5 s hold); raise "
        "run.max_events to run it anyway")


def test_an_expensive_run_inside_the_estimate_is_stopped_by_the_event_budget_naming_the_actor():
    # the estimate cannot see a processor that holds its lease for 1000 virtual seconds
    scenario = parse(tiny_dict(queue={"heartbeat_interval_s": 0.001}, run={"max_events": 200_000}))
    outcome = simulate(scenario, _sleeper(1000.0))
    assert outcome.final.stopped_early
    # the deadline at 100 s, then a heartbeat a millisecond: 200,000 events later it is about 300 s
    assert outcome.final.stop_reason == ("run.max_events = 200000 SimPy events spent by virtual time 299.965 s; "
                                         "most of the work: _heartbeat (set by queue.heartbeat_interval_s)")
    summary = build_summary(scenario, outcome)
    assert summary["verdict"] == "FAIL" and summary["counts"]["stopped_early"] == 1
    assert summary["reasons"][-1]["text"] == f"stopped early: {outcome.final.stop_reason}"


def test_the_same_budget_stops_at_the_same_event_every_time():
    scenario = parse(tiny_dict(queue={"heartbeat_interval_s": 0.001}, run={"max_events": 100_000}))
    runs = [simulate(scenario, _sleeper(1000.0)) for _ in range(2)]
    assert runs[0].history == runs[1].history and runs[0].final == runs[1].final


def test_a_run_that_ends_at_max_time_before_draining_is_stopped_early():
    scenario = parse(tiny_dict(run={"max_time_s": 150.0}))
    outcome = simulate(scenario, _sleeper(1000.0))
    assert outcome.final.stop_reason == "run.max_time_s = 150 s reached before the pipeline drained"
    assert outcome.final.end_s == 150.0


def test_a_run_that_drains_is_not_stopped_early():
    outcome = simulate(parse(tiny_dict()))
    assert (outcome.final.stopped_early, outcome.final.stop_reason) == (False, "")


def test_a_run_that_ends_before_the_first_deadline_is_refused():
    scenario = parse(tiny_dict(workload={"accounts": 2_000_000, "deadline_start_s": 600}, run={"max_time_s": 0.001}))
    with pytest.raises(ScenarioError, match=r"^run.max_time_s: 0.001 s ends before the first deadline "
                                            r"\(workload.deadline_start_s = 600\): nothing would run$"):
        World(scenario)


def test_a_fan_out_too_large_to_run_is_refused_naming_its_size():
    from acksim.world.fanout import FanoutWorld

    scenario = parse(tiny_dict(fanout={"updates": 100_000, "subscribers": 1000}))
    with pytest.raises(ScenarioError, match=r"most of it from fanout.updates x fanout.subscribers = 100000 x 1000 "
                                            r"delivery tasks; raise run.max_events"):
        FanoutWorld(scenario)


def _spins(job, accounts, cleanup_store, outbox):
    while True:
        pass


def _final_of_a_hung_run():
    """The final state of a world whose processor spins, with a 0.2 s step budget (the run
    must raise ``ProcessorHung``)."""
    from acksim.world.sandbox.interleave import ProcessorHung

    world = World(parse(tiny_dict(run={"step_budget_s": 0.2})), _spins)
    try:
        with pytest.raises(ProcessorHung):
            world.run()
        return world.outcome().final
    finally:
        world.close()


def test_a_hung_processor_ends_the_run_and_says_so(tmp_path):
    final = _final_of_a_hung_run()
    assert final.stopped_early
    assert final.stop_reason.startswith("the processor hung, so the run ended there: the processor ran over 0.2 s")


@pytest.mark.timeout(600)
@pytest.mark.parametrize("disposition", ["ignored", "a handler that does not raise"])
def test_a_hung_processor_is_stopped_whatever_sigint_does(disposition):
    # the watchdog's interrupt must not depend on this process's SIGINT handler (a library's,
    # or SIGINT ignored, which makes _thread.interrupt_main a no-op)
    import signal

    noted = []
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN if disposition == "ignored" else
                             (lambda signum, frame: noted.append(signum)))
    try:
        final = _final_of_a_hung_run()
    finally:
        signal.signal(signal.SIGINT, previous)
    assert final.stop_reason.startswith("the processor hung, so the run ended there: the processor ran over 0.2 s")
    assert noted == []  # the other handler was not what stopped it


def test_young_collections_overlapping_on_two_threads_put_the_thresholds_back_once_both_end():
    import gc
    import threading

    from acksim.collector import RUN_GC_THRESHOLDS, young_collections

    before = gc.get_threshold()
    other_in, other_may_leave = threading.Event(), threading.Event()

    def other():  # starts first, ends first
        with young_collections():
            other_in.set()
            other_may_leave.wait(10)

    thread = threading.Thread(target=other)
    thread.start()
    other_in.wait(10)
    with young_collections():
        other_may_leave.set()
        thread.join(10)
        during = gc.get_threshold()  # the other block ended, this one is still under way
        with young_collections():  # nested in one thread too
            pass
        nested = gc.get_threshold()
    assert during == nested == RUN_GC_THRESHOLDS
    assert gc.get_threshold() == before != RUN_GC_THRESHOLDS


def _poison_loop(restart_delay_s: float, **run):
    """A poison job (it kills its worker at every attempt) on a one-microsecond visibility
    timeout with no receive limit, beside a healthy job: a crash loop that never drains."""
    plan = {"accounts": [{"account_id": "poison-1", "deadline_s": 100.0}, {"account_id": "a2", "deadline_s": 101.0}]}
    return parse(tiny_dict(queue={"visibility_timeout_s": 1e-6, "max_receive_count": 0}, plan=plan,
                           workers={"count": 2, "restart_delay_s": restart_delay_s},
                           faults={"poison_accounts": ["poison-1"]}, run=run))


def test_a_loop_of_redeliveries_without_progress_stops_early_naming_its_messages():
    scenario = _poison_loop(0.0, max_redeliveries_without_progress=1000)
    outcome = simulate(scenario, contained=False)
    assert outcome.final.stop_reason == (
        "run.max_redeliveries_without_progress = 1000 redeliveries and no ack, dead-letter or committed effect "
        "since the run began, by virtual time 100.005 s: a loop of redeliveries of message 1 (account poison-1) "
        "4992 times")  # looked at every 10,000 SimPy events: the count is past the limit by then
    assert simulate(scenario, contained=False).history == outcome.history  # the same stop every time
    summary = build_summary(scenario, outcome)
    assert summary["verdict"] == "FAIL" and summary["counts"]["stopped_early"] == 1
    assert summary["stop_reason"] == outcome.final.stop_reason


def test_the_loop_guard_counts_from_the_last_progress():
    # the healthy job commits its effect, then its ack finds the microsecond lease gone: it is
    # redelivered, commits nothing, and so on for ever beside the poison job
    outcome = simulate(_poison_loop(30.0, max_redeliveries_without_progress=1000, max_time_s=20_000.0),
                       contained=False)
    effects = [r.time for r in outcome.history if r.kind == "cleanup_applied"]
    assert len(effects) == 1
    assert outcome.final.stop_reason.startswith(
        f"run.max_redeliveries_without_progress = 1000 redeliveries and no ack, dead-letter or committed effect "
        f"since virtual time {effects[0]:g} s, by virtual time ")
    assert outcome.final.stop_reason.endswith(
        "a loop of redeliveries of message 1 (account poison-1) 1001 times, message 2 (account a2) 1001 times")


def test_the_default_loop_guard_leaves_a_slow_crash_loop_to_its_other_limits():
    outcome = simulate(_poison_loop(30.0, max_time_s=20_000.0), contained=False)  # the default: 100,000
    assert outcome.final.stop_reason == "run.max_time_s = 20000 s reached before the pipeline drained"
    off = simulate(_poison_loop(0.0, max_redeliveries_without_progress=0, max_events=200_000), contained=False)
    assert off.final.stop_reason.startswith("run.max_events = 200000 SimPy events spent")  # 0: no loop guard


@pytest.mark.parametrize("value, problem", [
    (-1, "Input should be greater than or equal to 0 (got -1)"),
    (1.5, "Input should be a valid integer (got 1.5)"),
    (2_000_000_000, "Input should be less than or equal to 1000000000 (got 2000000000)"),
])
def test_a_bad_loop_guard_is_one_line_naming_the_field(value, problem):
    with pytest.raises(ScenarioError) as err:
        parse(tiny_dict(run={"max_redeliveries_without_progress": value}))
    assert str(err.value) == (f"scenario: run.max_redeliveries_without_progress: {problem}; "
                              "allowed: 0 <= value <= 1000000000")
