"""Scenarios: the TOML file a user writes, validated into frozen settings.

A scenario names the workload (accounts, deadlines, renewals...), the scheduler, the queue,
the workers, the stores, the faults, the mail provider and the SLO thresholds. Every default
comes from the design documents (``docs/seed-facts.md``) or, where they are silent, from the
documented defaults of Amazon SQS (``docs/queue-semantics.md``); each field says which.

Bad input raises ``ScenarioError`` with one line that names the field and the allowed range;
the command line turns it into exit code 2.
"""

from __future__ import annotations

import tomllib
from datetime import datetime, timezone
from pathlib import Path
from typing import Annotated, Literal, get_args

import annotated_types as at
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, field_validator, model_validator

DAY = 86_400.0
HORIZON_S = 400 * DAY  # the longest virtual time any scenario may reach
MAX_SCENARIO_BYTES = 1_000_000


class ScenarioError(ValueError):
    """A scenario that cannot be run; ``str()`` is one line naming the field and what is allowed."""


class _Section(BaseModel):
    # strict: TOML has native integers, floats, booleans and strings, so "60" or true where a
    # number is expected is a mistake to report, not to coerce (an int is still a valid float)
    # and inf or nan in a time or threshold is never meant
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)


def _tuples(value):
    """TOML arrays arrive as lists; the settings keep them as (nested) tuples."""
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value


Tupled = BeforeValidator(_tuples)
Probability = Annotated[float, Field(ge=0.0, le=1.0)]
Seconds = Annotated[float, Field(ge=0.0, le=HORIZON_S)]
Span = Annotated[tuple[Seconds, Seconds], Tupled]


def _ordered_windows(v: tuple[tuple[float, float], ...]) -> tuple[tuple[float, float], ...]:
    """Validate time windows ``[start_s, end_s]`` (start before end); returns them."""
    for lo, hi in v:
        if lo >= hi:
            raise ValueError(f"each window must be [start_s, end_s] with start_s < end_s; "
                             f"[{lo:g}, {hi:g}] is not")
    return v


class Workload(_Section):
    """Accounts and their lifecycle. Times in virtual seconds from the epoch.

    With ``arrivals = "window"`` deadlines are spread uniformly over ``[deadline_start_s,
    deadline_start_s + deadline_window_s)`` and rounded down to ``deadline_granularity_s``
    (bursts, as when subscriptions end on the minute); with ``"poisson"`` they form a Poisson
    process of ``arrival_rate_per_s`` from ``deadline_start_s`` (for queueing-theory
    checks). Fractions are per account, drawn independently.
    """

    accounts: int = Field(1_000, ge=1, le=2_000_000)
    arrivals: Literal["window", "poisson"] = "window"
    arrival_rate_per_s: float = Field(1.0, gt=0.0, le=1_000_000.0)
    deadline_start_s: float = Field(600.0, ge=0.0, le=HORIZON_S)
    deadline_window_s: float = Field(DAY, gt=0.0, le=30 * DAY)
    deadline_granularity_s: float = Field(60.0, gt=0.0, le=DAY)
    renew_fraction: Probability = 0.15
    renew_in_flight_fraction: Probability = 0.3
    renew_in_flight_within_s: float = Field(0.05, gt=0.0, le=3600.0)
    renew_lead_s: Span = (60.0, 1800.0)
    rollover_delay_s: float = Field(300.0, ge=0.0, le=30 * DAY)
    term_s: float = Field(21_600.0, gt=0.0, le=400 * DAY)
    extension_fraction: Probability = 0.05
    extension_lead_s: Span = (600.0, 7200.0)
    extension_s: Span = (3600.0, 21_600.0)
    resubscribe_fraction: Probability = 0.05
    resubscribe_after_s: Span = (600.0, 7200.0)
    delete_fraction: Probability = 0.02
    delete_around_deadline_s: float = Field(1.0, ge=0.0, le=DAY)
    payload_bytes: int = Field(0, ge=0, le=64 * 1024 * 1024)

    @field_validator("renew_lead_s", "extension_lead_s", "extension_s", "resubscribe_after_s")
    @classmethod
    def _ordered(cls, v: tuple[float, float]) -> tuple[float, float]:
        if v[0] > v[1]:
            raise ValueError(f"must be [low, high] with low <= high, got {list(v)}")
        return v


