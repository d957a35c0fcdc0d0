"""Every code block of README.md and docs/*.md runs, or is checked, here.

The blocks run from a fresh example project: the README's ``mycleanup`` package and every
python block that names its file, with ``scenarios/`` linked to the bundled scenarios.

- ``python``: a block that defines ``test_*`` functions is a test file of the project (its own
  file, or one named after the block), run by one ``python -m pytest`` there, and its tests
  must pass; a block that names a file (``# boom.py``) is compiled and used by the others; any
  other block runs as a script from the project's folder and must exit 0.
- ``sh``: every ``acksim`` line runs from the project's folder with the venv's acksim and must
  exit 0, or 1 when the comment after it says FAIL; such comments (PASS, FAIL, ``replay:``)
  are lines it must print, ``...`` matching anything. A usage line (``[--seed N]``, ``a|b``, a
  placeholder in capitals) and every line of a block marked ``<!-- not run: WHY -->`` are
  checked instead: the command, each ``--flag`` and each choice must be in ``acksim CMD
  --help``, a scenario file it names must exist. ``make`` targets must be in the Makefile,
  ``pip install`` extras in pyproject.toml, ``pytest -m`` markers registered.
- ``toml``: parsed; a sweep file is loaded with ``load_sweep`` (every grid point validated),
  any other block with ``acksim.scenario.parse``; a scenario whose comment says ``exit N`` is
  run and must exit N.
- ``yaml`` (the CI job): parsed, and its ``run:`` commands checked and run as sh lines.
- ``text`` or no language: a block marked ``<!-- output of: CMD -->`` must be what CMD prints
  (each line a line of its output, ``...`` matching anything); any other block is a figure,
  whose ``acksim.*`` names must exist.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import tomli_w
import yaml

from helpers.doc_blocks import (ACKSIM, LANGUAGES, ROOT, acksim_problems, blocks, commands, is_synopsis,
                                line_problems, missing_lines, name_problems, program, subcommands)

BLOCKS = blocks()


def of(*languages: str) -> list:
    return [pytest.param(b, id=b.id) for b in BLOCKS if b.lang in languages]


def defines_tests(block) -> bool:
    return re.search(r"^def test_\w+\(", block.text, flags=re.M) is not None


def project_file(block) -> str:
    """The project file a python block is written to (None: it runs as a script)."""
    if block.file_name:
        return block.file_name
    if defines_tests(block):
        return "tests/test_block_" + re.sub(r"\W", "_", block.id) + ".py"
    return None


@pytest.fixture(scope="session")
def project(tmp_path_factory) -> Path:
    """The example project the blocks run in."""
    root = tmp_path_factory.mktemp("doc-project")
    (root / "mycleanup").mkdir()
    (root / "mycleanup" / "__init__.py").write_text("")
    (root / "scenarios").symlink_to(ROOT / "scenarios")
    for block in BLOCKS:
        name = project_file(block) if block.lang == "python" else None
        if name:
            assert not (root / name).exists(), f"{block.id}: a second block writes {name}"
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(block.text)
    return root


@pytest.fixture(scope="session")
def run(project):
    """``run(argv)``: a command line of the docs, run from the project with the venv's acksim and python."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "HYPOTHESIS_"))}

    def _run(argv: list[str]) -> subprocess.CompletedProcess:
        head = {"acksim": ACKSIM, ".venv/bin/acksim": ACKSIM, "python": sys.executable}.get(argv[0], argv[0])
        return subprocess.run([head, *argv[1:]], cwd=project, env=env, capture_output=True, text=True, timeout=600)

    return _run


@pytest.fixture(scope="session")
def project_tests(project, run):
    """The project's own ``python -m pytest``: (its output, {test file: [failed or passed]})."""
    result = run(["python", "-m", "pytest", f"--junitxml={project / 'junit.xml'}"])
    outcomes: dict[str, list[bool]] = {}
    for case in ET.parse(project / "junit.xml").iter("testcase"):
        file = case.get("classname").replace(".", "/") + ".py"
        outcomes.setdefault(file, []).append(len(case) == 0 or all(c.tag == "system-out" for c in case))
    return result, outcomes


def test_every_block_is_of_a_kind_this_suite_checks():
    assert len(BLOCKS) > 30
    assert [b.id for b in BLOCKS if b.lang not in LANGUAGES] == []
    assert [f"{b.id}: {b.note}" for b in BLOCKS if b.note and not (b.not_run or b.output_of)] == []


