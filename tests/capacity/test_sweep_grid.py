"""Sweeps: expansion, the tidy table, confidence intervals, the cheapest point, resuming, and
the same rows from the process pool and from a Dask cluster."""

import json
import subprocess
import sys
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
    ('"workers" = [1]', 'cost = "workers"', "grid.workers: 'workers' is a table; name one of its fields, e.g. workers.count"),
    ('"slo.nope_s" = [1.0]', 'cost = "slo.nope_s"', "grid.slo.nope_s: no scenario field 'slo.nope_s'"),
    ('"nope.count" = [1]', 'cost = "nope.count"', "grid.nope.count: no scenario table 'nope'"),
    ('"faults.deployments.at_s" = [1.0]', 'cost = "faults.deployments.at_s"',
     "grid.faults.deployments.at_s: no scenario table 'deployments'"),
    ('"seed" = [1, 2]', 'cost = "seed"', "grid.seed: a sweep cannot vary seed (the replications are the seeds)"),
    ('"slo.recovery_time_max_s" = [-1.0]', 'cost = "slo.recovery_time_max_s"',
     "grid point {'slo.recovery_time_max_s': -1.0}: slo.recovery_time_max_s: Input should be greater than or equal to 0"),
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
    assert {"recovery_time_p99_s", "recovery_time_p99_s_threshold", "recovery_time_p99_s_met", "holds_no_lost_work",
            "passed", "count_stopped_early"} <= set(rows)
    assert list(rows["recovery_time_p99_s_threshold"]) == [120.0] * 4
    assert not (out / "runs.parquet").exists()  # only with --parquet
    summary = pd.read_csv(out / "summary.csv")
    assert list(summary["workers.count"]) == [1, 3] and list(summary["runs"]) == [2, 2]
    assert (summary["end_to_end_p99_s_ci_low"] <= summary["end_to_end_p99_s_mean"]).all()
    assert (out / "plots" / "recovery_time_p99_s.png").is_file()
    assert summary["failed_invariants"].isna().all()  # "" for none, read back as empty
    assert printed.splitlines()[-1].startswith("cheapest grid point passing every replication: workers.count = 1 (")


def test_parquet_output_is_asked_for(tmp_path):
    pytest.importorskip("pyarrow")
    out = tmp_path / "out"
    assert main(["sweep", str(sweep_file(tmp_path)), "--out", str(out), "--parquet"]) == 0
    table = pd.read_parquet(out / "runs.parquet")
    assert list(table["run"]) == [0, 1, 2, 3] and "sweep_id" not in table


