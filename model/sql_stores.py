"""The three stores and the unit of work written once over SQL, for the SQLite and PostgreSQL
backends.

A backend's session is a ``SqlSession`` given its SQL as ``Statements``; it sends statements
with ``_rows(sql, params) -> list[tuple]`` (decoded Python values) and ``_count(sql, params)
-> int`` (rows the statement changed), and the transaction's ends with ``_begin_tx``,
``_commit_tx`` and ``_rollback_tx``. Statements take positional parameters in the order shown
by each store method; their placeholders are the backend's own.

Writes are guarded so that a statement which would not change a row (an ignored duplicate
insert, a put of an identical account, a status already set, a delete of a missing row) logs
no ``Write``. ``deadline`` is stored as an integer of microseconds since the Unix epoch (UTC),
which orders correctly and round-trips a ``datetime`` exactly.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from acksim.model.errors import TransactionStateError
from acksim.model.job import Account
from acksim.model.store_api import OutboxEvent, Write

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_MICROSECOND = timedelta(microseconds=1)


@dataclass(frozen=True, slots=True)
class Statements:
    """One backend's SQL for one set of ``DbOptions`` (the unique/plain inserts chosen).

    ``lock_first``: run inside a transaction before a locking read or a conditional write
    (SQLite: a write that changes nothing, to take the database-wide write lock), or None.
    Columns: accounts (account_id, cleanup_version, renewed, deadline); outbox rows (seq,
    event_key, account_id, cleanup_version, status); ``mark``/``mark_row`` return (seq,
    account_id, cleanup_version) of each changed row."""

    get: str
    get_for_update: str
    lock_first: str | None
    put: str
    delete: str
    due: str
    all: str
    was_applied: str
    apply: str
    apply_if_current: str
    markers: str
    add: str
    pending: str
    events: str
    mark: str
    mark_row: str


def to_us(when: datetime, what: str) -> int:
    """Microseconds since the Unix epoch of a timezone-aware datetime (ValueError if naive)."""
    if when.tzinfo is None or when.utcoffset() is None:
        raise ValueError(f"{what} must be a timezone-aware datetime, got naive {when!r}")
    return (when - EPOCH) // _MICROSECOND


def account_from_row(row: tuple) -> Account:
    """An ``Account`` from (account_id, cleanup_version, renewed, deadline microseconds)."""
    account_id, version, renewed, deadline_us = row
    return Account(account_id, version, bool(renewed), EPOCH + timedelta(microseconds=deadline_us))


class SqlSession:
    """One connection's three stores and the unit of work spanning them (see
    ``acksim.model.store_api.Session``): ``begin``, ``commit`` (returns the transaction's
    ``Write`` tuple; on a conflict it raises and the transaction stays open until
    ``rollback``), ``rollback``; writes made outside a transaction (autocommit) accumulate for
    ``take_autocommitted``. ``begin`` inside a transaction, ``commit`` or ``rollback`` outside
    one: ``TransactionStateError``."""

    def _open(self, sql: Statements) -> None:
        """Called by the backend's ``__init__``: no transaction, empty logs, the stores."""
        self._in_tx = False
        self._log: list[Write] = []
        self._auto: list[Write] = []
        self.accounts = SqlAccounts(self, sql)
        self.cleanup_store = SqlCleanupStore(self, sql)
        self.outbox = SqlOutbox(self, sql)

    @property
    def in_transaction(self) -> bool:
        """True between ``begin()`` and the ``commit()``/``rollback()`` that ends it."""
        return self._in_tx

    def begin(self) -> None:
        """Start a transaction."""
        if self._in_tx:
            raise TransactionStateError("begin() inside a transaction")
        self._begin_tx()
        self._in_tx = True

    def commit(self) -> tuple[Write, ...]:
        """Commit; return the transaction's writes. On a conflict raise it, keep it open."""
        if not self._in_tx:
            raise TransactionStateError("commit() outside a transaction")
        self._commit_tx()
        writes = tuple(self._log)
        self._in_tx = False
        self._log = []
        return writes

    def rollback(self) -> None:
        """Roll back and discard the transaction's writes."""
        if not self._in_tx:
            raise TransactionStateError("rollback() outside a transaction")
        self._in_tx = False
        self._log = []
        self._rollback_tx()

    def take_autocommitted(self) -> tuple[Write, ...]:
        """Return and clear the writes committed outside explicit transactions."""
        writes, self._auto = tuple(self._auto), []
        return writes

    def _logged(self, write: Write) -> None:
        (self._log if self._in_tx else self._auto).append(write)

    def _begin_tx(self) -> None:
        raise NotImplementedError

    def _commit_tx(self) -> None:
        raise NotImplementedError

    def _rollback_tx(self) -> None:
        raise NotImplementedError

    def _rows(self, sql, params: tuple = ()) -> list[tuple]:
        raise NotImplementedError

    def _count(self, sql, params: tuple = ()) -> int:
        raise NotImplementedError


