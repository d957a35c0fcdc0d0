"""``acksim check --exhaustive``: every schedule of a small scope, smallest first, on the real
code; the same scope gives the same schedules and result every time."""

from acksim.cli.main import main
from acksim.model import process
from acksim.model.candidates import CANDIDATES
from acksim.search.check import base_scenario
from acksim.search.exhaustive import DEADLINE_S, Scope, count, elements, one_account, run_exhaustive, scenario_of, \
    schedules


def test_the_schedules_are_counted_ordered_by_size_and_one_of_each_kind():
    scope = Scope(max_faults=3)
    steps, crashes, copies = elements(4, scope)
    assert (len(steps), len(crashes), len(copies)) == (21, 20, 5)  # 3 kinds x 7 places; 2 x (4+4+1+1); 0..4 late
    listed = list(schedules(4, scope))
    assert len(listed) == count(4, scope) == 1 + (21 + 20 + 5) + (21 * 20 + 21 * 5 + 20 * 5) + 21 * 20 * 5
    assert listed[0] == () and [len(s) for s in listed] == sorted(len(s) for s in listed)
    assert all(len({e[0] for e in s}) == len(s) for s in listed)
    assert listed == list(schedules(4, scope))  # the same order every time
    assert count(4, Scope(max_faults=1)) == 47


def test_each_kind_of_fault_becomes_its_scenario_table():
    world = one_account(base_scenario())
    sc = scenario_of(world, (("step", "extend", 10.0015), ("crash", 2, "after_call", 3), ("copy", 2)))
    assert [(a.account_id, a.deadline_s) for a in sc.plan.accounts] == [("a1", DEADLINE_S)]
    assert [(s.kind, s.at_s, s.amount_s) for s in sc.plan.steps] == [("extend", 10.0015, 60.0)]
    assert [(c.delivery, c.phase, c.call) for c in sc.faults.crashes] == [(2, "after_call", 3)]
    assert [d.delivery for d in sc.faults.duplicates] == [1]
    assert [(p.delivery, p.call, p.duration_s) for p in sc.faults.pauses] == [(2, 0, 0.002)]
    assert sc.stores.latency_distribution == "constant" and sc.workers.count == 2


def test_a_bad_candidate_is_found_at_a_smallest_schedule_and_the_same_each_time():
    candidate = CANDIDATES["no-renewed-check"]
    base = base_scenario(None, candidate.design)
    runs = [run_exhaustive(candidate.processor, base) for _ in range(2)]
    (report, _text, total), (again, _, _) = runs
    assert list(report.findings) == ["no_cleanup_after_renewal"] and total == 2772
    scenario, result = report.findings["no_cleanup_after_renewal"]
    assert report.first.example == 2 and [(s.kind, s.at_s) for s in scenario.plan.steps] == [("renew", 9.0)]
    assert again.findings["no_cleanup_after_renewal"][1].history == result.history


def test_the_reference_holds_in_every_schedule_of_a_one_fault_scope(tmp_path, capsys):
    report, text, total = run_exhaustive(process, base_scenario(), Scope(max_faults=1))
    assert report.findings == {} and report.examples == total == 47
    assert text.startswith("1 account due at 10 s, store calls 1 ms apart (4 an attempt); at most 1 of:")
    assert main(["check", "--exhaustive", "--max-faults", "1", "--no-database", "--out", str(tmp_path / "c")]) == 0
    out = capsys.readouterr().out
    assert "schedules in the scope: 47; run: 47 in " in out and "no violation in any schedule within this scope" in out
    assert main(["check", "--exhaustive", "--max-faults", "4", "--out", str(tmp_path / "c")]) == 2
    assert "--max-faults: must be 1 .. 3, got 4" in capsys.readouterr().err


def test_the_library_call_and_the_fixture_take_exhaustive():
    from acksim.search.api import check

    report, ref, _base = check("acksim.model.candidates:no_version_check", exhaustive=True)
    assert ref == "acksim.model.candidates:no_version_check" and list(report.findings) == ["no_cleanup_after_renewal"]
    assert report.first.example <= 20


def test_windows_outside_the_scope_are_not_required(tmp_path, capsys):
    assert main(["check", "--exhaustive", "--max-faults", "2", "--require-coverage", "--no-database",
                 "--out", str(tmp_path / "c")]) == 0
    out = capsys.readouterr().out
    assert "  tombstone_delivered                             0   (outside the scope)" in out
    assert "PASS: no violation in 672 examples; every hazard window of the scope hit" in out
    candidate = CANDIDATES["no-renewed-check"]
    assert main(["check", "--exhaustive", "--candidate", "no-renewed-check", "--no-database",
                 "--out", str(tmp_path / "d")]) == 1
    assert "  schedule (a smallest in the scope):" in capsys.readouterr().out and candidate.breaks
