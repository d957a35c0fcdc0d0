"""One queue, three real brokers: the delivery mechanism each documents, behind one small API.

A ``Transport`` is built in the parent from a running ``Broker`` (``acksim.live.brokers``) and
the scenario's ``[queue]`` table; it declares the queue and its dead-letter target
(``declare``), publishes jobs (``publish``), reports what reached the dead-letter target
(``poll_dead_letters``) and describes itself (``describe``). It pickles to the settings a
worker process needs, and ``consumer()`` in that process opens a ``Consumer``:
``receive(timeout_s)`` (a ``Received`` or None), ``ack``, ``nack``.

* Redis Streams: a consumer group; ``XREADGROUP >`` for new entries, ``XAUTOCLAIM`` with min
  idle = the visibility timeout (scaled) for entries whose consumer went quiet (the delivery
  count is read with ``XPENDING``), ``XACK`` to ack (0 acked entries: a stale ack, recorded
  ``ack_stale``), a nack is ``XCLAIM ... IDLE JUSTID`` so the entry is claimable after its
  backoff. Redis has no dead-letter queue: past ``max_receive_count`` deliveries the claiming
  worker moves the entry to a dead-letter stream (``XADD`` + ``XACK``).
* RabbitMQ: a quorum queue with ``x-delivery-limit`` (``max_receive_count - 1`` redeliveries,
  so ``max_receive_count`` deliveries) and a dead-letter exchange; ``basic_consume`` with
  manual acks and prefetch 1. There is no visibility timeout: a message returns when its
  consumer's connection closes (a killed worker) or it is nacked (requeued at once).
* SQS (moto): ``ReceiveMessage`` / ``DeleteMessage`` / ``ChangeMessageVisibility`` with a
  ``RedrivePolicy`` (``maxReceiveCount``) to a dead-letter queue. The visibility timeout is
  whole seconds: the scaled value is rounded (at least 1 s) and the rounding reported.

All times here are wall seconds unless a name says virtual.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

STREAM, GROUP, DLQ_STREAM = "acksim:jobs", "acksim-workers", "acksim:dead-letter"
RABBIT_QUEUE, RABBIT_DLX, RABBIT_DLQ = "acksim.jobs", "acksim.dlx", "acksim.dead-letter"
SQS_QUEUE, SQS_DLQ = "acksim-jobs", "acksim-dead-letter"
BROKERS = ("redis", "rabbitmq", "sqs")


@dataclass(frozen=True, slots=True)
class Received:
    """One delivery from the broker: the harness's ``message_id``, the job ``body`` (a dict:
    account_id, cleanup_version, deadline_s), the broker's ``receive_count`` (1 on the first
    delivery) and ``handle`` (stream entry id, delivery tag or receipt handle). ``dead``: the
    consumer moved it to the dead-letter target instead of delivering it (Redis only);
    ``claimed``: it was taken from another consumer's pending entries (Redis XAUTOCLAIM)."""

    message_id: int
    body: dict
    receive_count: int
    handle: object
    dead: bool = False
    claimed: bool = False


def encode(message_id: int, account_id: str, cleanup_version: int, deadline_s: float) -> str:
    """The message body: JSON of the harness's message id and the job (deadline in virtual s)."""
    return json.dumps({"message_id": message_id, "account_id": account_id,
                       "cleanup_version": cleanup_version, "deadline_s": deadline_s}, separators=(",", ":"))


class Transport:
    """Base of the three transports. ``visibility_s``: the visibility timeout in wall seconds
    as the broker applies it; ``max_receive_count``: deliveries before dead-lettering (0: no
    dead-letter target); ``notes``: lines for the report (roundings, emulations)."""

    name = ""

    def __init__(self, visibility_s: float, max_receive_count: int, namespace: str = "") -> None:
        self.visibility_s = visibility_s
        self.max_receive_count = max_receive_count
        self.namespace = namespace
        self.notes: list[str] = []

    def named(self, base: str, sep: str) -> str:
        """``base`` with this transport's namespace appended (one broker, many runs)."""
        return f"{base}{sep}{self.namespace}" if self.namespace else base

    def drop(self) -> None:
        """Delete this run's queues (streams, exchanges) from the broker; best effort."""

    def lost_connection(self, exc: BaseException) -> bool:
        """Whether ``exc``, raised by this broker's client, means the broker went away (a
        restart): the caller reconnects and retries instead of failing."""
        return isinstance(exc, ConnectionError)

    def reconnect(self) -> None:
        """The parent's connection again after a broker restart, the queue declared again
        where the restart lost it (idempotent). Raises what the client raises."""
        self.declare()

    def surviving_ids(self) -> set[int] | None:
        """After a restart, the message ids the broker still holds (waiting or in flight), or
        None when this broker cannot be looked into without taking them."""
        return None

    def describe(self) -> dict:
        """What the live section of summary.json says about the queue."""
        return {"visibility_timeout_wall_s": self.visibility_s, "max_receive_count": self.max_receive_count,
                "mechanism": self.mechanism, "notes": list(self.notes)}


