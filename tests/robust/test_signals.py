"""Ctrl-C and SIGTERM, in every command, handled alike: the command exits 130, its pool
workers are gone, its temporary folders (stores, check and fan-out databases, report scratch
folders) removed, nothing half-written; a KeyboardInterrupt the processor raises itself is a
finding of the processor (exit 1), not an interrupt. The commands run as real subprocesses
with a processor that passes wall time, so the signal lands mid-run."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from acksim.cli.main import main

SLOW = '''
import os, select
from acksim.model.processor import process as reference

def process(job, accounts, cleanup_store, outbox):
    open(os.environ["ACKSIM_TEST_STARTED"], "a").close()
    select.select([], [], [], 0.2)  # 0.2 s of wall time (the clocks are virtual), which a signal can cut into
    return reference(job, accounts, cleanup_store, outbox)
'''
SLOW_AND_WRONG = '''
import os, select

def process(job, accounts, cleanup_store, outbox):
    open(os.environ["ACKSIM_TEST_STARTED"], "a").close()
    select.select([], [], [], 0.2)
    accounts.get(job.account_id)
    raise ValueError("every job fails")  # a processor_error finding in every example
'''
SLOW_FANOUT = '''
import os, select
from acksim.model.shipment import deliver as reference

def deliver(task, records, endpoint, **options):
    open(os.environ["ACKSIM_TEST_STARTED"], "a").close()
    select.select([], [], [], 0.2)  # 0.2 s of wall time
    return reference(task, records, endpoint, **options)
'''
SCENARIO = '''name = "slow"
processor = "slow.py:process"
seed = 3
[workload]
accounts = 200
deadline_window_s = 600
[stores]
backend = "sqlite"
'''
FANOUT = '''name = "slow-fanout"
seed = 3
[fanout]
updates = 50
subscribers = 4
processor = "slowfan.py:deliver"
'''
SWEEP = '''scenario = "slow.toml"
replications = 2
[grid]
"workers.count" = [1, 2]
'''


def _children(pid: int) -> set[int]:
    """Every descendant of ``pid`` now (from /proc)."""
    found, todo = set(), [pid]
    while todo:
        parent = todo.pop()
        for task in Path(f"/proc/{parent}/task").glob("*"):
            try:
                kids = {int(k) for k in (task / "children").read_text().split()}
            except OSError:
                continue
            todo.extend(kids - found)
            found |= kids
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")  # a zombie has exited (its parent is gone or reaping it)


def _setup(tmp_path: Path) -> dict:
    (tmp_path / "slow.py").write_text(SLOW)
    (tmp_path / "slowfan.py").write_text(SLOW_FANOUT)
    (tmp_path / "slow.toml").write_text(SCENARIO)
    (tmp_path / "fan.toml").write_text(FANOUT)
    (tmp_path / "sweep.toml").write_text(SWEEP)
    tmpdir = tmp_path / "tmpdir"
    tmpdir.mkdir()
    root = Path(__file__).resolve().parents[2]
    return {**os.environ, "TMPDIR": str(tmpdir), "ACKSIM_TEST_STARTED": str(tmp_path / "started"),
            "PYTHONPATH": os.pathsep.join([str(root / "sim" / ".."), os.environ.get("PYTHONPATH", "")])}


def _interrupt(tmp_path: Path, args: list[str], signum: int, want_children: int = 0):
    env = _setup(tmp_path)
    proc = subprocess.Popen([sys.executable, "-m", "acksim.cli.main", *args], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300  # bounds a hang (the command never started its processor)
    kids: set[int] = set()
    while time.monotonic() < deadline and proc.poll() is None:
        kids |= _children(proc.pid)
        if (tmp_path / "started").exists() and len(kids) >= want_children:
            break
        time.sleep(0.05)
    assert proc.poll() is None, proc.communicate()
    time.sleep(0.3)
    kids |= _children(proc.pid)
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=540)
    return proc.returncode, out, err, kids


def _nothing_left(tmp_path: Path) -> None:
    assert list((tmp_path / "tmpdir").iterdir()) == []  # stores, check and fan-out databases removed
    assert [p.name for p in tmp_path.iterdir() if ".tmp-" in p.name or ".old-" in p.name] == []
    assert not (tmp_path / "out").exists()


@pytest.mark.timeout(600)
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_run_interrupted_exits_130_and_leaves_nothing(tmp_path, signum):
    rc, out, err, _ = _interrupt(tmp_path, ["run", "slow.toml", "--out", "out"], signum)
    assert rc == 130, err
    assert err.splitlines()[-1] == "acksim: interrupted; no report written (an earlier report there is intact)"
    assert "Traceback" not in err
    _nothing_left(tmp_path)


@pytest.mark.timeout(600)
def test_fanout_run_interrupted_removes_its_records_database(tmp_path):
    rc, out, err, _ = _interrupt(tmp_path, ["run", "fan.toml", "--out", "out"], signal.SIGTERM)
    assert rc == 130 and "Traceback" not in err, err
    _nothing_left(tmp_path)


@pytest.mark.timeout(600)
def test_check_interrupted_removes_its_folder_and_writes_no_replay_file(tmp_path):
    # a processor that fails every example: a finished check would write a replay file (and its
    # timeline) into --out for its finding; an interrupted one writes none, not half of one
    (tmp_path / "wrong.py").write_text(SLOW_AND_WRONG)
    rc, out, err, _ = _interrupt(tmp_path, ["check", "--processor", "wrong.py:process", "--max-examples", "20",
                                            "--no-database", "--out", "replays"], signal.SIGTERM)
    assert rc == 130 and "Traceback" not in err, err
    _nothing_left(tmp_path)
    assert not (tmp_path / "replays").exists()
    assert sorted(p.name for p in tmp_path.rglob("*") if p.suffix in (".toml", ".png")) == [
        "fan.toml", "slow.toml", "sweep.toml"]


@pytest.mark.timeout(600)
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_sweep_interrupted_terminates_its_pool_and_keeps_whole_rows(tmp_path, signum):
    rc, out, err, kids = _interrupt(tmp_path, ["sweep", "sweep.toml", "--out", "sweep-out"], signum, want_children=2)
    assert rc == 130 and "Traceback" not in err, err
    assert kids and not [pid for pid in kids if _alive(pid)]  # no orphaned pool worker
    assert list((tmp_path / "tmpdir").iterdir()) == []
    runs = tmp_path / "sweep-out" / "runs.csv"
    assert not runs.exists() or runs.read_bytes().endswith(b"\n")
    assert not list((tmp_path / "sweep-out").rglob("*.tmp-*"))


@pytest.mark.timeout(600)
def test_compare_interrupted_terminates_its_pool(tmp_path):
    rc, out, err, kids = _interrupt(tmp_path, ["compare", "slow.toml", "--presets", "rest-queue,celery-redis",
                                               "--out", "out"], signal.SIGTERM, want_children=2)
    assert rc == 130 and "Traceback" not in err, err
    assert kids and not [pid for pid in kids if _alive(pid)]
    _nothing_left(tmp_path)


KBD = '''
from acksim.model.processor import process as reference

def process(job, accounts, cleanup_store, outbox):
    accounts.get(job.account_id)
    raise KeyboardInterrupt
'''


@pytest.mark.timeout(600)
def test_a_keyboardinterrupt_raised_by_the_processor_is_its_error_not_an_interrupt(tmp_path, capsys):
    (tmp_path / "kbd.py").write_text(KBD)
    scenario = tmp_path / "s.toml"
    scenario.write_text('name = "kbd"\n[workload]\naccounts = 5\ndeadline_window_s = 60\n')
    rc = main(["run", str(scenario), "--processor", f"{tmp_path / 'kbd.py'}:process", "--out", str(tmp_path / "out")])
    captured = capsys.readouterr()
    assert rc == 1, captured.err
    assert "acksim: the processor raised an error of its own" in captured.err and "KeyboardInterrupt" in captured.err
    assert captured.out.startswith("FAIL: kbd seed 0: ")
    assert (tmp_path / "out" / "summary.json").is_file()


def test_an_interrupt_while_the_report_is_written_leaves_no_scratch_folder(tmp_path, capsys, monkeypatch):
    import acksim.report as report

    def interrupted(folder, *args, **kwargs):
        (folder / "summary.json").write_text("{")
        raise KeyboardInterrupt

    monkeypatch.setattr(report, "_write_files", interrupted)
    scenario = tmp_path / "s.toml"
    scenario.write_text('name = "tiny"\n[workload]\naccounts = 5\ndeadline_window_s = 60\n')
    assert main(["run", str(scenario), "--out", str(tmp_path / "out")]) == 130
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.toml"]


@pytest.mark.timeout(300)
def test_check_reports_a_processors_own_keyboardinterrupt_as_a_finding(tmp_path, capsys, monkeypatch):
    (tmp_path / "kbd.py").write_text(KBD)
    monkeypatch.chdir(tmp_path)
    assert main(["check", "--processor", "kbd.py:process", "--max-examples", "5", "--no-database"]) == 1
    out = capsys.readouterr().out
    assert "processor_error" in out and "KeyboardInterrupt" in out
    assert out.rstrip().endswith("FAIL: 1 kind(s) of finding: processor_error")
