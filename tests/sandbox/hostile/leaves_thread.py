"""Correct work, and a non-daemon thread left behind that never ends."""

import threading

from .common import reference

_STOP = threading.Event()


def process(job, accounts, cleanup_store, outbox):
    threading.Thread(target=_STOP.wait, name="left-behind", daemon=False).start()
    reference(job, accounts, cleanup_store, outbox)
