"""SLO figures and series computed from a small hand-made history with known answers."""

import pytest

from acksim.history import Record
from acksim.judges.series import attempt_spans, message_ages, queue_series, recovery_times, throughput_series
from acksim.judges.slo import FIGURES, evaluate, figures


def h(*rows):
    return [Record(t, i, kind, actor, message_id=mid, receive_count=rc, deadline=dl, visible_at=va, detail=d)
            for i, (t, kind, actor, mid, rc, dl, va, d) in enumerate(rows)]


# two messages: 1 is processed at once; 2 crashes after commit and is redelivered at 160
HISTORY = h(
    (0.0, "published", "scheduler", 1, None, 100.0, 100.0, ""),
    (0.0, "published", "scheduler", 2, None, 100.0, 100.0, ""),
    (100.0, "delivered", "w1", 1, 1, 100.0, None, ""),
    (100.0, "delivered", "w2", 2, 1, 100.0, None, ""),
    (105.0, "cleanup_applied", "w1", 1, 1, 100.0, None, ""),
    (105.0, "acked", "w1", 1, 1, 100.0, None, ""),
    (106.0, "cleanup_applied", "w2", 2, 1, 100.0, None, ""),
    (106.0, "crashed", "w2", 2, 1, None, None, "after_commit"),
    (160.0, "visibility_expired", "queue", 2, 1, 100.0, None, ""),
    (160.0, "delivered", "w1", 2, 2, 100.0, None, ""),
    (163.0, "acked", "w1", 2, 2, 100.0, None, ""),
)


def test_figures_of_a_known_history():
    f = figures(HISTORY)
    assert set(f) == set(FIGURES)
    assert f["throughput_per_s"] == pytest.approx(2 / 63.0)
    assert f["end_to_end_p50_s"] == pytest.approx(5.5)
    assert f["end_to_end_p99_s"] == pytest.approx(5.99)
    assert f["recovery_time_max_s"] == 57.0 and f["recovery_time_p50_s"] == 57.0
    assert f["queue_depth_max"] == 0.0  # every message was received the instant it became visible
    assert f["oldest_message_age_max_s"] == 63.0
    assert (f["redeliveries"], f["dead_lettered"]) == (1.0, 0.0)
    assert f["retries_p99"] == pytest.approx(1.99)


def test_series_of_a_known_history():
    q = queue_series(HISTORY)
    assert list(q.itertuples(index=False, name=None)) == [
        (0.0, 0, 0), (100.0, 0, 2), (105.0, 0, 1), (163.0, 0, 0)]  # at 160: expired and taken again
    assert recovery_times(HISTORY).to_dict() == {2: 57.0}
    assert message_ages(HISTORY).to_dict() == {1: 5.0, 2: 63.0}
    spans = attempt_spans(HISTORY)
    assert list(spans.itertuples(index=False, name=None)) == [
        ("w1", 1, 100.0, 105.0, "acked"), ("w2", 2, 100.0, 106.0, "crashed"), ("w1", 2, 160.0, 163.0, "acked")]
    tp = throughput_series(HISTORY, bin_s=60.0)
    assert list(tp.itertuples(index=False, name=None)) == [(60.0, 1 / 60), (120.0, 1 / 60)]


def test_queue_depth_counts_backlog_and_excludes_delayed_and_nacked_messages():
    hist = h(
        (0.0, "published", "scheduler", 1, None, 10.0, 10.0, ""),    # delayed until 10
        (0.0, "published", "scheduler", 2, None, 10.0, 10.0, ""),
        (10.0, "delivered", "w1", 1, 1, 10.0, None, ""),             # 2 waits: backlog of 1
        (12.0, "nacked", "w1", 1, 1, 10.0, 20.0, ""),                # 1 is invisible until 20
        (12.0, "delivered", "w1", 2, 1, 10.0, None, ""),
        (13.0, "acked", "w1", 2, 1, 10.0, None, ""),
        (20.0, "delivered", "w1", 1, 2, 10.0, None, ""),
        (21.0, "acked", "w1", 1, 2, 10.0, None, ""),
        (22.0, "dead_lettered", "queue", 3, 5, 10.0, None, ""),
    )
    q = queue_series(hist)
    assert list(q.itertuples(index=False, name=None)) == [
        (0.0, 0, 0), (10.0, 1, 1), (12.0, 0, 1), (13.0, 0, 0), (20.0, 0, 1), (21.0, 0, 0)]
    assert figures(hist)["queue_depth_max"] == 1.0
    assert figures(hist)["retries_p99"] == pytest.approx(4.94)  # receive counts 1, 2 and 5 (dead-lettered)


def test_thresholds_upper_and_lower_bounds():
    f = figures(HISTORY)
    slo = evaluate(f, {"recovery_time_p99_s": 50.0, "end_to_end_p99_s": 10.0, "throughput_per_s": 1.0})
    assert slo["recovery_time_p99_s"] == {"value": 57.0, "n": 1, "censored": 0, "threshold": 50.0, "met": False}
    assert slo["end_to_end_p99_s"]["met"] is True
    assert slo["throughput_per_s"]["met"] is False  # a lower bound
    assert slo["queue_depth_max"]["met"] is None
    with pytest.raises(KeyError, match="no SLO figure named 'latency'"):
        evaluate(f, {"latency": 1.0})


def test_figures_without_samples_are_none_and_miss_their_thresholds():
    f = figures([])
    assert f["recovery_time_p99_s"] is None and f["throughput_per_s"] is None
    slo = evaluate(f, {"recovery_time_p99_s": 1.0, "throughput_per_s": 1.0})
    assert slo["recovery_time_p99_s"]["met"] is False and slo["throughput_per_s"]["met"] is False
    assert slo["recovery_time_p99_s"]["n"] == 0
