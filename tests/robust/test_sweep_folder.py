"""Sweep results are never lost or corrupted: one sweep per folder (a lock), acksim's marker,
foreign files refused, a torn last row dropped and redone on resume, a full disk leaving no
half file, and a grid too big to run refused before anything runs."""

import errno
import fcntl
import json
import os
from pathlib import Path

import pandas as pd
import pytest

from acksim.capacity import sweep_dir
from acksim.capacity.executors import execute
from acksim.capacity.sweep import load_sweep
from acksim.cli.main import main
from acksim.report.outdir import MARKER
from acksim.scenario import ScenarioError

SMOKE = Path(__file__).resolve().parents[2] / "scenarios" / "smoke.toml"


def sweep_file(tmp_path, grid='"workers.count" = [1, 3]', extra="", replications=2):
    path = tmp_path / "sweep.toml"
    path.write_text(f'scenario = "{SMOKE}"\nreplications = {replications}\n{extra}\n[overrides]\n'
                    f'"workload.accounts" = 30\n"workload.deadline_window_s" = 900.0\n\n[grid]\n{grid}\n')
    return path


def one_error_line(capsys) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("acksim: error: "), err
    return err


def test_a_sweep_folder_carries_the_marker_of_kind_sweep_and_lists_its_files(tmp_path):
    out = tmp_path / "out"
    assert main(["sweep", str(sweep_file(tmp_path)), "--out", str(out)]) == 0
    marker = json.loads((out / MARKER).read_text())
    assert (marker["tool"], marker["kind"]) == ("acksim", "sweep")
    present = {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()} - {MARKER}
    assert present <= set(marker["files"]) and "runs.csv" in present and sweep_dir.LOCK in present
    assert not [p for p in out.rglob("*.tmp-*")]


