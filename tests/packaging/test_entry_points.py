"""The command line's entry points and exit codes beyond the verdict: ``python -m acksim``,
``--version``, a reader that leaves the pipe early, and a processor whose imports are broken."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import acksim
from acksim.scenarios import bundled

ROOT = Path(__file__).resolve().parents[2]
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
ACKSIM = [sys.executable, "-m", "acksim"]


def test_python_dash_m_and_version_print_the_installed_version():
    result = subprocess.run([*ACKSIM, "--version"], capture_output=True, text=True, timeout=540)
    assert (result.returncode, result.stdout) == (0, f"acksim {VERSION}\n")
    assert acksim.__version__ == VERSION


def test_the_public_api_is_lazy_and_complete():
    code = ("import sys, acksim; heavy = [m for m in ('pandas', 'matplotlib', 'simpy') if m in sys.modules]; "
            "print(heavy, acksim.load.__module__, acksim.simulate.__module__, acksim.check.__module__)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=540)
    assert result.stdout.split() == ["[]", "acksim.scenario.loading", "acksim.world.core", "acksim.search.api"]


def test_a_closed_pipe_is_exit_141_without_a_traceback():
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first write
    try:
        result = subprocess.run([*ACKSIM, "presets"], stdout=write, stderr=subprocess.PIPE, text=True, timeout=540)
    finally:
        os.close(write)
    assert result.returncode == 141
    assert result.stderr == ""


def test_a_processor_that_cannot_import_what_it_needs_is_bad_input(tmp_path):
    processor = tmp_path / "lazy.py"
    processor.write_text("def process(job, accounts, cleanup_store, outbox):\n    import not_installed_anywhere\n")
    out = tmp_path / "out"
    result = subprocess.run([*ACKSIM, "run", str(bundled("smoke.toml")), "--processor", f"{processor}:process",
                             "--out", str(out)], capture_output=True, text=True, timeout=540)
    assert result.returncode == 2
    assert result.stderr == ("acksim: error: --processor: the processor raised ModuleNotFoundError: No module named "
                             "'not_installed_anywhere' while running; install what it imports (exit 2, no verdict)\n")
    assert not out.exists()


HEAVY = ("pandas", "matplotlib", "hypothesis", "simpy", "greenlet", "dask", "numpy")


def _imported_by(*argv: str) -> tuple[int, list[str]]:
    code = ("import sys\nfrom acksim.cli.main import main\n"
            f"rc = main({list(argv)!r})\n"
            f"print('HEAVY', [m for m in {HEAVY!r} if m in sys.modules])\nsys.exit(rc)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=540)
    line = next(x for x in result.stdout.splitlines() if x.startswith("HEAVY"))
    return result.returncode, eval(line.removeprefix("HEAVY "))  # a list literal of our own


def test_presets_help_and_bad_input_import_nothing_heavy(tmp_path):
    """Startup is what these import: none of the heavy libraries (their cost is measured by
    benchmarks/startup.py)."""
    assert _imported_by("presets") == (0, [])
    assert _imported_by("--help") == (0, [])
    assert _imported_by("--version") == (0, [])
    assert _imported_by("run", str(tmp_path / "missing.toml")) == (2, [])


def test_junit_xml_inside_the_report_folder_is_refused_before_anything_runs(tmp_path):
    out = tmp_path / "rep"
    for junit in (out, out / "j.xml"):
        result = subprocess.run([*ACKSIM, "run", str(bundled("smoke.toml")), "--out", str(out),
                                 "--junit-xml", str(junit)], capture_output=True, text=True, timeout=540)
        assert result.returncode == 2
        assert result.stderr == (f"acksim: error: --junit-xml: {str(junit)!r} is in the report folder {str(out)!r}, "
                                 "which is replaced whole; name a file outside it\n")
        assert not out.exists()
