"""RabbitMQ: a quorum queue with ``x-delivery-limit`` (``max_receive_count - 1`` redeliveries,
so ``max_receive_count`` deliveries) and a dead-letter exchange; ``basic_consume`` with
manual acks and prefetch 1. There is no visibility timeout: a message returns when its
consumer's connection closes (a killed worker) or it is nacked (requeued at once).

All times here are wall seconds.
"""

from __future__ import annotations

import json

from acksim.live.transports.base import Received, Transport

RABBIT_QUEUE, RABBIT_DLX, RABBIT_DLQ = "acksim.jobs", "acksim.dlx", "acksim.dead-letter"


class RabbitTransport(Transport):
    """A RabbitMQ quorum queue with a delivery limit and a dead-letter exchange."""

    name = "rabbitmq"
    mechanism = ("quorum queue, basic_consume with manual acks and prefetch 1, x-delivery-limit, "
                 "dead-letter exchange; redelivery when the consumer's connection closes or on nack")

    def __init__(self, port: int, visibility_s: float, max_receive_count: int, namespace: str = "") -> None:
        super().__init__(visibility_s, max_receive_count, namespace)
        self.port = port
        self.queue, self.dlx, self.dlq = (self.named(n, ".") for n in (RABBIT_QUEUE, RABBIT_DLX, RABBIT_DLQ))
        self._conn = self._ch = None
        self.notes.append("RabbitMQ has no visibility timeout: an unacked message returns when its "
                          "consumer's connection closes (a killed worker) or it is nacked")
        self.notes.append("a nack requeues at once: the scenario's retry backoff is not applied")

    def __getstate__(self):
        return {"port": self.port, "visibility_s": self.visibility_s, "max_receive_count": self.max_receive_count,
                "notes": self.notes, "namespace": self.namespace, "queue": self.queue, "dlx": self.dlx,
                "dlq": self.dlq}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._conn = self._ch = None

    def connect(self):
        """A pika BlockingConnection (guest/guest, vhost /)."""
        import pika

        return pika.BlockingConnection(pika.ConnectionParameters(
            host="127.0.0.1", port=self.port, connection_attempts=3, retry_delay=0.5, heartbeat=30))

    def declare(self) -> None:
        """Declare the dead-letter exchange and queue, and the quorum job queue."""
        self._conn = self.connect()
        ch = self._ch = self._conn.channel()
        ch.exchange_declare(self.dlx, exchange_type="fanout", durable=True)
        ch.queue_declare(self.dlq, durable=True, arguments={"x-queue-type": "quorum"})
        ch.queue_bind(self.dlq, self.dlx)
        args = {"x-queue-type": "quorum"}
        if self.max_receive_count:
            args.update({"x-delivery-limit": max(0, self.max_receive_count - 1), "x-dead-letter-exchange": self.dlx})
        ch.queue_declare(self.queue, durable=True, arguments=args)
        ch.confirm_delivery()

    def publish(self, body: str) -> None:
        """basic_publish, persistent, confirmed."""
        import pika

        self._ch.basic_publish("", self.queue, body.encode(), pika.BasicProperties(delivery_mode=2),
                               mandatory=True)

    def poll_dead_letters(self) -> list[int]:
        """Message ids that reached the dead-letter queue since the last poll (consumed)."""
        out = []
        while True:
            method, _props, body = self._ch.basic_get(self.dlq, auto_ack=True)
            if method is None:
                return out
            out.append(json.loads(body)["message_id"])

    def dead_letter_ids(self) -> list[int]:
        return self.poll_dead_letters()

    def lost_connection(self, exc: BaseException) -> bool:
        """Any pika AMQP error (a connection closed by the broker, a lost stream, a channel on a
        closed connection, a refused connection while the node is down) or a socket error."""
        import pika.exceptions

        return isinstance(exc, (pika.exceptions.AMQPError, ConnectionError))

    def reconnect(self) -> None:
        """A new connection and channel; the queues declared again (idempotent: a quorum queue
        survives the restart)."""
        self.close_quietly()
        self.declare()

    def close_quietly(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - a connection the broker already dropped
            pass

    def drop(self) -> None:
        """Delete the job queue, the dead-letter queue and exchange."""
        if self._ch is not None and self._ch.is_open:
            self._ch.queue_delete(self.queue)
            self._ch.queue_delete(self.dlq)
            self._ch.exchange_delete(self.dlx)

    def close(self) -> None:
        if self._conn is not None and self._conn.is_open:
            self._conn.close()

    def consumer(self, name: str) -> "RabbitConsumer":
        return RabbitConsumer(self, name)


class RabbitConsumer:
    """One worker's consumer: its own connection, prefetch 1, manual acks."""

    def __init__(self, t: RabbitTransport, name: str) -> None:
        self.t = t
        self.conn = t.connect()
        self.ch = self.conn.channel()
        self.ch.basic_qos(prefetch_count=1)
        self._gen = None

    def receive(self, timeout_s: float) -> Received | None:
        """The next delivery, or None after ``timeout_s`` without one."""
        if self._gen is None:
            self._gen = self.ch.consume(self.t.queue, auto_ack=False, inactivity_timeout=timeout_s)
        method, props, body = next(self._gen)
        if method is None:
            return None
        payload = json.loads(body)
        count = int((props.headers or {}).get("x-delivery-count", 0)) + 1
        return Received(payload["message_id"], payload, count, method.delivery_tag)

    def ack(self, d: Received) -> bool:
        self.ch.basic_ack(d.handle)
        return True

    def nack(self, d: Received, backoff_s: float) -> None:
        self.ch.basic_nack(d.handle, requeue=True)

    def close(self) -> None:
        try:
            if self._gen is not None:
                self.ch.cancel()
            self.conn.close()
        except Exception:  # noqa: BLE001 - closing a connection the broker already dropped
            pass
