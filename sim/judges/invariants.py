"""The five invariants of the design: pure functions over the history and the final state.

Each checker returns the list of its violations (plain dicts, the first is the report's
counterexample) and never raises for a violation. The account's committed state at any point
is replayed from the lifecycle records, which come from the stores' committed write log.
"""

from __future__ import annotations

from collections import Counter
from typing import Callable, Sequence

from acksim.model.job import reminder_event_key
from acksim.history import ACCOUNT_STATE_KINDS, Record
from acksim.invariant_names import CLEANUP_INVARIANT_NAMES
from acksim.outcome import FinalState

_ACCOUNT_KINDS = ACCOUNT_STATE_KINDS
# the kinds that change an ``AccountReplay``: a long history's other records need not be fed to it
REPLAY_KINDS = _ACCOUNT_KINDS | {"account_deleted"}


class AccountReplay:
    """Committed account state replayed record by record: ``state`` maps account id to
    (cleanup version, renewed, deadline in virtual s). Feed it every record with ``apply``, or
    only those of ``REPLAY_KINDS``: records of other kinds change nothing."""

    def __init__(self) -> None:
        self.state: dict[str, tuple[int, bool, float | None]] = {}

    def apply(self, r: Record) -> None:
        """Update the replayed state with record ``r`` (records of other kinds change nothing)."""
        if r.kind in _ACCOUNT_KINDS:
            renewed = r.kind == "renewed" or (r.kind == "account_updated" and r.detail == "renewed")
            self.state[r.account_id] = (r.cleanup_version, renewed, r.deadline)
        elif r.kind == "account_deleted":
            self.state.pop(r.account_id, None)

    def stale(self, account_id: str, version: int, now: float | None = None) -> str | None:
        """Why a job for (account, version) is not to be applied now ("account gone",
        "version is N", "renewed", and, when ``now`` is given, "deadline not reached"), or
        None if it is due."""
        st = self.state.get(account_id)
        if st is None:
            return "account gone"
        if st[0] != version:
            return f"version is {st[0]}"
        if st[1]:
            return "renewed"
        if now is not None and st[2] is not None and now < st[2]:
            return "deadline not reached"
        return None


def _ex(r: Record, why: str) -> dict:
    return {"time": r.time, "seq": r.seq, "kind": r.kind, "actor": r.actor, "message_id": r.message_id,
            "account_id": r.account_id, "cleanup_version": r.cleanup_version, "why": why}


def no_cleanup_after_renewal(history: Sequence[Record], final: FinalState) -> list[dict]:
    """Every committed cleanup of (account, v) committed while the account's committed state
    had version v, was not renewed, and its deadline had passed."""
    accounts, out = AccountReplay(), []
    for r in history:
        if r.kind in REPLAY_KINDS:
            accounts.apply(r)
        elif r.kind == "cleanup_applied":
            why = accounts.stale(r.account_id, r.cleanup_version, now=r.time)
            if why is not None:
                out.append(_ex(r, f"cleanup committed while stale: {why}"))
    return out


def at_most_once_effect(history: Sequence[Record], final: FinalState) -> list[dict]:
    """At most one committed cleanup and one outbox event per (account, v), at most one
    reminder sent per event key (history), and no duplicate marker rows (final state)."""
    out: list[dict] = []
    seen: Counter = Counter()
    for r in history:
        if r.kind == "cleanup_applied":
            key = ("cleanup", r.account_id, r.cleanup_version)
        elif r.kind == "outbox_added":
            key = ("outbox", r.account_id, r.cleanup_version)
        elif r.kind == "reminder_sent":
            key = ("reminder", r.detail)
        else:
            continue
        seen[key] += 1
        if seen[key] == 2:
            out.append(_ex(r, f"second {key[0]} effect for the same key"))
    for (aid, v), n in sorted(Counter(final.markers).items()):
        if n > 1 and seen[("cleanup", aid, v)] < 2:
            out.append({"account_id": aid, "cleanup_version": v, "why": f"{n} marker rows in the store"})
    return out


def effect_with_outbox(history: Sequence[Record], final: FinalState) -> list[dict]:
    """In the final committed state, every cleanup marker has its outbox event (keyed
    ``renewal-reminder:<account id>:<version>``) and every outbox event its marker."""
    markers = set(final.markers)
    events = {(e.account_id, e.cleanup_version) for e in final.outbox
              if e.event_key == reminder_event_key(e.account_id, e.cleanup_version)}
    out = [{"account_id": a, "cleanup_version": v, "why": "cleanup committed without its outbox event"}
           for a, v in sorted(markers - events)]
    out += [{"account_id": a, "cleanup_version": v, "why": "outbox event committed without its cleanup"}
            for a, v in sorted(events - markers)]
    out += [{"account_id": e.account_id, "cleanup_version": e.cleanup_version,
             "why": f"outbox event key {e.event_key!r} is not the reminder key of its cleanup"}
            for e in final.outbox if e.event_key != reminder_event_key(e.account_id, e.cleanup_version)]
    return out


