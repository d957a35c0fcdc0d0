"""One verdict, computed once: summary.json's verdict and reasons, sample counts and censored
recovery times, the default thresholds, JUnit XML and the shipped JSON Schemas."""

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest

from acksim.cli.main import main
from acksim.history import Record
from acksim.judges.series import recovery_samples
from acksim.judges.slo import DEFAULT_THRESHOLDS, FIGURES, evaluate, measure
from acksim.judges.summary import judge, verdict_line, with_verdict
from acksim.report.schemas import render, scenario_schema, shipped

ROOT = Path(__file__).resolve().parents[2]
SMOKE = str(ROOT / "scenarios" / "smoke.toml")
RAISES = "def process(job, accounts, cleanup_store, outbox):\n    raise RuntimeError('boom')\n"


def h(*rows):
    return [Record(t, i, kind, actor, message_id=mid, receive_count=rc, detail=d,
                   visible_at=t if kind == "published" else None)
            for i, (t, kind, actor, mid, rc, d) in enumerate(sorted(rows, key=lambda row: row[0]))]


def junit(path):
    root = ET.parse(path).getroot()
    cases = root.findall(".//testcase")
    failed = [c.get("name") for c in cases if c.find("failure") is not None]
    skipped = [c.get("name") for c in cases if c.find("skipped") is not None]
    return root, cases, failed, skipped


# --- figures: sample counts, censored recovery times, no sample under a threshold -------------

def test_a_message_that_failed_and_never_recovered_is_a_censored_recovery_sample():
    hist = h((0.0, "published", "scheduler", 1, None, ""), (0.0, "published", "scheduler", 2, None, ""),
             (10.0, "delivered", "w1", 1, 1, ""), (12.0, "processor_error", "w1", 1, 1, ""),
             (10.0, "delivered", "w2", 2, 1, ""), (11.0, "crashed", "w2", 2, 1, "after_call"),
             (50.0, "delivered", "w1", 2, 2, ""), (55.0, "acked", "w1", 2, 2, ""),
             (90.0, "dead_lettered", "queue", 1, 5, ""), (100.0, "published", "scheduler", 3, None, ""))
    recovered, censored = recovery_samples(hist)
    assert recovered.to_dict() == {2: 44.0} and censored.to_dict() == {1: 88.0}  # end 100 - failure 12
    values, samples = measure(hist)
    assert values["recovery_time_max_s"] == 88.0 and samples["recovery_time_p99_s"] == (2, 1)
    assert values["dead_lettered_share"] == pytest.approx(1 / 3) and samples["dead_lettered_share"] == (3, 0)
    slo = evaluate(values, {"recovery_time_p99_s": 60.0}, samples)
    assert slo["recovery_time_p99_s"] == {"value": pytest.approx(87.56), "n": 2, "censored": 1,
                                          "threshold": 60.0, "met": False}


def test_a_figure_with_a_threshold_and_no_sample_is_not_met():
    values, samples = measure([])
    slo = evaluate(values, {"recovery_time_p99_s": 1.0, "end_to_end_p99_s": 5.0}, samples)
    assert slo["recovery_time_p99_s"] == {"value": None, "n": 0, "censored": 0, "threshold": 1.0, "met": False}
    assert slo["end_to_end_p99_s"]["met"] is False and slo["queue_depth_max"]["met"] is None
    assert list(slo) == list(FIGURES)


def test_the_default_thresholds_apply_unless_the_scenario_sets_that_figure():
    assert DEFAULT_THRESHOLDS == {"dead_lettered_share": 0.5}
    values = {f: 1.0 for f in FIGURES} | {"dead_lettered_share": 0.8}
    samples = {f: (10, 0) for f in FIGURES}
    assert evaluate(values, {}, samples)["dead_lettered_share"] == {
        "value": 0.8, "n": 10, "censored": 0, "threshold": 0.5, "met": False}
    assert evaluate(values, {"dead_lettered_share": 0.9}, samples)["dead_lettered_share"]["met"] is True


