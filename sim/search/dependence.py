"""Which drawn settings a finding depends on.

Besides faults and workload, a check draws a few queue and worker settings away from the base
scenario's (a shorter or longer visibility timeout, a receive limit, an execution time limit,
prefetch, acks by receipt, how a restarted broker recovers). A finding that goes away when one
of them is put back to the base scenario's value says as much about that setting as about the
design: it is printed with it, so a user can tell a design bug ("fails whatever the settings")
from a configuration limit ("fails with ``queue.visibility_timeout_s = 1.25``; holds with the
base scenario's 5").
"""

from __future__ import annotations

from typing import Callable

from acksim.scenario import Scenario

# (table, key) of the settings a check draws away from the base scenario's, tried in this order
DRAWN_SETTINGS: tuple[tuple[str, str], ...] = (
    ("workers", "execution_timeout_s"),
    ("queue", "visibility_timeout_s"),
    ("queue", "max_receive_count"),
    ("queue", "prefetch"),
    ("queue", "ack_by"),
    ("queue", "on_broker_restart"),
)
# findings not tried again: each run of a hung or dying processor costs a whole step budget
NOT_TRIED = ("processor_hung", "processor_killed_worker")


def with_setting(scenario: Scenario, table: str, key: str, value) -> Scenario:
    """``scenario`` with ``[table] key = value``, everything else as it is."""
    section = getattr(scenario, table).model_copy(update={key: value})
    return scenario.model_copy(update={table: section})


def dependence(name: str, scenario: Scenario, base: Scenario, run: Callable) -> tuple[str, ...]:
    """The drawn settings finding ``name`` of example ``scenario`` depends on: for each of
    ``DRAWN_SETTINGS`` where the example differs from ``base``, the example is run again
    (``run(scenario) -> ExampleResult``) with that one setting put back to the base's; a
    setting whose return makes ``name`` go away is listed, as
    ``"queue.visibility_timeout_s = 1.25 (none with the base scenario's 5)"``. Empty for
    the findings in ``NOT_TRIED``, and when the finding stays whatever setting goes back."""
    if name in NOT_TRIED:
        return ()
    found = []
    for table, key in DRAWN_SETTINGS:
        drawn, declared = getattr(getattr(scenario, table), key), getattr(getattr(base, table), key)
        if drawn == declared:
            continue
        if name not in run(with_setting(scenario, table, key, declared)).failures:
            found.append(f"{table}.{key} = {drawn!r} (none with the base scenario's {declared!r})")
    return tuple(found)
