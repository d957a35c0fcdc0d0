"""Committed values kept by commit number, for the in-memory store's snapshots
(``acksim.model.memory_store``)."""

from __future__ import annotations


class Versioned:
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
