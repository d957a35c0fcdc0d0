"""Whole-world runs on one account with exact timelines: the three acceptance sentences of the
design documents, crashes in each phase, deployments, conflicts and the lifecycle."""

import numpy as np
import pytest

from acksim.model import process
from acksim.world.actors.renewals import LifecycleOp
from acksim.judges.summary import build_summary, counts
from acksim.world.core import World


def run(scenario, processor=process, ops=None, db_path=None):
    workload = None if ops is None else ({"acct-000001": 100.0}, ops)
    world = World(scenario, processor, db_path=db_path, workload=workload)
    try:
        outcome = world.run()
    finally:
        world.close()
    return outcome, build_summary(scenario, outcome)


def msg_trace(outcome, kinds=("delivered", "crashed", "visibility_expired", "tx_committed",
                              "tx_rolled_back", "cleanup_applied", "outbox_added", "acked",
                              "ack_stale", "nacked", "dead_lettered", "restarted")):
    return [(r.time, r.kind, r.actor, r.receive_count, r.detail) for r in outcome.history if r.kind in kinds]


def holds(summary):
    return {name: v["holds"] for name, v in summary["invariants"].items()}


ALL_HOLD = {"no_cleanup_after_renewal": True, "at_most_once_effect": True, "effect_with_outbox": True,
            "ack_after_durable": True, "no_lost_work": True}


def test_the_happy_path_commits_once_then_acks(tiny):
    outcome, summary = run(tiny())
    # get@101, was_applied@102, apply_once@103, add_once@104, commit@105
    assert msg_trace(outcome) == [
        (100.0, "delivered", "worker-1", 1, ""),
        (105.0, "tx_committed", "worker-1", 1, "2"),
        (105.0, "cleanup_applied", "worker-1", 1, ""),
        (105.0, "outbox_added", "worker-1", 1, "renewal-reminder:acct-000001:1"),
        (105.0, "acked", "worker-1", 1, ""),
    ]
    assert [r.time for r in outcome.history if r.kind == "reminder_sent"] == [110.0]
    assert holds(summary) == ALL_HOLD
    assert summary["slo"]["end_to_end_p50_s"]["value"] == 5.0


def test_a_job_that_arrives_after_a_renewal_is_harmless(tiny):
    outcome, summary = run(tiny(workload={"renew_fraction": 1, "renew_in_flight_fraction": 0,
                                          "renew_lead_s": [60, 60]}))
    assert [(r.time, r.kind, r.cleanup_version) for r in outcome.history
            if r.kind in ("renewed", "term_rolled_over")] == [(40.0, "renewed", 1), (400.0, "term_rolled_over", 2)]
    first = [t for t in msg_trace(outcome) if t[0] < 200]
    assert first == [(100.0, "delivered", "worker-1", 1, ""),
                     (102.0, "tx_committed", "worker-1", 1, "0"),   # get@101, commit@102, no writes
                     (102.0, "acked", "worker-1", 1, "")]
    assert [(r.account_id, r.cleanup_version) for r in outcome.history if r.kind == "cleanup_applied"] == [
        ("acct-000001", 2)]  # only the next, unrenewed term is cleaned up
    assert holds(summary) == ALL_HOLD


def test_a_duplicate_job_is_harmless(tiny):
    outcome, summary = run(tiny(queue={"duplicate_probability": 1.0}, workers={"count": 2}))
    assert [r.detail for r in outcome.history if r.kind == "delivered"] == ["", "duplicate"]
    assert sum(r.kind == "cleanup_applied" for r in outcome.history) == 1
    assert sum(r.kind == "outbox_added" for r in outcome.history) == 1
    assert sum(r.kind == "reminder_sent" for r in outcome.history) == 1
    assert summary["counts"]["conflicts"] >= 1  # both wrote at 103: one got the write lock
    assert holds(summary) == ALL_HOLD


def test_a_worker_that_vanishes_after_its_commit_is_harmless(tiny):
    outcome, summary = run(tiny(faults={"crashes": [{"delivery": 1, "phase": "after_commit"}]}))
    assert msg_trace(outcome) == [
        (100.0, "delivered", "worker-1", 1, ""),
        (105.0, "tx_committed", "worker-1", 1, "2"),
        (105.0, "cleanup_applied", "worker-1", 1, ""),
        (105.0, "outbox_added", "worker-1", 1, "renewal-reminder:acct-000001:1"),
        (105.0, "crashed", "worker-1", 1, "after_commit"),
        (135.0, "restarted", "worker-1", None, ""),
        (160.0, "visibility_expired", "queue", 1, ""),
        (160.0, "delivered", "worker-1", 2, ""),
        (163.0, "tx_committed", "worker-1", 2, "0"),  # get@161, was_applied@162 -> True, commit@163
        (163.0, "acked", "worker-1", 2, ""),
    ]
    assert holds(summary) == ALL_HOLD
    assert summary["slo"]["recovery_time_max_s"]["value"] == 58.0
    assert summary["counts"]["crashes_after_commit"] == 1


