"""Every duration and count figure of a summary is non-negative, whatever the schedule: drawn
with ``acksim check``'s own strategy (plans, crashes at every phase, kills, deployments,
duplicates, pauses, partitions, broker restarts, prefetch) around two bases, the check's and
the same with ETA jobs held by the workers (Celery's countdown: jobs held in a worker's memory
and lost with it before their deadline). Plus the two cases that used to come out wrong:
a held job lost before its deadline, and two loans of one message to one worker."""

from __future__ import annotations

from hypothesis import given, strategies as st

from acksim.history import Record
from acksim.judges.summary import build_summary, wasted_worker_s
from acksim.model import process
from acksim.search.check import base_scenario
from acksim.search.strategies import check_scenarios
from acksim.world.core import simulate

BASES = (base_scenario(), base_scenario(design={"queue": {"eta_held_by_worker": True, "on_worker_lost": "ack"}}))


def _negatives(summary: dict) -> dict:
    """The figures of ``summary`` below zero: its counts, and its SLO figures' values and
    sample counts."""
    out = {f"counts.{k}": v for k, v in summary["counts"].items() if v < 0}
    for name, figure in summary["slo"].items():
        for key in ("value", "n", "censored"):
            value = figure.get(key)
            if value is not None and value < 0:
                out[f"slo.{name}.{key}"] = value
    return out


@given(st.sampled_from(BASES).flatmap(check_scenarios))
def test_no_figure_of_a_drawn_run_is_negative(scenario):
    summary = build_summary(scenario, simulate(scenario, process, contained=False))
    assert _negatives(summary) == {}


def _r(time: float, seq: int, kind: str, actor: str = "worker-1", rc: int = 1, deadline: float | None = None,
       detail: str = "") -> Record:
    return Record(time, seq, kind, actor, 1, "a", 1, rc, deadline, None, detail)


def test_a_held_job_lost_before_its_deadline_wasted_no_worker_time():
    history = [
        _r(0.0, 0, "delivered", deadline=100.0),  # held until 100
        _r(50.0, 1, "crashed", detail="held_lost:killed"),  # lost with its worker, unrun
        _r(60.0, 2, "delivered", "worker-2", rc=2, deadline=100.0),
        _r(103.0, 3, "cleanup_applied", "worker-2", rc=2),
        _r(104.0, 4, "acked", "worker-2", rc=2),
    ]
    assert wasted_worker_s(history) == 0.0


def test_two_loans_of_one_message_to_one_worker_are_two_spans():
    history = [
        _r(10.0, 0, "delivered", rc=1),
        _r(20.0, 1, "delivered", rc=2),  # its lease lapsed; the same worker got it again
        _r(25.0, 2, "cleanup_applied", rc=2),  # the second loan committed
        _r(26.0, 3, "acked", rc=2),
        _r(40.0, 4, "ack_stale", rc=1),  # the first ends later, having committed nothing
    ]
    assert wasted_worker_s(history) == 30.0  # 10 .. 40; the second loan's work was not waste