@pytest.mark.parametrize("block", of("python"))
def test_python_block(block, run, project_tests):
    compile(block.text, block.id, "exec")
    name = project_file(block)
    if defines_tests(block):
        output, outcomes = project_tests
        assert outcomes.get(name), f"{name} ran no test:\n{output.stdout[-3000:]}"
        assert all(outcomes[name]), output.stdout[-5000:]
    elif name is None:
        result = run(["python", "-c", block.text])
        assert result.returncode == 0, result.stderr[-3000:]


@pytest.mark.parametrize("block", of("sh"))
def test_sh_block(block, run):
    problems = []
    for cmd in commands(block.text):
        problems += line_problems(cmd.argv)
        kind, args = program(cmd.argv)
        if kind == "acksim" and not block.not_run and not is_synopsis(args):
            result = run(cmd.argv)
            if result.returncode != cmd.expected_exit:
                problems.append(f"{cmd.text}: exit {result.returncode}, not {cmd.expected_exit}:\n"
                                f"{result.stdout[-2000:]}{result.stderr[-2000:]}")
            problems += [f"{cmd.text}: printed no line {want!r}" for want in missing_lines(cmd.outputs, result.stdout)]
    assert problems == []


@pytest.mark.parametrize("block", of("toml"))
def test_toml_block(block, run, project, tmp_path):
    from acksim.capacity.sweep import load_sweep
    from acksim.scenario import parse

    data = tomllib.loads(block.text)
    if "grid" in data:  # a sweep file: its scenario is relative to the bundled sweeps' folder
        data["scenario"] = str((ROOT / "scenarios" / "sweeps" / data["scenario"]).resolve())
        (tmp_path / "sweep.toml").write_text(tomli_w.dumps(data))
        load_sweep(tmp_path / "sweep.toml")
        return
    parse(data, block.id)
    said = re.search(r"#.*\bexit (\d+)\b", block.text)
    if said and not block.not_run:
        name = f"block-{block.line}.toml"
        (project / name).write_text(block.text)
        result = run(["acksim", "run", name, "--out", f"reports/block-{block.line}"])
        assert result.returncode == int(said.group(1)), result.stdout + result.stderr


@pytest.mark.parametrize("block", of("yaml"))
def test_yaml_block(block, run):
    job = yaml.safe_load(block.text)
    steps = [step for each in job["jobs"].values() for step in each["steps"]]
    problems = []
    for cmd in (c for step in steps if "run" in step for c in commands(step["run"])):
        problems += line_problems(cmd.argv)
        kind, args = program(cmd.argv)
        if kind == "acksim" and not block.not_run and not is_synopsis(args):
            result = run(cmd.argv)
            if result.returncode != 0:
                problems.append(f"{cmd.text}: exit {result.returncode}:\n{result.stdout[-2000:]}{result.stderr[-2000:]}")
    assert problems == []


@pytest.mark.parametrize("block", of("text", ""))
def test_text_block(block, run, project_tests):
    if block.output_of is None:
        assert name_problems(block.text) == []
        return
    argv = shlex.split(block.output_of)
    output = project_tests[0].stdout if argv == ["python", "-m", "pytest"] else run(argv).stdout
    assert missing_lines([line for line in block.text.splitlines() if line.strip()], output) == [], output


def test_every_command_is_documented():
    page = (ROOT / "docs" / "commands.md").read_text()
    assert [c for c in subcommands() if f"`acksim {c}`" not in page and f"`{c}`" not in page] == []


def test_the_checks_fail_on_a_wrong_line():
    assert acksim_problems(["check", "--processor", "m:f", "--no-such-flag"])
    assert acksim_problems(["check", "--backend", "oracle"])
    assert acksim_problems(["check", "[--isolation", "serializable|snapshot]"])
    assert acksim_problems(["frobnicate"])
    assert acksim_problems(["run", "scenarios/no-such-scenario.toml"])
    assert not acksim_problems(["check", "--backend", "memory|sqlite", "--max-examples", "N"])
    assert line_problems(["make", "no-such-target"])
    assert line_problems(["pip", "install", "./acksim[no-such-extra]"])
    assert line_problems(["python", "-m", "pytest", "-m", "no_such_marker"])
    assert line_problems(["curl", "https://example.com"])
    assert missing_lines(["PASS: smoke seed 7: ..."], "FAIL: smoke seed 7: 377 jobs")
    assert not missing_lines(["PASS: smoke seed 7: ..."], "PASS: smoke seed 7: 377 jobs")
    assert name_problems("acksim.judges.no_such_module")
    [cmd] = commands("acksim run smoke   # FAIL: smoke ...\n")
    assert cmd.argv == ["acksim", "run", "smoke"] and cmd.expected_exit == 1
