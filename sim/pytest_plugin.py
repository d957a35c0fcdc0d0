"""pytest plugin: check a processor against the pipeline's invariants in one short test.

Installed with acksim (entry point ``pytest11``), it gives every test suite the fixture
``acksim_check``::

    def test_cleanup_processor_is_safe(acksim_check):
        acksim_check("mypkg.cleanup:process")                       # reference design options
        acksim_check("mypkg.cleanup:process", isolation="read_committed", backend="memory")

The number of examples follows the active Hypothesis settings profile (``ci``, ``nightly``,
...: ``hypothesis.settings().max_examples``) unless ``max_examples`` is given; fewer than
``SMALL_BUDGET`` examples is a pytest warning, since such a check says little. Counterexamples
are kept in the Hypothesis example database under ``.hypothesis/acksim`` of the pytest root, so
the next run tries them first, and written as replay files under ``.hypothesis/acksim-replays``
(``acksim run FILE``). Every call is summed up at the end of the session (examples run,
hazard windows hit, findings), pass or fail.

Loading the plugin imports nothing but pytest: acksim, Hypothesis and the simulation are
imported when a test first uses the fixture, so the plugin cannot slow down or break a suite
that does not use it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import pytest

SMALL_BUDGET = 20  # fewer examples than this: a warning naming the count
_CALLS = pytest.StashKey[list]()  # (test id, processor reference, report), one per call


class AcksimBudgetWarning(UserWarning):
    """An ``acksim_check`` ran fewer examples than ``SMALL_BUDGET``."""


@pytest.fixture
def acksim_check(request):
    """A function ``check(processor, *, scenario=None, max_examples=None, seed=0,
    require_coverage=False, max_time=None, all_findings=False, invariants=(), exhaustive=False,
    **design)``.

    ``processor``: a callable or a reference (``package.module:function`` or
    ``path/to/file.py:function``); ``scenario``: a base scenario file; ``max_examples``:
    examples per search round (default: the active Hypothesis profile's); ``require_coverage``:
    fail the test when a hazard window was never hit; ``max_time``: a wall-clock budget of the
    search in seconds (None: none); ``all_findings``: search on after the first finding;
    ``invariants``: references of invariants of your own, searched for like the built-in ones;
    ``exhaustive``: every schedule of the small scope instead of a random search;
    ``design``: any of ``ack_policy``,
    ``transaction_scope``, ``isolation``, ``backend``, ``unique_markers``,
    ``unique_outbox_keys``. Returns the ``CheckReport``; fails the test with the shrunk
    schedule, timeline and replay command when anything is found. Raises ``ScenarioError``
    for bad input (a processor of the wrong shape, or one no replay file could name: a
    lambda or a local function)."""
    from hypothesis import settings

    from acksim.search.api import check as run_search
    from acksim.search.design import DESIGN_OPTIONS

    design_keys = tuple(option.key for option in DESIGN_OPTIONS)
    from acksim.search.findings import render_findings
    from acksim.search.replay import save_findings
    from acksim.world.sandbox.processor_ref import processor_folder

    root = Path(request.config.rootpath)
    calls = request.config.stash.setdefault(_CALLS, [])

    def check(processor: Callable | str, *, scenario: str | None = None, max_examples: int | None = None,
              seed: int = 0, require_coverage: bool = False, max_time: float | None = None,
              all_findings: bool = False, invariants: tuple[str, ...] | list[str] = (), exhaustive: bool = False,
              **design):
        unknown = sorted(set(design) - set(design_keys))
        if unknown:
            raise TypeError(f"acksim_check: unknown keyword(s) {unknown}; it takes scenario, max_examples, seed, "
                            f"require_coverage, max_time, all_findings, invariants, exhaustive and the design "
                            f"options {', '.join(design_keys)}")
        budget = max_examples or settings().max_examples  # the loaded profile's
        if budget < SMALL_BUDGET and not exhaustive:
            import warnings

            warnings.warn(AcksimBudgetWarning(
                f"acksim_check ran with max_examples={budget}: fewer than {SMALL_BUDGET} examples rarely "
                "reach the hazard windows; raise it or the Hypothesis profile's max_examples"), stacklevel=2)
        report, ref, _base = run_search(processor, scenario=scenario, max_examples=budget,
                                        seed=seed, database=root / ".hypothesis" / "acksim", max_time=max_time,
                                        all_findings=all_findings, invariants=invariants, exhaustive=exhaustive,
                                        **design)
        calls.append((request.node.nodeid, ref, report))
        if report.findings:
            paths = save_findings(report, ref, root / ".hypothesis" / "acksim-replays", None,
                                  processor_path=processor_folder(ref))
            pytest.fail(f"acksim found {', '.join(report.findings)} in {ref}:\n" +
                        "\n".join(render_findings(report, paths)), pytrace=False)
        if require_coverage and report.uncovered:
            pytest.fail(f"acksim: hazard windows never hit in {report.examples} examples of {ref}: "
                        f"{', '.join(report.uncovered)} (require_coverage=True)", pytrace=False)
        return report

    return check


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """One section, ``acksim``, with a line per ``acksim_check`` call: the test, the
    processor, examples run, hazard windows hit (and those never hit), findings."""
    calls = config.stash.get(_CALLS, [])
    if not calls:
        return
    from acksim.judges.hazards import HAZARDS

    terminalreporter.section("acksim")
    for nodeid, ref, report in calls:
        hit = len(HAZARDS) - len(report.uncovered)
        terminalreporter.write_line(
            f"{nodeid}: {ref}: {report.examples} examples, hazard windows hit {hit}/{len(HAZARDS)}"
            + (f" (never: {', '.join(report.uncovered)})" if report.uncovered else "")
            + f"; findings: {', '.join(report.findings) or 'none'}")
