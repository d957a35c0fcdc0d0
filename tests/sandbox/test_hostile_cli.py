"""Hostile processors through the command line: each gets its verdict in bounded time, with
the finding named, never a hang, an exit 3 or a false exit 0 (the world runs in a supervised
child process: acksim.world.sandbox.contain)."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
TINY = HERE / "tiny.toml"
SMOKE = HERE.parent.parent / "scenarios" / "smoke.toml"
ACKSIM = [sys.executable, "-m", "acksim"]

# module: (exit code, what names the finding in summary.json's reasons, a phrase of its text)
RUN_CASES = {
    "exit_in_call": (1, "processor_killed_worker", "exited with status 0"),
    "exit_at_import": (1, "processor_killed_worker", "exited with status 0"),
    "kills_itself": (1, "processor_killed_worker", "killed by SIGKILL"),
    "segfaults": (1, "processor_killed_worker", "killed by SIGSEGV"),
    "aborts": (1, "processor_killed_worker", "killed by SIGABRT"),
    "interrupts_itself": (1, "processor_killed_worker", "killed by SIGINT"),
    "terminates_itself": (1, "processor_killed_worker", "killed by SIGTERM"),
    "blocks_in_select": (1, "processor_hung", "was killed after 2.5 s"),
    "swallows_interrupt": (1, "processor_hung", "was killed after 2.5 s"),
    "spins_sigint_ignored": (1, "processor_hung", "was killed after 2.5 s"),
    "str_raises": (1, "processor_errors", "error(s) of its own"),
    "huge_errors": (1, "processor_errors", "error(s) of its own"),
}


def acksim(*args: str, timeout: float = 540) -> subprocess.CompletedProcess:
    """``acksim *args`` in a subprocess; ``timeout`` (wall seconds) bounds a hang, never a duration."""
    return subprocess.run([*ACKSIM, *args], cwd=HERE, capture_output=True, text=True, timeout=timeout)


def summary_of(out: Path) -> dict:
    return json.loads((out / "summary.json").read_text())


@pytest.mark.timeout(600)
@pytest.mark.parametrize("module", sorted(RUN_CASES))
def test_run_gives_each_hostile_processor_its_verdict(module, tmp_path):
    code, name, phrase = RUN_CASES[module]
    done = acksim("run", str(TINY), "--processor", f"hostile.{module}:process", "--out", str(tmp_path / "r"))
    assert done.returncode == code, done.stderr[-2000:]
    summary = summary_of(tmp_path / "r")
    assert summary["verdict"] == "FAIL"
    reasons = [r for r in summary["reasons"] if r["name"] == name]
    assert len(reasons) == 1 and phrase in reasons[0]["text"], summary["reasons"]
    if name != "processor_errors":  # the process died: an empty history, the finding recorded
        assert summary["contained"]["finding"] == name
        assert summary["counts"]["jobs"] == 0
    assert f"FAIL: tiny seed 3" in done.stdout


@pytest.mark.timeout(600)
def test_huge_error_messages_are_kept_truncated(tmp_path):
    done = acksim("run", str(TINY), "--processor", "hostile.huge_errors:process", "--out", str(tmp_path / "r"))
    assert done.returncode == 1
    assert "characters cut" in done.stderr and len(done.stderr) < 100_000
    summary = summary_of(tmp_path / "r")
    assert summary["counts"]["processor_errors"] == summary["counts"]["deliveries"] > 12


@pytest.mark.timeout(600)
def test_a_processor_that_patches_the_judges_still_fails(tmp_path):
    done = acksim("run", str(TINY), "--processor", "hostile.patches_judge:process", "--out", str(tmp_path / "r"))
    assert done.returncode == 1, done.stderr[-2000:]
    summary = summary_of(tmp_path / "r")
    assert not summary["invariants"]["no_cleanup_after_renewal"]["holds"]
    assert summary["invariants"]["no_cleanup_after_renewal"]["violations"] >= 1


@pytest.mark.timeout(600)
def test_a_thread_left_behind_does_not_keep_acksim_running(tmp_path):
    done = acksim("run", str(TINY), "--processor", "hostile.leaves_thread:process",
                  "--out", str(tmp_path / "r"))
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("PASS: tiny seed 3: 13 jobs")
    assert "the processor left 15 non-daemon thread(s) running (left-behind)" in done.stderr


@pytest.mark.timeout(600)
def test_from_time_import_sleep_passes_virtual_time(tmp_path):
    done = acksim("run", str(TINY), "--processor", "hostile.sleeps_for_real:process",
                  "--out", str(tmp_path / "r"))
    assert done.returncode == 0, done.stderr[-2000:]
    with open(tmp_path / "r" / "events.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    delivered = {r["message_id"]: float(r["time"]) for r in rows if r["kind"] == "delivered"}
    applied = [float(r["time"]) - delivered[r["message_id"]] for r in rows if r["kind"] == "cleanup_applied"]
    assert len(applied) == 12 and min(applied) >= 3600.0  # one of the 13 jobs was superseded


@pytest.mark.timeout(600)
def test_a_del_that_loops_in_the_harness_is_killed_as_hung(tmp_path):
    # enough allocations (300 accounts on SQLite) that the garbage collector runs inside the harness
    done = acksim("run", str(SMOKE), "--processor", "hostile.loops_in_del:process",
                  "--out", str(tmp_path / "r"))
    assert done.returncode == 1, done.stderr[-2000:]
    summary = summary_of(tmp_path / "r")
    assert summary["contained"]["finding"] == "processor_hung"
    assert "no progress for 30 wall seconds outside the processor's steps" in summary["contained"]["text"]


# --- acksim check ----------------------------------------------------------------------------
CHECK_CASES = {
    "exit_in_call": "processor_killed_worker",
    "exit_at_import": "processor_killed_worker",
    "kills_itself": "processor_killed_worker",
    "segfaults": "processor_killed_worker",
    "interrupts_itself": "processor_killed_worker",
    "terminates_itself": "processor_killed_worker",
    "patches_judge": "no_cleanup_after_renewal",
    "blocks_in_select": "processor_hung",
    "swallows_interrupt": "processor_hung",
    "spins_sigint_ignored": "processor_hung",
    "loops_in_del:process_in_step": "processor_hung",
    "str_raises": "processor_error",
    "huge_errors": "processor_error",
}


@pytest.fixture(scope="module")
def check_base(tmp_path_factory) -> Path:
    """acksim check's own base, with a half-second step budget."""
    import tomli_w

    from acksim.search.check import CHECK_BASE

    data = {k: dict(v) if isinstance(v, dict) else v for k, v in CHECK_BASE.items()}
    data["run"]["step_budget_s"] = 0.5
    path = tmp_path_factory.mktemp("base") / "check-base.toml"
    path.write_text(tomli_w.dumps(data))
    return path


