"""The at-least-once queue, modelled on Amazon SQS and the design documents' REST queue, with
the redelivery mechanisms of the other systems of docs/queue-semantics.md.

A message is like a library book: receiving it lends it out (a lease: the visibility
timeout), acking returns it for good (deletes it), and a loan that runs out puts it back on
the shelf for the next reader (redelivery). Each loan has its own receipt; an ack with an
outdated receipt deletes nothing. How a loan runs out is ``queue.redelivery``: a timer per
loan (SQS), a sweep that notices lapsed loans (BullMQ's stalled check, a Redis Streams
claimer, RabbitMQ's once-a-minute ack-timeout check, which takes back every loan of that
consumer), the consumer's death (RabbitMQ), or never (pop-on-fetch: receiving deletes). A
live holder may renew its lease by heartbeats, up to a cap from the receipt (SQS: 12 h).

A message already received ``max_receive_count`` times goes to the dead-letter queue when it
would be received once more (SQS: the receive count exceeds maxReceiveCount), from where an
operator can redrive it; ``max_attempts`` failures and ``max_stalled_count`` stalls end it the
same way (or drop it: ``on_exhaustion``). Retention deletes a message, wherever it is,
``retention_s`` after it was sent; a length cap trims the oldest entries, pending or not.

Every change is recorded in the history; nothing is dropped silently. The data of messages
and loans is ``acksim.world.queue.message``; how a loan ends without an ack (lease timers,
heartbeats, sweeps, a lost worker, the redelivery mechanisms) is ``acksim.world.queue.leases``;
retention is ``acksim.world.queue.retention``, the length cap ``acksim.world.queue.length_cap``,
FIFO deduplication ``acksim.world.queue.fifo_dedup`` and the consumers waiting for a delivery
``acksim.world.queue.waiting_line``.
"""

from __future__ import annotations

import random
from collections import deque

import simpy

from acksim.history import History
from acksim.model.job import CleanupJob
from acksim.scenario import Queue as QueueConfig
from acksim.world.queue.delivery_limit import returned
from acksim.world.queue.fifo_dedup import FifoDedup
from acksim.world.queue.leases import lend, sweeper, worker_lost
from acksim.world.queue.length_cap import LengthCap
from acksim.world.queue.message import Delivery, Message, MessageTooLarge, body_bytes
from acksim.world.queue.recovery import RecoverySweeps
from acksim.world.queue.retention import Retention
from acksim.world.queue.waiting_line import WaitingLine

__all__ = ["Delivery", "MessageTooLarge", "Queue", "body_bytes"]


