"""The whole scenario: the top-level keys, one field per table, and the checks that span
tables."""

from __future__ import annotations

from datetime import datetime, timezone

from pydantic import Field, field_validator, model_validator

from acksim.scenario.base import HORIZON_S, _Section
from acksim.scenario.expect import Expect
from acksim.scenario.fanout import Fanout
from acksim.scenario.process_faults import inconsistency
from acksim.scenario.faults import Faults
from acksim.scenario.invariants import Invariants
from acksim.invariant_names import INVARIANT_NAMES
from acksim.scenario.mail import Mail
from acksim.scenario.plan import Plan
from acksim.scenario.queue import Queue
from acksim.scenario.run import Run
from acksim.scenario.scheduler import Scheduler
from acksim.scenario.slo import Slo
from acksim.scenario.stores import Stores
from acksim.scenario.workers import Workers
from acksim.scenario.workload import Workload


class Scenario(_Section):
    """A whole scenario. ``epoch`` is the wall-clock instant of virtual time 0 (UTC);
    ``processor`` the code under test, ``package.module:function`` or
    ``path/to/file.py:function`` (in a scenario file, a relative path is taken from the file's
    folder); ``processor_path`` a folder added to ``sys.path`` to import it from (a replay
    file records the folder its check ran in), relative to the scenario file's folder."""

    name: str = Field("scenario", min_length=1, max_length=200)
    processor: str = Field("acksim.model.processor:process", min_length=3, max_length=500)
    processor_path: str | None = Field(None, min_length=1, max_length=1000)
    seed: int = Field(0, ge=0, le=2**63 - 1)
    epoch: datetime = datetime(2026, 1, 1, tzinfo=timezone.utc)
    workload: Workload = Workload()
    scheduler: Scheduler = Scheduler()
    queue: Queue = Queue()
    workers: Workers = Workers()
    stores: Stores = Stores()
    faults: Faults = Faults()
    mail: Mail = Mail()
    fanout: Fanout = Fanout()
    slo: Slo = Slo()
    run: Run = Run()
    plan: Plan = Plan()
    invariants: Invariants = Invariants()
    expect: Expect | None = None

    @field_validator("name")
    @classmethod
    def _one_line(cls, v: str) -> str:
        if not v.isprintable():
            raise ValueError("must be one printable line: no newline or other control character")
        return v

    @model_validator(mode="after")
    def _consistent(self) -> "Scenario":
        bad_kill = next((k for k in self.faults.kills if k.worker > self.workers.count), None)
        if bad_kill is not None:
            raise ValueError(f"faults.kills: worker numbers go from 1 to workers.count ({self.workers.count}), "
                             f"got {bad_kill.worker}")
        if self.fanout != Fanout() and not self.fanout.updates:
            raise ValueError("fanout.updates: set at least 1 to run the fan-out design (its other keys are set)")
        sched = self.scheduler
        if sched.mode != "cron" and (self.faults.scheduler_stalls or sched.catchup != "none"
                                     or sched.misfire_grace_s != HORIZON_S):
            raise ValueError("scheduler.mode: scheduler_stalls, misfire_grace_s and catchup apply to "
                             "mode = 'cron' only")
        known = {a.account_id for a in self.plan.accounts}
        stranger = next((a for a in self.faults.poison_accounts if known and a not in known), None)
        if stranger is not None:
            raise ValueError(f"faults.poison_accounts: {stranger!r} is not in plan.accounts")
        if self.workers.stop_when_lease_lost and (
                self.workers.ack_policy == "before_processing" or self.queue.redelivery == "none"):
            raise ValueError("workers.stop_when_lease_lost: needs a lease to check; not with "
                             "ack_policy = 'before_processing' or queue.redelivery = 'none'")
        if self.expect is not None:  # a replay file names the invariants it broke: the built-in ones or its own
            allowed = INVARIANT_NAMES + self.invariants.names
            unknown = [name for name in self.expect.violated if name not in allowed]
            if unknown:
                raise ValueError(f"expect.violated: no invariant {unknown[0]!r}; allowed: {', '.join(allowed)}")
        problem = inconsistency(self)  # pauses, partitions, restarts, their mechanisms
        if problem:
            raise ValueError(problem)
        return self

    @field_validator("epoch")
    @classmethod
    def _utc(cls, v: datetime) -> datetime:
        v = v.replace(tzinfo=timezone.utc) if v.tzinfo is None else v.astimezone(timezone.utc)
        if not 1970 <= v.year <= 9000:
            raise ValueError(f"must be a UTC date-time between 1970 and 9000, got {v.isoformat()}")
        return v