class Scheduler(_Section):
    """How jobs reach the queue.

    ``per_deadline``: a scheduler target per deadline publishes the job as a delayed message
    (delay capped at ``queue.max_delay_s``; a farther deadline re-arms the target).
    ``cron``: every ``cron_interval_s`` (jitter of up to ``cron_jitter_s``, second-level per
    the design documents) a run finds due accounts and publishes their jobs, stopped at
    ``cron_run_limit_s`` (900 s, the documents' execution limit); runs that fall in a
    ``paused`` window are skipped and not backfilled. A cron run publishes every due account
    (``cron_selection`` "due", a state-based cleanup) or only those whose deadline fell since
    the previous trigger ("window", a window-based one). A trigger that fires more than
    ``misfire_grace_s`` late (the scheduler stalled: ``faults.scheduler_stalls``) misfires:
    with ``catchup`` "none" it is skipped, "latest" runs only the latest missed trigger,
    "all" runs every one (Airflow's catchup).

    ``instances`` schedulers with the same schedule and no leader each publish every job.
    ``publish_crash_probability``: a scheduler instance crashes after a publish and before
    recording it, and publishes the job again ``restart_delay_s`` later.
    """

    mode: Literal["per_deadline", "cron"] = "per_deadline"
    publish_latency_s: float = Field(0.002, ge=0.0, le=60.0)
    cron_interval_s: float = Field(300.0, gt=0.0, le=30 * DAY)
    cron_jitter_s: float = Field(1.0, ge=0.0, le=60.0)
    cron_run_limit_s: float = Field(900.0, gt=0.0, le=900.0)
    cron_batch: int = Field(1000, ge=1, le=1_000_000)
    cron_selection: Literal["due", "window"] = "due"
    misfire_grace_s: float = Field(HORIZON_S, ge=0.0, le=HORIZON_S)
    catchup: Literal["none", "latest", "all"] = "none"
    paused: Annotated[tuple[Span, ...], Tupled] = ()
    instances: int = Field(1, ge=1, le=100)
    publish_crash_probability: Probability = 0.0
    restart_delay_s: float = Field(30.0, ge=0.0, le=DAY)

    @model_validator(mode="after")
    def _jitter_within_interval(self) -> "Scheduler":
        if self.cron_jitter_s >= self.cron_interval_s:
            raise ValueError(f"cron_jitter_s: must be below cron_interval_s ({self.cron_interval_s:g}), "
                             f"got {self.cron_jitter_s:g}")
        return self

    @field_validator("paused")
    @classmethod
    def _windows_ordered(cls, v: tuple[tuple[float, float], ...]) -> tuple[tuple[float, float], ...]:
        return _ordered_windows(v)


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

    ``kind`` "fifo" models SQS FIFO's send-side deduplication (the same (account, version)
    published again within ``fifo_dedup_window_s`` is dropped) and no spurious duplicates;
    message-group ordering is not modelled. ``duplicate_probability``: the chance that a
    receive also hands a spurious copy to another consumer. A nack makes the message visible
    again after ``min(base * 2**(n-1), max)`` seconds for receive count n, at the head of the
    queue with ``requeue_at_head`` (RabbitMQ) or else at the tail.
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
    the job stale or done does no work). ``stop_when_lease_lost``: before committing, the
    worker checks that it still holds the delivery's lease and rolls back if not."""

    count: int = Field(8, ge=1, le=1000)
    ack_policy: Literal["after_commit", "before_processing"] = "after_commit"
    transaction_scope: Literal["unit_of_work", "autocommit"] = "unit_of_work"
    conflict_retries: int = Field(8, ge=0, le=100)
    conflict_backoff_s: float = Field(0.02, ge=0.0, le=3600.0)
    restart_delay_s: float = Field(30.0, ge=0.0, le=DAY)
    service_time_mean_s: float = Field(0.0, ge=0.0, le=DAY)
    service_time_at: Literal["start", "first_write"] = "start"
    stop_when_lease_lost: bool = False
    service_time_distribution: Literal["exponential", "constant"] = "exponential"


