"""``[stores]``: the backend, isolation level, uniqueness and latency of the stores of
``acksim.model``."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from acksim.scenario.base import _Section


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