def test_a_crash_before_a_store_call_rolls_back_and_the_redelivery_applies(tiny):
    outcome, summary = run(tiny(faults={"crashes": [{"delivery": 1, "phase": "before_call", "call": 2}]}))
    assert msg_trace(outcome)[:4] == [
        (100.0, "delivered", "worker-1", 1, ""),
        (103.0, "crashed", "worker-1", 1, "before_call"),   # apply_once never ran
        (103.0, "tx_rolled_back", "worker-1", 1, "crash"),
        (133.0, "restarted", "worker-1", None, ""),
    ]
    assert [(r.time, r.receive_count) for r in outcome.history if r.kind == "cleanup_applied"] == [(165.0, 2)]
    assert holds(summary) == ALL_HOLD


def test_a_crash_after_a_store_call_loses_the_uncommitted_write(tiny):
    outcome, summary = run(tiny(faults={"crashes": [{"delivery": 1, "phase": "after_call", "call": 2}]}))
    assert [(r.time, r.kind, r.detail) for r in outcome.history if r.kind in ("crashed", "tx_rolled_back")] == [
        (103.0, "crashed", "after_call"), (103.0, "tx_rolled_back", "crash")]
    assert [r.receive_count for r in outcome.history if r.kind == "cleanup_applied"] == [2]
    assert holds(summary) == ALL_HOLD


def test_a_crash_during_the_ack_loses_the_ack_and_the_redelivery_is_a_no_op(tiny):
    outcome, summary = run(tiny(faults={"crashes": [{"delivery": 1, "phase": "during_ack"}]}))
    assert [(t[0], t[1]) for t in msg_trace(outcome) if t[1] in ("crashed", "acked", "delivered")] == [
        (100.0, "delivered"), (105.0, "crashed"), (160.0, "delivered"), (163.0, "acked")]
    assert sum(r.kind == "cleanup_applied" for r in outcome.history) == 1
    assert holds(summary) == ALL_HOLD


def test_a_rolling_deployment_stops_each_worker_in_turn(tiny):
    outcome, _ = run(tiny(workers={"count": 2}, faults={"deployments": [{"at_s": 50, "worker_down_s": 20}]}))
    assert [(r.time, r.kind, r.actor, r.detail) for r in outcome.history
            if r.kind in ("crashed", "restarted", "deployment_started")] == [
        (50.0, "deployment_started", "fault-injector", "worker_down_s=20.0"),
        (50.0, "crashed", "worker-1", "deployment"),
        (70.0, "restarted", "worker-1", ""),
        (70.0, "crashed", "worker-2", "deployment"),
        (90.0, "restarted", "worker-2", ""),
    ]


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
def test_serializable_stores_stop_a_renewal_racing_the_cleanup(tiny, backend, tmp_path):
    # the worker reads the account at 101; the renewal commits at 101.5; apply_once at 103
    race = [LifecycleOp(101.5, "renew", "acct-000001")]
    outcome, summary = run(tiny(stores={"backend": backend}), ops=race,
                           db_path=tmp_path / "s.db" if backend == "sqlite" else None)
    rolled = [(r.time, r.detail) for r in outcome.history if r.kind == "tx_rolled_back"]
    assert rolled[0] == (103.0, "conflict:BusySnapshotError")
    assert summary["counts"]["lifecycle_during_attempts"] == 1
    assert [r.cleanup_version for r in outcome.history if r.kind == "cleanup_applied"] == [2]  # next term only
    assert holds(summary) == ALL_HOLD


def test_read_committed_lets_a_renewal_race_the_cleanup(tiny):
    race = [LifecycleOp(101.5, "renew", "acct-000001")]
    outcome, summary = run(tiny(stores={"isolation": "read_committed"}), ops=race)
    applied = [r for r in outcome.history if r.kind == "cleanup_applied"]
    assert [(r.time, r.cleanup_version) for r in applied][0] == (105.0, 1)
    verdict = summary["invariants"]["no_cleanup_after_renewal"]
    assert verdict["holds"] is False and verdict["example"]["why"] == "cleanup committed while stale: renewed"


