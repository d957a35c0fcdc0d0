"""Properties of the reference design under generated faults: whatever the crash rates,
duplicates, worker counts, visibility timeouts and lifecycle mix, every invariant holds; and
one scenario and seed always give the same history."""

from hypothesis import given, strategies as st

from helpers.tinyworld import tiny_dict
from acksim.model import process
from acksim.history import to_csv
from acksim.judges.invariants import check_all
from acksim.scenario import parse
from acksim.world.core import World


@st.composite
def scenarios(draw):
    p = st.floats(0.0, 0.2)
    return parse(tiny_dict(
        seed=draw(st.integers(0, 2**32)),
        workload={"accounts": draw(st.integers(1, 25)), "deadline_window_s": draw(st.sampled_from([1, 60, 600])),
                  "renew_fraction": draw(st.floats(0, 0.5)), "renew_in_flight_fraction": draw(st.floats(0, 1)),
                  "renew_in_flight_within_s": 3.0, "extension_fraction": draw(st.floats(0, 0.3)),
                  "resubscribe_fraction": draw(st.floats(0, 0.3)), "delete_fraction": draw(st.floats(0, 0.2)),
                  "term_s": 600, "rollover_delay_s": draw(st.sampled_from([0, 1, 30]))},
        queue={"visibility_timeout_s": draw(st.sampled_from([2, 5, 30])),
               "duplicate_probability": draw(st.floats(0, 0.5)), "max_receive_count": 0},
        workers={"count": draw(st.integers(1, 6)), "restart_delay_s": draw(st.sampled_from([0, 5])),
                 "conflict_retries": draw(st.integers(0, 3))},
        stores={"latency_distribution": "exponential", "latency_mean_s": draw(st.sampled_from([0.1, 1.0]))},
        faults={"crash_before_call": draw(p), "crash_after_call": draw(p), "crash_after_commit": draw(p),
                "crash_during_ack": draw(p)},
    ))


def run(scenario):
    world = World(scenario, process)
    try:
        return world.run()
    finally:
        world.close()


@given(scenarios())
def test_the_reference_design_keeps_every_invariant(scenario):
    outcome = run(scenario)
    verdicts = check_all(outcome.history, outcome.final)
    broken = {name: v["example"] for name, v in verdicts.items() if not v["holds"]}
    assert broken == {}
    assert not outcome.final.in_flight  # the world ran until the queue drained


@given(scenarios())
def test_one_scenario_and_seed_give_one_history(scenario):
    assert to_csv(run(scenario).history) == to_csv(run(scenario).history)
