"""``acksim check``: search fault schedules for an invariant violation of a candidate design.

Like a fuzzer with a theory of the domain: Hypothesis draws small worlds (``acksim.search.strategies``),
each runs the processor under check to the end, and the five invariants judge the history. An
exception of the processor's own, a processor that swallows its crash, and one that hangs are
findings too. Hypothesis shrinks a failing world to a minimal one, which is printed as a
timeline and written as a replay file that ``acksim run`` reproduces record for record.
"""

from __future__ import annotations

import gc
import tempfile
import time
from contextlib import contextmanager, nullcontext
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from hypothesis import HealthCheck, Phase, given, seed as hypothesis_seed, settings
from hypothesis.database import DirectoryBasedExampleDatabase, ReadOnlyDatabase

from acksim.judges.hazards import HAZARDS, hazards_hit
from acksim.history import Record, pack, unpack
from acksim.outcome import pack_final, unpack_final
from acksim.world.core import World, stores_server
from acksim.world.sandbox.interleave import ProcessorHung
from acksim.judges.custom import custom_invariants
from acksim.judges.invariants import INVARIANTS, check_all
from acksim.scenario import CRASH_PHASES, Scenario, parse
from acksim.search.constants import pinned_constants
from acksim.search.dependence import dependence
from acksim.search.design import merge_design
from acksim.search.findings import FINDINGS
from acksim.search.strategies import check_scenarios
from acksim.world.sandbox.contain import Child, Died, Reply
from acksim.world.sandbox.supervised import killed_run

# the world every example starts from unless the user names a scenario: small and fast
CHECK_BASE: dict = {
    "name": "check",
    # short terms keep a counterexample's run compact: the next term's deadline comes minutes later
    "workload": {"term_s": 120.0, "rollover_delay_s": 5.0, "resubscribe_after_s": [30.0, 120.0]},
    "queue": {"visibility_timeout_s": 5.0, "max_receive_count": 5, "nack_backoff_base_s": 0.5,
              "nack_backoff_max_s": 5.0},
    "workers": {"count": 3, "restart_delay_s": 1.0, "conflict_backoff_s": 0.001},
    "stores": {"backend": "memory", "latency_mean_s": 0.001},
    "scheduler": {"publish_latency_s": 0.0, "cron_interval_s": 60.0, "cron_jitter_s": 1.0},
    "mail": {"poll_interval_s": 1.0, "latency_s": 0.01},
    # every planned event is over within minutes; a design that never drains is cut short
    "run": {"idle_check_s": 1.0, "max_time_s": 3_600.0, "max_records": 50_000, "step_budget_s": 5.0,
            "stop_on_processor_error": True},
}


def base_scenario(scenario: Scenario | None = None, design: dict | None = None) -> Scenario:
    """The base of a check: ``scenario`` (or ``CHECK_BASE``) with the ``design`` options
    (section -> {key: value}) applied. Raises ``ScenarioError`` for invalid options."""
    data = merge_design(scenario.model_dump(exclude_none=True) if scenario is not None else CHECK_BASE,
                        design or {})
    data.pop("expect", None)
    return parse(data, "design")


@dataclass
class ExampleResult:
    """One example's outcome: ``failures`` (names from ``FINDINGS``, first broken first),
    the invariant verdicts, the hazard windows hit, the history and processor error texts."""

    failures: tuple[str, ...]
    verdicts: dict
    hazards: dict[str, bool]
    history: tuple[Record, ...]
    errors: list[str]


