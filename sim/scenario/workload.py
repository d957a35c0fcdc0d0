"""``[workload]``: the accounts, their deadlines and their lifecycle (renewals, extensions,
re-subscriptions, deletions)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from acksim.scenario.base import DAY, HORIZON_S, Probability, Span, Tupled, _Section


class Stage(_Section):
    """One stage of a load shape (``arrivals = "stages"``), as k6's ``stages``: over
    ``duration_s`` virtual seconds the deadline rate moves in a straight line from the previous
    stage's ``rate_per_s`` (the first stage's from ``Workload.start_rate_per_s``) to this
    one's; a stage with the rate it starts from holds it."""

    duration_s: float = Field(gt=0.0, le=30 * DAY)
    rate_per_s: float = Field(ge=0.0, le=1_000_000.0)


class Workload(_Section):
    """Accounts and their lifecycle. Times in virtual seconds from the epoch.

    With ``arrivals = "window"`` deadlines are spread uniformly over ``[deadline_start_s,
    deadline_start_s + deadline_window_s)`` and rounded down to ``deadline_granularity_s``
    (bursts, as when subscriptions end on the minute); with ``"poisson"`` they form a Poisson
    process of ``arrival_rate_per_s`` from ``deadline_start_s`` (for queueing-theory
    checks); with ``"stages"`` a Poisson process whose rate follows the load shape of
    ``stages`` (ramps and plateaus, ``Stage``) from ``deadline_start_s``, until the last stage
    ends or ``accounts`` deadlines were drawn. Fractions are per account, drawn independently.
    """

    accounts: int = Field(1_000, ge=1, le=2_000_000)
    arrivals: Literal["window", "poisson", "stages"] = "window"
    arrival_rate_per_s: float = Field(1.0, gt=0.0, le=1_000_000.0)
    start_rate_per_s: float = Field(0.0, ge=0.0, le=1_000_000.0)
    stages: Annotated[tuple[Stage, ...], Tupled] = Field((), max_length=1000)
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

    @model_validator(mode="after")
    def _shaped(self) -> "Workload":
        if (self.arrivals == "stages") != bool(self.stages):
            raise ValueError("stages: give [[workload.stages]] with arrivals = 'stages', and only then")
        if self.stages and max(self.start_rate_per_s, *(st.rate_per_s for st in self.stages)) == 0.0:
            raise ValueError("stages: every rate_per_s is 0: no deadline would ever come")
        if sum(st.duration_s for st in self.stages) > HORIZON_S - self.deadline_start_s:
            raise ValueError("stages: the stages end after the horizon; shorten them")
        return self

    @property
    def stages_end_s(self) -> float:
        """When the last stage ends (virtual s); ``deadline_start_s`` without stages."""
        return self.deadline_start_s + sum(st.duration_s for st in self.stages)

    @field_validator("renew_lead_s", "extension_lead_s", "extension_s", "resubscribe_after_s")
    @classmethod
    def _ordered(cls, v: tuple[float, float]) -> tuple[float, float]:
        if v[0] > v[1]:
            raise ValueError(f"must be [low, high] with low <= high, got {list(v)}")
        return v
