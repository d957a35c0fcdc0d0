"""The SQLite backend: real durable transactions through the stdlib ``sqlite3`` module.

Each ``SqliteSession`` owns one connection, so sessions are independent transactions, exactly
like separate processes sharing a database file. The file is in WAL mode with a zero busy
timeout, so a store call never blocks: a conflict is raised at once from the call that hit
it (``BusyError`` when another connection holds the write lock, ``BusySnapshotError`` when
this transaction's read snapshot is stale and it tries to write). SQLite transactions are
serializable: a deferred ``BEGIN`` takes its snapshot at the first statement, and the first
write takes the database-wide write lock.

Writes are guarded so that a statement which would not change a row (an ignored duplicate
insert, a put of an identical account, a status already set, a delete of a missing row)
changes nothing on disk and logs no ``Write``; it still takes the write lock, as any SQLite
write statement does. ``deadline`` is stored as INTEGER microseconds since the Unix epoch
(UTC), which orders correctly and round-trips a ``datetime`` exactly.
"""

from __future__ import annotations

import sqlite3
from datetime import datetime, timedelta, timezone

from acksim.model.errors import (
    BusyError,
    BusySnapshotError,
    StoreError,
    TransactionStateError,
    UniqueViolation,
)
from acksim.model.job import Account
from acksim.model.store_api import DbOptions, OpenSessions, OutboxEvent, Write

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_MICROSECOND = timedelta(microseconds=1)
_SQLITE_BUSY = 5
_SQLITE_BUSY_SNAPSHOT = 517  # SQLITE_BUSY | (2 << 8)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS accounts(
    account_id TEXT PRIMARY KEY,
    cleanup_version INTEGER NOT NULL,
    renewed INTEGER NOT NULL,
    deadline INTEGER NOT NULL  -- microseconds since 1970-01-01T00:00:00Z
);
CREATE INDEX IF NOT EXISTS accounts_due ON accounts(deadline, account_id) WHERE renewed = 0;
CREATE TABLE IF NOT EXISTS cleanup_markers(
    account_id TEXT NOT NULL,
    cleanup_version INTEGER NOT NULL
);
CREATE {markers_unique} INDEX IF NOT EXISTS cleanup_markers_key
    ON cleanup_markers(account_id, cleanup_version);
