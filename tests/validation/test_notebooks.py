"""Both notebooks execute top to bottom on small settings, headless, by the command the
Makefile's ``notebook-html`` target runs (Jupyter's ``nbconvert --to html --execute``), and are
committed without outputs."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"


def test_the_makefile_target_runs_this_command():
    recipe = (ROOT / "Makefile").read_text().split("\nnotebook-html:", 1)[1].split("\n\n", 1)[0]
    assert "ACKSIM_NOTEBOOK_SMALL=$(SMALL) $(BIN)/jupyter nbconvert --to html --execute" in recipe
    assert "notebooks/$(NB).ipynb --output-dir reports/notebooks" in recipe


@pytest.mark.parametrize("name", ["capacity_planning.ipynb", "design_review.ipynb"])
def test_notebook_runs_on_small_settings(name, tmp_path):
    env = {**os.environ, "ACKSIM_NOTEBOOK_SMALL": "1", "TMPDIR": str(tmp_path)}  # no kernel folder left behind
    done = subprocess.run([sys.executable, "-m", "nbconvert", "--to", "html", "--execute",
                           "--ExecutePreprocessor.timeout=600", str(NOTEBOOKS / name), "--output-dir",
                           str(tmp_path / "html")], capture_output=True, text=True, env=env, timeout=1200)
    assert done.returncode == 0, done.stderr[-3000:]  # a cell that raises fails the command
    html = (tmp_path / "html" / name.replace(".ipynb", ".html")).read_text(encoding="utf-8")
    assert not list(tmp_path.glob("acksim-*"))
    text = re.sub(r"<[^>]+>", "", html)
    if name == "capacity_planning.ipynb":
        assert "workers with a visibility timeout of" in text or "no grid point holds" in text
        assert "1x" in text and "100x" in text
    else:
        assert "reference" in text and "ack-before-processing" in text and "holds" in text


@pytest.mark.parametrize("name", ["capacity_planning.ipynb", "design_review.ipynb"])
def test_notebooks_are_committed_without_outputs(name):
    notebook = json.loads((NOTEBOOKS / name).read_text())
    for cell in notebook["cells"]:
        if cell["cell_type"] == "code":
            assert cell["outputs"] == [] and cell["execution_count"] is None
