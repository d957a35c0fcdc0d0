"""The processor blocks in ``select()`` on a pipe no one writes: a blocking C call."""

import os
import select

_READ, _WRITE = os.pipe()


def process(job, accounts, cleanup_store, outbox):
    accounts.get(job.account_id)
    select.select([_READ], [], [])