class SqlAccounts:
    """The ``accounts`` table of one session (see ``acksim.model.store_api.Accounts``)."""

    def __init__(self, session, sql: Statements) -> None:
        self._s = session
        self._sql = sql

    def get(self, account_id: str, for_update: bool = False) -> Account | None:
        """The account visible to this session, or None. ``for_update``: a locking read (no
        other transaction changes or locks the row until this one ends; outside a
        transaction the lock ends with the statement)."""
        s, sql = self._s, self._sql
        if for_update and s._in_tx and sql.lock_first:
            s._count(sql.lock_first, ())
        rows = s._rows(sql.get_for_update if for_update else sql.get, (account_id,))
        return account_from_row(rows[0]) if rows else None

    def put(self, account: Account) -> None:
        """Insert or replace ``account`` (ValueError for a naive deadline). Logs
        "account_put" unless the stored row was already identical."""
        row = (account.account_id, account.cleanup_version, bool(account.renewed),
               to_us(account.deadline, "deadline"))
        if self._s._count(self._sql.put, row):
            self._s._logged(Write("account_put", account.account_id, account=account_from_row(row)))

    def delete(self, account_id: str) -> bool:
        """Delete the account; True iff a row was deleted (then logs "account_deleted")."""
        if self._s._count(self._sql.delete, (account_id,)):
            self._s._logged(Write("account_deleted", account_id))
            return True
        return False

    def due(self, now: datetime, limit: int) -> list[Account]:
        """Up to ``limit`` accounts with deadline <= ``now`` (aware datetime), not renewed and
        with no marker for their current version, ordered by (deadline, account_id)."""
        if limit < 0:
            raise ValueError(f"limit={limit}: must be >= 0")
        return [account_from_row(r) for r in self._s._rows(self._sql.due, (to_us(now, "now"), limit))]

    def all(self) -> list[Account]:
        """Every account, ordered by account_id."""
        return [account_from_row(r) for r in self._s._rows(self._sql.all, ())]


class SqlCleanupStore:
    """The ``cleanup_markers`` table of one session (see ``acksim.model.store_api.CleanupStore``)."""

    def __init__(self, session, sql: Statements) -> None:
        self._s = session
        self._sql = sql

    def was_applied(self, account_id: str, cleanup_version: int) -> bool:
        """True iff a marker row for (account_id, cleanup_version) is visible."""
        return bool(self._s._rows(self._sql.was_applied, (account_id, cleanup_version)))

    def apply_once(self, *, account_id: str, cleanup_version: int) -> bool:
        """Insert the marker; True iff a row was inserted (always, without unique markers).
        Logs "cleanup_applied" when inserted."""
        return self._insert(self._sql.apply, account_id, cleanup_version)

    def apply_if_current(self, *, account_id: str, cleanup_version: int) -> bool:
        """Insert the marker only where the account exists with ``cleanup_version`` and is not
        renewed, in one statement that locks the account row (as ``get(for_update=True)``);
        True iff a row was inserted. Logs "cleanup_applied" when inserted."""
        s, sql = self._s, self._sql
        if s._in_tx and sql.lock_first:
            s._count(sql.lock_first, ())
        return self._insert(sql.apply_if_current, account_id, cleanup_version)

    def _insert(self, statement: str, account_id: str, cleanup_version: int) -> bool:
        if self._s._count(statement, (account_id, cleanup_version)):
            self._s._logged(Write("cleanup_applied", account_id, cleanup_version))
            return True
        return False

    def markers(self) -> list[tuple[str, int]]:
        """Every marker row as (account_id, cleanup_version), sorted, duplicates kept."""
        return [tuple(row) for row in self._s._rows(self._sql.markers, ())]


class SqlOutbox:
    """The ``outbox`` table of one session (see ``acksim.model.store_api.Outbox``)."""

    def __init__(self, session, sql: Statements) -> None:
        self._s = session
        self._sql = sql

    def add_once(self, *, event_key: str, account_id: str, cleanup_version: int) -> bool:
        """Insert a pending event; True iff a row was inserted (always, without unique keys).
        Logs "outbox_added" when inserted."""
        if self._s._count(self._sql.add, (event_key, account_id, cleanup_version)):
            self._s._logged(Write("outbox_added", account_id, cleanup_version, event_key))
            return True
        return False

    def pending(self, limit: int) -> list[OutboxEvent]:
        """Up to ``limit`` pending events, ordered by seq."""
        if limit < 0:
            raise ValueError(f"limit={limit}: must be >= 0")
        return [OutboxEvent(*r) for r in self._s._rows(self._sql.pending, (limit,))]

    def mark_sent(self, event_key: str, seq: int | None = None) -> None:
        """Set status "sent" on every row with ``event_key`` (no-op if none), or with ``seq``
        only on that row (a relay that sends row by row); logs "outbox_sent" per row whose
        status changed."""
        self._mark(event_key, "sent", "outbox_sent", seq)

    def mark_failed(self, event_key: str, seq: int | None = None) -> None:
        """Set status "failed" likewise; logs "outbox_failed" per changed row."""
        self._mark(event_key, "failed", "outbox_failed", seq)

    def events(self) -> list[OutboxEvent]:
        """Every event, ordered by seq."""
        return [OutboxEvent(*r) for r in self._s._rows(self._sql.events, ())]

    def _mark(self, event_key: str, status: str, kind: str, only: int | None = None) -> None:
        s, sql = self._s, self._sql
        rows = (s._rows(sql.mark, (status, event_key, status)) if only is None
                else s._rows(sql.mark_row, (status, event_key, only, status)))
        for _seq, account_id, version in sorted(rows):
            s._logged(Write(kind, account_id, version, event_key))
