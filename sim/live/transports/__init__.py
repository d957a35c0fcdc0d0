"""One queue, three real brokers: the delivery mechanism each documents, behind one small API.

A ``Transport`` is built in the parent from a running ``Broker`` (``acksim.live.brokers``) and
the scenario's ``[queue]`` table; it declares the queue and its dead-letter target
(``declare``), publishes jobs (``publish``), reports what reached the dead-letter target
(``poll_dead_letters``) and describes itself (``describe``). It pickles to the settings a
worker process needs, and ``consumer()`` in that process opens a ``Consumer``:
``receive(timeout_s)`` (a ``Received`` or None), ``ack``, ``nack``.

``base`` holds that API (``Received``, ``encode``, ``Transport``; importable from here too)
and this module ``make_transport``, which picks the transport for a running broker; one module per broker holds its transport and
consumer: ``redis_streams`` (Redis Streams), ``rabbitmq`` (a quorum queue), ``sqs`` (moto).

All times here are wall seconds unless a name says virtual.
"""

from __future__ import annotations

from acksim.live.transports.base import BROKERS, Received, Transport, encode

__all__ = ["BROKERS", "Received", "Transport", "encode", "make_transport"]


def make_transport(broker, visibility_s: float, max_receive_count: int, namespace: str = "",
                   claim: bool = True) -> Transport:
    """The transport for a running ``broker`` (its ``kind`` names it). ``visibility_s`` in
    wall seconds (the scenario's, scaled); ``namespace`` (letters, digits, dashes) is appended
    to every queue name, so runs sharing one broker never meet. ``claim`` False: Redis workers
    never XAUTOCLAIM (a group without a claimer)."""
    from acksim.live.transports.rabbitmq import RabbitTransport
    from acksim.live.transports.redis_streams import RedisTransport
    from acksim.live.transports.sqs import SqsTransport

    if broker.kind == "redis":
        return RedisTransport(broker.port, visibility_s, max_receive_count, namespace, claim)
    if broker.kind == "rabbitmq":
        return RabbitTransport(broker.port, visibility_s, max_receive_count, namespace)
    return SqsTransport(broker.endpoint_url, visibility_s, max_receive_count, namespace)