# --------------------------------------------------------------------------------------------
class RedisTransport(Transport):
    """Redis Streams with one consumer group (see the module docstring)."""

    name = "redis"
    mechanism = ("stream + consumer group: XREADGROUP >, XAUTOCLAIM (min idle = visibility timeout), "
                 "XPENDING for the delivery count, XACK; dead-letter stream written by the claiming worker")

    def __init__(self, port: int, visibility_s: float, max_receive_count: int, namespace: str = "",
                 claim: bool = True) -> None:
        super().__init__(visibility_s, max_receive_count, namespace)
        self.port, self.claim = port, claim
        if not claim:
            self.notes.append("no claimer: a dead consumer's pending entries are never taken back (XAUTOCLAIM off)")
        self.stream, self.group, self.dlq = self.named(STREAM, ":"), GROUP, self.named(DLQ_STREAM, ":")
        self._client = None
        self._seen_dead = 0

    def __getstate__(self):
        return {"port": self.port, "visibility_s": self.visibility_s, "max_receive_count": self.max_receive_count,
                "notes": self.notes, "namespace": self.namespace, "stream": self.stream, "group": self.group,
                "claim": self.claim,
                "dlq": self.dlq}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._client, self._seen_dead = None, 0

    def client(self):
        """A redis-py client (RESP2, strings) for this server. It retries a failed command once,
        at once (a pooled connection a broker restart left dead reconnects), instead of
        redis-py 8's ten retries with up to 10 s of backoff each: a worker whose broker is down
        learns it at once and retries on its own loop (``acksim.live.worker``), so it is back
        within ``RECONNECT_WALL_S`` of the server, and an ack sent while it is down fails."""
        import redis
        from redis.backoff import NoBackoff
        from redis.retry import Retry

        return redis.Redis(host="127.0.0.1", port=self.port, protocol=2, decode_responses=True,
                           socket_timeout=10, retry=Retry(NoBackoff(), 1))

    def declare(self) -> None:
        """Create the stream and the consumer group (from the start of the stream)."""
        self._client = self.client()
        self._client.xgroup_create(self.stream, self.group, id="0", mkstream=True)

    def lost_connection(self, exc: BaseException) -> bool:
        """A redis-py connection or timeout error (the server is down or loading its append-only
        file), or NOGROUP (a restart without persistence lost the group; the parent declares it
        again)."""
        import redis

        if isinstance(exc, redis.exceptions.ResponseError):
            return str(exc).startswith("NOGROUP")
        return isinstance(exc, (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, ConnectionError))

    def reconnect(self) -> None:
        """A new client; the stream and group created again if the restart lost them."""
        import redis

        if self._client is not None:
            self._client.close()
        self._client = self.client()
        try:
            self._client.xgroup_create(self.stream, self.group, id="0", mkstream=True)
        except redis.exceptions.ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                raise

    def surviving_ids(self) -> set[int] | None:
        """Message ids whose entry is in the stream now (after a restart: what persisted)."""
        return {json.loads(f["body"])["message_id"] for _id, f in self._client.xrange(self.stream)}

    def publish(self, body: str) -> None:
        """XADD one entry."""
        self._client.xadd(self.stream, {"body": body})

    def poll_dead_letters(self) -> list[int]:
        """Redis dead-letters in the worker (which records it): nothing to poll."""
        return []

    def dead_letter_ids(self) -> list[int]:
        """Message ids in the dead-letter stream."""
        return [json.loads(f["body"])["message_id"] for _id, f in self._client.xrange(self.dlq)]

    def drop(self) -> None:
        """DEL the stream (with its group) and the dead-letter stream."""
        if self._client is not None:
            self._client.delete(self.stream, self.dlq)

    def close(self) -> None:
        if self._client is not None:
            self._client.close()

    def consumer(self, name: str) -> "RedisConsumer":
        return RedisConsumer(self, name)


