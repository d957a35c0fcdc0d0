"""The README's processor contract example, run exactly as written: its two files, from the
README's code blocks, in a fresh project checked by its own pytest suite."""

from __future__ import annotations

import re
from pathlib import Path

import acksim.search.check  # noqa: F401 - loaded once here: pytester's in-process runs cannot load numpy twice
import acksim.search.replay  # noqa: F401
import acksim.search.api  # noqa: F401

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
