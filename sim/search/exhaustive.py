"""Exhaustive small-scope exploration: every schedule within a stated scope, on the real code.

Where the random search samples, this enumerates, like a model checker at small scope: one
account whose deadline is at ``DEADLINE_S``, store calls exactly ``LATENCY_S`` apart, and at
most ``max_faults`` of these, at most one of each kind:

* a lifecycle step (``renew``, ``extend``, ``delete``) before the deadline, between any two
  store calls of the first attempt (and after its commit), or after its ack;
* a crash of delivery 1 or 2 at every phase: before or after each store call, after the
  commit, during the ack;
* a spurious copy of delivery 1 running beside it, started 0, 1, ... store calls late (its
  worker paused for that long before its first call), so the two attempts interleave at each
  offset.

How many store calls an attempt makes is read off a run with no fault first, so the places
follow the processor under check. Schedules run in order of size (no fault, then one, then
two, ...), so the first violation found is a smallest one, and the same scope gives the same
schedules, in the same order, on every run and machine.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass
from typing import Callable, Iterator

from acksim.scenario import CRASH_PHASES, Scenario, parse
from acksim.search.check import CheckReport, ExampleResult, FirstFinding

DEADLINE_S = 10.0
LATENCY_S = 0.001
LIFECYCLE = ("renew", "extend", "delete")
EXTEND_S = 60.0
CALL_PHASES = ("before_call", "after_call")
# the hazard windows a schedule of the scope can hit (the others need pauses, partitions,
# broker restarts, sweeps, tombstones, a dead-letter queue or a scheduler pause)
HAZARDS_IN_SCOPE = ("crash_after_commit_before_ack", "crash_between_store_calls", "concurrent_deliveries",
                    "lifecycle_during_attempt", "delivery_after_version_moved")


@dataclass(frozen=True)
class Scope:
    """What ``--exhaustive`` enumerates: at most ``max_faults`` (1 to 3) faults a schedule,
    drawn from ``lifecycle`` (step kinds), crashes (``crashes``) and a concurrent copy
    (``copies``)."""

    max_faults: int = 3
    lifecycle: tuple[str, ...] = LIFECYCLE
    crashes: bool = True
    copies: bool = True

    def __post_init__(self) -> None:
        if not 1 <= self.max_faults <= 3:
            raise ValueError(f"max_faults: must be 1 .. 3, got {self.max_faults}")


def one_account(base: Scenario) -> dict:
    """``base`` as a dict with the scope's world: one account due at ``DEADLINE_S``, store calls
    and commits ``LATENCY_S`` apart (constant), two workers, per-deadline publishing, no drawn
    fault."""
    data = base.model_dump(exclude_none=True)
    data.pop("expect", None)
    data["plan"] = {"accounts": [{"account_id": "a1", "deadline_s": DEADLINE_S}], "steps": []}
    data["stores"].update(latency_mean_s=LATENCY_S, latency_distribution="constant")
    data["workers"]["count"] = 2
    data["scheduler"]["mode"] = "per_deadline"
    data["seed"] = 0
    return data


_TX_ENDS = frozenset({"tx_committed", "tx_rolled_back", "processor_error"})
_DELIVERY_ENDS = frozenset({"acked", "nacked"})


def store_calls(result: ExampleResult) -> int:
    """The store calls of the first delivery's attempt in a run with no fault: the time from
    that delivery to its unit of work's end (its commit, rollback or error; under autocommit,
    its ack or nack) over ``LATENCY_S``, less the commit's own; at least 1."""
    history = result.history
    first = next(r for r in history if r.kind == "delivered")
    mine = [r for r in history if r.message_id == first.message_id and r.receive_count == first.receive_count]
    ends = [r.time for r in mine if r.kind in _TX_ENDS] or [r.time for r in mine if r.kind in _DELIVERY_ENDS]
    return max(round((max(ends, default=first.time) - first.time) / LATENCY_S) - 1, 1)


def elements(calls: int, scope: Scope) -> tuple[list, list, list]:
    """The scope's faults for an attempt of ``calls`` store calls, by kind: lifecycle steps,
    crashes, copies; each a (kind, *fields) tuple, in a fixed order."""
    places = [DEADLINE_S - 1.0, *(DEADLINE_S + (k + 0.5) * LATENCY_S for k in range(calls + 1)), DEADLINE_S + 1.0]
    steps = [("step", kind, round(at, 6)) for kind in scope.lifecycle for at in places]
    crashes = [("crash", d, phase, call) for d in (1, 2) for phase in CRASH_PHASES
               for call in (range(calls) if phase in CALL_PHASES else (0,))] if scope.crashes else []
    copies = [("copy", late) for late in range(calls + 1)] if scope.copies else []
    return steps, crashes, copies


def schedules(calls: int, scope: Scope) -> Iterator[tuple]:
    """Every schedule of the scope, smallest first: tuples of at most ``scope.max_faults``
    elements (``elements``), at most one of each kind."""
    kinds = [k for k in elements(calls, scope) if k]
    for size in range(scope.max_faults + 1):
        for chosen in itertools.combinations(kinds, size):
            yield from itertools.product(*chosen)