@pytest.mark.parametrize("flags, module, line", [
    (["--parquet"], "pyarrow", "acksim: error: --parquet needs the extra acksim[parquet]: pip install 'acksim[parquet]'"),
    (["--executor", "dask", "--address", "tcp://127.0.0.1:1"], "distributed",
     "acksim: error: --executor dask needs the extra acksim[dask]: pip install 'acksim[dask]'"),
])
def test_a_missing_extra_is_one_line_and_exit_2_before_any_run(tmp_path, flags, module, line):
    out = tmp_path / "out"
    code = (f"import sys; sys.modules[{module!r}] = None\n"
            "from acksim.cli.main import main\n"
            f"sys.exit(main(['sweep', {str(sweep_file(tmp_path))!r}, '--out', {str(out)!r}, *{flags!r}]))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert (done.returncode, done.stderr, done.stdout) == (2, line + "\n", "")
    assert not out.exists()


def test_bad_input_is_refused_before_the_sweep_imports_its_engine(tmp_path):
    # pandas and matplotlib still arrive with acksim.report (its plots), which cli.sweep
    # imports for UsageError; what the sweep itself needs comes only once the runs start
    code = ("import sys\n"
            "from acksim.cli.sweep import cmd_sweep\n"
            "import argparse\n"
            f"args = argparse.Namespace(sweep={str(tmp_path / 'missing.toml')!r}, executor='local', address=None, "
            "parquet=False, out=None)\n"
            "try:\n    cmd_sweep(args)\nexcept Exception as exc:\n    print(type(exc).__name__, exc)\n"
            "print(sorted(m for m in ('acksim.capacity.executors', 'acksim.capacity.sweep_report', 'dask', "
            "'distributed', 'scipy') if m in sys.modules))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.splitlines() == [f"ScenarioError {tmp_path / 'missing.toml'}: sweep file not found", "[]"]


BROKEN = ('"workers.transaction_scope" = "autocommit"\n"stores.isolation" = "read_committed"\n'
          '"stores.backend" = "memory"\n"workers.ack_policy" = "before_processing"\n')


def test_a_grid_that_breaks_invariants_fails_for_them_not_for_the_slos(tmp_path, capsys):
    path = tmp_path / "sweep.toml"
    path.write_text(f'scenario = "{SMOKE}"\nreplications = 3\n[overrides]\n"workload.accounts" = 60\n'
                    f'"workload.deadline_window_s" = 1800.0\n{BROKEN}\n[grid]\n"workers.count" = [1, 3]\n')
    out = tmp_path / "out"
    assert main(["sweep", str(path), "--out", str(out)]) == 1
    last = capsys.readouterr().out.splitlines()[-1]
    assert last == ("FAIL: no grid point passed in every replication; invariants violated: "
                    "no_cleanup_after_renewal (2 of 2 points), effect_with_outbox (2 of 2 points), "
                    "ack_after_durable (2 of 2 points), no_lost_work (2 of 2 points); SLO thresholds missed: none")
    summary = pd.read_csv(out / "summary.csv")
    assert list(summary["failed_invariants"]) == ["no_cleanup_after_renewal;effect_with_outbox;ack_after_durable;no_lost_work"] * 2
    assert summary["missed_thresholds"].isna().all()
    result = json.loads((out / "sweep.json").read_text())
    assert result["cheapest"] is None and result["points_passed"] == 0
    assert result["grid"][0]["failed_invariants"][0] == "no_cleanup_after_renewal"
    assert result["grid"][0]["missed_thresholds"] == [] and result["failures"]["thresholds"] == {}


def test_a_grid_may_set_a_threshold_the_base_leaves_unset(tmp_path, capsys):
    out = tmp_path / "out"
    path = sweep_file(tmp_path, '"workers.count" = [1]\n"slo.recovery_time_max_s" = [40.0, 1000.0]')
    assert "recovery_time_max_s" not in SMOKE.read_text()
    assert main(["sweep", str(path), "--out", str(out)]) == 0
    summary = pd.read_csv(out / "summary.csv")
    assert list(summary["recovery_time_max_s_threshold"]) == [40.0, 1000.0]
    assert list(summary["recovery_time_max_s_met"]) == [False, True]
    assert list(summary["missed_thresholds"].fillna("")) == ["recovery_time_max_s", ""]
    result = json.loads((out / "sweep.json").read_text())
    # the ones every point shares: the base's, and the default dead-lettered share
    assert result["thresholds"] == {"recovery_time_p99_s": 120.0, "dead_lettered_share": 0.5}
    assert result["grid"][0]["thresholds"] == {"recovery_time_p99_s": 120.0, "recovery_time_max_s": 40.0,
                                               "dead_lettered_share": 0.5}
    assert result["cheapest"]["slo.recovery_time_max_s"] == 1000.0


def test_the_same_sweep_writes_the_same_files(tmp_path):
    path = sweep_file(tmp_path)
    for name in ("a", "b"):
        assert main(["sweep", str(path), "--out", str(tmp_path / name)]) == 0
    for f in ("runs.csv", "summary.csv", "sweep.json", "plots/end_to_end_p99_s.png"):
        assert (tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes(), f


def test_point_summary_and_cheapest_on_known_rows():
    rows = pd.DataFrame({"run": [0, 1, 2, 3], "point": [0, 0, 1, 1], "workers.count": [1, 1, 4, 4],
                         "passed": [True, False, True, True], "end_to_end_p50_s": [1.0, 3.0, 2.0, 2.0]})
    summary = point_summary(rows, ["workers.count"])
    assert summary.loc[0, "end_to_end_p50_s_mean"] == 2.0
    assert summary.loc[0, "end_to_end_p50_s_ci_high"] == pytest.approx(2.0 + 12.7062047 * 1.0)  # t(0.975, 1)
    assert summary.loc[0, "end_to_end_p50_s_ci_low"] == 0.0  # 2 - 12.7 clipped: a latency is never negative
    assert list(summary["end_to_end_p50_s_ci_clipped"]) == [True, False]
    assert summary.loc[1, "end_to_end_p50_s_ci_low"] == 2.0  # no spread
    assert list(summary["all_passed"]) == [False, True]
    assert cheapest(summary, "workers.count")["workers.count"] == 4


def known(values_by_point, threshold=10.0, figure="recovery_time_p99_s"):
    """Rows of passing runs, three per point, with ``figure`` taking the given values."""
    rows = []
    for point, values in enumerate(values_by_point):
        for v in values:
            rows.append({"run": len(rows), "point": point, "workers.count": point + 1, "passed": True,
                         figure: v, f"{figure}_threshold": threshold, f"{figure}_met": True})
    return point_summary(pd.DataFrame(rows), ["workers.count"])


def test_the_cheapest_point_is_chosen_on_the_intervals_upper_bound():
    summary = known([[1.0, 9.0, 9.5], [4.0, 5.0, 6.0]])  # point 0: mean 6.5, upper bound 18.2 > 10
    assert list(summary["crossing_thresholds"].fillna("")) == ["recovery_time_p99_s", ""]
    assert list(summary["significant"]) == [False, True]
    best = cheapest(summary, "workers.count")
    assert (best["workers.count"], best["significant"]) == (2, True)
    assert best["note"] == ("workers.count = 1 passed every replication too, but recovery_time_p99_s 95% "
                            "interval [0, 18.35] crosses its threshold 10")


def test_the_cheapest_point_is_not_significant_when_every_interval_crosses():
    best = cheapest(known([[1.0, 9.0, 9.5], [2.0, 9.9, 9.9]]), "workers.count")
    assert (best["workers.count"], best["significant"]) == (1, False)
    assert best["note"].startswith("recovery_time_p99_s 95% interval [0, 18.35] crosses its threshold 10")


def test_throughput_is_a_lower_bound_so_its_lower_interval_bound_decides():
    summary = known([[1.0, 5.0, 9.0], [4.9, 5.0, 5.1]], threshold=4.0, figure="throughput_per_s")
    assert list(summary["significant"]) == [False, True]  # point 0's lower bound is below 4 per s


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
