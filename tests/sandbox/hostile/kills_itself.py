"""The processor sends its own process SIGKILL."""

import os
import signal


def process(job, accounts, cleanup_store, outbox):
    accounts.get(job.account_id)
    os.kill(os.getpid(), signal.SIGKILL)
