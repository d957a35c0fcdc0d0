"""Two sessions, serializable isolation: SQLite's WAL locking rules on both backends.

Busy: a second writer while one holds the write lock. Busy snapshot: a transaction that read,
then writes after another session committed. Neither blocks; both leave the transaction open
until rollback, after which a retry succeeds.
"""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from acksim.model.errors import BusyError, BusySnapshotError
from acksim.model.job import Account
from acksim.model.store_api import Write

T0 = datetime(2024, 3, 1, 12, 0, tzinfo=timezone.utc)


def acct(account_id: str, version: int = 1, renewed: bool = False) -> Account:
    return Account(account_id, version, renewed, T0)


def never_waits(session) -> bool:
    """Whether a locked write raises at once instead of waiting: SQLite's busy timeout is 0
    on the session's connection (the memory backend has nothing to wait on)."""
    conn = getattr(session, "_conn", None)
    return conn is None or conn.execute("PRAGMA busy_timeout").fetchone() == (0,)


@pytest.fixture(params=["sqlite", "memory"])
def backend(request) -> str:
    """SQLite's rules and its twin's (PostgreSQL's conflicts: ``test_postgres_store``)."""
    return request.param


@pytest.fixture
def pair(make_db):
    db = make_db()
    a, b = db.session(), db.session()
    a.accounts.put(acct("x"))
    a.take_autocommitted()
    return a, b


def test_second_writer_is_busy_without_blocking(pair):
    a, b = pair
    a.begin()
    a.accounts.put(acct("x", 2))  # A now holds the write lock
    assert never_waits(b)
    with pytest.raises(BusyError):
        b.accounts.put(acct("y"))  # autocommit write
    b.begin()
    with pytest.raises(BusyError):
        b.cleanup_store.apply_once(account_id="x", cleanup_version=1)
    with pytest.raises(BusyError):
        b.accounts.delete("nobody")  # even a write that would change nothing needs the lock
    assert b.in_transaction is True  # the transaction stays open for rollback
    assert b.take_autocommitted() == ()
    b.rollback()
    assert a.commit() == (Write("account_put", "x", account=acct("x", 2)),)
    # retry after the holder committed
    b.begin()
    assert b.cleanup_store.apply_once(account_id="x", cleanup_version=2) is True
    assert b.commit() == (Write("cleanup_applied", "x", 2),)
    assert a.cleanup_store.markers() == [("x", 2)]


def test_readers_are_not_blocked_by_a_writer(pair):
    a, b = pair
    a.begin()
    a.accounts.put(acct("x", 2))
    assert b.accounts.get("x") == acct("x")  # last committed value, no error
    b.begin()
    assert b.accounts.all() == [acct("x")]
    assert b.commit() == ()  # a read-only transaction commits fine
    a.commit()


def test_stale_reader_that_writes_gets_busy_snapshot(pair):
    a, b = pair
    a.begin()
    assert a.accounts.get("x") == acct("x")  # A's snapshot starts here
    b.accounts.put(acct("x", 2, renewed=True))  # B commits after A's snapshot
    assert never_waits(a)
    with pytest.raises(BusySnapshotError):
        a.cleanup_store.apply_once(account_id="x", cleanup_version=1)
    assert a.in_transaction is True
    assert a.accounts.get("x") == acct("x")  # still reading its old snapshot
    with pytest.raises(BusySnapshotError):  # retrying inside the same transaction fails again
        a.outbox.add_once(event_key="k", account_id="x", cleanup_version=1)
    a.rollback()
    # retry: a fresh transaction sees B's commit and may write
    a.begin()
    assert a.accounts.get("x") == acct("x", 2, renewed=True)
    assert a.cleanup_store.apply_once(account_id="x", cleanup_version=2) is True
    assert a.commit() == (Write("cleanup_applied", "x", 2),)
    assert b.cleanup_store.markers() == [("x", 2)]


def test_busy_checked_before_stale_snapshot(pair):
    a, b = pair
    a.begin()
    a.accounts.get("x")
    b.accounts.put(acct("x", 2))  # A is now stale
    b.begin()
    b.accounts.put(acct("x", 3))  # and B holds the lock
    with pytest.raises(BusyError):
        a.accounts.put(acct("x", 9))
    b.commit()
    with pytest.raises(BusySnapshotError):
        a.accounts.put(acct("x", 9))
    a.rollback()


