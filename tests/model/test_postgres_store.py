"""PostgreSQL's own concurrency, driven from one thread: a blocked statement parks its
greenlet (``LockWaits.park``) and goes on when the holder ends; lock cycles are broken by
cancelling the youngest transaction; isolation levels as PostgreSQL has them."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from greenlet import getcurrent, greenlet

from acksim.model.errors import DeadlockDetected, LockNotAvailable, SerializationFailure, TransactionAborted
from acksim.model.job import Account
from acksim.model.store_api import Blocked, DbOptions, Write
from acksim.model.stores import open_database

T0 = datetime(2024, 3, 1, 12, 0, tzinfo=timezone.utc)


def acct(account_id: str, version: int = 1, renewed: bool = False) -> Account:
    return Account(account_id, version, renewed, T0)


class Parking:
    """``LockWaits`` for a test: a blocked statement switches its greenlet back to the test
    (which sees the ``Blocked``); ``released`` counts transaction ends."""

    def __init__(self) -> None:
        self.releases = 0

    def park(self, blocked: Blocked) -> None:
        parent = getcurrent().parent
        if parent is None:
            raise LockNotAvailable("the test's own greenlet cannot park")
        parent.switch(blocked)

    def released(self) -> None:
        self.releases += 1


@pytest.fixture
def db(postgres_server):
    """``db(isolation)``: a fresh database with ``Parking`` waits (closed after)."""
    opened = []

    def make(isolation: str = "read_committed"):
        waits = Parking()
        database = open_database("postgres", None, DbOptions(isolation), waits=waits)
        database.waits = waits
        opened.append(database)
        return database

    yield make
    for database in opened:
        database.close()


def sessions(db, isolation: str = "read_committed", accounts: tuple[str, ...] = ("x",)):
    """A fresh database (``db``'s) holding ``accounts`` (version 1, not renewed) and two
    sessions on it: (database, a, b)."""
    d = db(isolation)
    a, b = d.session(), d.session()
    for account_id in accounts:
        a.accounts.put(acct(account_id))
    return d, a, b


def test_a_write_waits_for_a_locking_read_and_applies_after_it(db):
    d, a, b = sessions(db)
    a.begin()
    assert a.accounts.get("x", for_update=True) == acct("x")
    renewal = greenlet(lambda: b.accounts.put(acct("x", renewed=True)))
    parked = renewal.switch()
    assert isinstance(parked, Blocked) and parked.holders  # b waits for a
    assert a.cleanup_store.apply_once(account_id="x", cleanup_version=1)
    assert a.commit() == (Write("cleanup_applied", "x", 1),)
    assert renewal.switch() is None and renewal.dead  # b's put went through after a's commit
    assert b.take_autocommitted() == (Write("account_put", "x", account=acct("x", renewed=True)),)
    assert d.waits.releases >= 1


def test_read_committed_lets_a_renewal_in_between_and_the_conditional_write_sees_it(db):
    d, a, b = sessions(db)
    a.begin()
    assert a.accounts.get("x").renewed is False
    b.accounts.put(acct("x", renewed=True))  # no lock held: commits at once
    assert a.cleanup_store.apply_if_current(account_id="x", cleanup_version=1) is False
    assert a.cleanup_store.apply_once(account_id="x", cleanup_version=1) is True  # the reference's bug
    a.commit()


def test_the_conditional_write_waits_for_a_renewal_in_flight_then_sees_it(db):
    d, a, b = sessions(db)
    b.begin()
    b.accounts.put(acct("x", renewed=True))
    worker = greenlet(lambda: a.cleanup_store.apply_if_current(account_id="x", cleanup_version=1))
    assert isinstance(worker.switch(), Blocked)
    b.commit()
    assert worker.switch() is False  # re-checked on the renewed row: nothing applied
    assert a.cleanup_store.markers() == []


def test_repeatable_read_first_updater_wins(db):
    d, a, b = sessions(db, "repeatable_read")
    a.begin()
    assert a.accounts.get("x") == acct("x")
    b.accounts.put(acct("x", renewed=True))
    assert a.accounts.get("x") == acct("x")  # its snapshot
    with pytest.raises(SerializationFailure):
        a.accounts.put(acct("x", 2))
    with pytest.raises(TransactionAborted):
        a.accounts.get("x")
    with pytest.raises(TransactionAborted):
        a.commit()
    assert a.in_transaction
    a.rollback()
    assert a.accounts.get("x") == acct("x", renewed=True)


def test_repeatable_read_allows_write_skew_that_serializable_refuses(db):
    outcomes = {}
    for isolation in ("repeatable_read", "serializable"):
        d, a, b = sessions(db, isolation)
        a.begin()
        b.begin()
        assert not a.accounts.get("x").renewed and not b.cleanup_store.was_applied("x", 1)
        b.accounts.put(acct("x", renewed=True))  # the renewal: no cleanup seen
        a.cleanup_store.apply_once(account_id="x", cleanup_version=1)  # the worker: no renewal seen
        b.commit()
        try:
            a.commit()
            outcomes[isolation] = "committed"
        except SerializationFailure:
            a.rollback()
            outcomes[isolation] = "refused"
    assert outcomes == {"repeatable_read": "committed", "serializable": "refused"}


def test_a_lock_cycle_cancels_the_youngest_transaction(db):
    d, a, b = sessions(db, accounts=("x", "y"))
    a.begin()
    b.begin()  # b is the younger
    a.accounts.get("x", for_update=True)
    b.accounts.get("y", for_update=True)
    first = greenlet(lambda: a.accounts.get("y", for_update=True))
    assert isinstance(first.switch(), Blocked)
    with pytest.raises(DeadlockDetected):
        b.accounts.get("x", for_update=True)  # closes the cycle: b is cancelled at once
    b.rollback()
    assert first.switch() == acct("y") and first.dead
    a.commit()


def test_the_victim_may_be_the_parked_one(db):
    d, a, b = sessions(db, accounts=("x", "y"))
    b.begin()  # b is the older
    a.begin()
    a.accounts.get("x", for_update=True)
    b.accounts.get("y", for_update=True)
    younger = greenlet(lambda: a.accounts.get("y", for_update=True))
    assert isinstance(younger.switch(), Blocked)
    older = greenlet(lambda: b.accounts.get("x", for_update=True))
    released = d.waits.releases
    assert isinstance(older.switch(), Blocked)  # a was cancelled; b waits for a's rollback
    assert d.waits.releases == released + 1  # the parked victim was woken
    with pytest.raises(DeadlockDetected):
        younger.switch()
    a.rollback()
    assert older.switch() == acct("x")
    b.commit()


def test_a_park_that_raises_cancels_the_statement(db):
    d, a, b = sessions(db)
    a.begin()
    a.accounts.get("x", for_update=True)
    b.begin()
    with pytest.raises(LockNotAvailable):  # the test's own greenlet cannot park
        b.accounts.put(acct("x", renewed=True))
    with pytest.raises(TransactionAborted):
        b.accounts.get("x")
    b.rollback()
    a.commit()
    b.accounts.put(acct("x", renewed=True))
    assert b.accounts.get("x").renewed


def test_unique_markers_make_the_second_inserter_wait_then_skip(db):
    d, a, b = sessions(db, accounts=())
    a.begin()
    assert a.cleanup_store.apply_once(account_id="x", cleanup_version=1)
    second = greenlet(lambda: b.cleanup_store.apply_once(account_id="x", cleanup_version=1))
    assert isinstance(second.switch(), Blocked)
    a.commit()
    assert second.switch() is False
    assert b.take_autocommitted() == ()


def test_close_drops_the_schema(postgres_server):
    import psycopg

    database = open_database("postgres")
    database.session().accounts.put(acct("x"))
    schema = database.schema
    database.close()
    with psycopg.connect(postgres_server) as conn:
        found = conn.execute("SELECT count(*) FROM pg_namespace WHERE nspname = %s", [schema]).fetchone()
    assert found == (0,)
