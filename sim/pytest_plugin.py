"""pytest plugin: check a processor against the pipeline's invariants in one short test.

Installed with acksim (entry point ``pytest11``), it gives every test suite the fixture
``acksim_check``::

    def test_cleanup_processor_is_safe(acksim_check):
        acksim_check("mypkg.cleanup:process")                       # reference design options
        acksim_check("mypkg.cleanup:process", isolation="read_committed", backend="memory")

The number of examples follows the active Hypothesis settings profile (``ci``, ``nightly``,
...) unless ``max_examples`` is given. Counterexamples are kept in the Hypothesis example
database under ``.hypothesis/acksim`` of the pytest root, so the next run tries them first,
and written as replay files under ``.hypothesis/acksim-replays`` (``acksim run FILE``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import pytest


@pytest.fixture
def acksim_check(request):
    """A function ``check(processor, *, scenario=None, max_examples=None, seed=0, **design)``.

    ``processor``: a callable or a reference (``package.module:function`` or
    ``path/to/file.py:function``); ``scenario``: a base scenario file; ``design``: any of
    ``ack_policy``, ``transaction_scope``, ``isolation``, ``backend``, ``unique_markers``,
    ``unique_outbox_keys``. Returns the ``CheckReport``; fails the test with the shrunk
    schedule and timeline when anything is found. Raises ``ScenarioError`` for bad input
    (a processor of the wrong shape, or one no replay file could name: a lambda or a local
    function)."""
    from hypothesis import settings

    from acksim.cli.check import render_findings, save_findings
    from acksim.search.api import check as run_search

    root = Path(request.config.rootpath)

    def check(processor: Callable | str, *, scenario: str | None = None, max_examples: int | None = None,
              seed: int = 0, **design):
        report, ref, _base = run_search(processor, scenario=scenario,
                                        max_examples=max_examples or settings.default.max_examples,
                                        seed=seed, database=root / ".hypothesis" / "acksim", **design)
        if report.findings:
            paths = save_findings(report, ref, root / ".hypothesis" / "acksim-replays", None)
            pytest.fail(f"acksim found {', '.join(report.findings)} in {ref}:\n" +
                        "\n".join(render_findings(report, paths)), pytrace=False)
        return report

    return check
