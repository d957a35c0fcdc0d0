"""Each invariant fires on a hand-made violating history and stays quiet on a correct one."""

from datetime import datetime, timezone

import pytest

from acksim.model.job import Account
from acksim.model.store_api import OutboxEvent
from acksim.history import Record
from acksim.judges.invariants import (INVARIANTS, ack_after_durable, at_most_once_effect, check_all,
                            effect_with_outbox, no_cleanup_after_renewal, no_lost_work)
from acksim.outcome import FinalState

A = "acct-1"
T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


def history(*rows):
    """Records from (time, kind, **fields) rows, numbered in order."""
    return [Record(t, i, kind, fields.pop("actor", "w"), **fields) for i, (t, kind, fields) in enumerate(rows)]


def created(t=0.0, v=1, deadline=100.0, kind="account_created"):
    return (t, kind, dict(account_id=A, cleanup_version=v, deadline=deadline))


def applied(t, v=1, mid=1):
    return (t, "cleanup_applied", dict(account_id=A, cleanup_version=v, message_id=mid, deadline=100.0))


def outbox(t, v=1, mid=1):
    return (t, "outbox_added", dict(account_id=A, cleanup_version=v, message_id=mid,
                                    detail=f"renewal-reminder:{A}:{v}"))


def acked(t, v=1, mid=1):
    return (t, "acked", dict(account_id=A, cleanup_version=v, message_id=mid, receive_count=1))


def final(markers=((A, 1),), events=((A, 1),), accounts=None, end=1000.0, dlq=(), in_flight=()):
    if accounts is None:
        accounts = (Account(A, 1, False, T0),)
    evs = tuple(OutboxEvent(i, f"renewal-reminder:{a}:{v}", a, v, "sent") for i, (a, v) in enumerate(events))
    return FinalState(tuple(accounts), tuple(markers), evs, tuple(dlq), tuple(in_flight), end)


GOOD = history(created(), applied(105.0), outbox(105.0), acked(105.0))


def test_every_invariant_holds_on_a_correct_history():
    verdicts = check_all(GOOD, final())
    assert verdicts == {name: {"holds": True, "violations": 0, "example": None} for name, _ in INVARIANTS}


def test_no_cleanup_after_renewal_fires_on_a_cleanup_of_a_renewed_account():
    h = history(created(), created(50.0, kind="renewed"), applied(105.0), outbox(105.0), acked(105.0))
    found = no_cleanup_after_renewal(h, final())
    assert [(f["seq"], f["why"]) for f in found] == [(2, "cleanup committed while stale: renewed")]


def test_no_cleanup_after_renewal_fires_on_a_cleanup_of_an_old_version():
    h = history(created(), created(50.0, v=2, deadline=500.0, kind="extended"), applied(105.0))
    assert [f["why"] for f in no_cleanup_after_renewal(h, final())] == ["cleanup committed while stale: version is 2"]


def test_no_cleanup_after_renewal_fires_on_a_cleanup_of_a_deleted_account():
    h = history(created(), (50.0, "account_deleted", dict(account_id=A)), applied(105.0))
    assert [f["why"] for f in no_cleanup_after_renewal(h, final())] == ["cleanup committed while stale: account gone"]


def test_at_most_once_effect_fires_on_a_second_cleanup_outbox_event_or_reminder():
    h = history(created(), applied(105.0), outbox(105.0), applied(106.0, mid=2), outbox(106.0, mid=2),
                (110.0, "reminder_sent", dict(account_id=A, cleanup_version=1, detail="k")),
                (111.0, "reminder_sent", dict(account_id=A, cleanup_version=1, detail="k")))
    found = at_most_once_effect(h, final())
    assert [(f["seq"], f["why"]) for f in found] == [
        (3, "second cleanup effect for the same key"),
        (4, "second outbox effect for the same key"),
        (6, "second reminder effect for the same key")]


def test_at_most_once_effect_fires_on_duplicate_marker_rows_in_the_final_state():
    found = at_most_once_effect(GOOD, final(markers=((A, 1), (A, 1))))
    assert found == [{"account_id": A, "cleanup_version": 1, "why": "2 marker rows in the store"}]


