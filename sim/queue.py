"""The at-least-once queue, modelled on Amazon SQS and the design documents' REST queue.

A message is like a library book: receiving it lends it out (it becomes invisible for the
visibility timeout), acking returns it for good (deletes it), and a loan that runs out puts it
back on the shelf for the next reader (redelivery). Each loan has its own receipt; an ack with
an outdated receipt deletes nothing. A message already received ``max_receive_count`` times
goes to the dead-letter queue when it would be received once more (SQS: the receive count
exceeds maxReceiveCount), from where an operator can redrive it.
Retention deletes a message, wherever it is, ``retention_s`` after it was sent.

Every change is recorded in the history; nothing is dropped silently.
"""

from __future__ import annotations

import json
import random
from collections import deque
from dataclasses import dataclass

import simpy

from model.job import CleanupJob
from sim.history import History
from sim.scenario import Queue as QueueConfig


class MessageTooLarge(ValueError):
    """A publish whose body exceeds ``queue.max_message_bytes`` (256 KB in the design documents)."""


@dataclass(frozen=True, slots=True)
class Delivery:
    """One receipt of one message. ``number``: 1-based count of deliveries over the whole run;
    ``receipt``: this loan's receipt; ``duplicate``: a spurious extra copy (no visibility timer,
    its ack deletes the message if it still exists)."""

    message_id: int
    job: CleanupJob
    deadline_s: float
    receive_count: int
    receipt: int
    number: int
    duplicate: bool = False


class _Message:
    __slots__ = ("id", "job", "deadline_s", "state", "receive_count", "receipt", "sent_at")

    def __init__(self, mid: int, job: CleanupJob, deadline_s: float, sent_at: float) -> None:
        self.id = mid
        self.job = job
        self.deadline_s = deadline_s
        self.state = "delayed"  # delayed | visible | in_flight | dlq | deleted
        self.receive_count = 0
        self.receipt = 0
        self.sent_at = sent_at


def body_bytes(job: CleanupJob, payload_bytes: int = 0) -> int:
    """Size in bytes of the JSON body the scheduler sends for ``job`` plus ``payload_bytes``
    of extra payload (a design that ships a player export in the message)."""
    body = json.dumps({"account_id": job.account_id, "cleanup_version": job.cleanup_version,
                       "deadline": job.deadline.isoformat()}, separators=(",", ":"))
    return len(body.encode()) + payload_bytes


