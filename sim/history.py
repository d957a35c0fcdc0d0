"""The append-only history: one frozen record per observable step of the world.

Like a flight recorder: actors never keep counters of their own; every figure in a report is
derived afterwards from these records. Records are ordered by virtual time, then by the
sequence number the world stamps on them, so two runs of one scenario and seed give the same
history byte for byte.
"""

from __future__ import annotations

import csv
import io
import sys
from typing import Iterable, NamedTuple, Sequence


class Record(NamedTuple):
    """One observable step: a named tuple, so immutable, and the world makes each in one C
    call (``tuple.__new__``, in ``History.record`` and ``unpack``; a long run makes millions:
    a frozen dataclass took eleven slot writes each). ``Record(...)`` takes the fields by
    position or keyword as usual.

    ``time``: virtual seconds since the scenario epoch; ``seq``: position in the history;
    ``kind``: what happened (see ``KINDS``); ``actor``: who did it ("queue", "scheduler",
    "worker-3", "renewals", "outbox-relay", "mail-provider", "operator", "fault-injector");
    ``message_id``,
    ``account_id``, ``cleanup_version``, ``receive_count`` as they apply; ``deadline``: the
    job's or account's deadline in virtual seconds; ``visible_at``: for "published" and
    "nacked", when the message becomes receivable; ``detail``: a short free-form note
    (a crash phase, an error class, a receipt).
    """

    time: float
    seq: int
    kind: str
    actor: str
    message_id: int | None = None
    account_id: str | None = None
    cleanup_version: int | None = None
    receive_count: int | None = None
    deadline: float | None = None
    visible_at: float | None = None
    detail: str = ""


COLUMNS: tuple[str, ...] = Record._fields
_WIDTH = len(COLUMNS)
_new_record = tuple.__new__  # ``_new_record(Record, fields)``: a record without the Python-level ``__new__``


def pack(records: Iterable[Record]) -> list[tuple]:
    """``records`` as plain tuples of their fields (``COLUMNS`` order): what a supervised
    child sends (``acksim.world.sandbox.contain``), pickled several times faster than records."""
    return list(map(tuple, records))


def unpack(rows: Sequence[tuple]) -> tuple[Record, ...]:
    """The records ``pack`` gave, rebuilt (equal to the originals) in one C call each, not
    through the Python-level ``__new__``: it matters for a check's thousands of histories and
    for a long run's millions of records. Raises ValueError for a row that does not have
    one value per column (``COLUMNS``)."""
    if rows and set(map(len, rows)) != {_WIDTH}:
        raise ValueError(f"a history row needs {_WIDTH} values, one per column")
    return tuple([_new_record(Record, t) for t in rows])

# records that carry an account's new committed state (cleanup_version, deadline; "renewed"
# for a renewal, or detail "renewed" on a processor's own account write)
ACCOUNT_STATE_KINDS = frozenset({"account_created", "renewed", "extended", "term_rolled_over", "resubscribed",
                                 "account_updated"})
# the players' lifecycle commits after an account exists
LIFECYCLE_KINDS = frozenset({"renewed", "extended", "term_rolled_over", "resubscribed", "account_deleted"})

# the version of the record interface (``Record``'s fields, ``KINDS``) that custom invariants read
# (docs/history.md): raised when a field or kind changes meaning or goes away
HISTORY_VERSION = 1

KINDS: tuple[str, ...] = (
    # queue
    "published", "publish_refused", "deduplicated", "delivered", "acked", "ack_stale",
    "nacked", "visibility_expired", "dead_lettered", "redriven", "retention_expired",
    "dropped", "trimmed", "recovery_sweep", "tombstone_discarded",
    # workers
    "attempt_started", "crashed", "restarted", "tx_committed", "tx_rolled_back",
    "processor_error", "lease_lost", "retry_requested",
    # committed effects (ground truth from the stores' write log)
    "cleanup_applied", "outbox_added",
    # account lifecycle (committed account state; cleanup_version and deadline are the new ones)
    "account_created", "renewed", "extended", "term_rolled_over", "resubscribed",
    "account_deleted", "account_updated",
    # outbox relay and mail provider
    "reminder_sent", "reminder_duplicate", "reminder_failed", "reminder_retry",
    # scheduler and operator
    "cron_run_started", "cron_run_finished", "cron_run_skipped", "deployment_started",
    "scheduler_crashed", "worker_killed", "publish_recorded",
    # the shipment fan-out design (acksim.world.fanout)
    "send", "subscriber_effect", "subscriber_duplicate", "delivery_recorded", "update_completed",
    # pauses, partitions, broker restarts (acksim.world.links, acksim.world.queue.broker)
    "worker_paused", "worker_resumed", "partition_started", "partition_healed", "ack_failed",
    "broker_down", "broker_restarted", "publish_deferred",
)


