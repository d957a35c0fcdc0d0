"""``[run]``: when the world stops, and the guards against runs that never drain or hang."""

from __future__ import annotations

from pydantic import Field

from acksim.scenario.base import DAY, HORIZON_S, _Section


class Run(_Section):
    """When the world stops: once all planned events have happened and the queue, the
    workers, the scheduler and the outbox are idle (checked every ``idle_check_s``), or at
    ``max_time_s``, or once the history holds ``max_records`` records (a crash loop with no
    dead-letter queue never drains; the summary's ``stopped_early`` count says so), or once
    it has spent ``max_events`` SimPy events or ``max_wall_s`` wall seconds (a lease
    heartbeat every nanosecond writes no record but never lets time move on), or once
    ``max_redeliveries_without_progress`` redeliveries happened with no ack, dead-letter or
    committed effect since (a crash loop on a tiny visibility timeout that never drains;
    0: no such guard; ``acksim.world.budget.LoopGuard``); a run that ends
    at ``max_time_s`` before the pipeline drained is stopped early too. Before any set-up, a
    scenario whose estimated cost (``acksim.world.cost``) is over ``max_events`` is refused
    with a one-line error naming the field that makes it expensive; raise ``max_events`` to
    run it anyway.
    ``step_budget_s``: the wall-clock time the processor may run between two store calls
    before the run ends with it reported as hung (time spent waiting for a CPU not counted,
    so a loaded machine does not make a hung processor); ``stop_on_processor_error``: end the run at
    the processor's first error of its own (``acksim check`` sets it; a replay keeps it)."""

    max_time_s: float = Field(30 * DAY, gt=0.0, le=HORIZON_S)
    idle_check_s: float = Field(10.0, ge=1.0, le=DAY)
    max_records: int = Field(3_000_000, ge=1000, le=100_000_000)
    step_budget_s: float = Field(10.0, ge=0.1, le=3600.0)
    max_events: int = Field(50_000_000, ge=10_000, le=10_000_000_000)
    max_wall_s: float = Field(3600.0, ge=1.0, le=7 * DAY)
    max_redeliveries_without_progress: int = Field(100_000, ge=0, le=1_000_000_000)
    stop_on_processor_error: bool = False
