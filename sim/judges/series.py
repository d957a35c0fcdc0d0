"""Time series and spans derived from the history, for SLO figures, plots and notebooks.

Pure functions: history in, pandas out. Nothing here is counted while the world runs.
pandas is imported by the functions that build frames, so the judges of a check (which use
``attempt_span_rows`` only) do not load it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from acksim.history import Record

if TYPE_CHECKING:
    import pandas as pd

_FAILURES = frozenset({"crashed", "nacked", "processor_error"})
_TERMINAL = frozenset({"acked", "retention_expired"})


def message_transitions(history: Sequence[Record]) -> list[tuple[float, int, int, int, str]]:
    """Every state change of every message, sorted by (time, seq, step).

    Returns tuples ``(time, seq, step, message_id, state)`` with state "delayed", "visible",
    "in_flight", "dlq" or "deleted". A published or nacked message is delayed until its
    ``visible_at``; it becomes visible then, at a visibility expiry or a redrive; in flight at
    a delivery (spurious duplicate copies are not state changes); it leaves at an ack, a
    retention expiry or dead-lettering.
    """
    out: list[tuple[float, int, int, int, str]] = []
    for r in history:
        k, mid = r.kind, r.message_id
        if mid is None:
            continue
        if k in ("published", "nacked"):
            out.append((r.time, r.seq, 0, mid, "delayed"))
            out.append((r.visible_at, r.seq, 1, mid, "visible"))
        elif k in ("visibility_expired", "redriven"):
            out.append((r.time, r.seq, 0, mid, "visible"))
        elif k == "delivered" and r.detail != "duplicate":
            out.append((r.time, r.seq, 0, mid, "in_flight"))
        elif k in _TERMINAL:
            out.append((r.time, r.seq, 0, mid, "deleted"))
        elif k == "dead_lettered":
            out.append((r.time, r.seq, 0, mid, "dlq"))
    out.sort()  # a history's seq is unique, so (time, seq, step) is: the id and state never decide
    return out


def queue_series(history: Sequence[Record], transitions: Sequence[tuple] | None = None) -> pd.DataFrame:
    """Queue depth over time: columns ``time`` (virtual s), ``visible``, ``in_flight``.

    One row per instant at which a count changed, holding the counts after everything that
    happened at that instant (a step function; a message that becomes visible and is received
    at the same instant never counts as backlog). ``visible`` is the number of receivable
    messages (delayed ones excluded, like SQS's ApproximateNumberOfMessagesVisible);
    ``in_flight`` the received, not yet acked, nacked or expired ones. ``transitions``:
    ``message_transitions(history)`` if the caller has it already.
    """
    import pandas as pd
    state: dict[int, str] = {}
    visible = in_flight = 0
    rows: list[tuple[float, int, int]] = []
    for time, _seq, _step, mid, new in message_transitions(history) if transitions is None else transitions:
        old = state.get(mid)
        if old == "deleted" or old == new:
            continue  # a stale visible_at after a retention expiry
        visible += (new == "visible") - (old == "visible")
        in_flight += (new == "in_flight") - (old == "in_flight")
        state[mid] = new
        if rows and rows[-1][0] == time:
            rows.pop()  # only the counts after the last change of an instant matter
        if not rows or rows[-1][1:] != (visible, in_flight):
            rows.append((time, visible, in_flight))
    return pd.DataFrame(rows, columns=["time", "visible", "in_flight"])


def message_ages(history: Sequence[Record], transitions: Sequence[tuple] | None = None) -> pd.Series:
    """Per message, virtual seconds from its first becoming visible to leaving the queue
    (ack, retention expiry, dead-lettering) or to the end of the history; index message id.
    ``transitions``: ``message_transitions(history)`` if the caller has it already."""
    import pandas as pd
    first: dict[int, float] = {}
    gone: dict[int, float] = {}
    for time, _seq, _step, mid, new in message_transitions(history) if transitions is None else transitions:
        if new == "visible" and mid not in first and mid not in gone:
            first[mid] = time
        elif new in ("deleted", "dlq") and mid not in gone:
            gone[mid] = time
    end = history[-1].time if history else 0.0
    ages = {m: gone.get(m, max(end, t0)) - t0 for m, t0 in first.items()}
    return pd.Series(ages, dtype=float)


def recovery_times(history: Sequence[Record]) -> pd.Series:
    """Recovery time per message: from its first failed execution (a crash while holding it,
    a nack, a processor error) to the ack that deleted it, in virtual seconds; index message
    id. A write conflict retried in place within the same delivery is not a failed execution
    (it shows in the ``conflicts`` count); one that ends in a nack is. Messages never acked
    are left out (see ``dead_lettered``)."""
    import pandas as pd
    return pd.Series(_failures(history)[1], dtype=float)


def recovery_samples(history: Sequence[Record]) -> tuple[pd.Series, pd.Series]:
    """``(recovered, censored)``: the recovery times of ``recovery_times`` (messages acked
    after a failed execution), and for each message that failed and never reached an ack
    (dead-lettered, dropped, expired, still in flight or waiting at the end) a censored sample:
    the end of the history minus its first failure, in virtual seconds, a lower bound on a
    recovery that had not finished when the run ended. Both indexed by message id; a message
    is in exactly one of them."""
    import pandas as pd
    first_failure, recovered, acked = _failures(history)
    end = history[-1].time if history else 0.0
    censored = {mid: max(0.0, end - t0) for mid, t0 in first_failure.items()
                if mid not in acked and mid not in recovered}
    return pd.Series(recovered, dtype=float), pd.Series(censored, dtype=float)


def _failures(history: Sequence[Record]) -> tuple[dict[int, float], dict[int, float], set[int]]:
    """One pass for ``recovery_times`` and ``recovery_samples``: per message id its first
    failed execution (virtual s), the recovery time of each one acked after it, and every
    acked message id."""
    first_failure: dict[int, float] = {}
    recovered: dict[int, float] = {}
    acked: set[int] = set()
    copy_holders: set[str] = set()  # workers holding a spurious duplicate copy
    for r in history:
        mid, kind = r.message_id, r.kind
        if mid is None:
            continue
        if kind == "delivered":
            (copy_holders.add if r.detail == "duplicate" else copy_holders.discard)(r.actor)
        elif kind == "crashed" and r.actor in copy_holders and not r.detail.startswith("held_lost:"):
            continue  # losing a spurious copy fails nothing: the message itself is unaffected
        if kind in _FAILURES:
            if mid not in first_failure:
                first_failure[mid] = r.time
        elif kind == "acked":
            acked.add(mid)
            if mid in first_failure:
                recovered[mid] = r.time - first_failure[mid]
    return first_failure, recovered, acked


def end_to_end_latencies(history: Sequence[Record]) -> pd.Series:
    """Per committed cleanup, virtual seconds from its deadline to its commit."""
    import pandas as pd
    return pd.Series(
        [r.time - r.deadline for r in history if r.kind == "cleanup_applied" and r.deadline is not None],
        dtype=float,
    )


def throughput_series(history: Sequence[Record], bin_s: float = 60.0) -> pd.DataFrame:
    """Acks per virtual second in bins of ``bin_s``: columns ``time`` (bin start), ``acks_per_s``."""
    import pandas as pd
    acks = pd.Series([r.time for r in history if r.kind == "acked"], dtype=float)
    if acks.empty:
        return pd.DataFrame({"time": [], "acks_per_s": []})
    bins = (acks // bin_s).astype(int)
    counts = bins.value_counts().sort_index()
    full = counts.reindex(range(int(bins.min()), int(bins.max()) + 1), fill_value=0)
    return pd.DataFrame({"time": full.index * bin_s, "acks_per_s": full.to_numpy() / bin_s})


def attempt_spans(history: Sequence[Record]) -> pd.DataFrame:
    """Each worker's hold of each delivery: columns ``worker``, ``message_id``, ``start``,
    ``end`` (virtual s), ``outcome`` ("acked", "ack_stale", "nacked", "crashed", "open").
    """
    import pandas as pd
    rows = attempt_span_rows(history)
    return pd.DataFrame(rows, columns=["worker", "message_id", "start", "end", "outcome"])


def attempt_span_rows(history: Sequence[Record]) -> list[tuple[str, int, float, float, str]]:
    """``attempt_spans`` as plain tuples (worker, message id, start s, end s, outcome), in
    the order the spans closed (the open ones last), for judges that need no frame."""
    open_: dict[str, tuple[int, float]] = {}
    rows: list[tuple[str, int, float, float, str]] = []
    for r in history:
        if r.kind == "delivered":
            open_[r.actor] = (r.message_id, r.time)
        elif r.kind in ("acked", "ack_stale", "nacked", "crashed") and r.actor in open_:
            mid, start = open_.pop(r.actor)
            rows.append((r.actor, mid, start, r.time, r.kind))
    end = history[-1].time if history else 0.0
    for worker, (mid, start) in open_.items():
        rows.append((worker, mid, start, end, "open"))
    return rows
