"""``[fanout]``: the shipment fan-out design (``acksim.world.fanout``): its updates,
subscribers, endpoint answers, backoff and join."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, model_validator

from acksim.scenario.base import DAY, HORIZON_S, Probability, Tupled, _Section


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
