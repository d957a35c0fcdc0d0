"""The consumers waiting for a delivery, oldest first, and which of them can be served now.

A consumer's receive waits in line until a message is visible. The oldest waiting consumer
is served first, but only one that can reach the queue now: while the scenario pauses a
worker, cuts it off by a partition or restarts the broker, ``q.reachable`` (set by
``acksim.world.links``; None when nothing ever cuts a consumer off) says no, and the
consumers behind it are served before it. ``q`` is the ``Queue``
(``acksim.world.queue.core``), which imports this module: named, not imported.
"""

from __future__ import annotations

from collections import deque

import simpy


class WaitingLine:
    """The waiting receives of one queue ``q``: ``line`` holds (SimPy event, consumer) pairs
    in the order they were asked for; the queue appends to it and succeeds each taken event
    with a ``Delivery``."""

    def __init__(self, q) -> None:
        self.q = q
        self.line: deque[tuple[simpy.Event, str]] = deque()

    def any_reachable(self) -> bool:
        """Whether a waiting consumer can be served now (one that can reach the queue)."""
        reachable = self.q.reachable
        if reachable is None:
            return bool(self.line)
        return any(reachable(c) for _e, c in self.line)

    def take(self) -> tuple[simpy.Event, str]:
        """The oldest waiting consumer that can reach the queue, taken out of the line.
        Raises RuntimeError when there is none (``any_reachable`` said there was one)."""
        reachable = self.q.reachable
        if reachable is None:
            return self.line.popleft()
        for i, (event, consumer) in enumerate(self.line):
            if reachable(consumer):
                del self.line[i]
                return event, consumer
        raise RuntimeError("no reachable consumer")