def run_example(scenario: Scenario, processor: Callable | str, child: Child | None = None) -> ExampleResult:
    """Run one world to the end and judge it. ``processor``: a reference (each worker start
    of the example gets a fresh copy of the code, ``acksim.world.sandbox.code``) or a callable run as
    given. The world runs in ``child``, a supervised child process (``acksim.world.sandbox.contain``;
    a ``Child`` of ``example_target(processor, folder)``), or in a fresh one when None; the
    judges run here, on the history it sends back. A child that dies is the finding
    ``processor_killed_worker``, one killed for hanging ``processor_hung``, judged on an
    empty history. Raises nothing the processor raises or does (``KeyboardInterrupt`` apart:
    a Ctrl-C still stops a check)."""
    if child is None:
        with tempfile.TemporaryDirectory(prefix="acksim-check-") as tmp, \
                Child(example_target(processor, tmp), keep=False) as one:
            return run_example(scenario, processor, one)
    try:
        rows, packed_final, errors, hung = child.call(scenario).value
        history, final = unpack(rows), unpack_final(packed_final)
    except Died as death:
        history, final, errors, hung = (), killed_run(death.finding, death.text).outcome.final, [death.text], ""
        failures = [death.finding]
    else:
        failures = ["processor_hung"] if hung else ["processor_error"] if errors else []
    verdicts = check_all(history, final, INVARIANTS + custom_invariants(scenario))
    # a run cut short at the processor's own error (or hang, or death) is judged on that alone
    if not failures:
        failures = [name for name, v in verdicts.items() if not v["holds"]]
    return ExampleResult(tuple(failures), verdicts, hazards_hit(history), history, errors)


def example_target(processor: Callable | str, folder: str):
    """What a check's supervised child runs for each example: the world of a scenario with
    ``processor``, its SQLite stores in a folder inside ``folder`` (made and removed by the
    parent; none on the memory stores); returns (history, final state, as ``pack`` and
    ``pack_final`` give them, the processor's error texts, the hang note or "")."""

    def target(scenario: Scenario, _emit):
        tempfile.tempdir = folder  # whatever becomes of this process, the parent removes it
        sqlite = scenario.stores.backend == "sqlite"
        with tempfile.TemporaryDirectory(prefix="example-") if sqlite else nullcontext() as tmp:
            world = World(scenario, processor, db_path=Path(tmp) / "stores.db" if sqlite else None)
            hung = ""
            try:
                outcome = world.run()
                history, final = outcome.history, outcome.final
            except ProcessorHung as exc:
                hung = str(exc) or "hung"
                history, final = tuple(world.history.records), world.final_state()
            finally:
                world.close()
        return pack(history), pack_final(final), [text for *_rest, text in world.processor_errors], hung

    return target


class Finding(Exception):
    """Raised inside the Hypothesis test for a failing example; one subclass per finding
    name, so Hypothesis shrinks each kind of failure separately."""


_FINDING_TYPES = {name: type(f"Found_{name}", (Finding,), {}) for name in FINDINGS}


def finding_type(name: str) -> type[Finding]:
    """The ``Finding`` subclass of kind ``name`` (a built-in one, or made on first use for a
    custom invariant's name)."""
    if name not in _FINDING_TYPES:
        _FINDING_TYPES[name] = type(f"Found_{name}", (Finding,), {})
    return _FINDING_TYPES[name]


class OutOfTime(BaseException):
    """Raised inside a search's Hypothesis test when the check's wall-clock budget is spent.
    A ``BaseException``, so Hypothesis neither shrinks it nor counts it as a failure: it
    ends the search at once, keeping what the report holds."""


@dataclass(frozen=True)
class FirstFinding:
    """When a search first saw a finding: its ``kind`` (a name of ``FINDINGS``), the
    ``example`` that showed it (1-based, counted in the search that found it) and the wall
    ``seconds`` from the start of that search (shrinking and confirmation come after)."""

    kind: str
    example: int
    seconds: float


@dataclass
class CheckReport:
    """What a check did: ``examples`` run, wall ``seconds``, how many examples hit each
    hazard window, crashes per phase, the shrunk ``findings`` by name (scenario, result),
    the ``first`` finding's example and time (``FirstFinding``, or None), ``out_of_time``:
    True when the wall-clock budget (``max_time_s``) ended the search before its examples,
    per finding the drawn settings it ``depends`` on (``acksim.search.dependence``), and
    ``scope``: the hazard windows the search could reach (None: every one; an exhaustive
    scope reaches fewer, ``acksim.search.exhaustive.HAZARDS_IN_SCOPE``), whose findings are
    its smallest schedules rather than shrunk ones."""

    examples: int = 0
    seconds: float = 0.0
    coverage: Counter = field(default_factory=Counter)
    phases: Counter = field(default_factory=Counter)
    findings: dict[str, tuple[Scenario, ExampleResult]] = field(default_factory=dict)
    first: FirstFinding | None = None
    out_of_time: bool = False
    depends: dict[str, tuple[str, ...]] = field(default_factory=dict)
    scope: tuple[str, ...] | None = None

    @property
    def uncovered(self) -> list[str]:
        """Hazard windows within reach (``scope``) that no example hit."""
        return [name for name, _ in HAZARDS if not self.coverage[name] and (self.scope is None or name in self.scope)]


