"""The characteristic hazard of the redis-streams, rabbitmq-quorum and sqs-standard presets
(``tests/scenario/test_presets.py``) on the real broker, next to the simulation of the same
scenario (``scenarios/live-*.toml``): the same mechanism, the same receive counts, the same
verdicts; live times within a stated slack of the simulation's exact ones (virtual s).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from acksim.judges.invariants import check_all
from acksim.live.run import run_live
from acksim.scenario import load, parse
from acksim.world.core import simulate

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"
REF = "acksim.model.processor:process"


def both(name: str, broker: str, scale: float, **tables):
    """(scenario, sim outcome, live outcome) of scenarios/live-NAME.toml with ``tables``
    (table -> {field: value}) set."""
    sc = load(SCENARIOS / f"live-{name}.toml")
    if tables:
        data = sc.model_dump(exclude_none=True)
        for table, values in tables.items():
            data[table].update(values)
        sc = parse(data, name)
    return sc, simulate(sc), run_live(sc, broker, REF, scale).outcome


def of(history, kind: str, message_id: int = 1):
    return [r for r in history if r.kind == kind and r.message_id == message_id]


def holds(outcome) -> dict[str, bool]:
    return {n: v["holds"] for n, v in check_all(outcome.history, outcome.final).items()}


@pytest.mark.live
@pytest.mark.timeout(120)
def test_redis_streams_a_dead_consumers_entry_waits_for_the_claimer(need):
    need("redis")
    sc, sim, live = both("redis-streams", "redis", 0.01)
    for side, o in (("sim", sim), ("live", live)):
        got = of(o.history, "delivered")
        assert [r.receive_count for r in got] == [1, 2], side
        assert [r.detail for r in of(o.history, "crashed")] == ["after_call"], side
        assert [r.detail for r in of(o.history, "visibility_expired")] == ["claimed"], side
        # pending, owned by the dead worker, until idle for the min idle time (300 s) at a claim
        waited = got[1].time - got[0].time
        assert 300.0 <= waited <= 300.0 + 4 * sc.queue.sweep_interval_s, (side, waited)
        assert all(holds(o).values()) and [m[0] for m in o.final.markers] == ["p000", "p001", "p002"], side
    assert [r.time for r in of(sim.history, "delivered")] == [60.0, 360.0]

    sc, sim, live = both("redis-streams", "redis", 0.01, queue={"sweep_interval_s": 0},  # no claimer
                          run={"max_time_s": 600})
    for side, o in (("sim", sim), ("live", live)):
        assert [r.receive_count for r in of(o.history, "delivered")] == [1], side
        assert of(o.history, "visibility_expired") == [], side
        verdicts = check_all(o.history, o.final)
        assert not verdicts["no_lost_work"]["holds"], side
        assert verdicts["no_lost_work"]["example"]["why"] == "message 1 still in flight at the end", side
        assert [m[0] for m in o.final.markers] == ["p001", "p002"], side


@pytest.mark.live
@pytest.mark.timeout(150)
def test_rabbitmq_quorum_past_the_delivery_limit_dead_letters(need):
    need("rabbitmq")
    sc, sim, live = both("rabbitmq-quorum", "rabbitmq", 0.02)
    for side, o in (("sim", sim), ("live", live)):
        # every consumer that takes the poison job dies; its closed connection requeues it,
        # x-delivery-count climbs, and returned past x-delivery-limit 20 (the preset's) it goes
        # to the dead-letter exchange: 21 deliveries
        assert [r.receive_count for r in of(o.history, "delivered")] == list(range(1, 22)), side
        assert len(of(o.history, "crashed")) == 21, side
        dead = of(o.history, "dead_lettered")
        assert [r.receive_count for r in dead] == [21], side
        assert o.final.dead_letter_queue == (1,), side
        assert all(holds(o).values()), side  # a dead-lettered job is accounted for
        assert [m[0] for m in o.final.markers] == ["p001"], side
    assert [r.detail for r in of(sim.history, "dead_lettered")] == ["delivery_limit"]
    assert of(live.history, "dead_lettered")[0].detail == "rabbitmq dead-letter target"


@pytest.mark.live
@pytest.mark.timeout(120)
def test_sqs_standard_a_message_never_acked_is_redelivered_without_end(need):
    need("sqs")
    sc, sim, live = both("sqs-standard", "sqs", 0.05)
    counts = {}
    for side, o in (("sim", sim), ("live", live)):
        got = of(o.history, "delivered")
        counts[side] = [r.receive_count for r in got]
        assert counts[side] == list(range(1, len(got) + 1)), side  # the receive count climbs, no DLQ
        gaps = [b.time - a.time for a, b in zip(got, got[1:])]
        assert all(40.0 - 1.0 <= g <= 40.0 + 10.0 for g in gaps), (side, gaps)  # one visibility timeout
        assert of(o.history, "dead_lettered") == [] and o.final.dead_letter_queue == (), side
        assert o.final.stopped_early and o.final.in_flight == (1,), side
        assert not holds(o)["no_lost_work"], side
        assert [m[0] for m in o.final.markers] == ["p001"], side
    assert counts["sim"] == [1, 2, 3, 4, 5]
    assert abs(len(counts["live"]) - len(counts["sim"])) <= 1, counts
