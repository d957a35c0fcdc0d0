"""A PostgreSQL acksim starts is always stopped, and its folder removed: after a run, after
SIGTERM mid-run; and when the process that started it is killed outright, the server goes with
it (only its folder is then left)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def tmpdir_env(postgres_server):
    """A short TMPDIR open to all (the server may run as another user), removed after; the
    environment for a child acksim."""
    folder = tempfile.mkdtemp(prefix="pgt-", dir="/tmp")
    os.chmod(folder, 0o755)
    env = {**os.environ, "TMPDIR": folder}
    env.pop("ACKSIM_POSTGRES_DSN", None)
    yield Path(folder), env
    shutil.rmtree(folder, ignore_errors=True)


def servers_in(folder: Path) -> list[int]:
    """Pids of processes whose command line names ``folder`` (a postgres started there)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if str(folder).encode() in cmdline and b"postgres" in cmdline:
                found.append(int(entry.name))
    return found


def clusters_in(folder: Path) -> list[Path]:
    return sorted(folder.glob("acksim-pg-*"))


def wait_until(condition, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


def test_a_run_on_postgres_leaves_nothing_behind(tmpdir_env):
    folder, env = tmpdir_env
    done = subprocess.run([sys.executable, "-m", "acksim", "run", str(ROOT / "scenarios" / "smoke.toml"),
                           "--backend", "postgres", "--out", str(folder / "report")],
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("PASS: smoke seed 7")
    assert clusters_in(folder) == [] and servers_in(folder) == []


def test_sigterm_mid_run_stops_the_server_and_removes_its_folder(tmpdir_env):
    folder, env = tmpdir_env
    long_run = folder / "long.toml"
    long_run.write_text((ROOT / "scenarios" / "smoke.toml").read_text().replace(
        "accounts = 300", "accounts = 20000").replace("deadline_window_s = 7200", "deadline_window_s = 200000"))
    child = subprocess.Popen([sys.executable, "-m", "acksim", "run", str(long_run), "--backend", "postgres",
                              "--out", str(folder / "report")], env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        assert wait_until(lambda: servers_in(folder)), "the server never started"
        time.sleep(1.0)  # into the run
        child.send_signal(signal.SIGTERM)
        assert child.wait(60) == 130, child.communicate()
    finally:
        if child.poll() is None:
            child.kill()
    assert wait_until(lambda: not servers_in(folder), 10)
    assert clusters_in(folder) == []


def test_the_server_dies_with_the_process_that_started_it(tmpdir_env):
    folder, env = tmpdir_env
    code = ("from acksim.postgres_server import acquire, running_cluster; acquire(); "
            "print(running_cluster().folder, flush=True); import time; time.sleep(600)")
    child = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True)
    try:
        cluster = Path(child.stdout.readline().strip())
        assert cluster.parent == folder and servers_in(folder)
        child.kill()  # no atexit, no finally: only the kernel's parent-death signal is left
        child.wait(10)
        assert wait_until(lambda: not servers_in(folder), 20)
    finally:
        if child.poll() is None:
            child.kill()
        shutil.rmtree(folder / "acksim-pg-leftover", ignore_errors=True)
