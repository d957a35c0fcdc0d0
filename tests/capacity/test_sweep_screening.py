"""Screening (``screening = "drop_failed"``): a grid point's replications stop at its first
failure; the runs that do run give the rows they give unscreened, the chosen point is the same,
the rows do not depend on the order in which runs finish, and a resumed sweep goes on where
it stopped."""

import json
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, strategies as st

from acksim.cli.main import main
from acksim.capacity.executors import RunOrder, execute
from acksim.capacity.sweep import RunSpec, load_sweep
from acksim.scenario import ScenarioError

SMOKE = Path(__file__).resolve().parents[2] / "scenarios" / "smoke.toml"


def sweep_file(tmp_path, name: str, extra: str = "", replications: int = 3) -> Path:
    """A sweep of the smoke scenario over two points: point 0 misses an impossible recovery
    threshold in every seed, point 1 passes in every seed."""
    path = tmp_path / f"{name}.toml"
    path.write_text(f'scenario = "{SMOKE}"\nreplications = {replications}\n{extra}\n[overrides]\n'
                    f'"workload.accounts" = 60\n"workload.deadline_window_s" = 1800.0\n\n[grid]\n'
                    f'"workers.count" = [1]\n"slo.recovery_time_p99_s" = [0.001, 1000.0]\n')
    return path


def specs(points: int, replications: int) -> list[RunSpec]:
    return [RunSpec(p * replications + r, p, (), 7 + r, {}) for p in range(points) for r in range(replications)]


def test_without_screening_every_pending_run_is_ready_at_once():
    order = RunOrder(specs(2, 3), {0: False, 4: True})
    assert [r.run for r in order.first()] == [1, 2, 3, 5]
    assert order.finished(1, False) is None and order.dropped == 0


def test_screening_runs_a_points_replications_in_turn_and_stops_at_its_first_failure():
    order = RunOrder(specs(3, 3), {}, "drop_failed")
    assert [r.run for r in order.first()] == [0, 3, 6]  # each point's first replication
    assert order.finished(3, False) is None and order.dropped == 2  # point 1: runs 4 and 5 dropped
    assert order.finished(0, True).run == 1
    assert order.finished(6, True).run == 7
    assert order.finished(1, True).run == 2
    assert order.finished(7, False) is None and order.dropped == 3  # point 2: run 8 dropped
    assert order.finished(2, True) is None and order.dropped == 3  # point 0: all three ran


def test_a_resumed_screened_sweep_goes_on_from_the_rows_it_has():
    # point 0: run 0 passed, so run 1 is next; point 1: run 3 failed, so 4 and 5 are dropped;
    # point 2: rows for runs 6 and 8 (an unscreened sweep stopped midway), run 7 is next
    order = RunOrder(specs(3, 3), {0: True, 3: False, 6: True, 8: True}, "drop_failed")
    assert [r.run for r in order.first()] == [1, 7] and order.dropped == 2
    assert order.finished(7, True) is None  # run 8's row is there already


@given(st.data(), st.integers(1, 4), st.integers(1, 4), st.integers(1, 5))
def test_which_runs_run_depends_on_the_rows_never_on_the_order_they_finish(data, points, replications, slots):
    """Whatever finishes first, with any number of runs in flight, the runs that run are each
    point's replications up to and including its first failure."""
    runs = specs(points, replications)
    fails = data.draw(st.lists(st.booleans(), min_size=len(runs), max_size=len(runs)), label="fails")
    order = RunOrder(runs, {}, "drop_failed")
    waiting, in_flight, ran = list(order.first()), [], []
    while waiting or in_flight:
        while waiting and len(in_flight) < slots:
            in_flight.append(waiting.pop(0))
        spec = in_flight.pop(data.draw(st.integers(0, len(in_flight) - 1), label="finishes"))
        ran.append(spec.run)
        after = order.finished(spec.run, not fails[spec.run])
        if after is not None:
            waiting.append(after)
    expected = []
    for p in range(points):
        for r in range(replications):
            expected.append(p * replications + r)
            if fails[p * replications + r]:
                break
    assert sorted(ran) == expected and order.dropped == len(runs) - len(expected)


def test_an_unknown_screening_is_refused(tmp_path):
    with pytest.raises(ValueError, match="screening: unknown 'all'; one of none, drop_failed"):
        RunOrder(specs(1, 1), {}, "all")
    with pytest.raises(ScenarioError) as err:
        load_sweep(sweep_file(tmp_path, "bad", 'screening = "all"'))
    assert "screening: Input should be 'none' or 'drop_failed'" in str(err.value) and "\n" not in str(err.value)


