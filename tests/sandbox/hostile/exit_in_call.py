"""``os._exit(0)`` in the processor: the worker process ends with status 0, mid-job."""

import os


def process(job, accounts, cleanup_store, outbox):
    accounts.get(job.account_id)
    os._exit(0)
