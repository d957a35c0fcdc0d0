"""Both notebooks execute top to bottom on small settings, and are committed without outputs."""

import json
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"


@pytest.mark.parametrize("name", ["capacity_planning.ipynb", "design_review.ipynb"])
def test_notebook_runs_on_small_settings(name, monkeypatch, tmp_path):
    monkeypatch.setenv("ACKSIM_NOTEBOOK_SMALL", "1")
    monkeypatch.setenv("TMPDIR", str(tmp_path))  # the kernel's temporary folders: none is left behind
    notebook = nbformat.read(NOTEBOOKS / name, as_version=4)
    nbclient.NotebookClient(notebook, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(NOTEBOOKS)}}).execute()
    outputs = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    assert not list(tmp_path.glob("acksim-*"))
    text = json.dumps(outputs)
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
