"""Process pauses, partitions, broker restarts and execution time limits on one account, with
exact timelines. The tiny world: deadline at 100 s, store calls 1 s each (get@101,
was_applied@102, apply_once@103, add_once@104, commit@105), ack latency 0, visibility timeout
60 s, restart delay 30 s."""

import pytest

from acksim.judges.hazards import ack_lost_to_partition_or_restart, hazards_hit, paused_worker_resumed_after_lease_moved
from acksim.judges.summary import build_summary
from acksim.scenario import ScenarioError, parse
from acksim.world.core import simulate
from helpers.tinyworld import tiny_dict

KINDS = ("delivered", "worker_paused", "worker_resumed", "partition_started", "partition_healed", "ack_failed",
         "broker_down", "broker_restarted", "publish_deferred", "published", "visibility_expired", "crashed",
         "restarted", "tx_committed", "tx_rolled_back", "lease_lost", "acked", "ack_stale", "nacked", "dropped",
         "dead_lettered")


def run(_tiny, **sections):
    scenario = parse(tiny_dict(**sections), "tiny")
    outcome = simulate(scenario)
    return outcome.history, build_summary(scenario, outcome)


def trace(history, until=float("inf")):
    return [(r.time, r.kind, r.actor, r.detail) for r in history if r.kind in KINDS and r.time <= until]


def holds(summary):
    return {name for name, v in summary["invariants"].items() if v["holds"]}


ALL = {"no_cleanup_after_renewal", "at_most_once_effect", "effect_with_outbox", "ack_after_durable", "no_lost_work"}


# --- process pauses -----------------------------------------------------------------------------
def test_a_paused_worker_resumes_after_its_lease_moved_on_and_its_stale_write_conflicts(tiny):
    history, summary = run(tiny, workers={"count": 2},
                           faults={"pauses": [{"worker": 1, "at_s": 102.5, "duration_s": 100}]})
    assert trace(history, 202.5) == [
        (0.0, "published", "scheduler", ""),
        (100.0, "delivered", "worker-1", ""),
        (102.5, "worker_paused", "worker-1", "100 s"),     # between was_applied@102 and apply_once
        (160.0, "visibility_expired", "queue", ""),       # no ack, no heartbeat: the lease lapses
        (160.0, "delivered", "worker-2", ""),
        (165.0, "tx_committed", "worker-2", "2"),
        (165.0, "acked", "worker-2", ""),
        (202.5, "worker_resumed", "worker-1", "lease_moved"),
        (202.5, "tx_rolled_back", "worker-1", "conflict:BusySnapshotError"),  # its apply_once, 100 s late
    ]
    # the retry finds the work done; the stale ack deletes nothing
    assert [(r.kind, r.detail) for r in history if r.actor == "worker-1" and r.kind in ("acked", "ack_stale")] == [
        ("ack_stale", "deleted")]
    assert sum(r.kind == "cleanup_applied" for r in history) == 1 and holds(summary) == ALL
    assert paused_worker_resumed_after_lease_moved(history)


def test_a_pause_at_a_store_call_freezes_its_holder_just_before_that_call(tiny):
    history, _ = run(tiny, workers={"count": 2}, faults={"pauses": [{"delivery": 1, "call": 2, "duration_s": 100}]})
    assert [(t, k, d) for t, k, a, d in trace(history) if a == "worker-1"][:4] == [
        (100.0, "delivered", ""), (103.0, "worker_paused", "100 s"),
        (203.0, "worker_resumed", "lease_moved"), (203.0, "tx_rolled_back", "conflict:BusySnapshotError")]


def test_a_paused_worker_sends_no_heartbeats_so_its_lease_lapses_at_the_receipt_plus_the_timeout(tiny):
    history, _ = run(tiny, queue={"heartbeat_interval_s": 20}, workers={"count": 2},
                     faults={"pauses": [{"worker": 1, "at_s": 101.5, "duration_s": 100}]})
    # heartbeats due at 120 and 140 would have extended it to 180: they were never sent
    assert trace(history, 160.0)[-3:] == [(101.5, "worker_paused", "worker-1", "100 s"),
                                          (160.0, "visibility_expired", "queue", ""),
                                          (160.0, "delivered", "worker-2", "")]
    unpaused, _ = run(tiny, queue={"heartbeat_interval_s": 20})
    assert not any(r.kind == "visibility_expired" for r in unpaused)


