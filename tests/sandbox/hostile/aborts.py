"""The processor calls ``os.abort()``: SIGABRT."""

import os


def process(job, accounts, cleanup_store, outbox):
    accounts.get(job.account_id)
    os.abort()
