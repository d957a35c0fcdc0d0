"""Load shapes: ``[[workload.stages]]`` ramps and plateaus of the deadline rate, as k6's stages,
and the bundled spike scenario."""

import random

import pytest

from acksim.scenario import ScenarioError, load, parse
from acksim.world.actors.renewals import plan_workload, rate_at


def _workload(**over):
    data = {"workload": {"arrivals": "stages", "deadline_start_s": 100.0, "start_rate_per_s": 0.0,
                         "stages": [{"duration_s": 100.0, "rate_per_s": 10.0},
                                    {"duration_s": 200.0, "rate_per_s": 10.0},
                                    {"duration_s": 100.0, "rate_per_s": 0.0}], **over}}
    return parse(data).workload


def test_the_rate_ramps_and_holds_stage_by_stage():
    w = _workload()
    assert [rate_at(w, t) for t in (50.0, 100.0, 150.0, 199.9999, 200.0, 399.0, 400.0, 450.0, 500.0, 900.0)] == \
        pytest.approx([0.0, 0.0, 5.0, 10.0, 10.0, 10.0, 10.0, 5.0, 0.0, 0.0], abs=1e-3)
    assert w.stages_end_s == 500.0


def test_deadlines_follow_the_shape_and_stop_when_it_ends():
    w = _workload(accounts=100_000)
    deadlines, _ops = plan_workload(w, random.Random(1))
    times = sorted(deadlines.values())
    assert 100.0 <= times[0] and times[-1] < 500.0
    # expected counts: ramp up 500, plateau 2,000, ramp down 500 (Poisson: within a few sd)
    counts = [sum(lo <= t < hi for t in times) for lo, hi in ((100, 200), (200, 400), (400, 500))]
    assert abs(counts[0] - 500) < 100 and abs(counts[1] - 2000) < 200 and abs(counts[2] - 500) < 100
    assert deadlines == plan_workload(w, random.Random(1))[0]  # seeded: the same plan


def test_the_account_cap_ends_the_shape_early():
    deadlines, _ops = plan_workload(_workload(accounts=50), random.Random(1))
    assert len(deadlines) == 50 and max(deadlines.values()) < 200.0


@pytest.mark.parametrize("data, message", [
    ({"arrivals": "stages"}, "stages: give [[workload.stages]] with arrivals = 'stages', and only then"),
    ({"stages": [{"duration_s": 1.0, "rate_per_s": 1.0}]}, "stages: give [[workload.stages]]"),
    ({"arrivals": "stages", "stages": [{"duration_s": 1.0, "rate_per_s": 0.0}]}, "stages: every rate_per_s is 0"),
    ({"arrivals": "stages", "stages": [{"duration_s": 0.0, "rate_per_s": 1.0}]}, "duration_s"),
])
def test_a_bad_shape_is_one_line(data, message):
    with pytest.raises(ScenarioError, match="workload"):
        parse({"workload": data})
    with pytest.raises(ScenarioError) as exc:
        parse({"workload": data})
    assert message in str(exc.value) and "\n" not in str(exc.value)


def test_the_bundled_spike_loads_and_peaks_in_the_middle():
    sc = load("spike")
    w = sc.workload
    assert w.arrivals == "stages" and [s.rate_per_s for s in w.stages] == [0.5, 20.0, 20.0, 0.5, 0.5]
    assert rate_at(w, 60.0 + 1800.0 + 60.0 + 100.0) == 20.0 and rate_at(w, 100.0) == 0.5