CREATE TABLE IF NOT EXISTS outbox(
    seq INTEGER PRIMARY KEY,
    event_key TEXT NOT NULL,
    account_id TEXT NOT NULL,
    cleanup_version INTEGER NOT NULL,
    status TEXT NOT NULL DEFAULT 'pending'
);
CREATE {outbox_unique} INDEX IF NOT EXISTS outbox_key ON outbox(event_key);
CREATE INDEX IF NOT EXISTS outbox_pending ON outbox(seq) WHERE status = 'pending';
"""

_GET = "SELECT account_id, cleanup_version, renewed, deadline FROM accounts WHERE account_id = ?"
_PUT = (
    "INSERT INTO accounts(account_id, cleanup_version, renewed, deadline) VALUES (?, ?, ?, ?)"
    " ON CONFLICT(account_id) DO UPDATE SET cleanup_version = excluded.cleanup_version,"
    " renewed = excluded.renewed, deadline = excluded.deadline"
    " WHERE cleanup_version IS NOT excluded.cleanup_version"
    " OR renewed IS NOT excluded.renewed OR deadline IS NOT excluded.deadline"
)
_DELETE = "DELETE FROM accounts WHERE account_id = ?"
_DUE = (
    "SELECT account_id, cleanup_version, renewed, deadline FROM accounts AS a"
    " WHERE renewed = 0 AND deadline <= ? AND NOT EXISTS (SELECT 1 FROM cleanup_markers AS m"
    " WHERE m.account_id = a.account_id AND m.cleanup_version = a.cleanup_version)"
    " ORDER BY deadline, account_id LIMIT ?"
)
_ALL = "SELECT account_id, cleanup_version, renewed, deadline FROM accounts ORDER BY account_id"
_WAS_APPLIED = "SELECT 1 FROM cleanup_markers WHERE account_id = ? AND cleanup_version = ? LIMIT 1"
_APPLY_UNIQUE = "INSERT OR IGNORE INTO cleanup_markers(account_id, cleanup_version) VALUES (?, ?)"
_APPLY_PLAIN = "INSERT INTO cleanup_markers(account_id, cleanup_version) VALUES (?, ?)"
_MARKERS = (
    "SELECT account_id, cleanup_version FROM cleanup_markers"
    " ORDER BY account_id, cleanup_version"
)
_ADD_UNIQUE = (
    "INSERT OR IGNORE INTO outbox(event_key, account_id, cleanup_version) VALUES (?, ?, ?)"
)
_ADD_PLAIN = "INSERT INTO outbox(event_key, account_id, cleanup_version) VALUES (?, ?, ?)"
_EVENT_COLUMNS = "seq, event_key, account_id, cleanup_version, status"
_PENDING = f"SELECT {_EVENT_COLUMNS} FROM outbox WHERE status = 'pending' ORDER BY seq LIMIT ?"
_EVENTS = f"SELECT {_EVENT_COLUMNS} FROM outbox ORDER BY seq"
_MARK = (
    "UPDATE outbox SET status = ? WHERE event_key = ? AND status <> ?"
    " RETURNING seq, account_id, cleanup_version"
)
_MARK_ROW = (
    "UPDATE outbox SET status = ? WHERE event_key = ? AND seq = ? AND status <> ?"
    " RETURNING seq, account_id, cleanup_version"
)


def _to_us(when: datetime, what: str) -> int:
    """Microseconds since the Unix epoch of a timezone-aware datetime (ValueError if naive)."""
    if when.tzinfo is None or when.utcoffset() is None:
        raise ValueError(f"{what} must be a timezone-aware datetime, got naive {when!r}")
    return (when - _EPOCH) // _MICROSECOND


def _account(row: tuple) -> Account:
    account_id, version, renewed, deadline_us = row
    return Account(account_id, version, bool(renewed), _EPOCH + timedelta(microseconds=deadline_us))


def translate_error(exc: sqlite3.Error) -> Exception:
    """The ``acksim.model.errors`` exception for a sqlite3 error, or ``exc`` itself if none applies."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code == _SQLITE_BUSY_SNAPSHOT:
        return BusySnapshotError(f"stale read snapshot cannot write: {exc}")
    if code is not None and code & 0xFF == _SQLITE_BUSY:
        return BusyError(f"another session holds the write lock: {exc}")
    if isinstance(exc, sqlite3.IntegrityError) and "UNIQUE" in str(exc):
        return UniqueViolation(str(exc))
    if isinstance(exc, sqlite3.ProgrammingError) and "closed" in str(exc):
        return StoreError("the session is closed")
    return exc


class SqliteDatabase:
    """A SQLite database file shared by sessions (one connection each).

    ``path``: the database file (created with the schema if absent). ``options``: uniqueness of
    markers and outbox keys; isolation must be "serializable". Raises ValueError for read
    committed, for ``:memory:`` (connections would not share it) and when an existing file was
    created with different uniqueness options.
    """

    def __init__(self, path: str, options: DbOptions = DbOptions()) -> None:
        if options.isolation != "serializable":
            raise ValueError(
                f"isolation={options.isolation!r}: sqlite offers only serializable isolation"
            )
        if not path or path == ":memory:" or path.startswith("file::memory:"):
            raise ValueError(f"path={path!r}: the sqlite backend needs a database file path")
        self.path = path
        self.options = options
        self._sessions = OpenSessions()
        conn = _connect(path)
        try:
            conn.executescript(
                _SCHEMA.format(
                    markers_unique="UNIQUE" if options.unique_markers else "",
                    outbox_unique="UNIQUE" if options.unique_outbox_keys else "",
                )
            )
            _check_unique(conn, "cleanup_markers", options.unique_markers, "unique_markers")
            _check_unique(conn, "outbox", options.unique_outbox_keys, "unique_outbox_keys")
        finally:
            conn.close()

    def session(self) -> SqliteSession:
        """A new session with its own connection (autocommit until ``begin()``)."""
        return self._sessions.add(SqliteSession(self))

    def close(self) -> None:
        """Close every session still open (rolling back its transaction)."""
        self._sessions.close_all()