class History:
    """The world's log. ``record`` is its only writer; ``records`` (a list, or the tuple
    ``frozen`` gave) is read-only by convention.

    ``clock`` is a zero-argument callable returning the current virtual time (the SimPy
    environment's ``now``).
    """

    def __init__(self, clock) -> None:
        self._clock = clock
        self.records: list[Record] | tuple[Record, ...] = []
        self._time = 0.0  # the last record's time: equal times share one float object
        self._floats: dict[float, float] = {}  # one float object per distinct deadline / visible_at

    def record(self, kind: str, actor: str, *, message_id: int | None = None, account_id: str | None = None,
               cleanup_version: int | None = None, receive_count: int | None = None,
               deadline: float | None = None, visible_at: float | None = None, detail: str = "") -> Record:
        """Append one record stamped with the current virtual time and the next sequence number;
        the keywords are ``Record``'s fields of the same names.

        Raises ValueError for a kind not in ``KINDS`` (a typo must not pass silently), TypeError
        for a keyword that is not a field.
        """
        if kind not in _KIND_SET:
            raise ValueError(f"unknown record kind {kind!r}")
        # one string object per distinct value ("0", "crash", an event key, an account id), not
        # one per record: a long history holds millions of each
        if type(detail) is str:
            detail = _intern(detail)
        if type(account_id) is str:
            account_id = _intern(account_id)
        # likewise a deadline (every record of a job carries it) and a visibility instant: floats
        # only (an int must stay an int) and not 0.0, which would stand for -0.0 too
        if type(deadline) is float and deadline:
            deadline = self._floats.setdefault(deadline, deadline)
        if type(visible_at) is float and visible_at:
            visible_at = self._floats.setdefault(visible_at, visible_at)
        records = self.records
        if type(records) is tuple:  # recording again after ``frozen``
            records = self.records = list(records)
        # records come in time order, so the records of one instant (several SimPy events often)
        # can hold the first one's float instead of one float each (virtual time is never -0.0)
        time = float(self._clock())
        if time == self._time:
            time = self._time
        else:
            self._time = time
        rec = _new_record(Record, (time, len(records), kind, actor, message_id, account_id, cleanup_version,
                                   receive_count, deadline, visible_at, detail))
        records.append(rec)
        return rec

    def frozen(self) -> tuple[Record, ...]:
        """The records so far as a tuple, which ``records`` then is too: a long run's history
        is not held twice, as a list and as the ``Outcome``'s tuple."""
        if type(self.records) is not tuple:
            self.records = tuple(self.records)
        return self.records


_KIND_SET = frozenset(KINDS)
_intern = sys.intern


def to_csv(records: Iterable[Record]) -> str:
    """The history as CSV text with a header row (``COLUMNS``); None is an empty cell.

    Floats are written with ``repr`` so reading back gives the same values; pandas reads it
    with ``pd.read_csv``.
    """
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(COLUMNS)
    writer.writerows(["" if v is None else v for v in rec] for rec in records)
    return buf.getvalue()


def to_frame(records: Sequence[Record]):
    """The history as a pandas DataFrame, one row per record, columns ``COLUMNS``."""
    import pandas as pd

    return pd.DataFrame.from_records(list(records), columns=list(COLUMNS))  # records are tuples


def history_digest(history) -> str:
    """SHA-256 (hex) of the history's events file (``to_csv``): equal digests mean the same
    run, record for record."""
    import hashlib

    return hashlib.sha256(to_csv(history).encode()).hexdigest()
