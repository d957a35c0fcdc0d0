"""Which stretch of a run the worker timeline shows, chosen deterministically.

A whole run is too long to read attempt by attempt, so the swimlane shows a window (ten
virtual minutes by default) where the interesting things happen: a crash and the redelivery it
causes. Preference, first match wins:

1. the first crash whose message is redelivered within 80% of the window (crash and
   redelivery centred in the window);
2. the first crash followed by any redelivery within 80% of the window (likewise centred);
3. the first crash; 4. the first redelivery (each a tenth of the window from the left edge);
5. the busiest window: the first one holding the most attempt starts.

The window is then moved inside ``[t_min, t_max]``; a run shorter than the window is shown whole.
Last, ``trimmed`` cuts a window to what happens in it (its first and last attempt start, crash or
redelivery, with a margin of ``_MARGIN`` of the width): no empty stretch before the first
deadline or after the last delivery.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

WINDOW_S = 600.0
_NEAR = 0.8  # a redelivery is "near" a crash within this share of the window
_LEAD = 0.1  # a lone event sits this share of the window from the left edge
_MARGIN = 0.03  # what a trimmed window keeps around its first and last event, as a share of the width


def choose_window(
    crashes: Sequence[tuple[float, int | None]],
    redeliveries: Sequence[tuple[float, int | None]],
    starts: Sequence[float],
    t_min: float,
    t_max: float,
    width: float = WINDOW_S,
) -> tuple[float, float]:
    """``(start, end)`` in virtual seconds. ``crashes`` and ``redeliveries`` are
    ``(time, message_id or None)`` sorted by time; ``starts`` the attempt start times, any order.
    Raises ValueError for a width that is not positive."""
    if not width > 0:
        raise ValueError(f"window width must be positive, got {width!r}")
    if t_max - t_min <= width:
        return t_min, max(t_max, t_min + 1.0)
    start = _around_crash(crashes, redeliveries, width)
    if start is None and crashes:
        start = crashes[0][0] - _LEAD * width
    if start is None and redeliveries:
        start = redeliveries[0][0] - _LEAD * width
    if start is None:
        start = _busiest(np.sort(np.asarray(starts, dtype=float)), width, t_min)
    start = min(max(start, t_min), t_max - width)
    return start, start + width


def trimmed(start: float, end: float, crashes, redeliveries, starts) -> tuple[float, float]:
    """The window ``(start, end)`` (virtual s, as ``choose_window`` gives it) cut to its first
    and last event (crash, redelivery or attempt start, as ``choose_window`` takes them), with
    a margin of ``_MARGIN`` of its width; unchanged when it holds none, or when the cut would
    leave less than a second."""
    inside = [t for t in (*(c for c, _ in crashes), *(r for r, _ in redeliveries), *starts) if start <= t <= end]
    if not inside:
        return start, end
    margin = _MARGIN * (end - start)
    lo, hi = max(start, min(inside) - margin), min(end, max(inside) + margin)
    return (lo, hi) if hi - lo >= 1.0 else (start, end)


def _around_crash(crashes, redeliveries, width: float) -> float | None:
    if not crashes or not redeliveries:
        return None
    near = _NEAR * width
    by_message: dict[int, list[float]] = {}
    for t, mid in redeliveries:
        if mid is not None:
            by_message.setdefault(mid, []).append(t)
    for c, mid in crashes:  # the crash's own message comes back
        times = by_message.get(mid) if mid is not None else None
        if times:
            i = int(np.searchsorted(times, c, side="left"))
            if i < len(times) and times[i] - c <= near:
                return (c + times[i]) / 2 - width / 2
    c_times = np.asarray([c for c, _ in crashes], dtype=float)
    r_times = np.asarray([r for r, _ in redeliveries], dtype=float)
    idx = np.searchsorted(r_times, c_times, side="left")
    ok = idx < r_times.size
    gaps = np.full(c_times.size, np.inf)
    gaps[ok] = r_times[idx[ok]] - c_times[ok]
    hits = np.flatnonzero(gaps <= near)
    if hits.size == 0:
        return None
    c = c_times[hits[0]]
    return (c + r_times[idx[hits[0]]]) / 2 - width / 2


def _busiest(starts: np.ndarray, width: float, t_min: float) -> float:
    if starts.size == 0:
        return t_min
    inside = np.searchsorted(starts, starts + width, side="left") - np.arange(starts.size)
    return float(starts[int(np.argmax(inside))])
