"""What every broker's transport shares: the message a consumer receives (``Received``), a
job's body (``encode``) and the transport interface (``Transport``)."""

from __future__ import annotations

import json
from dataclasses import dataclass

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
