"""The reference processor: step 4 of the design documents, unchanged.

The worker that calls ``process`` owns the unit of work (begin before, commit after) and the
acknowledgment (only after the commit). The processor itself only re-reads the account,
decides, and writes the cleanup marker and the outbox event; it never calls the mail provider.
"""

from __future__ import annotations

from acksim.model.job import CleanupJob, reminder_event_key


def process(job: CleanupJob, accounts, cleanup_store, outbox) -> None:
    """Apply ``job``'s cleanup once, or do nothing when the job is stale or already applied.

    ``accounts.get(account_id)`` returns the account or None; ``cleanup_store.was_applied``
    and ``apply_once`` are keyed by (account id, cleanup version); ``outbox.add_once`` is keyed
    by ``renewal-reminder:<account id>:<cleanup version>``. Returns None; store errors (for
    example a write conflict) propagate to the caller, which rolls the unit of work back.
    """
    account = accounts.get(job.account_id)
    if account is None:
        return  # account gone: nothing to do
    if account.cleanup_version != job.cleanup_version:
        return  # a newer deadline superseded this one: stale
    if account.renewed:
        return  # the player renewed: stale
    if cleanup_store.was_applied(job.account_id, job.cleanup_version):
        return  # a retry of finished work
    cleanup_store.apply_once(account_id=job.account_id, cleanup_version=job.cleanup_version)
    outbox.add_once(
        event_key=reminder_event_key(job.account_id, job.cleanup_version),
        account_id=job.account_id,
        cleanup_version=job.cleanup_version,
    )
