"""``from time import sleep`` bound at import, then an hour's sleep: virtual time."""

from time import sleep

from .common import reference


def process(job, accounts, cleanup_store, outbox):
    sleep(3600)
    reference(job, accounts, cleanup_store, outbox)
