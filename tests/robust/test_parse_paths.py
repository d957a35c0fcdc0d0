"""Every parse path is one line on stderr and exit 2, nothing written: huge integers, deep
nesting, oversized files, unknown invariant names in [expect], control characters in a name
or a path, a flood of scheduler stalls. And an OS error while writing output is one line with
exit 4, after the verdict computed before it."""

import errno
from pathlib import Path

import pytest

from acksim.cli.main import main
from acksim.scenario import ScenarioError, load

SMOKE = Path(__file__).resolve().parents[2] / "scenarios" / "smoke.toml"
TINY = 'name = "tiny"\n[workload]\naccounts = 5\ndeadline_window_s = 60\n'


def refused(capsys, argv, tmp_path) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("acksim: error: "), err
    assert not (tmp_path / "out").exists()
    return err


def sweep(tmp_path, body: str) -> Path:
    path = tmp_path / "sweep.toml"
    path.write_text(f'scenario = "{SMOKE}"\n{body}')
    return path


@pytest.mark.parametrize("command", ["run", "sweep"])
def test_an_integer_over_4300_digits_is_bad_toml(tmp_path, capsys, command):
    path = tmp_path / "big.toml"
    if command == "run":
        path.write_text(f"seed = {'9' * 5000}\n")
    else:
        path = sweep(tmp_path, f"replications = {'9' * 5000}\n[grid]\n\"workers.count\" = [1]\n")
    err = refused(capsys, [command, str(path), "--out", str(tmp_path / "out")], tmp_path)
    assert ": not valid TOML: Exceeds the limit (4300 digits) for integer string conversion" in err


@pytest.mark.parametrize("command", ["run", "sweep"])
def test_nesting_5000_deep_is_bad_toml(tmp_path, capsys, command):
    nested = "[" * 5000 + "]" * 5000
    path = tmp_path / "deep.toml"
    path.write_text(f"x = {nested}\n" if command == "run" else f'scenario = "{SMOKE}"\n[grid]\n"workers.count" = {nested}\n')
    err = refused(capsys, [command, str(path), "--out", str(tmp_path / "out")], tmp_path)
    assert err.endswith(": not valid TOML: arrays or tables nested too deeply\n")


def test_a_sweep_file_over_1_mb_is_refused(tmp_path, capsys):
    path = sweep(tmp_path, "#" * 1_000_001 + "\n")
    err = refused(capsys, ["sweep", str(path), "--out", str(tmp_path / "out")], tmp_path)
    assert f"{path}: {path.stat().st_size} bytes; a sweep file may have at most 1000000" in err


def test_expect_naming_an_unknown_invariant_lists_the_allowed_names(tmp_path, capsys):
    path = tmp_path / "replay.toml"
    path.write_text(TINY + '[expect]\nviolated = ["no_lost_work", "no_such_thing"]\n')
    err = refused(capsys, ["run", str(path), "--out", str(tmp_path / "out")], tmp_path)
    assert ("expect.violated: no invariant 'no_such_thing'; allowed: no_cleanup_after_renewal, at_most_once_effect, "
            "effect_with_outbox, ack_after_durable, no_lost_work, exactly_once_in_effect") in err


@pytest.mark.parametrize("name", ["two\nlines", "bell\x07", "tab\tname", "nul\x00"])
def test_a_name_with_a_control_character_is_refused_in_one_line(tmp_path, capsys, name):
    import json

    path = tmp_path / "s.toml"
    path.write_text(TINY.replace('name = "tiny"', f"name = {json.dumps(name)}"))
    err = refused(capsys, ["run", str(path), "--out", str(tmp_path / "out")], tmp_path)
    assert f": name: must be one printable line: no newline or other control character (got {name!r})\n" in err


def test_a_path_with_a_newline_prints_escaped_on_one_line(tmp_path, capsys):
    folder = tmp_path / "a\nb"
    folder.mkdir()
    path = folder / "missing.toml"
    err = refused(capsys, ["run", str(path), "--out", str(tmp_path / "out")], tmp_path)
    assert f"acksim: error: {str(path)!r}: scenario file not found\n" == err
    out = tmp_path / "x\ny"
    (tmp_path / "s.toml").write_text(TINY)
    assert main(["run", str(tmp_path / "s.toml"), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert printed.count("\n") == 1 and printed.endswith(f"; report: {str(out)!r}\n")


def test_twenty_thousand_overlapping_stalls_are_refused_and_a_few_merged(tmp_path, capsys):
    stalls = ", ".join(f"[{i}.0, {i + 100}.0]" for i in range(20_000))
    path = tmp_path / "s.toml"
    path.write_text(TINY + f'[scheduler]\nmode = "cron"\n[faults]\nscheduler_stalls = [{stalls}]\n')
    err = refused(capsys, ["run", str(path), "--out", str(tmp_path / "out")], tmp_path)
    assert ": faults.scheduler_stalls: " in err and "should have at most 10000 items after validation, not 20000" in err
    path.write_text(TINY + '[scheduler]\nmode = "cron"\n[faults]\n'
                           'scheduler_stalls = [[50.0, 60.0], [10.0, 20.0], [15.0, 30.0], [30.0, 40.0]]\n')
    assert load(path).faults.scheduler_stalls == ((10.0, 40.0), (50.0, 60.0))


def test_a_full_disk_while_writing_the_report_prints_the_verdict_then_one_line_exit_4(tmp_path, capsys, monkeypatch):
    import acksim.report as report

    def full(folder, *args, **kwargs):
        (folder / "summary.json").write_text("{")
        raise OSError(errno.ENOSPC, "No space left on device", str(folder / "events.csv"))

    monkeypatch.setattr(report, "_write_files", full)
    (tmp_path / "s.toml").write_text(TINY)
    assert main(["run", str(tmp_path / "s.toml"), "--out", str(tmp_path / "out")]) == 4
    captured = capsys.readouterr()
    assert captured.out.startswith("PASS: tiny seed 0: ") and captured.out.endswith("; report not written\n")
    assert captured.err == f"acksim: error: cannot write the report {tmp_path / 'out'}: No space left on device (ENOSPC)\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.toml"]  # no scratch folder left


def test_a_read_only_junit_target_is_exit_4_not_an_internal_error(tmp_path, capsys, monkeypatch):
    import acksim.report.junit as junit

    def denied(path, suites):
        raise PermissionError(errno.EACCES, "Permission denied", str(path))

    monkeypatch.setattr(junit, "write_junit", denied)
    (tmp_path / "s.toml").write_text(TINY)
    xml = tmp_path / "j.xml"
    assert main(["run", str(tmp_path / "s.toml"), "--out", str(tmp_path / "out"), "--junit-xml", str(xml)]) == 4
    captured = capsys.readouterr()
    assert captured.err == f"acksim: error: cannot write {xml}: Permission denied (EACCES)\n"
    assert captured.out.startswith("PASS: tiny seed 0: ")
