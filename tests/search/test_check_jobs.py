"""``acksim check --jobs N``: N searches with distinct seeds, one merged, deterministic report."""

from acksim.cli.main import main
from acksim.search.check import base_scenario
from acksim.search.parallel import budgets, merge, run_checks, search_seed


def test_the_examples_are_split_and_the_first_search_keeps_the_seed():
    assert budgets(500, 2) == [250, 250] and budgets(7, 3) == [3, 2, 2] and budgets(2, 4) == [1, 1]
    assert search_seed(5, 0) == 5
    seeds = {search_seed(5, i) for i in range(8)}
    assert len(seeds) == 8 and all(0 <= s < 2**63 for s in seeds)
    assert search_seed(5, 1) == search_seed(5, 1) != search_seed(6, 1)


def test_two_searches_give_one_report_that_does_not_depend_on_timing():
    # without a database (which the searches share, so what one saved another may replay first)
    runs = [run_checks("acksim.model.candidates:no_renewed_check", base_scenario(), jobs=2, max_examples=60,
                       seed=1) for _ in range(2)]
    a, b = runs
    assert a.examples == b.examples >= 60
    assert dict(a.coverage) == dict(b.coverage) and dict(a.phases) == dict(b.phases)
    assert list(a.findings) == list(b.findings) and "no_cleanup_after_renewal" in a.findings
    (s1, r1), (s2, r2) = a.findings["no_cleanup_after_renewal"], b.findings["no_cleanup_after_renewal"]
    assert s1 == s2 and r1.history == r2.history


def test_searches_share_one_example_database(tmp_path):
    db = tmp_path / "db"
    first = run_checks("acksim.model.candidates:no_renewed_check", base_scenario(), jobs=2, max_examples=60,
                       seed=1, database=db, key="k")
    assert "no_cleanup_after_renewal" in first.findings and any(db.iterdir())
    again = run_checks("acksim.model.candidates:no_renewed_check", base_scenario(), jobs=2, max_examples=60,
                       seed=9, database=db, key="k", stop_at=frozenset({"no_cleanup_after_renewal"}))
    assert "no_cleanup_after_renewal" in again.findings  # replayed from the database first


def test_merge_adds_counts_and_keeps_the_first_search_finding():
    from acksim.search.check import CheckReport

    one, two = CheckReport(examples=3, seconds=1.0), CheckReport(examples=4, seconds=2.0)
    one.coverage.update({"scheduler_pause": 1}), two.coverage.update({"scheduler_pause": 2})
    one.findings["at_most_once_effect"] = ("first", None)
    two.findings["at_most_once_effect"] = ("second", None)
    two.findings["no_lost_work"] = ("third", None)
    merged = merge([one, two])
    assert merged.examples == 7 and merged.coverage["scheduler_pause"] == 3
    assert merged.findings == {"at_most_once_effect": ("first", None), "no_lost_work": ("third", None)}


def test_the_command_runs_parallel_searches_and_refuses_a_bad_count(tmp_path, capsys):
    assert main(["check", "--jobs", "2", "--max-examples", "20", "--no-database", "--out", str(tmp_path / "c")]) == 0
    out = capsys.readouterr().out
    assert "examples run (shrinking included): 20 in " in out and ", 2 searches in parallel" in out
    assert main(["check", "--jobs", "0", "--out", str(tmp_path / "c")]) == 2
    assert "--jobs: must be 1 .. 256, got 0" in capsys.readouterr().err
