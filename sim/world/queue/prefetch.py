"""Prefetch and batch receives: a worker holds up to ``queue.prefetch`` deliveries at once.

AMQP's ``basic.qos`` lets the broker push that many unacked deliveries to a consumer
[RMQ-CONF]; Celery multiplies it by ``worker_prefetch_multiplier`` (4) [C-CONF]; an SQS
ReceiveMessage returns up to 10 messages [AWS-RECV]; XREADGROUP takes a COUNT [R-XRG]. Here a
worker whose receive returns takes, at that instant, up to ``prefetch - 1`` more deliveries
that are ready (a batch receive; the broker does not push more later while it works) and
runs them one after another. Each one is on loan from its own receipt: its lease, ack
timeout and redelivery run while it waits in the worker's memory, so a late one may be
redelivered to another worker before this one starts it, and a crash leaves them all to
their lease.
"""

from __future__ import annotations


def take_now(queue, consumer: str, n: int) -> list:
    """Up to ``n`` deliveries for ``consumer`` that ``queue`` can hand out now, in order,
    behind the consumers already waiting; none is waited for."""
    events = [queue.receive(consumer) for _ in range(n)]
    got = [e.value for e in events if e.triggered]
    for e in events:
        if not e.triggered:
            queue.cancel(e)
    return got
