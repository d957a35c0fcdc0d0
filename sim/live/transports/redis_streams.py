"""Redis Streams: a consumer group; ``XREADGROUP >`` for new entries, ``XAUTOCLAIM`` with min
idle = the visibility timeout (scaled) for entries whose consumer went quiet (the delivery
count is read with ``XPENDING``), ``XACK`` to ack (0 acked entries: a stale ack, recorded
``ack_stale``), a nack is ``XCLAIM ... IDLE JUSTID`` so the entry is claimable after its
backoff. Redis has no dead-letter queue: past ``max_receive_count`` deliveries the claiming
worker moves the entry to a dead-letter stream (``XADD`` + ``XACK``).

All times here are wall seconds.
"""

from __future__ import annotations

import json

from acksim.live.transports.base import Received, Transport

STREAM, GROUP, DLQ_STREAM = "acksim:jobs", "acksim-workers", "acksim:dead-letter"


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