def run_check(processor: Callable | str, base: Scenario, *, max_examples: int = 500, seed: int = 0,
              database: Path | None = None, key: str = "",
              progress: Callable[[int], None] | None = None,
              stop_at: frozenset[str] | None = None, contained: bool = True,
              all_findings: bool = False, max_time_s: float | None = None) -> CheckReport:
    """Search up to ``max_examples`` examples around ``base`` for a finding.
    ``processor``: a reference (fresh copies of the code per worker start) or a callable.

    A search round tries up to ``max_examples`` generated examples, stops at its first
    failure and shrinks it. By default the check ends there: the verdict is known. With
    ``all_findings`` the next round searches again, counting the kinds already found as
    passes, until a round finds nothing new (or a processor hung: each of its examples
    costs the whole wall-clock budget); with ``stop_at`` (kinds of finding) the rounds go on
    until one of those kinds is found. ``max_time_s`` (wall seconds, None: no limit) bounds
    the search and its shrinking: an example is not started after it, and the report says
    ``out_of_time``; a finding seen before then is kept, shrunk as far as time allowed.
    ``seed`` fixes Hypothesis's generation (the same seed, processor and base give the same
    search); ``database`` is the example database folder and ``key`` names the processor and
    design in it, so a counterexample found before is tried first (None: no database). Returns the report; findings are not
    raised. With ``stop_at`` the search ends as soon as one of those kinds is found. Raises
    whatever the harness itself raises (never the processor's errors). Every example runs in
    one long-lived supervised child process (a fresh one after a death, a kill or threads
    left behind: ``acksim.world.sandbox.contain``); ``contained=False`` runs them in this process
    instead, where a processor's ``os._exit``, fatal signal or blocking call ends or hangs
    the check itself. A PostgreSQL the stores need (``stores.backend = "postgres"``) is
    started here for the whole search and stopped after; each example has a schema of its own.
    """
    custom_invariants(base)  # the user's own invariants load before the search (bad input: ScenarioError)
    report = CheckReport()
    started = time.monotonic()
    deadline = None if max_time_s is None else started + max_time_s
    round_no = 0
    with stores_server(base), tempfile.TemporaryDirectory(prefix="acksim-check-") as tmp, \
            Child(example_target(processor, tmp)) as child, _search_gc():
        run = (lambda scenario: run_example(scenario, processor, child)) if contained else \
            (lambda scenario: _run_here(scenario, processor, tmp))
        while True:
            before = set(report.findings)
            _search(report, run, base, max_examples, seed + round_no, database, key, round_no, progress,
                    started, deadline)
            round_no += 1
            found = set(report.findings)
            if found == before or report.out_of_time or "processor_hung" in found:
                break  # nothing new, no time left, or a processor too costly to run on
            if (stop_at & found) if stop_at is not None else (found and not all_findings):
                break  # what was asked for: one of those kinds, or (by default) the first finding
        report.depends = {name: dependence(name, scenario, base, run)
                          for name, (scenario, _result) in report.findings.items()}
    report.seconds = time.monotonic() - started
    return report


# the young generation's threshold while a search runs (Python's default is 700); the older
# generations' are its defaults (10, 10). A search allocates a few thousand objects an example
# (Hypothesis's choices and spans, the history's records): at 700, about a collection an
# example, most of them traversing what an example left in generation 1
SEARCH_GC_THRESHOLD = (10_000, 10, 10)