def ack_after_durable(history: Sequence[Record], final: FinalState) -> list[dict]:
    """When a message is acked, its outcome is durable: its cleanup and its outbox event had
    both committed, or the job was stale (account gone, version moved on, renewed) when the
    ack happened. An ack before the deadline of a job still to come is not durable either."""
    accounts, cleaned, reminded, out = AccountReplay(), set(), set(), []
    for r in history:
        kind = r.kind
        if kind in REPLAY_KINDS:
            accounts.apply(r)
        elif kind == "cleanup_applied":
            cleaned.add((r.account_id, r.cleanup_version))
        elif kind == "outbox_added":
            reminded.add((r.account_id, r.cleanup_version))
        elif kind in ("acked", "ack_stale") and accounts.stale(r.account_id, r.cleanup_version) is None:
            key = (r.account_id, r.cleanup_version)
            if key not in cleaned:
                out.append(_ex(r, "acked while the cleanup was due and not committed"))
            elif key not in reminded:
                out.append(_ex(r, "acked before the outbox event committed"))
    return out


def no_lost_work(history: Sequence[Record], final: FinalState) -> list[dict]:
    """Every job that fell due and was not superseded ends applied, or in the dead-letter
    queue (counted, not a violation). Reported: due work never applied (never published,
    dropped by retention, acked without effect, stuck in flight when the run ended)."""
    applied = {(r.account_id, r.cleanup_version) for r in history if r.kind == "cleanup_applied"}
    dlq_keys, why_gone, deadlines = set(), {}, {}
    dlq_ids = set(final.dead_letter_queue)
    in_flight = set(final.in_flight)
    for r in history:
        if r.kind not in _LOST_WORK_KINDS:
            continue
        key = (r.account_id, r.cleanup_version)
        if r.kind in _ACCOUNT_KINDS:
            deadlines[key] = r.deadline
        elif r.kind == "dead_lettered" and r.message_id in dlq_ids:
            dlq_keys.add(key)
        elif r.kind == "retention_expired":
            why_gone.setdefault(key, f"message {r.message_id} dropped by retention")
        elif r.kind == "dropped":
            why_gone.setdefault(key, f"message {r.message_id} dropped at its {r.detail} (no dead-letter target)")
        elif r.kind == "trimmed":
            why_gone.setdefault(key, f"message {r.message_id} trimmed by the length cap while {r.detail}")
        elif r.kind == "publish_refused":
            why_gone.setdefault(key, f"publish refused: {r.detail}")
        elif r.kind == "delivered" and r.detail == "pop_on_fetch":
            why_gone.setdefault(key, f"message {r.message_id} popped on fetch (no redelivery) and never applied")
        elif r.kind in ("published", "delivered") and r.message_id in in_flight:
            why_gone[key] = f"message {r.message_id} still in flight at the end"
        elif r.kind in ("acked", "ack_stale"):
            why_gone.setdefault(key, f"message {r.message_id} acked without effect")
    out = []
    for acc in final.accounts:
        key = (acc.account_id, acc.cleanup_version)
        if acc.renewed or key in applied or key in dlq_keys:
            continue
        due_s = deadlines.get(key)
        if due_s is None or due_s > final.end_s:
            continue
        out.append({"account_id": key[0], "cleanup_version": key[1], "deadline_s": due_s,
                    "why": why_gone.get(key, "due, never applied")})
    return out


# the records ``no_lost_work`` looks at, after the committed cleanups
_LOST_WORK_KINDS = _ACCOUNT_KINDS | {"dead_lettered", "retention_expired", "dropped", "trimmed", "publish_refused",
                                     "delivered", "published", "acked", "ack_stale"}

Checker = Callable[[Sequence[Record], FinalState], list[dict]]

# (name, checker), the names of ``acksim.invariant_names`` in their order
INVARIANTS: tuple[tuple[str, Checker], ...] = tuple(zip(CLEANUP_INVARIANT_NAMES, (
    no_cleanup_after_renewal, at_most_once_effect, effect_with_outbox, ack_after_durable, no_lost_work), strict=True))


def check_all(history: Sequence[Record], final: FinalState,
              invariants: Sequence[tuple[str, Checker]] = INVARIANTS) -> dict[str, dict]:
    """The ``invariants`` section of summary.json: ``{name: {"holds", "violations", "example"}}``
    for each of ``invariants`` (the cleanup design's by default)."""
    out = {}
    for name, fn in invariants:
        found = fn(history, final)
        out[name] = {"holds": not found, "violations": len(found), "example": found[0] if found else None}
    return out
