"""Hazard windows: the dangerous moments a check must actually exercise.

A green check means little if no example ever crashed a worker between its commit and its
ack. Each hazard is a pure function of one run's history saying whether that window was hit;
``acksim check`` counts the examples that hit each one and warns about any never hit.
"""

from __future__ import annotations

from operator import itemgetter
from typing import Callable, Sequence

from acksim.history import Record
from acksim.judges.invariants import AccountReplay
from acksim.judges.series import attempt_span_rows
from acksim.judges.summary import lifecycle_during_attempts


def crash_after_commit_before_ack(history: Sequence[Record]) -> bool:
    """A worker crashed after committing its unit of work for a delivery and before the ack of
    that delivery landed."""
    committed: dict[str, int | None] = {}  # worker -> message of its last commit
    for r in history:
        if r.kind == "tx_committed":
            committed[r.actor] = r.message_id
        elif r.kind in ("delivered", "acked", "ack_stale", "nacked"):
            committed.pop(r.actor, None)
        elif (r.kind == "crashed" and r.detail in ("after_commit", "during_ack")
              and committed.get(r.actor) == r.message_id is not None):
            return True
    return False


def crash_between_store_calls(history: Sequence[Record]) -> bool:
    """A worker crashed before or after one of its store calls, inside its unit of work."""
    return any(r.kind == "crashed" and r.detail in ("before_call", "after_call") for r in history)


def concurrent_deliveries(history: Sequence[Record]) -> bool:
    """Two workers held the same message at the same time (a spurious duplicate, or a
    redelivery after the visibility timeout while the first worker was still at it)."""
    by_message: dict[int, list[tuple[float, float]]] = {}
    for _worker, mid, start, end, _outcome in attempt_span_rows(history):
        by_message.setdefault(mid, []).append((start, end))
    for spans in by_message.values():
        if len(spans) > 1:
            spans.sort(key=itemgetter(0))  # stable: spans that start together keep their order
            held_until = spans[0][1]
            for start, end in spans[1:]:
                if start < held_until:  # began before an earlier hold ended
                    return True
                held_until = max(held_until, end)
    return False


def lifecycle_during_attempt(history: Sequence[Record]) -> bool:
    """A renewal, extension, roll-over, re-subscription or deletion committed while a worker
    was processing that account."""
    return lifecycle_during_attempts(history) > 0


def delivery_after_version_moved(history: Sequence[Record]) -> bool:
    """A job was delivered after its account's cleanup version had moved on."""
    replay = AccountReplay()
    for r in history:
        replay.apply(r)
        if r.kind == "delivered" and (why := replay.stale(r.account_id, r.cleanup_version)) and why.startswith("version"):
            return True
    return False


def redelivery_after_dead_letter_or_retention(history: Sequence[Record]) -> bool:
    """A job was delivered again after one of its messages was dead-lettered (and redriven,
    or the job republished) or dropped by retention."""
    gone: set[tuple[str, int]] = set()
    for r in history:
        key = (r.account_id, r.cleanup_version)
        if r.kind in ("dead_lettered", "retention_expired"):
            gone.add(key)
        elif r.kind == "delivered" and key in gone:
            return True
    return False


def scheduler_pause(history: Sequence[Record]) -> bool:
    """A scheduler run was skipped for a paused window."""
    return any(r.kind == "cron_run_skipped" and r.detail == "paused" for r in history)


def paused_worker_resumed_after_lease_moved(history: Sequence[Record]) -> bool:
    """A worker paused while holding a delivery resumed after that delivery's lease had moved
    on (taken back, redelivered, acked by another): the stale-lease, fencing case."""
    return any(r.kind == "worker_resumed" and r.detail == "lease_moved" for r in history)


def ack_lost_to_partition_or_restart(history: Sequence[Record]) -> bool:
    """A worker's ack did not reach the queue because it was cut off from it (a partition, a
    broker restart), or landed on a delivery a broker restart had requeued."""
    requeued: set[int] = set()
    for r in history:
        if r.kind == "ack_failed" and r.detail.startswith("ack:"):
            return True
        if r.kind == "visibility_expired" and r.detail == "broker_restart":
            requeued.add(r.message_id)
        elif r.kind == "ack_stale" and r.message_id in requeued:
            return True
    return False
def delivery_recovered_by_sweep_after_visibility_timeout(history: Sequence[Record]) -> bool:
    """A dead consumer's delivery was handed back by a recovery sweep later than its
    visibility timeout would have (``acksim.world.queue.recovery``: detail "recovered:...:late")."""
    return any(r.kind == "visibility_expired" and r.detail.startswith("recovered:") and r.detail.endswith(":late")
               for r in history)


def tombstone_delivered(history: Sequence[Record]) -> bool:
    """An entry whose body was trimmed while pending was delivered again as an id with no
    payload (``acksim.world.queue.tombstones``)."""
    return any(r.kind == "delivered" and r.detail == "tombstone" for r in history)


HAZARDS: tuple[tuple[str, Callable[[Sequence[Record]], bool]], ...] = (
    ("crash_after_commit_before_ack", crash_after_commit_before_ack),
    ("crash_between_store_calls", crash_between_store_calls),
    ("concurrent_deliveries", concurrent_deliveries),
    ("lifecycle_during_attempt", lifecycle_during_attempt),
    ("delivery_after_version_moved", delivery_after_version_moved),
    ("redelivery_after_dead_letter_or_retention", redelivery_after_dead_letter_or_retention),
    ("scheduler_pause", scheduler_pause),
    ("paused_worker_resumed_after_lease_moved", paused_worker_resumed_after_lease_moved),
    ("ack_lost_to_partition_or_restart", ack_lost_to_partition_or_restart),
    ("sweep_recovery_after_visibility_timeout", delivery_recovered_by_sweep_after_visibility_timeout),
    ("tombstone_delivered", tombstone_delivered),
)


def hazards_hit(history: Sequence[Record]) -> dict[str, bool]:
    """Which hazard windows one history hit, by name (``HAZARDS`` order)."""
    return {name: fn(history) for name, fn in HAZARDS}
