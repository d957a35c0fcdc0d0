"""The report renderers on small hand-made histories: real files, real values."""

from __future__ import annotations

import base64
import json
import math
import re
import struct
from pathlib import Path

import pandas as pd
import pytest

import acksim.report
import acksim.report.plots
from acksim.history import COLUMNS, Record
from acksim.report import write_report
from acksim.report.outdir import UsageError
from acksim.report.plots.timeline import choose_lanes, clock, natural_key, plot_worker_timeline
from acksim.report.plots.timeline_window import choose_window
from acksim.report.summary_json import render_summary_json
from acksim.judges.figure_text import format_figure, format_seconds
from acksim.report.tables import summarise_example, verdict
from acksim.judges.series import attempt_spans
from acksim.judges.slo import slo_section

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
PLOT_NAMES = ["end_to_end_ecdf.png", "queue_depth.png", "recovery_time.png", "throughput.png",
              "worker_timeline.png"]
FILES = ["events.csv", *(f"plots/{name}" for name in PLOT_NAMES), "report.html", "report.md",
         "summary.json"]


def small_history() -> list[Record]:
    """Two jobs due at t=0: message 1 goes straight through on worker-0; worker-1 crashes
    holding message 2, which is redelivered to worker-0 after its visibility timeout."""
    R = Record
    return [
        R(0.0, 0, "published", "queue", message_id=1, account_id="a1", cleanup_version=1,
          deadline=0.0, visible_at=0.0),
        R(0.0, 1, "published", "queue", message_id=2, account_id="a2", cleanup_version=1,
          deadline=0.0, visible_at=0.0),
        R(1.0, 2, "delivered", "worker-0", message_id=1, receive_count=1),
        R(1.5, 3, "delivered", "worker-1", message_id=2, receive_count=1),
        R(3.0, 4, "cleanup_applied", "worker-0", message_id=1, account_id="a1",
          cleanup_version=1, deadline=0.0),
        R(3.5, 5, "crashed", "worker-1", message_id=2, detail="before_commit"),
        R(4.0, 6, "acked", "worker-0", message_id=1, receive_count=1),
        R(4.5, 7, "restarted", "worker-1"),
        R(31.5, 8, "visibility_expired", "queue", message_id=2),
        R(32.0, 9, "delivered", "worker-0", message_id=2, receive_count=2),
        R(34.0, 10, "cleanup_applied", "worker-0", message_id=2, account_id="a2",
          cleanup_version=1, deadline=0.0),
        R(35.0, 11, "acked", "worker-0", message_id=2, receive_count=2),
    ]


def make_summary(history, *, holds=True, thresholds=None) -> dict:
    thresholds = {"recovery_time_p99_s": 120.0, "end_to_end_p99_s": 60.0} if thresholds is None else thresholds
    example = None if holds else {"account_id": "a2", "cleanup_version": 1, "time": 34.0,
                                  "note": "applied | twice"}
    return {
        "scenario": "small",
        "seed": 7,
        "invariants": {
            "no_cleanup_after_renewal": {"holds": True, "violations": 0, "example": None},
            "at_most_once_effect": {"holds": holds, "violations": 0 if holds else 2, "example": example},
        },
        "slo": slo_section(history, thresholds),
        "counts": {"jobs": 2, "deliveries": 3, "crashes": 1},
    }


@pytest.fixture
def history():
    return small_history()


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """One report of ``small_history``, shared by the tests that only read it."""
    history = small_history()
    summary = make_summary(history)
    out = tmp_path_factory.mktemp("report") / "out"
    return out, summary, write_report(out, summary, history, title="Small run")


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == PNG_SIGNATURE and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


# --- write_report: files ---------------------------------------------------------------------

def test_returns_every_written_path_sorted(report):
    out, _summary, paths = report
    assert paths == [out / name for name in FILES]
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()) == [".acksim-report", *FILES]
    marker = json.loads((out / ".acksim-report").read_text())
    assert marker == {"tool": "acksim", "kind": "run", "version": acksim.__version__, "files": FILES}


def test_leaves_no_scratch_folder_and_a_readable_report(report):
    out, _summary, _paths = report
    assert [p.name for p in out.parent.iterdir()] == ["out"]
    assert out.stat().st_mode & 0o755 == 0o755


def test_summary_json_round_trips_and_is_indented(report):
    out, summary, _paths = report
    text = (out / "summary.json").read_text()
    assert json.loads(text) == summary
    assert text == json.dumps(summary, indent=2) + "\n"
    assert list(json.loads(text)) == ["scenario", "seed", "invariants", "slo", "counts"]  # as given: no verdict added
    assert json.loads(text)["slo"]["recovery_time_max_s"]["value"] == 31.5