class Stores(_Section):
    """The stores of ``model``: backend, isolation level and uniqueness (design parameters).
    Every store call (and each commit) takes a latency of mean ``latency_mean_s``, drawn from
    ``latency_distribution`` ("exponential", or "constant" for exact timelines in tests)."""

    backend: Literal["sqlite", "memory"] = "sqlite"
    isolation: Literal["serializable", "read_committed"] = "serializable"
    unique_markers: bool = True
    unique_outbox_keys: bool = True
    latency_mean_s: float = Field(0.004, ge=0.0, le=60.0)
    latency_distribution: Literal["exponential", "constant"] = "exponential"

    @model_validator(mode="after")
    def _sqlite_is_serializable(self) -> "Stores":
        if self.backend == "sqlite" and self.isolation != "serializable":
            raise ValueError("isolation: sqlite offers only 'serializable'; use backend = 'memory' for 'read_committed'")
        return self


CrashPhase = Literal["before_call", "after_call", "after_commit", "during_ack"]


class ScheduledCrash(_Section):
    """Crash the worker holding the ``delivery``-th delivery (1-based, counted over the whole
    run) at ``phase``; for call phases, at store call number ``call`` (0-based)."""

    delivery: int = Field(ge=1)
    phase: CrashPhase
    call: int = Field(0, ge=0, le=1000)


class Deployment(_Section):
    """A rolling deployment starting at ``at_s``: each worker in turn is stopped (a crash
    wherever it is) and comes back ``worker_down_s`` later, then the next one."""

    at_s: float = Field(ge=0.0, le=HORIZON_S)
    worker_down_s: float = Field(20.0, ge=0.0, le=DAY)


class ScheduledDuplicate(_Section):
    """The queue also hands a spurious copy of the ``delivery``-th delivery (1-based) to the
    next waiting consumer."""

    delivery: int = Field(ge=1, le=10_000_000)


class Kill(_Section):
    """Hard-kill worker number ``worker`` (1-based) at ``at_s``, wherever it is; it restarts
    ``down_s`` later."""

    at_s: float = Field(ge=0.0, le=HORIZON_S)
    worker: int = Field(ge=1, le=1000)
    down_s: float = Field(30.0, ge=0.0, le=HORIZON_S)


class LatencySpike(_Section):
    """Store calls that start in ``[at_s, at_s + duration_s)`` take ``factor`` times longer."""

    at_s: float = Field(ge=0.0, le=HORIZON_S)
    duration_s: float = Field(gt=0.0, le=HORIZON_S)
    factor: float = Field(gt=1.0, le=1_000_000.0)


class Faults(_Section):
    """Worker crashes: a probability per opportunity for each phase (before or after each store
    call, after the commit before the ack, during the ack), scheduled crashes, rolling
    deployments, hard kills of one worker at a time; scheduled spurious duplicates; store
    latency spikes; ``poison_accounts`` whose job crashes its worker on every attempt (phase
    "poison"); ``scheduler_stalls``: windows [start_s, end_s) in which the scheduler is frozen."""

    crash_before_call: Probability = 0.0
    crash_after_call: Probability = 0.0
    crash_after_commit: Probability = 0.0
    crash_during_ack: Probability = 0.0
    crashes: Annotated[tuple[ScheduledCrash, ...], Tupled] = ()
    deployments: Annotated[tuple[Deployment, ...], Tupled] = ()
    duplicates: Annotated[tuple[ScheduledDuplicate, ...], Tupled] = ()
    latency_spikes: Annotated[tuple[LatencySpike, ...], Tupled] = ()
    kills: Annotated[tuple[Kill, ...], Tupled] = ()
    poison_accounts: Annotated[tuple[Annotated[str, Field(min_length=1, max_length=100)], ...], Tupled] = ()
    scheduler_stalls: Annotated[tuple[Span, ...], Tupled] = ()

    @field_validator("scheduler_stalls")
    @classmethod
    def _stalls_ordered(cls, v: tuple[tuple[float, float], ...]) -> tuple[tuple[float, float], ...]:
        return _ordered_windows(v)


