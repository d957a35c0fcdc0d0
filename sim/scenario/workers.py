"""``[workers]``: the consumers: how many, when they ack, their transactions, conflict retries,
restarts and service time."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import Field, field_validator

from acksim.scenario.base import DAY, Tupled, _Section

_CLASS_NAME = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*")


class Workers(_Section):
    """The consumers. ``ack_policy`` "after_commit" is the reference design;
    "before_processing" acks on receipt (a known-bad candidate). ``transaction_scope``
    "unit_of_work" spans the attempt's store calls; "autocommit" commits each call alone.
    A write conflict is retried in place ``conflict_retries`` times (exponential backoff with
    full jitter: uniform in ``[0, conflict_backoff_s * 2**n]``), then the message is nacked.
    ``service_time_mean_s`` adds work of that mean to every delivery, before its unit of work
    (so it holds no lock), exponential or constant: with zero store latency the workers are
    the servers of an M/M/c or M/D/c queue. With ``service_time_at`` "first_write" the work
    comes after the processor's reads, just before its first write (a processor that finds
    the job stale or done does no work); with "after_call" it comes after store call number
    ``service_time_call`` (0-based) returns, e.g. after a side effect and before the commit
    (an attempt that makes fewer calls does no work). ``stop_when_lease_lost``: before committing, the
    worker checks that it still holds the delivery's lease and rolls back if not.
    ``execution_timeout_s`` > 0 hard-kills an attempt that has run that long (a time limit, a
    start-to-close timeout: crash kind "execution_timeout", ``acksim.world.actors.time_limits``).
    ``on_tombstone`` (``acksim.world.queue.tombstones``): a delivery with no payload (a trimmed
    entry's id) is counted missing and removed from the pending list ("count_missing"), or
    acked as if done ("ack": a finding, ``ack_after_durable``). ``retryable_errors``: exception
    classes (``module:Class``) that, like ``acksim.model.errors.RetryLater``, ask for a retry
    rather than report a failure: the unit of work rolls back and the message is nacked (with
    the exception's ``delay_s`` when it has one, else the queue's nack backoff), recorded as
    ``retry_requested`` and counted, never a finding; the receive limit ends a job that
    always asks.
    ``concurrency`` > 0: a worker runs at most that many attempts at once (Celery's pool,
    ``worker_concurrency``): its own delivery's and those of the ETA jobs it holds
    (``queue.eta_held_by_worker``) that came due, each waiting for a free slot in the order it
    asked (a held job that comes due while every slot is taken starts when one frees; the
    worker's own deliveries still run one at a time). 0: no bound, each held job runs when due."""

    count: int = Field(8, ge=1, le=1000)
    ack_policy: Literal["after_commit", "before_processing"] = "after_commit"
    transaction_scope: Literal["unit_of_work", "autocommit"] = "unit_of_work"
    conflict_retries: int = Field(8, ge=0, le=100)
    conflict_backoff_s: float = Field(0.02, ge=0.0, le=3600.0)
    restart_delay_s: float = Field(30.0, ge=0.0, le=DAY)
    service_time_mean_s: float = Field(0.0, ge=0.0, le=DAY)
    service_time_at: Literal["start", "first_write", "after_call"] = "start"
    service_time_call: int = Field(0, ge=0, le=1000)  # with service_time_at "after_call"
    stop_when_lease_lost: bool = False
    service_time_distribution: Literal["exponential", "constant"] = "exponential"
    # a hard limit per attempt, 0 = none (acksim.world.actors.time_limits: T-AF, A-CFG, GCT-TASK)
    execution_timeout_s: float = Field(0.0, ge=0.0, le=DAY)
    on_tombstone: Literal["count_missing", "ack"] = "count_missing"
    concurrency: int = Field(0, ge=0, le=1000)  # attempts at once per worker (its pool), 0 = no bound
    retryable_errors: Annotated[tuple[str, ...], Tupled] = Field((), max_length=50)

    @field_validator("retryable_errors")
    @classmethod
    def _class_names(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        bad = next((name for name in v if not _CLASS_NAME.fullmatch(name)), None)
        if bad is not None:
            raise ValueError(f"must name exception classes as module:Class (e.g. mypkg.errors:Throttled), got {bad!r}")
        return v

    def retryable(self, error: BaseException) -> bool:
        """Whether ``error`` asks for a retry: an ``acksim.model.errors.RetryLater``, or an
        instance of a class ``retryable_errors`` names (``module:Class``, matched by name
        along its class hierarchy, so a class of any worker's process image matches)."""
        names = {f"{c.__module__}:{c.__qualname__}" for c in type(error).__mro__}
        return "acksim.model.errors:RetryLater" in names or any(n in names for n in self.retryable_errors)
