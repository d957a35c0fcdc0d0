"""The code under test: the renewal-cleanup job, its processor and the stores it writes.

Everything here is plain synchronous Python with no knowledge of the simulation: a user's
processor is written against the same interfaces (``CleanupJob``, ``Account``,
``accounts.get``, ``cleanup_store.was_applied``/``apply_once``, ``outbox.add_once``).
"""

from acksim.model.job import Account, CleanupJob, reminder_event_key
from acksim.model.processor import process

__all__ = ["Account", "CleanupJob", "process", "reminder_event_key"]
