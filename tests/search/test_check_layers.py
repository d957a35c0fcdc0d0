"""The command line is an edge, not a library: the search, the judges and the pytest plugin
import nothing from ``acksim.cli``, and ``acksim run`` and ``acksim --help`` never import
Hypothesis (the ``check`` command's modules load only when ``check`` runs)."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

SIM = Path(__file__).resolve().parents[2] / "sim"
SMOKE = str(Path(__file__).resolve().parents[2] / "scenarios" / "smoke.toml")


def loaded_after(code: str, cwd: Path) -> list[str]:
    """The modules loaded in a fresh interpreter after running ``code`` (which prints nothing)."""
    done = subprocess.run([sys.executable, "-c", f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"],
                          capture_output=True, text=True, cwd=cwd, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_run_imports_no_hypothesis(tmp_path):
    code = ("import contextlib, io\nfrom acksim.cli.main import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            f"    assert main(['run', {SMOKE!r}, '--out', 'out']) == 0")
    modules = loaded_after(code, tmp_path)
    assert "hypothesis" not in modules
    assert "acksim.cli.check" not in modules
    assert (tmp_path / "out" / "summary.json").exists()


def test_help_imports_no_hypothesis(tmp_path):
    code = ("import contextlib, io\nfrom acksim.cli.main import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    assert main(['--help']) == 0\n"
            "    assert main(['run', '--help']) == 0")
    assert "hypothesis" not in loaded_after(code, tmp_path)


def test_the_search_api_and_the_pytest_plugin_import_no_command_line_module(tmp_path):
    code = ("import acksim.search.api, acksim.pytest_plugin, acksim.search.check, acksim.search.findings, "
            "acksim.search.replay, acksim.search.parallel, acksim.search.selfcheck, acksim.search.candidates")
    assert [m for m in loaded_after(code, tmp_path) if m == "acksim.cli" or m.startswith("acksim.cli.")] == []


def test_no_import_of_the_command_line_from_search_judges_or_plugin():
    # not even inside a function: the command line calls the library, never the reverse
    files = [*sorted((SIM / "search").glob("*.py")), *sorted((SIM / "judges").glob("*.py")), SIM / "pytest_plugin.py"]
    offenders = []
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            offenders += [f"{path.name}:{node.lineno} {name}" for name in names
                          if name == "acksim.cli" or name.startswith("acksim.cli.")]
    assert offenders == []
