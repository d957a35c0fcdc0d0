"""Every call raises an error with a five-megabyte message."""

_TEXT = "x" * 5_000_000


def process(job, accounts, cleanup_store, outbox):
    accounts.get(job.account_id)
    raise ValueError(_TEXT)
