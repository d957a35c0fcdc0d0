"""The three stores of an in-memory session (``acksim.model.memory_store``): each reads the
session's snapshot (``_read``) or takes write access (``_write``, ``_lock_row``) and keeps its
writes in the session's overlay until commit."""

from __future__ import annotations

import heapq
from datetime import datetime, timezone

from acksim.model.job import Account
from acksim.model.store_api import OutboxEvent, Write

_UTC = timezone.utc


def utc(when: datetime, what: str) -> datetime:
    """``when`` as a UTC datetime (ValueError if naive)."""
    if when.tzinfo is None or when.utcoffset() is None:
        raise ValueError(f"{what} must be a timezone-aware datetime, got naive {when!r}")
    return when if when.tzinfo is _UTC else when.astimezone(_UTC)


class MemoryAccounts:
    """Accounts of one session (see ``acksim.model.store_api.Accounts``)."""

    def __init__(self, session) -> None:
        self._s = session

    def get(self, account_id: str, for_update: bool = False) -> Account | None:
        """The account visible to this session, or None. ``for_update`` inside a transaction:
        lock the row first (``_lock_row``: ``BusyError``, ``BusySnapshotError``); outside one
        it is a plain read (the lock would end with the call)."""
        s = self._s
        if for_update and s._in_tx:
            return s._account(account_id, s._lock_row(account_id))
        return s._account(account_id, s._read())

    def put(self, account: Account) -> None:
        """Insert or replace ``account`` (deadline converted to UTC; ValueError if naive).
        Logs "account_put" unless the visible account was already identical."""
        s = self._s
        if not s._in_tx:
            return s._autocommit(self.put, account)
        deadline = utc(account.deadline, "deadline")
        account = Account(account.account_id, account.cleanup_version, bool(account.renewed),
                          deadline)
        snap = s._lock_row(account.account_id) if s._rc else s._write()
        if s._account(account.account_id, snap) != account:
            s._acc[account.account_id] = account
            s._log.append(Write("account_put", account.account_id, account=account))

    def delete(self, account_id: str) -> bool:
        """Delete the account; True iff it existed (then logs "account_deleted")."""
        s = self._s
        if not s._in_tx:
            return s._autocommit(self.delete, account_id)
        snap = s._lock_row(account_id) if s._rc else s._write()
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
        now = utc(now, "now")
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

    def __init__(self, session) -> None:
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
        return self._add(account_id, cleanup_version, s._write())

    def apply_if_current(self, *, account_id: str, cleanup_version: int) -> bool:
        """Add the marker only where the account exists with ``cleanup_version`` and is not
        renewed, locking its row first (``_lock_row``); True iff a row was added. Logs
        "cleanup_applied" when added."""
        s = self._s
        if not s._in_tx:
            return s._autocommit(
                self.apply_if_current, account_id=account_id, cleanup_version=cleanup_version
            )
        snap = s._lock_row(account_id)
        account = s._account(account_id, snap)
        if account is None or account.cleanup_version != cleanup_version or account.renewed:
            return False
        return self._add(account_id, cleanup_version, s._write())

    def _add(self, account_id: str, cleanup_version: int, snap: int) -> bool:
        s = self._s
        key = (account_id, cleanup_version)
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

    def __init__(self, session) -> None:
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
