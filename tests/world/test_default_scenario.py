"""The bundled game-renewal scenario does what the README says: 20,000 accounts over a day on
SQLite, hundreds of crashes in every phase, and the reference design keeps every invariant
with non-trivial recovery times. (About 15 s: the one slow test of the suite.)"""

from acksim.scenarios import bundled
from acksim.scenario import load
from acksim.judges.summary import build_summary, passed
from acksim.world.core import simulate


def test_the_default_scenario_passes_with_hundreds_of_crashes_in_every_phase():
    scenario = load(bundled("game-renewal.toml"))
    outcome = simulate(scenario)
    summary = build_summary(scenario, outcome)
    c, slo = summary["counts"], summary["slo"]
    assert c["accounts"] == 20_000 and c["jobs"] > 20_000
    for phase in ("before_call", "after_call", "after_commit", "during_ack"):
        assert c[f"crashes_{phase}"] >= 300, phase
    assert c["crashes_deployment"] == 8
    assert c["duplicate_deliveries"] >= 100 and c["renewals"] >= 2_000 and c["term_rollovers"] >= 2_000
    assert c["lifecycle_during_attempts"] >= 100  # renewals etc. landing while a job is in flight
    assert c["extensions"] > 0 and c["resubscriptions"] > 0 and c["deletions"] > 0
    assert all(v["holds"] for v in summary["invariants"].values()), summary["invariants"]
    assert 30.0 < slo["recovery_time_p99_s"]["value"] < 150.0
    assert slo["recovery_time_max_s"]["value"] > slo["recovery_time_p95_s"]["value"] > 0
    assert passed(summary)
