"""``[faults]``, Jepsen's vocabulary: process pauses, partitions and broker restarts, as frozen
data (``[[faults.pauses]]``, ``[[faults.partitions]]``, ``[[faults.broker_restarts]]``).

Each is a window of virtual seconds ``[at_s, at_s + duration)``; what the world does inside
it is ``acksim.world.links`` (pauses and partitions) and ``acksim.world.queue.broker`` (restarts).
Sources: docs/queue-semantics.md, section 12.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from acksim.scenario.base import DAY, HORIZON_S, _Section


class Pause(_Section):
    """A process pause (a stop-the-world GC, SIGSTOP, a blocked event loop [B-STALL]): worker
    number ``worker`` (1-based) freezes at ``at_s`` for ``duration_s``, or, with ``delivery``
    (1-based, over the run) instead of ``at_s``, the worker holding that delivery freezes just
    before its store call number ``call`` (0-based). While frozen it sends no heartbeats,
    receives, acks or store calls; then it resumes where it was, with a lease that may have
    moved on."""

    worker: int = Field(0, ge=0, le=1000)
    at_s: float | None = Field(None, ge=0.0, le=HORIZON_S)
    delivery: int | None = Field(None, ge=1, le=10_000_000)
    call: int = Field(0, ge=0, le=1000)
    duration_s: float = Field(gt=0.0, le=DAY)

    @model_validator(mode="after")
    def _one_trigger(self) -> "Pause":
        if (self.at_s is None) == (self.delivery is None):
            raise ValueError("pauses: set either at_s (with worker) or delivery (with call), not both or neither")
        if self.at_s is not None and self.worker < 1:
            raise ValueError("pauses.worker: a pause at at_s names its worker, 1 to 1000")
        return self


class Partition(_Section):
    """A network partition between worker number ``worker`` (1-based) and the queue
    (``between = "queue"``: receives, heartbeats and acks fail while processing goes on) or
    its database (``between = "db"``: store calls and commits fail; the worker rolls back and
    nacks), from ``at_s`` for ``duration_s``."""

    worker: int = Field(ge=1, le=1000)
    between: Literal["queue", "db"] = "queue"
    at_s: float = Field(ge=0.0, le=HORIZON_S)
    duration_s: float = Field(gt=0.0, le=DAY)


class BrokerRestart(_Section):
    """The broker restarts (or fails over) at ``at_s`` and is down ``down_s``: no receives,
    publishes (the publisher's client retries them at the restart), heartbeats or acks
    meanwhile. In-flight deliveries are then recovered as ``queue.on_broker_restart`` says,
    and with ``queue.broker_lost_writes_s`` the publishes of that many seconds before the
    restart are lost (a store without durable persistence)."""

    at_s: float = Field(ge=0.0, le=HORIZON_S)
    down_s: float = Field(gt=0.0, le=DAY)


def inconsistency(scenario) -> str | None:
    """The first way ``scenario`` (a ``Scenario``) uses these faults and their mechanisms
    wrongly, as one line naming the field, or None: a worker number past ``workers.count``, a
    fault the fan-out design does not model, ``queue.ack_timeout_ends_consumer`` without
    "consumer_death" redelivery, ``workers.service_time_call`` without "after_call"."""
    f, w, q = scenario.faults, scenario.workers, scenario.queue
    for field, entries in (("pauses", [p for p in f.pauses if p.at_s is not None]), ("partitions", f.partitions)):
        bad = next((e for e in entries if e.worker > w.count), None)
        if bad is not None:
            return f"faults.{field}: worker numbers go from 1 to workers.count ({w.count}), got {bad.worker}"
    if scenario.fanout.updates:
        used = [name for name, on in (("faults.pauses", f.pauses), ("faults.partitions", f.partitions),
                                      ("faults.broker_restarts", f.broker_restarts),
                                      ("workers.execution_timeout_s", w.execution_timeout_s),
                                      ("queue.prefetch", q.prefetch > 1),
                                      # the fan-out worker does not read a trimmed id's missing payload
                                      ("queue.tombstones", q.tombstones)) if on]
        if used:
            return f"{used[0]}: not modelled in the fan-out design (fanout.updates > 0); remove it"
    if q.ack_timeout_ends_consumer and q.redelivery != "consumer_death":
        return "queue.ack_timeout_ends_consumer: applies to redelivery = 'consumer_death' only"
    if w.service_time_call and w.service_time_at != "after_call":
        return "workers.service_time_call: applies to service_time_at = 'after_call' only"
    return None
