"""``acksim compare``: the per-preset scenarios, the hazard witness matcher, bad input, and the
report on real runs (verdicts equal to each scenario run alone, the same bytes twice)."""

import contextlib
import io
import json
import tomllib
from pathlib import Path

import pandas as pd
import pytest

from acksim.cli.main import main
from acksim.capacity.compare import (
    comparison,
    hazard_witnesses,
    matches,
    preset_data,
    preset_names,
    preset_scenarios,
)
from acksim.cli.compare import write_compare_report
from acksim.history import Record
from acksim.judges.invariants import INVARIANTS
from acksim.report.outdir import UsageError
from acksim.scenario.presets import PRESETS
from acksim.scenario import read_data
from acksim.judges.slo import FIGURES
from acksim.judges.summary import build_summary, passed
from acksim.world.core import simulate

CLEANUP = Path(__file__).resolve().parents[2] / "scenarios" / "compare-cleanup.toml"
THREE = ["rest-queue", "celery-redis", "bullmq"]


@pytest.fixture(scope="module")
def data():
    return tomllib.loads(CLEANUP.read_text())


def rec(kind, detail=""):
    return Record(0.0, 0, kind, "queue", detail=detail)


# --- the scenarios -----------------------------------------------------------------------------

def test_each_preset_gets_its_own_queue_and_keeps_the_scenario_elsewhere(data):
    assert "preset" not in data["queue"] and "redelivery" not in data["queue"]
    by_name = dict(zip(PRESETS, preset_scenarios(data, str(CLEANUP), list(PRESETS))))
    rmq = by_name["rabbitmq-classic"]
    assert rmq.queue.preset == "rabbitmq-classic"
    assert rmq.queue.redelivery == "consumer_death" and rmq.queue.visibility_timeout_s == 1800.0
    assert rmq.queue.max_receive_count == 0 and rmq.queue.requeue_at_head is True
    assert by_name["redis-streams"].queue.redelivery == "claim"
    assert by_name["sqs-fifo"].queue.kind == "fifo"
    for sc in by_name.values():
        assert sc.workers.count == 4 and sc.workers.restart_delay_s == 10.0  # the scenario's
        assert sc.queue.ack_latency_s == 0.005  # the environment's, kept
        assert sc.workload.accounts == 300 and sc.stores.backend == "memory" and sc.seed == 11
        assert [d.delivery for d in sc.faults.duplicates] == [50, 150, 250]
        assert sc.slo.thresholds() == {"end_to_end_p99_s": 600.0, "recovery_time_p99_s": 900.0}
    # a preset's workers and scheduler defaults apply where the scenario is silent
    assert by_name["celery-redis"].workers.ack_policy == "before_processing"
    assert by_name["rest-queue"].workers.ack_policy == "after_commit"
    assert by_name["airflow"].scheduler.mode == "cron" and by_name["airflow"].scheduler.catchup == "latest"
    assert by_name["cron"].scheduler.misfire_grace_s == 1.0
    assert by_name["bullmq"].scheduler.mode == "per_deadline"


def test_the_scenarios_queue_settings_are_replaced_by_each_presets(data):
    source = {**data, "queue": {"preset": "bullmq", "visibility_timeout_s": 5.0, "max_receive_count": 2,
                                "ack_latency_s": 0.01, "redrive_at_s": [100.0]},
              "workers": {"count": 2, "ack_policy": "after_commit"}}
    names = ["rest-queue", "rabbitmq-classic", "temporal", "celery-redis", "cron"]
    got = {n: sc.queue for n, sc in zip(names, preset_scenarios(source, "s.toml", names))}
    assert {n: q.visibility_timeout_s for n, q in got.items()} == {
        "rest-queue": 30.0, "rabbitmq-classic": 1800.0, "temporal": 300.0, "celery-redis": 3600.0,
        "cron": 30.0}  # cron sets none: the Queue default, not the scenario's 5
    assert {n: q.max_receive_count for n, q in got.items()} == {
        "rest-queue": 5, "rabbitmq-classic": 0, "temporal": 0, "celery-redis": 0, "cron": 0}
    assert all(q.ack_latency_s == 0.01 and q.redrive_at_s == (100.0,) for q in got.values())
    assert preset_data(source, "cron")["queue"] == {"preset": "cron", "ack_latency_s": 0.01, "redrive_at_s": [100.0]}
    assert source["queue"]["preset"] == "bullmq"  # the source is not modified
    celery = preset_scenarios(source, "s.toml", ["celery-redis"])[0]
    assert celery.workers.ack_policy == "after_commit" and celery.workers.count == 2  # the scenario wins


