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
writes take no lock and are applied atomically at commit, where a unique marker or outbox
key committed meanwhile by another session raises ``UniqueViolation`` (the transaction stays
open for ``rollback()``).

Outside ``begin()`` each store call is a one-statement transaction (autocommit).
"""

from __future__ import annotations

import heapq
from dataclasses import replace
from datetime import datetime, timezone

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

_UTC = timezone.utc


def _utc(when: datetime, what: str) -> datetime:
    """``when`` as a UTC datetime (ValueError if naive)."""
    if when.tzinfo is None or when.utcoffset() is None:
        raise ValueError(f"{what} must be a timezone-aware datetime, got naive {when!r}")
    return when if when.tzinfo is _UTC else when.astimezone(_UTC)


class _Versioned:
    """key -> its latest committed ``(commit number, value)`` (``last``), and, only for keys
    whose older values an open snapshot may still need, key -> those older entries, oldest first
    (``older``); ``None`` means absent. Most keys have no older entry, so they cost one tuple
    rather than a list and a tuple (a long run holds millions of keys)."""

    __slots__ = ("last", "older")

    def __init__(self) -> None:
        self.last: dict = {}
        self.older: dict = {}

    def at(self, key, snap: int):
        """The value of ``key`` as of commit ``snap`` (None if absent then)."""
        entry = self.last.get(key)
        if entry is None:
            return None
        if entry[0] <= snap:
            return entry[1]
        for number, value in reversed(self.older.get(key, ())):
            if number <= snap:
                return value
        return None

    def latest(self, key):
        """The latest committed value of ``key`` (None if absent)."""
        entry = self.last.get(key)
        return None if entry is None else entry[1]

    def items_at(self, snap: int):
        """(key, value) of every key present at ``snap``, in first-insertion order."""
        older = self.older
        for key, (number, value) in self.last.items():
            if number > snap:
                value = None
                for number, old in reversed(older.get(key, ())):
                    if number <= snap:
                        value = old
                        break
            if value is not None:
                yield key, value

    def install(self, key, value, number: int, horizon: int) -> None:
        """Record ``value`` at commit ``number``; drop entries no snapshot >= ``horizon`` needs
        (the newest entry at or before ``horizon`` and every later one are kept)."""
        last = self.last
        previous = last.get(key)
        if previous is None:
            if value is not None:
                last[key] = (number, value)
            return
        if number <= horizon:  # no open snapshot older than this commit: the new entry alone
            self.older.pop(key, None)
            if value is None:
                del last[key]
            else:
                last[key] = (number, value)
            return
        h = self.older.get(key)
        h = [*h, previous] if h else [previous]
        keep = len(h) - 1
        while keep > 0 and h[keep][0] > horizon:
            keep -= 1
        self.older[key] = h[keep:]
        last[key] = (number, value)


class MemoryDatabase:
    """An in-memory database shared by sessions; ``options`` as in ``DbOptions``."""

    def __init__(self, options: DbOptions = DbOptions()) -> None:
        if options.isolation not in ("serializable", "read_committed"):
            raise ValueError(f"isolation={options.isolation!r}: unknown isolation level")
        self.options = options
        self._commit_no = 0
        self._writer: MemorySession | None = None
        self._snaps: dict[MemorySession, int] = {}  # open transactions' snapshots
        self._sessions = OpenSessions()
        self._accounts = _Versioned()  # account_id -> Account
        self._markers = _Versioned()  # (account_id, version) -> row count
        self._outbox = _Versioned()  # seq -> OutboxEvent
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


class MemoryAccounts:
    """Accounts of one session (see ``acksim.model.store_api.Accounts``)."""

    def __init__(self, session: MemorySession) -> None:
        self._s = session

    def get(self, account_id: str) -> Account | None:
        """The account visible to this session, or None."""
        s = self._s
        return s._account(account_id, s._read())

    def put(self, account: Account) -> None:
        """Insert or replace ``account`` (deadline converted to UTC; ValueError if naive).
        Logs "account_put" unless the visible account was already identical."""
        s = self._s
        if not s._in_tx:
            return s._autocommit(self.put, account)
        deadline = _utc(account.deadline, "deadline")
        account = Account(account.account_id, account.cleanup_version, bool(account.renewed),
                          deadline)
        snap = s._write()
        if s._account(account.account_id, snap) != account:
            s._acc[account.account_id] = account
            s._log.append(Write("account_put", account.account_id, account=account))

    def delete(self, account_id: str) -> bool:
        """Delete the account; True iff it existed (then logs "account_deleted")."""
        s = self._s
        if not s._in_tx:
            return s._autocommit(self.delete, account_id)
        snap = s._write()
        if s._account(account_id, snap) is None:
            return False
        s._acc[account_id] = None
        s._log.append(Write("account_deleted", account_id))
        return True

    def due(self, now: datetime, limit: int) -> list[Account]:
        """Up to ``limit`` accounts with deadline <= ``now`` (aware datetime), not renewed and
        with no marker for their current version, ordered by (deadline, account_id)."""
        if limit < 0:
            raise ValueError(f"limit={limit}: must be >= 0")
        now = _utc(now, "now")
        s = self._s
        snap = s._read()
        db = s._db
        if snap == db._commit_no and not s._acc and not s._mk:  # fast path: latest state
            result = []
            for deadline, account_id in db._latest_due():
                if deadline > now or len(result) == limit:
                    break
                result.append(db._accounts.latest(account_id))
            return result
        candidates = (
            a for a in self._visible(snap)
            if a.deadline <= now and not a.renewed
            and not s._marker_count((a.account_id, a.cleanup_version), snap)
        )
        return heapq.nsmallest(limit, candidates, key=lambda a: (a.deadline, a.account_id))

    def all(self) -> list[Account]:
        """Every account, ordered by account_id."""
        return sorted(self._visible(self._s._read()), key=lambda a: a.account_id)

    def _visible(self, snap: int):
        s = self._s
        committed = s._db._accounts.items_at(snap)
        if not s._acc:
            return (account for _, account in committed)
        merged = dict(committed)
        merged.update(s._acc)
        return (account for account in merged.values() if account is not None)


class MemoryCleanupStore:
    """Cleanup markers of one session (see ``acksim.model.store_api.CleanupStore``)."""

    def __init__(self, session: MemorySession) -> None:
        self._s = session

    def was_applied(self, account_id: str, cleanup_version: int) -> bool:
        """True iff a marker row for (account_id, cleanup_version) is visible."""
        s = self._s
        return s._marker_count((account_id, cleanup_version), s._read()) > 0

    def apply_once(self, *, account_id: str, cleanup_version: int) -> bool:
        """Add the marker; True iff a row was added (always, without unique markers).
        Logs "cleanup_applied" when added."""
        s = self._s
        if not s._in_tx:
            return s._autocommit(
                self.apply_once, account_id=account_id, cleanup_version=cleanup_version
            )
        key = (account_id, cleanup_version)
        snap = s._write()
        if s._unique_markers and s._marker_count(key, snap):
            return False
        s._mk[key] = s._mk.get(key, 0) + 1
        s._log.append(Write("cleanup_applied", account_id, cleanup_version))
        return True

    def markers(self) -> list[tuple[str, int]]:
        """Every marker row as (account_id, cleanup_version), sorted, duplicates kept."""
        s = self._s
        counts = dict(s._db._markers.items_at(s._read()))
        for key, added in s._mk.items():
            counts[key] = counts.get(key, 0) + added
        return [key for key in sorted(counts) for _ in range(counts[key])]


class MemoryOutbox:
    """Outbox events of one session (see ``acksim.model.store_api.Outbox``)."""

    def __init__(self, session: MemorySession) -> None:
        self._s = session

    def add_once(self, *, event_key: str, account_id: str, cleanup_version: int) -> bool:
        """Add a pending event; True iff a row was added (always, without unique keys).
        Logs "outbox_added" when added."""
        s = self._s
        if not s._in_tx:
            return s._autocommit(self.add_once, event_key=event_key, account_id=account_id,
                                 cleanup_version=cleanup_version)
        snap = s._write()
        if s._unique_keys and self._has_key(event_key, snap):
            return False
        s._new.append([event_key, account_id, cleanup_version, "pending"])
        s._log.append(Write("outbox_added", account_id, cleanup_version, event_key))
        return True

    def pending(self, limit: int) -> list[OutboxEvent]:
        """Up to ``limit`` pending events, ordered by seq."""
        if limit < 0:
            raise ValueError(f"limit={limit}: must be >= 0")
        s = self._s
        snap = s._read()
        db = s._db
        if snap == db._commit_no and not s._status and not s._new:
            seqs = db._pending
            return [db._outbox.latest(seq) for seq, _ in zip(seqs, range(limit))]
        return [e for e in s._events(snap) if e.status == "pending"][:limit]

    def mark_sent(self, event_key: str, seq: int | None = None) -> None:
        """Set status "sent" on every row with ``event_key`` (no-op if none), or with ``seq``
        only on the committed row of that seq (a relay that sends row by row); logs
        "outbox_sent" per row whose status changed."""
        self._mark(event_key, "sent", "outbox_sent", seq)

    def mark_failed(self, event_key: str, seq: int | None = None) -> None:
        """Set status "failed" likewise; logs "outbox_failed" per changed row."""
        self._mark(event_key, "failed", "outbox_failed", seq)

    def events(self) -> list[OutboxEvent]:
        """Every event, ordered by seq."""
        s = self._s
        return s._events(s._read())

    def _has_key(self, event_key: str, snap: int) -> bool:
        s = self._s
        if any(s._db._outbox.at(seq, snap) for seq in s._db._keys.get(event_key, ())):
            return True
        return any(row[0] == event_key for row in s._new)

    def _mark(self, event_key: str, status: str, kind: str, only: int | None = None) -> None:
        s = self._s
        if not s._in_tx:
            return s._autocommit(self._mark, event_key, status, kind, only)
        snap = s._write()
        for seq in s._db._keys.get(event_key, ()):
            if only is not None and seq != only:
                continue
            event = s._db._outbox.at(seq, snap)
            if event is not None and s._status.get(seq, event.status) != status:
                s._status[seq] = status
                s._log.append(Write(kind, event.account_id, event.cleanup_version, event_key))
        for row in s._new if only is None else ():  # rows of this transaction have no seq yet
            if row[0] == event_key and row[3] != status:
                row[3] = status
                s._log.append(Write(kind, row[1], row[2], event_key))
