"""Scenarios: the TOML file a user writes, validated into frozen settings.

A scenario names the workload (accounts, deadlines, renewals...), the scheduler, the queue,
the workers, the stores, the faults, the mail provider and the SLO thresholds. Every default
comes from the design documents (``docs/seed-facts.md``) or, where they are silent, from the
documented defaults of Amazon SQS (``docs/queue-semantics.md``); each field says which.

Bad input raises ``ScenarioError`` with one line that names the field and the allowed range;
the command line turns it into exit code 2.

One module per table of the schema: ``base`` (``ScenarioError``, the section model, the
limits of virtual time and the shared validators), ``workload``, ``scheduler``, ``queue``,
``workers``, ``stores``, ``faults``, ``mail``, ``fanout``, ``slo``, ``run``, ``plan``,
``expect``; ``root`` holds ``Scenario`` (the whole file and the checks across tables),
``loading`` reads and validates it (``load``, ``parse``, ``read_data``, ``with_overrides``)
and ``presets`` holds the queue presets. Every name is importable from ``acksim.scenario``.
"""

from acksim.scenario.base import (
    DAY,
    HORIZON_S,
    MAX_SCENARIO_BYTES,
    Probability,
    ScenarioError,
    Seconds,
    Span,
    Tupled,
    _ordered_windows,
    _Section,
    _tuples,
)
from acksim.scenario.expect import Expect
from acksim.scenario.fanout import Fanout
from acksim.scenario.faults import (
    CRASH_PHASES,
    EXTERNAL_CRASH_PHASES,
    CrashPhase,
    Deployment,
    Faults,
    Kill,
    LatencySpike,
    ScheduledCrash,
    ScheduledDuplicate,
)
from acksim.scenario.loading import (
    _describe_range,
    _model_in,
    _one_line,
    _short,
    _walk,
    load,
    parse,
    read_data,
    scenario_file,
    with_overrides,
)
from acksim.scenario.invariants import CustomInvariant, Invariants
from acksim.scenario.mail import Mail, MailOutage
from acksim.scenario.plan import AccountId, Plan, PlannedAccount, PlannedStep
from acksim.scenario.queue import Queue
from acksim.scenario.root import Scenario
from acksim.scenario.run import Run
from acksim.scenario.scheduler import Scheduler
from acksim.scenario.slo import Slo
from acksim.scenario.stores import Stores
from acksim.scenario.workers import Workers
from acksim.scenario.workload import Workload

__all__ = [
    "DAY", "HORIZON_S", "MAX_SCENARIO_BYTES", "Probability", "Seconds", "Span", "Tupled",
    "ScenarioError", "Scenario", "Workload", "Scheduler", "Queue", "Workers", "Stores",
    "CrashPhase", "CRASH_PHASES", "EXTERNAL_CRASH_PHASES", "ScheduledCrash", "Deployment",
    "ScheduledDuplicate", "Kill", "LatencySpike",
    "Faults", "MailOutage", "Mail", "Fanout", "Slo", "Run", "AccountId", "PlannedAccount",
    "PlannedStep", "Plan", "Expect", "CustomInvariant", "Invariants", "parse", "read_data", "scenario_file", "load",
    "with_overrides",
]