def test_markdown_has_verdict_tables_and_figure_values(report):
    out, _summary, _paths = report
    md = (out / "report.md").read_text()
    assert md.startswith("# Small run\n")
    assert "**Verdict: PASS: every invariant holds and every SLO threshold is met**" in md
    # recovery of message 2: crash at 3.5 s, ack at 35.0 s; end to end: 3.0 s and 34.0 s
    assert "| recovery_time_p99_s | 31.5 s | 1 | <= 120.0 s | yes |" in md
    assert "| recovery_time_max_s | 31.5 s | 1 | — | — |" in md
    assert "| end_to_end_p50_s | 18.5 s | 2 | — | — |" in md
    assert "| end_to_end_p99_s | 33.7 s | 2 | <= 60.0 s | yes |" in md
    assert "| throughput_per_s | 0.0588 /s | 2 | — | — |" in md  # 2 acks over 34 s
    assert "| redeliveries | 1 | 2 | — | — |" in md
    assert "| dead_lettered_share | 0 | 2 | <= 0.5 | yes |" in md  # the default threshold
    assert "| at_most_once_effect | yes | 0 | — |" in md
    assert "| crashes | 1 |" in md
    for name in PLOT_NAMES:
        assert f"(plots/{name})" in md


def test_failing_run_says_what_failed(tmp_path, history):
    summary = make_summary(history, holds=False, thresholds={"recovery_time_p99_s": 10.0})
    write_report(tmp_path / "out", summary, history, title="Broken")
    md = (tmp_path / "out" / "report.md").read_text()
    assert ("**Verdict: FAIL: invariants violated: at_most_once_effect (2); "
            "SLOs missed: recovery_time_p99_s (31.5 s vs threshold <= 10.0 s)**") in md
    assert "| at_most_once_effect | no | 2 | account a2 v1, at 34 s, note applied \\| twice |" in md
    html = (tmp_path / "out" / "report.html").read_text()
    assert 'class="verdict fail"' in html and "Verdict: PASS" not in html


def test_html_is_self_contained_escaped_and_embeds_the_plots(tmp_path, history):
    out = tmp_path / "out"
    write_report(out, make_summary(history), history, title="<script>alert(1)</script> & co")
    html = (out / "report.html").read_text()
    assert "http://" not in html and "https://" not in html
    assert re.findall(r'(?:src|href)="(?!data:image/png;base64,)', html) == []
    assert "<script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt; &amp; co" in html
    embedded = re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', html)
    on_disk = [(out / "plots" / name).read_bytes() for name, _c, _r in acksim.report.PLOTS]
    assert [base64.b64decode(e) for e in embedded] == on_disk
    assert "<td>31.5 s</td>" in html and 'class="verdict pass"' in html


def test_plots_are_pngs_of_fixed_size(report):
    out, _summary, _paths = report
    for name in PLOT_NAMES:
        data = (out / "plots" / name).read_bytes()
        expected = (1000, 600) if name == "worker_timeline.png" else (1000, 400)
        assert len(data) > 1000 and png_size(data) == expected
        assert b"Matplotlib" not in data  # no Software metadata


def test_events_csv_reads_back(report, history):
    out, _summary, _paths = report
    frame = pd.read_csv(out / "events.csv")
    assert list(frame.columns) == list(COLUMNS)
    assert len(frame) == len(history)
    assert frame["kind"].tolist() == [r.kind for r in history]
    assert frame["receive_count"].sum() == 1 + 1 + 2 + 1 + 2
    assert frame.loc[5, "detail"] == "before_commit"


def test_writing_twice_gives_identical_bytes(tmp_path, history):
    summary = make_summary(history)
    first = write_report(tmp_path / "a", summary, history, title="Small run")
    second = write_report(tmp_path / "b", summary, history, title="Small run")
    for a, b in zip(first, second):
        assert a.read_bytes() == b.read_bytes(), a.name


def test_replaces_an_existing_report(tmp_path, history):
    out = tmp_path / "out"
    write_report(out, make_summary(history), history, title="Small run")
    (out / "plots" / "counterexample.png").write_bytes(b"an earlier report's plot")
    marker = json.loads((out / ".acksim-report").read_text())
    marker["files"].append("plots/counterexample.png")  # as an earlier replay's report listed it
    (out / ".acksim-report").write_text(json.dumps(marker))
    paths = write_report(out, make_summary(history), history, title="Small run")
    assert not (out / "plots" / "counterexample.png").exists()
    assert all(p.is_file() for p in paths)
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


