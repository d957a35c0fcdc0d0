"""The scheduler's publish ordering (``acksim.world.actors.publish_records``), with exact virtual times:
record then publish (a crash between leaves the job to the sweeper), publish then record (a crash
between publishes the job again)."""

from acksim.judges.summary import build_summary
from acksim.world.core import simulate


def run(scenario):
    outcome = simulate(scenario)
    return outcome.history, build_summary(scenario, outcome)


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
