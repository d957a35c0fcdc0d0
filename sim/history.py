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
from dataclasses import dataclass, fields
from operator import attrgetter
from typing import Iterable, Sequence


@dataclass(frozen=True, slots=True)
class Record:
    """One observable step.

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

    def __reduce__(self):
        """Pickled as its fields, in order (a supervised child sends whole histories,
        ``acksim.world.contain``): several times faster than the dataclass default."""
        return Record, (self.time, self.seq, self.kind, self.actor, self.message_id, self.account_id,
                        self.cleanup_version, self.receive_count, self.deadline, self.visible_at, self.detail)


COLUMNS: tuple[str, ...] = tuple(f.name for f in fields(Record))
_FIELDS = attrgetter(*COLUMNS)
_SETTERS = tuple(Record.__dict__[name].__set__ for name in COLUMNS)  # the slots' own setters


def pack(records: Iterable[Record]) -> list[tuple]:
    """``records`` as plain tuples of their fields (``COLUMNS`` order): what a supervised
    child sends (``acksim.world.contain``), pickled several times faster than records."""
    return [_FIELDS(r) for r in records]


def unpack(rows: Iterable[tuple]) -> tuple[Record, ...]:
    """The records ``pack`` gave, rebuilt (equal to the originals) without the frozen
    ``__init__``: about twice as fast, which matters for a check's thousands of histories."""
    s0, s1, s2, s3, s4, s5, s6, s7, s8, s9, s10 = _SETTERS
    new = object.__new__
    out = []
    append = out.append
    for t in rows:
        r = new(Record)
        s0(r, t[0]); s1(r, t[1]); s2(r, t[2]); s3(r, t[3]); s4(r, t[4]); s5(r, t[5])  # noqa: E702
        s6(r, t[6]); s7(r, t[7]); s8(r, t[8]); s9(r, t[9]); s10(r, t[10])  # noqa: E702
        append(r)
    return tuple(out)

# records that carry an account's new committed state (cleanup_version, deadline; "renewed"
# for a renewal, or detail "renewed" on a processor's own account write)
ACCOUNT_STATE_KINDS = frozenset({"account_created", "renewed", "extended", "term_rolled_over", "resubscribed",
                                 "account_updated"})
# the players' lifecycle commits after an account exists
LIFECYCLE_KINDS = frozenset({"renewed", "extended", "term_rolled_over", "resubscribed", "account_deleted"})

KINDS: tuple[str, ...] = (
    # queue
    "published", "publish_refused", "deduplicated", "delivered", "acked", "ack_stale",
    "nacked", "visibility_expired", "dead_lettered", "redriven", "retention_expired",
    "dropped", "trimmed", "recovery_sweep", "tombstone_discarded",
    # workers
    "attempt_started", "crashed", "restarted", "tx_committed", "tx_rolled_back",
    "processor_error", "lease_lost",
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
    # pauses, partitions, broker restarts (acksim.world.links, acksim.world.broker)
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
        # the slots set directly, as ``unpack`` does: the frozen ``__init__`` is several times
        # slower and a long run writes millions of records
        rec = _new(Record)
        _S0(rec, time); _S1(rec, len(records)); _S2(rec, kind); _S3(rec, actor)  # noqa: E702
        _S4(rec, message_id); _S5(rec, account_id); _S6(rec, cleanup_version)  # noqa: E702
        _S7(rec, receive_count); _S8(rec, deadline); _S9(rec, visible_at); _S10(rec, detail)  # noqa: E702
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
_new = object.__new__
_S0, _S1, _S2, _S3, _S4, _S5, _S6, _S7, _S8, _S9, _S10 = _SETTERS


def to_csv(records: Iterable[Record]) -> str:
    """The history as CSV text with a header row (``COLUMNS``); None is an empty cell.

    Floats are written with ``repr`` so reading back gives the same values; pandas reads it
    with ``pd.read_csv``.
    """
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(COLUMNS)
    row = attrgetter(*COLUMNS)
    writer.writerows(["" if v is None else v for v in row(rec)] for rec in records)
    return buf.getvalue()


def to_frame(records: Sequence[Record]):
    """The history as a pandas DataFrame, one row per record, columns ``COLUMNS``."""
    import pandas as pd

    row = attrgetter(*COLUMNS)
    return pd.DataFrame.from_records([row(r) for r in records], columns=list(COLUMNS))
