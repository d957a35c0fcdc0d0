"""The store interfaces shared by the SQLite and in-memory backends.

A ``Database`` hands out ``Session`` objects, one per actor (like one connection each). A
session groups the three stores the processor uses (``accounts``, ``cleanup_store``,
``outbox``) and is the unit of work spanning them: ``begin()``, then ``commit()`` or
``rollback()``. Outside ``begin()`` every store call is its own transaction (autocommit).

Ground truth for the simulation comes from the ``Write`` log: ``commit()`` returns the writes
the transaction actually made and committed; autocommitted writes are collected and returned
by ``take_autocommitted()``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, Protocol

from acksim.model.job import Account

Isolation = Literal["serializable", "repeatable_read", "read_committed"]


@dataclass(frozen=True, slots=True)
class DbOptions:
    """Design parameters of the stores.

    ``isolation``: "serializable" (SQLite's only level: snapshot reads, one database-wide
    writer, ``BusySnapshotError`` for a stale reader that tries to write; PostgreSQL's
    serializable snapshot isolation), "repeatable_read" (PostgreSQL only: snapshot isolation,
    first updater wins, write skew allowed) or "read_committed" (in-memory and PostgreSQL:
    every statement sees the latest commit; in memory writes are buffered and applied at
    commit). ``unique_markers`` / ``unique_outbox_keys``: whether (account id,
    cleanup version) markers and outbox event keys are unique keys in the schema.
    """

    isolation: Isolation = "serializable"
    unique_markers: bool = True
    unique_outbox_keys: bool = True


@dataclass(frozen=True, slots=True)
class Write:
    """One committed write. ``kind`` is one of "cleanup_applied", "outbox_added",
    "account_put", "account_deleted", "outbox_sent", "outbox_failed"; the other fields are
    filled as they apply (``account`` for "account_put")."""

    kind: str
    account_id: str
    cleanup_version: int | None = None
    event_key: str | None = None
    account: Account | None = None


@dataclass(frozen=True, slots=True)
class OutboxEvent:
    """One outbox row. ``status`` is "pending", "sent" or "failed"; ``seq`` is insertion order."""

    seq: int
    event_key: str
    account_id: str
    cleanup_version: int
    status: str


class Accounts(Protocol):
    """Accounts by id; ``due`` lists up to ``limit`` not-renewed accounts whose deadline is at
    or before ``now`` and whose cleanup is not applied, by deadline. ``get(account_id,
    for_update=True)`` is a locking read: inside a transaction no other transaction can change
    or lock the row until this one ends (PostgreSQL ``SELECT ... FOR UPDATE``; SQLite takes
    its database-wide write lock; the memory twin a row lock at read committed, the write lock
    at serializable). Semantics and errors: the implementations in
    ``acksim.model.sqlite_store``, ``acksim.model.memory_store`` and
    ``acksim.model.postgres_store``."""

    def get(self, account_id: str, for_update: bool = False) -> Account | None: ...
    def put(self, account: Account) -> None: ...
    def delete(self, account_id: str) -> bool: ...
    def due(self, now: datetime, limit: int) -> list[Account]: ...
    def all(self) -> list[Account]: ...


class CleanupStore(Protocol):
    """Cleanup markers keyed by (account id, cleanup version); ``apply_once`` returns whether
    it inserted (with unique markers a second insert raises ``UniqueViolation``).
    ``apply_if_current`` is the conditional write: in one statement, insert the marker only
    where the account row exists with this cleanup version and is not renewed, locking that
    row as ``get(..., for_update=True)`` does; returns whether it inserted."""

    def was_applied(self, account_id: str, cleanup_version: int) -> bool: ...
    def apply_once(self, *, account_id: str, cleanup_version: int) -> bool: ...
    def apply_if_current(self, *, account_id: str, cleanup_version: int) -> bool: ...
    def markers(self) -> list[tuple[str, int]]: ...


class Outbox(Protocol):
    """Outbox events keyed by ``event_key``, written in the unit of work and read, marked
    sent or failed by the relay (every row of a key, or with ``seq`` one row)."""

    def add_once(self, *, event_key: str, account_id: str, cleanup_version: int) -> bool: ...
    def pending(self, limit: int) -> list[OutboxEvent]: ...
    def mark_sent(self, event_key: str, seq: int | None = None) -> None: ...
    def mark_failed(self, event_key: str, seq: int | None = None) -> None: ...
    def events(self) -> list[OutboxEvent]: ...


class Session(Protocol):
    """One connection and its unit of work: ``begin``, ``commit`` (returns the committed
    writes), ``rollback``; outside ``begin`` each call commits alone (``take_autocommitted``)."""

    accounts: Accounts
    cleanup_store: CleanupStore
    outbox: Outbox

    @property
    def in_transaction(self) -> bool: ...
    def begin(self) -> None: ...
    def commit(self) -> tuple[Write, ...]: ...
    def rollback(self) -> None: ...
    def take_autocommitted(self) -> tuple[Write, ...]: ...
    def close(self) -> None: ...


@dataclass(frozen=True, slots=True)
class Blocked:
    """A statement of a session waits on a lock another transaction holds (PostgreSQL).
    ``backend_pid``: the waiting server process; ``holders``: the server processes it waits
    for. What a ``LockWaits.park`` receives."""

    backend_pid: int
    holders: tuple[int, ...]


class LockWaits(Protocol):
    """How a store that can block (PostgreSQL) waits inside a harness that runs every actor on
    one thread. ``park(blocked)`` is called each time a statement is found waiting on a lock;
    it returns when the statement may have moved on (the store then looks again), or raises
    (the store cancels the statement and lets the error through). ``released()`` is called
    after every transaction end (commit, rollback, a cancelled statement), when parked
    statements may move on."""

    def park(self, blocked: Blocked) -> None: ...
    def released(self) -> None: ...


class Database(Protocol):
    """A backend: hands out sessions and closes them all on ``close``."""

    options: DbOptions

    def session(self) -> Session: ...
    def close(self) -> None: ...


class OpenSessions:
    """The sessions a database handed out and that are still open, so that closing the
    database closes them (each rolls back its transaction), in the order they were opened."""

    def __init__(self) -> None:
        self._open: dict[int, Any] = {}

    def add(self, session: Any) -> Any:
        """Remember ``session``; returns it."""
        self._open[id(session)] = session
        return session

    def discard(self, session: Any) -> None:
        """Forget ``session`` (it closed itself); no error if unknown."""
        self._open.pop(id(session), None)

    def close_all(self) -> None:
        """Close every session still open."""
        for session in list(self._open.values()):
            session.close()
