"""The invariants' names: the fixed vocabulary a verdict is given in.

summary.json keys its ``invariants`` section by them, a replay file's ``[expect] violated``
lists them (checked when the scenario is read, ``acksim.scenario.expect``), and the judges
pair each with its checker, in this order: the cleanup design's in
``acksim.judges.invariants.INVARIANTS``, the shipment fan-out design's in
``acksim.judges.fanout.FANOUT_INVARIANTS``.
"""

from __future__ import annotations

CLEANUP_INVARIANT_NAMES: tuple[str, ...] = (
    "no_cleanup_after_renewal",
    "at_most_once_effect",
    "effect_with_outbox",
    "ack_after_durable",
    "no_lost_work",
)
FANOUT_INVARIANT_NAMES: tuple[str, ...] = (
    "exactly_once_in_effect",
    "complete_only_when_all_recorded",
    "every_update_completes",
)
# every invariant a run can report: the cleanup design's, then the fan-out design's
INVARIANT_NAMES: tuple[str, ...] = CLEANUP_INVARIANT_NAMES + FANOUT_INVARIANT_NAMES
