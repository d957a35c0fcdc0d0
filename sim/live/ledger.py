"""What the parent of a live run knows of its messages: what it published, and what the
workers' journals say became of them.

The parent publishes every job itself (``published``: message id -> account, version and
deadline in virtual seconds) and learns the rest by reading the new complete lines of the
workers' journals (``acksim.live.journal``) from time to time (``tail``): which messages
ended (acked, acked stale or dead-lettered: ``terminal``), which worker holds which message
now (``holding``), every delivery of each message (``deliveries_seen``: wall s, worker,
receive count) and whose ack ended it (``acked_by``). The run is over when nothing published
is ``unfinished`` and no worker holds a message.
"""

from __future__ import annotations

import json
from pathlib import Path


class Ledger:
    """The messages of one live run; ``journals`` is the folder of every process's journal
    (the parent's own, "00-parent.jsonl", is not read back). None until the run has one."""

    def __init__(self, journals: Path | None = None) -> None:
        self.journals = journals
        self.published: dict[int, tuple[str, int, float]] = {}  # message -> (account, version, deadline s)
        self.terminal: set[int] = set()
        self.holding: dict[str, int] = {}
        self.dead: list[int] = []
        self.deliveries_seen: dict[int, list[tuple[float, str, int]]] = {}  # message -> (wall, actor, count)
        self.acked_by: dict[int, str] = {}  # message -> the worker whose ack ended it
        self._offsets: dict[str, int] = {}

    def unfinished(self) -> set[int]:
        """Ids of the messages published and not yet ended."""
        return self.published.keys() - self.terminal

    def dead_lettered(self, mid: int) -> bool:
        """The dead-letter target holds message ``mid``: it ended. Returns False when this
        was known already."""
        if mid in self.dead:
            return False
        self.dead.append(mid)
        self.terminal.add(mid)
        return True

    def tail(self) -> None:
        """Read the workers' new journal lines: which messages ended (``terminal``, ``dead``,
        ``acked_by``), who holds what (``holding``) and every delivery (``deliveries_seen``).
        A line still being written is read at the next call."""
        for path in sorted(self.journals.iterdir()):
            if path.name.startswith("00-"):
                continue
            key = path.name
            with open(path, "rb") as f:
                f.seek(self._offsets.get(key, 0))
                data = f.read()
            cut = data.rfind(b"\n") + 1
            self._offsets[key] = self._offsets.get(key, 0) + cut
            for raw in data[:cut].splitlines():
                line = json.loads(raw)
                k, actor, mid = line["k"], line["a"], line.get("message_id")
                if k in ("acked", "ack_stale", "dead_lettered"):
                    self.terminal.add(mid)
                if k == "dead_lettered":
                    self.dead.append(mid)
                if k == "acked":
                    self.acked_by.setdefault(mid, actor)
                if k == "delivered":
                    self.holding[actor] = mid
                    self.deliveries_seen.setdefault(mid, []).append((line["w"], actor, line.get("receive_count", 0)))
                elif k in ("acked", "ack_stale", "nacked", "crashed", "ack_failed"):
                    self.holding.pop(actor, None)


__all__ = ["Ledger"]
