"""A worker's pause in a live run: SIGSTOP, SIGCONT, and what the history says of its lease.

A pause stops the worker's process for real (``acksim.live.faults``) and records it as the
simulation does (``acksim.world.pauses``): "worker_paused" with the delivery the worker
holds, and "worker_resumed" with what became of that lease meanwhile, read from the journals
of every process: "lease_moved" (delivered again, or ended by another worker),
"lease_lapsed" (its visibility timeout ran out on the wall clock) or "lease_held". A worker
whose process died during the pause resumes nothing.

These are functions over the run ``run`` (``LiveRun``, ``acksim.live.run``: named, not
imported): its ``workers`` (``acksim.live.worker_slots``), its ``ledger`` of the messages
(``acksim.live.ledger``), its ``journal``, ``env``, ``at``, ``kind`` and ``transport``.
Durations are virtual seconds; delivery times (``held``: wall s, actor, receive count) are
wall seconds.
"""

from __future__ import annotations

import time

from acksim.live.faults import pause, process_state, resume

STOP_WAIT_WALL_S = 0.5  # a pause's SIGSTOP: wall seconds to wait for the process to show as stopped


def pause_worker(run, slot, duration_s: float) -> None:
    """SIGSTOP worker ``slot`` now for ``duration_s`` virtual s; record "worker_paused" with the
    delivery it holds (from its journal, read once it has stopped), as the simulation's."""
    p = slot.proc
    if p is None or not p.is_alive() or not pause(p.pid):
        return  # down already (a crash, a deployment): nothing to pause, as in the simulation
    deadline = time.monotonic() + STOP_WAIT_WALL_S
    while process_state(p.pid) not in ("T", "") and time.monotonic() < deadline:
        time.sleep(0.001)
    run.workers.paused[p.pid] = run.workers.paused.get(p.pid, 0) + 1
    run.ledger.tail()  # every line it wrote before it stopped
    mid = run.ledger.holding.get(slot.name)
    held = next((d for d in reversed(run.ledger.deliveries_seen.get(mid, [])) if d[1] == slot.name), None)
    mid = mid if held is not None else None
    _record(run, "worker_paused", slot.name, mid, f"{duration_s:g} s")
    run.at(run.env.now + duration_s, ("resume", slot, p.pid, mid, held))


def resume_worker(run, slot, pid: int, mid: int | None, held) -> None:
    """The end of a pause: record "worker_resumed" (unless the process died meanwhile: then
    nothing resumes, as in the simulation), then SIGCONT, unless another pause still holds it.
    The lease of ``mid`` (delivered at ``held``) is described by ``lease_detail``."""
    paused = run.workers.paused
    open_pauses = paused.get(pid, 0) - 1
    if open_pauses > 0:
        paused[pid] = open_pauses
    else:
        paused.pop(pid, None)
    alive = slot.proc is not None and slot.proc.pid == pid and slot.proc.is_alive()
    if alive:
        run.ledger.tail()
        why = "" if mid is None else lease_detail(run, mid, held)
        _record(run, "worker_resumed", slot.name, mid, why)
    if open_pauses <= 0:
        resume(pid)


def lease_detail(run, mid: int, held) -> str:
    """What became of the lease of message ``mid`` delivered at ``held`` (wall s, actor,
    receive count): "lease_moved" when the journals show a later delivery of it or its end
    by another worker, "lease_lapsed" when its visibility timeout (Redis: the claim's min
    idle) has passed on the wall clock without that, else "lease_held" (RabbitMQ: always, it
    has no visibility timeout; a connection the broker closed would show at the redelivery)."""
    wall, actor, _count = held
    later = [d for d in run.ledger.deliveries_seen.get(mid, []) if d[0] > wall]
    if later or (mid in run.ledger.terminal and run.ledger.acked_by.get(mid) != actor):
        return "lease_moved"
    lapses = run.kind != "rabbitmq"
    if lapses and time.monotonic() - wall >= run.transport.visibility_s:
        return "lease_lapsed"
    return "lease_held"


def _record(run, kind: str, name: str, mid: int | None, detail: str) -> None:
    aid, version, _deadline = run.ledger.published[mid] if mid is not None else (None, None, None)
    run.journal.record(kind, name, message_id=mid, account_id=aid, cleanup_version=version, detail=detail)


__all__ = ["pause_worker", "resume_worker", "lease_detail"]
