"""Scenario validation: defaults from the design documents, one-line errors naming the field
and the allowed range."""

import pytest

from acksim.scenarios import bundled
from acksim.scenario import Scenario, ScenarioError, load, parse


def test_defaults_come_from_the_design_documents_and_sqs():
    s = Scenario()
    q = s.queue
    assert (q.max_message_bytes, q.max_delay_s, q.retention_s, q.fifo_dedup_window_s) == (262_144, 604_800.0, 2_592_000.0, 300.0)
    assert s.scheduler.cron_run_limit_s == 900.0
    assert s.stores.isolation == "serializable" and s.workers.ack_policy == "after_commit"


def test_the_bundled_scenario_is_valid_and_big_enough():
    s = load(bundled("game-renewal.toml"))
    assert s.workload.accounts >= 20_000 and s.workload.deadline_window_s == 86_400
    assert s.workers.count == 8 and s.stores.backend == "sqlite" and s.queue.duplicate_probability == 0.01
    assert len(s.faults.deployments) == 1


@pytest.mark.parametrize("data, message", [
    ({"queue": {"visibility_timeout_s": 0}},
     "x.toml: queue.visibility_timeout_s: Input should be greater than 0 (got 0); allowed: 0.0 < value <= 34560000.0"),
    ({"queue": {"max_delay_s": 700_000}},
     "x.toml: queue.max_delay_s: the rest-queue preset allows 0 <= value <= 604800 (got 700000)"),
    ({"workers": {"count": -1}},
     "x.toml: workers.count: Input should be greater than or equal to 1 (got -1); allowed: 1 <= value <= 1000"),
    ({"workers": {"count": "eight"}},
     "x.toml: workers.count: Input should be a valid integer (got 'eight'); allowed: 1 <= value <= 1000"),
    ({"workers": {"count": True}}, "x.toml: workers.count: Input should be a valid integer (got True)"),
    ({"stores": {"unique_markers": "yes"}}, "x.toml: stores.unique_markers: Input should be a valid boolean (got 'yes')"),
    ({"queue": {"visibility_timeout_s": "60"}}, "x.toml: queue.visibility_timeout_s: Input should be a valid number (got '60')"),
    ({"scheduler": {"paused": [[500, 100]]}},
     "x.toml: scheduler.paused: each window must be [start_s, end_s] with start_s < end_s; [500, 100] is not"),
    ({"queue": {"kind": "fifo", "duplicate_probability": 0.1}},
     "x.toml: queue.duplicate_probability: a FIFO queue delivers no spurious duplicates; set 0 or use kind = 'standard'"),
    ({"queue": {"visibility": 30}}, "x.toml: queue.visibility: unknown key (allowed keys here: preset, kind, "),
    ({"bogus": 1}, "x.toml: bogus: unknown key (allowed keys here: name, processor, processor_path, seed, epoch, workload,"),
    ({"stores": {"isolation": "read_committed"}},
     "x.toml: stores.isolation: sqlite offers only 'serializable'; use backend = 'postgres' or 'memory' for "
     "'read_committed'"),
    ({"queue": {"duplicate_probability": 1.5}},
     "x.toml: queue.duplicate_probability: Input should be less than or equal to 1 (got 1.5); allowed: 0.0 <= value <= 1.0"),
    ({"workload": {"renew_lead_s": [60, 1]}},
     "x.toml: workload.renew_lead_s: must be [low, high] with low <= high, got [60.0, 1.0]"),
    ({"slo": {"latency_p99_s": 3}}, "x.toml: slo.latency_p99_s: unknown key (allowed keys here: throughput_per_s,"),
])
def test_bad_values_get_one_line_naming_the_field_and_the_range(data, message):
    with pytest.raises(ScenarioError) as err:
        parse(data, "x.toml")
    text = str(err.value)
    assert "\n" not in text
    assert text.startswith(message)


def test_missing_and_unreadable_files(tmp_path):
    with pytest.raises(ScenarioError, match=r"nope.toml: scenario file not found$"):
        load(tmp_path / "nope.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("[queue\nvisibility_timeout_s = 3\n")
    with pytest.raises(ScenarioError, match=r"bad.toml: not valid TOML: "):
        load(bad)
