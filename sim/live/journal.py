"""One history from many processes: each writes its own journal, the parent merges them.

Every process of a live run (the parent and each worker incarnation) appends JSON lines to a
file of its own with one unbuffered ``os.write`` per record, so a record written before a
SIGKILL is on disk and a signal handler never meets a half-written buffer. A line holds the
wall clock (``time.monotonic()``, one clock for every process on the machine), the record's
kind, actor and fields. ``merge`` maps wall times back to virtual seconds,
``(wall - t0) / time_scale``, orders every record by (time, journal, line) and numbers them:
the same ``acksim.history.Record`` tuple the simulation produces.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from acksim.history import KINDS, Record

_KINDS = frozenset(KINDS)
_FIELDS = ("message_id", "account_id", "cleanup_version", "receive_count", "deadline", "visible_at", "detail")


class Journal:
    """An append-only journal file at ``path``; ``clock`` returns wall seconds (monotonic).
    ``to_virtual`` maps a wall time to virtual seconds (for fields such as ``visible_at``
    computed by the writer). Raises ValueError for an unknown kind."""

    def __init__(self, path: Path, t0: float, time_scale: float) -> None:
        self.path = Path(path)
        self.t0, self.scale = t0, time_scale
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def now(self) -> float:
        """Virtual seconds now."""
        return (time.monotonic() - self.t0) / self.scale

    def record(self, kind: str, actor: str, at: float | None = None, **fields) -> None:
        """Append one record; ``at`` is a wall time taken earlier (default: now)."""
        if kind not in _KINDS:
            raise ValueError(f"unknown record kind {kind!r}")
        line = {"w": time.monotonic() if at is None else at, "k": kind, "a": actor}
        line.update({k: v for k, v in fields.items() if v is not None and v != ""})
        os.write(self._fd, (json.dumps(line, separators=(",", ":")) + "\n").encode())

    def close(self) -> None:
        try:
            os.close(self._fd)
        except OSError:
            pass


def read_journal(path: Path) -> list[dict]:
    """The complete lines of one journal (a last line cut by a kill is dropped)."""
    out = []
    with open(path, "rb") as f:
        for raw in f:
            if not raw.endswith(b"\n"):
                break
            out.append(json.loads(raw))
    return out


def merge(paths: list[Path], t0: float, time_scale: float) -> tuple[Record, ...]:
    """Every journal's records as one history: virtual time ``(w - t0) / time_scale``
    (clamped at 0), ordered by (time, journal order in ``paths``, line), ``seq`` numbered."""
    rows = []
    for j, path in enumerate(paths):
        for i, line in enumerate(read_journal(path)):
            t = max(0.0, (line["w"] - t0) / time_scale)
            rows.append((t, j, i, line))
    rows.sort(key=lambda r: r[:3])
    out = []
    for seq, (t, _j, _i, line) in enumerate(rows):
        out.append(Record(t, seq, line["k"], line["a"], **{k: line[k] for k in _FIELDS if k in line}))
    return tuple(out)
