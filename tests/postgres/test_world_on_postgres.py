"""Whole worlds on a real PostgreSQL: a statement that waits on a row lock parks its actor in
virtual time and goes on at the instant the holder commits; the same scenario and seed give
the same history byte for byte; at read committed the reference processor loses a race with
a renewal that a locking read or a conditional write wins."""

from __future__ import annotations

import pytest

from acksim.history import history_digest
from acksim.judges.summary import build_summary
from acksim.model import candidates
from acksim.model.processor import process
from acksim.scenario import load, parse
from acksim.search.design import merge_design
from acksim.world.core import World

RENEW_DURING_THE_ATTEMPT = {"accounts": [{"account_id": "a", "deadline_s": 100}],
                            "steps": [{"at_s": 101.5, "kind": "renew", "account_id": "a"}]}


@pytest.fixture
def pg(tiny, postgres_server):
    """``pg(isolation, **sections)``: the tiny one-account scenario on PostgreSQL."""
    return lambda isolation="read_committed", **sections: tiny(
        stores={"backend": "postgres", "isolation": isolation}, **sections)


def run(scenario, processor=process):
    world = World(scenario, processor)
    try:
        outcome = world.run()
        parks = world.db_waits.parks
    finally:
        world.close()
    return outcome, build_summary(scenario, outcome), parks


def trace(outcome):
    """The first term's attempt, commits and lifecycle (the next term's job comes at 100,100 s)."""
    return [(r.time, r.kind, r.actor, r.detail) for r in outcome.history if r.time < 1000
            and r.kind in ("attempt_started", "renewed", "resubscribed", "tx_committed", "cleanup_applied", "acked")]


def test_a_renewal_blocked_by_a_locking_read_commits_at_the_instant_the_worker_does(pg):
    # get(for_update)@101 locks the row; the renewal at 101.5 waits on it; was_applied@102,
    # apply_once@103, add_once@104, commit@105: the renewal goes on at 105, after the cleanup
    outcome, summary, parks = run(pg(plan=RENEW_DURING_THE_ATTEMPT), candidates.for_update)
    assert trace(outcome) == [
        (100.0, "attempt_started", "worker-1", "0"),
        (105.0, "tx_committed", "worker-1", "2"),
        (105.0, "cleanup_applied", "worker-1", ""),
        (105.0, "renewed", "renewals", "renewed"),
        (105.0, "acked", "worker-1", ""),
    ]
    assert parks == 1
    assert summary["invariants"]["no_cleanup_after_renewal"]["holds"]


def test_read_committed_lets_the_renewal_in_between_the_reference_reads_and_writes(pg):
    outcome, summary, parks = run(pg(plan=RENEW_DURING_THE_ATTEMPT))
    assert trace(outcome) == [
        (100.0, "attempt_started", "worker-1", "0"),
        (101.5, "renewed", "renewals", "renewed"),  # no lock: it commits at once
        (105.0, "tx_committed", "worker-1", "2"),
        (105.0, "cleanup_applied", "worker-1", ""),
        (105.0, "acked", "worker-1", ""),
    ]
    assert parks == 0
    assert not summary["invariants"]["no_cleanup_after_renewal"]["holds"]


@pytest.mark.parametrize("design", [candidates.for_update, candidates.conditional])
def test_a_locking_read_or_a_conditional_write_wins_the_same_race(pg, design):
    outcome, summary, _ = run(pg(plan=RENEW_DURING_THE_ATTEMPT), design)
    assert summary["invariants"]["no_cleanup_after_renewal"]["holds"]


def test_serializable_refuses_the_race_and_the_retry_sees_the_renewal(pg):
    outcome, summary, _ = run(pg("serializable", plan=RENEW_DURING_THE_ATTEMPT))
    assert [(r.time, r.kind, r.detail) for r in outcome.history if r.kind == "tx_rolled_back"] == [
        (103.0, "tx_rolled_back", "conflict:SerializationFailure")]  # at apply_once: the renewal read no marker
    assert summary["invariants"]["no_cleanup_after_renewal"]["holds"]
    assert ("a", 1) not in outcome.final.markers


