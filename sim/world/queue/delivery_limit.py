"""The delivery limit of a RabbitMQ quorum queue: a message *returned* more times than the
limit is dropped, or dead-lettered when a dead-letter target exists.

Unlike SQS's maxReceiveCount (checked when the message would be received once more, so a
limit of N allows N receives), a quorum queue counts the returns of a message, the
unsuccessful deliveries it exposes as ``x-delivery-count``, and ends it at the return that
passes the limit: with ``delivery-limit`` 20 (the default since RabbitMQ 4.0) a message is
delivered 21 times and ends at its 21st return [RMQ-QQ][RMQ-PR11937]. A return is any end
of a loan without an ack: a nack or reject with requeue, a requeue of a lost worker's
delivery, a closed channel or connection, a lapsed ack timeout (a channel closed by the
broker). ``queue.delivery_limit`` 0 means no limit (RabbitMQ's -1). Times: virtual seconds.
``q`` is the ``Queue`` (``acksim.world.queue.core``), which imports this module: named, not imported.
"""

from __future__ import annotations

from acksim.world.queue.message import Message


def returned(q, msg: Message) -> bool:
    """Count one return of ``msg`` (its loan just ended without an ack). Past
    ``queue.delivery_limit`` returns the message is exhausted (dead-lettered, or dropped by
    ``on_exhaustion``, detail "delivery_limit") and True is returned: the caller must not
    make it visible again. False (and nothing else happens) below the limit or without one."""
    limit = q.config.delivery_limit
    if not limit:
        return False
    msg.returns += 1
    if msg.returns <= limit:
        return False
    q.loans.pop(msg.id, None)
    msg.receipt += 1  # whatever loan it was on is over
    q.exhaust(msg, "delivery_limit")
    return True
