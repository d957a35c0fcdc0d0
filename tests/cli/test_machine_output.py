"""Output for machines: ``--json`` on run and check puts the result alone on stdout (the
human lines go to stderr), and JUnit XML carries each suite's wall seconds."""

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from acksim.report.junit import Case, Suite, write_junit

SMOKE = str(Path(__file__).resolve().parents[2] / "scenarios" / "smoke.toml")


def _acksim(*args, cwd):
    return subprocess.run([sys.executable, "-m", "acksim", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=600)


def test_run_json_is_the_summary_file_and_the_junit_suite_has_its_time(tmp_path):
    done = _acksim("run", SMOKE, "--out", "r", "--json", "--junit-xml", "r.xml", cwd=tmp_path)
    assert done.returncode == 0
    assert json.loads(done.stdout) == json.loads((tmp_path / "r" / "summary.json").read_text())
    assert done.stderr.startswith("PASS: smoke seed 7: ")
    suite = ET.parse(tmp_path / "r.xml").getroot().find("testsuite")
    assert float(suite.get("time")) > 0.0


def test_check_json_names_the_first_finding_its_headline_and_replay(tmp_path):
    done = _acksim("check", "--candidate", "no-renewed-check", "--max-examples", "60", "--no-database",
                   "--jobs", "1", "--out", "c", "--json", "--junit-xml", "c.xml", cwd=tmp_path)
    assert done.returncode == 1
    result = json.loads(done.stdout)
    assert result["verdict"] == "FAIL" and result["processor"] == "acksim.model.candidates:no_renewed_check"
    assert result["first"]["kind"] == "no_cleanup_after_renewal" and 1 <= result["first"]["example"] <= 60
    finding = result["findings"]["no_cleanup_after_renewal"]
    assert finding["headline"].startswith("cleanup committed while stale: renewed (account a1")
    assert Path(finding["replay"]).is_file() and finding["depends_on"] == []
    assert set(result["hazard_windows"]) >= {"crash_after_commit_before_ack", "lifecycle_during_attempt"}
    assert "FOUND no_cleanup_after_renewal" in done.stderr and "FOUND" not in done.stdout
    suite = ET.parse(tmp_path / "c.xml").getroot().find("testsuite")
    assert float(suite.get("time")) == result["seconds"] > 0.0


def test_junit_times_add_up_over_suites(tmp_path):
    path = write_junit(tmp_path / "j.xml", [Suite("a", (Case("a", "x"),), seconds=1.25),
                                            Suite("b", (Case("b", "y"),))])
    root = ET.parse(path).getroot()
    assert root.get("time") == "1.250" and [s.get("time") for s in root.findall("testsuite")] == ["1.250", "0.000"]
    assert [c.get("time") for c in root.iter("testcase")] == ["0", "0"]