def test_busy_first_write_takes_no_snapshot(pair):
    """SQLite: a transaction whose first statement is a write that fails with SQLITE_BUSY
    has no read snapshot afterwards; its next statement starts a fresh one."""
    a, b = pair
    b.begin()
    b.accounts.put(acct("x", 2))
    a.begin()
    with pytest.raises(BusyError):
        a.accounts.put(acct("y"))
    b.commit()
    assert a.accounts.get("x") == acct("x", 2)  # sees B's later commit
    a.accounts.put(acct("y"))  # and may write: its snapshot is current
    assert a.commit() == (Write("account_put", "y", account=acct("y")),)


def test_busy_after_a_read_keeps_the_snapshot(pair):
    a, b = pair
    a.begin()
    a.accounts.get("x")
    b.begin()
    b.accounts.put(acct("x", 2))
    with pytest.raises(BusyError):
        a.accounts.put(acct("y"))
    b.commit()
    assert a.accounts.get("x") == acct("x")  # old snapshot kept
    with pytest.raises(BusySnapshotError):
        a.accounts.put(acct("y"))
    a.rollback()


@pytest.mark.parametrize(
    "noop",
    [
        lambda s: s.cleanup_store.apply_once(account_id="x", cleanup_version=1),  # exists
        lambda s: s.accounts.put(acct("x")),  # identical
        lambda s: s.accounts.delete("nobody"),
        lambda s: s.outbox.mark_sent("no-such-key"),
    ],
    ids=["ignored-insert", "identical-put", "delete-missing", "mark-missing"],
)
def test_a_commit_that_changed_nothing_does_not_make_snapshots_stale(pair, noop):
    a, b = pair
    b.cleanup_store.apply_once(account_id="x", cleanup_version=1)
    a.begin()
    a.accounts.get("x")
    b.begin()
    noop(b)
    assert b.commit() == ()
    a.accounts.put(acct("x", 5))  # no BusySnapshotError
    assert len(a.commit()) == 1


def test_a_commit_that_changed_a_row_makes_snapshots_stale_even_if_unrelated(pair):
    a, b = pair
    a.begin()
    a.cleanup_store.was_applied("x", 1)
    b.outbox.add_once(event_key="other", account_id="z", cleanup_version=1)  # another table
    with pytest.raises(BusySnapshotError):
        a.accounts.put(acct("x", 5))
    a.rollback()


def test_lock_released_by_rollback(pair):
    a, b = pair
    a.begin()
    a.accounts.put(acct("x", 2))
    a.rollback()
    b.accounts.put(acct("x", 3))
    assert a.accounts.get("x") == acct("x", 3)


def test_old_snapshots_stay_readable_across_many_commits(make_db):
    db = make_db()
    a, b, c = db.session(), db.session(), db.session()
    b.accounts.put(acct("x"))
    b.outbox.add_once(event_key="k", account_id="x", cleanup_version=1)
    a.begin()
    assert a.accounts.get("x") == acct("x")  # snapshot 1
    b.accounts.put(acct("x", 2))
    c.begin()
    assert c.accounts.get("x") == acct("x", 2)  # snapshot 2
    b.accounts.delete("x")
    b.outbox.mark_sent("k")
    b.cleanup_store.apply_once(account_id="x", cleanup_version=2)
    b.accounts.put(acct("x", 3))
    assert a.accounts.get("x") == acct("x")
    assert c.accounts.get("x") == acct("x", 2)
    assert b.accounts.get("x") == acct("x", 3)
    assert [e.status for e in a.outbox.events()] == ["pending"]
    assert a.outbox.pending(5)[0].event_key == "k"
    assert a.accounts.due(T0, 5) == [acct("x")]
    assert c.cleanup_store.markers() == []
    assert b.accounts.due(T0, 5) == [acct("x", 3)]
    a.commit()
    assert c.accounts.all() == [acct("x", 2)]
    c.commit()
    assert c.accounts.all() == [acct("x", 3)]
    assert c.outbox.pending(5) == []
