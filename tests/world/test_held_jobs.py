"""A held (ETA) job lost with its worker, with exact virtual times: the loss is a crash of that
job, and its redelivery's commit is a recovery sample."""

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
