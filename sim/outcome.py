"""What a finished run leaves: its history and the stores' final state.

The judges read a run only through these two (``Outcome``: the frozen history and the
``FinalState``), whichever world made it: the simulation (``acksim.world.core``), the fan-out
design's world, or a live run. ``pack_final`` and ``unpack_final`` carry a final state across
a process boundary (a supervised child's answer) quickly.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from operator import attrgetter

from acksim.history import Record
from acksim.model.job import Account
from acksim.model.store_api import OutboxEvent


@dataclass(frozen=True, slots=True)
class FinalState:
    """What the stores hold when the world stops (ground truth for the invariants):
    accounts by id order, cleanup markers (duplicates kept), outbox events by insertion; the
    queue's dead-letter and in-flight message ids; the end time (virtual s); whether the run
    was cut at ``run.max_records``."""

    accounts: tuple[Account, ...]
    markers: tuple[tuple[str, int], ...]
    outbox: tuple[OutboxEvent, ...]
    dead_letter_queue: tuple[int, ...]
    in_flight: tuple[int, ...]
    end_s: float
    stopped_early: bool = False
    stop_reason: str = ""  # one line: which guard stopped the run early, and why
    contained: str = ""  # the finding a supervised child's death or kill is (acksim.world.sandbox.supervised)


_ACCOUNT_FIELDS = attrgetter(*(f.name for f in fields(Account)))
_OUTBOX_FIELDS = attrgetter(*(f.name for f in fields(OutboxEvent)))


def pack_final(final: FinalState) -> tuple:
    """``final`` as ``(accounts, outbox events, the rest)``: the accounts and outbox events as
    tuples of their fields, the rest the ``FinalState`` without them. What a supervised child
    sends (``acksim.world.sandbox.supervised``): a long run's hundreds of thousands of frozen
    dataclasses pickle and unpickle about twice as fast so (pickle's own way for them is a
    Python-level ``__setstate__`` each). ``unpack_final`` rebuilds it."""
    return (tuple(map(_ACCOUNT_FIELDS, final.accounts)), tuple(map(_OUTBOX_FIELDS, final.outbox)),
            replace(final, accounts=(), outbox=()))


def unpack_final(data: tuple) -> FinalState:
    """The ``FinalState`` that ``pack_final`` gave (equal to the original). Raises TypeError
    or ValueError for data of another shape."""
    accounts, outbox, rest = data
    return replace(rest, accounts=tuple(Account(*a) for a in accounts),
                   outbox=tuple(OutboxEvent(*e) for e in outbox))


@dataclass(frozen=True, slots=True)
class Outcome:
    """A finished run: the history and the final state."""

    history: tuple[Record, ...]
    final: FinalState
