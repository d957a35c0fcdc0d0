"""A queue's messages and their loans: the data the queue keeps and hands out.

``Delivery`` is what a consumer receives (one loan of one message, with its receipt);
``Message`` the queue's own record of a message (its state, receive count, current loan and
lease); ``body_bytes`` the size a job's message body takes (checked against
``queue.max_message_bytes`` at publish, which raises ``MessageTooLarge``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from acksim.model.job import CleanupJob


class MessageTooLarge(ValueError):
    """A publish whose body exceeds ``queue.max_message_bytes`` (256 KB in the design documents)."""


@dataclass(frozen=True, slots=True)
class Delivery:
    """One receipt of one message. ``number``: 1-based count of deliveries over the whole run;
    ``receipt``: this loan's receipt; ``duplicate``: a spurious extra copy (no visibility timer,
    its ack deletes the message if it still exists)."""

    message_id: int
    job: CleanupJob
    deadline_s: float
    receive_count: int
    receipt: int
    number: int
    duplicate: bool = False
    tombstone: bool = False  # an id whose body was trimmed: no payload (acksim.world.queue.tombstones)


class Message:
    """The queue's record of one message: ``state`` (delayed | visible | in_flight | dlq |
    deleted), the counts of receives, failures, stalls and returns, and its current loan
    (``receipt``, ``holder``, ``received_at`` and ``lease_until`` in virtual seconds). The
    queue's mechanisms read and set these fields."""

    __slots__ = ("id", "job", "deadline_s", "state", "receive_count", "receipt", "sent_at", "holder",
                 "received_at", "lease_until", "orphaned", "stalls", "failures", "returns", "tombstone")

    def __init__(self, mid: int, job: CleanupJob, deadline_s: float, sent_at: float) -> None:
        self.id = mid
        self.job = job
        self.deadline_s = deadline_s
        self.state = "delayed"  # delayed | visible | in_flight | dlq | deleted
        self.receive_count = 0
        self.receipt = 0
        self.sent_at = sent_at
        self.holder = ""  # the consumer of the current loan
        self.received_at = 0.0
        self.lease_until = 0.0
        self.orphaned = False  # its holder died: no more heartbeats
        self.stalls = 0
        self.failures = 0
        self.returns = 0  # loans ended without an ack (a quorum queue's x-delivery-count)
        self.tombstone = False  # trimmed while pending: its id stays, its body is gone


def body_bytes(job: CleanupJob, payload_bytes: int = 0) -> int:
    """Size in bytes of the JSON body the scheduler sends for ``job`` plus ``payload_bytes``
    of extra payload (a design that ships a player export in the message): the compact
    ``json.dumps`` of {account_id, cleanup_version, deadline (ISO 8601)}, ASCII-escaped.
    A str id and an int version (the usual job) are encoded field by field with ``json``'s
    own string encoder, the very text ``json.dumps`` writes, without building the dict."""
    account_id, version = job.account_id, job.cleanup_version
    if type(account_id) is str and type(version) is int:
        body = (f'{{"account_id":{_encode_str(account_id)},"cleanup_version":{int.__repr__(version)},'
                f'"deadline":{_encode_str(job.deadline.isoformat())}}}')
        return len(body) + payload_bytes  # ASCII: one byte a character
    body = json.dumps({"account_id": account_id, "cleanup_version": version,
                       "deadline": job.deadline.isoformat()}, separators=(",", ":"))
    return len(body.encode()) + payload_bytes


_encode_str = json.encoder.encode_basestring_ascii  # what json.dumps uses for a str (ensure_ascii)
