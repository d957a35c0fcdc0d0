"""Invariants of the user's own (docs/history.md's example, run as written): judged like the
built-in five in a run, a check (found, shrunk, replayed), JUnit and the pytest fixture."""

import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from acksim.scenario import ScenarioError, load, parse, with_overrides

DOC = Path(__file__).resolve().parents[2] / "docs" / "history.md"
NAME = "no_second_reminder_within_a_day"


@pytest.fixture
def checks(tmp_path):
    """docs/history.md's example invariant, written to ``mychecks.py`` in ``tmp_path``."""
    block = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)[0]
    assert block.startswith("# mychecks.py\n")
    (tmp_path / "mychecks.py").write_text(block)
    return tmp_path


def _acksim(*args, cwd):
    return subprocess.run([sys.executable, "-m", "acksim", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=900)


def test_a_run_is_judged_by_it_and_junit_has_its_case(checks):
    done = _acksim("run", "smoke", "--invariant", f"mychecks.py:{NAME}", "--out", "r", "--junit-xml", "j.xml",
                   cwd=checks)
    assert done.returncode == 1 and f"invariants violated: {NAME} (29)" in done.stdout
    verdict = json.loads((checks / "r" / "summary.json").read_text())["invariants"][NAME]
    assert verdict["holds"] is False and verdict["violations"] == 29
    assert verdict["example"]["why"] == "a second reminder 4884 s after the first"
    cases = {c.get("name"): c for c in ET.parse(checks / "j.xml").getroot().iter("testcase")}
    assert cases[NAME].find("failure") is not None and cases["no_lost_work"].find("failure") is None


def test_a_check_finds_it_shrinks_it_and_its_replay_reproduces(checks):
    done = _acksim("check", "--invariant", f"mychecks.py:{NAME}", "--no-database", "--jobs", "1",
                   "--max-examples", "100", "--out", "c", "--junit-xml", "cj.xml", cwd=checks)
    assert done.returncode == 1
    assert f"FOUND {NAME}: a second reminder 120 s after the first (account a1 v2" in done.stdout
    cases = {c.get("name"): c for c in ET.parse(checks / "cj.xml").getroot().iter("testcase")}
    assert cases[NAME].find("failure").get("message").startswith(f"FOUND {NAME}: a second reminder")
    replay = checks / "c" / f"acksim.model.processor.process-{NAME}.toml"
    assert f'name = "{NAME}"' in replay.read_text()
    again = _acksim("run", str(replay), "--out", "rr", cwd=checks.parent)  # from another folder
    assert again.returncode == 1 and f"replay: reproduced ({NAME}; same history, record for record)" in again.stdout


def test_the_fixture_takes_it(checks):
    (checks / "test_it.py").write_text(
        "def test_reminders(acksim_check):\n"
        f"    acksim_check('acksim.model.processor:process', max_examples=40, invariants=['mychecks:{NAME}'])\n")
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_it.py"],
                          capture_output=True, text=True, cwd=checks, timeout=900)
    assert done.returncode == 1 and f"acksim found {NAME} in acksim.model.processor:process" in done.stdout


def test_bad_custom_invariants_are_one_line_each(checks, monkeypatch):
    monkeypatch.chdir(checks)
    base = parse({"name": "x"})
    with pytest.raises(ScenarioError, match=r"^--invariant: invariants.custom.0.ref: must be package.module:function"):
        with_overrides(base, invariants=["nocolon"])
    with pytest.raises(ScenarioError, match=r"is a built-in invariant's; give this one another name"):
        parse({"invariants": {"custom": [{"ref": "m:no_lost_work"}]}})
    with pytest.raises(ScenarioError, match=r"two custom invariants are named 'f'"):
        parse({"invariants": {"custom": [{"ref": "a:f"}, {"ref": "b:f"}]}})
    (checks / "s.toml").write_text('[[invariants.custom]]\nref = "missing.py:f"\n')
    with pytest.raises(ScenarioError, match=r"invariants.custom\[0\].ref: file 'missing.py' not found"):
        load(checks / "s.toml")
    (checks / "broken.py").write_text("def f(history, final):\n    return 3\n")
    done = _acksim("run", "smoke", "--invariant", "broken.py:f", "--out", "r2", cwd=checks)
    assert done.returncode == 2 and done.stderr.strip().endswith(
        "invariants.custom: f must return a list of dicts (its violations), got int")
    done = _acksim("run", "smoke", "--invariant", "nosuchmodule:f", "--out", "r3", cwd=checks)
    assert done.returncode == 2 and "invariants.custom: 'nosuchmodule:f' does not load: ModuleNotFoundError" in \
        done.stderr
    assert not (checks / "r2").exists() and not (checks / "r3").exists()