def test_effect_with_outbox_fires_both_ways():
    found = effect_with_outbox(GOOD, final(markers=((A, 1), ("acct-2", 1)), events=((A, 1), ("acct-3", 4))))
    assert [(f["account_id"], f["why"]) for f in found] == [
        ("acct-2", "cleanup committed without its outbox event"),
        ("acct-3", "outbox event committed without its cleanup")]


def test_ack_after_durable_fires_on_an_ack_before_the_commit():
    h = history(created(), acked(101.0), applied(105.0), outbox(105.0))
    found = ack_after_durable(h, final())
    assert [(f["seq"], f["why"]) for f in found] == [(1, "acked while the cleanup was due and not committed")]


def test_ack_after_durable_accepts_an_ack_of_a_stale_job():
    h = history(created(), created(50.0, kind="renewed"), acked(101.0))
    assert ack_after_durable(h, final(markers=(), events=())) == []


@pytest.mark.parametrize("rows, fin, why", [
    ([created()], final(markers=(), events=()), "due, never applied"),
    ([created(), (0.0, "published", dict(account_id=A, cleanup_version=1, message_id=1)),
      (60.0, "retention_expired", dict(account_id=A, cleanup_version=1, message_id=1))],
     final(markers=(), events=()), "message 1 dropped by retention"),
    ([created(), (0.0, "published", dict(account_id=A, cleanup_version=1, message_id=1)), acked(101.0)],
     final(markers=(), events=()), "message 1 acked without effect"),
    ([created(), (0.0, "published", dict(account_id=A, cleanup_version=1, message_id=1))],
     final(markers=(), events=(), in_flight=(1,)), "message 1 still in flight at the end"),
])
def test_no_lost_work_fires_on_due_work_never_applied(rows, fin, why):
    found = no_lost_work(history(*rows), fin)
    assert [(f["account_id"], f["cleanup_version"], f["why"]) for f in found] == [(A, 1, why)]


def test_no_lost_work_counts_dead_lettered_and_ignores_superseded_or_future_work():
    dlq = history(created(), (200.0, "dead_lettered", dict(account_id=A, cleanup_version=1, message_id=7)))
    assert no_lost_work(dlq, final(markers=(), events=(), dlq=(7,))) == []
    renewed = history(created(), created(50.0, kind="renewed"))
    assert no_lost_work(renewed, final(markers=(), events=(), accounts=(Account(A, 1, True, T0),))) == []
    future = history(created(deadline=5000.0))
    assert no_lost_work(future, final(markers=(), events=(), end=1000.0)) == []


def test_no_cleanup_after_renewal_fires_on_a_cleanup_before_its_deadline():
    h = history(created(deadline=100.0), applied(99.0), outbox(99.0))
    assert [f["why"] for f in no_cleanup_after_renewal(h, final())] == [
        "cleanup committed while stale: deadline not reached"]


def test_ack_after_durable_fires_on_an_ack_after_the_cleanup_but_before_its_outbox_event():
    h = history(created(), applied(105.0), acked(106.0), outbox(107.0))
    assert [f["why"] for f in ack_after_durable(h, final())] == ["acked before the outbox event committed"]


def test_account_writes_by_a_processor_are_replayed():
    # a candidate whose cleanup marks the account renewed is judged on that committed state
    h = history(created(), (101.0, "account_updated", dict(account_id=A, cleanup_version=1, deadline=100.0,
                                                           detail="renewed")), applied(105.0))
    assert [f["why"] for f in no_cleanup_after_renewal(h, final())] == ["cleanup committed while stale: renewed"]


def test_effect_with_outbox_fires_on_an_event_key_that_is_not_the_reminder_key():
    fin = final()
    wrong = FinalState(fin.accounts, fin.markers, (OutboxEvent(0, "renewal-reminder:acct-1", A, 1, "sent"),),
                       (), (), 1000.0)
    assert [f["why"] for f in effect_with_outbox(GOOD, wrong)] == [
        "cleanup committed without its outbox event",
        "outbox event key 'renewal-reminder:acct-1' is not the reminder key of its cleanup"]