def test_the_seed_override_applies_to_every_preset(data):
    assert [s.seed for s in preset_scenarios(data, "s", THREE, seed=99)] == [99, 99, 99]
    assert preset_data(data, "cron", seed=5)["seed"] == 5 and data["seed"] == 11


def test_preset_names():
    assert preset_names(None) == list(PRESETS) and len(PRESETS) == 11
    assert preset_names("cron, bullmq") == ["cron", "bullmq"]
    with pytest.raises(UsageError, match=r"^--presets: unknown preset 'kafka'; allowed: rest-queue, sqs-standard, "):
        preset_names("rest-queue,kafka")
    with pytest.raises(UsageError, match=r"^--presets: cron named more than once"):
        preset_names("cron,bullmq,cron")
    with pytest.raises(UsageError, match=r"^--presets: an empty name"):
        preset_names("cron,")


# --- the hazard witnesses ----------------------------------------------------------------------

def test_a_bare_kind_matches_every_record_of_that_kind_and_a_prefix_only_those_details():
    expired = rec("visibility_expired", "consumer_timeout")
    assert matches(expired, "visibility_expired") and matches(rec("visibility_expired"), "visibility_expired")
    assert matches(expired, "visibility_expired:consumer_timeout") and matches(expired, "visibility_expired:consumer")
    assert not matches(expired, "visibility_expired:connection_lost")
    assert not matches(rec("visibility_expired"), "visibility_expired:claimed")
    assert not matches(expired, "delivered") and not matches(rec("delivered", "duplicate"), "visibility_expired")
    assert matches(rec("cron_run_skipped", "misfire: 3 s late"), "cron_run_skipped:misfire")
    assert not matches(rec("cron_run_skipped", "paused"), "cron_run_skipped:misfire")
    history = [rec("delivered"), rec("delivered", "duplicate"), rec("visibility_expired", "stalled"),
               rec("dead_lettered", "max_stalled_count"), rec("dead_lettered", "max_receive_count")]
    assert hazard_witnesses(history, PRESETS["bullmq"].hazard_kinds) == 2
    assert hazard_witnesses(history, PRESETS["sqs-standard"].hazard_kinds) == 1
    assert hazard_witnesses(history, ("dead_lettered", "dead_lettered:max")) == 2  # each record once
    assert hazard_witnesses(history, ()) == 0


# --- bad input ---------------------------------------------------------------------------------

@pytest.mark.parametrize("presets, message", [
    ("rest-queue,kafka", "acksim: error: --presets: unknown preset 'kafka'; allowed: " + ", ".join(PRESETS)),
    ("cron,cron", "acksim: error: --presets: cron named more than once; name each preset once"),
])
def test_bad_preset_names_exit_2_with_nothing_written(tmp_path, capsys, presets, message):
    out = tmp_path / "cmp"
    assert main(["compare", str(CLEANUP), "--presets", presets, "--out", str(out)]) == 2
    captured = capsys.readouterr()
    assert captured.err == message + "\n" and captured.out == ""
    assert list(tmp_path.iterdir()) == []


def test_a_bad_scenario_exits_2_naming_the_preset(tmp_path, capsys):
    path = tmp_path / "s.toml"
    path.write_text(CLEANUP.read_text().replace("count = 4", "count = 0"))
    assert main(["compare", str(path), "--presets", "cron", "--out", str(tmp_path / "cmp")]) == 2
    err = capsys.readouterr().err
    assert err == f"acksim: error: {path} (preset cron): workers.count: Input should be greater than or equal to 1 (got 0); allowed: 1 <= value <= 1000\n"
    assert main(["compare", str(tmp_path / "missing.toml"), "--out", str(tmp_path / "cmp")]) == 2
    assert "missing.toml: scenario file not found" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.toml"]


def test_a_folder_holding_something_else_is_refused_before_running(tmp_path, capsys):
    (tmp_path / "cmp").mkdir()
    (tmp_path / "cmp" / "notes.txt").write_text("mine")
    assert main(["compare", str(CLEANUP), "--presets", "cron", "--out", str(tmp_path / "cmp")]) == 2
    assert "--out:" in capsys.readouterr().err
    assert [p.name for p in (tmp_path / "cmp").iterdir()] == ["notes.txt"]


