"""Recovery sweeps: how some systems rescue a dead consumer's deliveries, not by a timer per
loan but by a sweep that runs only at certain moments.

Like a lost-property office that is opened only when a new clerk starts a shift (or, in the
other variant, when enough customers come by): a dead consumer's deliveries wait there until
the office opens, and then only those whose owner has been gone long enough are handed back.

``queue.recovery_sweep`` names the moment:

- "process_start": when a consumer process starts (the first receive of a worker, at its
  first start and after every crash, kill or deployment), and at most once per
  ``recovery_interval_s``. Sidekiq Pro's super_fetch: on process startup it looks for
  orphaned jobs if the dead process's heartbeat has expired (60 s) and an hour has passed
  since the last orphan check [SK-REL].
- "traffic": at a broker operation (a delivery or an ack), at most once per
  ``recovery_interval_s``: a maintenance pass run from the consumers' own loop, so its
  frequency follows the traffic. RQ's worker runs its maintenance (cleaning the started-job
  registry of abandoned jobs) on first start and then every 10 minutes, checked as its loop
  turns [RQ-WORKER].

Either way a sweep hands back (makes visible again: "visibility_expired" with detail
"recovered:<moment>", and ":late" when the loan was older than ``visibility_timeout_s``)
every loan whose holder died at least ``heartbeat_ttl_s`` before (its heartbeat expired),
and records the sweep ("recovery_sweep", detail "<moment> recovered=N"). A loan of a live
consumer is never taken. With the redelivery "claim" and no claimer (``sweep_interval_s``
0) the sweep is the only way back, and recovery time runs into hours: until the next
process start after the interval, or the next traffic. Times are virtual seconds. ``q`` is the
``Queue`` (``acksim.world.queue.core``), which imports this module: named, not imported.
"""

from __future__ import annotations

from acksim.world.queue.delivery_limit import returned


class RecoverySweeps:
    """The recovery sweeps of one queue ``q`` (its ``config.recovery_sweep`` is not "none").

    The queue calls ``receiving`` at every receive, ``lost`` when a consumer process dies and
    ``traffic`` at every delivery and ack; a sweep that is due is run at the same virtual
    instant, after the operation that triggered it (a zero-delay timer, so it never runs
    inside the queue's own dispatch)."""

    def __init__(self, q) -> None:
        self.q = q
        self.moment = q.config.recovery_sweep
        self._alive: set[str] = set()  # consumers whose current process has received
        self._orphaned_at: dict[int, tuple[int, float]] = {}  # message id -> (receipt, death time)
        self._last: float | None = None  # the last sweep's time
        self._pending = False  # a sweep is scheduled for this instant

    def receiving(self, consumer: str) -> None:
        """``consumer`` asks for a delivery: the first ask of a new process is a process start."""
        if consumer in self._alive:
            return
        self._alive.add(consumer)
        if self.moment == "process_start":
            self._maybe_sweep(consumer)

    def lost(self, consumer: str) -> None:
        """``consumer``'s process died now: its loans' holder stops heartbeating."""
        self._alive.discard(consumer)
        now = self.q.env.now
        for msg in self.q.loans.values():
            if msg.holder == consumer and msg.id not in self._orphaned_at:
                self._orphaned_at[msg.id] = (msg.receipt, now)

    def traffic(self, actor: str) -> None:
        """A delivery or an ack by ``actor`` (a consumer): a "traffic" sweep may be due."""
        if self.moment == "traffic":
            self._maybe_sweep(actor)

    def _maybe_sweep(self, actor: str) -> None:
        now = self.q.env.now
        if self._pending or (self._last is not None and now - self._last < self.q.config.recovery_interval_s):
            return
        self._pending = True
        self._last = now
        self.q.at(0.0, self._sweep, actor)

    def _sweep(self, actor: str) -> None:
        q, cfg = self.q, self.q.config
        now = q.env.now
        self._pending = False
        due = []
        for mid, (receipt, died) in sorted(self._orphaned_at.items()):
            msg = q.messages[mid]
            if msg.state != "in_flight" or msg.receipt != receipt:
                del self._orphaned_at[mid]  # acked, expired, redelivered meanwhile
            elif now - died >= cfg.heartbeat_ttl_s:
                due.append(msg)
        for msg in due:
            del self._orphaned_at[msg.id]
            late = ":late" if now - msg.received_at > cfg.visibility_timeout_s else ""
            q.log("visibility_expired", "queue", msg, msg.receive_count, f"recovered:{self.moment}{late}")
            if not returned(q, msg):  # a lost worker's delivery requeued is a return (RMQ-QQ)
                q.make_visible(msg, head=cfg.requeue_at_head)
        q.history.record("recovery_sweep", actor, detail=f"{self.moment} recovered={len(due)}")
