"""FIFO deduplication: a FIFO queue drops a publish whose deduplication id it accepted less
than ``queue.fifo_dedup_window_s`` ago.

SQS FIFO keys deduplication by ``MessageDeduplicationId`` for 5 minutes, and an id stays
tracked even after its message is deleted [AWS-FIFO-KEY]. Here the id is the job's
``account_id:cleanup_version`` and the window opens at the accepted publish: a publish of the
same job within it is recorded as "deduplicated" and sends nothing; one after it is a new
message and opens a new window. Times are virtual seconds.
"""

from __future__ import annotations

from acksim.history import History
from acksim.model.job import CleanupJob


class FifoDedup:
    """The deduplication ids of one FIFO queue, recorded in ``history``, each kept
    ``window_s`` virtual seconds from its accepted publish."""

    def __init__(self, history: History, window_s: float) -> None:
        self.history = history
        self.window_s = window_s
        self.accepted: dict[str, float] = {}  # deduplication id -> virtual s of its accepted publish

    def drops(self, job: CleanupJob, deadline_s: float, actor: str, now: float) -> bool:
        """Whether ``actor``'s publish of ``job`` (due ``deadline_s``) at ``now`` is a
        duplicate: then it records "deduplicated" and returns True; else the job's window
        opens now and it returns False."""
        key = f"{job.account_id}:{job.cleanup_version}"
        seen = self.accepted.get(key)
        if seen is not None and now - seen < self.window_s:
            self.history.record("deduplicated", actor, account_id=job.account_id,
                                cleanup_version=job.cleanup_version, deadline=deadline_s)
            return True
        self.accepted[key] = now
        return False