def test_never_replaces_a_folder_holding_a_file_acksim_did_not_write(tmp_path, history):
    out = tmp_path / "out"
    write_report(out, make_summary(history), history, title="Small run")
    (out / "notes.txt").write_text("mine")
    (out / "plots" / "mine.png").write_bytes(b"mine too")
    with pytest.raises(UsageError, match=r"holds files acksim did not write \(notes.txt, plots/mine.png\)"):
        write_report(out, make_summary(history), history, title="Small run")
    assert (out / "notes.txt").read_text() == "mine" and (out / "plots" / "mine.png").read_bytes() == b"mine too"
    assert (out / "summary.json").is_file() and [p.name for p in tmp_path.iterdir()] == ["out"]
    unmarked = tmp_path / "unmarked"
    unmarked.mkdir()
    (unmarked / "report.md").write_text("not acksim's: no marker, no summary.json")
    with pytest.raises(UsageError, match="holds no acksim report"):
        write_report(unmarked, make_summary(history), history, title="Small run")
    assert (unmarked / "report.md").is_file()


def test_an_unmarked_report_from_before_the_marker_is_replaced_but_not_a_foreign_file_in_it(tmp_path, history):
    out = tmp_path / "out"
    out.mkdir()
    (out / "plots").mkdir()
    for name in ("summary.json", "report.md", "report.html", "events.csv", "plots/throughput.png"):
        (out / name).write_text("old")
    write_report(out, make_summary(history), history, title="Small run")
    assert (out / ".acksim-report").is_file() and (out / "summary.json").read_text() != "old"
    (out / ".acksim-report").unlink()
    (out / "data.csv").write_text("mine")
    with pytest.raises(UsageError, match=r"did not write \(data.csv\)"):
        write_report(out, make_summary(history), history, title="Small run")


def test_a_file_added_while_the_run_ran_is_kept(tmp_path, history, monkeypatch):
    out = tmp_path / "out"
    write_report(out, make_summary(history), history, title="Small run")
    real = acksim.report.refuse_replacing
    monkeypatch.setattr(acksim.report, "refuse_replacing",
                        lambda folder, flag="--out": (real(folder, flag), (folder / "late.txt").write_text("late")))
    write_report(out, make_summary(history), history, title="Small run")
    left = [p for p in tmp_path.iterdir() if p.name != "out"]
    assert len(left) == 1 and left[0].name.startswith(".out.old-") and (left[0] / "late.txt").read_text() == "late"
    assert [p.name for p in left[0].iterdir()] == ["late.txt"]


def test_creates_missing_parent_folders(tmp_path, history):
    paths = write_report(tmp_path / "a" / "b" / "out", make_summary(history), history, title="T")
    assert paths[0] == tmp_path / "a" / "b" / "out" / "events.csv" and paths[0].is_file()


# --- write_report: failures leave nothing half written -------------------------------------

def _boom(*_args, **_kwargs):
    raise RuntimeError("renderer failed")


@pytest.mark.parametrize("previous", [False, True])
def test_a_failing_renderer_leaves_no_trace(tmp_path, history, monkeypatch, previous):
    out = tmp_path / "out"
    if previous:
        out.mkdir()
        (out / "report.md").write_text("previous report")
    monkeypatch.setattr(acksim.report, "render_html", _boom)
    with pytest.raises(RuntimeError, match="renderer failed"):
        write_report(out, make_summary(history), history, title="Small run")
    if previous:
        assert [p.name for p in out.iterdir()] == ["report.md"]
        assert (out / "report.md").read_text() == "previous report"
    assert [p.name for p in tmp_path.iterdir()] == (["out"] if previous else [])


def test_a_failing_plot_leaves_the_previous_report(tmp_path, history, monkeypatch):
    out = tmp_path / "out"
    write_report(out, make_summary(history), history, title="First")
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    plots = list(acksim.report.plots.PLOTS)
    plots[-1] = (plots[-1][0], plots[-1][1], _boom)
    monkeypatch.setattr(acksim.report.plots, "PLOTS", tuple(plots))
    with pytest.raises(RuntimeError):
        write_report(out, make_summary(history), history, title="Second")
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


