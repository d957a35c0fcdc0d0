"""``[faults]``: worker crashes (by probability per phase, or scheduled), rolling deployments,
hard kills, spurious duplicates, store latency spikes, poison accounts and scheduler stalls."""

from __future__ import annotations

from typing import Annotated, Literal, get_args

from pydantic import Field, field_validator

from acksim.scenario.base import DAY, HORIZON_S, Probability, Span, Tupled, _ordered_windows, _Section
from acksim.scenario.process_faults import BrokerRestart, Partition, Pause

CrashPhase = Literal["before_call", "after_call", "after_commit", "during_ack"]
# the phases of an attempt where the fault plan may crash a worker, in the attempt's order
CRASH_PHASES: tuple[str, ...] = get_args(CrashPhase)
# the crashes that come from outside the fault plan's draws (a "crashed" record's detail)
EXTERNAL_CRASH_PHASES: tuple[str, ...] = ("deployment", "killed", "poison")


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
    "poison"); ``scheduler_stalls``: windows [start_s, end_s) in which the scheduler is frozen
    (at most ``MAX_STALLS``; overlapping ones are merged, ``merged_windows``); ``pauses``,
    ``partitions`` and ``broker_restarts``: see ``acksim.scenario.process_faults``."""

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
    scheduler_stalls: Annotated[tuple[Span, ...], Tupled, Field(max_length=MAX_STALLS)] = ()
    # process pauses, partitions, broker restarts (acksim.scenario.process_faults)
    pauses: Annotated[tuple[Pause, ...], Tupled, Field(max_length=1000)] = ()
    partitions: Annotated[tuple[Partition, ...], Tupled, Field(max_length=1000)] = ()
    broker_restarts: Annotated[tuple[BrokerRestart, ...], Tupled, Field(max_length=1000)] = ()

    @field_validator("scheduler_stalls")
    @classmethod
    def _stalls_ordered(cls, v: tuple[tuple[float, float], ...]) -> tuple[tuple[float, float], ...]:
        return merged_windows(_ordered_windows(v))


MAX_STALLS = 10_000  # scheduler stall windows in one scenario


def merged_windows(windows: tuple[tuple[float, float], ...]) -> tuple[tuple[float, float], ...]:
    """``windows`` ([start_s, end_s) pairs) sorted by start, overlapping or touching ones
    merged: the same instants frozen, as few windows as that takes (a stall is frozen time,
    so overlaps add nothing; the scheduler then looks each instant up in one pass)."""
    out: list[tuple[float, float]] = []
    for lo, hi in sorted(windows):
        if out and lo <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return tuple(out)
