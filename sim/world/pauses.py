"""Process pauses as they open and close: what is recorded, and what a resumed worker finds.

A pause is a window of the switchboard (``acksim.world.links``) during which its worker does
nothing at all (a stop-the-world GC, SIGSTOP, a blocked event loop [KLEPP][B-STALL]). Here it
is recorded: "worker_paused" when it opens, with each loan the worker holds, and
"worker_resumed" when it closes, saying of each loan whether its lease is still held
("lease_held"), lapsed but not taken back ("lease_lapsed") or moved on ("lease_moved": taken
back, redelivered, acked by another, gone) — the stale-lease case the hazard
``paused_worker_resumed_after_lease_moved`` counts. A worker whose process died during the
pause resumes nothing. Times are virtual seconds.
"""

from __future__ import annotations


def pause_at(links, name: str, at_s: float, duration_s: float):
    """SimPy process: open the scheduled pause of worker ``name`` at ``at_s``."""
    yield links.world.env.timeout(at_s - links.world.env.now)
    open_window(links, name, duration_s)


def open_window(links, name: str, duration_s: float) -> None:
    """Record "worker_paused" now with each loan worker ``name`` holds, and close the window
    ``duration_s`` later (a timer set before the worker waits on it, so the resumption is
    recorded before the worker's first step after it)."""
    world = links.world
    loans = [(m.id, m.receipt) for m in world.queue.loans.values() if m.holder == name]
    for mid, _receipt in loans or [(None, 0)]:
        record(world, "worker_paused", name, mid, f"{duration_s:g} s")
    opened = world.env.now
    timer = world.env.timeout(duration_s, "pause")
    timer.callbacks.append(lambda _e: close_window(links, name, loans, opened))


def close_window(links, name: str, loans: list[tuple[int, int]], opened: float) -> None:
    """Record "worker_resumed" for each loan held when the pause opened at ``opened``."""
    world = links.world
    q, now = world.queue, world.env.now
    if links.crashed_at.get(name, -1.0) >= opened:
        return  # the paused process died meanwhile: nothing resumes
    if not loans:
        record(world, "worker_resumed", name, None, "")
    for mid, receipt in loans:
        m = q.messages[mid]
        if m.state != "in_flight" or m.receipt != receipt:
            why = "lease_moved"
        elif m.lease_until <= now:
            why = "lease_lapsed"
        else:
            why = "lease_held"
        record(world, "worker_resumed", name, mid, why)
    q.dispatch()  # its waiting receive may be served now


def record(world, kind: str, name: str, mid: int | None, detail: str) -> None:
    """Append one pause record of worker ``name`` (about message ``mid``, or none)."""
    job = world.queue.messages[mid].job if mid is not None else None
    world.history.record(kind, name, message_id=mid, account_id=job.account_id if job else None,
                         cleanup_version=job.cleanup_version if job else None, detail=detail)
