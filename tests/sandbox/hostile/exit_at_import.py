"""``os._exit(0)`` when the module is imported."""

import os

os._exit(0)


def process(job, accounts, cleanup_store, outbox):
    pass
