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


def _held_three(tiny, **workers):
    """Three ETA jobs due at 100, all held by the one worker from 0; constant 1 s store calls;
    read committed, so jobs of three accounts running at once never conflict."""
    plan = {"accounts": [{"account_id": f"a{i}", "deadline_s": 100.0} for i in (1, 2, 3)]}
    return run(tiny(queue={"eta_held_by_worker": True, "visibility_timeout_s": 3600}, workers=workers, plan=plan,
                    stores={"isolation": "read_committed"}))


def _spans(history):
    """(account, attempt start, ack) per job, in the order the attempts started."""
    acked = {r.account_id: r.time for r in history if r.kind == "acked"}
    return [(r.account_id, r.time, acked[r.account_id]) for r in history if r.kind == "attempt_started"]


def test_held_jobs_due_together_run_at_most_concurrency_at_once(tiny):
    history, summary = _held_three(tiny, concurrency=1)
    assert [r.time for r in history if r.kind == "delivered"] == [0.0, 0.0, 0.0]  # all three held from 0
    # one slot: each starts when the one before it acked (get, was_applied, apply, add, commit: 5 s)
    assert _spans(history) == [("a1", 100.0, 105.0), ("a2", 105.0, 110.0), ("a3", 110.0, 115.0)]
    assert summary["verdict"] == "PASS" and summary["counts"]["cleanups"] == 3

    history, _ = _held_three(tiny, concurrency=2)
    assert _spans(history) == [("a1", 100.0, 105.0), ("a2", 100.0, 105.0), ("a3", 105.0, 110.0)]


def test_without_a_bound_every_held_job_runs_when_due(tiny):
    history, _ = _held_three(tiny)  # workers.concurrency = 0, the default
    assert _spans(history) == [("a1", 100.0, 105.0), ("a2", 100.0, 105.0), ("a3", 100.0, 105.0)]


def test_a_held_job_waiting_for_a_slot_is_lost_unrun_with_its_worker(tiny):
    # a1 runs from 100 in the only slot; the worker is killed at 102 while a2 and a3 wait for it
    plan = {"accounts": [{"account_id": f"a{i}", "deadline_s": 100.0} for i in (1, 2, 3)]}
    history, summary = run(tiny(queue={"eta_held_by_worker": True, "visibility_timeout_s": 3600},
                                workers={"concurrency": 1}, plan=plan,
                                faults={"kills": [{"at_s": 102, "worker": 1, "down_s": 10}]}))
    assert [(r.time, r.account_id, r.detail) for r in history if r.kind == "crashed"] == [
        (102.0, None, "killed"),  # the worker itself, waiting to receive
        (102.0, "a1", "killed"),  # the held job running in the slot
        (102.0, "a2", "held_lost:killed"), (102.0, "a3", "held_lost:killed")]  # waiting for it: never ran
    assert summary["counts"]["held_lost"] == 2