def test_judge_lists_every_reason_in_order():
    summary = {"scenario": "s", "seed": 1,
               "invariants": {"no_lost_work": {"holds": False, "violations": 3, "example": {"a": 1}},
                              "at_most_once_effect": {"holds": True, "violations": 0, "example": None}},
               "slo": {"end_to_end_p99_s": {"value": 5.0, "n": 4, "censored": 0, "threshold": 1.0, "met": False},
                       "recovery_time_p99_s": {"value": None, "n": 0, "censored": 0, "threshold": 9.0, "met": False},
                       "queue_depth_max": {"value": 2.0, "n": 4, "censored": 0, "threshold": None, "met": None}},
               "counts": {"processor_errors": 2, "stopped_early": 1}}
    verdict, reasons = judge(summary)
    assert verdict == "FAIL"
    assert [(r["kind"], r["name"]) for r in reasons] == [
        ("invariant", "no_lost_work"), ("slo", "end_to_end_p99_s"), ("no_sample", "recovery_time_p99_s"),
        ("processor_errors", "processor_errors"), ("stopped_early", "stopped_early")]
    full = with_verdict(summary)
    assert list(full)[:5] == ["schema_version", "scenario", "seed", "verdict", "reasons"]
    assert verdict_line(full) == (
        "FAIL: invariants violated: no_lost_work (3); SLOs missed: end_to_end_p99_s (5 s vs threshold <= 1 s); "
        "no sample: recovery_time_p99_s (no sample, threshold <= 9 s); the processor raised 2 error(s) of its own; "
        "stopped early: before the pipeline drained")


# --- a processor that raises on every job fails in every output --------------------------------

@pytest.fixture(scope="module")
def raising_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("raises")
    proc = tmp / "raises.py"
    proc.write_text(RAISES)
    out, xml = tmp / "rep", tmp / "ci" / "junit.xml"
    import contextlib
    import io

    buf, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(err):
        code = main(["run", SMOKE, "--processor", f"{proc}:process", "--out", str(out), "--junit-xml", str(xml)])
    return code, buf.getvalue(), out, xml


def test_a_processor_that_always_raises_fails_and_every_output_says_why(raising_run):
    code, printed, out, _xml = raising_run
    assert code == 1
    summary = json.loads((out / "summary.json").read_text())
    assert summary["verdict"] == "FAIL" and summary["counts"]["acks"] == 0
    kinds = [(r["kind"], r["name"]) for r in summary["reasons"]]
    assert kinds == [("slo", "recovery_time_p99_s"), ("slo", "dead_lettered_share"),
                     ("processor_errors", "processor_errors")]
    rec = summary["slo"]["recovery_time_p99_s"]
    assert rec["met"] is False and rec["n"] == rec["censored"] == summary["counts"]["dead_lettered"] > 0
    assert summary["slo"]["dead_lettered_share"] == {"value": 1.0, "n": summary["counts"]["jobs"], "censored": 0,
                                                     "threshold": 0.5, "met": False}
    assert summary["slo"]["end_to_end_p99_s"]["n"] == 0
    line = printed.strip().splitlines()[-1]
    assert line.startswith("FAIL: smoke seed 7: ")
    errors = summary["counts"]["processor_errors"]
    assert f"the processor raised {errors} error(s) of its own" in line and "dead_lettered_share (1 vs" in line
    md, html = (out / "report.md").read_text(), (out / "report.html").read_text()
    assert f"**Verdict: {verdict_line(summary)}**" in md
    assert "Verdict: PASS" not in md and "Verdict: PASS" not in html
    assert f"the processor raised {errors} error(s) of its own" in html and 'class="verdict fail"' in html
    assert f"processor `{out.parent / 'raises.py'}:process`" in md
    assert "| queue.preset | rest-queue |" in md and "<td>workers.count</td>" in html
    assert "| end_to_end_p99_s | no sample | 0 |" in md


