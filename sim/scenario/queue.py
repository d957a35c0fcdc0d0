"""``[queue]``: the at-least-once queue's settings: its preset, its lease and how an unacked
delivery comes back, its limits (receive count, attempts, length, delay, retention, size),
FIFO deduplication, spurious duplicates and nack backoff."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from acksim.scenario.base import DAY, HORIZON_S, Probability, Seconds, Tupled, _Section


class Queue(_Section):
    """The at-least-once queue, and how a delivery that is not acked comes back.

    ``preset`` names the system whose documented defaults fill the fields left out (see
    ``acksim.scenario.presets`` and ``acksim presets``; default "rest-queue", the design documents' queue)
    and bounds them to that system's documented ranges.

    ``redelivery`` (the lease of a delivery is ``visibility_timeout_s``):
    "visibility_timeout" (SQS): the message is receivable again when the lease lapses;
    "consumer_death" (RabbitMQ): requeued ``disconnect_detect_s`` after its consumer dies, and
    a lease found lapsed (the ack timeout) closes the consumer's channel, requeueing all its
    deliveries; "claim" (Redis Streams): a lapsed entry stays pending until a claimer, every
    ``sweep_interval_s``, takes it back (0: no claimer, never); "stalled_sweep" (BullMQ): as a
    lease, checked every ``sweep_interval_s``, and past ``max_stalled_count`` stalls (0: at
    the first) the job fails to the dead-letter queue; "none": pop-on-fetch, a received
    message is gone.
    With ``heartbeat_interval_s`` > 0 a live holder extends its lease to ``visibility_timeout_s``
    from each heartbeat, never past ``max_lease_s`` from the receipt (SQS: 12 h).
    ``sweep_interval_s`` > 0 notices lapsed leases only at sweeps (RabbitMQ checks once a
    minute). ``on_worker_lost``: what the queue does with a crashed worker's delivery: wait for
    the lease ("lease"), ack it ("ack", Celery acks_late) or requeue it at once ("requeue",
    Celery task_reject_on_worker_lost). ``eta_held_by_worker`` (Celery ETA): the job is
    published at once and the worker holds it, unacked, until its deadline.

    Limits: ``max_receive_count`` receives, then the next receive dead-letters the message
    (SQS maxReceiveCount; 0: no limit), or drops it when ``on_exhaustion`` is "drop" (a
    quorum queue without a dead-letter target); ``max_attempts`` failed attempts (nacks:
    application retries, Celery max_retries + 1, BullMQ attempts) then the same; a stream
    longer than ``max_length`` entries (0: no cap) trims its oldest, pending or not.

    ``delivery_limit`` (RabbitMQ quorum queues): a message returned (nacked, requeued, its
    loan ended by a lost consumer or the ack timeout) more than that many times is ended at
    that return, so it is delivered ``delivery_limit`` + 1 times (0: no limit).

    ``ack_by``: an ack deletes the message only with the current loan's receipt ("receipt":
    SQS DeleteMessage with an outdated receipt handle deletes nothing) or by its id, whoever
    holds it now ("message_id": Redis Streams XACK), so the first run to finish deletes it.

    ``recovery_sweep`` (``acksim.world.queue.recovery``): a dead consumer's deliveries are also
    handed back by a sweep, at a process start ("process_start", Sidekiq super_fetch) or at
    broker traffic ("traffic", RQ's maintenance), at most once per ``recovery_interval_s``
    (Sidekiq: 3600 s), each loan once its holder has been dead ``heartbeat_ttl_s`` (60 s).

    ``tombstones`` (``acksim.world.queue.tombstones``, Redis Streams): the length cap trims a
    pending entry's body but keeps its id pending; once its loan ends without an ack it is
    delivered again as an id with no payload (``workers.on_tombstone`` says what the worker
    does with it).

    ``kind`` "fifo" models SQS FIFO's send-side deduplication (the same (account, version)
    published again within ``fifo_dedup_window_s`` is dropped) and no spurious duplicates;
    message-group ordering is not modelled. ``duplicate_probability``: the chance that a
    receive also hands a spurious copy to another consumer. A nack makes the message visible
    again after ``min(base * 2**(n-1), max)`` seconds for receive count n, at the head of the
    queue with ``requeue_at_head`` (RabbitMQ) or else at the tail.

    At a broker restart (``[[faults.broker_restarts]]``) ``on_broker_restart`` says what
    becomes of the deliveries in flight: left to their lease ("lease"), requeued at once
    ("requeue", RabbitMQ) or lost with every message ("lost", no persistence); the messages
    published ``broker_lost_writes_s`` before the restart are lost (``acksim.world.queue.broker``).

    ``prefetch`` > 1: a worker that receives takes up to that many deliveries at once (AMQP
    prefetch, a batch receive, a stream read with a count) and runs them one after another;
    each one's lease runs from its receipt (``acksim.world.queue.prefetch``). With
    ``ack_timeout_ends_consumer`` the ack timeout of "consumer_death" redelivery also ends the
    consumer process, which restarts after ``workers.restart_delay_s``
    (``acksim.world.queue.consumer_timeout``).
    """

    preset: str = Field("rest-queue", min_length=1, max_length=100)
    kind: Literal["standard", "fifo"] = "standard"
    redelivery: Literal["visibility_timeout", "consumer_death", "claim", "stalled_sweep", "none"] = "visibility_timeout"
    visibility_timeout_s: float = Field(30.0, gt=0.0, le=HORIZON_S)
    heartbeat_interval_s: float = Field(0.0, ge=0.0, le=HORIZON_S)
    max_lease_s: float = Field(43_200.0, gt=0.0, le=HORIZON_S)
    sweep_interval_s: float = Field(0.0, ge=0.0, le=DAY)
    disconnect_detect_s: float = Field(60.0, ge=0.0, le=DAY)
    max_stalled_count: int = Field(1, ge=0, le=1000)
    on_worker_lost: Literal["lease", "ack", "requeue"] = "lease"
    eta_held_by_worker: bool = False
    max_receive_count: int = Field(5, ge=0, le=1000)
    max_attempts: int = Field(0, ge=0, le=1000)
    on_exhaustion: Literal["dead_letter", "drop"] = "dead_letter"
    max_length: int = Field(0, ge=0, le=100_000_000)
    max_delay_s: float = Field(604_800.0, ge=0.0, le=HORIZON_S)
    retention_s: float = Field(2_592_000.0, ge=60.0, le=HORIZON_S)
    max_message_bytes: int = Field(262_144, ge=1024, le=536_870_912)
    fifo_dedup_window_s: float = Field(300.0, ge=0.0, le=DAY)
    duplicate_probability: Probability = 0.0
    nack_backoff_base_s: float = Field(2.0, ge=0.0, le=DAY)
    nack_backoff_max_s: float = Field(300.0, ge=0.0, le=DAY)
    requeue_at_head: bool = False
    ack_latency_s: float = Field(0.002, ge=0.0, le=60.0)
    redrive_at_s: Annotated[tuple[Seconds, ...], Tupled] = ()
    # broker restarts ([[faults.broker_restarts]], acksim.world.queue.broker)
    on_broker_restart: Literal["lease", "requeue", "lost"] = "lease"
    # deliveries a worker holds at once (acksim.world.queue.prefetch), 1 = one at a time
    prefetch: int = Field(1, ge=1, le=1000)
    # "consumer_death": the ack timeout also ends the consumer's process (acksim.world.queue.consumer_timeout)
    ack_timeout_ends_consumer: bool = False
    broker_lost_writes_s: float = Field(0.0, ge=0.0, le=DAY)
    # the delivery limit, recovery sweeps, tombstones and ack by (acksim.world.queue.delivery_limit, recovery, tombstones; ack_by in Queue.ack)
    delivery_limit: int = Field(0, ge=0, le=1000)
    ack_by: Literal["receipt", "message_id"] = "receipt"
    recovery_sweep: Literal["none", "process_start", "traffic"] = "none"
    recovery_interval_s: float = Field(3600.0, ge=0.0, le=HORIZON_S)
    heartbeat_ttl_s: float = Field(60.0, ge=0.0, le=DAY)
    tombstones: bool = False


    def nack_backoff(self, receive_count: int) -> float:
        """Nack delay (virtual s) for a message received ``receive_count`` times: bounded
        exponential, ``nack_backoff_base_s * 2 ** (receive_count - 1)``, at most
        ``nack_backoff_max_s``. The simulated queue's and the live workers' alike."""
        return min(self.nack_backoff_base_s * 2 ** max(receive_count - 1, 0), self.nack_backoff_max_s)
    @model_validator(mode="after")
    def _backoff_ordered(self) -> "Queue":
        if self.nack_backoff_max_s < self.nack_backoff_base_s:
            raise ValueError(f"nack_backoff_max_s: must be at least nack_backoff_base_s "
                             f"({self.nack_backoff_base_s:g}), got {self.nack_backoff_max_s:g}")
        return self

    @model_validator(mode="after")
    def _fifo_has_no_spurious_duplicates(self) -> "Queue":
        if self.kind == "fifo" and self.duplicate_probability > 0:
            raise ValueError("duplicate_probability: a FIFO queue delivers no spurious duplicates; "
                             "set 0 or use kind = 'standard'")
        return self

    @model_validator(mode="after")
    def _pop_on_fetch_has_no_lease(self) -> "Queue":
        if self.redelivery == "none" and self.heartbeat_interval_s:
            raise ValueError("heartbeat_interval_s: a pop-on-fetch queue (redelivery = 'none') has no lease to "
                             "extend; set 0")
        return self

    @model_validator(mode="after")
    def _heartbeat_within_lease(self) -> "Queue":
        if self.heartbeat_interval_s and self.heartbeat_interval_s >= self.visibility_timeout_s:
            raise ValueError(f"heartbeat_interval_s: must be below visibility_timeout_s "
                             f"({self.visibility_timeout_s:g}) or 0, got {self.heartbeat_interval_s:g}")
        return self
