"""The length cap: a queue holds at most ``queue.max_length`` entries and trims the oldest.

Like a Redis stream added to with XADD MAXLEN [R-INTRO], the cap counts entries in publish
order, whatever their state: past the cap the oldest entry is deleted ("trimmed", with the
state it was in as the detail), even one on loan, whose holder's ack then finds it gone.
With ``queue.tombstones`` such a pending entry keeps its id as a tombstone instead, as a
consumer group's pending entries list does [R-XRG] (``acksim.world.queue.tombstones``).
``q`` is the ``Queue`` (``acksim.world.queue.core``), which imports this module: named, not
imported.
"""

from __future__ import annotations

from collections import deque

from acksim.world.queue.tombstones import trim_pending


class LengthCap:
    """The length cap of one queue ``q`` (its ``config.max_length`` is not 0)."""

    def __init__(self, q) -> None:
        self.q = q
        self.stream: deque[int] = deque()  # message ids in publish order

    def add(self, newest: int) -> None:
        """Append message ``newest`` to the stream; trim the oldest entries past
        ``max_length``, whatever their state (a pending one may stay as a tombstone)."""
        q = self.q
        self.stream.append(newest)
        while len(self.stream) > q.config.max_length:
            msg = q.messages[self.stream.popleft()]
            if trim_pending(q, msg):
                continue
            if msg.state != "deleted":
                where = msg.state
                q.delete(msg)
                q.log("trimmed", "queue", msg, msg.receive_count, where)