class RedisConsumer:
    """One worker's end of the consumer group, named after the worker."""

    def __init__(self, t: RedisTransport, name: str) -> None:
        self.t, self.name = t, name
        self.r = t.client()
        self.min_idle_ms = max(1, int(round(t.visibility_s * 1000)))

    def receive(self, timeout_s: float) -> Received | None:
        """A claimed stale entry first (XAUTOCLAIM), else a new one (XREADGROUP, blocking up to
        ``timeout_s``); an entry past ``max_receive_count`` is moved to the dead-letter
        stream and returned with ``dead`` set."""
        t = self.t
        claimed = []
        if t.claim:
            _cursor, claimed, *_deleted = self.r.xautoclaim(t.stream, t.group, self.name, self.min_idle_ms,
                                                            start_id="0-0", count=1)
        if claimed:
            entry_id, fields = claimed[0]
            info = self.r.xpending_range(t.stream, t.group, min=entry_id, max=entry_id, count=1)
            count = info[0]["times_delivered"] if info else 2
            return self._received(entry_id, fields, count, claimed=True)
        got = self.r.xreadgroup(t.group, self.name, {t.stream: ">"}, count=1, block=max(1, int(timeout_s * 1000)))
        if not got:
            return None
        entry_id, fields = got[0][1][0]
        return self._received(entry_id, fields, 1)

    def _received(self, entry_id: str, fields: dict, count: int, claimed: bool = False) -> Received:
        body = json.loads(fields["body"])
        mrc = self.t.max_receive_count
        if mrc and count > mrc:
            pipe = self.r.pipeline(transaction=True)
            pipe.xadd(self.t.dlq, {"body": fields["body"]})
            pipe.xack(self.t.stream, self.t.group, entry_id)
            pipe.execute()
            return Received(body["message_id"], body, count, entry_id, dead=True, claimed=claimed)
        return Received(body["message_id"], body, count, entry_id, claimed=claimed)

    def ack(self, d: Received) -> bool:
        """XACK; False when nothing was acked (another consumer's ack came first: stale)."""
        return bool(self.r.xack(self.t.stream, self.t.group, d.handle))

    def nack(self, d: Received, backoff_s: float) -> None:
        """Make the entry claimable after ``backoff_s`` (XCLAIM with IDLE, JUSTID: no count)."""
        idle = max(0, self.min_idle_ms - int(backoff_s * 1000))
        self.r.xclaim(self.t.stream, self.t.group, self.name, 0, [d.handle], idle=idle, justid=True)

    def close(self) -> None:
        self.r.close()


# --------------------------------------------------------------------------------------------
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


