"""The fixes of issue 13, each with exact virtual times: a held (ETA) job lost with its
worker starts its recovery clock; reminders are counted per outbox row; the quorum queue's
delivery limit counts returns; a recovery figure with no sample is never a tick."""

from acksim.judges.summary import build_summary
from acksim.world.core import simulate


def run(scenario):
    outcome = simulate(scenario)
    return outcome.history, build_summary(scenario, outcome)


def test_a_held_eta_job_lost_with_its_worker_is_a_crash_of_that_job_and_a_recovery_sample(tiny):
    # the job (due at 100) is published at 0 and held by worker-1; worker-1 is killed at 50,
    # its lease (60 s from 0) lapses at 60, it restarts at 60, holds the copy again until 100
    history, summary = run(tiny(queue={"eta_held_by_worker": True},
                                faults={"kills": [{"at_s": 50, "worker": 1, "down_s": 10}]}))
    assert [(r.time, r.kind, r.message_id, r.receive_count, r.detail) for r in history
            if r.kind in ("delivered", "crashed", "visibility_expired", "acked")] == [
        (0.0, "delivered", 1, 1, ""),
        (50.0, "crashed", None, None, "killed"),             # the worker itself (waiting to receive)
        (50.0, "crashed", 1, 1, "held_lost:killed"),          # the job it held, lost with it
        (60.0, "visibility_expired", 1, 1, ""),
        (60.0, "delivered", 1, 2, ""),
        (105.0, "acked", 1, 2, ""),                           # get@101 .. commit@105
    ]
    recovery = summary["slo"]["recovery_time_max_s"]
    assert (recovery["value"], recovery["n"], recovery["censored"]) == (55.0, 1, 0)  # 50 -> 105
    assert (summary["counts"]["crashes"], summary["counts"]["held_lost"], summary["counts"]["crashes_killed"]) == (1, 1, 1)


def test_a_second_outbox_row_of_one_key_is_sent_on_its_own_not_marked_with_the_first(tiny):
    # naive design (autocommit, no unique keys): the outbox row of the first run commits at
    # 102 and the worker crashes after its third call (103); the relay reads row 1 at its
    # poll at 105 and sends it 60 s later (165); meanwhile the redelivery (160) commits row 2
    # at 162. Marking "sent" by key used to mark row 2 too, and it was never sent.
    from acksim.model.candidates import naive
    from acksim.scenario import parse
    from helpers.tinyworld import tiny_dict

    def scenario(idempotent):
        return parse(tiny_dict(workers={"transaction_scope": "autocommit"},
                               stores={"unique_markers": False, "unique_outbox_keys": False},
                               faults={"crashes": [{"delivery": 1, "phase": "after_call", "call": 2}]},
                               mail={"provider_idempotency": idempotent, "latency_s": 60}))

    for idempotent, second in ((False, "reminder_sent"), (True, "reminder_duplicate")):
        sc = scenario(idempotent)
        outcome = simulate(sc, naive)
        assert [(r.time, r.kind) for r in outcome.history if r.kind in ("outbox_added", "reminder_sent",
                                                                          "reminder_duplicate")] == [
            (102.0, "outbox_added"), (162.0, "outbox_added"),
            (165.0, "reminder_sent"), (230.0, second)]  # row 2: poll at 170, sent at 230
        counts = build_summary(sc, outcome)["counts"]
        assert (counts["reminders_sent"], counts["reminder_duplicates"]) == ((2, 0) if not idempotent else (1, 1))


# --- scheduler-side ordering (acksim.world.publish_records) -----------------------------------

def publishes(history):
    return [(r.time, r.kind, r.actor, r.detail) for r in history
            if r.kind in ("publish_recorded", "published", "scheduler_crashed", "delivered", "acked")]


def test_record_then_publish_a_crash_between_leaves_the_job_to_the_sweeper(tiny):
    # recorded at 0 for the deadline at 100; the instance dies before publishing; the sweeper
    # (every 60 s) publishes it at its tick of 300, the first with the record 300 s old
    history, summary = run(tiny(scheduler={"order": "record_then_publish", "publish_crash_probability": 1.0,
                                           "sweep_after_s": 300, "sweep_interval_s": 60}))
    assert publishes(history) == [
        (0.0, "publish_recorded", "scheduler", ""),
        (0.0, "scheduler_crashed", "scheduler", "after recording, before publishing"),
        (300.0, "published", "publish-sweeper", ""), (300.0, "delivered", "worker-1", ""),
        (305.0, "acked", "worker-1", "")]
    assert summary["slo"]["end_to_end_p50_s"]["value"] == 205.0  # deadline 100 -> commit 305
    assert summary["counts"]["jobs"] == 1 and all(v["holds"] for v in summary["invariants"].values())


def test_record_then_publish_without_a_crash_publishes_once_and_the_sweeper_leaves_it(tiny):
    history, _ = run(tiny(scheduler={"order": "record_then_publish", "sweep_after_s": 300, "sweep_interval_s": 60}))
    assert publishes(history) == [
        (0.0, "publish_recorded", "scheduler", ""), (0.0, "published", "scheduler", ""),
        (100.0, "delivered", "worker-1", ""), (105.0, "acked", "worker-1", "")]


def test_publish_then_record_a_crash_between_publishes_the_job_again(tiny):
    history, summary = run(tiny(scheduler={"publish_crash_probability": 0.5, "restart_delay_s": 30}, seed=4))
    crashes = [r.time for r in history if r.kind == "scheduler_crashed"]
    assert crashes and [(r.time, r.actor) for r in history if r.kind == "published"] == [
        (0.0, "scheduler")] + [(30.0 * k, "scheduler") for k in range(1, len(crashes) + 1)]
    assert summary["counts"]["cleanups"] == 1  # the duplicates are harmless to the reference
