"""Delivery records of the shipment fan-out, in SQLite and in an in-memory twin.

The queue knows nothing of the N deliveries of one update (no join), so the application keeps
its own ledger: one row per delivery that succeeded, under the delivery's stable key
``cleanup:<job id>:<record id>`` (unique), with the update id and the subscriber. A redelivered
task finds its row and does nothing; the update is complete when every subscriber has a row.

Both backends have the same interface (``DeliveryRecords``) and the same observable
behaviour, like ``acksim.model.sqlite_store`` and ``acksim.model.memory_store``:

- ``begin()`` opens the unit of work, ``commit()`` makes it durable, ``rollback()`` drops it;
  outside ``begin()`` every call is its own transaction (autocommit). ``begin`` inside a
  transaction and ``commit``/``rollback`` outside one raise ``TransactionStateError``.
- Reads inside a transaction see its own writes.
- ``record_once`` of a key already present (committed, or written earlier in the same
  transaction) raises ``UniqueViolation`` and writes nothing; the transaction stays open with
  its earlier writes, ready for ``commit()`` or ``rollback()``.

``SqliteDeliveryRecords`` works on a connection the caller passes (so the record can share a
transaction with the caller's other tables); ``connect`` opens one the way the SQLite stores
do (WAL, zero busy timeout), so concurrent writers raise ``BusyError`` /
``BusySnapshotError`` at once instead of blocking. ``MemoryDeliveryRecords`` is one session
over its own data: it has no concurrent sessions, hence no busy conflicts.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Protocol

from acksim.model.errors import TransactionStateError, UniqueViolation
from acksim.model.sqlite_store import translate_error

_SQLITE_BUSY = 5
_SQLITE_BUSY_SNAPSHOT = 517  # SQLITE_BUSY | (2 << 8)

_SCHEMA = (
    (
        "CREATE TABLE IF NOT EXISTS delivery_records("
        " seq INTEGER PRIMARY KEY,"  # insertion order
        " key TEXT NOT NULL UNIQUE,"  # cleanup:<job id>:<record id>
        " update_id TEXT NOT NULL,"
        " subscriber TEXT NOT NULL)"
    ),
    "CREATE INDEX IF NOT EXISTS delivery_records_update ON delivery_records(update_id, seq)",
)
_INSERT = "INSERT INTO delivery_records(key, update_id, subscriber) VALUES (?, ?, ?)"
_WAS_RECORDED = "SELECT 1 FROM delivery_records WHERE key = ? LIMIT 1"
_FOR_UPDATE = "SELECT subscriber FROM delivery_records WHERE update_id = ? ORDER BY seq"
_ALL = "SELECT key, update_id, subscriber FROM delivery_records ORDER BY seq"


@dataclass(frozen=True, slots=True)
class DeliveryRecord:
    """One recorded delivery: ``key`` is ``cleanup:<job id>:<record id>`` (unique),
    ``update_id`` the shipment update, ``subscriber`` who received it."""

    key: str
    update_id: str
    subscriber: str


class DeliveryRecords(Protocol):
    """The delivery-record store the processor writes (both backends implement it)."""

    @property
    def in_transaction(self) -> bool: ...
    def begin(self) -> None: ...
    def commit(self) -> None: ...
    def rollback(self) -> None: ...
    def record_once(self, key: str, update_id: str, subscriber: str) -> None: ...
    def was_recorded(self, key: str) -> bool: ...
    def recorded_for(self, update_id: str) -> tuple[str, ...]: ...
    def all(self) -> tuple[DeliveryRecord, ...]: ...


def _duplicate(key: str) -> UniqueViolation:
    return UniqueViolation(f"delivery record key {key!r} is already recorded")


def connect(path: str) -> sqlite3.Connection:
    """A connection for ``SqliteDeliveryRecords``: autocommit mode (``isolation_level=None``,
    so ``begin()``/``commit()`` control transactions), WAL journal, zero busy timeout."""
    conn = sqlite3.connect(path, isolation_level=None, timeout=0)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA busy_timeout=0")
    return conn


class SqliteDeliveryRecords:
    """The ``delivery_records`` table on a caller's connection (created if absent).

    ``conn`` must be in autocommit mode (``isolation_level=None``; see ``connect``), else
    ValueError: Python's implicit transactions would hide where the unit of work begins. The
    caller owns and closes ``conn``. Calls raise ``UniqueViolation`` (duplicate key),
    ``BusyError`` (another connection holds the write lock) or ``BusySnapshotError`` (this
    transaction read a snapshot another connection has since committed over, then wrote).
    """

    def __init__(self, conn: sqlite3.Connection) -> None:
        if conn.isolation_level is not None:
            raise ValueError(
                f"conn.isolation_level={conn.isolation_level!r}: open the connection with "
                "isolation_level=None (see acksim.model.shipment_store.connect)"
            )
        self._conn = conn
        for statement in _SCHEMA:
            self._exec(statement)

    @property
    def in_transaction(self) -> bool:
        """True between ``begin()`` and the ``commit()``/``rollback()`` that ends it."""
        return self._conn.in_transaction

    def begin(self) -> None:
        """Start a deferred transaction (TransactionStateError if one is open)."""
        if self._conn.in_transaction:
            raise TransactionStateError("begin() inside a transaction")
        self._exec("BEGIN")

    def commit(self) -> None:
        """Commit (TransactionStateError if none is open)."""
        if not self._conn.in_transaction:
            raise TransactionStateError("commit() outside a transaction")
        self._exec("COMMIT")

    def rollback(self) -> None:
        """Roll back (TransactionStateError if none is open)."""
        if not self._conn.in_transaction:
            raise TransactionStateError("rollback() outside a transaction")
        self._exec("ROLLBACK")

    def record_once(self, key: str, update_id: str, subscriber: str) -> None:
        """Insert the record; ``UniqueViolation`` if ``key`` is already recorded."""
        try:
            self._conn.execute(_INSERT, (key, update_id, subscriber))
        except sqlite3.IntegrityError as exc:
            if "UNIQUE" in str(exc):
                raise _duplicate(key) from exc
            raise
        except sqlite3.Error as exc:
            raise translate_error(exc) from exc

    def was_recorded(self, key: str) -> bool:
        """True iff a record with ``key`` is visible to this connection."""
        return bool(self._exec(_WAS_RECORDED, (key,)).fetchall())

    def recorded_for(self, update_id: str) -> tuple[str, ...]:
        """Subscribers with a record for ``update_id``, in insertion order (repeats kept)."""
        return tuple(row[0] for row in self._exec(_FOR_UPDATE, (update_id,)).fetchall())

    def all(self) -> tuple[DeliveryRecord, ...]:
        """Every visible record, in insertion order."""
        return tuple(DeliveryRecord(*row) for row in self._exec(_ALL).fetchall())

    def _exec(self, sql: str, params: tuple = ()) -> sqlite3.Cursor:
        try:
            return self._conn.execute(sql, params)
        except sqlite3.Error as exc:
            raise translate_error(exc) from exc


class MemoryDeliveryRecords:
    """The in-memory twin: committed rows in a list, a transaction's rows in an overlay."""

    def __init__(self) -> None:
        self._rows: list[DeliveryRecord] = []  # committed, insertion order
        self._keys: set[str] = set()  # committed keys
        self._tx: list[DeliveryRecord] | None = None  # uncommitted rows; None = autocommit

    @property
    def in_transaction(self) -> bool:
        """True between ``begin()`` and the ``commit()``/``rollback()`` that ends it."""
        return self._tx is not None

    def begin(self) -> None:
        """Start a transaction (TransactionStateError if one is open)."""
        if self._tx is not None:
            raise TransactionStateError("begin() inside a transaction")
        self._tx = []

    def commit(self) -> None:
        """Commit (TransactionStateError if none is open)."""
        if self._tx is None:
            raise TransactionStateError("commit() outside a transaction")
        rows, self._tx = self._tx, None
        self._rows.extend(rows)
        self._keys.update(row.key for row in rows)

    def rollback(self) -> None:
        """Roll back (TransactionStateError if none is open)."""
        if self._tx is None:
            raise TransactionStateError("rollback() outside a transaction")
        self._tx = None

    def record_once(self, key: str, update_id: str, subscriber: str) -> None:
        """Insert the record; ``UniqueViolation`` if ``key`` is already recorded."""
        if self.was_recorded(key):
            raise _duplicate(key)
        row = DeliveryRecord(key, update_id, subscriber)
        if self._tx is None:
            self._rows.append(row)
            self._keys.add(key)
        else:
            self._tx.append(row)

    def was_recorded(self, key: str) -> bool:
        """True iff a record with ``key`` is visible (committed or own uncommitted)."""
        return key in self._keys or any(row.key == key for row in self._tx or ())

    def recorded_for(self, update_id: str) -> tuple[str, ...]:
        """Subscribers with a record for ``update_id``, in insertion order (repeats kept)."""
        return tuple(row.subscriber for row in self.all() if row.update_id == update_id)

    def all(self) -> tuple[DeliveryRecord, ...]:
        """Every visible record, in insertion order."""
        return (*self._rows, *(self._tx or ()))