# --- the report on real runs -------------------------------------------------------------------

@pytest.fixture(scope="module")
def report(tmp_path_factory, data):
    """One CLI compare over three presets, and each of them run alone."""
    out = tmp_path_factory.mktemp("compare") / "cmp"
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = main(["compare", str(CLEANUP), "--presets", ",".join(THREE), "--out", str(out),
                     "--junit-xml", str(out.parent.with_name(out.parent.name + "-junit") / "compare.xml")])
    alone = {}
    for name in THREE:
        scenario = preset_scenarios(data, str(CLEANUP), [name])[0]
        outcome = simulate(scenario)
        alone[name] = (build_summary(scenario, outcome), outcome.history)
    return code, buf.getvalue(), out, alone


def test_the_report_holds_the_verdicts_of_each_preset_run_alone(report):
    code, printed, out, alone = report
    result = json.loads((out / "compare.json").read_text())
    assert list(result) == ["scenario", "seed", "presets"]
    assert result["scenario"] == "compare-cleanup" and result["seed"] == 11
    assert [e["preset"] for e in result["presets"]] == THREE
    for entry in result["presets"]:
        summary, history = alone[entry["preset"]]
        assert entry["passed"] == passed(summary)
        assert entry["invariants"] == {n: v["holds"] for n, v in summary["invariants"].items()}
        assert entry["violations"] == {n: v["violations"] for n, v in summary["invariants"].items()}
        assert entry["slo"] == summary["slo"]
        for key in ("jobs", "deliveries", "crashes", "cleanups", "dead_lettered", "wasted_worker_s"):
            assert entry["counts"][key] == summary["counts"][key]
        assert entry["counts"]["redeliveries"] == summary["slo"]["redeliveries"]["value"]
        hazard = PRESETS[entry["preset"]]
        assert entry["hazard"]["text"] == hazard.characteristic_hazard
        assert entry["hazard"]["witnesses"] == sum(
            1 for r in history if any(r.kind == k.split(":")[0] and r.detail.startswith(k.partition(":")[2])
                                      for k in hazard.hazard_kinds))
    by = {e["preset"]: e for e in result["presets"]}
    # celery-redis acks on receipt (its preset's workers default): crashes lose work
    assert not by["celery-redis"]["invariants"]["ack_after_durable"] and not by["celery-redis"]["passed"]
    assert by["rest-queue"]["passed"]
    # bullmq fails its stalled jobs after max_stalled_count: they never recover, and as censored
    # recovery samples (end of run minus first failure) they put the p99 past the threshold
    assert not by["bullmq"]["passed"] and by["bullmq"]["slo"]["recovery_time_p99_s"]["censored"] > 0
    assert [r["name"] for r in by["bullmq"]["reasons"]] == ["recovery_time_p99_s"]
    # crashed workers' messages come back after a lapse, but no job outlives its lease here
    assert by["rest-queue"]["hazard"]["witnesses"] == 0 < by["rest-queue"]["counts"]["redeliveries"]
    assert by["bullmq"]["hazard"]["witnesses"] > 0  # stalls of crashed workers' jobs
    assert by["bullmq"]["counts"]["dead_lettered"] > 0
    assert code == 1
    lines = printed.splitlines()
    assert lines[0] == (f"PASS: rest-queue: every invariant holds and every SLO threshold is met; "
                        f"hazard witnesses: {by['rest-queue']['hazard']['witnesses']}")
    assert lines[1].startswith("FAIL: celery-redis: invariants violated: ack_after_durable (")
    assert "no_lost_work (" in lines[1] and "; SLOs missed: " in lines[1]
    assert by["celery-redis"]["verdict"] == "FAIL" and by["rest-queue"]["verdict"] == "PASS"
    assert lines[2].startswith("FAIL: bullmq: SLOs missed: recovery_time_p99_s (") and "censored" in lines[2]
    assert lines[3] == f"report: {out}" and len(lines) == 4


