"""Exact outcomes of every store method, on both backends (one session, no concurrency)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from acksim.model.errors import StoreError, TransactionStateError
from acksim.model.job import Account
from acksim.model.store_api import DbOptions, OutboxEvent, Write

T0 = datetime(2024, 3, 1, 12, 0, tzinfo=timezone.utc)
NON_UNIQUE = DbOptions(unique_markers=False, unique_outbox_keys=False)


def acct(account_id: str, version: int = 1, renewed: bool = False, at_s: float = 0) -> Account:
    return Account(account_id, version, renewed, T0 + timedelta(seconds=at_s))


# -- accounts ----------------------------------------------------------------------------


def test_get_missing_is_none(make_db):
    s = make_db().session()
    assert s.accounts.get("nobody") is None


def test_put_get_round_trip_is_exact(make_db):
    s = make_db().session()
    account = Account("a1", 7, True, datetime(2031, 12, 31, 23, 59, 59, 999_999, timezone.utc))
    s.accounts.put(account)
    got = s.accounts.get("a1")
    assert got == account
    assert got.deadline.tzinfo is timezone.utc
    assert got.deadline.microsecond == 999_999
    assert s.take_autocommitted() == (Write("account_put", "a1", account=account),)


def test_put_converts_other_timezones_to_utc(make_db):
    s = make_db().session()
    plus2 = timezone(timedelta(hours=2))
    s.accounts.put(Account("a1", 1, False, datetime(2024, 3, 1, 14, 0, tzinfo=plus2)))
    got = s.accounts.get("a1")
    assert got.deadline == T0
    assert got.deadline.tzinfo is timezone.utc
    assert s.take_autocommitted()[0].account.deadline.tzinfo is timezone.utc


def test_put_naive_deadline_is_rejected(make_db):
    s = make_db().session()
    with pytest.raises(ValueError, match="deadline"):
        s.accounts.put(Account("a1", 1, False, datetime(2024, 1, 1)))
    assert s.accounts.get("a1") is None


def test_put_replaces_and_identical_put_logs_nothing(make_db):
    s = make_db().session()
    s.accounts.put(acct("a1", 1))
    s.accounts.put(acct("a1", 1))  # identical: no row change, no write
    s.accounts.put(acct("a1", 2, renewed=True))
    assert s.accounts.get("a1") == acct("a1", 2, renewed=True)
    assert s.take_autocommitted() == (
        Write("account_put", "a1", account=acct("a1", 1)),
        Write("account_put", "a1", account=acct("a1", 2, renewed=True)),
    )
    assert s.take_autocommitted() == ()


def test_delete(make_db):
    s = make_db().session()
    s.accounts.put(acct("a1"))
    s.take_autocommitted()
    assert s.accounts.delete("a1") is True
    assert s.accounts.delete("a1") is False
    assert s.accounts.get("a1") is None
    assert s.take_autocommitted() == (Write("account_deleted", "a1"),)


def test_all_is_ordered_by_account_id(make_db):
    s = make_db().session()
    for account in (acct("c", at_s=1), acct("a", at_s=3), acct("b", at_s=2)):
        s.accounts.put(account)
    assert s.accounts.all() == [acct("a", at_s=3), acct("b", at_s=2), acct("c", at_s=1)]


def test_due_filters_orders_and_limits(make_db):
    s = make_db().session()
    s.accounts.put(acct("late", at_s=10))  # deadline after now
    s.accounts.put(acct("renewed", renewed=True, at_s=-5))
    s.accounts.put(acct("applied", version=2, at_s=-5))
    s.accounts.put(acct("old-marker", version=3, at_s=-1))  # marker only for version 2
    s.accounts.put(acct("b", at_s=-2))
    s.accounts.put(acct("a", at_s=-2))
    s.accounts.put(acct("exact", at_s=0))  # deadline == now counts as due
    s.cleanup_store.apply_once(account_id="applied", cleanup_version=2)
    s.cleanup_store.apply_once(account_id="old-marker", cleanup_version=2)
    now = T0
    expected = [acct("a", at_s=-2), acct("b", at_s=-2), acct("old-marker", 3, at_s=-1),
                acct("exact", at_s=0)]
    assert s.accounts.due(now, 10) == expected
    assert s.accounts.due(now, 2) == expected[:2]
    assert s.accounts.due(now, 0) == []
    assert s.accounts.due(now - timedelta(seconds=3), 10) == []


def test_due_rejects_naive_now_and_negative_limit(make_db):
    s = make_db().session()
    with pytest.raises(ValueError, match="now"):
        s.accounts.due(datetime(2024, 1, 1), 1)
    with pytest.raises(ValueError, match="limit"):
        s.accounts.due(T0, -1)


# -- cleanup markers ---------------------------------------------------------------------


def test_apply_once_with_unique_markers(make_db):
    s = make_db().session()
    assert s.cleanup_store.was_applied("a1", 1) is False
    assert s.cleanup_store.apply_once(account_id="a1", cleanup_version=1) is True
    assert s.cleanup_store.apply_once(account_id="a1", cleanup_version=1) is False
    assert s.cleanup_store.was_applied("a1", 1) is True
    assert s.cleanup_store.was_applied("a1", 2) is False
    assert s.cleanup_store.markers() == [("a1", 1)]
    assert s.take_autocommitted() == (Write("cleanup_applied", "a1", 1),)


def test_apply_once_without_unique_markers_duplicates(make_db):
    s = make_db(NON_UNIQUE).session()
    assert s.cleanup_store.apply_once(account_id="a1", cleanup_version=1) is True
    assert s.cleanup_store.apply_once(account_id="a1", cleanup_version=1) is True
    assert s.cleanup_store.markers() == [("a1", 1), ("a1", 1)]
    assert s.take_autocommitted() == (Write("cleanup_applied", "a1", 1),) * 2


def test_markers_are_sorted(make_db):
    s = make_db().session()
    for account_id, version in (("b", 1), ("a", 2), ("a", 10), ("a", 1)):
        s.cleanup_store.apply_once(account_id=account_id, cleanup_version=version)
    assert s.cleanup_store.markers() == [("a", 1), ("a", 2), ("a", 10), ("b", 1)]


# -- outbox ------------------------------------------------------------------------------


def test_add_once_with_unique_keys(make_db):
    s = make_db().session()
    assert s.outbox.add_once(event_key="k1", account_id="a1", cleanup_version=1) is True
    assert s.outbox.add_once(event_key="k1", account_id="a1", cleanup_version=1) is False
    assert s.outbox.add_once(event_key="k2", account_id="a2", cleanup_version=4) is True
    assert s.outbox.events() == [OutboxEvent(1, "k1", "a1", 1, "pending"),
                                 OutboxEvent(2, "k2", "a2", 4, "pending")]
    assert s.take_autocommitted() == (Write("outbox_added", "a1", 1, "k1"),
                                      Write("outbox_added", "a2", 4, "k2"))


def test_add_once_without_unique_keys_duplicates(make_db):
    s = make_db(NON_UNIQUE).session()
    assert s.outbox.add_once(event_key="k1", account_id="a1", cleanup_version=1) is True
    assert s.outbox.add_once(event_key="k1", account_id="a1", cleanup_version=1) is True
    assert [e.seq for e in s.outbox.events()] == [1, 2]
    s.take_autocommitted()
    s.outbox.mark_sent("k1")  # updates both rows
    assert [e.status for e in s.outbox.events()] == ["sent", "sent"]
    assert s.take_autocommitted() == (Write("outbox_sent", "a1", 1, "k1"),) * 2


def test_pending_mark_sent_and_failed(make_db):
    s = make_db().session()
    for i in (1, 2, 3):
        s.outbox.add_once(event_key=f"k{i}", account_id=f"a{i}", cleanup_version=i)
    s.take_autocommitted()
    assert [e.event_key for e in s.outbox.pending(10)] == ["k1", "k2", "k3"]
    assert [e.event_key for e in s.outbox.pending(2)] == ["k1", "k2"]
    s.outbox.mark_sent("k1")
    s.outbox.mark_sent("k1")  # already sent: no change, no write
    s.outbox.mark_failed("k2")
    s.outbox.mark_sent("missing")  # no row: no-op
    assert s.outbox.pending(10) == [OutboxEvent(3, "k3", "a3", 3, "pending")]
    assert s.outbox.events() == [OutboxEvent(1, "k1", "a1", 1, "sent"),
                                 OutboxEvent(2, "k2", "a2", 2, "failed"),
                                 OutboxEvent(3, "k3", "a3", 3, "pending")]
    assert s.take_autocommitted() == (Write("outbox_sent", "a1", 1, "k1"),
                                      Write("outbox_failed", "a2", 2, "k2"))
    s.outbox.mark_sent("k2")  # a failed event can still be sent later
    assert s.outbox.events()[1].status == "sent"
    assert s.outbox.pending(0) == []
    with pytest.raises(ValueError, match="limit"):
        s.outbox.pending(-1)


# -- unit of work ------------------------------------------------------------------------


def test_commit_returns_writes_and_makes_them_visible(make_db):
    db = make_db()
    s, other = db.session(), db.session()
    assert s.in_transaction is False
    s.begin()
    assert s.in_transaction is True
    s.accounts.put(acct("a1"))
    s.cleanup_store.apply_once(account_id="a1", cleanup_version=1)
    s.outbox.add_once(event_key="k", account_id="a1", cleanup_version=1)
    assert s.accounts.get("a1") == acct("a1")  # own writes visible
    assert other.accounts.get("a1") is None  # not yet to others
    assert other.cleanup_store.markers() == []
    assert s.commit() == (Write("account_put", "a1", account=acct("a1")),
                          Write("cleanup_applied", "a1", 1),
                          Write("outbox_added", "a1", 1, "k"))
    assert s.in_transaction is False
    assert other.accounts.get("a1") == acct("a1")
    assert other.outbox.events() == [OutboxEvent(1, "k", "a1", 1, "pending")]
    assert s.take_autocommitted() == ()


def test_rollback_discards_writes(make_db, backend):
    db = make_db()
    s = db.session()
    s.accounts.put(acct("a1"))
    s.begin()
    s.accounts.delete("a1")
    s.outbox.add_once(event_key="k", account_id="a1", cleanup_version=1)
    s.rollback()
    assert s.in_transaction is False
    assert s.accounts.get("a1") == acct("a1")
    assert s.outbox.events() == []
    s.begin()
    assert s.commit() == ()  # nothing carried over from the rolled-back transaction
    # a rolled-back row's seq is reused, as in SQLite; PostgreSQL's sequence leaves a gap
    s.outbox.add_once(event_key="k2", account_id="a1", cleanup_version=1)
    assert [e.seq for e in s.outbox.events()] == ([2] if backend == "postgres" else [1])


def test_transaction_state_errors(make_db):
    s = make_db().session()
    with pytest.raises(TransactionStateError):
        s.commit()
    with pytest.raises(TransactionStateError):
        s.rollback()
    s.begin()
    with pytest.raises(TransactionStateError):
        s.begin()
    assert s.in_transaction is True
    assert s.commit() == ()


def test_close_rolls_back_and_releases_the_lock(make_db):
    db = make_db()
    s, other = db.session(), db.session()
    s.begin()
    s.accounts.put(acct("a1"))
    s.close()
    other.accounts.put(acct("a2"))  # would be BusyError if the lock were still held
    assert [a.account_id for a in other.accounts.all()] == ["a2"]
    with pytest.raises(StoreError):
        s.accounts.get("a1")


def test_database_close_closes_sessions(make_db):
    db = make_db()
    s = db.session()
    db.close()
    with pytest.raises(StoreError):
        s.accounts.all()
