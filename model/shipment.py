"""The shipment fan-out: one update delivered to N subscribers, one queue task per delivery.

A ``ShipmentUpdate`` goes to every one of its subscribers' public HTTPS endpoints. The queue
cannot join N deliveries, so ``fan_out`` publishes one ``DeliveryTask`` per subscriber and the
application keeps a delivery record per success (``acksim.model.shipment_store``); the update is
complete when all N are recorded (``update_complete``).

Every task carries a stable key, ``cleanup:<job id>:<record id>``: the same for every
redelivery of the task, never derived from a message id or a receive count. It is the unique
key of the delivery record and the idempotency key sent to the subscriber.

The worker's contract around ``deliver`` (delete-then-ack: the durable write first, the queue
acknowledgment second):

1. open the unit of work on the records store (``begin()``; or none: autocommit);
2. ``decision = deliver(task, records, endpoint, attempt=receive_count)``;
3. "done": ``commit()``, and only after the commit returns, ack (delete the message). A crash
   before the commit leaves no record, so the redelivery sends again with the same
   idempotency key (the subscriber deduplicates on it); a crash after the commit and before
   the ack makes the redelivery find the record and return "done" without a send;
4. "retry": roll back (nothing was written) and make the message visible again after
   ``decision.delay_s`` (nack with delay); the queue's redrive policy dead-letters it once
   the attempts are exhausted;
5. "dead_letter": roll back and move the message to the dead-letter queue now, no retry;
6. a store error (``acksim.model.errors.ConflictError``, including ``UniqueViolation`` when a
   concurrent delivery of the same task recorded first): roll back and nack; the retry finds
   the record.

The endpoint is called while the unit of work is open. With SQLite (serializable, WAL) a
transaction that read the record and then waits on the endpoint fails with
``BusySnapshotError`` at ``record_once`` if any other delivery committed meanwhile; a worker
that runs ``deliver`` in autocommit mode (one-statement transactions) avoids that conflict.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, Protocol

from acksim.model.shipment_store import DeliveryRecords

Action = Literal["done", "dead_letter", "retry"]
ACTIONS: tuple[Action, ...] = ("done", "dead_letter", "retry")
BACKOFF_BASE_S = 1.0  # default first 5xx retry delay, seconds
BACKOFF_MAX_S = 60.0  # default cap of the 5xx retry delay, seconds


def _check_id(value: object, what: str) -> None:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{what}={value!r}: must be a non-empty string")


@dataclass(frozen=True, slots=True)
class ShipmentUpdate:
    """One shipment update and the subscribers it goes to.

    ``update_id``: non-empty string; ``subscribers``: a non-empty tuple of distinct,
    non-empty subscriber ids (N = its length). Raises ValueError otherwise.
    """

    update_id: str
    subscribers: tuple[str, ...]

    def __post_init__(self) -> None:
        _check_id(self.update_id, "update_id")
        if not isinstance(self.subscribers, tuple) or not self.subscribers:
            raise ValueError(f"subscribers={self.subscribers!r}: must be a non-empty tuple")
        for subscriber in self.subscribers:
            _check_id(subscriber, "subscriber")
        if len(set(self.subscribers)) != len(self.subscribers):
            raise ValueError(f"subscribers={self.subscribers!r}: list each subscriber once")


@dataclass(frozen=True, slots=True)
class DeliveryTask:
    """One queue task: deliver update ``update_id`` to ``subscriber``.

    ``job_id`` names the fan-out job (one per update; no ":" in it); ``record_id`` names the
    delivery record within the job. Together they give the stable key (``delivery_key``).
    All four are non-empty strings (ValueError otherwise).
    """

    job_id: str
    update_id: str
    subscriber: str
    record_id: str

    def __post_init__(self) -> None:
        for name in ("update_id", "subscriber", "record_id"):
            _check_id(getattr(self, name), name)
        delivery_key(self.job_id, self.record_id)  # validates job_id

    @property
    def key(self) -> str:
        """The task's stable key, ``cleanup:<job id>:<record id>``."""
        return delivery_key(self.job_id, self.record_id)


