"""A violation as people read it: one sentence, the same in the terminal, the report and JUnit.

An invariant's example (``acksim.judges.invariants``) is a dict: ``why`` it is a violation,
and where it happened (``account_id`` and ``cleanup_version``, ``message_id``, the record
``kind``, its ``actor`` and virtual ``time``). ``violation_sentence`` puts the reason first and
the place after it, times in virtual seconds to the millisecond:
``cleanup committed while stale: renewed (account a1 v1, message 1, cleanup_applied by
worker-1 at 10.004 s)``.
"""

from __future__ import annotations

from typing import Any, Mapping

# the keys a sentence places itself; any other key is added as "key value"
_PLACED = ("why", "account_id", "cleanup_version", "message_id", "kind", "actor", "time", "seq")


def seconds_text(value: float) -> str:
    """Virtual seconds to the millisecond, trailing zeros dropped: ``10.004 s``, ``15 s``."""
    text = f"{value:.3f}".rstrip("0").rstrip(".")
    return f"{'0' if text in ('', '-0') else text} s"


def violation_sentence(example: Mapping[str, Any] | None) -> str:
    """``example`` (an invariant's first violation) as one sentence; "—" for None."""
    if example is None:
        return "—"
    where = []
    if example.get("account_id") is not None:
        version = example.get("cleanup_version")
        where.append(f"account {example['account_id']}" + (f" v{version}" if version is not None else ""))
    if example.get("message_id") is not None:
        where.append(f"message {example['message_id']}")
    what = " by ".join(str(example[k]) for k in ("kind", "actor") if example.get(k))
    if example.get("time") is not None:
        what = f"{what} at {seconds_text(example['time'])}" if what else f"at {seconds_text(example['time'])}"
    if what:
        where.append(what)
    for key, value in example.items():
        if key not in _PLACED and value is not None:
            shown = seconds_text(value) if key.endswith("_s") and isinstance(value, (int, float)) else value
            where.append(f"{key.removesuffix('_s').replace('_', ' ')} {shown}")
    why = " ".join(str(example.get("why") or "").split())
    place = ", ".join(" ".join(str(w).split()) for w in where)
    if why and place:
        return f"{why} ({place})"
    return why or place or "—"