class MailOutage(_Section):
    """Every send to the mail provider in ``[start_s, end_s)`` fails with ``error``."""

    start_s: float = Field(ge=0.0, le=HORIZON_S)
    end_s: float = Field(ge=0.0, le=HORIZON_S)
    error: Literal["transient", "permanent"] = "transient"

    @model_validator(mode="after")
    def _ordered(self) -> "MailOutage":
        if self.end_s <= self.start_s:
            raise ValueError(f"end_s: must be after start_s ({self.start_s:g}), got {self.end_s:g}")
        return self


class Mail(_Section):
    """The outbox relay and the mail provider it sends reminders to. With
    ``provider_idempotency`` the provider drops a resend of an event key it already accepted;
    without it every send reaches the player. Transient errors (429, 5xx) are retried every
    poll up to ``max_attempts``; permanent errors (invalid input, 4xx) fail the event at once."""

    poll_interval_s: float = Field(5.0, ge=0.1, le=3600.0)
    batch: int = Field(100, ge=1, le=100_000)
    latency_s: float = Field(0.05, ge=0.0, le=60.0)
    transient_error_probability: Probability = 0.0
    permanent_error_probability: Probability = 0.0
    max_attempts: int = Field(5, ge=1, le=1000)
    provider_idempotency: bool = True
    outages: Annotated[tuple[MailOutage, ...], Tupled] = ()


class Fanout(_Section):
    """The second design of the documents (``acksim.world.fanout``): ``updates`` shipment updates,
    one every ``update_interval_s`` from ``start_s``, each fanned out to ``subscribers``
    public endpoints as one queue task per delivery. Endpoint answers: subscribers listed in
    ``rejecting_subscribers`` (1-based) answer 404 (dead-lettered, no retry); otherwise a 400
    with ``client_error_probability`` (invalid input: dead-lettered, no retry), a 429 with
    Retry-After ``retry_after_s`` with ``rate_limit_probability``, a 503 with
    ``server_error_probability``, else 200, after ``endpoint_latency_s``. A subscriber with
    ``subscriber_dedup`` applies a repeated idempotency key once; without it, every 200 is an
    effect. 5xx backoff: ``min(backoff_base_s * 2**(n-1), backoff_max_s)`` for receive count n.
    A join actor checks every ``join_interval_s`` which updates have all N records.
    ``processor``: the delivery code under test, ``acksim.model.shipment:deliver`` by default."""

    updates: int = Field(0, ge=0, le=100_000)
    subscribers: int = Field(5, ge=1, le=1000)
    start_s: float = Field(60.0, ge=0.0, le=HORIZON_S)
    update_interval_s: float = Field(10.0, gt=0.0, le=DAY)
    rejecting_subscribers: Annotated[tuple[Annotated[int, Field(ge=1, le=1000)], ...], Tupled] = ()
    client_error_probability: Probability = 0.0
    rate_limit_probability: Probability = 0.0
    retry_after_s: float = Field(30.0, ge=0.0, le=DAY)
    server_error_probability: Probability = 0.0
    endpoint_latency_s: float = Field(0.2, ge=0.0, le=600.0)
    subscriber_dedup: bool = True
    join_interval_s: float = Field(30.0, gt=0.0, le=DAY)
    backoff_base_s: float = Field(1.0, gt=0.0, le=DAY)
    backoff_max_s: float = Field(60.0, gt=0.0, le=DAY)
    processor: str = Field("acksim.model.shipment:deliver", min_length=3, max_length=500)

    @model_validator(mode="after")
    def _rejecting_exist(self) -> "Fanout":
        bad = [k for k in self.rejecting_subscribers if k > self.subscribers]
        if bad:
            raise ValueError(f"rejecting_subscribers: subscriber numbers go from 1 to subscribers "
                             f"({self.subscribers}), got {bad[0]}")
        if self.client_error_probability + self.rate_limit_probability + self.server_error_probability > 1:
            raise ValueError("client_error_probability + rate_limit_probability + server_error_probability: "
                             "must add up to at most 1")
        if self.backoff_max_s < self.backoff_base_s:
            raise ValueError(f"backoff_max_s: must be at least backoff_base_s ({self.backoff_base_s:g}), "
                             f"got {self.backoff_max_s:g}")
        return self