def test_a_second_sweep_into_a_held_folder_is_refused_in_one_line(tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    fd = os.open(out / sweep_dir.LOCK, os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)  # as another sweep holds it
    try:
        assert main(["sweep", str(sweep_file(tmp_path)), "--out", str(out)]) == 2
    finally:
        os.close(fd)
    assert "is in use by another acksim sweep" in one_error_line(capsys)
    assert sorted(p.name for p in out.iterdir()) == [sweep_dir.LOCK]  # no row, no marker written


@pytest.mark.parametrize("name, content", [("notes.txt", "mine\n"), ("runs.csv", "a,b\n1,2\n")])
def test_a_folder_with_files_acksim_did_not_write_is_refused_and_left_alone(tmp_path, capsys, name, content):
    out = tmp_path / "out"
    out.mkdir()
    (out / name).write_text(content)
    assert main(["sweep", str(sweep_file(tmp_path)), "--out", str(out)]) == 2
    assert f"holds files acksim did not write ({name})" in one_error_line(capsys)
    assert [p.name for p in out.iterdir()] == [name] and (out / name).read_text() == content


def test_a_sweep_folder_with_a_file_added_later_is_refused(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["sweep", str(sweep_file(tmp_path)), "--out", str(out)]) == 0
    (out / "plots" / "mine.png").write_bytes(b"x")
    capsys.readouterr()
    assert main(["sweep", str(sweep_file(tmp_path)), "--out", str(out)]) == 2
    assert "plots/mine.png" in one_error_line(capsys)


@pytest.mark.timeout(600)
def test_a_torn_last_row_is_dropped_on_resume_and_its_run_redone(tmp_path, capsys):
    path = sweep_file(tmp_path)
    assert main(["sweep", str(path), "--out", str(tmp_path / "fresh")]) == 0
    spec, runs, sweep_id = load_sweep(path)
    out = tmp_path / "out"
    execute(runs[:2], out, sweep_id)  # as if stopped after two runs ...
    whole = (out / "runs.csv").read_bytes()
    third = execute(runs[:3], tmp_path / "scratch", sweep_id)
    row = (tmp_path / "scratch" / "runs.csv").read_bytes().splitlines(keepends=True)[-1]
    (out / "runs.csv").write_bytes(whole + row[: len(row) // 2])  # ... while appending the third
    capsys.readouterr()
    assert main(["sweep", str(path), "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert err == "acksim: note: runs.csv: dropped 1 torn row (cut off mid-write); redoing that run\n"
    assert (out / "runs.csv").read_bytes() == (tmp_path / "fresh" / "runs.csv").read_bytes()
    assert len(third) == 3


def test_repair_rows_drops_only_the_torn_line(tmp_path):
    path = tmp_path / "runs.csv"
    path.write_text("a,b\n1,2\n3,")  # torn at a field boundary: still two fields, but no newline
    assert sweep_dir.repair_rows(path) == 1 and path.read_text() == "a,b\n1,2\n"
    assert sweep_dir.repair_rows(path) == 0
    path.write_text('a,b\n1,"x\ny"\n')  # a quoted newline inside a whole row is kept
    assert sweep_dir.repair_rows(path) == 0
    path.write_text("a,")  # not even the header is whole
    assert sweep_dir.repair_rows(path) == 1 and not path.exists()


def test_append_row_writes_the_header_then_whole_lines(tmp_path):
    path = tmp_path / "runs.csv"
    sweep_dir.append_row(path, {"a": 1, "b": "x,y"})
    sweep_dir.append_row(path, {"a": 2, "b": "z"})
    assert path.read_text() == 'a,b\n1,"x,y"\n2,z\n'


def _full_disk(monkeypatch, when=lambda name: True):
    """``write_whole`` on a disk that fills half way through the files ``when`` names."""
    real = os.fdopen

    class Half:
        def __init__(self, f, name):
            self.f, self.name = f, name

        def write(self, data):
            if when(self.name):
                self.f.write(data[: len(data) // 2])
                raise OSError(errno.ENOSPC, "No space left on device")
            return self.f.write(data)

        def __getattr__(self, item):
            return getattr(self.f, item)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return self.f.__exit__(*exc)

    def fdopen(fd, mode="r", *args, **kwargs):
        name = os.readlink(f"/proc/self/fd/{fd}")
        return Half(real(fd, mode, *args, **kwargs), os.path.basename(name))

    monkeypatch.setattr(sweep_dir.os, "fdopen", fdopen)


def test_a_full_disk_at_the_end_leaves_no_half_file_and_exits_4_after_the_verdict(tmp_path, capsys, monkeypatch):
    pytest.importorskip("pyarrow")
    out = tmp_path / "out"
    _full_disk(monkeypatch, lambda name: "runs.parquet" in name)
    assert main(["sweep", str(sweep_file(tmp_path)), "--out", str(out), "--parquet"]) == 4
    captured = capsys.readouterr()
    assert captured.err == f"acksim: error: cannot write {out / 'runs.parquet'}: No space left on device (ENOSPC)\n"
    assert captured.out.splitlines()[-1].startswith("cheapest grid point passing every replication: workers.count = ")
    assert not (out / "runs.parquet").exists() and not list(out.rglob("*.tmp-*"))
    assert len(pd.read_csv(out / "runs.csv")) == 4  # every row kept


def test_a_full_disk_while_appending_keeps_the_rows_before_and_a_rerun_completes(tmp_path, capsys, monkeypatch):
    out = tmp_path / "out"
    real_write, calls = os.write, []

    def write(fd, data):
        calls.append(len(data))
        if len(calls) == 3:  # the third row: half of it, then the disk is full
            real_write(fd, data[: len(data) // 2])
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(sweep_dir.os, "write", write)
    assert main(["sweep", str(sweep_file(tmp_path)), "--out", str(out)]) == 4
    err = capsys.readouterr().err
    assert err == f"acksim: error: cannot write {out / 'runs.csv'}: No space left on device (ENOSPC)\n"
    text = (out / "runs.csv").read_text()
    assert text.endswith("\n") and len(text.splitlines()) == 3  # header and two whole rows
    monkeypatch.setattr(sweep_dir.os, "write", real_write)
    assert main(["sweep", str(sweep_file(tmp_path)), "--out", str(out)]) == 0
    assert sorted(pd.read_csv(out / "runs.csv")["run"]) == [0, 1, 2, 3]


@pytest.mark.timeout(600)
def test_a_grid_over_max_runs_is_refused_before_anything_is_expanded(tmp_path, capsys):
    grid = "\n".join(f'"{k}" = [{", ".join(str(i) for i in range(1, 1001))}]'
                     for k in ("workers.count", "workload.accounts", "queue.max_receive_count"))
    path = sweep_file(tmp_path, grid)
    assert main(["sweep", str(path), "--out", str(tmp_path / "out")]) == 2
    err = one_error_line(capsys)
    assert ("grid: 1000 x 1000 x 1000 points x 2 replications = 2000000000 runs, over max_runs = 10000; "
            "shrink the grid, or raise max_runs in the sweep file") in err
    assert not (tmp_path / "out").exists()


def test_max_runs_in_the_sweep_file_raises_the_limit(tmp_path):
    grid = f'"workers.count" = [{", ".join(str(i) for i in range(1, 101))}]'
    with pytest.raises(ScenarioError, match="= 10100 runs, over max_runs = 10000"):
        load_sweep(sweep_file(tmp_path, grid, replications=101))
    spec, runs, sweep_id = load_sweep(sweep_file(tmp_path, grid, extra="max_runs = 20000", replications=101))
    assert len(runs) == 10100 and spec.max_runs == 20000
    _, _, same_id = load_sweep(sweep_file(tmp_path, grid, extra="max_runs = 30000", replications=101))
    assert same_id == sweep_id  # the limit is no part of what the rows mean: a rerun resumes


def test_seed_as_a_grid_field_points_to_replications(tmp_path):
    with pytest.raises(ScenarioError, match=r"grid\.seed: a sweep cannot vary seed \(the replications are the seeds\); "
                                            "set replications"):
        load_sweep(sweep_file(tmp_path, '"seed" = [1, 2]', extra='cost = "seed"'))


def test_a_run_never_replaces_a_sweep_folder_nor_a_sweep_a_run_report(tmp_path, capsys):
    sweep_out, run_out = tmp_path / "sweep-out", tmp_path / "run-out"
    assert main(["sweep", str(sweep_file(tmp_path)), "--out", str(sweep_out)]) == 0
    tiny = tmp_path / "tiny.toml"
    tiny.write_text('name = "tiny"\n[workload]\naccounts = 5\ndeadline_window_s = 60\n')
    capsys.readouterr()
    assert main(["run", str(tiny), "--out", str(sweep_out)]) == 2
    assert "holds a sweep's results" in one_error_line(capsys)
    assert (sweep_out / "runs.csv").is_file() and not (sweep_out / "summary.json").exists()
    assert main(["run", str(tiny), "--out", str(run_out)]) == 0
    capsys.readouterr()
    assert main(["sweep", str(sweep_file(tmp_path)), "--out", str(run_out)]) == 2
    assert "holds an acksim run report, not a sweep's results" in one_error_line(capsys)
    assert not (run_out / "runs.csv").exists()