def test_the_junit_file_of_a_failing_run(raising_run):
    _code, _printed, _out, xml = raising_run
    root, cases, failed, skipped = junit(xml)
    assert len(cases) == 5 + len(FIGURES) + 2 and root.get("tests") == str(len(cases))
    assert failed == ["recovery_time_p99_s", "dead_lettered_share", "processor_errors"]
    assert root.get("failures") == "3" and len(skipped) == len(FIGURES) - 2
    failure = next(c for c in cases if c.get("name") == "recovery_time_p99_s").find("failure")
    assert "vs threshold <= 120.0 s, 377 of 377 samples censored" in failure.get("message") and '"censored": ' in failure.text
    assert not list(xml.parent.glob(".*tmp*"))


def test_the_junit_file_of_a_passing_run(tmp_path, capsys):
    xml = tmp_path / "junit.xml"
    assert main(["run", SMOKE, "--out", str(tmp_path / "rep"), "--junit-xml", str(xml)]) == 0
    root, cases, failed, skipped = junit(xml)
    assert len(cases) == 5 + len(FIGURES) + 2 and failed == [] and root.get("failures") == "0"
    assert len(skipped) == len(FIGURES) - 2  # recovery_time_p99_s and the default dead_lettered_share judged
    assert "every invariant holds and every SLO threshold is met" in capsys.readouterr().out


def test_a_junit_path_that_is_a_folder_is_bad_input_and_nothing_runs(tmp_path, capsys):
    assert main(["run", SMOKE, "--out", str(tmp_path / "rep"), "--junit-xml", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("acksim: error: --junit-xml: ") and err.count("\n") == 1
    assert not (tmp_path / "rep").exists()


def test_check_writes_a_case_per_finding_kind_and_hazard_window(tmp_path, capsys):
    from acksim.judges.hazards import HAZARDS
    from acksim.search.findings import FINDINGS

    xml = tmp_path / "check.xml"
    rc = main(["check", "--candidate", "no-renewed-check", "--max-examples", "200", "--no-database",
               "--out", str(tmp_path / "c"), "--junit-xml", str(xml)])
    assert rc == 1
    _root, cases, failed, _skipped = junit(xml)
    assert len(cases) == len(FINDINGS) + len(HAZARDS)
    assert "no_cleanup_after_renewal" in failed
    failure = next(c for c in cases if c.get("name") == "no_cleanup_after_renewal").find("failure")
    assert "schedule (shrunk):" in failure.text and "replay: acksim run " in failure.text


# --- the schemas --------------------------------------------------------------------------------

def test_the_shipped_scenario_schema_is_the_generated_one():
    assert shipped("scenario") == render(scenario_schema())
    assert (ROOT / "sim" / "schemas" / "scenario.schema.json").read_text() == render(scenario_schema())


def test_real_summaries_and_scenarios_validate_against_the_shipped_schemas(raising_run, tmp_path):
    import tomllib

    schema = json.loads(shipped("summary"))
    jsonschema.Draft202012Validator.check_schema(schema)
    _code, _printed, out, _xml = raising_run
    jsonschema.validate(json.loads((out / "summary.json").read_text()), schema)
    bad = json.loads((out / "summary.json").read_text()) | {"verdict": "MAYBE"}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema)
    scenario = json.loads(shipped("scenario"))
    for path in sorted((ROOT / "scenarios").glob("**/*.toml")):
        if path.parent.name == "sweeps":
            continue
        data = json.loads(json.dumps(tomllib.loads(path.read_text()), default=str).replace('+00:00"', 'Z"'))
        jsonschema.validate(data, scenario)  # a TOML date-time reads as a string, as editors see it
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"workers": {"count": 0}}, scenario)


def test_acksim_schema_prints_the_shipped_schema(capsys):
    assert main(["schema", "summary"]) == 0
    assert json.loads(capsys.readouterr().out)["properties"]["schema_version"] == {
        "const": 1, "description": json.loads(shipped("summary"))["properties"]["schema_version"]["description"]}
    assert main(["schema", "scenario"]) == 0
    assert capsys.readouterr().out == shipped("scenario")
