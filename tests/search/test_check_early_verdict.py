"""A check's verdict as soon as it is known: the search stops at its first finding (unless
``--all-findings``), says when it came, and ``--max-time`` bounds the search in wall time."""

import pytest

from acksim.cli.check import parse_duration, search_budget_s
from acksim.cli.main import main
from acksim.model import process
from acksim.model.candidates import CANDIDATES
from acksim.report.outdir import UsageError
from acksim.search.api import check
from acksim.search.check import CheckReport, FirstFinding, base_scenario, run_check
from acksim.search.parallel import merge

NO_RENEWED = CANDIDATES["no-renewed-check"]


def test_the_search_stops_at_its_first_finding_and_all_findings_searches_on():
    base = base_scenario(None, NO_RENEWED.design)
    first = run_check(NO_RENEWED.processor, base, max_examples=60, seed=0)
    assert list(first.findings) == ["no_cleanup_after_renewal"]
    assert first.first is not None and first.first.kind == "no_cleanup_after_renewal"
    assert 1 <= first.first.example <= first.examples and first.first.seconds >= 0.0
    assert not first.out_of_time
    # --all-findings: the same first round, then a round of 60 more examples that finds no new kind
    every = run_check(NO_RENEWED.processor, base, max_examples=60, seed=0, all_findings=True)
    assert list(every.findings) == ["no_cleanup_after_renewal"]
    assert every.first.example == first.first.example and every.first.kind == first.first.kind
    assert every.examples == first.examples + 60


def test_the_time_budget_ends_the_search_and_says_so():
    report = run_check(process, base_scenario(), max_examples=1_000_000, seed=0, max_time_s=2.0)
    assert report.out_of_time and report.findings == {} and report.first is None
    assert 0 < report.examples < 1_000_000


def test_the_library_call_takes_a_time_budget_and_refuses_a_bad_one():
    report, _ref, _base = check("acksim.model.processor:process", max_examples=1_000_000, max_time=1.5)
    assert report.out_of_time and report.findings == {}
    with pytest.raises(ValueError, match="max_time: must be a positive number of seconds"):
        check("acksim.model.processor:process", max_time=0)


def test_merge_keeps_the_lowest_search_first_finding_and_any_time_out():
    one, two = CheckReport(examples=3), CheckReport(examples=4, out_of_time=True)
    two.first = FirstFinding("no_lost_work", 2, 0.5)
    merged = merge([one, two])
    assert merged.first == FirstFinding("no_lost_work", 2, 0.5) and merged.out_of_time
    one.first = FirstFinding("at_most_once_effect", 3, 0.9)
    assert merge([one, two]).first.kind == "at_most_once_effect"
    assert not merge([one, CheckReport()]).out_of_time


@pytest.mark.parametrize("text, seconds", [("30s", 30.0), ("5m", 300.0), ("2min", 120.0), ("1h", 3600.0),
                                           ("90", 90.0), ("1500ms", 1.5), (" 2.5s ", 2.5)])
def test_durations_read_with_their_units(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["0.5s", "abc", "25h", "", "-3s", "1d", "500ms"])
def test_a_bad_duration_is_one_line_naming_the_flag(text):
    with pytest.raises(UsageError, match=r"^--max-time: must be a duration of 1 s \.\. 24 h"):
        parse_duration(text)


def test_the_search_keeps_time_to_confirm_a_finding():
    assert search_budget_s(None) is None
    assert search_budget_s(30.0) == 25.0 and search_budget_s(10.0) == 8.0 and search_budget_s(3600.0) == 3595.0


def test_the_command_prints_when_the_first_violation_came(tmp_path, capsys):
    rc = main(["check", "--candidate", "no-renewed-check", "--max-examples", "60", "--no-database", "--jobs", "1",
               "--out", str(tmp_path / "c")])
    out = capsys.readouterr().out
    assert rc == 1
    assert "first violation (no_cleanup_after_renewal) after " in out
    assert "stopped at the first finding (shrunk, then confirmed in a fresh process)" in out
    assert "FAIL: 1 kind(s) of finding: no_cleanup_after_renewal" in out


def test_the_command_stops_at_its_time_budget_with_a_pass_that_says_so(tmp_path, capsys):
    rc = main(["check", "--max-time", "2s", "--max-examples", "1000000", "--no-database", "--jobs", "1",
               "--out", str(tmp_path / "c")])
    out = capsys.readouterr().out
    assert rc == 0
    assert "stopped by --max-time 2 s after " in out and "(of 1000000 asked for)" in out
    assert "PASS: no violation in " in out and "(the time budget ended the search)" in out
    assert main(["check", "--max-time", "forever", "--out", str(tmp_path / "c")]) == 2
    assert "--max-time: must be a duration of 1 s .. 24 h such as 30s, 5m or 1h, got 'forever'" in \
        capsys.readouterr().err


# a correct processor that is slower than the reference: 25 account reads an attempt
CHATTY = '''
from acksim.model.job import reminder_event_key


def process(job, accounts, cleanup_store, outbox):
    for _ in range(24):
        accounts.get(job.account_id)
    account = accounts.get(job.account_id)
    if account is None or account.cleanup_version != job.cleanup_version or account.renewed:
        return
    if cleanup_store.was_applied(job.account_id, job.cleanup_version):
        return
    cleanup_store.apply_once(account_id=job.account_id, cleanup_version=job.cleanup_version)
    outbox.add_once(event_key=reminder_event_key(job.account_id, job.cleanup_version),
                    account_id=job.account_id, cleanup_version=job.cleanup_version)
'''


def test_a_correct_processor_that_makes_25_reads_an_attempt_passes_as_the_reference_does(tmp_path, capsys):
    # the search once drew a 3 ms execution time limit that every attempt of such a processor overran
    (tmp_path / "chatty.py").write_text(CHATTY)
    rc = main(["check", "--processor", f"{tmp_path / 'chatty.py'}:process", "--seed", "1", "--max-examples", "300",
               "--no-database", "--jobs", "1", "--out", str(tmp_path / "c")])
    out = capsys.readouterr().out
    assert "PASS: no violation in 300 examples" in out and rc == 0
