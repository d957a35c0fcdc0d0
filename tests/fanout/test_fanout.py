"""The shipment fan-out design run in its world: exactly once in effect per subscriber,
completion only with all N records, and the error classes (4xx, 429, 5xx) on the queue."""

from pathlib import Path

import pytest

from acksim.model.shipment import deliver_keyed_by_attempt
from acksim.cli.main import main
from acksim.judges.fanout import build_fanout_summary
from acksim.world.fanout import FanoutWorld
from acksim.scenario import load, parse

BUNDLED = Path(__file__).resolve().parents[2] / "scenarios" / "shipment-fanout.toml"


def fanout(processor=None, **tables):
    data = {"name": "fo", "seed": 3, "fanout": {"updates": 10, "subscribers": 4, "endpoint_latency_s": 0.2},
            "queue": {"visibility_timeout_s": 30, "ack_latency_s": 0}, "workers": {"count": 3, "restart_delay_s": 5},
            "stores": {"latency_mean_s": 0.01}, "run": {"max_time_s": 20_000}}
    for table, fields in tables.items():
        data[table] = {**data.get(table, {}), **fields}
    sc = parse(data, "fo")
    world = FanoutWorld(sc, processor)
    try:
        outcome = world.run()
    finally:
        world.close()
    return build_fanout_summary(sc, outcome), outcome


def test_bundled_scenario_holds_and_is_deterministic():
    sc = load(BUNDLED)
    runs = []
    for _ in range(2):
        world = FanoutWorld(sc)
        try:
            runs.append(world.run())
        finally:
            world.close()
    assert runs[0].history == runs[1].history
    summary = build_fanout_summary(sc, runs[0])
    assert all(v["holds"] for v in summary["invariants"].values())
    c = summary["counts"]
    assert c["jobs"] == 1600 and c["crashes"] > 100 and c["subscriber_duplicates"] > 0
    assert 0 < c["updates_completed"] < 200 and c["dead_lettered"] > 0  # the 400s leave updates incomplete


def test_crashes_around_the_send_are_harmless_when_the_subscriber_honours_the_key():
    summary, outcome = fanout(faults={"crash_after_call": 0.2, "crash_after_commit": 0.2},
                              queue={"max_receive_count": 0})
    c = summary["counts"]
    assert c["crashes"] > 5 and c["subscriber_duplicates"] > 0
    assert (c["subscriber_effects"], c["records"], c["updates_completed"]) == (40, 40, 10)
    assert all(v["holds"] for v in summary["invariants"].values())


def test_without_subscriber_dedup_a_resend_is_a_second_effect():
    summary, _ = fanout(fanout={"updates": 10, "subscribers": 4, "subscriber_dedup": False},
                        faults={"crash_after_call": 0.2})
    found = summary["invariants"]["exactly_once_in_effect"]
    assert not found["holds"] and found["example"]["why"].endswith("effects at the subscriber")


def test_a_key_that_carries_the_receive_count_defeats_the_subscribers_dedup():
    summary, _ = fanout(deliver_keyed_by_attempt, faults={"crash_after_call": 0.2})
    assert not summary["invariants"]["exactly_once_in_effect"]["holds"]


def test_4xx_is_dead_lettered_at_once_and_the_update_never_completes():
    summary, outcome = fanout(fanout={"updates": 2, "subscribers": 3, "rejecting_subscribers": [2]})
    dead = [r for r in outcome.history if r.kind == "dead_lettered"]
    assert [(r.account_id, r.receive_count, r.detail) for r in dead] == [
        ("cleanup:upd-1:sub-2", 1, "rejected"), ("cleanup:upd-2:sub-2", 1, "rejected")]
    assert summary["counts"]["updates_completed"] == 0 and summary["counts"]["records"] == 4
    assert all(v["holds"] for v in summary["invariants"].values())


def test_429_waits_for_retry_after_and_5xx_backs_off_within_its_cap():
    _, outcome = fanout(fanout={"updates": 5, "subscribers": 4, "rate_limit_probability": 0.3,
                                "retry_after_s": 45, "server_error_probability": 0.3,
                                "backoff_base_s": 2, "backoff_max_s": 8}, queue={"max_receive_count": 0})
    h = outcome.history
    sends = {}
    for r in h:
        if r.kind == "send":
            sends[r.time] = int(r.detail.split()[0])
    delays = {(r.time, round(r.visible_at - r.time, 6)) for r in h if r.kind == "nacked"}
    assert delays and all(d == 45 or d in (2, 4, 8) for _t, d in delays)
    assert any(d == 45 for _t, d in delays) and any(d in (2, 4, 8) for _t, d in delays)
    assert {429, 503, 200} <= set(sends.values())