class Slo(_Section):
    """Thresholds on the SLO figures of docs/DESIGN.md (virtual seconds, counts). Each is an upper
    bound except ``throughput_per_s``, a lower bound. A missed threshold fails the run."""

    throughput_per_s: float | None = Field(None, ge=0.0)
    end_to_end_p50_s: float | None = Field(None, ge=0.0)
    end_to_end_p95_s: float | None = Field(None, ge=0.0)
    end_to_end_p99_s: float | None = Field(None, ge=0.0)
    recovery_time_p50_s: float | None = Field(None, ge=0.0)
    recovery_time_p95_s: float | None = Field(None, ge=0.0)
    recovery_time_p99_s: float | None = Field(None, ge=0.0)
    recovery_time_max_s: float | None = Field(None, ge=0.0)
    queue_depth_max: float | None = Field(None, ge=0.0)
    oldest_message_age_max_s: float | None = Field(None, ge=0.0)
    redeliveries: float | None = Field(None, ge=0.0)
    dead_lettered: float | None = Field(None, ge=0.0)
    retries_p99: float | None = Field(None, ge=0.0)

    def thresholds(self) -> dict[str, float]:
        """The thresholds that are set, by figure name."""
        return {k: v for k, v in self.model_dump().items() if v is not None}


class Run(_Section):
    """When the world stops: once all planned events have happened and the queue, the
    workers, the scheduler and the outbox are idle (checked every ``idle_check_s``), or at
    ``max_time_s``, or once the history holds ``max_records`` records (a crash loop with no
    dead-letter queue never drains; the summary's ``stopped_early`` count says so).
    ``step_budget_s``: the wall-clock time the processor may run between two store calls
    before the run ends with it reported as hung; ``stop_on_processor_error``: end the run at
    the processor's first error of its own (``acksim check`` sets it; a replay keeps it)."""

    max_time_s: float = Field(30 * DAY, gt=0.0, le=HORIZON_S)
    idle_check_s: float = Field(10.0, ge=1.0, le=DAY)
    max_records: int = Field(3_000_000, ge=1000, le=100_000_000)
    step_budget_s: float = Field(10.0, ge=0.1, le=3600.0)
    stop_on_processor_error: bool = False


AccountId = Annotated[str, Field(min_length=1, max_length=100)]


class PlannedAccount(_Section):
    """An account of an explicit plan, created at time 0 with its first deadline."""

    account_id: AccountId
    deadline_s: float = Field(ge=0.0, le=HORIZON_S)


class PlannedStep(_Section):
    """A lifecycle step of an explicit plan (see ``acksim.world.renewals``): ``amount_s`` is the
    extension of an "extend"."""

    at_s: float = Field(ge=0.0, le=HORIZON_S)
    kind: Literal["renew", "extend", "resubscribe", "delete"]
    account_id: AccountId
    amount_s: float = Field(0.0, ge=0.0, le=HORIZON_S)


class Plan(_Section):
    """An explicit workload (what ``acksim check`` writes into a replay file): when
    ``accounts`` is not empty it replaces the workload drawn from ``[workload]``."""

    accounts: Annotated[tuple[PlannedAccount, ...], Tupled] = ()
    steps: Annotated[tuple[PlannedStep, ...], Tupled] = ()

    @model_validator(mode="after")
    def _steps_name_known_accounts(self) -> "Plan":
        known = {a.account_id for a in self.accounts}
        if len(known) != len(self.accounts):
            raise ValueError("accounts: each account_id may appear once")
        for step in self.steps:
            if step.account_id not in known:
                raise ValueError(f"steps: account_id {step.account_id!r} is not in plan.accounts")
        return self


class Expect(_Section):
    """What a replay file recorded when it was written; ``acksim run`` says whether the run
    reproduced it. ``history_sha256`` is the SHA-256 of the events file."""

    violated: Annotated[tuple[str, ...], Tupled] = ()
    processor_error: bool = False
    history_sha256: str = Field("", max_length=64)


