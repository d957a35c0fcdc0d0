"""Presets: every default has its source, a scenario's fields win over its preset's, the
documented limits hold, ``acksim presets`` lists them, and each preset's characteristic
hazard shows up in a small run of its own (the rows of the presets table, docs/presets-and-incidents.md)."""

import pytest

from acksim.cli.main import main
from acksim.scenario.presets import PRESETS
from acksim.scenario import ScenarioError, parse
from acksim.judges.summary import build_summary
from acksim.world.core import simulate


def scenario(preset: str, accounts: int = 1, **tables):
    """A small exact-timing scenario on ``preset``: ``accounts`` accounts due at 60 s + 1 s
    each, 2 workers, constant 0.01 s store latency; ``tables`` update its tables."""
    data = {"name": f"hazard-{preset}", "seed": 1, "queue": {"preset": preset, "ack_latency_s": 0},
            "scheduler": {"publish_latency_s": 0}, "workers": {"count": 2, "ack_policy": "after_commit"},
            "stores": {"backend": "memory", "latency_mean_s": 0.01, "latency_distribution": "constant"},
            "run": {"max_time_s": 20_000},
            "plan": {"accounts": [{"account_id": f"p{i:03d}", "deadline_s": 60 + i} for i in range(accounts)]}}
    for table, fields in tables.items():
        data[table] = {**data.get(table, {}), **fields}
    return parse(data, f"hazard-{preset}")


def run(sc):
    outcome = simulate(sc)
    return build_summary(sc, outcome), outcome.history


def witnesses(preset: str, history) -> int:
    def match(r, spec):
        kind, _, prefix = spec.partition(":")
        return r.kind == kind and r.detail.startswith(prefix)
    return sum(1 for r in history if any(match(r, s) for s in PRESETS[preset].hazard_kinds))


def test_every_default_of_every_preset_names_its_source():
    assert len(PRESETS) == 11
    for p in PRESETS.values():
        fields = {f"{t}.{k}" for t, kv in p.tables.items() for k in kv}
        assert fields == set(p.sources), p.name
        assert all(src.strip() for src in p.sources.values())
        assert p.doc.count("\n") == len(fields) + len(p.limits) + 1
        parse({"queue": {"preset": p.name}}, p.name)  # its own defaults are valid


def test_a_scenario_field_wins_over_its_preset_and_the_rest_come_from_the_preset():
    sc = parse({"queue": {"preset": "sqs-standard", "visibility_timeout_s": 60}})
    assert (sc.queue.visibility_timeout_s, sc.queue.max_delay_s, sc.queue.retention_s) == (60, 900, 345_600)
    sc = parse({"queue": {"preset": "celery-redis"}, "workers": {"count": 3}})
    assert (sc.workers.count, sc.workers.ack_policy, sc.queue.eta_held_by_worker) == (3, "before_processing", True)
    assert parse({}).queue.preset == "rest-queue"


@pytest.mark.parametrize("data, message", [
    ({"queue": {"preset": "sqs-standard", "visibility_timeout_s": 50_000}},
     "x: queue.visibility_timeout_s: the sqs-standard preset allows 0 <= value <= 43200 (got 50000)"),
    ({"queue": {"preset": "sqs-fifo", "max_delay_s": 1000}},
     "x: queue.max_delay_s: the sqs-fifo preset allows 0 <= value <= 900 (got 1000)"),
    ({"queue": {"preset": "kafka"}}, "x: queue.preset: unknown preset 'kafka'; allowed: rest-queue, sqs-standard"),
    ({"queue": {"preset": 3}}, "x: queue.preset: unknown preset 3; allowed: rest-queue"),
    ({"queue": {"preset": True}}, "x: queue.preset: unknown preset true; allowed: rest-queue"),
    ({"queue": {"visibility_timeout_s": 600, "max_lease_s": 60}},
     "x: queue.max_lease_s: must be at least visibility_timeout_s (600), got 60"),
    ({"queue": {"redelivery": "none", "heartbeat_interval_s": 5}},
     "x: queue.heartbeat_interval_s: a pop-on-fetch queue (redelivery = 'none') has no lease to extend"),
    ({"faults": {"scheduler_stalls": [[10, 20]]}},
     "x: scheduler.mode: scheduler_stalls, misfire_grace_s and catchup apply to mode = 'cron' only"),
    ({"fanout": {"subscribers": 3}}, "x: fanout.updates: set at least 1 to run the fan-out design"),
    ({"workers": {"count": 2}, "faults": {"kills": [{"at_s": 1, "worker": 3}]}},
     "x: faults.kills: worker numbers go from 1 to workers.count (2), got 3"),
    ({"plan": {"accounts": [{"account_id": "a", "deadline_s": 1}]}, "faults": {"poison_accounts": ["b"]}},
     "x: faults.poison_accounts: 'b' is not in plan.accounts"),
    ({"workers": {"stop_when_lease_lost": True, "ack_policy": "before_processing"}},
     "x: workers.stop_when_lease_lost: needs a lease to check"),
])
def test_out_of_range_or_unknown_gets_one_line(data, message):
    with pytest.raises(ScenarioError) as err:
        parse(data, "x")
    assert str(err.value).startswith(message) and "\n" not in str(err.value)


