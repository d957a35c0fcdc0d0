"""``acksim.check``: the search of ``acksim check`` as one function call, for scripts,
notebooks and the pytest fixture."""

from __future__ import annotations

from pathlib import Path
from typing import Callable


def check(processor: Callable | str, *, scenario: str | Path | None = None, max_examples: int = 40,
          seed: int = 0, database: Path | None = None, contained: bool = True, all_findings: bool = False,
          max_time: float | None = None, invariants: tuple[str, ...] | list[str] = (), exhaustive: bool = False,
          **design):
    """Search fault schedules around a base scenario for findings of ``processor``.

    ``processor``: a callable taking ``(job, accounts, cleanup_store, outbox)`` or a reference
    (``package.module:function`` or ``path/to/file.py:function``); ``scenario``: a base
    scenario file (default: acksim's small base); ``max_examples``: examples per search round;
    ``seed``: Hypothesis's generation seed; ``database``: an example-database folder (None:
    none); ``contained``: run the examples in a supervised child process (the default;
    False runs them in this process, where a processor's ``os._exit`` or blocking call ends
    or hangs the caller too); ``all_findings``: search on after the first finding for every
    kind (default: stop at the first, shrunk); ``max_time``: a wall-clock budget of the search
    in seconds (None: none; ``report.out_of_time`` says it ended the search); ``invariants``:
    references of invariants of your own (``docs/history.md``), searched for like the
    built-in ones; ``exhaustive``: every schedule of the small scope (``acksim.search.exhaustive``)
    instead of a random search (``max_examples`` and ``seed`` then unused); ``design``: any of ``ack_policy``, ``transaction_scope``, ``isolation``, ``backend``,
    ``unique_markers``, ``unique_outbox_keys``. Returns ``(report, ref, base)``: the
    ``CheckReport`` (``findings``, ``coverage``, ``examples``), the processor's reference as a
    replay file names it, and the base scenario. Raises ``ScenarioError`` for bad input (an
    unknown design option, a processor of the wrong shape or one no replay file could name) and
    ``ValueError`` for a ``max_time`` that is not a positive number of seconds.
    """
    from acksim.scenario import load, with_overrides
    from acksim.search.check import base_scenario, run_check
    from acksim.search.design import describe, design_of
    from acksim.world.sandbox.processor_ref import canonical_ref, check_processor, reference_of
    from acksim.world.sandbox.supervised import check_loads

    if max_time is not None and not (isinstance(max_time, (int, float)) and max_time > 0):
        raise ValueError(f"max_time: must be a positive number of seconds or None, got {max_time!r}")
    sections = design_of(design)  # raises ScenarioError for an unknown option
    if isinstance(processor, str):
        ref, fn = canonical_ref(processor), None
        check_loads(processor)  # imported in a supervised child: its import is the code under test's
    else:
        check_processor(processor, repr(processor))
        ref, fn = reference_of(processor), processor
    base = with_overrides(base_scenario(load(scenario) if scenario else None, sections), invariants=invariants)
    # a reference is run by reference: every worker start of every example gets a fresh copy
    if exhaustive:
        from acksim.search.exhaustive import run_exhaustive

        report, _scope, _total = run_exhaustive(ref if isinstance(processor, str) else fn, base,
                                                all_findings=all_findings, max_time_s=max_time)
        return report, ref, base
    report = run_check(ref if isinstance(processor, str) else fn, base, max_examples=max_examples, seed=seed,
                       database=database, key=f"{ref}|{describe(base)}", contained=contained,
                       all_findings=all_findings, max_time_s=max_time)
    return report, ref, base