def delivery_key(job_id: str, record_id: str) -> str:
    """The stable idempotency key ``cleanup:<job id>:<record id>``.

    ValueError if either is empty or not a string, or if ``job_id`` contains ":" (the key
    would then be ambiguous: ``cleanup:a:b:c`` could be job "a:b" or job "a").
    """
    _check_id(job_id, "job_id")
    _check_id(record_id, "record_id")
    if ":" in job_id:
        raise ValueError(f"job_id={job_id!r}: must not contain ':' (the key separator)")
    return f"cleanup:{job_id}:{record_id}"


def fan_out(job_id: str, update: ShipmentUpdate) -> tuple[DeliveryTask, ...]:
    """The N tasks of ``update``, one per subscriber in order; ``record_id`` is the
    subscriber id, so a task's key is ``cleanup:<job id>:<subscriber>``."""
    return tuple(DeliveryTask(job_id, update.update_id, s, s) for s in update.subscribers)


@dataclass(frozen=True, slots=True)
class Decision:
    """What the worker does with the message: ``action`` "done" (commit, then ack),
    "dead_letter" (to the dead-letter queue, no retry) or "retry" (redeliver after
    ``delay_s`` seconds, >= 0; always 0 for the other actions). ValueError otherwise."""

    action: Action
    delay_s: float = 0.0

    def __post_init__(self) -> None:
        if self.action not in ACTIONS:
            raise ValueError(f"action={self.action!r}: expected one of {', '.join(ACTIONS)}")
        if not (math.isfinite(self.delay_s) and self.delay_s >= 0):
            raise ValueError(f"delay_s={self.delay_s!r}: must be a finite number >= 0")
        if self.action != "retry" and self.delay_s != 0:
            raise ValueError(f"delay_s={self.delay_s!r}: only a retry has a delay")


DONE = Decision("done")
DEAD_LETTER = Decision("dead_letter")


def _check_policy(attempt: int, base_s: float, max_s: float) -> None:
    if isinstance(attempt, bool) or not isinstance(attempt, int) or attempt < 1:
        raise ValueError(f"attempt={attempt!r}: must be an int >= 1 (the receive count)")
    if not (math.isfinite(base_s) and base_s > 0):
        raise ValueError(f"base_s={base_s!r}: must be a finite number > 0")
    if not (math.isfinite(max_s) and max_s >= base_s):
        raise ValueError(f"max_s={max_s!r}: must be a finite number >= base_s={base_s!r}")


def backoff_s(attempt: int, base_s: float, max_s: float) -> float:
    """Bounded exponential backoff in seconds: ``min(base_s * 2**(attempt - 1), max_s)``.

    ``attempt`` >= 1; 0 < ``base_s`` <= ``max_s``, both finite (ValueError otherwise).
    """
    _check_policy(attempt, base_s, max_s)
    if attempt - 1 > math.log2(max_s / base_s):
        return float(max_s)  # also keeps huge attempts from overflowing
    return float(min(math.ldexp(base_s, attempt - 1), max_s))


