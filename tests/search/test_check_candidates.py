"""Every bundled candidate design gets its expected verdict; the reference survives the search."""

import pytest

from acksim.model import process
from acksim.model.candidates import CANDIDATES
from acksim.search.check import base_scenario, run_check
from acksim.judges.hazards import HAZARDS

BAD = [name for name, c in CANDIDATES.items() if c.breaks is not None]


@pytest.mark.parametrize("name", BAD)
def test_each_known_bad_candidate_is_caught_with_its_invariant(name):
    candidate = CANDIDATES[name]
    report = run_check(candidate.processor, base_scenario(None, candidate.design), max_examples=500, seed=0,
                       stop_at=frozenset({candidate.breaks}))
    assert candidate.breaks in report.findings, sorted(report.findings)
    scenario, result = report.findings[candidate.breaks]
    assert candidate.breaks in result.failures
    # the shrunk counterexample is small: a handful of accounts and faults
    assert len(scenario.plan.accounts) <= 3, scenario.plan.accounts
    assert len(scenario.faults.crashes) + len(scenario.faults.duplicates) <= 2


def test_the_reference_design_survives_the_search_and_every_hazard_window_is_hit():
    report = run_check(process, base_scenario(), max_examples=500, seed=0)
    assert report.findings == {}
    assert report.examples == 500
    assert report.uncovered == [], dict(report.coverage)
    assert all(report.phases[p] > 0 for p in ("before_call", "after_call", "after_commit", "during_ack"))
    assert set(report.coverage) == {name for name, _ in HAZARDS}


def test_the_same_seed_gives_the_same_search():
    candidate = CANDIDATES["no-renewed-check"]
    runs = [run_check(candidate.processor, base_scenario(), max_examples=200, seed=5,
                      stop_at=frozenset({candidate.breaks})) for _ in range(2)]
    (s1, r1), (s2, r2) = (runs[0].findings["no_cleanup_after_renewal"], runs[1].findings["no_cleanup_after_renewal"])
    assert s1 == s2 and r1.history == r2.history and runs[0].examples == runs[1].examples
