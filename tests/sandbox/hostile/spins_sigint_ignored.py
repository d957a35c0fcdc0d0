"""A spin started with SIGINT ignored (as in any non-interactive background job)."""

import signal


def process(job, accounts, cleanup_store, outbox):
    accounts.get(job.account_id)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    while True:
        pass