def test_a_failing_final_rename_restores_the_previous_report(tmp_path, history, monkeypatch):
    out = tmp_path / "out"
    write_report(out, make_summary(history), history, title="Small run")
    (out / "report.md").write_text("previous report")
    real_rename = acksim.report.os.rename

    def rename(src, dst):
        if Path(dst) == out and Path(src).name.startswith(".out.tmp-"):
            raise OSError("disk trouble")
        real_rename(src, dst)

    monkeypatch.setattr(acksim.report.os, "rename", rename)
    with pytest.raises(OSError, match="disk trouble"):
        write_report(out, make_summary(history), history, title="Small run")
    assert (out / "report.md").read_text() == "previous report"
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


def test_a_malformed_summary_is_refused_before_anything_is_written(tmp_path, history):
    summary = make_summary(history)
    del summary["counts"]
    with pytest.raises(ValueError, match="counts"):
        write_report(tmp_path / "out", summary, history, title="T")
    assert list(tmp_path.iterdir()) == []


def test_an_existing_file_is_not_a_report_folder(tmp_path, history):
    (tmp_path / "out").write_text("a file")
    with pytest.raises(NotADirectoryError):
        write_report(tmp_path / "out", make_summary(history), history, title="T")
    assert (tmp_path / "out").read_text() == "a file"


# --- empty history ----------------------------------------------------------------------------

def test_empty_history_renders(tmp_path):
    summary = make_summary([], thresholds={})
    paths = write_report(tmp_path / "out", summary, [], title="Nothing happened")
    assert [p.relative_to(tmp_path / "out").as_posix() for p in paths] == FILES
    assert (tmp_path / "out" / "events.csv").read_text() == ",".join(COLUMNS) + "\n"
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["slo"]["end_to_end_p50_s"] == {
        "value": None, "threshold": None, "met": None, "n": 0, "censored": 0}
    md = (tmp_path / "out" / "report.md").read_text()
    assert "| end_to_end_p50_s | no sample | 0 | — | — |" in md
    # nothing ran: the default dead_lettered_share threshold has no sample, so the run fails
    assert "| dead_lettered_share | no sample | 0 | <= 0.5 | no (no sample) |" in md
    assert "**Verdict: FAIL: no sample: dead_lettered_share (no sample, threshold <= 0.5)**" in md
    for name in PLOT_NAMES:
        assert png_size((tmp_path / "out" / "plots" / name).read_bytes())[0] == 1000


def test_empty_plots_differ_from_drawn_ones(history):
    for _name, _caption, render in acksim.report.PLOTS:
        assert render([]) != render(history)


# --- summary.json -----------------------------------------------------------------------------

def test_nan_becomes_null_and_infinity_is_refused(history):
    summary = make_summary(history)
    summary["slo"]["end_to_end_p50_s"]["value"] = math.nan
    assert json.loads(render_summary_json(summary))["slo"]["end_to_end_p50_s"]["value"] is None
    assert "NaN" not in render_summary_json(summary)
    summary["slo"]["end_to_end_p50_s"]["value"] = math.inf
    with pytest.raises(ValueError, match="infinite"):
        render_summary_json(summary)


def test_numpy_scalars_are_written_as_plain_numbers(history):
    import numpy as np

    summary = make_summary(history)
    summary["counts"]["jobs"] = np.int64(2)
    summary["invariants"]["at_most_once_effect"]["holds"] = np.bool_(True)
    text = render_summary_json(summary)
    assert '"jobs": 2' in text and '"holds": true' in text


# --- tables -----------------------------------------------------------------------------------

def test_formatting_of_figures():
    assert format_seconds(0.25) == "0.25 s"
    assert format_seconds(42.0) == "42.0 s"
    assert format_seconds(750.0) == "750 s (12.5 min)"
    assert format_seconds(7200.0) == "7200 s (2.00 h)"
    assert format_figure("queue_depth_max", 12.0) == "12"
    assert format_figure("retries_p99", 2.97) == "2.97"
    assert format_figure("throughput_per_s", 12.3456) == "12.3 /s"
    assert format_figure("end_to_end_p99_s", None) == "—"
    assert format_figure("end_to_end_p99_s", math.nan) == "—"


