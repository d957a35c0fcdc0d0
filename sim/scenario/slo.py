"""``[slo]``: thresholds on the SLO figures (``acksim.judges.slo``)."""

from __future__ import annotations

from pydantic import Field

from acksim.scenario.base import _Section


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
    dead_lettered_share: float | None = Field(None, ge=0.0, le=1.0)  # default 0.5: acksim.judges.slo
    retries_p99: float | None = Field(None, ge=0.0)

    def thresholds(self) -> dict[str, float]:
        """The thresholds that are set, by figure name."""
        return {k: v for k, v in self.model_dump().items() if v is not None}