def test_presets_command_lists_and_shows(capsys):
    assert main(["presets"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in out[:11]] == list(PRESETS)
    assert main(["presets", "rabbitmq-quorum"]) == 0
    shown = capsys.readouterr().out
    assert ("queue.delivery_limit = 20  [RMQ-QQ, RMQ-PR11937: delivery-limit 20 since 4.0; a message returned "
            "more times than the limit is dropped or dead-lettered (21 deliveries)]") in shown
    assert main(["presets", "kafka"]) == 2
    assert capsys.readouterr().err.startswith("acksim: error: presets: unknown preset 'kafka'")


# --- the characteristic hazard of each preset, shown -------------------------------------

def test_rest_queue_a_job_longer_than_its_visibility_timeout_runs_again_concurrently():
    summary, h = run(scenario("rest-queue", workers={"service_time_mean_s": 45, "service_time_distribution": "constant"}))
    assert witnesses("rest-queue", h) >= 1
    first, second = [r for r in h if r.kind == "delivered"][:2]
    assert (first.time, second.time, second.actor != first.actor) == (60.0, 90.0, True)
    assert summary["counts"]["cleanups"] == 1


def test_sqs_standard_duplicates_arrive_without_any_failure():
    summary, h = run(scenario("sqs-standard", accounts=200, queue={"duplicate_probability": 0.02}))
    assert summary["counts"]["crashes"] == 0 and summary["counts"]["duplicate_deliveries"] >= 1
    assert witnesses("sqs-standard", h) >= 1
    assert summary["invariants"]["at_most_once_effect"]["holds"]


@pytest.mark.parametrize("restart_s", [10, 600])
def test_sqs_fifo_deduplicates_only_within_5_minutes(restart_s):
    sc = scenario("sqs-fifo", scheduler={"publish_crash_probability": 0.9, "restart_delay_s": restart_s})
    summary, h = run(sc)
    crashes = summary["counts"]["scheduler_crashes"]  # died between its publish and its record of it
    assert crashes >= 1 and summary["counts"]["scheduler_publishes"] == 1 + crashes
    if restart_s == 10:  # the republishes fall within the 5-minute window: one job
        assert (summary["counts"]["jobs"], summary["counts"]["deduplicated"]) == (1, crashes)
    else:  # each republish comes after the window: a second job each time
        assert (summary["counts"]["jobs"], summary["counts"]["deduplicated"]) == (1 + crashes, 0)
    assert summary["counts"]["cleanups"] == 1


def test_rabbitmq_classic_ack_timeout_requeues_the_channel():
    summary, h = run(scenario("rabbitmq-classic", workers={"service_time_mean_s": 2000,
                                                            "service_time_distribution": "constant"}))
    expired = [r for r in h if r.kind == "visibility_expired"]
    # received at 60, the 30-minute ack timeout lapses at 1860, noticed at the check of 1860
    assert [(r.time, r.detail) for r in expired][:1] == [(1860.0, "consumer_timeout")]
    assert witnesses("rabbitmq-classic", h) >= 1 and summary["counts"]["cleanups"] == 1


@pytest.mark.parametrize("exhaustion, kind", [("dead_letter", "dead_lettered"), ("drop", "dropped")])
def test_rabbitmq_quorum_delivery_limit(exhaustion, kind):
    summary, h = run(scenario("rabbitmq-quorum", queue={"on_worker_lost": "requeue", "on_exhaustion": exhaustion},
                              faults={"poison_accounts": ["p000"]}, workers={"restart_delay_s": 1}))
    ended = [r for r in h if r.kind == kind]
    # returned more times than the limit of 20 (RMQ-QQ): ended at the 21st return, after 21 deliveries
    assert [(r.receive_count, r.detail) for r in ended] == [(21, "delivery_limit")]
    assert witnesses("rabbitmq-quorum", h) == 1
    assert summary["invariants"]["no_lost_work"]["holds"] == (exhaustion == "dead_letter")


def test_redis_streams_a_killed_consumers_entry_waits_for_the_claimer():
    kill = {"kills": [{"at_s": 100, "worker": 1, "down_s": 10}]}
    slow = {"service_time_mean_s": 200, "service_time_distribution": "constant"}
    summary, h = run(scenario("redis-streams", faults=kill, workers=slow))
    claimed = [r for r in h if r.kind == "visibility_expired"]
    assert [(r.time, r.detail) for r in claimed] == [(360.0, "claimed")]  # idle 300 s at the sweep of 360
    assert summary["counts"]["cleanups"] == 1
    never, h = run(scenario("redis-streams", faults=kill, workers=slow, queue={"sweep_interval_s": 0}))
    assert never["invariants"]["no_lost_work"]["example"]["why"] == "message 1 still in flight at the end"


def test_redis_streams_length_cap_trims_pending_entries():
    summary, h = run(scenario("redis-streams", accounts=10, queue={"max_length": 5},
                              faults={"kills": [{"at_s": 0, "worker": w, "down_s": 500} for w in (1, 2)]}))
    assert summary["counts"]["trimmed"] == 5 and witnesses("redis-streams", h) == 5
    assert "trimmed by the length cap" in summary["invariants"]["no_lost_work"]["example"]["why"]


def test_celery_redis_eta_beyond_the_visibility_timeout_runs_once_per_copy():
    summary, h = run(scenario("celery-redis", workers={"count": 3},
                              plan={"accounts": [{"account_id": "p000", "deadline_s": 7200}]}))
    assert [r.time for r in h if r.kind == "delivered"] == [0.0, 3600.0, 7200.0]
    assert len([r for r in h if r.kind == "attempt_started" and r.time >= 7200]) >= 3
    assert witnesses("celery-redis", h) >= 1 and summary["counts"]["cleanups"] == 1


def test_bullmq_a_second_stall_fails_the_job():
    summary, h = run(scenario("bullmq", faults={"poison_accounts": ["p000"]}, queue={"on_worker_lost": "lease"},
                              workers={"restart_delay_s": 1}))
    assert [r.detail for r in h if r.kind in ("visibility_expired", "dead_lettered")] == [
        "stalled", "stalled", "max_stalled_count"]
    assert witnesses("bullmq", h) == 3 and summary["counts"]["dead_lettered"] == 1


def test_temporal_a_crashed_activity_waits_out_its_start_to_close_timeout():
    summary, h = run(scenario("temporal", faults={"kills": [{"at_s": 100, "worker": 1, "down_s": 10}]},
                              workers={"service_time_mean_s": 200, "service_time_distribution": "constant"}))
    again = [r for r in h if r.kind == "delivered"][1]
    assert again.time == 360.0  # received at 60, crashed at 100, retried only at 60 + 300
    assert witnesses("temporal", h) == 1 and summary["counts"]["cleanups"] == 1


def test_airflow_catchup_runs_only_the_latest_missed_interval():
    summary, h = run(scenario("airflow", faults={"scheduler_stalls": [[250, 1250]]}))
    assert [r.detail.split(":")[0] for r in h if r.kind == "cron_run_skipped"] == ["misfire"] * 3
    assert [r.time for r in h if r.kind == "cron_run_started"][:1] == [1250.0]
    assert witnesses("airflow", h) == 3


def test_cron_a_stalled_trigger_past_its_grace_is_skipped():
    summary, h = run(scenario("cron", scheduler={"cron_jitter_s": 0}, faults={"scheduler_stalls": [[299, 302]]}))
    assert [(r.time, r.detail) for r in h if r.kind == "cron_run_skipped"] == [(302.0, "misfire: 2 s late")]
    assert [r.time for r in h if r.kind == "cron_run_started"][:1] == [600.0]
    assert witnesses("cron", h) == 1 and summary["counts"]["cleanups"] == 1


def test_celery_a_held_eta_job_does_not_block_its_worker():
    plan = {"accounts": [{"account_id": "later", "deadline_s": 3000}, {"account_id": "sooner", "deadline_s": 100}]}
    summary, h = run(scenario("celery-redis", workers={"count": 1}, plan=plan))
    applied = {r.account_id: r.time for r in h if r.kind == "cleanup_applied"}
    assert applied["sooner"] == pytest.approx(100.05, abs=0.01)  # not after the held job
    assert applied["later"] >= 3000 and summary["counts"]["cleanups"] == 2


def test_celery_a_worker_that_goes_down_loses_the_jobs_it_held():
    plan = {"accounts": [{"account_id": f"p{i}", "deadline_s": 600} for i in range(3)]}
    summary, h = run(scenario("celery-redis", workers={"count": 1}, plan=plan, queue={"visibility_timeout_s": 900},
                              faults={"kills": [{"at_s": 300, "worker": 1, "down_s": 10}]}))
    # all three were held since 0; the kill at 300 loses them; they return at 900 and run then
    assert [r.time for r in h if r.kind == "visibility_expired"] == [900.0] * 3
    assert sorted(round(r.time) for r in h if r.kind == "cleanup_applied") == [900] * 3


@pytest.mark.parametrize("catchup, runs_at, skipped", [("none", [1500.0], 4), ("latest", [1250.0], 3),
                                                       ("all", [1250.0] * 4, 0)])
def test_catchup_after_a_stall(catchup, runs_at, skipped):
    sc = scenario("cron", scheduler={"cron_jitter_s": 0, "catchup": catchup, "publish_latency_s": 0},
                  faults={"scheduler_stalls": [[250, 1250]]})
    summary, h = run(sc)  # the triggers of 300, 600, 900 and 1200 fall in the stall
    assert [r.time for r in h if r.kind == "cron_run_started"] == runs_at
    assert len([r for r in h if r.kind == "cron_run_skipped"]) == skipped
    assert summary["counts"]["cleanups"] == 1


def test_window_based_cron_is_not_starved_by_accounts_lost_earlier():
    plan = {"accounts": [{"account_id": f"p{t}", "deadline_s": t} for t in (110, 120, 210, 220, 310)]}
    sc = scenario("cron", plan=plan, scheduler={"cron_interval_s": 100, "cron_jitter_s": 0, "cron_batch": 2,
                                               "cron_selection": "window"},
                  faults={"scheduler_stalls": [[199, 202]]})
    summary, h = run(sc)
    assert summary["counts"]["cleanups"] == 3  # the windows after the misfire still publish
    lost = summary["invariants"]["no_lost_work"]
    assert lost["violations"] == 2 and lost["example"]["account_id"] == "p110"


def test_celery_early_ack_comes_before_the_job_can_crash_its_worker():
    summary, h = run(scenario("celery-redis", workers={"ack_policy": "before_processing"},
                              queue={"on_worker_lost": "requeue"}, faults={"poison_accounts": ["p000"]}))
    assert [r.kind for r in h if r.kind in ("acked", "crashed", "nacked", "delivered")] == [
        "delivered", "acked", "crashed"]  # acked on receipt: nothing left to requeue
    assert summary["invariants"]["no_lost_work"]["violations"] == 1


def test_on_worker_lost_is_about_the_child_not_a_killed_worker():
    summary, h = run(scenario("celery-redis", queue={"visibility_timeout_s": 300},
                              workers={"service_time_mean_s": 50, "service_time_distribution": "constant"},
                              faults={"kills": [{"at_s": 80, "worker": 1, "down_s": 10}]}))
    assert [r.detail for r in h if r.kind == "acked"] == [""]  # no "worker_lost" ack: the lease brings it back
    assert [r.time for r in h if r.kind == "visibility_expired"] == [300.0]  # received at 0 (an ETA job)
    assert summary["counts"]["cleanups"] == 1


def test_a_held_job_killed_while_running_is_recorded():
    summary, h = run(scenario("celery-redis", queue={"visibility_timeout_s": 600},
                              workers={"count": 1, "service_time_mean_s": 50, "service_time_distribution": "constant"},
                              plan={"accounts": [{"account_id": "p000", "deadline_s": 100}]},
                              faults={"kills": [{"at_s": 120, "worker": 1, "down_s": 10}]}))
    crashed = [(r.time, r.message_id, r.detail) for r in h if r.kind == "crashed"]
    assert crashed == [(120.0, None, "killed"), (120.0, 1, "killed")]  # the worker, and the job it was running
    assert summary["slo"]["recovery_time_p99_s"]["value"] is not None and summary["counts"]["cleanups"] == 1
