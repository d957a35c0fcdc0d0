"""The processor sends its own process SIGINT, as a Ctrl-C would."""

import os
import signal


def process(job, accounts, cleanup_store, outbox):
    accounts.get(job.account_id)
    os.kill(os.getpid(), signal.SIGINT)