def test_a_pause_held_until_the_lease_moved_is_fenced_by_the_lease_check(tiny):
    history, summary = run(tiny, workers={"count": 2, "stop_when_lease_lost": True},
                           faults={"pauses": [{"worker": 1, "at_s": 104.5, "duration_s": 100}]})
    assert [(r.time, r.kind, r.actor) for r in history if r.kind in ("lease_lost", "worker_resumed")] == [
        (204.5, "worker_resumed", "worker-1"), (204.5, "lease_lost", "worker-1")]  # its commit, due at 105: fenced
    assert holds(summary) == ALL


def test_a_worker_paused_while_waiting_receives_nothing_until_it_resumes(tiny):
    history, _ = run(tiny, faults={"pauses": [{"worker": 1, "at_s": 50, "duration_s": 100}]})
    assert trace(history, 150.0) == [(0.0, "published", "scheduler", ""),
                                     (50.0, "worker_paused", "worker-1", "100 s"),
                                     (150.0, "worker_resumed", "worker-1", ""),
                                     (150.0, "delivered", "worker-1", "")]


# --- partitions ---------------------------------------------------------------------------------
def test_a_worker_cut_off_from_the_queue_commits_then_loses_its_ack(tiny):
    history, summary = run(tiny, workers={"count": 2},
                           faults={"partitions": [{"worker": 1, "at_s": 102.5, "duration_s": 100}]})
    assert trace(history) == [
        (0.0, "published", "scheduler", ""),
        (100.0, "delivered", "worker-1", ""),
        (102.5, "partition_started", "worker-1", "queue 100 s"),
        (105.0, "tx_committed", "worker-1", "2"),         # the database is still reachable
        (105.0, "ack_failed", "worker-1", "ack:partition"),
        (160.0, "visibility_expired", "queue", ""),
        (160.0, "delivered", "worker-2", ""),
        (163.0, "tx_committed", "worker-2", "0"),         # finds the work done
        (163.0, "acked", "worker-2", ""),
        (202.5, "partition_healed", "worker-1", "queue"),
    ]
    assert holds(summary) == ALL and ack_lost_to_partition_or_restart(history)


def test_a_partitioned_consumer_is_requeued_after_the_brokers_heartbeat_timeout(tiny):
    history, _ = run(tiny, queue={"redelivery": "consumer_death", "disconnect_detect_s": 10}, workers={"count": 2},
                     faults={"partitions": [{"worker": 1, "at_s": 101.5, "duration_s": 100}]})
    assert trace(history, 111.5)[-3:] == [(105.0, "ack_failed", "worker-1", "ack:partition"),
                                          (111.5, "visibility_expired", "queue", "connection_lost"),
                                          (111.5, "delivered", "worker-2", "")]  # 10 s after the cut


def test_a_worker_cut_off_from_its_database_rolls_back_and_nacks(tiny):
    history, summary = run(tiny, workers={"count": 2},
                           faults={"partitions": [{"worker": 1, "between": "db", "at_s": 102.5, "duration_s": 10}]})
    assert trace(history) == [
        (0.0, "published", "scheduler", ""),
        (100.0, "delivered", "worker-1", ""),
        (102.5, "partition_started", "worker-1", "db 10 s"),
        (103.0, "tx_rolled_back", "worker-1", "db_unreachable: store call 2"),
        (103.0, "nacked", "worker-1", ""),                # backoff 2 s
        (105.0, "delivered", "worker-2", ""),
        (110.0, "tx_committed", "worker-2", "2"),
        (110.0, "acked", "worker-2", ""),
        (112.5, "partition_healed", "worker-1", "db"),
    ]
    assert summary["counts"]["processor_errors"] == 0 and holds(summary) == ALL