@contextmanager
def _search_gc():
    """The garbage collector's policy of a search in this process: what is alive when it starts
    (modules, the base scenario) frozen out of every collection (``gc.freeze``, unless
    something froze objects already), and ``SEARCH_GC_THRESHOLD``; both put back after. A
    supervised child forked meanwhile runs with the thresholds of old (``Child``) and shares the
    frozen objects copy-on-write without its collections touching them."""
    old = gc.get_threshold()
    freeze = gc.get_freeze_count() == 0
    if freeze:
        gc.collect()
        gc.freeze()
    gc.set_threshold(*SEARCH_GC_THRESHOLD)
    try:
        yield
    finally:
        gc.set_threshold(*old)
        if freeze:
            gc.unfreeze()


class _Here:
    """A stand-in for ``Child`` that runs the target in this process (``contained=False``)."""

    def __init__(self, target) -> None:
        self.target = target

    def call(self, args, _on_message=None):
        return Reply(self.target(args, None))


def _run_here(scenario: Scenario, processor, folder: str) -> ExampleResult:
    saved = tempfile.tempdir
    try:
        return run_example(scenario, processor, _Here(example_target(processor, folder)))
    finally:
        tempfile.tempdir = saved


def _search(report: CheckReport, run, base, budget, seed, database, key, round_no, progress,
            started: float, deadline: float | None) -> None:
    ignore = frozenset(report.findings)

    def body(scenario: Scenario) -> None:
        if deadline is not None and time.monotonic() >= deadline:
            raise OutOfTime
        result = run(scenario)
        report.examples += 1
        report.coverage.update(name for name, hit in result.hazards.items() if hit)
        report.phases.update(r.detail for r in result.history if r.kind == "crashed" and r.detail in CRASH_PHASES)
        if progress:
            progress(report.examples)
        new = [name for name in result.failures if name not in ignore]
        if new:
            if report.first is None:
                report.first = FirstFinding(new[0], report.examples, time.monotonic() - started)
            report.findings[new[0]] = (scenario, result)  # the last failing run of a kind is the shrunk one
            raise finding_type(new[0])(", ".join(result.failures))

    db = DirectoryBasedExampleDatabase(str(database)) if database else None
    if db is not None and round_no:
        db = ReadOnlyDatabase(db)  # later rounds count found kinds as passes: they must not delete them
    # one database key per processor and design, so counterexamples are replayed for their own design
    body._hypothesis_internal_add_digest = key.encode()
    try:
        search_test(body, base, budget, seed, db)()
    except OutOfTime:
        report.out_of_time = True
    except (Finding, BaseExceptionGroup) as exc:
        if isinstance(exc, BaseExceptionGroup) and exc.subgroup(OutOfTime) is not None:
            report.out_of_time = True
            exc = exc.subgroup(lambda e: not isinstance(e, OutOfTime))
        if exc is not None:
            _only_findings(exc)


def search_test(body: Callable[[Scenario], None], base: Scenario, budget: int, seed: int, database=None):
    """The Hypothesis test of one search round: ``body`` called with up to ``budget`` drawn
    ``Scenario`` objects around ``base`` (``acksim.search.strategies.check_scenarios``),
    seeded ``seed``, with ``database`` (a Hypothesis example database, or None) and every
    phase but "explain" (its extra runs would double the cost of each finding). Returns the
    zero-argument test; calling it raises what ``body`` raised for the shrunk example. It
    runs with Hypothesis's local constants pinned (``acksim.search.constants``), so the
    examples depend on the seed and base, not on which modules are loaded.
    ``benchmarks/check_speed.py`` runs it with an empty body: Hypothesis's own cost."""
    # every setting that changes which examples run is given here, so a test suite's own
    # Hypothesis profile (the pytest fixture runs under it) does not change the search
    test = settings(max_examples=budget, deadline=None, database=database, suppress_health_check=list(HealthCheck),
                    report_multiple_bugs=True, derandomize=False,
                    phases=(Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink))(
        hypothesis_seed(seed)(given(check_scenarios(base))(body)))

    def pinned() -> None:
        with pinned_constants():
            test()

    return pinned


def _only_findings(exc: BaseException) -> None:
    """Re-raise anything that is not a finding (a bug of the harness must not hide)."""
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            _only_findings(inner)
    elif not isinstance(exc, Finding):
        raise exc