def count(calls: int, scope: Scope) -> int:
    """How many schedules ``schedules`` gives."""
    kinds = [len(k) for k in elements(calls, scope) if k]
    return sum(sum(_prod(c) for c in itertools.combinations(kinds, size)) for size in range(scope.max_faults + 1))


def _prod(values) -> int:
    out = 1
    for v in values:
        out *= v
    return out


def scenario_of(world: dict, schedule: tuple) -> Scenario:
    """The scenario of one schedule on the scope's world (``one_account``)."""
    data = {**world, "plan": {**world["plan"], "steps": []}, "faults": dict(world["faults"])}
    data["faults"].update(crashes=[], duplicates=[], pauses=[])
    for element in schedule:
        if element[0] == "step":
            _kind, step, at = element
            data["plan"]["steps"].append({"at_s": at, "kind": step, "account_id": "a1",
                                          "amount_s": EXTEND_S if step == "extend" else 0.0})
        elif element[0] == "crash":
            _kind, delivery, phase, call = element
            data["faults"]["crashes"].append({"delivery": delivery, "phase": phase, "call": call})
        else:
            _kind, late = element
            data["faults"]["duplicates"].append({"delivery": 1})
            if late:  # the copy is delivery 2: its worker freezes before its first call
                data["faults"]["pauses"].append({"delivery": 2, "call": 0, "duration_s": late * LATENCY_S})
    return parse(data, "exhaustive")


def describe(calls: int, scope: Scope) -> str:
    """The scope in one line, for people."""
    steps, crashes, copies = elements(calls, scope)
    parts = []
    if steps:
        parts.append(f"a lifecycle step ({', '.join(scope.lifecycle)}) at {len(steps) // len(scope.lifecycle)} places")
    if crashes:
        parts.append(f"a crash of delivery 1 or 2 at {len(crashes) // 2} places")
    if copies:
        parts.append(f"a concurrent copy of delivery 1 started 0 .. {calls} store calls late")
    return (f"1 account due at {DEADLINE_S:g} s, store calls {LATENCY_S * 1000:g} ms apart ({calls} an attempt); "
            f"at most {scope.max_faults} of: " + "; ".join(parts))


def explore(run: Callable[[Scenario], ExampleResult], base: Scenario, scope: Scope, *, all_findings: bool = False,
            max_time_s: float | None = None, progress: Callable[[int], None] | None = None) -> tuple[CheckReport, str, int]:
    """Run every schedule of ``scope`` around ``base`` with ``run`` (a check's ``run_example``
    for one scenario), smallest first, until the first finding (every kind with
    ``all_findings``) or ``max_time_s`` wall seconds. Returns the report (``findings``: each
    kind's first schedule, already minimal in the order of enumeration), the scope's
    description and its schedule count."""
    world = one_account(base)
    started = time.monotonic()
    baseline = run(scenario_of(world, ()))
    calls = store_calls(baseline)
    report = CheckReport(scope=HAZARDS_IN_SCOPE)
    for schedule in schedules(calls, scope):
        if max_time_s is not None and time.monotonic() - started >= max_time_s:
            report.out_of_time = True
            break
        scenario = scenario_of(world, schedule)
        result = baseline if not schedule else run(scenario)
        report.examples += 1
        report.coverage.update(name for name, hit in result.hazards.items() if hit)
        report.phases.update(r.detail for r in result.history if r.kind == "crashed" and r.detail in CRASH_PHASES)
        if progress:
            progress(report.examples)
        for name in result.failures:
            if name not in report.findings:
                report.findings[name] = (scenario, result)
                if report.first is None:
                    report.first = FirstFinding(name, report.examples, time.monotonic() - started)
        if report.findings and not all_findings:
            break
    report.seconds = time.monotonic() - started
    return report, describe(calls, scope), count(calls, scope)


def run_exhaustive(processor, base: Scenario, scope: Scope = Scope(), *, all_findings: bool = False,
                   max_time_s: float | None = None,
                   progress: Callable[[int], None] | None = None) -> tuple[CheckReport, str, int]:
    """``explore`` with every schedule run in one supervised child process, as a random
    search's examples are (``acksim.search.check.run_example``). ``processor``: a reference
    or a callable. Raises what the harness raises (never the processor's errors)."""
    import tempfile

    from acksim.judges.custom import custom_invariants
    from acksim.search.check import example_target, run_example
    from acksim.world.sandbox.contain import Child

    custom_invariants(base)  # the user's own invariants load first (bad input: ScenarioError)
    with tempfile.TemporaryDirectory(prefix="acksim-check-") as tmp, Child(example_target(processor, tmp)) as child:
        return explore(lambda scenario: run_example(scenario, processor, child), base, scope,
                       all_findings=all_findings, max_time_s=max_time_s, progress=progress)