# --- broker restarts ----------------------------------------------------------------------------
@pytest.mark.parametrize("mode, after", [
    ("lease", [(160.0, "visibility_expired", "queue", ""), (160.0, "delivered", "worker-1", ""),
               (163.0, "acked", "worker-1", "")]),
    ("requeue", [(122.5, "visibility_expired", "broker", "broker_restart"), (122.5, "delivered", "worker-1", ""),
                 (125.5, "acked", "worker-1", "")]),
    ("lost", [(122.5, "dropped", "broker", "broker_restart:not_persisted")]),
])
def test_a_broker_restart_loses_the_ack_and_recovers_in_flight_deliveries_by_its_mode(tiny, mode, after):
    history, _ = run(tiny, queue={"on_broker_restart": mode},
                     faults={"broker_restarts": [{"at_s": 102.5, "down_s": 20}]})
    kept = [t for t in trace(history) if t[1] != "tx_committed"]
    assert kept == [(0.0, "published", "scheduler", ""), (100.0, "delivered", "worker-1", ""),
                    (102.5, "broker_down", "broker", "20 s"), (105.0, "ack_failed", "worker-1", "ack:broker_down"),
                    (122.5, "broker_restarted", "broker", mode), *after]
    assert ack_lost_to_partition_or_restart(history)


def test_a_publish_while_the_broker_is_down_is_retried_at_the_restart(tiny):
    history, _ = run(tiny, faults={"broker_restarts": [{"at_s": 0, "down_s": 50}]})
    assert trace(history, 100.0) == [(0.0, "broker_down", "broker", "50 s"),
                                     (0.0, "publish_deferred", "scheduler", "broker_down"),
                                     (50.0, "broker_restarted", "broker", "lease"),
                                     (50.0, "published", "scheduler", ""),
                                     (100.0, "delivered", "worker-1", "")]  # its delay counted from the first try
    assert next(r.visible_at for r in history if r.kind == "published") == 100.0


def test_unsynced_writes_are_lost_at_a_restart_and_reported_as_lost_work(tiny):
    history, summary = run(tiny, queue={"broker_lost_writes_s": 10},
                           faults={"broker_restarts": [{"at_s": 5, "down_s": 10}]})
    assert trace(history) == [(0.0, "published", "scheduler", ""), (5.0, "broker_down", "broker", "10 s"),
                              (15.0, "broker_restarted", "broker", "lease"),
                              (15.0, "dropped", "broker", "broker_restart:unsynced")]
    assert holds(summary) == ALL - {"no_lost_work"}


# --- execution time limits ----------------------------------------------------------------------
def test_an_attempt_past_its_execution_timeout_is_hard_killed_and_counted(tiny):
    history, summary = run(tiny, workers={"execution_timeout_s": 3.5})
    assert trace(history, 163.5) == [
        (0.0, "published", "scheduler", ""),
        (100.0, "delivered", "worker-1", ""),
        (103.5, "crashed", "worker-1", "execution_timeout"),  # 3.5 s after it took the job up
        (103.5, "tx_rolled_back", "worker-1", "crash"),
        (133.5, "restarted", "worker-1", ""),
        (160.0, "visibility_expired", "queue", ""),
        (160.0, "delivered", "worker-1", ""),
        (163.5, "crashed", "worker-1", "execution_timeout"),
        (163.5, "tx_rolled_back", "worker-1", "crash"),
    ]
    assert summary["counts"]["crashes_execution_timeout"] == 5  # every receive, then dead-lettered
    recovery = summary["slo"]["recovery_time_max_s"]
    assert (recovery["n"], recovery["censored"]) == (1, 1)  # a failed execution: in recovery time


def test_a_timed_out_attempt_is_requeued_at_once_with_reject_on_worker_lost(tiny):
    history, _ = run(tiny, queue={"on_worker_lost": "requeue", "max_receive_count": 2},
                     workers={"execution_timeout_s": 3.5})
    assert [(r.time, r.kind, r.detail) for r in history if r.kind in ("crashed", "nacked", "delivered")] == [
        (100.0, "delivered", ""), (103.5, "crashed", "execution_timeout"), (103.5, "nacked", "worker_lost"),
        (133.5, "delivered", ""), (137.0, "crashed", "execution_timeout"), (137.0, "nacked", "worker_lost")]


def test_an_attempt_within_its_execution_timeout_is_untouched(tiny):
    history, _ = run(tiny, workers={"execution_timeout_s": 5.5})
    assert [(r.time, r.kind) for r in history if r.kind in ("crashed", "acked")] == [(105.0, "acked")]