# --------------------------------------------------------------------------------------------
class SqsTransport(Transport):
    """An SQS standard queue (moto) with a redrive policy to a dead-letter queue."""

    name = "sqs"
    mechanism = ("ReceiveMessage / DeleteMessage / ChangeMessageVisibility, ApproximateReceiveCount, "
                 "RedrivePolicy maxReceiveCount to a dead-letter queue")

    def __init__(self, endpoint_url: str, visibility_s: float, max_receive_count: int, namespace: str = "") -> None:
        whole = max(1, int(round(visibility_s)))
        super().__init__(float(whole), max_receive_count, namespace)
        self.endpoint_url = endpoint_url
        self.queue_url = self.dlq_url = ""
        if whole != visibility_s:
            self.notes.append(f"SQS visibility timeout is whole seconds: {visibility_s:g} wall s rounded to {whole} s")
        self._client = None
        self._dead: set[int] = set()

    def __getstate__(self):
        return {"endpoint_url": self.endpoint_url, "visibility_s": self.visibility_s,
                "max_receive_count": self.max_receive_count, "notes": self.notes, "namespace": self.namespace,
                "queue_url": self.queue_url, "dlq_url": self.dlq_url}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._client, self._dead = None, set()

    def client(self):
        from acksim.live.brokers.sqs import sqs_client

        return sqs_client(self.endpoint_url)

    def declare(self) -> None:
        """Create the dead-letter queue and the job queue with its redrive policy."""
        c = self._client = self.client()
        self.dlq_url = c.create_queue(QueueName=self.named(SQS_DLQ, "-"))["QueueUrl"]
        attrs = {"VisibilityTimeout": str(int(self.visibility_s))}
        if self.max_receive_count:
            arn = c.get_queue_attributes(QueueUrl=self.dlq_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
            attrs["RedrivePolicy"] = json.dumps({"deadLetterTargetArn": arn,
                                                 "maxReceiveCount": str(self.max_receive_count)})
        self.queue_url = c.create_queue(QueueName=self.named(SQS_QUEUE, "-"), Attributes=attrs)["QueueUrl"]

    def publish(self, body: str) -> None:
        self._client.send_message(QueueUrl=self.queue_url, MessageBody=body)

    def lost_connection(self, exc: BaseException) -> bool:
        """botocore's HTTP client errors (connection refused, closed, timed out)."""
        from botocore.exceptions import HTTPClientError

        return isinstance(exc, (HTTPClientError, ConnectionError))

    def poll_dead_letters(self) -> list[int]:
        """Message ids newly in the dead-letter queue (received with a long visibility, never
        deleted, each reported once)."""
        got = self._client.receive_message(QueueUrl=self.dlq_url, MaxNumberOfMessages=10, VisibilityTimeout=3600)
        out = []
        for m in got.get("Messages", []):
            mid = json.loads(m["Body"])["message_id"]
            if mid not in self._dead:
                self._dead.add(mid)
                out.append(mid)
        return out

    def dead_letter_ids(self) -> list[int]:
        self.poll_dead_letters()
        return sorted(self._dead)

    def drop(self) -> None:
        """DeleteQueue both queues."""
        if self._client is not None:
            for url in (self.queue_url, self.dlq_url):
                if url:
                    self._client.delete_queue(QueueUrl=url)

    def close(self) -> None:
        pass

    def consumer(self, name: str) -> "SqsConsumer":
        return SqsConsumer(self)


class SqsConsumer:
    """One worker's SQS client."""

    def __init__(self, t: SqsTransport) -> None:
        self.t = t
        self.c = t.client()

    def receive(self, timeout_s: float) -> Received | None:
        """One ReceiveMessage (no long poll; sleeps ``timeout_s`` when the queue is empty)."""
        got = self.c.receive_message(QueueUrl=self.t.queue_url, MaxNumberOfMessages=1,
                                     AttributeNames=["ApproximateReceiveCount"])
        msgs = got.get("Messages", [])
        if not msgs:
            time.sleep(timeout_s)
            return None
        m = msgs[0]
        body = json.loads(m["Body"])
        return Received(body["message_id"], body, int(m["Attributes"]["ApproximateReceiveCount"]), m["ReceiptHandle"])

    def ack(self, d: Received) -> bool:
        self.c.delete_message(QueueUrl=self.t.queue_url, ReceiptHandle=d.handle)
        return True

    def nack(self, d: Received, backoff_s: float) -> None:
        self.c.change_message_visibility(QueueUrl=self.t.queue_url, ReceiptHandle=d.handle,
                                         VisibilityTimeout=max(0, int(round(backoff_s))))

    def close(self) -> None:
        pass


def make_transport(broker, visibility_s: float, max_receive_count: int, namespace: str = "",
                   claim: bool = True) -> Transport:
    """The transport for a running ``broker`` (its ``kind`` names it). ``visibility_s`` in
    wall seconds (the scenario's, scaled); ``namespace`` (letters, digits, dashes) is appended
    to every queue name, so runs sharing one broker never meet. ``claim`` False: Redis workers
    never XAUTOCLAIM (a group without a claimer)."""
    if broker.kind == "redis":
        return RedisTransport(broker.port, visibility_s, max_receive_count, namespace, claim)
    if broker.kind == "rabbitmq":
        return RabbitTransport(broker.port, visibility_s, max_receive_count, namespace)
    return SqsTransport(broker.endpoint_url, visibility_s, max_receive_count, namespace)