def _connect(path: str) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None, timeout=0)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA busy_timeout=0")
    return conn


def _check_unique(conn: sqlite3.Connection, table: str, wanted: bool, field: str) -> None:
    """ValueError unless ``<table>_key`` is a unique index exactly when ``wanted``."""
    unique = {row[1]: bool(row[2]) for row in conn.execute(f"PRAGMA index_list({table})")}
    if unique.get(f"{table}_key") != wanted:
        raise ValueError(
            f"{field}={wanted}: the database file was created with {field}={not wanted}"
        )


class SqliteSession:
    """One connection: the three stores plus the unit of work spanning them.

    Store calls raise ``BusyError`` / ``BusySnapshotError`` (from the call that hit the
    conflict, never blocking); after one, the transaction stays open until ``rollback()``.
    ``commit()`` returns the ``Write`` tuple of the transaction; writes made outside a
    transaction (autocommit) accumulate for ``take_autocommitted()``.
    """

    def __init__(self, database: SqliteDatabase) -> None:
        self._database = database
        self._conn = _connect(database.path)
        self._in_tx = False
        self._log: list[Write] = []
        self._auto: list[Write] = []
        self.accounts = SqliteAccounts(self)
        self.cleanup_store = SqliteCleanupStore(self)
        self.outbox = SqliteOutbox(self)

    @property
    def in_transaction(self) -> bool:
        """True between ``begin()`` and the ``commit()``/``rollback()`` that ends it."""
        return self._in_tx

    def begin(self) -> None:
        """Start a deferred transaction (TransactionStateError if one is open)."""
        if self._in_tx:
            raise TransactionStateError("begin() inside a transaction")
        self._exec("BEGIN")
        self._in_tx = True

    def commit(self) -> tuple[Write, ...]:
        """Commit; return the transaction's writes. On a conflict raise it, keep it open."""
        if not self._in_tx:
            raise TransactionStateError("commit() outside a transaction")
        self._exec("COMMIT")
        writes = tuple(self._log)
        self._in_tx = False
        self._log = []
        return writes

    def rollback(self) -> None:
        """Roll back and discard the transaction's writes (TransactionStateError if none)."""
        if not self._in_tx:
            raise TransactionStateError("rollback() outside a transaction")
        self._in_tx = False
        self._log = []
        if self._conn.in_transaction:
            self._exec("ROLLBACK")

    def take_autocommitted(self) -> tuple[Write, ...]:
        """Return and clear the writes committed outside explicit transactions."""
        writes, self._auto = tuple(self._auto), []
        return writes

    def close(self) -> None:
        """Roll back any open transaction and close the connection (idempotent)."""
        self._in_tx = False
        self._log = []
        self._conn.close()
        self._database._sessions.discard(self)

    def _exec(self, sql: str, params: tuple = ()) -> sqlite3.Cursor:
        try:
            return self._conn.execute(sql, params)
        except sqlite3.Error as exc:
            raise translate_error(exc) from exc

    def _rows(self, sql: str, params: tuple = ()) -> list[tuple]:
        try:
            return self._conn.execute(sql, params).fetchall()
        except sqlite3.Error as exc:
            raise translate_error(exc) from exc

    def _logged(self, write: Write) -> None:
        (self._log if self._in_tx else self._auto).append(write)


