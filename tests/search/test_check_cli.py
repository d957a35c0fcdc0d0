"""``acksim check`` on the command line: exit codes, output, replay files, bad input."""


import pytest

from acksim.cli.main import main


def test_the_reference_passes_and_reports_coverage(tmp_path, capsys):
    assert main(["check", "--max-examples", "40", "--no-database", "--out", str(tmp_path / "c")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("acksim check: acksim.model.processor:process (ack after_commit, unit_of_work, memory serializable")
    assert "examples run (shrinking included): 40 in " in out and "crash phases covered: before_call" in out
    assert "crash_after_commit_before_ack" in out and "PASS: no violation in 40 examples" in out
    assert not (tmp_path / "c").exists() or not any((tmp_path / "c").iterdir())


def test_a_bad_candidate_fails_with_a_timeline_and_a_replay_that_run_reproduces(tmp_path, capsys):
    rc = main(["check", "--candidate", "no-renewed-check", "--max-examples", "200", "--no-database",
               "--out", str(tmp_path / "c"), "--save-corpus", str(tmp_path / "corpus")])
    out = capsys.readouterr().out
    assert rc == 1
    assert "FOUND no_cleanup_after_renewal" in out and "schedule (shrunk):" in out and "timeline:" in out
    assert "renewals       renewed" in out and "cleanup_applied" in out
    replay = tmp_path / "c" / "acksim.model.candidates.no_renewed_check-no_cleanup_after_renewal.toml"
    assert replay.is_file() and (tmp_path / "corpus" / replay.name).read_text() == replay.read_text()
    assert replay.with_suffix(".png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"replay: acksim run {replay}" in out
    assert main(["run", str(replay), "--out", str(tmp_path / "r")]) == 1
    out = capsys.readouterr().out
    assert "replay: reproduced (no_cleanup_after_renewal; same history, record for record)" in out
    assert (tmp_path / "r" / "plots" / "counterexample.png").is_file()


def test_design_options_select_the_design(tmp_path, capsys):
    rc = main(["check", "--isolation", "read_committed", "--max-examples", "300", "--no-database",
               "--out", str(tmp_path / "c")])
    out = capsys.readouterr().out
    assert rc == 1 and "memory read_committed" in out and "FOUND no_cleanup_after_renewal" in out


def test_require_coverage_fails_when_a_hazard_window_was_never_hit(tmp_path, capsys):
    rc = main(["check", "--max-examples", "2", "--no-database", "--require-coverage", "--out", str(tmp_path / "c")])
    out = capsys.readouterr().out
    assert rc == 1 and "WARNING: never hit" in out and "FAIL: hazard windows never hit:" in out


@pytest.mark.parametrize("args, message", [
    (["--processor", "nope.mod:fn"], "--processor: cannot import 'nope.mod': ModuleNotFoundError"),
    (["--processor", "acksim.model.processor"], "--processor: expected package.module:function or path/to/file.py:function"),
    (["--processor", "acksim.model.processor:nothing"], "--processor: 'acksim.model.processor' has no attribute 'nothing'"),
    (["--processor", "acksim.model.job:reminder_event_key"],
     "--processor: 'acksim.model.job:reminder_event_key' must accept (job, accounts, cleanup_store, outbox)"),
    (["--processor", "missing/file.py:process"], "processor: file 'missing/file.py' not found"),
    (["--candidate", "nope"], "--candidate: unknown 'nope'; one of reference, "),
    (["--max-examples", "0"], "--max-examples: must be 1 .. 1000000, got 0"),
    (["--isolation", "dirty"], "argument --isolation: invalid choice: 'dirty'"),
])
def test_bad_check_input_exits_2_with_one_line(tmp_path, capsys, args, message):
    assert main(["check", *args, "--out", str(tmp_path / "c")]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_a_processor_from_a_file(tmp_path, capsys):
    mine = tmp_path / "mine.py"
    mine.write_text("from model import process as reference\n\n"
                    "def process(job, accounts, cleanup_store, outbox):\n"
                    "    reference(job, accounts, cleanup_store, outbox)\n")
    assert main(["check", "--processor", f"{mine}:process", "--max-examples", "20", "--no-database",
                 "--out", str(tmp_path / "c")]) == 0
    assert f"acksim check: {mine}:process" in capsys.readouterr().out


def test_the_pytest_fixture_checks_a_processor_in_a_users_suite(pytester):
    pytester.makepyfile(test_user="""
        from acksim.model import process
        from acksim.model.candidates import no_renewed_check

        def test_reference_is_safe(acksim_check):
            report = acksim_check(process, max_examples=20)
            assert report.examples == 20 and not report.findings

        def test_candidate_is_caught(acksim_check):
            acksim_check(no_renewed_check, max_examples=200)
    """)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*acksim found no_cleanup_after_renewal in acksim.model.candidates:no_renewed_check*",
                                 "*replay: acksim run *acksim-replays*"])


def test_on_a_terminal_check_shows_a_tqdm_bar_and_elsewhere_none(tmp_path, monkeypatch, capsys):
    import io

    class Tty(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setattr("sys.stderr", Tty())
    import sys

    assert main(["check", "--max-examples", "20", "--no-database", "--out", str(tmp_path / "c")]) == 0
    err = sys.stderr.getvalue()
    assert "checking: " in err and "20/20" in err and "example/s" in err
    monkeypatch.undo()
    assert main(["check", "--max-examples", "20", "--no-database", "--out", str(tmp_path / "c")]) == 0
    assert capsys.readouterr().err == ""


def test_each_finding_of_a_long_processor_and_design_gets_its_own_replay_file():
    # "acksim.model.candidates.naive-autocommit+no-unique-markers+..." alone passes 80 characters:
    # the cut takes from the processor and design, never from the finding name
    from acksim.search.check import base_scenario
    from acksim.search.findings import FINDINGS
    from acksim.search.replay import replay_stem

    design = base_scenario(design={"workers": {"transaction_scope": "autocommit"},
                                   "stores": {"unique_markers": False, "unique_outbox_keys": False}})
    stems = [replay_stem("acksim.model.candidates:naive", design, name) for name in FINDINGS]
    assert len(set(stems)) == len(FINDINGS)
    assert all(len(s) <= 80 and s.endswith(f"-{name}") for s, name in zip(stems, FINDINGS))
    assert stems[0].startswith("acksim.model.candidates.naive-autocommit")
    short = replay_stem("acksim.model.candidates:no_renewed_check", base_scenario(), "no_cleanup_after_renewal")
    assert short == "acksim.model.candidates.no_renewed_check-no_cleanup_after_renewal"  # short names as before
