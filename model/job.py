"""The job on the queue and the account it acts on.

A ``CleanupJob`` is the small message the scheduler publishes at a business deadline: the
account id, the cleanup version the deadline belongs to, and the deadline itself. Nothing else
(no player export) travels in the message; the worker re-reads the account.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True, slots=True)
class CleanupJob:
    """One scheduled cleanup, as published to the queue.

    ``account_id``: the account; ``cleanup_version``: the version of the account's term this
    deadline belongs to (a newer version makes the job stale); ``deadline``: when the cleanup
    became due (timezone-aware UTC). Field names follow the design documents.
    """

    account_id: str
    cleanup_version: int
    deadline: datetime


@dataclass(frozen=True, slots=True)
class Account:
    """Committed state of one subscriber account.

    ``cleanup_version`` is bumped by a deadline extension, a term roll-over and a
    re-subscription; ``renewed`` is True when the player renewed the current term;
    ``deadline`` is when the current term's cleanup falls due (timezone-aware UTC).
    """

    account_id: str
    cleanup_version: int
    renewed: bool
    deadline: datetime


def reminder_event_key(account_id: str, cleanup_version: int) -> str:
    """The outbox idempotency key of a renewal reminder: ``renewal-reminder:<id>:<version>``."""
    return f"renewal-reminder:{account_id}:{cleanup_version}"
