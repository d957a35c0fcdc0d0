"""A processor that misbehaves gets a clear verdict in bounded time, never a hung harness."""

import time

import pytest

from acksim.model import process
from acksim.search.check import base_scenario, run_example
from acksim.scenario import Scenario


def one_account(budget_s=5.0, **faults):
    data = base_scenario().model_dump(exclude_none=True)
    data["run"]["step_budget_s"] = budget_s
    data["plan"] = {"accounts": [{"account_id": "a1", "deadline_s": 10.0}], "steps": []}
    data["faults"].update(faults)
    return Scenario.model_validate(data)


def swallows_its_crash(job, accounts, cleanup_store, outbox):
    while True:
        try:
            process(job, accounts, cleanup_store, outbox)
            return
        except BaseException:  # noqa: BLE001 - the point of this processor
            continue


def spins(job, accounts, cleanup_store, outbox):
    accounts.get(job.account_id)
    while True:
        pass


def sleeps_a_minute(job, accounts, cleanup_store, outbox):
    time.sleep(60)
    process(job, accounts, cleanup_store, outbox)


def exits(job, accounts, cleanup_store, outbox):
    raise SystemExit(0)


def loops_on_its_stores(job, accounts, cleanup_store, outbox):
    while True:
        try:
            accounts.get(job.account_id)
        except Exception:  # noqa: BLE001
            pass


def raises(job, accounts, cleanup_store, outbox):
    accounts.get(job.account_id)
    raise KeyError("no such region")


def test_a_processor_that_swallows_its_crash_is_reported_and_left_suspended():
    result = run_example(one_account(crashes=[{"delivery": 1, "phase": "before_call", "call": 1}]),
                         swallows_its_crash)
    assert result.failures == ("processor_error",)
    assert result.errors == ["swallowed its crash and kept calling stores (1000 refused calls) and was left suspended"]


@pytest.mark.timeout(600)  # a spin nothing stops would hang here
def test_a_processor_that_never_returns_is_cut_at_its_wall_clock_budget():
    result = run_example(one_account(budget_s=0.5), spins)
    assert result.failures == ("processor_hung",)
    assert "ran over 0.5 s of wall-clock time" in result.errors[-1]


def test_time_sleep_in_a_processor_passes_virtual_time_not_wall_time():
    result = run_example(one_account(), sleeps_a_minute)
    delivered = [r.time for r in result.history if r.kind == "delivered"]
    applied = [r.time for r in result.history if r.kind == "cleanup_applied"]
    assert delivered[:2] == [10.0, 15.0]  # the minute outlived the visibility timeout: redelivered
    assert applied == [pytest.approx(70.0, abs=0.01)]  # one effect, a minute of virtual time later
    assert result.failures == ()  # slow, but the reference logic still holds


def test_an_exception_of_the_processor_is_a_finding_with_its_traceback():
    result = run_example(one_account(), raises)
    assert result.failures == ("processor_error",)
    assert "KeyError: 'no such region'" in result.errors[0] and "in raises" in result.errors[0]


@pytest.mark.parametrize("processor", [swallows_its_crash, spins, raises])
def test_the_harness_keeps_working_after_a_misbehaving_processor(processor):
    run_example(one_account(budget_s=0.3, crashes=[{"delivery": 1, "phase": "after_call", "call": 0}]), processor)
    assert run_example(one_account(), process).failures == ()


def test_sys_exit_in_a_processor_is_a_finding_not_the_end_of_the_harness():
    result = run_example(one_account(), exits)
    assert result.failures == ("processor_error",) and "SystemExit: 0" in result.errors[0]


def test_a_processor_looping_on_its_stores_is_reported_as_hung():
    result = run_example(one_account(), loops_on_its_stores)
    assert result.failures == ("processor_hung",)
    assert "made over 10000 store calls in one attempt" in result.errors[-1]


@pytest.mark.parametrize("length, error", [(-1, "ValueError"), (float("nan"), "ValueError"),
                                           (float("inf"), "OverflowError")])
def test_virtual_sleep_refuses_what_time_sleep_refuses(length, error):
    def sleeper(job, accounts, cleanup_store, outbox):
        time.sleep(length)

    result = run_example(one_account(), sleeper)
    assert result.failures == ("processor_error",) and error in result.errors[0]


class _Unprintable(Exception):
    def __str__(self):
        raise RuntimeError("str() refused")


def raises_unprintable(job, accounts, cleanup_store, outbox):
    accounts.get(job.account_id)
    raise _Unprintable()


def test_an_exception_whose_str_raises_is_a_finding_not_a_harness_error():
    result = run_example(one_account(), raises_unprintable)
    assert result.failures == ("processor_error",)
    assert "_Unprintable" in result.errors[0]
    assert any(r.detail == "_Unprintable: <str() of the exception failed>" for r in result.history
               if r.kind == "processor_error")