class Queue:
    """The queue actor's state and operations; timers are SimPy timeouts with callbacks.

    ``publish`` enqueues (or deduplicates, in FIFO mode); ``receive`` returns a SimPy event
    whose value is a ``Delivery``; ``ack``, ``nack``, ``consumer_lost`` and ``redrive`` change
    a message's state. ``rng`` decides spurious duplicates; ``forced_duplicates`` names
    delivery numbers that get one regardless. With ``sweep_interval_s`` > 0 the queue runs its
    own sweeper process. Times are virtual seconds.

    The interface its mechanisms use (``leases``, ``delivery_limit``, ``recovery``,
    ``tombstones``, ``retention``, ``length_cap``, ``broker``, and the world's pauses and
    partitions), besides ``env``, ``history``, ``config``, ``reachable`` and ``broker``:

    - ``messages``: every message ever published, message id -> ``Message``;
    - ``loans``: the messages on loan (in flight), message id -> ``Message``, in lending order;
    - ``popped``: pop-on-fetch messages still being worked on, message id -> consumer;
    - ``at(delay_s, fn, *args)``: call ``fn(*args)`` ``delay_s`` virtual seconds from now;
    - ``log(kind, actor, msg, receive_count, detail)``: record one change of ``msg``;
    - ``make_visible(msg, head)``: back on the shelf (at its head with ``head``), dispatched;
    - ``requeue(msg, actor, delay_s, detail)``: end a loan with a failure, then requeue;
    - ``exhaust(msg, reason)``: to the dead-letter queue, or dropped;
    - ``delete(msg)``: gone for good (acked, expired, trimmed, dropped);
    - ``job_gone(msg)``: its job no longer held, though its id stays (a tombstone);
    - ``dispatch()``: hand visible messages to the consumers waiting that can reach the queue.

    ``Message`` is the queue's record of a message (``acksim.world.queue.message``); a
    mechanism reads and sets its fields (state, receipt, lease, counts) itself.
    """

    def __init__(self, env: simpy.Environment, history: History, config: QueueConfig,
                 rng: random.Random, forced_duplicates: frozenset[int] = frozenset()) -> None:
        self.env = env
        self.history = history
        self.config = config
        self.rng = rng
        self.forced_duplicates = forced_duplicates  # delivery numbers that also get a spurious copy
        self.messages: dict[int, Message] = {}
        self._ready: deque[tuple[int, bool]] = deque()  # (message id, duplicate copy)
        self.waiting = WaitingLine(self)  # the receives waiting for a delivery
        self._dlq: list[int] = []
        self.fifo_dedup = FifoDedup(history, config.fifo_dedup_window_s)
        self._live = 0
        self._deliveries = 0
        self._held: dict[tuple[str, int], int] = {}  # (account, version) -> messages not deleted
        self.loans: dict[int, Message] = {}  # on loan, in delivery order
        self.popped: dict[int, str] = {}  # pop-on-fetch: message id -> consumer still working on it
        # set by acksim.world.links when the scenario pauses, partitions or restarts: who can
        # reach the queue now (consumer -> bool), and the broker's up/down state
        self.reachable = None
        self.broker = None
        self.retention = Retention(self)
        self.length_cap = LengthCap(self) if config.max_length else None
        if config.sweep_interval_s > 0 and config.redelivery != "none":
            env.process(sweeper(self))
        self.recovery = RecoverySweeps(self) if config.recovery_sweep != "none" else None

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
        if self.broker is not None and self.broker.down():
            return self.broker.defer(job, deadline_s, delay_s, actor, size)  # retried at the restart
        now = self.env.now
        if cfg.kind == "fifo" and self.fifo_dedup.drops(job, deadline_s, actor, now):
            return None
        mid = len(self.messages) + 1
        msg = Message(mid, job, deadline_s, now)
        self.messages[mid] = msg
        self._live += 1
        key = (job.account_id, job.cleanup_version)
        self._held[key] = self._held.get(key, 0) + 1
        self.history.record("published", actor, message_id=mid, account_id=job.account_id,
                            cleanup_version=job.cleanup_version, deadline=deadline_s,
                            visible_at=now + delay_s)
        self.retention.retain(msg)
        if cfg.max_length:
            self.length_cap.add(mid)
        if delay_s > 0:
            self.at(delay_s, self._undelay, msg)
        else:
            self.make_visible(msg)
        return mid

    # --- consumers -------------------------------------------------------------------------
    def receive(self, consumer: str) -> simpy.Event:
        """A SimPy event that succeeds with the next ``Delivery`` for ``consumer``."""
        event = self.env.event()
        self.waiting.line.append((event, consumer))
        if self.recovery is not None:
            self.recovery.receiving(consumer)
        self.dispatch()
        return event

    def cancel(self, event: simpy.Event) -> None:
        """Withdraw a pending ``receive`` (the consumer crashed while waiting)."""
        line = self.waiting.line
        for i, (ev, _c) in enumerate(line):
            if ev is event:
                del line[i]
                return

    def ack(self, delivery: Delivery, consumer: str) -> bool:
        """Delete the message if ``delivery``'s receipt is still current (or it is a spurious
        copy and the message still exists, or ``ack_by`` is "message_id" and it still exists:
        detail "by_id" when another loan held it). Returns whether it deleted; records
        "acked" or "ack_stale". On a pop-on-fetch queue the message went at receipt: the ack
        only ends the consumer's work on it, returns True and records nothing."""
        msg = self.messages[delivery.message_id]
        if self.config.redelivery == "none" and not delivery.duplicate:
            self.popped.pop(msg.id, None)
            return True
        current = msg.state == "in_flight" and msg.receipt == delivery.receipt
        exists = msg.state in ("visible", "in_flight", "delayed")
        by_id = not current and self.config.ack_by == "message_id" and exists
        if current or by_id or (delivery.duplicate and exists):
            self.delete(msg)
            self.log("acked", consumer, msg, delivery.receive_count,
                     "duplicate" if delivery.duplicate else ("tombstone" if delivery.tombstone else
                                                             ("by_id" if by_id else "")))
            return True
        reason = "deleted" if msg.state in ("deleted", "dlq") else "receipt_expired"
        self.log("ack_stale", consumer, msg, delivery.receive_count, reason)
        return False

    def nack(self, delivery: Delivery, consumer: str, delay_s: float) -> bool:
        """Give the message back: receivable again after ``delay_s`` (0 = at once). A nack
        with an outdated receipt or of a duplicate copy changes nothing. Returns whether it
        took effect."""
        msg = self.messages[delivery.message_id]
        self.popped.pop(msg.id, None)  # pop-on-fetch: gone, nothing to give back
        if delivery.duplicate or not (msg.state == "in_flight" and msg.receipt == delivery.receipt):
            return False
        self.requeue(msg, consumer, delay_s, "")
        return True

    def consumer_lost(self, consumer: str, executing: int | None = None, only: bool = False) -> None:
        """``consumer`` crashed while executing message ``executing`` (None: none), or with
        ``only`` just the child running that message's job did. Its loans get no more
        heartbeats. The executing one is acked ("ack", Celery's acks_late default), requeued
        at once ("requeue", task_reject_on_worker_lost) or left to its lease ("lease") by
        ``on_worker_lost``; the others (held, prefetched) are left to their lease, which for
        "consumer_death" redelivery ends ``disconnect_detect_s`` later."""
        worker_lost(self, consumer, executing, only)
        if self.recovery is not None and not only:  # the process died, not just one job's child
            self.recovery.lost(consumer)

    def dead_letter(self, delivery: Delivery, consumer: str, reason: str) -> bool:
        """The consumer ends the message of its current loan now (an error no retry can fix):
        to the dead-letter queue, or dropped when ``on_exhaustion`` is "drop". Returns
        whether it did (False: an outdated loan, or a popped message already gone)."""
        msg = self.messages[delivery.message_id]
        self.popped.pop(msg.id, None)
        if delivery.duplicate or not (msg.state == "in_flight" and msg.receipt == delivery.receipt):
            return False
        self.loans.pop(msg.id, None)
        msg.receipt += 1
        self.exhaust(msg, reason)
        return True

    def lease_held(self, delivery: Delivery) -> bool:
        """Whether ``delivery``'s loan is still the current one and its lease has not lapsed."""
        msg = self.messages[delivery.message_id]
        return (msg.state == "in_flight" and msg.receipt == delivery.receipt
                and msg.lease_until > self.env.now)

    def backoff(self, receive_count: int) -> float:
        """Nack delay for a message received ``receive_count`` times (``[queue].nack_backoff``)."""
        return self.config.nack_backoff(receive_count)

    # --- operator --------------------------------------------------------------------------
    def redrive(self, actor: str = "operator") -> int:
        """Move every dead-lettered message back to the queue with its receive count (and its
        failure and stall counts) reset, as SQS's redrive does. Returns how many moved."""
        moved = [m for m in self._dlq if self.messages[m].state == "dlq"]  # retention may have taken some
        self._dlq = []
        for mid in moved:
            msg = self.messages[mid]
            msg.receive_count = msg.failures = msg.stalls = msg.returns = 0
            self._live += 1
            self.log("redriven", actor, msg, 0)
            self.make_visible(msg)
        return len(moved)

    # --- observation -----------------------------------------------------------------------
    @property
    def idle(self) -> bool:
        """True when no message is delayed, visible or in flight, and no popped message is
        still being worked on (the DLQ may hold some)."""
        return self._live == 0 and not self.popped

    @property
    def dead_letter_queue(self) -> tuple[int, ...]:
        """Ids of the messages in the dead-letter queue, oldest first."""
        return tuple(m for m in self._dlq if self.messages[m].state == "dlq")

    def holds(self, account_id: str, cleanup_version: int) -> bool:
        """Whether a message for this job is delayed, visible, in flight or dead-lettered."""
        return self._held.get((account_id, cleanup_version), 0) > 0

    def in_flight(self) -> list[int]:
        """Ids of the messages received and not yet acked, nacked or expired, ascending."""
        return sorted(self.loans)

    # --- the interface its mechanisms use (see the class docstring) -------------------------
    def at(self, delay_s: float, fn, *args) -> None:
        """Call ``fn(*args)`` ``delay_s`` virtual seconds from now (a SimPy timeout's callback,
        its value ``fn``'s name: the name tells the event budget who set it)."""
        ev = self.env.timeout(delay_s, getattr(fn, "__name__", "timer"))
        ev.callbacks.append(lambda _e: fn(*args))

    def log(self, kind: str, actor: str, msg: Message, rc: int | None, detail: str = "") -> None:
        """Record ``kind`` by ``actor`` about ``msg`` (receive count ``rc``, None: none) with
        ``detail``; a delivery or an ack is traffic for the recovery sweeps."""
        self.history.record(kind, actor, message_id=msg.id, account_id=msg.job.account_id,
                            cleanup_version=msg.job.cleanup_version, receive_count=rc,
                            deadline=msg.deadline_s, detail=detail)
        if self.recovery is not None and kind in ("delivered", "acked", "ack_stale"):
            self.recovery.traffic(actor)

    def requeue(self, msg: Message, actor: str, delay_s: float, detail: str) -> None:
        """End the loan of ``msg`` with a failure by ``actor``: record "nacked" (``detail``),
        count the failure (not for "worker_lost"), then requeue it after ``delay_s`` virtual
        seconds or, past ``max_attempts`` failures or the delivery limit, exhaust it."""
        cfg = self.config
        msg.state = "delayed"
        msg.receipt += 1  # the loan is over; the in-flight timer must not fire
        self.loans.pop(msg.id, None)
        if detail != "worker_lost":  # broker requeues of a lost worker carry no counter [C-DISC]
            msg.failures += 1
        self.history.record("nacked", actor, message_id=msg.id, account_id=msg.job.account_id,
                            cleanup_version=msg.job.cleanup_version, receive_count=msg.receive_count,
                            deadline=msg.deadline_s, visible_at=self.env.now + delay_s, detail=detail)
        if cfg.max_attempts and msg.failures >= cfg.max_attempts:
            self.exhaust(msg, "max_attempts")
        elif returned(self, msg):
            pass  # past the delivery limit: exhausted
        elif delay_s > 0:
            self.at(delay_s, self._undelay, msg)
        else:
            self.make_visible(msg, head=cfg.requeue_at_head)

    def make_visible(self, msg: Message, head: bool = False) -> None:
        """Put ``msg`` back on the shelf (at its head with ``head``), ending any loan of it,
        and hand it out at once if a consumer waits."""
        msg.state = "visible"
        self.loans.pop(msg.id, None)
        if head:
            self._ready.appendleft((msg.id, False))
        else:
            self._ready.append((msg.id, False))
        self.dispatch()

    def exhaust(self, msg: Message, reason: str) -> None:
        """Out of deliveries, attempts or stalls (``reason``): to the dead-letter queue
        ("dead_lettered"), or dropped ("dropped") when ``on_exhaustion`` is "drop". The
        caller has ended its loan."""
        if self.config.on_exhaustion == "drop":
            self.delete(msg)
            self.log("dropped", "queue", msg, msg.receive_count, reason)
            return
        if msg.state not in ("deleted", "dlq"):
            self._live -= 1
        msg.state = "dlq"
        self._dlq.append(msg.id)
        self.log("dead_lettered", "queue", msg, msg.receive_count, reason)

    def delete(self, msg: Message) -> None:
        """``msg`` is gone for good, wherever it was (its loan ends); records nothing."""
        self.loans.pop(msg.id, None)
        if msg.state not in ("deleted", "dlq"):
            self._live -= 1
        if msg.state != "deleted" and not msg.tombstone:  # a tombstone's job was counted gone at the trim
            self._held[(msg.job.account_id, msg.job.cleanup_version)] -= 1
        msg.state = "deleted"

    def job_gone(self, msg: Message) -> None:
        """The job of ``msg`` is gone though its id stays pending (a tombstone's body was
        trimmed): ``holds`` no longer counts it, and its ``delete`` will not again."""
        self._held[(msg.job.account_id, msg.job.cleanup_version)] -= 1

    def dispatch(self) -> None:
        """Hand visible messages to waiting consumers, oldest first: skip shelf entries that
        went stale (expired, redelivered), dead-letter a message past its receive limit,
        start the visibility timer of a real delivery, and maybe queue a spurious copy."""
        cfg = self.config
        while self._ready and self.waiting.any_reachable():
            mid, dup = self._ready.popleft()
            msg = self.messages[mid]
            if dup:
                if msg.state in ("deleted", "dlq"):
                    continue
                delivery = Delivery(mid, msg.job, msg.deadline_s, msg.receive_count, -1,
                                    self._next_number(), duplicate=True, tombstone=msg.tombstone)
            else:
                if msg.state != "visible":
                    continue  # expired or redelivered meanwhile: a stale shelf entry
                if cfg.max_receive_count and msg.receive_count >= cfg.max_receive_count:
                    self.exhaust(msg, "max_receive_count")
                    continue
                event, consumer = self.waiting.take()
                lend(self, msg, consumer)
                delivery = Delivery(mid, msg.job, msg.deadline_s, msg.receive_count, msg.receipt,
                                    self._next_number(), tombstone=msg.tombstone)
                if cfg.redelivery == "none":  # pop-on-fetch: the queue forgets it now
                    self.delete(msg)
                    self.popped[mid] = consumer
                    self.log("delivered", consumer, msg, delivery.receive_count, "pop_on_fetch")
                else:
                    self.log("delivered", consumer, msg, delivery.receive_count,
                             "tombstone" if msg.tombstone else "")
                event.succeed(delivery)
                self._maybe_duplicate(msg, delivery)
                continue
            event, consumer = self.waiting.take()
            self.log("delivered", consumer, msg, delivery.receive_count, "duplicate")
            event.succeed(delivery)

    # --- internals -------------------------------------------------------------------------
    def _undelay(self, msg: Message) -> None:
        if msg.state == "delayed":
            self.make_visible(msg)

    def _maybe_duplicate(self, msg: Message, delivery: Delivery) -> None:
        cfg = self.config
        if delivery.number in self.forced_duplicates or (
                cfg.duplicate_probability and self.rng.random() < cfg.duplicate_probability):
            self._ready.append((msg.id, True))

    def _next_number(self) -> int:
        self._deliveries += 1
        return self._deliveries