def test_completion_is_marked_once_after_the_last_record():
    _, outcome = fanout(faults={"crash_after_commit": 0.3})
    h = outcome.history
    for upd in ("upd-1", "upd-7"):
        last = max(r.time for r in h if r.kind == "delivery_recorded" and r.detail.startswith(upd + " "))
        marks = [r.time for r in h if r.kind == "update_completed" and r.account_id == upd]
        assert len(marks) == 1 and marks[0] >= last


def test_run_command_runs_the_fanout_design(tmp_path, capsys):
    assert main(["run", str(BUNDLED), "--out", str(tmp_path / "r")]) == 0
    assert capsys.readouterr().out.startswith("PASS: shipment-fanout seed 11: 200 updates x 8 subscribers")
    assert main(["run", str(BUNDLED), "--out", str(tmp_path / "s"),
                 "--processor", "acksim.model.processor:process"]) == 2
    assert "--processor: 'acksim.model.processor:process' must accept (task, records, endpoint)" in capsys.readouterr().err
    assert not (tmp_path / "s").exists()


@pytest.mark.parametrize("bad, message", [
    ({"rejecting_subscribers": [9]}, "x: fanout.rejecting_subscribers: subscriber numbers go from 1 to subscribers (4), got 9"),
    ({"rate_limit_probability": 0.6, "server_error_probability": 0.6}, "must add up to at most 1"),
])
def test_bad_fanout_tables_get_one_line(bad, message):
    from acksim.scenario import ScenarioError
    with pytest.raises(ScenarioError) as err:
        parse({"fanout": {"updates": 1, "subscribers": 4, **bad}}, "x")
    assert message in str(err.value) and "\n" not in str(err.value)


def none_returning(task, records, endpoint, **_policy):
    endpoint.send(task.subscriber, task.update_id, task.key)


def test_a_processor_that_returns_no_decision_is_a_finding():
    summary, outcome = fanout(none_returning, fanout={"updates": 1, "subscribers": 2}, queue={"max_receive_count": 2})
    errors = [r for r in outcome.history if r.kind == "processor_error"]
    assert errors and errors[0].detail.startswith("TypeError: the processor returned None")
    assert summary["counts"]["processor_errors"] == len(errors) == 4  # 2 tasks x 2 receives


def test_retries_exhausted_without_an_effect_break_exactly_once():
    summary, _ = fanout(fanout={"updates": 1, "subscribers": 2, "server_error_probability": 1.0},
                        queue={"max_receive_count": 3})
    found = summary["invariants"]["exactly_once_in_effect"]
    assert found["violations"] == 2 and found["example"]["why"] == "never delivered, and not rejected by the subscriber"


def test_a_second_kill_while_down_extends_the_downtime():
    kills = [{"at_s": 61, "worker": 1, "down_s": 100}, {"at_s": 100, "worker": 1, "down_s": 200}]
    summary, outcome = fanout(faults={"kills": kills}, workers={"count": 1},
                              fanout={"updates": 1, "subscribers": 1, "endpoint_latency_s": 5})
    h = outcome.history
    assert [(r.time, r.detail) for r in h if r.kind == "crashed"] == [(61.0, "killed")]  # mid-call
    assert [r.time for r in h if r.kind == "restarted"] == [300.0]
    assert summary["counts"]["records"] == 1 and all(v["holds"] for v in summary["invariants"].values())


def test_an_update_that_can_never_complete_is_reported():
    # pop-on-fetch: a delivery whose record conflicted is gone, its effect done, its update never complete
    summary, _ = fanout(queue={"preset": "cron"}, fanout={"updates": 5, "subscribers": 3, "endpoint_latency_s": 0.5})
    found = summary["invariants"]["every_update_completes"]
    assert summary["counts"]["conflicts"] > 0 and not found["holds"]
    assert found["example"]["why"].startswith("never complete: ")
