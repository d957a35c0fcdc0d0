"""A violation reads as one sentence: the reason first, then where, times to the millisecond."""

from acksim.judges.violation_text import seconds_text, violation_sentence


def test_seconds_read_to_the_millisecond():
    assert [seconds_text(v) for v in (10.003683734515988, 15.0, 0.0004, 150.008, -0.0001)] == \
        ["10.004 s", "15 s", "0 s", "150.008 s", "0 s"]


def test_a_violation_is_its_reason_then_its_place():
    assert violation_sentence({"time": 15.000918928082045, "seq": 11, "kind": "outbox_added", "actor": "worker-1",
                               "message_id": 1, "account_id": "a1", "cleanup_version": 1,
                               "why": "second outbox effect for the same key"}) == \
        "second outbox effect for the same key (account a1 v1, message 1, outbox_added by worker-1 at 15.001 s)"
    assert violation_sentence({"account_id": "a1", "cleanup_version": 1,
                               "why": "outbox event committed without its cleanup"}) == \
        "outbox event committed without its cleanup (account a1 v1)"
    assert violation_sentence({"why": "a reason\n  on two lines"}) == "a reason on two lines"
    assert violation_sentence({"account_id": "a2"}) == "account a2"
    assert violation_sentence({}) == "—" and violation_sentence(None) == "—"


def test_a_figure_that_missed_its_threshold_never_reads_as_equal_to_it():
    from acksim.judges.figure_text import format_against

    assert format_against("recovery_time_p99_s", 150.008, 150.0) == ("150.01 s", "150.00 s")
    assert format_against("recovery_time_p99_s", 150.0004, 150.0) == ("150.0004 s", "150.0000 s")
    assert format_against("recovery_time_p99_s", 31.5, 10.0) == ("31.5 s", "10.0 s")
    assert format_against("recovery_time_p99_s", 150.0, 150.0) == ("150.0 s", "150.0 s")
    assert format_against("throughput_per_s", 99.96, 100.0) == ("99.96 /s", "100.00 /s")
    assert format_against("queue_depth_max", 7, None) == ("7", "—")
    assert format_against("end_to_end_p99_s", 7200.4, 7200.0) == ("7200.4 s", "7200.0 s")


def test_the_verdict_shows_the_digits_that_make_a_miss():
    from acksim.judges.summary import judge

    summary = {"invariants": {}, "counts": {},
               "slo": {"recovery_time_p99_s": {"value": 150.008, "n": 40, "threshold": 150.0, "met": False}}}
    verdict, reasons = judge(summary)
    assert verdict == "FAIL" and reasons[0]["text"] == "recovery_time_p99_s (150.01 s vs threshold <= 150.00 s)"
