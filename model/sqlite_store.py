"""The SQLite backend: real durable transactions through the stdlib ``sqlite3`` module.

Each ``SqliteSession`` owns one connection, so sessions are independent transactions, exactly
like separate processes sharing a database file. The file is in WAL mode with a zero busy
timeout, so a store call never blocks: a conflict is raised at once from the call that hit
it (``BusyError`` when another connection holds the write lock, ``BusySnapshotError`` when
this transaction's read snapshot is stale and it tries to write). SQLite transactions are
serializable: a deferred ``BEGIN`` takes its snapshot at the first statement, and the first
write takes the database-wide write lock.

The stores are ``acksim.model.sql_stores``' over this module's SQL. A statement which would
not change a row changes nothing on disk and logs no ``Write``; it still takes the write lock,
as any SQLite write statement does. A locking read (``get(..., for_update=True)``) and the
conditional write (``apply_if_current``) inside a transaction first take the write lock with a
write that changes nothing: SQLite is serializable anyway, so that is all they add (a
concurrent writer gets ``BusyError``, a stale snapshot ``BusySnapshotError``, at once).
``deadline`` is stored as INTEGER microseconds since the Unix epoch (UTC).
"""

from __future__ import annotations

import sqlite3

from acksim.model.errors import (
    BusyError,
    BusySnapshotError,
    StoreError,
    UniqueViolation,
)
from acksim.model.sql_stores import SqlSession, Statements
from acksim.model.store_api import DbOptions, OpenSessions

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

_ACCOUNT_COLUMNS = "account_id, cleanup_version, renewed, deadline"
_EVENT_COLUMNS = "seq, event_key, account_id, cleanup_version, status"


def _statements(options: DbOptions) -> Statements:
    """This backend's SQL for ``options`` (unique or plain inserts)."""
    ignore = " OR IGNORE" if options.unique_markers else ""
    get = f"SELECT {_ACCOUNT_COLUMNS} FROM accounts WHERE account_id = ?"
    return Statements(
        get=get,
        get_for_update=get,
        lock_first="UPDATE accounts SET renewed = renewed WHERE 0",  # takes the write lock, changes nothing
        put=(
            "INSERT INTO accounts(account_id, cleanup_version, renewed, deadline) VALUES (?, ?, ?, ?)"
            " ON CONFLICT(account_id) DO UPDATE SET cleanup_version = excluded.cleanup_version,"
            " renewed = excluded.renewed, deadline = excluded.deadline"
            " WHERE cleanup_version IS NOT excluded.cleanup_version"
            " OR renewed IS NOT excluded.renewed OR deadline IS NOT excluded.deadline"),
        delete="DELETE FROM accounts WHERE account_id = ?",
        due=(
            f"SELECT {_ACCOUNT_COLUMNS} FROM accounts AS a"
            " WHERE renewed = 0 AND deadline <= ? AND NOT EXISTS (SELECT 1 FROM cleanup_markers AS m"
            " WHERE m.account_id = a.account_id AND m.cleanup_version = a.cleanup_version)"
            " ORDER BY deadline, account_id LIMIT ?"),
        all=f"SELECT {_ACCOUNT_COLUMNS} FROM accounts ORDER BY account_id",
        was_applied="SELECT 1 FROM cleanup_markers WHERE account_id = ? AND cleanup_version = ? LIMIT 1",
        apply=f"INSERT{ignore} INTO cleanup_markers(account_id, cleanup_version) VALUES (?, ?)",
        apply_if_current=(
            f"INSERT{ignore} INTO cleanup_markers(account_id, cleanup_version)"
            " SELECT account_id, cleanup_version FROM accounts"
            " WHERE account_id = ? AND cleanup_version = ? AND renewed = 0"),
        markers="SELECT account_id, cleanup_version FROM cleanup_markers ORDER BY account_id, cleanup_version",
        add=(f"INSERT{' OR IGNORE' if options.unique_outbox_keys else ''}"
             " INTO outbox(event_key, account_id, cleanup_version) VALUES (?, ?, ?)"),
        pending=f"SELECT {_EVENT_COLUMNS} FROM outbox WHERE status = 'pending' ORDER BY seq LIMIT ?",
        events=f"SELECT {_EVENT_COLUMNS} FROM outbox ORDER BY seq",
        mark=("UPDATE outbox SET status = ? WHERE event_key = ? AND status <> ?"
              " RETURNING seq, account_id, cleanup_version"),
        mark_row=("UPDATE outbox SET status = ? WHERE event_key = ? AND seq = ? AND status <> ?"
                  " RETURNING seq, account_id, cleanup_version"),
    )


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
        self.statements = _statements(options)
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


class SqliteSession(SqlSession):
    """One connection: the three stores plus the unit of work spanning them
    (``acksim.model.sql_stores.SqlSession``). ``begin()`` starts a deferred transaction.

    Store calls raise ``BusyError`` / ``BusySnapshotError`` (from the call that hit the
    conflict, never blocking); after one, the transaction stays open until ``rollback()``.
    """

    def __init__(self, database: SqliteDatabase) -> None:
        self._database = database
        self._conn = _connect(database.path)
        self._open(database.statements)

    def close(self) -> None:
        """Roll back any open transaction and close the connection (idempotent)."""
        self._in_tx = False
        self._log = []
        self._conn.close()
        self._database._sessions.discard(self)

    def _begin_tx(self) -> None:
        self._exec("BEGIN")

    def _commit_tx(self) -> None:
        self._exec("COMMIT")

    def _rollback_tx(self) -> None:
        if self._conn.in_transaction:
            self._exec("ROLLBACK")

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

    def _count(self, sql: str, params: tuple = ()) -> int:
        return self._exec(sql, params).rowcount
