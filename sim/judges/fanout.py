"""The judges of the shipment fan-out design (``acksim.world.fanout``): its invariants and its
summary, pure functions over the history and the final state.

Each invariant takes ``(history, final)`` and returns its violations as a list of dicts (empty
when it holds), like ``acksim.judges.invariants``; ``FANOUT_INVARIANTS`` lists them by name.
The history's task key is ``cleanup:<update id>:<subscriber>`` (carried in ``account_id`` of
the queue's records); ``send``, ``subscriber_effect``, ``subscriber_duplicate``,
``delivery_recorded`` and ``update_completed`` are this design's own records.
"""

from __future__ import annotations

from collections import Counter

from acksim.history import Record
from acksim.invariant_names import FANOUT_INVARIANT_NAMES
from acksim.judges.invariants import check_all
from acksim.judges.slo import slo_section
from acksim.judges.summary import contained_section, parameters, with_verdict
from acksim.outcome import FinalState, Outcome
from acksim.scenario import Scenario


def _update_of(task_key: str) -> str:
    """The update id in a task key ``cleanup:<update id>:<subscriber>``."""
    return task_key.split(":", 2)[1]


def _tasks_per_update(history) -> Counter:
    """How many delivery tasks each update was fanned out to (its N), from the publishes."""
    return Counter(_update_of(r.account_id) for r in history if r.kind == "published")


def exactly_once_in_effect(history: tuple[Record, ...] | list[Record], final: FinalState) -> list[dict]:
    """Every (update, subscriber) got exactly one effect at the subscriber, or none and its
    task was dead-lettered because the subscriber rejected it (a 4xx: counted, not a
    violation). Anything else is a violation: two effects, or none (retries exhausted, left
    in the queue)."""
    effects: dict[tuple[str, str], int] = {}
    for r in history:
        if r.kind == "subscriber_effect":
            effects[(r.detail, r.account_id)] = effects.get((r.detail, r.account_id), 0) + 1
    dead = {r.account_id for r in history if r.kind == "dead_lettered" and r.detail == "rejected"}
    expected = {(r.detail.split()[0], r.account_id) for r in history if r.kind == "delivery_recorded"}
    tasks = sorted({r.account_id for r in history if r.kind == "published"})
    out = []
    for key in tasks:
        _c, job_id, subscriber = key.split(":", 2)
        pair = (job_id, subscriber)
        n = effects.get(pair, 0)
        if n == 1 or (n == 0 and key in dead):
            continue
        why = f"{n} effects at the subscriber" if n else "never delivered, and not rejected by the subscriber"
        out.append({"update_id": job_id, "subscriber": subscriber, "recorded": pair in expected, "why": why})
    return out


def complete_only_when_all_recorded(history, final: FinalState) -> list[dict]:
    """An update is marked complete only once all N subscribers' records committed, and
    every update whose N records committed is marked complete by the end."""
    recorded: dict[str, set[str]] = {}
    n_of = _tasks_per_update(history)
    out, completed = [], set()
    for r in history:
        if r.kind == "delivery_recorded":
            recorded.setdefault(r.detail.split()[0], set()).add(r.account_id)
        elif r.kind == "update_completed":
            completed.add(r.account_id)
            have = len(recorded.get(r.account_id, ()))
            if have < n_of[r.account_id]:
                out.append({"update_id": r.account_id, "time": r.time,
                            "why": f"marked complete with {have} of {n_of[r.account_id]} records"})
    for upd, subs in sorted(recorded.items()):
        if len(subs) == n_of[upd] and upd not in completed:
            out.append({"update_id": upd, "why": "all records committed, never marked complete"})
    return out


def every_update_completes(history, final: FinalState) -> list[dict]:
    """Every update none of whose subscribers rejected its delivery (a 4xx) ends complete: its
    N records committed and the join marked it. Reported: updates left incomplete (a delivery
    whose retries ran out, or whose effect happened and whose record never committed)."""
    n_of = _tasks_per_update(history)
    rejected = {_update_of(r.account_id) for r in history if r.kind == "dead_lettered" and r.detail == "rejected"}
    completed = {r.account_id for r in history if r.kind == "update_completed"}
    recorded = Counter(r.detail.split()[0] for r in history if r.kind == "delivery_recorded")
    return [{"update_id": upd, "why": f"never complete: {recorded[upd]} of {n} records"}
            for upd, n in sorted(n_of.items()) if upd not in rejected and upd not in completed]


# (name, checker), the names of ``acksim.invariant_names`` in their order
FANOUT_INVARIANTS = tuple(zip(FANOUT_INVARIANT_NAMES, (
    exactly_once_in_effect, complete_only_when_all_recorded, every_update_completes), strict=True))


def build_fanout_summary(scenario: Scenario, outcome: Outcome, processor: str | None = None) -> dict:
    """The summary.json of a fan-out run: the keys of ``acksim.judges.summary.build_summary``, with
    this design's invariants and counts (``processor``: the reference that ran, when not the
    scenario's)."""
    h = outcome.history
    kinds = Counter(r.kind for r in h)
    invariants = check_all(h, outcome.final, FANOUT_INVARIANTS)
    counts = {"updates": scenario.fanout.updates, "jobs": kinds["published"],
              "deliveries": kinds["delivered"], "crashes": kinds["crashed"], "sends": kinds["send"],
              "subscriber_effects": kinds["subscriber_effect"], "subscriber_duplicates": kinds["subscriber_duplicate"],
              "records": kinds["delivery_recorded"], "updates_completed": kinds["update_completed"],
              "retries": kinds["nacked"], "dead_lettered": kinds["dead_lettered"], "acks": kinds["acked"],
              "acks_without_delete": kinds["ack_stale"], "conflicts": kinds["tx_rolled_back"],
              "processor_errors": kinds["processor_error"], "stopped_early": int(outcome.final.stopped_early)}
    return with_verdict({"scenario": scenario.name, "seed": scenario.seed, "invariants": invariants,
                         "slo": slo_section(h, scenario.slo.thresholds()), "counts": counts,
                         "parameters": parameters(scenario, processor),
                         "stop_reason": outcome.final.stop_reason, **contained_section(outcome.final)})
