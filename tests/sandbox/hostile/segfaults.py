"""The processor reads address 0 through ctypes: a segmentation fault."""

import ctypes


def process(job, accounts, cleanup_store, outbox):
    accounts.get(job.account_id)
    ctypes.string_at(0)
