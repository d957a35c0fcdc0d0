"""One line at the end of the run when live tests did not run: what was missing, how to install."""

from __future__ import annotations

import pytest


@pytest.fixture
def need():
    """``need(broker)``: skip (or, with ACKSIM_REQUIRE_LIVE=1, fail) when ``broker`` cannot run here."""
    from helpers.live_brokers import need as _need

    return _need


def pytest_terminal_summary(terminalreporter):
    skipped = [r for r in terminalreporter.stats.get("skipped", []) if "live test did not run" in str(r.longrepr)]
    if skipped:
        reasons = sorted({str(r.longrepr[2]).removeprefix("Skipped: ") for r in skipped
                          if isinstance(r.longrepr, tuple)})
        terminalreporter.write_line(f"acksim: {len(skipped)} live test(s) did not run: " + " | ".join(reasons)
                                    + " (or, as root: make brokers)")