def test_the_report_writes_the_table_the_page_and_the_plots(report):
    _code, _printed, out, alone = report
    table = pd.read_csv(out / "compare.csv")
    inv = [f"holds_{n}" for n, _fn in INVARIANTS]
    counts = ["jobs", "deliveries", "redeliveries", "crashes", "cleanups", "reminders_sent", "dead_lettered",
              "retention_expired", "dropped", "trimmed", "wasted_worker_s"]
    assert list(table.columns[:2 + len(inv) + len(FIGURES) + 1]) == ["preset", "passed", *inv, *FIGURES,
                                                                     "hazard_witnesses"]
    assert set(counts) <= set(table.columns)
    assert list(table["preset"]) == THREE and list(table["passed"]) == [True, False, False]
    assert list(table["jobs"]) == [alone[n][0]["counts"]["jobs"] for n in THREE]
    assert table["end_to_end_p99_s"].tolist() == [alone[n][0]["slo"]["end_to_end_p99_s"]["value"] for n in THREE]
    md = (out / "compare.md").read_text()
    assert "| | rest-queue | celery-redis | bullmq |" in md and "| verdict | PASS | FAIL | FAIL |" in md
    assert "| ack_after_durable | holds | VIOLATED (" in md and "| end_to_end_p99_s (<= 600 s (10.0 min)) | " in md
    assert "- FAIL: celery-redis: invariants violated: ack_after_durable (" in md  # the verdicts, as printed
    assert f"- **bullmq**: {PRESETS['bullmq'].characteristic_hazard} (" in md
    with_values = [f for f in FIGURES if any(alone[n][0]["slo"][f]["value"] is not None for n in THREE)]
    assert sorted(p.name for p in (out / "plots").iterdir()) == sorted(
        [f"{f}.png" for f in with_values] + ["hazard_witnesses.png", "redeliveries_dead_lettered_lost_work.png"])
    assert all((out / "plots" / p).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in ("hazard_witnesses.png",))
    assert "![end_to_end_p99_s by preset](plots/end_to_end_p99_s.png)" in md
    assert sorted(p.name for p in out.parent.iterdir()) == ["cmp"]  # no scratch folder left


def test_pool_and_loop_give_the_same_bytes_and_a_rerun_replaces_the_report(tmp_path, data, report):
    _code, _printed, first, _alone = report
    scenarios = preset_scenarios(read_data(CLEANUP), str(CLEANUP), THREE)
    write_compare_report(tmp_path / "pool", comparison(scenarios, processes=2))
    write_compare_report(tmp_path / "loop", comparison(scenarios, processes=1))
    for name in ("compare.json", "compare.csv", "compare.md", "plots/hazard_witnesses.png"):
        assert (tmp_path / "pool" / name).read_bytes() == (tmp_path / "loop" / name).read_bytes() \
            == (first / name).read_bytes(), name
    (tmp_path / "loop" / "mine.txt").write_text("not acksim's")
    assert main(["compare", str(CLEANUP), "--presets", "cron", "--out", str(tmp_path / "loop")]) == 2
    assert (tmp_path / "loop" / "mine.txt").read_text() == "not acksim's"  # never deleted
    (tmp_path / "loop" / "mine.txt").unlink()
    assert main(["compare", str(CLEANUP), "--presets", "cron", "--out", str(tmp_path / "loop")]) == 1
    assert json.loads((tmp_path / "loop" / ".acksim-report").read_text())["kind"] == "compare"
    assert [e["preset"] for e in json.loads((tmp_path / "loop" / "compare.json").read_text())["presets"]] == ["cron"]


def test_the_default_folder_is_named_after_the_scenario(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["compare", str(CLEANUP), "--presets", "rest-queue", "--seed", "3"]) == 0
    assert capsys.readouterr().out.endswith("report: reports/compare-compare-cleanup\n")
    result = json.loads((tmp_path / "reports" / "compare-compare-cleanup" / "compare.json").read_text())
    assert result["seed"] == 3 and result["presets"][0]["passed"] is True


def test_the_junit_file_has_a_suite_per_preset_and_a_case_per_invariant_and_figure(report):
    import xml.etree.ElementTree as ET

    _code, _printed, out, _alone = report
    root = ET.parse(out.parent.with_name(out.parent.name + "-junit") / "compare.xml").getroot()
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == [f"compare-cleanup on {n}" for n in THREE]
    per_suite = len(INVARIANTS) + len(FIGURES) + 2
    assert [len(s.findall("testcase")) for s in suites] == [per_suite] * 3
    failed = {s.get("name").split()[-1]: [c.get("name") for c in s.findall("testcase") if c.find("failure") is not None]
              for s in suites}
    assert failed["rest-queue"] == [] and failed["bullmq"] == ["recovery_time_p99_s"]
    assert failed["celery-redis"][:2] == ["ack_after_durable", "no_lost_work"]
    assert root.get("failures") == str(sum(len(v) for v in failed.values()))
