"""``[stores]``: the backend, isolation level, uniqueness and latency of the stores of
``acksim.model``."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from acksim.scenario.base import _Section


class Stores(_Section):
    """The stores of ``model``: backend, isolation level and uniqueness (design parameters).
    Every store call (and each commit) takes a latency of mean ``latency_mean_s``, drawn from
    ``latency_distribution`` ("exponential", or "constant" for exact timelines in tests).
    Isolation levels by backend: sqlite "serializable" only; memory "serializable" or
    "read_committed"; postgres (a real PostgreSQL, ``acksim.model.postgres_store``) all three."""

    backend: Literal["sqlite", "memory", "postgres"] = "sqlite"
    isolation: Literal["serializable", "repeatable_read", "read_committed"] = "serializable"
    unique_markers: bool = True
    unique_outbox_keys: bool = True
    latency_mean_s: float = Field(0.004, ge=0.0, le=60.0)
    latency_distribution: Literal["exponential", "constant"] = "exponential"

    @model_validator(mode="after")
    def _level_of_backend(self) -> "Stores":
        if self.backend == "sqlite" and self.isolation != "serializable":
            others = "'postgres' or 'memory'" if self.isolation == "read_committed" else "'postgres'"
            raise ValueError(f"isolation: sqlite offers only 'serializable'; use backend = {others} "
                             f"for {self.isolation!r}")
        if self.backend == "memory" and self.isolation == "repeatable_read":
            raise ValueError("isolation: memory offers 'serializable' and 'read_committed'; use backend = 'postgres' "
                             "for 'repeatable_read'")
        return self
