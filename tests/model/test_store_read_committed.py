"""Read committed (memory backend only): the races that serializable isolation prevents."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from acksim.model.errors import BusyError, BusySnapshotError, UniqueViolation
from acksim.model.job import Account
from acksim.model.store_api import DbOptions, OutboxEvent, Write
from acksim.model.stores import open_database

T0 = datetime(2024, 3, 1, 12, 0, tzinfo=timezone.utc)
RC = DbOptions(isolation="read_committed")
RC_NON_UNIQUE = DbOptions("read_committed", unique_markers=False, unique_outbox_keys=False)


@pytest.fixture(params=["sqlite", "memory"])
def backend(request) -> str:
    """SQLite's serializable and its twin's (PostgreSQL's levels: ``test_postgres_store``)."""
    return request.param


def acct(account_id: str, version: int = 1, renewed: bool = False) -> Account:
    return Account(account_id, version, renewed, T0)


def renewal_race(a, b):
    """A reads the account, B renews it and commits, A applies the cleanup and commits."""
    a.begin()
    assert a.accounts.get("x").renewed is False
    b.accounts.put(acct("x", renewed=True))
    a.cleanup_store.apply_once(account_id="x", cleanup_version=1)
    return a.commit()


def test_read_committed_allows_cleanup_after_renewal():
    db = open_database("memory", options=RC)
    a, b = db.session(), db.session()
    a.accounts.put(acct("x"))
    assert renewal_race(a, b) == (Write("cleanup_applied", "x", 1),)
    assert a.accounts.get("x") == acct("x", renewed=True)
    assert a.cleanup_store.markers() == [("x", 1)]  # the bug: cleanup of a renewed account


def test_serializable_prevents_cleanup_after_renewal(make_db):
    db = make_db()
    a, b = db.session(), db.session()
    a.accounts.put(acct("x"))
    with pytest.raises(BusySnapshotError):
        renewal_race(a, b)
    a.rollback()
    assert a.cleanup_store.markers() == []


def test_reads_see_each_new_commit():
    db = open_database("memory", options=RC)
    a, b = db.session(), db.session()
    a.accounts.put(acct("x"))
    a.begin()
    assert a.accounts.get("x") == acct("x")
    b.accounts.put(acct("x", 2))
    assert a.accounts.get("x") == acct("x", 2)
    a.accounts.put(acct("y"))
    assert b.accounts.get("y") is None  # buffered until commit
    assert [x.account_id for x in a.accounts.all()] == ["x", "y"]
    a.commit()
    assert b.accounts.get("y") == acct("y")


def test_writers_lock_only_the_rows_they_write():
    db = open_database("memory", options=RC)
    a, b = db.session(), db.session()
    a.begin()
    b.begin()
    a.accounts.put(acct("x", 1))
    with pytest.raises(BusyError):  # PostgreSQL would wait for a's row lock
        b.accounts.put(acct("x", 2))
    b.accounts.put(acct("z"))  # another row: no conflict (under serializable: BusyError)
    a.commit()
    b.accounts.put(acct("x", 2))  # a's lock ended with its transaction
    b.commit()
    assert a.accounts.all() == [acct("x", 2), acct("z")]


def test_a_locking_read_holds_the_row_until_the_transaction_ends():
    db = open_database("memory", options=RC)
    a, b = db.session(), db.session()
    a.accounts.put(acct("x"))
    a.begin()
    assert a.accounts.get("x", for_update=True) == acct("x")
    with pytest.raises(BusyError):
        b.accounts.put(acct("x", renewed=True))  # autocommit: the renewal cannot slip in
    b.begin()
    with pytest.raises(BusyError):
        b.accounts.get("x", for_update=True)
    assert b.accounts.get("x") == acct("x")  # a plain read does not wait
    b.rollback()
    assert a.cleanup_store.apply_once(account_id="x", cleanup_version=1)
    a.commit()
    b.accounts.put(acct("x", renewed=True))
    assert b.cleanup_store.markers() == [("x", 1)]


def test_the_conditional_write_sees_the_latest_commit_and_locks_the_row():
    db = open_database("memory", options=RC)
    a, b = db.session(), db.session()
    a.accounts.put(acct("x"))
    a.begin()
    assert a.accounts.get("x") == acct("x")
    b.accounts.put(acct("x", renewed=True))  # commits between a's read and a's write
    assert a.cleanup_store.apply_if_current(account_id="x", cleanup_version=1) is False
    assert a.commit() == ()
    b.accounts.put(acct("x"))
    a.begin()
    assert a.cleanup_store.apply_if_current(account_id="x", cleanup_version=1) is True
    with pytest.raises(BusyError):
        b.accounts.put(acct("x", renewed=True))
    assert a.commit() == (Write("cleanup_applied", "x", 1),)


def double_apply(a, b):
    """Both sessions check, both apply, both commit."""
    a.begin()
    b.begin()
    assert a.cleanup_store.was_applied("x", 1) is False
    assert b.cleanup_store.was_applied("x", 1) is False
    assert a.cleanup_store.apply_once(account_id="x", cleanup_version=1) is True
    assert b.cleanup_store.apply_once(account_id="x", cleanup_version=1) is True
    a.outbox.add_once(event_key="k", account_id="x", cleanup_version=1)
    b.outbox.add_once(event_key="k", account_id="x", cleanup_version=1)
    first = a.commit()
    return first, b.commit()


def test_duplicate_marker_race_without_uniqueness():
    db = open_database("memory", options=RC_NON_UNIQUE)
    a, b = db.session(), db.session()
    first, second = double_apply(a, b)
    expected = (Write("cleanup_applied", "x", 1), Write("outbox_added", "x", 1, "k"))
    assert first == second == expected
    assert a.cleanup_store.markers() == [("x", 1), ("x", 1)]
    assert a.outbox.events() == [OutboxEvent(1, "k", "x", 1, "pending"),
                                 OutboxEvent(2, "k", "x", 1, "pending")]


def test_duplicate_marker_race_with_unique_markers_fails_the_second_commit():
    db = open_database("memory", options=RC)
    a, b = db.session(), db.session()
    with pytest.raises(UniqueViolation, match="marker"):
        double_apply(a, b)
    assert b.in_transaction is True  # left open for rollback
    assert a.cleanup_store.markers() == [("x", 1)]  # B's failed commit applied nothing
    b.rollback()
    assert a.cleanup_store.markers() == [("x", 1)]
    assert [e.seq for e in a.outbox.events()] == [1]


def test_unique_outbox_key_race_fails_the_second_commit():
    db = open_database("memory", options=DbOptions("read_committed", unique_markers=False))
    a, b = db.session(), db.session()
    a.begin()
    b.begin()
    assert a.outbox.add_once(event_key="k", account_id="x", cleanup_version=1) is True
    assert b.outbox.add_once(event_key="k", account_id="x", cleanup_version=1) is True
    a.commit()
    with pytest.raises(UniqueViolation, match="'k'"):
        b.commit()
    b.rollback()
    assert len(a.outbox.events()) == 1


def test_duplicate_marker_race_is_busy_under_serializable(make_db):
    db = make_db(DbOptions(unique_markers=False, unique_outbox_keys=False))
    a, b = db.session(), db.session()
    with pytest.raises(BusyError):
        double_apply(a, b)  # B's apply_once while A holds the write lock
    b.rollback()
    a.commit()
    assert a.cleanup_store.markers() == [("x", 1)]
