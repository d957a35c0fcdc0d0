"""``[workload]``: the accounts, their deadlines and their lifecycle (renewals, extensions,
re-subscriptions, deletions)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from acksim.scenario.base import DAY, HORIZON_S, Probability, Span, _Section


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
