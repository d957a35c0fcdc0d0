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