def smoke(isolation: str):
    scenario = load("scenarios/smoke.toml")
    return parse(merge_design(scenario.model_dump(), {"stores": {"backend": "postgres", "isolation": isolation}}))


@pytest.mark.parametrize("isolation, design", [("serializable", process),
                                               ("read_committed", candidates.for_update)])
def test_the_smoke_scenario_passes_and_gives_the_same_history_twice(postgres_server, isolation, design):
    digests = []
    for _ in range(2):
        outcome, summary, parks = run(smoke(isolation), design)
        assert all(v["holds"] for v in summary["invariants"].values()), summary["invariants"]
        digests.append(history_digest(outcome.history))
    assert digests[0] == digests[1]
    assert parks > 0  # statements did wait on locks, and were parked


def lock_both(job, accounts, cleanup_store, outbox):
    """Lock the job's account, then the other one, then run the reference: two such jobs at
    once lock in opposite orders."""
    accounts.get(job.account_id, for_update=True)
    accounts.get("b" if job.account_id == "a" else "a", for_update=True)
    process(job, accounts, cleanup_store, outbox)


def test_a_lock_cycle_cancels_the_younger_transaction_which_retries(pg):
    plan = {"accounts": [{"account_id": "a", "deadline_s": 100}, {"account_id": "b", "deadline_s": 100}]}
    outcome, summary, parks = run(pg(workers={"count": 2}, plan=plan), lock_both)
    # both lock their own account @101; worker-1 waits for b @102, worker-2 for a @102: a cycle,
    # worker-2's transaction (begun second) is cancelled; worker-1 goes on at once (get a @103,
    # was_applied @104, apply_once @105, add_once @106, commit @107); worker-2's retry waits for
    # b until 107, then a @108, the reference @109-112, commit @113
    assert [(r.time, r.kind, r.actor, r.account_id, r.detail) for r in outcome.history
            if r.kind in ("tx_rolled_back", "tx_committed")] == [
        (102.0, "tx_rolled_back", "worker-2", "b", "conflict:DeadlockDetected"),
        (107.0, "tx_committed", "worker-1", "a", "2"),
        (113.0, "tx_committed", "worker-2", "b", "2"),
    ]
    assert parks == 2
    assert summary["verdict"] == "PASS"


def test_a_worker_killed_while_it_waits_on_a_lock_rolls_back_and_the_holder_goes_on(pg):
    outcome, summary, parks = run(pg(workers={"count": 2}, plan={"accounts": [{"account_id": "a", "deadline_s": 100}]},
                                     faults={"duplicates": [{"delivery": 1}],
                                             "kills": [{"at_s": 101.5, "worker": 2, "down_s": 10}]}),
                                  candidates.for_update)
    # both copies start at 100; worker-1 locks a @101, worker-2's locking read waits; killed at 101.5
    assert [(r.time, r.kind, r.actor, r.detail) for r in outcome.history if r.time < 1000 and r.kind in (
        "crashed", "tx_rolled_back", "tx_committed", "acked", "restarted")] == [
        (101.5, "crashed", "worker-2", "killed"),
        (101.5, "tx_rolled_back", "worker-2", "crash"),
        (105.0, "tx_committed", "worker-1", "2"),
        (105.0, "acked", "worker-1", ""),
        (111.5, "restarted", "worker-2", ""),
    ]
    assert parks == 1
    assert summary["invariants"]["at_most_once_effect"]["holds"]


def test_check_on_postgres_finds_the_read_committed_race_and_passes_the_locking_read(postgres_server):
    from acksim.search.check import base_scenario, run_check

    design = {"stores": {"backend": "postgres", "isolation": "read_committed"}}
    found = run_check(process, base_scenario(None, design), max_examples=300, seed=0)
    assert "no_cleanup_after_renewal" in found.findings
    held = run_check(candidates.for_update, base_scenario(None, design), max_examples=60, seed=0)
    assert held.findings == {} and held.examples == 60