def test_a_failing_processor_is_nacked_with_backoff_then_dead_lettered(tiny):
    def broken(job, accounts, cleanup_store, outbox):
        raise ValueError("bad job")

    outcome, summary = run(tiny(), processor=broken)
    assert [(r.time, r.visible_at) for r in outcome.history if r.kind == "nacked"] == [
        (100.0, 102.0), (102.0, 106.0), (106.0, 114.0), (114.0, 130.0), (130.0, 162.0)]
    assert [(r.time, r.kind, r.receive_count) for r in outcome.history if r.kind == "dead_lettered"] == [
        (162.0, "dead_lettered", 5)]
    assert [r.detail for r in outcome.history if r.kind == "processor_error"][0] == "ValueError: bad job"
    # dead-lettered work is counted, not lost
    assert holds(summary) == ALL_HOLD and summary["slo"]["dead_lettered"]["value"] == 1.0


def test_a_far_deadline_rearms_the_scheduler_until_within_the_delay_cap(tiny):
    outcome, _ = run(tiny(workload={"deadline_start_s": 250}, queue={"max_delay_s": 100}))
    pub = [r for r in outcome.history if r.kind == "published"][0]
    assert (pub.time, pub.visible_at, pub.deadline) == (150.0, 250.0, 250.0)


def test_retention_that_drops_a_due_job_is_reported_as_lost_work(tiny):
    outcome, summary = run(tiny(queue={"retention_s": 60}))
    assert [(r.time, r.detail) for r in outcome.history if r.kind == "retention_expired"] == [(60.0, "delayed")]
    verdict = summary["invariants"]["no_lost_work"]
    assert verdict["violations"] == 1 and "dropped by retention" in verdict["example"]["why"]


def test_a_refused_publish_is_reported_as_lost_work(tiny):
    outcome, summary = run(tiny(workload={"payload_bytes": 300_000}))
    refused = [r for r in outcome.history if r.kind == "publish_refused"]
    assert len(refused) == 1 and "queue.max_message_bytes allows at most 262144" in refused[0].detail
    assert summary["invariants"]["no_lost_work"]["example"]["why"].startswith("publish refused")


def test_cron_skips_paused_runs_without_backfill_and_stops_at_its_run_limit(tiny):
    sc = tiny(workload={"accounts": 3, "deadline_start_s": 50},
              scheduler={"mode": "cron", "cron_interval_s": 100, "cron_jitter_s": 0, "publish_latency_s": 1,
                         "cron_run_limit_s": 2, "paused": [[90, 110]]})
    outcome, summary = run(sc)
    cron = [(r.time, r.kind, r.detail) for r in outcome.history if r.kind.startswith("cron_run")]
    assert cron[:4] == [
        (100.0, "cron_run_skipped", "paused"),
        (200.0, "cron_run_started", ""),
        (202.0, "cron_run_finished", "killed_at_run_limit published=2"),
        (300.0, "cron_run_started", ""),
    ]
    assert [r.time for r in outcome.history if r.kind == "published"] == [201.0, 202.0, 301.0]
    assert summary["counts"]["cleanups"] == 3 and holds(summary) == ALL_HOLD


def test_a_crash_loop_is_counted_per_phase(tiny):
    outcome, _ = run(tiny(faults={"crash_after_commit": 1.0}, queue={"max_receive_count": 3}))
    c = counts(outcome.history)
    # commits at delivery 1; deliveries 2 and 3 are stale no-op commits that crash too; then DLQ
    assert (c["crashes_after_commit"], c["dead_lettered"], c["cleanups"]) == (3, 1, 1)


def test_the_no_op_commits_say_why_each_job_was_harmless(tiny):
    _, renewed = run(tiny(workload={"renew_fraction": 1, "renew_in_flight_fraction": 0, "renew_lead_s": [60, 60]}))
    assert (renewed["counts"]["no_op_renewed"], renewed["counts"]["no_op_already_applied"]) == (1, 0)
    _, vanished = run(tiny(faults={"crashes": [{"delivery": 1, "phase": "after_commit"}]}))
    assert (vanished["counts"]["no_op_renewed"], vanished["counts"]["no_op_already_applied"]) == (0, 1)


def test_a_cron_run_longer_than_its_interval_skips_the_missed_trigger(tiny):
    sc = tiny(workload={"accounts": 30, "deadline_start_s": 5},
              scheduler={"mode": "cron", "cron_interval_s": 10, "cron_jitter_s": 0, "publish_latency_s": 1})
    outcome, summary = run(sc)
    cron = [(r.time, r.kind, r.detail) for r in outcome.history if r.kind.startswith("cron_run")]
    assert cron[:4] == [(10.0, "cron_run_started", ""), (40.0, "cron_run_finished", "done published=30"),
                        (40.0, "cron_run_skipped", "overrun"), (40.0, "cron_run_skipped", "overrun")]
    assert summary["counts"]["cleanups"] == 30 and holds(summary) == ALL_HOLD


