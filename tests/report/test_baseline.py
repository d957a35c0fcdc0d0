"""``acksim diff``: a run against a baseline, per invariant and figure, with tolerances."""

import json

import pytest

from acksim.cli.main import main
from acksim.report.baseline import BaselineError, compare, parse_tolerances, read_summary, tolerance_of


def _summary(holds=True, p99=100.0, throughput=10.0, dead=0, threshold=None):
    return {"invariants": {"no_lost_work": {"holds": holds, "violations": 0 if holds else 2, "example": None}},
            "slo": {"throughput_per_s": {"value": throughput, "threshold": None, "met": None},
                    "recovery_time_p99_s": {"value": p99, "threshold": threshold, "met": None},
                    "dead_lettered": {"value": dead, "threshold": None, "met": None}}}


def test_the_same_summary_is_no_regression():
    result = compare(_summary(), _summary())
    assert result["verdict"] == "PASS" and result["regressions"] == []
    assert [i["change"] for i in result["invariants"]] == ["held"]
    assert [f["change_share"] for f in result["slo"]] == [0.0, 0.0, None]


def test_a_figure_worse_than_its_tolerance_fails_and_better_never_does():
    assert compare(_summary(p99=100.0), _summary(p99=109.0))["verdict"] == "PASS"  # 9 % < 10 %
    worse = compare(_summary(p99=100.0), _summary(p99=111.0))
    assert worse["verdict"] == "FAIL"
    assert worse["regressions"] == ["recovery_time_p99_s: 100.0 s -> 111.0 s (+11.0%), worse than the tolerance "
                                    "of 10%"]
    assert compare(_summary(p99=100.0), _summary(p99=10.0))["verdict"] == "PASS"
    # throughput is worse when it falls
    assert compare(_summary(throughput=10.0), _summary(throughput=8.0))["verdict"] == "FAIL"
    assert compare(_summary(throughput=10.0), _summary(throughput=30.0))["verdict"] == "PASS"
    # a zero baseline: any worsening counts
    assert compare(_summary(dead=0), _summary(dead=1))["regressions"] == [
        "dead_lettered: 0 -> 1, worse than the tolerance of 10%"]


def test_an_invariant_that_broke_is_a_regression_whatever_the_tolerance():
    result = compare(_summary(holds=True), _summary(holds=False), default=10.0)
    assert result["verdict"] == "FAIL" and [i["change"] for i in result["invariants"]] == ["broke"]
    assert result["regressions"] == ["no_lost_work: held in the baseline, 2 violation(s) now"]
    assert [i["change"] for i in compare(_summary(holds=False), _summary(holds=True))["invariants"]] == ["fixed"]
    assert compare(_summary(holds=False), _summary(holds=False))["verdict"] == "PASS"


def test_tolerances_by_name_part_and_bad_ones():
    default, named = parse_tolerances(["5%", "p99=1%", "recovery_time_p99_s=20%", "dead=0.5"])
    assert default == 0.05 and named == {"p99": 0.01, "recovery_time_p99_s": 0.2, "dead": 0.5}
    assert tolerance_of("end_to_end_p99_s", default, named) == 0.01
    assert tolerance_of("recovery_time_p99_s", default, named) == 0.2  # the longest part wins
    assert tolerance_of("throughput_per_s", default, named) == 0.05
    for bad in ("x", "p99=", "p99=ten%", "P 99=1%", "=5%x"):
        with pytest.raises(BaselineError, match=r"^--tolerance: must be PERCENT% or NAME=PERCENT%"):
            parse_tolerances([bad])


def test_the_command_on_report_folders(tmp_path, capsys):
    for name, summary in (("base", _summary(p99=100.0)), ("new", _summary(p99=150.0))):
        (tmp_path / name).mkdir()
        (tmp_path / name / "summary.json").write_text(json.dumps(summary))
    assert read_summary(tmp_path / "base") == _summary(p99=100.0)
    assert main(["diff", str(tmp_path / "base"), str(tmp_path / "new")]) == 1
    out = capsys.readouterr().out
    assert "  recovery_time_p99_s: 100.0 s -> 150.0 s (+50.0%)   WORSE" in out
    assert out.rstrip().endswith("worse than the tolerance of 10%")
    assert main(["diff", str(tmp_path / "base"), str(tmp_path / "new"), "--tolerance", "p99=60%", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["verdict"] == "PASS"
    (tmp_path / "bad.json").write_text("[]")
    assert main(["diff", str(tmp_path / "base"), str(tmp_path / "bad.json")]) == 2
    assert "bad.json: not a run's summary.json" in capsys.readouterr().err
    assert main(["diff", str(tmp_path / "base"), str(tmp_path / "none")]) == 2
    assert "none: no summary.json there" in capsys.readouterr().err
