"""Sweeps: expansion, the tidy table, confidence intervals, the cheapest point, resuming, and
the same rows from the process pool and from a Dask cluster."""

from pathlib import Path

import pandas as pd
import pytest

from acksim.cli.main import main
from acksim.scenario import ScenarioError
from acksim.capacity.sweep import load_sweep
from acksim.capacity.executors import execute, finished_runs
from acksim.capacity.sweep_report import cheapest, point_summary

SMOKE = Path(__file__).resolve().parents[2] / "scenarios" / "smoke.toml"


def sweep_file(tmp_path, grid='"workers.count" = [1, 3]', extra=""):
    path = tmp_path / "sweep.toml"
    path.write_text(f'scenario = "{SMOKE}"\nreplications = 2\n{extra}\n[overrides]\n"workload.accounts" = 60\n'
                    f'"workload.deadline_window_s" = 1800.0\n\n[grid]\n{grid}\n')
    return path


def test_a_sweep_expands_to_points_times_seeds(tmp_path):
    spec, runs, sweep_id = load_sweep(sweep_file(tmp_path, '"workers.count" = [1, 3]\n"queue.visibility_timeout_s" = [10.0, 30.0]'))
    assert len(runs) == 8 and [r.point for r in runs] == [0, 0, 1, 1, 2, 2, 3, 3]
    assert [r.seed for r in runs[:2]] == [7, 8]  # the base scenario's seed, then the next
    assert runs[2].params == (("workers.count", 1), ("queue.visibility_timeout_s", 30.0))
    assert runs[0].scenario["workload"]["accounts"] == 60 and len(sweep_id) == 12


@pytest.mark.parametrize("grid, extra, message", [
    ('"workers.count" = [0, 2]', "", "grid point {'workers.count': 0}: workers.count: Input should be greater than or equal to 1"),
    ('"workers.nope" = [1]', 'cost = "workers.nope"', "grid.workers.nope: no scenario field 'workers.nope'"),
    ('"workers.count" = [1]', 'cost = "queue.kind"', "cost: 'queue.kind' is not a grid field (workers.count)"),
    ('"workers.count" = []', "", "grid.workers.count: List should have at least 1 item"),
    ('"queue.preset" = ["sqs-standard"]', 'cost = "queue.preset"',
     "grid.queue.preset: a sweep cannot vary queue.preset (each preset brings its own defaults)"),
])
def test_bad_sweeps_are_refused_before_any_run(tmp_path, grid, extra, message):
    with pytest.raises(ScenarioError) as err:
        load_sweep(sweep_file(tmp_path, grid, extra))
    assert message in str(err.value) and "\n" not in str(err.value)


def test_local_sweep_writes_the_table_the_summary_and_the_cheapest_point(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["sweep", str(sweep_file(tmp_path)), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "4 runs over 2 grid points (2 replications each)" in printed
    rows = pd.read_csv(out / "runs.csv")
    assert list(rows["run"]) == [0, 1, 2, 3] and set(rows["workers.count"]) == {1, 3}
    assert {"recovery_time_p99_s", "recovery_time_p99_s_met", "holds_no_lost_work", "passed"} <= set(rows)
    assert pd.read_parquet(out / "runs.parquet").drop(columns=[]).shape[0] == 4
    summary = pd.read_csv(out / "summary.csv")
    assert list(summary["workers.count"]) == [1, 3] and list(summary["runs"]) == [2, 2]
    assert (summary["end_to_end_p99_s_ci_low"] <= summary["end_to_end_p99_s_mean"]).all()
    assert (out / "plots" / "recovery_time_p99_s.png").is_file()
    assert "cheapest grid point meeting every SLO: workers.count = 1" in printed


def test_point_summary_and_cheapest_on_known_rows():
    rows = pd.DataFrame({"run": [0, 1, 2, 3], "point": [0, 0, 1, 1], "workers.count": [1, 1, 4, 4],
                         "passed": [True, False, True, True], "end_to_end_p50_s": [1.0, 3.0, 2.0, 2.0]})
    summary = point_summary(rows, ["workers.count"])
    assert summary.loc[0, "end_to_end_p50_s_mean"] == 2.0
    assert summary.loc[0, "end_to_end_p50_s_ci_high"] == pytest.approx(2.0 + 12.7062047 * 1.0)  # t(0.975, 1)
    assert summary.loc[1, "end_to_end_p50_s_ci_low"] == 2.0  # no spread
    assert list(summary["all_passed"]) == [False, True]
    assert cheapest(summary, "workers.count")["workers.count"] == 4


def test_an_interrupted_sweep_keeps_its_rows_and_a_rerun_does_only_the_rest(tmp_path):
    spec, runs, sweep_id = load_sweep(sweep_file(tmp_path))
    out = tmp_path / "out"
    first = execute(runs[:2], out, sweep_id)  # as if stopped after two runs
    assert sorted(finished_runs(out / "runs.csv", sweep_id)["run"]) == [0, 1]  # in order of completion
    broken = [r if r.run < 2 else type(r)(r.run, r.point, r.params, r.seed, {**r.scenario, "bogus": 1})
              for r in runs]
    with pytest.raises(ScenarioError):
        execute(broken, out, sweep_id)  # runs 0 and 1 are not run again; 2 fails to parse
    rows = execute(runs, out, sweep_id)
    assert list(rows["run"]) == [0, 1, 2, 3]
    pd.testing.assert_frame_equal(rows.iloc[:2].reset_index(drop=True), first, check_dtype=False)


def test_the_dask_executor_gives_the_same_rows_as_the_process_pool(tmp_path):
    distributed = pytest.importorskip("distributed")
    spec, runs, sweep_id = load_sweep(sweep_file(tmp_path))
    local = execute(runs, tmp_path / "local", sweep_id)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        remote = execute(runs, tmp_path / "dask", sweep_id, executor="dask", address=cluster.scheduler_address)
    pd.testing.assert_frame_equal(local, remote)


def test_the_sweep_prints_each_points_verdict_and_writes_junit(tmp_path, capsys):
    import xml.etree.ElementTree as ET

    from acksim.judges.invariants import INVARIANTS
    from acksim.judges.slo import FIGURES

    grid = '"workers.count" = [1]\n"slo.recovery_time_p99_s" = [0.001, 1000.0]'
    xml = tmp_path / "sweep.xml"
    assert main(["sweep", str(sweep_file(tmp_path, grid)), "--out", str(tmp_path / "out"),
                 "--junit-xml", str(xml)]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[1].startswith("FAIL: point 0 (workers.count = 1, slo.recovery_time_p99_s = 0.001): "
                                 "0 of 2 runs passed; seed 7: recovery_time_p99_s (") and " | seed 8: " in printed[1]
    assert printed[2] == "PASS: point 1 (workers.count = 1, slo.recovery_time_p99_s = 1000.0): 2 of 2 runs passed"
    rows = pd.read_csv(tmp_path / "out" / "runs.csv")
    assert list(rows["verdict"]) == ["FAIL", "FAIL", "PASS", "PASS"]
    assert rows["reasons"][0].startswith("recovery_time_p99_s (")
    assert list(pd.read_csv(tmp_path / "out" / "summary.csv")["verdict"]) == ["FAIL", "PASS"]
    suites = ET.parse(xml).getroot().findall("testsuite")
    assert [len(s.findall("testcase")) for s in suites] == [len(INVARIANTS) + len(FIGURES) + 1] * 2
    failed = [[c.get("name") for c in s.findall("testcase") if c.find("failure") is not None] for s in suites]
    assert failed == [["recovery_time_p99_s", "verdict"], []]
