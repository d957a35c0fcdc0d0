"""``--candidate`` applies a candidate's processor and design options in run, check and compare."""

import json

import pytest

from acksim.search.candidates import candidate_of_ref, resolve
from acksim.cli.main import main
from acksim.report.outdir import UsageError
from acksim.scenarios import bundled

INCIDENT = "incidents/01-eta-beyond-visibility-timeout.toml"


def reminders(out):
    return json.loads((out / "summary.json").read_text())["counts"]["reminders_sent"]


def test_run_candidate_naive_sends_three_reminders_on_the_eta_incident(tmp_path, capsys):
    assert main(["run", str(bundled(INCIDENT)), "--candidate", "naive", "--out", str(tmp_path / "r")]) == 1
    assert reminders(tmp_path / "r") == 3
    assert "invariants violated: at_most_once_effect (3)" in capsys.readouterr().out


def test_processor_naming_a_candidates_function_applies_its_design_with_a_note(tmp_path, capsys):
    assert main(["run", str(bundled(INCIDENT)), "--processor", "acksim.model.candidates:naive",
                 "--out", str(tmp_path / "r")]) == 1
    assert reminders(tmp_path / "r") == 3
    assert "acksim: note: --processor acksim.model.candidates:naive is the candidate 'naive': its design options " \
           "are applied (workers.transaction_scope = 'autocommit'" in capsys.readouterr().err
    assert main(["run", str(bundled(INCIDENT)), "--out", str(tmp_path / "ref")]) == 0
    assert reminders(tmp_path / "ref") == 1


def test_compare_candidate_applies_the_design_on_every_preset(tmp_path, capsys):
    rc = main(["compare", str(bundled(INCIDENT)), "--presets", "celery-redis", "--candidate", "naive",
               "--out", str(tmp_path / "c")])
    assert rc == 1
    result = json.loads((tmp_path / "c" / "compare.json").read_text())
    assert [e["preset"] for e in result["presets"]] == ["celery-redis"]
    assert "at_most_once_effect" in capsys.readouterr().out


def test_resolving_candidates():
    assert candidate_of_ref("acksim.model.candidates:no_renewed_check") == "no-renewed-check"
    assert candidate_of_ref("acksim.model.processor:process") is None  # several candidates' processor
    assert resolve(None, "acksim.model.processor:process") == ("acksim.model.processor:process", {})
    assert resolve("autocommit", None) == ("acksim.model.processor:process",
                                           {"workers": {"transaction_scope": "autocommit"}})
    with pytest.raises(UsageError, match="--candidate: unknown 'nope'; one of reference, "):
        resolve("nope", None)
    with pytest.raises(UsageError, match="name two processors"):
        resolve("naive", "acksim.model.candidates:no_version_check")
