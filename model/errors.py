"""Errors the stores raise. Every ``ConflictError`` is one a worker is expected to handle:
roll the unit of work back, then retry after a backoff or nack the message.
"""


class StoreError(Exception):
    """Base class of every error raised by ``model`` stores."""


class ConflictError(StoreError):
    """A transaction cannot go on because of a concurrent one; roll back and retry."""


class BusyError(ConflictError):
    """Another session holds the database write lock (SQLite ``SQLITE_BUSY``)."""


class BusySnapshotError(ConflictError):
    """This transaction read a snapshot that another session has since committed over, and
    cannot upgrade to a writer (SQLite ``SQLITE_BUSY_SNAPSHOT`` in WAL mode)."""


class UniqueViolation(ConflictError):
    """A unique key (cleanup marker or outbox event key) was committed by another session
    while this transaction held a write of the same key."""


class TransactionStateError(StoreError):
    """``begin`` inside a transaction, or ``commit``/``rollback`` outside one."""


class SerializationFailure(ConflictError):
    """PostgreSQL could not serialize this transaction with a concurrent one (SQLSTATE 40001:
    a repeatable read or serializable transaction that read what another one changed)."""


class DeadlockDetected(ConflictError):
    """This transaction was chosen as the victim of a lock cycle (acksim breaks PostgreSQL
    deadlocks itself, cancelling the youngest transaction of the cycle; or SQLSTATE 40P01)."""


class LockNotAvailable(ConflictError):
    """A statement waits on a row lock where its caller cannot wait (a harness actor with
    nowhere to park): the statement was cancelled; roll back and retry."""


class TransactionAborted(StoreError):
    """A statement was sent in a PostgreSQL transaction that an earlier error aborted
    (SQLSTATE 25P02): only ``rollback()`` is possible."""


class RetryLater(Exception):
    """Raised by a processor to say "not now, retry this job later" (a rate limit, a
    dependency down: HTTP 429 or 5xx in the design documents' words). Not an error of the
    processor's own: the worker rolls the unit of work back and nacks the message, to come
    back after ``delay_s`` virtual seconds (a Retry-After) or, when None, after the queue's
    nack backoff; the receive limit and the dead-letter queue bound the retries. A scenario
    may name other exception classes that mean the same (``workers.retryable_errors``)."""

    def __init__(self, message: str = "retry later", delay_s: float | None = None) -> None:
        super().__init__(message)
        if delay_s is not None and not (0.0 <= delay_s <= 86_400.0):
            raise ValueError(f"delay_s: must be 0 .. 86400 virtual seconds or None, got {delay_s!r}")
        self.delay_s = delay_s
