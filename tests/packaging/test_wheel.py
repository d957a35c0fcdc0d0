"""The built wheel on its own: installed into a fresh virtual environment beside a user
project that has its own ``sim/`` package and ``model.py``, it runs, checks and loads its
pytest plugin without touching the user's modules, and its core install is lean.

Slow by nature (a wheel build and a venv install, about a minute with a warm package cache):
one module-scoped install serves every test here.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
HEAVY = ("scipy", "pyarrow", "dask", "distributed")


def _run(args, cwd, env=None, timeout=600):
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """The ``bin`` folder of a fresh venv holding the wheel built from this tree (and pytest)."""
    base = tmp_path_factory.mktemp("wheel")
    built = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(base / "dist"), str(ROOT)], base)
    assert built.returncode == 0, built.stderr
    wheels = sorted((base / "dist").glob("acksim-*.whl"))
    assert [w.name for w in wheels] == [f"acksim-{VERSION}-py3-none-any.whl"]
    venv.create(base / "venv", with_pip=True)
    bin_ = base / "venv" / "bin"
    done = _run([str(bin_ / "python"), "-m", "pip", "install", "-q", str(wheels[0])], base)
    assert done.returncode == 0, done.stderr
    frozen = _run([str(bin_ / "python"), "-m", "pip", "freeze"], base).stdout.lower()
    (base / "core-freeze.txt").write_text(frozen)
    done = _run([str(bin_ / "python"), "-m", "pip", "install", "-q", "pytest"], base)
    assert done.returncode == 0, done.stderr
    return bin_


@pytest.fixture
def user_project(tmp_path) -> Path:
    """A user project with its own ``sim`` package, a ``model.py`` and a processor of theirs."""
    project = tmp_path / "project"
    (project / "sim").mkdir(parents=True)
    (project / "sim" / "__init__.py").write_text('NAME = "the user\'s own sim"\n')
    (project / "model.py").write_text("VALUE = 42\n")
    (project / "mycleanup.py").write_text(
        "from acksim.model.processor import process as reference\n\n\n"
        "def process(job, accounts, cleanup_store, outbox):\n"
        "    return reference(job, accounts, cleanup_store, outbox)\n")
    (project / "tests").mkdir()
    (project / "tests" / "test_user.py").write_text(
        "import model\nimport sim\n\n\n"
        "def test_the_users_own_modules_are_theirs():\n"
        "    assert sim.NAME == \"the user's own sim\" and model.VALUE == 42\n\n\n"
        "def test_their_processor_keeps_the_invariants(acksim_check):\n"
        "    report = acksim_check(\"mycleanup:process\", max_examples=20)\n"
        "    assert report.examples >= 20\n")
    return project


def _env(project: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    return {**env, "PYTHONPATH": str(project)}


def test_the_core_install_pulls_in_no_heavy_extras(installed):
    frozen = (installed.parent.parent / "core-freeze.txt").read_text()
    names = {line.split("==")[0].split(" @ ")[0] for line in frozen.splitlines() if line}
    assert "acksim" in names and {"simpy", "hypothesis", "pandas", "pydantic"} <= names
    assert not names & set(HEAVY), sorted(names & set(HEAVY))


def test_the_users_suite_runs_beside_acksims_plugin(installed, user_project):
    result = _run([str(installed / "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
                  user_project, _env(user_project))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 passed" in result.stdout


def test_run_finds_its_bundled_default_scenario_from_the_wheel(installed, user_project):
    result = _run([str(installed / "acksim"), "run", "--out", str(user_project / "out")], user_project,
                  _env(user_project))
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith("PASS: game-renewal seed 20261130: ")
    assert (user_project / "out" / "summary.json").is_file()


def test_check_and_version_from_another_folder(installed, user_project, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    result = _run([str(installed / "acksim"), "check", "--max-examples", "20", "--no-database",
                   "--out", str(elsewhere / "check")], elsewhere, _env(user_project))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "acksim check: acksim.model.processor:process" in result.stdout
    version = _run([str(installed / "python"), "-m", "acksim", "--version"], elsewhere, _env(user_project))
    assert (version.returncode, version.stdout.strip()) == (0, f"acksim {VERSION}")