class SqliteAccounts:
    """The ``accounts`` table of one session (see ``acksim.model.store_api.Accounts``)."""

    def __init__(self, session: SqliteSession) -> None:
        self._s = session

    def get(self, account_id: str) -> Account | None:
        """The account visible to this session, or None."""
        rows = self._s._rows(_GET, (account_id,))
        return _account(rows[0]) if rows else None

    def put(self, account: Account) -> None:
        """Insert or replace ``account`` (ValueError for a naive deadline). Logs
        "account_put" unless the stored row was already identical."""
        row = (account.account_id, account.cleanup_version, int(account.renewed),
               _to_us(account.deadline, "deadline"))
        if self._s._exec(_PUT, row).rowcount:
            self._s._logged(Write("account_put", account.account_id, account=_account(row)))

    def delete(self, account_id: str) -> bool:
        """Delete the account; True iff a row was deleted (then logs "account_deleted")."""
        if self._s._exec(_DELETE, (account_id,)).rowcount:
            self._s._logged(Write("account_deleted", account_id))
            return True
        return False

    def due(self, now: datetime, limit: int) -> list[Account]:
        """Up to ``limit`` accounts with deadline <= ``now`` (aware datetime), not renewed and
        with no marker for their current version, ordered by (deadline, account_id)."""
        if limit < 0:
            raise ValueError(f"limit={limit}: must be >= 0")
        return [_account(r) for r in self._s._rows(_DUE, (_to_us(now, "now"), limit))]

    def all(self) -> list[Account]:
        """Every account, ordered by account_id."""
        return [_account(r) for r in self._s._rows(_ALL)]


class SqliteCleanupStore:
    """The ``cleanup_markers`` table of one session (see ``acksim.model.store_api.CleanupStore``)."""

    def __init__(self, session: SqliteSession) -> None:
        self._s = session
        self._apply = _APPLY_UNIQUE if session._database.options.unique_markers else _APPLY_PLAIN

    def was_applied(self, account_id: str, cleanup_version: int) -> bool:
        """True iff a marker row for (account_id, cleanup_version) is visible."""
        return bool(self._s._rows(_WAS_APPLIED, (account_id, cleanup_version)))

    def apply_once(self, *, account_id: str, cleanup_version: int) -> bool:
        """Insert the marker; True iff a row was inserted (always, without unique markers).
        Logs "cleanup_applied" when inserted."""
        if self._s._exec(self._apply, (account_id, cleanup_version)).rowcount:
            self._s._logged(Write("cleanup_applied", account_id, cleanup_version))
            return True
        return False

    def markers(self) -> list[tuple[str, int]]:
        """Every marker row as (account_id, cleanup_version), sorted, duplicates kept."""
        return self._s._rows(_MARKERS)


class SqliteOutbox:
    """The ``outbox`` table of one session (see ``acksim.model.store_api.Outbox``)."""

    def __init__(self, session: SqliteSession) -> None:
        self._s = session
        self._add = _ADD_UNIQUE if session._database.options.unique_outbox_keys else _ADD_PLAIN

    def add_once(self, *, event_key: str, account_id: str, cleanup_version: int) -> bool:
        """Insert a pending event; True iff a row was inserted (always, without unique keys).
        Logs "outbox_added" when inserted."""
        if self._s._exec(self._add, (event_key, account_id, cleanup_version)).rowcount:
            self._s._logged(Write("outbox_added", account_id, cleanup_version, event_key))
            return True
        return False

    def pending(self, limit: int) -> list[OutboxEvent]:
        """Up to ``limit`` pending events, ordered by seq."""
        if limit < 0:
            raise ValueError(f"limit={limit}: must be >= 0")
        return [OutboxEvent(*r) for r in self._s._rows(_PENDING, (limit,))]

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
        return [OutboxEvent(*r) for r in self._s._rows(_EVENTS)]

    def _mark(self, event_key: str, status: str, kind: str, only: int | None = None) -> None:
        rows = (self._s._rows(_MARK, (status, event_key, status)) if only is None
                else self._s._rows(_MARK_ROW, (status, event_key, only, status)))
        for _seq, account_id, version in sorted(rows):
            self._s._logged(Write(kind, account_id, version, event_key))