def test_counterexample_summary_is_one_bounded_sentence():
    assert summarise_example(None) == "—"
    assert summarise_example({"phase": "after\ncommit", "n": 3}) == "phase after commit, n 3"
    long = summarise_example({"detail": "x" * 500})
    assert len(long) == 300 and long.endswith("…")
    example = {"time": 10.003683734515988, "seq": 6, "kind": "cleanup_applied", "actor": "worker-1",
               "message_id": 1, "account_id": "a1", "cleanup_version": 1,
               "why": "cleanup committed while stale: renewed"}
    assert summarise_example(example) == ("cleanup committed while stale: renewed (account a1 v1, message 1, "
                                          "cleanup_applied by worker-1 at 10.004 s)")
    assert summarise_example({"account_id": "a1", "cleanup_version": 1, "deadline_s": 10.0,
                              "why": "message 1 still in flight at the end"}) == \
        "message 1 still in flight at the end (account a1 v1, deadline 10 s)"


def test_verdict_ignores_unset_thresholds_but_not_missed_ones():
    base = {"invariants": {"i": {"holds": True, "violations": 0, "example": None}},
            "slo": {"end_to_end_p99_s": {"value": 5.0, "threshold": None, "met": None}}}
    assert verdict(base)[0] is True
    base["slo"]["end_to_end_p99_s"] = {"value": 5.0, "threshold": 1.0, "met": False}
    assert verdict(base) == (False, "FAIL: SLOs missed: end_to_end_p99_s (5 s vs threshold <= 1 s)")
    base["slo"]["end_to_end_p99_s"] = {"value": None, "n": 0, "threshold": 1.0, "met": False}
    assert verdict(base) == (False, "FAIL: no sample: end_to_end_p99_s (no sample, threshold <= 1 s)")


# --- worker timeline --------------------------------------------------------------------------

def test_window_centres_a_crash_and_its_redelivery():
    crashes = [(1000.0, 7), (5000.0, 9)]
    redeliveries = [(1010.0, 3), (1300.0, 7), (5030.0, 9)]
    assert choose_window(crashes, redeliveries, [], 0.0, 10_000.0) == (850.0, 1450.0)


def test_window_falls_back_to_any_nearby_redelivery_then_first_crash():
    assert choose_window([(1000.0, 7)], [(1100.0, 8)], [], 0.0, 10_000.0) == (750.0, 1350.0)
    assert choose_window([(1000.0, 7)], [(9000.0, 7)], [], 0.0, 10_000.0) == (940.0, 1540.0)
    assert choose_window([], [(2000.0, 1)], [], 0.0, 10_000.0) == (1940.0, 2540.0)


def test_window_without_crashes_is_the_busiest_and_stays_inside_the_run():
    starts = [10.0, 3000.0, 3100.0, 3200.0, 9990.0]
    assert choose_window([], [], starts, 0.0, 10_000.0) == (3000.0, 3600.0)
    assert choose_window([(9950.0, 1)], [], [], 0.0, 10_000.0) == (9400.0, 10_000.0)
    assert choose_window([], [], [5.0], 0.0, 35.0) == (0.0, 35.0)
    with pytest.raises(ValueError):
        choose_window([], [], [], 0.0, 10.0, width=0)


def test_lanes_prefer_crashed_then_redelivered_then_busy_workers_in_natural_order():
    spans = pd.DataFrame({"worker": [f"worker-{i}" for i in range(20) for _ in range(i + 1)]})
    crashes = [(1.0, 1, "worker-3"), (2.0, 2, "worker-0")]
    redeliveries = [(3.0, 1, "worker-1")]
    lanes, total = choose_lanes(spans, crashes, redeliveries, max_lanes=5)
    assert total == 20
    assert lanes == ["worker-0", "worker-1", "worker-3", "worker-18", "worker-19"]
    assert sorted(["worker-10", "worker-2"], key=natural_key) == ["worker-2", "worker-10"]
    assert clock(3725.4) == "1:02:05" and clock(-60) == "-0:01:00"


def test_timeline_renders_many_workers_and_spans_from_the_series(history):
    spans = attempt_spans(history)
    assert spans[["worker", "outcome"]].values.tolist() == [
        ["worker-1", "crashed"], ["worker-0", "acked"], ["worker-0", "acked"]]
    many = []
    for w in range(40):
        many += [Record(10.0 * w, 2 * w, "delivered", f"worker-{w}", message_id=w, receive_count=2),
                 Record(10.0 * w + 5, 2 * w + 1, "crashed", f"worker-{w}", message_id=w)]
    png = plot_worker_timeline(many)
    assert png_size(png) == (1000, 600)
    assert png != plot_worker_timeline(many[:2])