def test_a_screened_sweep_runs_fewer_replications_and_chooses_the_same_point(tmp_path, capsys):
    full, screened = tmp_path / "full", tmp_path / "screened"
    assert main(["sweep", str(sweep_file(tmp_path, "full")), "--out", str(full)]) == 0
    assert "6 runs over 2 grid points (3 replications each), executor local" in capsys.readouterr().out
    assert main(["sweep", str(sweep_file(tmp_path, "screened", 'screening = "drop_failed"')), "--out", str(screened)]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].startswith("acksim sweep: 4 runs over 2 grid points (3 replications each; screening dropped 2 "
                                 "replications of points that had failed), executor local")
    assert printed[1].startswith("FAIL: point 0 (workers.count = 1, slo.recovery_time_p99_s = 0.001): 0 of 1 runs "
                                 "passed (2 not run: screening); seed 7: recovery_time_p99_s (")
    assert printed[2] == "PASS: point 1 (workers.count = 1, slo.recovery_time_p99_s = 1000.0): 3 of 3 runs passed"
    a, b = pd.read_csv(full / "runs.csv"), pd.read_csv(screened / "runs.csv")
    assert list(a["run"]) == [0, 1, 2, 3, 4, 5] and list(b["run"]) == [0, 3, 4, 5]
    pd.testing.assert_frame_equal(a[a["run"].isin(b["run"])].reset_index(drop=True), b)  # the same rows, same ids
    ra, rb = (json.loads((d / "sweep.json").read_text()) for d in (full, screened))
    assert (ra["screening"], ra["runs_dropped"], rb["screening"], rb["runs_dropped"]) == ("none", 0, "drop_failed", 2)
    assert ra["cheapest"] == rb["cheapest"] and ra["cheapest"]["slo.recovery_time_p99_s"] == 1000.0
    assert [g["runs"] for g in rb["grid"]] == [1, 3] and ra["sweep_id"] == rb["sweep_id"]


def test_a_screened_sweep_gives_the_same_rows_on_dask(tmp_path):
    distributed = pytest.importorskip("distributed")
    path = sweep_file(tmp_path, "screened", 'screening = "drop_failed"', replications=2)
    spec, runs, sweep_id = load_sweep(path)
    local = execute(runs, tmp_path / "local", sweep_id, screening=spec.screening)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        remote = execute(runs, tmp_path / "dask", sweep_id, executor="dask", address=cluster.scheduler_address,
                         screening=spec.screening)
    assert list(local["run"]) == [0, 2, 3]
    pd.testing.assert_frame_equal(local, remote)


def test_progress_hears_the_total_shrink_and_an_unscreened_rerun_fills_in_the_skipped_seeds(tmp_path):
    out, heard = tmp_path / "out", []
    spec, runs, sweep_id = load_sweep(sweep_file(tmp_path, "screened", 'screening = "drop_failed"'))
    rows = execute(runs, out, sweep_id, progress=lambda done, total: heard.append((done, total)),
                   screening=spec.screening)
    assert heard[0] == (0, 6) and heard[-1] == (4, 4) and len(heard) == 5  # the total drops with run 0's failure
    assert list(rows["run"]) == [0, 3, 4, 5]
    filled = execute(runs, out, sweep_id)  # the same folder, unscreened: only runs 1 and 2 run
    full = execute(runs, tmp_path / "full", sweep_id)
    assert list(filled["run"]) == [0, 1, 2, 3, 4, 5]
    pd.testing.assert_frame_equal(filled, full)


def test_an_unscreened_rerun_into_a_finished_screened_folder_writes_what_an_unscreened_sweep_writes(tmp_path, capsys):
    filled, full = tmp_path / "filled", tmp_path / "full"
    assert main(["sweep", str(sweep_file(tmp_path, "screened", 'screening = "drop_failed"')), "--out", str(filled)]) == 0
    plain = sweep_file(tmp_path, "plain")
    assert main(["sweep", str(plain), "--out", str(filled)]) == 0  # fills in runs 1 and 2 after the report
    assert "6 runs over 2 grid points (3 replications each), executor local" in capsys.readouterr().out
    assert main(["sweep", str(plain), "--out", str(full)]) == 0
    for name in ("runs.csv", "summary.csv", "sweep.json"):
        assert (filled / name).read_bytes() == (full / name).read_bytes(), name


def test_a_row_is_appended_in_the_order_of_the_files_header(tmp_path):
    from acksim.capacity.sweep_dir import append_row

    path = tmp_path / "runs.csv"
    path.write_text("b,a\n1,2\n")
    append_row(path, {"a": 4, "b": 3})
    assert path.read_text() == "b,a\n1,2\n3,4\n"
    with pytest.raises(ValueError, match="runs.csv: its header has other columns than the row to append: c"):
        append_row(path, {"a": 5, "b": 6, "c": 7})
    assert path.read_text() == "b,a\n1,2\n3,4\n"
