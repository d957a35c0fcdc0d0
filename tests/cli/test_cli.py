"""The command line on real output: reports, exit codes, determinism, bad input."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from acksim.cli.main import main

SMOKE = str(Path(__file__).resolve().parents[2] / "scenarios" / "smoke.toml")


def test_run_writes_the_report_and_exits_0(tmp_path, capsys):
    out = tmp_path / "rep"
    assert main(["run", SMOKE, "--out", str(out)]) == 0
    assert capsys.readouterr().out.startswith("PASS: smoke seed 7: ")
    names = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    assert names == [".acksim-report", "events.csv", "plots/end_to_end_ecdf.png", "plots/queue_depth.png",
                     "plots/recovery_time.png", "plots/throughput.png", "plots/worker_timeline.png",
                     "report.html", "report.md", "summary.json"]
    summary = json.loads((out / "summary.json").read_text())
    assert list(summary) == ["schema_version", "scenario", "seed", "verdict", "reasons", "invariants", "slo",
                             "counts", "parameters", "stop_reason"]
    assert (summary["schema_version"], summary["verdict"], summary["reasons"]) == (1, "PASS", [])
    assert summary["scenario"] == "smoke" and summary["seed"] == 7
    assert all(v["holds"] for v in summary["invariants"].values())
    c = summary["counts"]
    assert c["accounts"] == 300 and c["crashes_after_commit"] > 0 and c["crashes_before_call"] > 0
    assert c["cleanups"] == c["outbox_events"] > 0
    events = pd.read_csv(out / "events.csv")
    assert len(events) == c["records"]
    assert (events["kind"] == "cleanup_applied").sum() == c["cleanups"]


def test_same_scenario_and_seed_give_the_same_bytes(tmp_path):
    for name in ("a", "b"):
        assert main(["run", SMOKE, "--out", str(tmp_path / name)]) == 0
    for f in ("summary.json", "events.csv", "report.md"):
        assert (tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes(), f
    assert main(["run", SMOKE, "--seed", "8", "--out", str(tmp_path / "c")]) == 0
    assert (tmp_path / "a" / "events.csv").read_bytes() != (tmp_path / "c" / "events.csv").read_bytes()


def test_a_missed_slo_threshold_exits_1(tmp_path, capsys):
    path = tmp_path / "s.toml"
    path.write_text(Path(SMOKE).read_text().replace("recovery_time_p99_s = 120", "recovery_time_p99_s = 1"))
    assert main(["run", str(path), "--out", str(tmp_path / "rep")]) == 1
    out = capsys.readouterr().out
    assert out.startswith("FAIL: smoke") and "SLOs missed: recovery_time_p99_s" in out
    slo = json.loads((tmp_path / "rep" / "summary.json").read_text())["slo"]["recovery_time_p99_s"]
    assert slo["met"] is False and slo["value"] > 1


def test_a_violated_invariant_exits_1(tmp_path, capsys):
    path = tmp_path / "s.toml"
    path.write_text(Path(SMOKE).read_text().replace("[workers]\n", '[workers]\nack_policy = "before_processing"\n'))
    assert main(["run", str(path), "--out", str(tmp_path / "rep")]) == 1
    assert "invariants violated: ack_after_durable" in capsys.readouterr().out


def test_unknown_key_is_bad_input(tmp_path, capsys):
    path = tmp_path / "s.toml"
    path.write_text(Path(SMOKE).read_text() + "\n[run]\nbogus = 1\n")
    assert main(["run", str(path), "--out", str(tmp_path / "rep")]) == 2
    err = capsys.readouterr().err
    assert "run.bogus: unknown key (allowed keys here: max_time_s, idle_check_s, max_records, step_budget_s, max_events, max_wall_s, max_redeliveries_without_progress, stop_on_processor_error)" in err and err.count("\n") == 1
    assert not (tmp_path / "rep").exists()


@pytest.mark.parametrize("replace, message", [
    (("visibility_timeout_s = 30", "visibility_timeout_s = 0"), "queue.visibility_timeout_s: Input should be greater than 0"),
    (("count = 4", "count = -2"), "workers.count: Input should be greater than or equal to 1"),
    (("count = 4", 'count = "four"'), "workers.count: Input should be a valid integer (got 'four')"),
    (("[queue]\n", "[queue]\nmax_delay_s = 700000\n"), "queue.max_delay_s: the rest-queue preset allows 0 <= value <= 604800 (got 700000)"),
    (("[workload]", "[workload"), "not valid TOML"),
    (("recovery_time_p99_s = 120", "recovery_time_p99_s = inf"), "slo.recovery_time_p99_s: Input should be a finite number"),
    (("accounts = 300", "accounts = true"), "workload.accounts: Input should be a valid integer (got True)"),
    (("[workload]\n", "[workload]\ndeadline_start_s = 1e300\n"), "workload.deadline_start_s: Input should be less than or equal to"),
    (("epoch = 2026-01-01T00:00:00Z", "epoch = 9999-12-31T23:59:59Z"), "epoch: must be a UTC date-time between 1970 and 9000"),
    (("[faults]\n", '[[faults.crashes]]\ndelivery = 1\nphase = "before_call"\nbogus = 1\n\n[faults]\n'),
     "faults.crashes.0.bogus: unknown key (allowed keys here: delivery, phase, call)"),
])
def test_bad_values_exit_2_with_one_line_and_write_nothing(tmp_path, capsys, replace, message):
    path = tmp_path / "s.toml"
    path.write_text(Path(SMOKE).read_text().replace(*replace))
    assert main(["run", str(path), "--out", str(tmp_path / "rep")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("acksim: error: ") and message in err and err.count("\n") == 1
    assert not (tmp_path / "rep").exists()


def test_missing_file_and_bad_arguments_exit_2(tmp_path):
    r = subprocess.run([sys.executable, "-m", "acksim.cli.main", "run", str(tmp_path / "none.toml")],
                       capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.strip().endswith("none.toml: scenario file not found")
    r = subprocess.run([sys.executable, "-m", "acksim.cli.main", "run", SMOKE, "--seed", "x"], capture_output=True, text=True)
    assert r.returncode == 2 and "--seed: invalid int value: 'x'" in r.stderr
    r = subprocess.run([sys.executable, "-m", "acksim.cli.main", "run", SMOKE, "--seed", "-1"], capture_output=True, text=True)
    assert r.returncode == 2 and "seed: Input should be greater than or equal to 0" in r.stderr


def test_the_history_does_not_depend_on_the_process_hash_seed(tmp_path):
    outs = []
    for hash_seed in ("1", "2"):
        out = tmp_path / f"h{hash_seed}"
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        r = subprocess.run([sys.executable, "-m", "acksim.cli.main", "run", SMOKE, "--out", str(out)], env=env,
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        outs.append(((out / "events.csv").read_bytes(), (out / "summary.json").read_bytes()))
    assert outs[0] == outs[1]


def test_out_refuses_a_folder_that_is_not_a_report(tmp_path, capsys):
    keep = tmp_path / "mine"
    keep.mkdir()
    (keep / "notes.txt").write_text("precious")
    assert main(["run", SMOKE, "--out", str(keep)]) == 2
    assert "holds no acksim report (no .acksim-report)" in capsys.readouterr().err
    assert (keep / "notes.txt").read_text() == "precious"
    assert main(["run", SMOKE, "--out", str(keep / "notes.txt")]) == 2
    assert "exists and is not a folder" in capsys.readouterr().err


def test_a_name_with_slashes_stays_one_folder_under_reports(tmp_path, monkeypatch, capsys):
    path = tmp_path / "s.toml"
    path.write_text(Path(SMOKE).read_text().replace('name = "smoke"', 'name = "../../etc/x y"'))
    monkeypatch.chdir(tmp_path)
    assert main(["run", str(path)]) == 0
    assert (tmp_path / "reports" / "_.._etc_x_y" / "summary.json").is_file()


@pytest.mark.parametrize("make, message", [
    (lambda d: (d / "f").write_text("x") and d / "f" / "rep", "is a file, not a folder"),
    (lambda d: d / ("x" * 300), "File name too long"),
    (lambda d: "", "needs a folder name"),
])
def test_an_unwritable_report_folder_is_refused_before_the_run(tmp_path, capsys, make, message):
    out = make(tmp_path)
    assert main(["run", SMOKE, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("acksim: error: --out: ") and message in err and err.count("\n") == 1
    assert sorted(p.name for p in tmp_path.iterdir()) in ([], ["f"])


def test_a_scenario_that_is_not_a_small_regular_file_is_refused(tmp_path, capsys):
    assert main(["run", str(tmp_path)]) == 2
    assert "not a regular file" in capsys.readouterr().err
    deep = tmp_path / "deep.toml"
    deep.write_text("x = " + "[" * 1000 + "]" * 1000)
    assert main(["run", str(deep)]) == 2
    assert "nested too deeply" in capsys.readouterr().err
    big = tmp_path / "big.toml"
    big.write_text("# " + "x" * 1_000_001)
    assert main(["run", str(big)]) == 2
    assert "a scenario file may have at most 1000000" in capsys.readouterr().err
