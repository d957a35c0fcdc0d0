"""``[scheduler]``: how jobs reach the queue (a delayed message per deadline, or cron runs),
its misfires, pauses, instances without a leader and publish crashes."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from acksim.scenario.base import DAY, HORIZON_S, Probability, Span, Tupled, _ordered_windows, _Section


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
    ``order`` "record_then_publish" (``acksim.world.actors.publish_records``) records the job first:
    the crash then falls between the record and the publish, and a sweeper every
    ``sweep_interval_s`` publishes the records left unpublished ``sweep_after_s``.
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
    order: Literal["publish_then_record", "record_then_publish"] = "publish_then_record"
    sweep_after_s: float = Field(300.0, ge=0.0, le=DAY)
    sweep_interval_s: float = Field(60.0, ge=0.1, le=DAY)

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
