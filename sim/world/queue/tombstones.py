"""Tombstones: a pending entry whose body was trimmed comes back as an id with no payload.

A Redis stream trimmed by its length cap (XADD MAXLEN, XTRIM) or by XDEL drops entries
whatever their state, but a consumer group's Pending Entries List keeps the ids it had
handed out: the holder can still XACK its entry, and an entry claimed or re-read later reads
back as an id whose payload is nil [R-XRG]; XAUTOCLAIM (Redis 7.0+) returns such ids in a
list of deleted entries and removes them from the PEL [R-XAC]. The job behind it is gone.

With ``queue.tombstones`` the length cap leaves a pending entry in flight as a tombstone
("trimmed", detail "in_flight:tombstone"); its holder may still ack it (it had the payload),
but once its loan ends without an ack its next delivery is a tombstone ("delivered", detail
"tombstone"). The worker must count it missing, not done: ``workers.on_tombstone``
"count_missing" removes it from the PEL ("tombstone_discarded"); "ack" acks it as if it had
been processed ("acked", detail "tombstone"), which ``ack_after_durable`` reports (an ack of
due work that never committed) and ``no_lost_work`` reports anyway (the job was trimmed).
Times are virtual seconds. ``q`` is the ``Queue`` (``acksim.world.queue.core``), which imports this
module: named, not imported.
"""

from __future__ import annotations

from acksim.world.queue.message import Delivery, Message


def trim_pending(q, msg: Message) -> bool:
    """The length cap reached ``msg``: with ``queue.tombstones`` and ``msg`` in flight, keep
    its id pending as a tombstone, record "trimmed" ("in_flight:tombstone") and return True;
    otherwise return False (the caller deletes it)."""
    if not q.config.tombstones or msg.state != "in_flight":
        return False
    msg.tombstone = True
    q.job_gone(msg)  # its job is gone with the body
    q.log("trimmed", "queue", msg, msg.receive_count, "in_flight:tombstone")
    return True


def discard(q, delivery: Delivery, consumer: str) -> bool:
    """``consumer`` counts the tombstone ``delivery`` missing and removes its id from the
    PEL (no ack: nothing was done). Records "tombstone_discarded"; returns whether the
    entry was still pending on this loan."""
    msg = q.messages[delivery.message_id]
    if delivery.duplicate or not (msg.state == "in_flight" and msg.receipt == delivery.receipt):
        return False
    q.delete(msg)
    q.log("tombstone_discarded", consumer, msg, delivery.receive_count, "missing")
    return True


def handle(world, name: str, delivery: Delivery):
    """Worker ``name``'s handling of a tombstone (SimPy steps): after the ack latency,
    discard it ("count_missing") or ack it ("ack"), as ``workers.on_tombstone`` says; a
    paused worker does so when it resumes, and one cut off from the queue (a partition, a
    broker restart) cannot: recorded ``ack_failed`` (``acksim.world.links``)."""
    queue = world.queue
    yield world.env.timeout(queue.config.ack_latency_s)
    if world.links is not None:
        yield from world.links.hold(name)
        if not world.links.queue_reachable(name):
            world.links.ack_failed(name, delivery, "tombstone")
            return
    if world.scenario.workers.on_tombstone == "ack":
        queue.ack(delivery, name)
    else:
        discard(queue, delivery, name)
