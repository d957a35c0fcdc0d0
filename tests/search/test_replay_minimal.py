"""Replay files hold only what differs from their preset's defaults, and still give back the
very scenario the check ran."""

import tomllib

from hypothesis import given, settings

from acksim.scenario import parse
from acksim.search.check import ExampleResult, base_scenario
from acksim.search.replay import minimal_data, replay_text
from acksim.search.strategies import check_scenarios

BASE = base_scenario()


@settings(deadline=None)  # examples: the ci or nightly profile (tests/conftest.py)
@given(check_scenarios(BASE))
def test_a_drawn_example_comes_back_from_its_minimal_form(scenario):
    assert parse(minimal_data(scenario)) == scenario
    text = replay_text(scenario, ExampleResult((), {}, {}, (), []), scenario.processor)
    data = tomllib.loads(text)
    data.pop("expect")
    assert parse(data) == scenario


def test_a_presets_defaults_are_left_out_and_its_name_kept():
    scenario = parse({"queue": {"preset": "sqs-standard", "visibility_timeout_s": 7.0}, "workers": {"count": 2}})
    assert minimal_data(scenario) == {"queue": {"preset": "sqs-standard", "visibility_timeout_s": 7.0},
                                      "workers": {"count": 2}}
    assert minimal_data(parse({})) == {"queue": {"preset": "rest-queue"}}


def test_each_table_is_introduced_by_a_comment():
    scenario = parse({"plan": {"accounts": [{"account_id": "a1", "deadline_s": 10.0}]}, "workers": {"count": 1}})
    text = replay_text(scenario, ExampleResult((), {}, {}, (), []), "acksim.model.processor:process")
    assert "# the workload, shrunk: these accounts and lifecycle steps only\n[plan]" in text
    assert "# the consumers\n[workers]" in text and "accounts = 1000" not in text
    assert len(text.splitlines()) < 40