class Scenario(_Section):
    """A whole scenario. ``epoch`` is the wall-clock instant of virtual time 0 (UTC);
    ``processor`` the code under test, ``package.module:function`` or
    ``path/to/file.py:function`` (in a scenario file, a relative path is taken from the file's
    folder); ``processor_path`` a folder added to ``sys.path`` to import it from (a replay
    file records the folder its check ran in), relative to the scenario file's folder."""

    name: str = Field("scenario", min_length=1, max_length=200)
    processor: str = Field("acksim.model.processor:process", min_length=3, max_length=500)
    processor_path: str | None = Field(None, min_length=1, max_length=1000)
    seed: int = Field(0, ge=0, le=2**63 - 1)
    epoch: datetime = datetime(2026, 1, 1, tzinfo=timezone.utc)
    workload: Workload = Workload()
    scheduler: Scheduler = Scheduler()
    queue: Queue = Queue()
    workers: Workers = Workers()
    stores: Stores = Stores()
    faults: Faults = Faults()
    mail: Mail = Mail()
    fanout: Fanout = Fanout()
    slo: Slo = Slo()
    run: Run = Run()
    plan: Plan = Plan()
    expect: Expect | None = None

    @model_validator(mode="after")
    def _consistent(self) -> "Scenario":
        bad_kill = next((k for k in self.faults.kills if k.worker > self.workers.count), None)
        if bad_kill is not None:
            raise ValueError(f"faults.kills: worker numbers go from 1 to workers.count ({self.workers.count}), "
                             f"got {bad_kill.worker}")
        if self.fanout != Fanout() and not self.fanout.updates:
            raise ValueError("fanout.updates: set at least 1 to run the fan-out design (its other keys are set)")
        sched = self.scheduler
        if sched.mode != "cron" and (self.faults.scheduler_stalls or sched.catchup != "none"
                                     or sched.misfire_grace_s != HORIZON_S):
            raise ValueError("scheduler.mode: scheduler_stalls, misfire_grace_s and catchup apply to "
                             "mode = 'cron' only")
        known = {a.account_id for a in self.plan.accounts}
        stranger = next((a for a in self.faults.poison_accounts if known and a not in known), None)
        if stranger is not None:
            raise ValueError(f"faults.poison_accounts: {stranger!r} is not in plan.accounts")
        if self.workers.stop_when_lease_lost and (
                self.workers.ack_policy == "before_processing" or self.queue.redelivery == "none"):
            raise ValueError("workers.stop_when_lease_lost: needs a lease to check; not with "
                             "ack_policy = 'before_processing' or queue.redelivery = 'none'")
        return self

    @field_validator("epoch")
    @classmethod
    def _utc(cls, v: datetime) -> datetime:
        v = v.replace(tzinfo=timezone.utc) if v.tzinfo is None else v.astimezone(timezone.utc)
        if not 1970 <= v.year <= 9000:
            raise ValueError(f"must be a UTC date-time between 1970 and 9000, got {v.isoformat()}")
        return v


