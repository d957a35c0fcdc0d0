"""Candidate designs beside the reference: what a reviewer would propose, and what breaks.

Each ``Candidate`` is a processor plus the design options it runs under (the scenario tables
they change) and the invariant it is expected to break (None for a design that should hold).
``acksim check --processor acksim.model.candidates:no_renewed_check`` searches one of them; the test
suite asserts every verdict.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from acksim.model.job import CleanupJob, reminder_event_key
from acksim.model.processor import process


def _clean_up_once(job: CleanupJob, cleanup_store, outbox) -> None:
    """The reference's last step: unless already applied, the cleanup marker and its outbox
    event (the same store calls, in the same order)."""
    if cleanup_store.was_applied(job.account_id, job.cleanup_version):
        return
    cleanup_store.apply_once(account_id=job.account_id, cleanup_version=job.cleanup_version)
    outbox.add_once(event_key=reminder_event_key(job.account_id, job.cleanup_version),
                    account_id=job.account_id, cleanup_version=job.cleanup_version)


def no_version_check(job: CleanupJob, accounts, cleanup_store, outbox) -> None:
    """The reference without the cleanup-version comparison: an old deadline's job cleans up
    an account whose deadline was extended (or whose next term began)."""
    account = accounts.get(job.account_id)
    if account is None or account.renewed:
        return
    _clean_up_once(job, cleanup_store, outbox)


def no_renewed_check(job: CleanupJob, accounts, cleanup_store, outbox) -> None:
    """The reference without the renewal check: a job that arrives after a renewal cleans up
    a paying player's account."""
    account = accounts.get(job.account_id)
    if account is None or account.cleanup_version != job.cleanup_version:
        return
    _clean_up_once(job, cleanup_store, outbox)


def no_missing_account_check(job: CleanupJob, accounts, cleanup_store, outbox) -> None:
    """The reference without the "account gone" case: a job for a deleted account raises
    ``AttributeError`` (an unexpected exception of the processor's own)."""
    account = accounts.get(job.account_id)
    if account.cleanup_version != job.cleanup_version or account.renewed:
        return
    _clean_up_once(job, cleanup_store, outbox)


def for_update(job: CleanupJob, accounts, cleanup_store, outbox) -> None:
    """The reference with a locking read of the account (``SELECT ... FOR UPDATE``): no
    renewal can commit between the checks and the commit, so it holds at read committed too."""
    account = accounts.get(job.account_id, for_update=True)
    if account is None or account.cleanup_version != job.cleanup_version or account.renewed:
        return
    _clean_up_once(job, cleanup_store, outbox)


def conditional(job: CleanupJob, accounts, cleanup_store, outbox) -> None:
    """The reference whose cleanup is a conditional write: the marker goes in only where the
    account row still has this version and is not renewed, in one statement that locks the
    row (``apply_if_current``), and the reminder only when it did."""
    account = accounts.get(job.account_id)
    if account is None or account.cleanup_version != job.cleanup_version or account.renewed:
        return
    if cleanup_store.was_applied(job.account_id, job.cleanup_version):
        return
    if cleanup_store.apply_if_current(account_id=job.account_id, cleanup_version=job.cleanup_version):
        outbox.add_once(event_key=reminder_event_key(job.account_id, job.cleanup_version),
                        account_id=job.account_id, cleanup_version=job.cleanup_version)


def naive(job: CleanupJob, accounts, cleanup_store, outbox) -> None:
    """The naive processor of the incident scenarios: it sends the reminder before anything
    else (under its autocommit design the outbox row is out at once, a side effect before
    the commit) and never checks the cleanup marker, so every run of a job reminds again."""
    account = accounts.get(job.account_id)
    if account is None or account.cleanup_version != job.cleanup_version or account.renewed:
        return
    outbox.add_once(event_key=reminder_event_key(job.account_id, job.cleanup_version),
                    account_id=job.account_id, cleanup_version=job.cleanup_version)
    cleanup_store.apply_once(account_id=job.account_id, cleanup_version=job.cleanup_version)


@dataclass(frozen=True)
class Candidate:
    """A design under review: ``processor``, the scenario ``design`` options it needs
    (section -> {key: value}), the invariant it ``breaks`` ("processor_error" for an
    exception of its own; None: it should hold) and why."""

    processor: Callable
    breaks: str | None
    why: str
    design: dict = field(default_factory=dict)


CANDIDATES: dict[str, Candidate] = {
    "reference": Candidate(process, None, "the design documents' processor, one unit of work, ack after commit"),
    "ack-before-processing": Candidate(
        process, "ack_after_durable", "acks on receipt: a crash before the commit loses the job",
        {"workers": {"ack_policy": "before_processing"}}),
    "autocommit": Candidate(
        process, "effect_with_outbox",
        "the documents' calls with no spanning transaction: a crash between the marker and the outbox "
        "event leaves a cleanup without its reminder, and the retry finds the marker",
        {"workers": {"transaction_scope": "autocommit"}}),
    "no-version-check": Candidate(
        no_version_check, "no_cleanup_after_renewal", "an old deadline's job cleans up after an extension"),
    "no-renewed-check": Candidate(
        no_renewed_check, "no_cleanup_after_renewal", "a job arriving after a renewal cleans up"),
    "check-then-insert-no-unique": Candidate(
        process, "at_most_once_effect",
        "was_applied then apply_once with no unique key: two concurrent deliveries both insert",
        {"stores": {"backend": "memory", "isolation": "read_committed", "unique_markers": False,
                    "unique_outbox_keys": False}}),
    "no-missing-account-check": Candidate(
        no_missing_account_check, "processor_error", "a job for a deleted account raises instead of doing nothing"),
    "naive": Candidate(
        naive, "at_most_once_effect",
        "reminder first, each call committed alone, no marker check and no unique keys: every run reminds; "
        "its worker acks whatever it gets back, a tombstone too",
        {"workers": {"transaction_scope": "autocommit", "on_tombstone": "ack"},
         "stores": {"unique_markers": False, "unique_outbox_keys": False}}),
    "read-committed": Candidate(
        process, "no_cleanup_after_renewal",
        "read committed isolation: a renewal committing between the read and the write goes unseen",
        {"stores": {"backend": "memory", "isolation": "read_committed"}}),
    "reference-for-update": Candidate(
        for_update, None,
        "the reference with a locking read of the account: read committed is enough (and any stricter level)",
        {"stores": {"backend": "memory", "isolation": "read_committed"}}),
    "reference-conditional": Candidate(
        conditional, None,
        "the reference whose cleanup is a conditional write on the account row: read committed is enough",
        {"stores": {"backend": "memory", "isolation": "read_committed"}}),
}
