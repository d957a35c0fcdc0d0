"""The in-memory twin of the SQLite stores: same interface, same observable behaviour.

Committed state is versioned: every commit that changed a row gets the next commit number,
and each key keeps a short history of ``(commit number, value)`` (``None`` = absent), pruned
once no open transaction's snapshot needs the older entries. A session's own uncommitted
writes live in an overlay (accounts put/deleted, marker rows added, outbox rows added and
status changes) that is applied to the latest committed state at commit.

``isolation="serializable"`` copies SQLite in WAL mode with a zero busy timeout: a deferred
transaction takes its read snapshot at its first read or write; its first write takes the
database-wide write lock, failing with ``BusyError`` when another session holds it (the
snapshot is then not taken if it was not already) and with ``BusySnapshotError`` when a
commit happened after its snapshot. A commit that changed no row does not count as a commit
(SQLite writes nothing to the WAL then), so it makes no snapshot stale.

``isolation="read_committed"``: every read sees the latest committed state plus own writes;
writes are applied atomically at commit, where a unique marker or outbox key committed
meanwhile by another session raises ``UniqueViolation`` (the transaction stays open for
``rollback()``). An account's row lock is taken by a write of it (``put``, ``delete``), a
locking read (``get(..., for_update=True)``) and the conditional write
(``apply_if_current``), and held until the transaction ends; a session that needs a row
another one has locked gets ``BusyError`` at once (where PostgreSQL would wait).
At serializable, the locking read and the conditional write take the write lock.

Outside ``begin()`` each store call is a one-statement transaction (autocommit).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from sortedcontainers import SortedList

from acksim.model.errors import (
    BusyError,
    BusySnapshotError,
    StoreError,
    TransactionStateError,
    UniqueViolation,
)
from acksim.model.job import Account
from acksim.model.store_api import DbOptions, OpenSessions, OutboxEvent, Write
from acksim.model.memory_tables import MemoryAccounts, MemoryCleanupStore, MemoryOutbox
from acksim.model.versioned import Versioned

class MemoryDatabase:
    """An in-memory database shared by sessions; ``options`` as in ``DbOptions``."""

    def __init__(self, options: DbOptions = DbOptions()) -> None:
        if options.isolation not in ("serializable", "read_committed"):
            raise ValueError(f"isolation={options.isolation!r}: unknown isolation level")
        self.options = options
        self._commit_no = 0
        self._writer: MemorySession | None = None
        self._row_locks: dict[str, MemorySession] = {}  # read committed: account id -> holder
        self._snaps: dict[MemorySession, int] = {}  # open transactions' snapshots
        self._sessions = OpenSessions()
        self._accounts = Versioned()  # account_id -> Account
        self._markers = Versioned()  # (account_id, version) -> row count
        self._outbox = Versioned()  # seq -> OutboxEvent
        self._keys: dict[str, tuple[int, ...]] = {}  # event_key -> seqs of committed rows
        self._pending: dict[int, None] = {}  # latest pending seqs, ascending
        # latest due candidates, sorted: O(log n) per change, where a list's insort and del
        # moved the whole list (a 100x capacity run keeps 200k accounts due at once)
        self._due: SortedList = SortedList()
        self._due_entry: dict[str, tuple[datetime, str]] = {}  # account_id -> its entry
        # accounts changed by commits since ``_due`` was last brought up to date, in commit
        # order: ``due()`` refreshes them first, so a run that never asks (the per-deadline
        # scheduler) never sorts
        self._due_stale: dict[str, None] = {}
        self._max_seq = 0

    def session(self) -> MemorySession:
        """A new session (autocommit until ``begin()``)."""
        return self._sessions.add(MemorySession(self))

    def close(self) -> None:
        """Close every open session (rolling back its transaction)."""
        self._sessions.close_all()

    def _install(self, s: MemorySession) -> None:
        number = self._commit_no + 1
        horizon = min((snap for o, snap in self._snaps.items() if o is not s), default=number)
        for account_id, account in s._acc.items():
            self._accounts.install(account_id, account, number, horizon)
        for key, added in s._mk.items():
            self._markers.install(key, (self._markers.latest(key) or 0) + added, number, horizon)
        for seq, status in s._status.items():
            event = self._outbox.latest(seq)
            if event.status != status:
                self._outbox.install(seq, replace(event, status=status), number, horizon)
                self._pending.pop(seq, None)
        for event_key, account_id, version, status in s._new:
            self._max_seq += 1
            seq = self._max_seq
            event = OutboxEvent(seq, event_key, account_id, version, status)
            self._outbox.install(seq, event, number, horizon)
            self._keys[event_key] = self._keys.get(event_key, ()) + (seq,)
            if status == "pending":
                self._pending[seq] = None
        stale = self._due_stale
        for account_id in s._acc:
            stale[account_id] = None
        for key in s._mk:
            stale[key[0]] = None
        self._commit_no = number

    def _latest_due(self) -> SortedList:
        """``_due`` brought up to date: sorted (deadline, id) of the latest accounts that are
        due but for the time (not renewed, no marker for their current version)."""
        stale, entries, due = self._due_stale, self._due_entry, self._due
        for account_id in stale:
            old = entries.pop(account_id, None)
            if old is not None:
                due.remove(old)
            account = self._accounts.latest(account_id)
            if (account is not None and not account.renewed
                    and not self._markers.latest((account_id, account.cleanup_version))):
                entry = entries[account_id] = (account.deadline, account_id)
                due.add(entry)
        stale.clear()
        return due


class MemorySession:
    """One actor's connection: the three stores plus the unit of work spanning them.

    Same contract as ``SqliteSession``: conflicts are raised from the call that hit them and
    leave the transaction open until ``rollback()``; ``commit()`` returns the transaction's
    ``Write`` tuple; autocommitted writes accumulate for ``take_autocommitted()``.
    """

    def __init__(self, database: MemoryDatabase) -> None:
        self._db = database
        self._rc = database.options.isolation == "read_committed"
        self._unique_markers = database.options.unique_markers
        self._unique_keys = database.options.unique_outbox_keys
        self._closed = False
        self._in_tx = False
        self._snap: int | None = None
        self._lock = False
        self._rows_locked: list[str] = []
        self._log: list[Write] = []
        self._auto: list[Write] = []
        self._acc: dict[str, Account | None] = {}
        self._mk: dict[tuple[str, int], int] = {}
        self._status: dict[int, str] = {}
        self._new: list[list] = []  # [event_key, account_id, version, status]
        self.accounts = MemoryAccounts(self)
        self.cleanup_store = MemoryCleanupStore(self)
        self.outbox = MemoryOutbox(self)

    @property
    def in_transaction(self) -> bool:
        """True between ``begin()`` and the ``commit()``/``rollback()`` that ends it."""
        return self._in_tx

    def begin(self) -> None:
        """Start a deferred transaction (TransactionStateError if one is open)."""
        self._check_open()
        if self._in_tx:
            raise TransactionStateError("begin() inside a transaction")
        self._in_tx = True

    def commit(self) -> tuple[Write, ...]:
        """Commit; return the transaction's writes. On UniqueViolation keep it open."""
        self._check_open()
        if not self._in_tx:
            raise TransactionStateError("commit() outside a transaction")
        if self._rc:
            self._check_unique()
        if self._log:
            self._db._install(self)
        writes = tuple(self._log)
        self._end()
        return writes

    def rollback(self) -> None:
        """Discard the transaction and its writes (TransactionStateError if none)."""
        self._check_open()
        if not self._in_tx:
            raise TransactionStateError("rollback() outside a transaction")
        self._end()

    def take_autocommitted(self) -> tuple[Write, ...]:
        """Return and clear the writes committed outside explicit transactions."""
        writes, self._auto = tuple(self._auto), []
        return writes

    def close(self) -> None:
        """Roll back any open transaction; later calls raise StoreError (idempotent)."""
        if self._in_tx:
            self._end()
        self._closed = True
        self._db._sessions.discard(self)

    # -- internals shared by the stores -------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise StoreError("the session is closed")

    def _end(self) -> None:
        db = self._db
        if self._lock:
            db._writer = None
            self._lock = False
        for account_id in self._rows_locked:
            del db._row_locks[account_id]
        self._rows_locked = []
        db._snaps.pop(self, None)
        self._in_tx = False
        self._snap = None
        self._log = []
        self._acc = {}
        self._mk = {}
        self._status = {}
        self._new = []

    def _read(self) -> int:
        """The commit number this read sees (taking the transaction's snapshot if needed)."""
        if self._closed:
            raise StoreError("the session is closed")
        if self._snap is not None:
            return self._snap
        if self._in_tx and not self._rc:
            self._snap = self._db._snaps[self] = self._db._commit_no
            return self._snap
        return self._db._commit_no

    def _write(self) -> int:
        """Acquire write access as SQLite does; return the commit number writes build on."""
        self._check_open()
        db = self._db
        if self._rc:
            return db._commit_no
        if not self._lock:
            if db._writer is not None:
                raise BusyError("database is locked: another session holds the write lock")
            if self._snap is not None and self._snap != db._commit_no:
                raise BusySnapshotError(
                    "database is locked: this transaction's snapshot is stale"
                )
            db._writer = self
            self._lock = True
            if self._snap is None:
                self._snap = db._snaps[self] = db._commit_no
        return self._snap

    def _lock_row(self, account_id: str) -> int:
        """Lock the account's row for this transaction (read committed; ``BusyError`` when
        another session holds it) or, at serializable, take the write lock (``_write``);
        returns the commit number writes build on."""
        if not self._rc:
            return self._write()
        self._check_open()
        locks = self._db._row_locks
        holder = locks.get(account_id)
        if holder is None:
            locks[account_id] = self
            self._rows_locked.append(account_id)
        elif holder is not self:
            raise BusyError(f"account {account_id!r} is locked by another session's transaction")
        return self._db._commit_no

    def _autocommit(self, method, *args, **kwargs):
        """Run one store call as its own transaction."""
        self.begin()
        try:
            result = method(*args, **kwargs)
            self._auto.extend(self.commit())
        except BaseException:
            if self._in_tx:
                self._end()
            raise
        return result

    def _check_unique(self) -> None:
        db = self._db
        if self._unique_markers:
            for key in self._mk:
                if db._markers.latest(key):
                    raise UniqueViolation(f"cleanup marker {key} was committed by another session")
        if self._unique_keys:
            for event_key, *_ in self._new:
                if any(db._outbox.latest(seq) for seq in db._keys.get(event_key, ())):
                    raise UniqueViolation(
                        f"outbox event key {event_key!r} was committed by another session"
                    )

    def _account(self, account_id: str, snap: int) -> Account | None:
        if account_id in self._acc:
            return self._acc[account_id]
        return self._db._accounts.at(account_id, snap)

    def _marker_count(self, key: tuple[str, int], snap: int) -> int:
        return (self._db._markers.at(key, snap) or 0) + self._mk.get(key, 0)

    def _events(self, snap: int) -> list[OutboxEvent]:
        status = self._status
        events = [
            replace(event, status=status[seq]) if seq in status else event
            for seq, event in self._db._outbox.items_at(snap)
        ]
        base = self._db._max_seq
        events.extend(OutboxEvent(base + i, *row) for i, row in enumerate(self._new, 1))
        return events