def _model_in(annotation) -> type[BaseModel] | None:
    """The settings model inside an annotation (bare, ``Annotated``, ``tuple[...]``), if any."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in get_args(annotation):
        found = _model_in(arg)
        if found is not None:
            return found
    return None


def _walk(loc: tuple) -> tuple[type[BaseModel], object | None]:
    """For an error location: the model whose keys the last name was looked up in, and the
    ``FieldInfo`` of that name (None when it is no field there). List indices are skipped."""
    model, info = Scenario, None
    for part in loc:
        if isinstance(part, int):
            continue
        if part not in model.model_fields:
            return model, None
        info = model.model_fields[part]
        inner = _model_in(info.annotation)
        if inner is None:
            return model, info
        model = inner
    return model, info


def _describe_range(info) -> str:
    """'allowed: 0 < value <= 43200' from the constraints of a field, or ''."""
    lo = hi = ""
    for m in getattr(info, "metadata", ()):
        if isinstance(m, at.Gt):
            lo = f"{m.gt} < "
        elif isinstance(m, at.Ge):
            lo = f"{m.ge} <= "
        elif isinstance(m, at.Lt):
            hi = f" < {m.lt}"
        elif isinstance(m, at.Le):
            hi = f" <= {m.le}"
    return f"allowed: {lo}value{hi}" if lo or hi else ""


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _one_line(exc: ValidationError, source: str) -> str:
    err = exc.errors()[0]
    loc = tuple(err["loc"])
    field = ".".join(str(p) for p in loc) or "(top level)"
    model, info = _walk(loc)
    if err["type"] == "extra_forbidden":
        return f"{source}: {field}: unknown key (allowed keys here: {', '.join(model.model_fields)})"
    msg = err["msg"].removeprefix("Value error, ")
    head, sep, rest = msg.partition(": ")
    if err["type"] == "value_error" and sep and all(part.isidentifier() for part in head.split(".")):
        # a check across fields names its field first: "queue: x: ..." reads "queue.x: ..."
        field, msg = (f"{'.'.join(str(p) for p in loc)}.{head}" if loc else head), rest
    rng = _describe_range(info) if info is not None and loc and isinstance(loc[-1], str) else ""
    got = err.get("input")
    got_s = "" if isinstance(got, dict) else f" (got {_short(got)})"
    return f"{source}: {field}: {msg}{got_s}" + (f"; {rng}" if rng and rng not in msg else "")


def parse(data: dict, source: str = "scenario") -> Scenario:
    """Validate a scenario given as a dict (the parsed TOML), its queue preset's defaults
    filled in under the fields it sets (``acksim.scenario.presets``). Raises ``ScenarioError``."""
    from acksim.scenario.presets import apply_preset, limit_violation

    try:
        data, preset = apply_preset(data)
    except KeyError as exc:
        raise ScenarioError(f"{source}: {exc.args[0]}") from None
    try:
        scenario = Scenario.model_validate(data)
    except ValidationError as exc:
        raise ScenarioError(_one_line(exc, source)) from None
    problem = limit_violation(preset, scenario.queue)
    q = scenario.queue
    if not problem and q.max_lease_s < q.visibility_timeout_s:  # after the preset's limits: they say more
        problem = (f"queue.max_lease_s: must be at least visibility_timeout_s ({q.visibility_timeout_s:g}), "
                   f"got {q.max_lease_s:g}")
    if problem:
        raise ScenarioError(f"{source}: {problem}")
    return scenario


def read_data(path: str | Path) -> dict:
    """A scenario file's parsed TOML, not yet validated. Raises ``ScenarioError`` (one line)
    for a missing or unreadable file, one over ``MAX_SCENARIO_BYTES``, or invalid TOML."""
    p = Path(path)
    try:
        if not p.exists():
            raise ScenarioError(f"{p}: scenario file not found")
        if not p.is_file():
            raise ScenarioError(f"{p}: not a regular file")
        if p.stat().st_size > MAX_SCENARIO_BYTES:
            raise ScenarioError(f"{p}: {p.stat().st_size} bytes; a scenario file may have at most {MAX_SCENARIO_BYTES}")
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ScenarioError(f"{p}: cannot read scenario file: {exc}") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ScenarioError(f"{p}: not valid TOML: {exc}") from None
    except RecursionError:
        raise ScenarioError(f"{p}: not valid TOML: arrays or tables nested too deeply") from None


def load(path: str | Path) -> Scenario:
    """Read and validate a scenario file.

    Raises ``ScenarioError`` (one line) for a missing or unreadable file, invalid TOML, an
    unknown key, a wrong type or an out-of-range value, and for a file reference or
    ``processor_path`` that does not exist relative to the file's folder (where they are taken from).
    """
    from acksim.world.processor_ref import anchor_refs

    return parse(anchor_refs(read_data(path), Path(path).parent, str(Path(path))), str(Path(path)))


def with_overrides(scenario: Scenario, seed: int | None = None) -> Scenario:
    """A copy of ``scenario`` with the command line's overrides applied (re-validated)."""
    data = scenario.model_dump()
    if seed is not None:
        data["seed"] = seed
    return parse(data, "--seed" if seed is not None else "scenario")
