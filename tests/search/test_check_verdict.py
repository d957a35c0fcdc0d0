"""check's PASS/FAIL lines come from the run's verdict function (``verdict_line``): a FAIL line
per reason (findings, flaky findings, or uncovered hazard windows under require_coverage), or
the PASS line saying how many examples ran and which windows were never hit."""

from __future__ import annotations

from collections import Counter

from acksim.judges.hazards import HAZARDS
from acksim.search.check import CheckReport
from acksim.search.findings import check_verdict, verdict_lines

ALL_HIT = Counter({name: 1 for name, _fn in HAZARDS})


def test_pass_names_the_examples_and_every_window_hit():
    verdict = check_verdict(CheckReport(examples=40, coverage=ALL_HIT), {})
    assert verdict["verdict"] == "PASS"
    assert verdict_lines(verdict) == ["PASS: no violation in 40 examples; every hazard window hit"]


def test_pass_names_the_windows_never_hit_unless_coverage_is_required():
    first = HAZARDS[0][0]
    coverage = ALL_HIT - Counter({first: 1})
    assert verdict_lines(check_verdict(CheckReport(examples=3, coverage=coverage), {})) == [
        f"PASS: no violation in 3 examples; never hit: {first}"]
    assert verdict_lines(check_verdict(CheckReport(examples=3, coverage=coverage), {}, require_coverage=True)) == [
        f"FAIL: hazard windows never hit: {first} (--require-coverage)"]


def test_findings_and_flaky_findings_each_get_a_fail_line():
    report = CheckReport(examples=9, coverage=Counter(), findings={"at_most_once_effect": None, "processor_error": None})
    lines = verdict_lines(check_verdict(report, {"no_lost_work": None}, require_coverage=True))
    assert lines == [
        "FAIL: 2 kind(s) of finding: at_most_once_effect, processor_error",
        "FAIL: 1 flaky finding(s), not reproduced in a fresh process: no_lost_work; the search itself is not "
        "deterministic for this processor (state that outlives a run: see docs/production.md)"]
