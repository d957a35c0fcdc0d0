"""A new user's project, end to end, with real ``acksim`` processes: their own package found
without PYTHONPATH, the printed replay command run verbatim from another folder, and a second
replay that leaves the first counterexample's files where they were."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

ACKSIM = str(Path(sys.executable).with_name("acksim"))

BUGGY = '''"""A cleanup processor that forgets the renewal check."""

from acksim.model.job import reminder_event_key


def process(job, accounts, cleanup_store, outbox):
    account = accounts.get(job.account_id)
    if account is None or account.cleanup_version != job.cleanup_version:
        return
    if cleanup_store.was_applied(job.account_id, job.cleanup_version):
        return
    cleanup_store.apply_once(account_id=job.account_id, cleanup_version=job.cleanup_version)
    outbox.add_once(event_key=reminder_event_key(job.account_id, job.cleanup_version),
                    account_id=job.account_id, cleanup_version=job.cleanup_version)
'''


def _env() -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return env


def _acksim(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([ACKSIM, *args], cwd=cwd, env=_env(), capture_output=True, text=True, timeout=600)


def _project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    (project / "mycleanup").mkdir(parents=True)
    (project / "mycleanup" / "__init__.py").write_text("")
    (project / "mycleanup" / "processor.py").write_text(BUGGY)
    return project


def test_a_check_of_the_users_package_replays_verbatim_from_another_folder(tmp_path):
    project = _project(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    r = _acksim("check", "--processor", "mycleanup.processor:process", "--max-examples", "200", "--no-database",
                cwd=project)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "FOUND no_cleanup_after_renewal" in r.stdout
    command = [line.split("replay: ", 1)[1] for line in r.stdout.splitlines() if "replay: acksim run " in line]
    replay = project / "reports" / "check" / "mycleanup.processor.process-no_cleanup_after_renewal.toml"
    assert command == [f"acksim run {replay}"]
    assert f'processor_path = "{project}"' in replay.read_text()

    argv = shlex.split(command[0])
    first = subprocess.run([ACKSIM, *argv[1:]], cwd=elsewhere, env=_env(), capture_output=True, text=True, timeout=600)
    assert first.returncode == 1, first.stderr
    assert first.stdout.startswith("replay: reproduced (no_cleanup_after_renewal; same history, record for record)")
    report = replay.with_name(replay.stem + ".report")
    assert f"report: {report}" in first.stdout
    assert "## Replay" in (report / "report.md").read_text() and "cleanup_applied" in (report / "report.md").read_text()
    assert (report / "plots" / "counterexample.png").is_file()
    assert sorted(p.name for p in replay.parent.iterdir()) == [replay.with_suffix(".png").name, report.name, replay.name]

    # the same replay again, and another counterexample's: the first one's files stay where they are
    before = {p: p.read_bytes() for p in replay.parent.iterdir() if p.is_file()}
    again = _acksim("run", str(replay), cwd=elsewhere)
    assert again.returncode == 1 and again.stdout.startswith("replay: reproduced")
    second = _acksim("check", "--candidate", "autocommit", "--max-examples", "100", "--no-database",
                     "--out", str(replay.parent), cwd=project)
    assert second.returncode == 1, second.stdout + second.stderr
    other = sorted(set(replay.parent.glob("*.toml")) - {replay})
    assert other, second.stdout
    third = _acksim("run", str(other[0]), cwd=elsewhere)
    assert third.returncode == 1 and third.stdout.startswith("replay: reproduced"), third.stdout + third.stderr
    assert {p: p.read_bytes() for p in before} == before
    assert report.is_dir() and other[0].with_name(other[0].stem + ".report").is_dir()


def test_a_module_of_the_current_folder_loads_for_run_without_pythonpath(tmp_path):
    project = _project(tmp_path)
    r = _acksim("run", "--processor", "mycleanup.processor:process", "--out", "out",
                str(Path(__file__).parents[2] / "scenarios" / "smoke.toml"), cwd=project)
    assert r.returncode == 1, r.stderr
    assert "invariants violated: no_cleanup_after_renewal" in r.stdout


def test_a_file_reference_in_a_scenario_is_taken_from_the_scenario_files_folder(tmp_path):
    project = _project(tmp_path)
    (project / "scenarios").mkdir()
    (project / "procs").mkdir()
    (project / "procs" / "buggy.py").write_text(BUGGY)
    scenario = project / "scenarios" / "mine.toml"
    scenario.write_text('name = "mine"\nprocessor = "../procs/buggy.py:process"\n[workload]\naccounts = 30\n'
                        '[stores]\nbackend = "memory"\n')
    r = _acksim("run", str(scenario), "--out", str(tmp_path / "out"), cwd=tmp_path)
    assert r.returncode == 1 and "no_cleanup_after_renewal" in r.stdout, r.stderr
    scenario.write_text('name = "mine"\nprocessor = "procs/buggy.py:process"\n')
    r = _acksim("run", str(scenario), "--out", str(tmp_path / "out2"), cwd=project)
    assert r.returncode == 2 and not (tmp_path / "out2").exists()
    assert r.stderr == (f"acksim: error: {scenario}: processor: file 'procs/buggy.py' not found (a relative path is "
                        f"taken from the scenario file's folder, {scenario.parent})\n")


def test_a_replay_file_from_another_machine_imports_the_processor_from_here(tmp_path):
    # a CI artifact: the folder its check ran in does not exist on the laptop
    project = _project(tmp_path)
    r = _acksim("check", "--processor", "mycleanup.processor:process", "--max-examples", "200", "--no-database",
                cwd=project)
    assert r.returncode == 1, r.stdout + r.stderr
    replay = project / "reports" / "check" / "mycleanup.processor.process-no_cleanup_after_renewal.toml"
    laptop = tmp_path / "laptop"
    (laptop / "mycleanup").mkdir(parents=True)
    for name in ("__init__.py", "processor.py"):
        (laptop / "mycleanup" / name).write_text((project / "mycleanup" / name).read_text())
    moved = laptop / "artifact.toml"
    moved.write_text(replay.read_text().replace(f'processor_path = "{project}"', 'processor_path = "/ci/runner/work/proj"'))
    again = _acksim("run", str(moved), cwd=laptop)
    assert again.returncode == 1, again.stderr
    assert again.stdout.startswith("replay: reproduced (no_cleanup_after_renewal; same history, record for record)")
