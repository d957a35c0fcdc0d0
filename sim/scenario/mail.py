"""``[mail]``: the outbox relay and the mail provider it sends reminders to, with its errors
and outages."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from acksim.scenario.base import HORIZON_S, Probability, Tupled, _Section


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