# --- without the new faults, and bad input ------------------------------------------------------
def test_without_the_new_faults_no_hazard_of_theirs_is_hit(tiny):
    history, _ = run(tiny)
    hit = hazards_hit(history)
    assert not hit["paused_worker_resumed_after_lease_moved"] and not hit["ack_lost_to_partition_or_restart"]


@pytest.mark.parametrize("faults, message", [
    ({"pauses": [{"worker": 1, "duration_s": 5}]}, "set either at_s (with worker) or delivery"),
    ({"pauses": [{"at_s": 5, "duration_s": 5}]}, "pauses.worker: a pause at at_s names its worker, 1 to 1000"),
    ({"partitions": [{"worker": 1, "between": "cache", "at_s": 1, "duration_s": 1}]}, "between"),
    ({"broker_restarts": [{"at_s": 1, "down_s": 0}]}, "down_s"),
])
def test_bad_new_faults_are_refused_with_one_line_naming_the_field(tiny, faults, message):
    with pytest.raises(ScenarioError) as err:
        parse(tiny_dict(faults=faults), "tiny")
    assert message in str(err.value) and "\n" not in str(err.value)


# --- an ack timeout that ends the consumer, work placement, prefetch -------------------------------
def test_an_ack_timeout_that_closes_the_channel_also_ends_the_consumer_process(tiny):
    history, summary = run(tiny, queue={"redelivery": "consumer_death", "ack_timeout_ends_consumer": True},
                           workers={"count": 2}, faults={"pauses": [{"worker": 1, "at_s": 101.5, "duration_s": 100}]})
    assert trace(history, 190.0) == [
        (0.0, "published", "scheduler", ""),
        (100.0, "delivered", "worker-1", ""),
        (101.5, "worker_paused", "worker-1", "100 s"),
        (160.0, "visibility_expired", "queue", "consumer_timeout"),  # the 60 s ack timeout closes its channel
        (160.0, "delivered", "worker-2", ""),
        (160.0, "crashed", "worker-1", "consumer_timeout"),          # ... and its process ends
        (160.0, "tx_rolled_back", "worker-1", "crash"),
        (165.0, "tx_committed", "worker-2", "2"),
        (165.0, "acked", "worker-2", ""),
        (190.0, "restarted", "worker-1", ""),                        # after workers.restart_delay_s
    ]
    assert summary["counts"]["crashes_consumer_timeout"] == 1 and holds(summary) == ALL
    assert not any(r.kind == "worker_resumed" for r in history)  # the paused process died at 160
    alive, _ = run(tiny, queue={"redelivery": "consumer_death"}, workers={"count": 2},
                   faults={"pauses": [{"worker": 1, "at_s": 101.5, "duration_s": 100}]})
    assert not any(r.kind == "crashed" for r in alive)  # without it the consumer lives on


def test_the_work_can_sit_after_a_given_store_call(tiny):
    history, _ = run(tiny, workers={"service_time_mean_s": 10, "service_time_distribution": "constant",
                                    "service_time_at": "after_call", "service_time_call": 2})
    # get@101, was_applied@102, apply_once@103, 10 s of work, add_once@114, commit@115
    assert [(r.time, r.kind) for r in history if r.kind in ("delivered", "tx_committed", "acked")] == [
        (100.0, "delivered"), (115.0, "tx_committed"), (115.0, "acked")]
    crashed, _ = run(tiny, workers={"service_time_mean_s": 10, "service_time_distribution": "constant",
                                    "service_time_at": "after_call", "service_time_call": 2,
                                    "execution_timeout_s": 8})
    assert [(r.time, r.detail) for r in crashed if r.kind == "crashed"][0] == (108.0, "execution_timeout")