def classify(
    status: int, retry_after_s: float | None, attempt: int, base_s: float, max_s: float
) -> Decision:
    """The decision for the subscriber endpoint's HTTP response to delivery attempt ``attempt``.

    2xx: "done". 429: "retry" after ``retry_after_s`` (the Retry-After header, seconds,
    honoured as given even above ``max_s``), or after ``backoff_s`` when absent. Any other
    4xx: "dead_letter" (invalid input is not retried). 5xx: "retry" after ``backoff_s``
    (Retry-After ignored: the delay stays bounded).

    ValueError for a status outside 200-599 or in 300-399 (not a final answer a delivery can
    get), a negative or non-finite ``retry_after_s``, or a bad policy (see ``backoff_s``);
    TypeError for a status that is not an int.
    """
    _check_policy(attempt, base_s, max_s)
    if retry_after_s is not None and not (math.isfinite(retry_after_s) and retry_after_s >= 0):
        raise ValueError(f"retry_after_s={retry_after_s!r}: must be None or a finite number >= 0")
    if isinstance(status, bool) or not isinstance(status, int):
        raise TypeError(f"status={status!r}: must be an int HTTP status")
    if 200 <= status <= 299:
        return DONE
    if status == 429:
        if retry_after_s is None:
            return Decision("retry", backoff_s(attempt, base_s, max_s))
        return Decision("retry", float(retry_after_s))
    if 400 <= status <= 499:
        return DEAD_LETTER
    if 500 <= status <= 599:
        return Decision("retry", backoff_s(attempt, base_s, max_s))
    raise ValueError(f"status={status}: expected a final 2xx, 4xx or 5xx response")


class Endpoint(Protocol):
    """A subscriber's HTTPS endpoint: ``send`` returns (HTTP status, Retry-After in seconds
    or None). The subscriber is expected to deduplicate on ``idempotency_key``."""

    def send(
        self, subscriber: str, update_id: str, idempotency_key: str
    ) -> tuple[int, float | None]: ...


def deliver(
    task: DeliveryTask,
    records: DeliveryRecords,
    endpoint: Endpoint,
    *,
    attempt: int = 1,
    base_s: float = BACKOFF_BASE_S,
    max_s: float = BACKOFF_MAX_S,
) -> Decision:
    """Deliver ``task`` once in effect, inside the caller's unit of work on ``records``.

    If the record keyed ``cleanup:<job id>:<record id>`` is visible, returns "done" without
    calling the endpoint. Otherwise calls ``endpoint.send(subscriber, update_id, key)``; on a
    2xx writes the record (``records.record_once(key, update_id, subscriber)``) and returns
    "done", else returns ``classify(status, retry_after_s, attempt, base_s, max_s)`` and
    writes nothing. ``attempt`` is the message's receive count (>= 1).

    The caller commits before it acks (see the module docstring). Raises ValueError for a
    bad policy before any send, or for a status ``classify`` rejects; store errors (a
    ``ConflictError``) propagate, and the caller rolls back.
    """
    return _deliver(task, records, endpoint, task.key, attempt, base_s, max_s)


def _deliver(task: DeliveryTask, records: DeliveryRecords, endpoint: Endpoint, send_key: str,
             attempt: int, base_s: float, max_s: float) -> Decision:
    """``deliver`` with ``send_key`` as the idempotency key sent to the subscriber."""
    _check_policy(attempt, base_s, max_s)
    if records.was_recorded(task.key):
        return DONE  # a redelivery of finished work
    status, retry_after_s = endpoint.send(task.subscriber, task.update_id, send_key)
    decision = classify(status, retry_after_s, attempt, base_s, max_s)
    if decision.action == "done":
        records.record_once(task.key, task.update_id, task.subscriber)
    return decision


def update_complete(records: DeliveryRecords, update: ShipmentUpdate) -> bool:
    """True iff every one of the update's N subscribers has a visible delivery record."""
    return set(update.subscribers) <= set(records.recorded_for(update.update_id))


def deliver_keyed_by_attempt(
    task: DeliveryTask,
    records: DeliveryRecords,
    endpoint: Endpoint,
    *,
    attempt: int = 1,
    base_s: float = BACKOFF_BASE_S,
    max_s: float = BACKOFF_MAX_S,
) -> Decision:
    """A known-bad variant of ``deliver`` for the tests and design reviews: its idempotency
    key carries the receive count (``<key>:<attempt>``), so a redelivery after a send whose
    record never committed looks new to the subscriber: a second effect."""
    return _deliver(task, records, endpoint, f"{task.key}:{attempt}", attempt, base_s, max_s)
