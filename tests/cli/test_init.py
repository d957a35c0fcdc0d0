"""``acksim init``: a project whose pytest passes at once and fails when its processor breaks
an invariant; nothing overwritten."""

import subprocess
import sys

import pytest

from acksim.cli.init import GITIGNORE, scaffold
from acksim.cli.main import main
from acksim.report.outdir import UsageError


def _in(folder, *args):
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=folder, timeout=900)


def test_the_new_project_passes_its_tests_and_fails_when_the_processor_breaks(tmp_path):
    assert main(["init", str(tmp_path / "demo")]) == 0
    demo = tmp_path / "demo"
    assert sorted(str(p.relative_to(demo)) for p in demo.rglob("*") if p.is_file()) == [
        ".github/workflows/acksim.yml", ".gitignore", "mycleanup/__init__.py", "mycleanup/processor.py",
        "scenarios/cleanup.toml", "tests/test_cleanup_safety.py"]
    assert (demo / ".gitignore").read_text().splitlines() == list(GITIGNORE)
    passed = _in(demo, "-m", "pytest", "-q", "-p", "no:cacheprovider")
    assert passed.returncode == 0, passed.stdout[-2000:]
    assert "mycleanup.processor:process: 60 examples" in passed.stdout and "findings: none" in passed.stdout
    run = _in(demo, "-m", "acksim", "run", "scenarios/cleanup.toml")
    assert run.returncode == 0 and run.stdout.startswith("PASS: cleanup seed 7: ")
    cleanup = demo / "mycleanup" / "processor.py"
    cleanup.write_text(cleanup.read_text().replace(" or account.renewed", ""))
    failed = _in(demo, "-m", "pytest", "-q", "-p", "no:cacheprovider")
    assert failed.returncode == 1 and "acksim found no_cleanup_after_renewal in mycleanup.processor:process" in \
        failed.stdout


def test_init_never_overwrites_and_adds_only_missing_ignore_lines(tmp_path, capsys):
    (tmp_path / ".gitignore").write_text("node_modules/\nreports/")
    assert main(["init", str(tmp_path), "--package", "billing"]) == 0
    assert (tmp_path / ".gitignore").read_text().splitlines() == [
        "node_modules/", "reports/", ".hypothesis/", "acksim-report/", "acksim-junit.xml"]
    assert 'processor = "billing.processor:process"' in (tmp_path / "scenarios" / "cleanup.toml").read_text()
    before = {p: p.read_text() for p in tmp_path.rglob("*") if p.is_file()}
    capsys.readouterr()
    assert main(["init", str(tmp_path), "--package", "billing"]) == 2
    assert "billing/__init__.py exists already; nothing written" in capsys.readouterr().err
    assert {p: p.read_text() for p in tmp_path.rglob("*") if p.is_file()} == before


@pytest.mark.parametrize("name", ["My-Pkg", "class", "1abc", ""])
def test_a_package_name_must_be_an_identifier(tmp_path, name):
    with pytest.raises(UsageError, match=r"^--package: must be a lowercase Python identifier"):
        scaffold(tmp_path, name)