def test_recovery_histogram_of_nearly_equal_times(monkeypatch):
    import pandas as pd

    import acksim.report.plots.recovery as recovery

    # times a nanosecond apart once raised "Too many bins for data range" (exit 3)
    monkeypatch.setattr(recovery, "recovery_times", lambda _h: pd.Series([1e6, 1e6 + 1e-9, 1e6]))
    assert recovery.plot_recovery_times([])[:8] == b"\x89PNG\r\n\x1a\n"


# --- a replay's report: the verdict, the timeline, the zoomed counterexample ------------------

def _replay_history() -> list[Record]:
    return [Record(0.0, 0, "published", "queue", message_id=1, account_id="a1", cleanup_version=1, deadline=10.0,
                   visible_at=10.0),
            Record(10.0, 1, "delivered", "worker-1", message_id=1, account_id="a1", cleanup_version=1, receive_count=1),
            Record(10.002, 2, "renewed", "renewals", account_id="a1", cleanup_version=1),
            Record(10.007, 3, "cleanup_applied", "worker-1", message_id=1, account_id="a1", cleanup_version=1),
            Record(10.009, 4, "acked", "worker-1", message_id=1, account_id="a1", cleanup_version=1),
            Record(120.0, 5, "published", "queue", message_id=2, account_id="a1", cleanup_version=2, deadline=130.0,
                   visible_at=130.0),
            Record(130.0, 6, "delivered", "worker-1", message_id=2, account_id="a1", cleanup_version=2,
                   receive_count=1)]


def test_the_counterexample_zooms_from_the_delivery_to_the_ack_after_the_violation():
    from acksim.report.plots.counterexample import focus_span

    example = {"time": 10.007, "message_id": 1, "account_id": "a1", "cleanup_version": 1}
    assert focus_span(_replay_history(), [example]) == (10.0, 10.009)
    assert focus_span(_replay_history(), []) is None
    errors = [*_replay_history(), Record(130.5, 7, "processor_error", "worker-1", message_id=2)]
    assert focus_span(errors, []) == (130.0, 130.5)


def test_a_replays_report_carries_the_verdict_and_the_timeline(tmp_path):
    history = _replay_history()
    summary = make_summary(history)
    lines = ["replay: reproduced (no violation; same history, record for record)",
             "     10.0000s  worker-1       delivered          msg 1 a1 v1 receive 1"]
    write_report(tmp_path / "r", summary, history, title="T", full_timeline=True, replay=lines, kind="replay")
    md = (tmp_path / "r" / "report.md").read_text()
    assert md.endswith("\n## Replay\n\nreplay: reproduced (no violation; same history, record for record)\n\n```\n"
                       "     10.0000s  worker-1       delivered          msg 1 a1 v1 receive 1\n```\n")
    page = (tmp_path / "r" / "report.html").read_text()
    assert "<h2>Replay</h2>\n<p>replay: reproduced (no violation; same history, record for record)</p>" in page
    assert page.index("<h2>Replay</h2>") < page.index("</body>")
    assert json.loads((tmp_path / "r" / ".acksim-report").read_text())["kind"] == "replay"
    assert (tmp_path / "r" / "plots" / "counterexample.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_every_count_of_a_real_run_says_what_it_counts():
    from acksim.report.tables import count_rows

    counts = {"jobs": 3, "conflicts": 7, "crashes_after_commit": 1, "no_op_renewed": 2, "something_new": 5}
    rows = count_rows({"counts": counts})
    assert rows[0] == ("jobs", "3", "messages the scheduler published (a term roll-over or an extension "
                                    "publishes another)")
    assert rows[2] == ("crashes_after_commit", "1", "crashes in phase after_commit")
    assert rows[3] == ("no_op_renewed", "2", "attempts that committed nothing, harmlessly: renewed")
    assert rows[4] == ("something_new", "5", "")


def test_a_window_is_cut_to_its_first_and_last_event():
    from acksim.report.plots.timeline_window import trimmed

    # the first deadline at 3000 s: no empty stretch before it, nor after the last start
    assert trimmed(2700.0, 3300.0, [], [], [3000.0, 3100.0, 3200.0]) == (2982.0, 3218.0)
    assert trimmed(2700.0, 3300.0, [(2800.0, 1)], [(3290.0, 1)], [3000.0]) == (2782.0, 3300.0)
    assert trimmed(0.0, 600.0, [], [], []) == (0.0, 600.0)  # nothing in it: as it was
    assert trimmed(0.0, 600.0, [], [], [300.0]) == (282.0, 318.0)  # one instant, with its margin
    assert trimmed(0.0, 10.0, [], [], [5.0]) == (0.0, 10.0)  # under a second left: as it was