class Queue:
    """The queue actor's state and operations; timers are SimPy timeouts with callbacks.

    ``publish`` enqueues (or deduplicates, in FIFO mode); ``receive`` returns a SimPy event
    whose value is a ``Delivery``; ``ack``, ``nack`` and ``redrive`` change a message's state.
    ``rng`` decides spurious duplicates; ``forced_duplicates`` names delivery numbers that get
    one regardless. Times are virtual seconds.
    """

    def __init__(self, env: simpy.Environment, history: History, config: QueueConfig,
                 rng: random.Random, forced_duplicates: frozenset[int] = frozenset()) -> None:
        self.env = env
        self.history = history
        self.config = config
        self.rng = rng
        self.forced_duplicates = forced_duplicates  # delivery numbers that also get a spurious copy
        self._messages: dict[int, _Message] = {}
        self._ready: deque[tuple[int, bool]] = deque()  # (message id, duplicate copy)
        self._getters: deque[tuple[simpy.Event, str]] = deque()
        self._dlq: list[int] = []
        self._dedup: dict[str, float] = {}
        self._live = 0
        self._deliveries = 0
        self._held: dict[tuple[str, int], int] = {}  # (account, version) -> messages not deleted

    # --- producers -------------------------------------------------------------------------
    def publish(self, job: CleanupJob, deadline_s: float, delay_s: float, actor: str,
                size: int) -> int | None:
        """Send ``job`` (body ``size`` bytes), receivable after ``delay_s``. Returns the message
        id, or None when FIFO deduplication dropped it. Raises ``MessageTooLarge`` and
        ValueError for a delay outside ``[0, max_delay_s]``."""
        cfg = self.config
        if size > cfg.max_message_bytes:
            raise MessageTooLarge(f"message body is {size} bytes; queue.max_message_bytes allows at most {cfg.max_message_bytes}")
        if not 0.0 <= delay_s <= cfg.max_delay_s:
            raise ValueError(f"delay {delay_s} s outside 0..{cfg.max_delay_s} (queue.max_delay_s)")
        now = self.env.now
        if cfg.kind == "fifo":
            key = f"{job.account_id}:{job.cleanup_version}"
            seen = self._dedup.get(key)
            if seen is not None and now - seen < cfg.fifo_dedup_window_s:
                self.history.record("deduplicated", actor, account_id=job.account_id,
                                    cleanup_version=job.cleanup_version, deadline=deadline_s)
                return None
            self._dedup[key] = now
        mid = len(self._messages) + 1
        msg = _Message(mid, job, deadline_s, now)
        self._messages[mid] = msg
        self._live += 1
        key = (job.account_id, job.cleanup_version)
        self._held[key] = self._held.get(key, 0) + 1
        self.history.record("published", actor, message_id=mid, account_id=job.account_id,
                            cleanup_version=job.cleanup_version, deadline=deadline_s,
                            visible_at=now + delay_s)
        self._at(cfg.retention_s, self._expire, msg)
        if delay_s > 0:
            self._at(delay_s, self._undelay, msg)
        else:
            self._make_visible(msg)
        return mid

    # --- consumers -------------------------------------------------------------------------
    def receive(self, consumer: str) -> simpy.Event:
        """A SimPy event that succeeds with the next ``Delivery`` for ``consumer``."""
        event = self.env.event()
        self._getters.append((event, consumer))
        self._dispatch()
        return event

    def cancel(self, event: simpy.Event) -> None:
        """Withdraw a pending ``receive`` (the consumer crashed while waiting)."""
        for i, (ev, _c) in enumerate(self._getters):
            if ev is event:
                del self._getters[i]
                return

    def ack(self, delivery: Delivery, consumer: str) -> bool:
        """Delete the message if ``delivery``'s receipt is still current (or it is a spurious
        copy and the message still exists). Returns whether it deleted; records "acked" or
        "ack_stale"."""
        msg = self._messages[delivery.message_id]
        current = msg.state == "in_flight" and msg.receipt == delivery.receipt
        if current or (delivery.duplicate and msg.state in ("visible", "in_flight", "delayed")):
            self._delete(msg)
            self._log("acked", consumer, msg, delivery.receive_count, "duplicate" if delivery.duplicate else "")
            return True
        reason = "deleted" if msg.state in ("deleted", "dlq") else "receipt_expired"
        self._log("ack_stale", consumer, msg, delivery.receive_count, reason)
        return False

    def nack(self, delivery: Delivery, consumer: str, delay_s: float) -> bool:
        """Give the message back: receivable again after ``delay_s`` (0 = at once). A nack
        with an outdated receipt or of a duplicate copy changes nothing. Returns whether it
        took effect."""
        msg = self._messages[delivery.message_id]
        if delivery.duplicate or not (msg.state == "in_flight" and msg.receipt == delivery.receipt):
            return False
        msg.state = "delayed"
        msg.receipt += 1  # the loan is over; the in-flight timer must not fire
        self.history.record("nacked", consumer, message_id=msg.id, account_id=msg.job.account_id,
                            cleanup_version=msg.job.cleanup_version, receive_count=msg.receive_count,
                            deadline=msg.deadline_s, visible_at=self.env.now + delay_s)
        if delay_s > 0:
            self._at(delay_s, self._undelay, msg)
        else:
            self._make_visible(msg)
        return True

    def backoff(self, receive_count: int) -> float:
        """Nack delay for a message received ``receive_count`` times: bounded exponential."""
        cfg = self.config
        return min(cfg.nack_backoff_base_s * 2 ** max(receive_count - 1, 0), cfg.nack_backoff_max_s)

    # --- operator --------------------------------------------------------------------------
    def redrive(self, actor: str = "operator") -> int:
        """Move every dead-lettered message back to the queue with its receive count reset,
        as SQS's redrive does. Returns how many moved."""
        moved = [m for m in self._dlq if self._messages[m].state == "dlq"]  # retention may have taken some
        self._dlq = []
        for mid in moved:
            msg = self._messages[mid]
            msg.receive_count = 0
            self._live += 1
            self._log("redriven", actor, msg, 0)
            self._make_visible(msg)
        return len(moved)

    # --- observation -----------------------------------------------------------------------
    @property
    def idle(self) -> bool:
        """True when no message is delayed, visible or in flight (the DLQ may hold some)."""
        return self._live == 0

    @property
    def dead_letter_queue(self) -> tuple[int, ...]:
        """Ids of the messages in the dead-letter queue, oldest first."""
        return tuple(m for m in self._dlq if self._messages[m].state == "dlq")

    def holds(self, account_id: str, cleanup_version: int) -> bool:
        """Whether a message for this job is delayed, visible, in flight or dead-lettered."""
        return self._held.get((account_id, cleanup_version), 0) > 0

    def in_flight(self) -> list[int]:
        """Ids of the messages received and not yet acked, nacked or expired."""
        return [m.id for m in self._messages.values() if m.state == "in_flight"]

    # --- internals -------------------------------------------------------------------------
    def _at(self, delay: float, fn, msg: _Message, *args) -> None:
        ev = self.env.timeout(delay)
        ev.callbacks.append(lambda _e: fn(msg, *args))

    def _log(self, kind: str, actor: str, msg: _Message, rc: int | None, detail: str = "") -> None:
        self.history.record(kind, actor, message_id=msg.id, account_id=msg.job.account_id,
                            cleanup_version=msg.job.cleanup_version, receive_count=rc,
                            deadline=msg.deadline_s, detail=detail)

    def _undelay(self, msg: _Message) -> None:
        if msg.state == "delayed":
            self._make_visible(msg)

    def _make_visible(self, msg: _Message) -> None:
        msg.state = "visible"
        self._ready.append((msg.id, False))
        self._dispatch()

    def _expire_visibility(self, msg: _Message, receipt: int) -> None:
        if msg.state == "in_flight" and msg.receipt == receipt:
            self._log("visibility_expired", "queue", msg, msg.receive_count)
            self._make_visible(msg)

    def _expire(self, msg: _Message) -> None:
        if msg.state == "deleted":
            return
        where = msg.state
        self._delete(msg)
        self._log("retention_expired", "queue", msg, msg.receive_count, where)

    def _delete(self, msg: _Message) -> None:
        if msg.state not in ("deleted", "dlq"):
            self._live -= 1
        if msg.state != "deleted":
            self._held[(msg.job.account_id, msg.job.cleanup_version)] -= 1
        msg.state = "deleted"

    def _dispatch(self) -> None:
        """Hand visible messages to waiting consumers, oldest first: skip shelf entries that
        went stale (expired, redelivered), dead-letter a message past its receive limit,
        start the visibility timer of a real delivery, and maybe queue a spurious copy."""
        cfg = self.config
        while self._getters and self._ready:
            mid, dup = self._ready.popleft()
            msg = self._messages[mid]
            if dup:
                if msg.state in ("deleted", "dlq"):
                    continue
                delivery = Delivery(mid, msg.job, msg.deadline_s, msg.receive_count, -1,
                                    self._next_number(), duplicate=True)
            else:
                if msg.state != "visible":
                    continue  # expired or redelivered meanwhile: a stale shelf entry
                if cfg.max_receive_count and msg.receive_count >= cfg.max_receive_count:
                    msg.state = "dlq"
                    self._live -= 1
                    self._dlq.append(mid)
                    self._log("dead_lettered", "queue", msg, msg.receive_count)
                    continue
                msg.state = "in_flight"
                msg.receive_count += 1
                msg.receipt += 1
                delivery = Delivery(mid, msg.job, msg.deadline_s, msg.receive_count, msg.receipt,
                                    self._next_number())
                self._at(cfg.visibility_timeout_s, self._expire_visibility, msg, msg.receipt)
            event, consumer = self._getters.popleft()
            self._log("delivered", consumer, msg, delivery.receive_count,
                      "duplicate" if dup else "")
            event.succeed(delivery)
            if not dup and (delivery.number in self.forced_duplicates or (
                    cfg.duplicate_probability and self.rng.random() < cfg.duplicate_probability)):
                self._ready.append((mid, True))

    def _next_number(self) -> int:
        self._deliveries += 1
        return self._deliveries
