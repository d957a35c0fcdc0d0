"""The README's processor contract example, run exactly as written: its two files, from the
README's code blocks, in a fresh project checked by its own pytest suite."""

from __future__ import annotations

import re
from pathlib import Path

import acksim.search.check  # noqa: F401 - loaded once here: pytester's in-process runs cannot load numpy twice
import acksim.search.replay  # noqa: F401
import acksim.search.api  # noqa: F401
import acksim.report.plots.counterexample  # noqa: F401 - a finding plots its counterexample (numpy, matplotlib)
import pytest

from acksim.model.candidates import CANDIDATES
from acksim.search.check import base_scenario, run_check

README = Path(__file__).parents[2] / "README.md"


def example_files() -> dict[str, str]:
    """The code blocks of "The processor's contract" whose first line names their file."""
    text = README.read_text(encoding="utf-8")
    section = text.split("## The processor's contract", 1)[1].split("\n## ", 1)[0]
    files = {}
    for block in re.findall(r"```python\n(.*?)```", section, flags=re.S):
        first = block.splitlines()[0]
        files[first.removeprefix("# ").split()[0]] = block
    return files


def test_the_readme_example_runs_as_written(pytester):
    files = example_files()
    assert sorted(files) == ["mycleanup/processor.py", "tests/test_cleanup_safety.py"]
    for rel, code in files.items():
        path = pytester.path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(code)
    (pytester.path / "mycleanup" / "__init__.py").write_text("")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*= acksim =*",
                                 "tests/test_cleanup_safety.py::test_my_cleanup_keeps_the_invariants: "
                                 "mycleanup.processor:process: * examples, hazard windows hit */11*; findings: none"])

    buggy = files["mycleanup/processor.py"].replace(" or account.renewed", "")
    assert buggy != files["mycleanup/processor.py"]
    (pytester.path / "mycleanup" / "processor.py").write_text(buggy)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*acksim found no_cleanup_after_renewal in mycleanup.processor:process*"])


# the README's processor with its account reads cached in a module-level dict: stale after a renewal
CACHED = """
_ACCOUNTS = {}


def _cached_get(accounts, account_id):
    if account_id not in _ACCOUNTS:
        _ACCOUNTS[account_id] = accounts.get(account_id)
    return _ACCOUNTS[account_id]
"""


def test_the_readme_example_fails_a_processor_that_caches_account_reads(pytester):
    files = example_files()
    cached = files["mycleanup/processor.py"].replace("account = accounts.get(job.account_id)",
                                                    "account = _cached_get(accounts, job.account_id)") + CACHED
    assert "_cached_get(accounts" in cached
    for rel, code in {**files, "mycleanup/processor.py": cached}.items():
        path = pytester.path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(code)
    (pytester.path / "mycleanup" / "__init__.py").write_text("")
    assert not (pytester.path / ".hypothesis").exists()  # a fresh example database, as on CI
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*acksim found * in mycleanup.processor:process*"])


def readme_budget() -> int:
    """The ``max_examples`` of the README's test file."""
    return int(re.search(r"max_examples=(\d+)", example_files()["tests/test_cleanup_safety.py"]).group(1))


@pytest.mark.parametrize("name", [n for n, c in CANDIDATES.items() if c.breaks is not None])
def test_the_readme_budget_finds_every_bad_candidate_from_a_fresh_database(name):
    candidate = CANDIDATES[name]
    report = run_check(candidate.processor, base_scenario(None, candidate.design), max_examples=readme_budget(),
                       seed=0, database=None)
    assert report.findings, f"{name}: nothing found in {report.examples} examples"
    assert report.first is not None and report.first.example <= readme_budget()
