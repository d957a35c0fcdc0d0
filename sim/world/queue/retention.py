"""Retention: a message is deleted ``queue.retention_s`` after it was sent, wherever it is then.

SQS deletes a message its retention period after it was sent, whether it waits, is on loan
or sits in the dead-letter queue [AWS-Q][AWS-DLQ-RET]; here the deletion is recorded as
"retention_expired" with the state it was taken from as the detail. Messages are published
in time order and all kept equally long, so their retention instants come in publish order:
one timer runs at a time, for the oldest message still held, instead of a timer per message
held for the whole retention period. Times are virtual seconds. ``q`` is the ``Queue``
(``acksim.world.queue.core``), which imports this module: named, not imported.
"""

from __future__ import annotations

from collections import deque

from acksim.world.queue.message import Message
from acksim.world.ticks import delay_until


class Retention:
    """The retention of one queue ``q``: ``retain`` at every publish; the timer it sets is
    named ``_retention_due`` (the name the event budget sees)."""

    def __init__(self, q) -> None:
        self.q = q
        # (retention instant s, message) in publish order: one timer at a time, for the oldest
        self.pending: deque[tuple[float, Message]] = deque()

    def retain(self, msg: Message) -> None:
        """Delete ``msg`` ``retention_s`` after now, wherever it is then."""
        q = self.q
        at = q.env.now + q.config.retention_s
        self.pending.append((at, msg))
        if len(self.pending) == 1:
            q.at(q.config.retention_s, self._retention_due)

    def _retention_due(self) -> None:
        """The oldest retained message's instant: expire every message due now, in publish
        order, then time the next one still held (deleted ones need no timer)."""
        q = self.q
        now, pending = q.env.now, self.pending
        while pending and pending[0][0] <= now:
            self._expire(pending.popleft()[1])
        while pending and pending[0][1].state == "deleted":
            pending.popleft()
        if pending:
            q.at(delay_until(now, pending[0][0]), self._retention_due)

    def _expire(self, msg: Message) -> None:
        if msg.state == "deleted":
            return
        where = msg.state
        self.q.delete(msg)
        self.q.log("retention_expired", "queue", msg, msg.receive_count, where)