def test_a_prefetched_delivery_waits_in_the_worker_while_its_lease_runs_out(tiny):
    two = {"accounts": [{"account_id": "a1", "deadline_s": 100}, {"account_id": "a2", "deadline_s": 100}]}
    history, summary = run(tiny, queue={"prefetch": 2, "visibility_timeout_s": 7}, plan=two)
    assert [(r.time, r.kind, r.message_id, r.receive_count, r.detail) for r in history
            if r.kind in ("delivered", "visibility_expired", "acked", "ack_stale")] == [
        (100.0, "delivered", 1, 1, ""),
        (100.0, "delivered", 2, 1, ""),             # both in one receive
        (105.0, "acked", 1, 1, ""),
        (107.0, "visibility_expired", 2, 1, ""),    # 100 + 7 s, while the worker was on it since 105
        (110.0, "ack_stale", 2, 1, "receipt_expired"),
        (110.0, "delivered", 2, 2, ""),
        (113.0, "acked", 2, 2, ""),                 # finds it done
    ]
    assert holds(summary) == ALL
    one, _ = run(tiny, queue={"visibility_timeout_s": 7}, plan=two)
    assert [(r.time, r.message_id) for r in one if r.kind == "delivered"] == [(100.0, 1), (105.0, 2)]


def test_the_presets_recover_from_a_broker_restart_as_their_systems_document():
    from acksim.scenario.presets import PRESETS

    queue = {name: p.tables["queue"] for name, p in PRESETS.items()}
    assert {n for n, q in queue.items() if q.get("on_broker_restart") == "requeue"} == {
        "rabbitmq-classic", "rabbitmq-quorum"}                                 # RMQ-CONF
    assert {n for n, q in queue.items() if q.get("broker_lost_writes_s") == 1.0} == {
        "redis-streams", "celery-redis", "bullmq"}                             # R-PERSIST, AOF everysec
    assert PRESETS["sqs-standard"].limits["prefetch"] == (1, 10)               # AWS-RECV
    for p in PRESETS.values():  # every default has its source
        assert all(f"{t}.{k}" in p.sources for t, fields in p.tables.items() for k in fields)
    with pytest.raises(ScenarioError, match="prefetch"):
        parse({"queue": {"preset": "sqs-standard", "prefetch": 11}}, "x")


@pytest.mark.parametrize("sections, message", [
    ({"faults": {"pauses": [{"worker": 2, "at_s": 1, "duration_s": 1}]}},
     "faults.pauses: worker numbers go from 1 to workers.count (1), got 2"),
    ({"faults": {"partitions": [{"worker": 3, "at_s": 1, "duration_s": 1}]}},
     "faults.partitions: worker numbers go from 1 to workers.count (1), got 3"),
    ({"queue": {"ack_timeout_ends_consumer": True}},
     "queue.ack_timeout_ends_consumer: applies to redelivery = 'consumer_death' only"),
    ({"workers": {"service_time_call": 2}}, "workers.service_time_call: applies to service_time_at = 'after_call' only"),
    ({"queue": {"prefetch": 0}}, "prefetch"),
])
def test_inconsistent_uses_are_refused_with_one_line(sections, message):
    with pytest.raises(ScenarioError) as err:
        parse(tiny_dict(**sections), "tiny")
    assert message in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize(("sections", "field"), [
    ({"faults": {"broker_restarts": [{"at_s": 1, "down_s": 1}]}}, "faults.broker_restarts"),
    ({"queue": {"tombstones": True}}, "queue.tombstones"),
])
def test_the_fan_out_design_refuses_what_it_does_not_model(sections, field):
    with pytest.raises(ScenarioError) as err:
        parse({"fanout": {"updates": 1}, **sections}, "f")
    assert f"{field}: not modelled in the fan-out design (fanout.updates > 0); remove it" in str(err.value)
    assert "\n" not in str(err.value)


def test_a_pause_ends_with_the_process_so_the_restarted_worker_is_not_frozen(tiny):
    history, _ = run(tiny, workers={"count": 2}, faults={"pauses": [{"worker": 1, "at_s": 101.5, "duration_s": 200}],
                                                          "kills": [{"at_s": 120, "worker": 1, "down_s": 10}]})
    assert [(r.time, r.kind, r.actor) for r in history if r.actor == "worker-1" and r.kind in (
        "worker_paused", "crashed", "restarted", "worker_resumed", "delivered")][:4] == [
        (100.0, "delivered", "worker-1"), (101.5, "worker_paused", "worker-1"), (120.0, "crashed", "worker-1"),
        (130.0, "restarted", "worker-1")]
    assert not any(r.kind == "worker_resumed" for r in history)