def test_a_unique_violation_under_read_committed_counts_as_a_conflict(tiny):
    outcome, summary = run(tiny(stores={"isolation": "read_committed"}, queue={"duplicate_probability": 1.0},
                                workers={"count": 2}))
    assert [r.detail for r in outcome.history if r.kind == "tx_rolled_back"][0] == "conflict:UniqueViolation"
    assert summary["counts"]["conflicts"] >= 1 and summary["counts"]["cleanups"] == 1


def _no_marker_check(job, accounts, cleanup_store, outbox):
    account = accounts.get(job.account_id)
    if account is None or account.cleanup_version != job.cleanup_version or account.renewed:
        return
    cleanup_store.apply_once(account_id=job.account_id, cleanup_version=job.cleanup_version)
    outbox.add_once(event_key=f"renewal-reminder:{job.account_id}:{job.cleanup_version}",
                    account_id=job.account_id, cleanup_version=job.cleanup_version)


def test_the_world_waits_for_a_busy_worker_before_it_stops(tiny):
    # the spurious copy's attempt runs long after the queue is empty; its commit must count
    sc = tiny(queue={"duplicate_probability": 1.0}, workers={"count": 2},
              stores={"latency_mean_s": 5.0, "unique_markers": False, "unique_outbox_keys": False})
    outcome, summary = run(sc, processor=_no_marker_check)
    assert outcome.final.markers == (("acct-000001", 1), ("acct-000001", 1))
    assert summary["invariants"]["at_most_once_effect"]["holds"] is False


def test_an_outbox_event_under_the_wrong_key_is_reported(tiny):
    def versionless_key(job, accounts, cleanup_store, outbox):
        account = accounts.get(job.account_id)
        if account is None or account.cleanup_version != job.cleanup_version or account.renewed:
            return
        if not cleanup_store.was_applied(job.account_id, job.cleanup_version):
            cleanup_store.apply_once(account_id=job.account_id, cleanup_version=job.cleanup_version)
            outbox.add_once(event_key=f"renewal-reminder:{job.account_id}", account_id=job.account_id,
                            cleanup_version=job.cleanup_version)

    _, summary = run(tiny(), processor=versionless_key)
    verdict = summary["invariants"]["effect_with_outbox"]
    assert verdict["holds"] is False
    assert verdict["example"]["why"] == "cleanup committed without its outbox event"


def test_sqlite_and_its_in_memory_twin_give_the_same_history():
    from acksim.scenarios import bundled
    from acksim.history import to_csv
    from acksim.scenario import load, parse

    base = load(bundled("smoke.toml")).model_dump()
    histories = []
    for backend in ("sqlite", "memory"):
        base["stores"]["backend"] = backend
        outcome, _ = run(parse(base))
        histories.append(to_csv(outcome.history))
    assert histories[0] == histories[1]


def test_a_crash_loop_without_a_dead_letter_queue_stops_at_the_record_limit(tiny):
    outcome, summary = run(tiny(queue={"max_receive_count": 0}, faults={"crash_before_call": 1.0},
                                run={"max_records": 1000, "idle_check_s": 10}))
    assert 1000 <= len(outcome.history) < 1100 and outcome.final.stopped_early
    assert summary["counts"]["stopped_early"] == 1
    assert summary["invariants"]["no_lost_work"]["example"]["why"] == "message 1 still in flight at the end"


def test_service_time_is_work_before_the_unit_of_work(tiny):
    outcome, _ = run(tiny(workers={"service_time_mean_s": 2.0, "service_time_distribution": "constant"}))
    # delivered at 100, 2 s of work, then get@103 ... commit@107
    assert [(r.time, r.kind) for r in outcome.history if r.kind in ("delivered", "attempt_started", "tx_committed")] == [
        (100.0, "delivered"), (102.0, "attempt_started"), (107.0, "tx_committed")]


def test_poisson_arrivals_space_deadlines_by_exponential_gaps(tiny):
    from acksim.world.actors.renewals import plan_workload
    from acksim.world.core import stream

    sc = tiny(workload={"accounts": 4000, "arrivals": "poisson", "arrival_rate_per_s": 2.0, "deadline_start_s": 0})
    deadlines, _ = plan_workload(sc.workload, stream(1, "workload"))
    gaps = np.diff([0.0, *sorted(deadlines.values())])
    assert len(gaps) == 4000 and gaps.min() > 0
    assert abs(gaps.mean() - 0.5) < 0.03 and abs(gaps.std() - 0.5) < 0.03  # exponential: sd == mean