@pytest.mark.timeout(600)
@pytest.mark.parametrize("ref", sorted(CHECK_CASES))
def test_check_finds_each_hostile_processor(ref, check_base, tmp_path):
    name = CHECK_CASES[ref]
    ref = ref if ":" in ref else f"{ref}:process"
    done = acksim("check", str(check_base), "--processor", f"hostile.{ref}", "--max-examples", "5",
                  "--no-database", "--out", str(tmp_path / "c"))
    assert done.returncode == 1, (done.stdout[-2000:], done.stderr[-2000:])
    assert f"\nFOUND {name}: " in done.stdout
    assert f"FAIL: 1 kind(s) of finding: {name}" in done.stdout
    assert "flaky" not in done.stdout  # the replay in a fresh process gave the same
    replays = sorted((tmp_path / "c").glob("*.toml"))
    assert [p.name.rsplit("-", 1)[-1] for p in replays] == [f"{name}.toml"]


@pytest.mark.timeout(600)
def test_check_passes_a_correct_processor_that_leaves_a_thread(check_base, tmp_path):
    done = acksim("check", str(check_base), "--processor", "hostile.leaves_thread:process", "--max-examples", "10",
                  "--no-database", "--out", str(tmp_path / "c"))
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])
    assert "\nPASS: no violation in 10 examples" in done.stdout


@pytest.mark.timeout(600)
def test_a_killed_workers_replay_file_reproduces_under_run(check_base, tmp_path):
    done = acksim("check", str(check_base), "--processor", "hostile.kills_itself:process", "--max-examples", "5",
                  "--no-database", "--out", str(tmp_path / "c"))
    assert done.returncode == 1
    (replay,) = (tmp_path / "c").glob("*.toml")
    again = acksim("run", str(replay))
    assert again.returncode == 1
    assert again.stdout.startswith("replay: reproduced (no violation, processor error; same history, record for record)")


@pytest.mark.timeout(600)
def test_an_object_smuggled_into_the_history_is_not_unpickled_by_the_judge(tmp_path, monkeypatch):
    mark = tmp_path / "ran-in-the-parent"
    monkeypatch.setenv("ACKSIM_TEST_MARK", str(mark))
    done = acksim("run", str(TINY), "--processor", "hostile.smuggles_object:process", "--out", str(tmp_path / "r"))
    assert done.returncode == 1, done.stderr[-2000:]
    assert not mark.exists()  # the crafted __reduce__ never ran in the judging process
    summary = summary_of(tmp_path / "r")
    assert summary["contained"]["finding"] == "processor_error"
    assert "posix.system is not a type" in summary["contained"]["text"]
