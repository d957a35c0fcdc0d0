"""How a loan ends without an ack: the lease, its renewal and the redelivery mechanisms.

Receiving a message lends it out (``lend``): the lease runs ``visibility_timeout_s`` (capped
by ``max_lease_s``) and, with ``heartbeat_interval_s`` > 0, a live holder renews it from each
heartbeat up to ``max_lease_s`` from the receipt. A lapsed lease is noticed by a timer per
loan or, with ``sweep_interval_s`` > 0, only at the queue's sweeps (``sweeper``); the "claim"
mechanism (a Redis Streams claimer) notices it only at sweeps, never by timer. ``lapse`` then
takes it back by ``queue.redelivery``: "consumer_death" (the ack timeout closes the holder's
channel: every loan of that consumer is requeued), "stalled_sweep" (counted; past
``max_stalled_count`` stalls the message is exhausted), otherwise it is simply visible again.
``disconnected`` requeues a dead consumer's loan ``disconnect_detect_s`` after the death.

These are plain functions over a ``Queue`` ``q`` (``acksim.world.queue.core``, which imports them:
named, not imported here): they read its ``config`` and its ``loans`` and call its ``at``,
``log``, ``make_visible``, ``requeue``, ``exhaust`` and ``delete`` (the interface the ``Queue``
documents for its mechanisms). Times are virtual seconds.
"""

from __future__ import annotations

from acksim.world.queue.delivery_limit import returned
from acksim.world.queue.message import Message


def lend(q, msg: Message, consumer: str) -> None:
    """Start a loan of ``msg`` to ``consumer``: lease, its timer (when expiry is continuous)
    and heartbeats."""
    cfg, now = q.config, q.env.now
    msg.state = "in_flight"
    msg.receive_count += 1
    msg.receipt += 1
    msg.holder, msg.received_at, msg.orphaned = consumer, now, False
    msg.lease_until = now + min(cfg.visibility_timeout_s, cfg.max_lease_s)
    q.loans[msg.id] = msg
    if cfg.sweep_interval_s == 0 and cfg.redelivery != "claim":
        q.at(msg.lease_until - now, _lease_timer, q, msg, msg.receipt)
    if cfg.heartbeat_interval_s > 0:
        q.at(cfg.heartbeat_interval_s, _heartbeat, q, msg, msg.receipt)


def _lease_timer(q, msg: Message, receipt: int) -> None:
    if msg.state == "in_flight" and msg.receipt == receipt:
        if msg.lease_until > q.env.now:  # renewed meanwhile
            q.at(msg.lease_until - q.env.now, _lease_timer, q, msg, receipt)
        else:
            lapse(q, msg)


def _heartbeat(q, msg: Message, receipt: int) -> None:
    cfg, now = q.config, q.env.now
    if msg.state != "in_flight" or msg.receipt != receipt or msg.orphaned or msg.lease_until <= now:
        return
    if q.reachable is not None and not q.reachable(msg.holder):  # paused or cut off: a beat lost
        if now + cfg.heartbeat_interval_s < msg.received_at + cfg.max_lease_s:
            q.at(cfg.heartbeat_interval_s, _heartbeat, q, msg, receipt)
        return
    cap = msg.received_at + cfg.max_lease_s
    msg.lease_until = max(msg.lease_until, min(now + cfg.visibility_timeout_s, cap))
    if now + cfg.heartbeat_interval_s < cap:
        q.at(cfg.heartbeat_interval_s, _heartbeat, q, msg, receipt)


def worker_lost(q, consumer: str, executing: int | None, only: bool) -> None:
    """``consumer`` died (see ``Queue.consumer_lost``): its popped messages are forgotten, its
    loans get no more heartbeats and each ends by ``on_worker_lost`` (the executing one) or
    by its lease, with "consumer_death" redelivery ``disconnect_detect_s`` later."""
    cfg = q.config
    for mid in [m for m, c in q.popped.items() if c == consumer and (not only or m == executing)]:
        del q.popped[mid]
    held = [m for m in q.loans.values()
            if m.holder == consumer and (not only or m.id == executing)]
    for msg in held:
        msg.orphaned = True
        policy = cfg.on_worker_lost if msg.id == executing else "lease"
        if policy == "ack":
            q.delete(msg)
            q.log("acked", consumer, msg, msg.receive_count, "worker_lost")
        elif policy == "requeue":
            q.requeue(msg, consumer, 0.0, "worker_lost")
        elif cfg.redelivery == "consumer_death":
            q.at(cfg.disconnect_detect_s, disconnected, q, msg, msg.receipt)


def sweeper(q):
    """SimPy process: every ``sweep_interval_s``, lapse the loans whose lease ran out."""
    while True:
        yield q.env.timeout(q.config.sweep_interval_s)
        now = q.env.now
        lapsed = [(m, m.receipt) for m in q.loans.values() if m.lease_until <= now]
        for msg, receipt in lapsed:
            # a channel closed earlier in this sweep may have requeued it, and it may
            # already be on a new loan: only the loan seen lapsed is taken back
            if msg.state == "in_flight" and msg.receipt == receipt:
                lapse(q, msg)


def lapse(q, msg: Message) -> None:
    """A lease ran out: redeliver by the queue's mechanism (not while the broker is down:
    ``acksim.world.queue.broker`` recovers at the restart)."""
    cfg = q.config
    if q.broker is not None and q.broker.down():
        return
    if cfg.redelivery == "consumer_death":  # the ack timeout closes the consumer's channel
        holder, orphaned = msg.holder, msg.orphaned  # (a requeued loan may be lent again at once)
        for m in [m for m in q.loans.values() if m.holder == msg.holder]:
            q.log("visibility_expired", "queue", m, m.receive_count, "consumer_timeout")
            if not returned(q, m):
                q.make_visible(m, head=cfg.requeue_at_head)
        if cfg.ack_timeout_ends_consumer and not orphaned:  # ... and its process with it
            from acksim.world.queue.consumer_timeout import end_consumer

            end_consumer(q, holder)
        return
    if cfg.redelivery == "stalled_sweep":
        msg.stalls += 1
        q.log("visibility_expired", "queue", msg, msg.receive_count, "stalled")
        if msg.stalls > cfg.max_stalled_count:
            q.loans.pop(msg.id, None)
            q.exhaust(msg, "max_stalled_count")
            return
    else:
        q.log("visibility_expired", "queue", msg, msg.receive_count,
              "claimed" if cfg.redelivery == "claim" else "")
    if not returned(q, msg):
        q.make_visible(msg, head=cfg.requeue_at_head)


def disconnected(q, msg: Message, receipt: int) -> None:
    """"consumer_death" redelivery: the broker noticed the holder of loan ``receipt`` died."""
    if msg.state == "in_flight" and msg.receipt == receipt and not (q.broker is not None and q.broker.down()):
        q.log("visibility_expired", "queue", msg, msg.receive_count, "connection_lost")
        if not returned(q, msg):
            q.make_visible(msg, head=q.config.requeue_at_head)
