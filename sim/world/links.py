"""Links: which workers can reach the queue and the database, instant by instant.

Jepsen's basic faults cut a worker off in three ways. A *pause* (a stop-the-world GC, SIGSTOP,
an event loop blocked by CPU work [B-STALL]) freezes the whole process: no heartbeats,
receives, store calls or acks until it resumes exactly where it was, with a lease that may
have moved on to another worker. A *partition* from the queue lets processing go on against
the database while receives, heartbeats and acks fail [C-CONF: late-ack tasks keep running on
connection loss]; a partition from the database fails the store calls while the queue is
reachable. A *broker restart* (``acksim.world.queue.broker``) cuts everyone off the queue. What is
recorded as a pause or a partition opens and closes is ``acksim.world.pauses`` and
``acksim.world.partitions``.

Like a telephone exchange's switchboard: the faults are the schedule of unplugged lines
(windows ``[start, end)`` of virtual seconds, fixed in advance, so what a worker sees at an
instant never depends on which SimPy event ran first at that instant); the worker asks the
board before each named step of an attempt (``hold``, ``at_call``, ``at_commit``,
``queue_reachable``). ``install`` builds a board only when the scenario has one of these
faults: without them the world runs exactly as before. ``world`` is the ``World``
(``acksim.world.core``), which builds the board: named, not imported.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from acksim.world import partitions, pauses

if TYPE_CHECKING:
    from acksim.world.queue.message import Delivery


class StoreUnreachable(Exception):
    """Raised in the worker (never in the processor) at a store call or commit it makes while
    partitioned from the database: the attempt is abandoned, rolled back and nacked."""


class Links:
    """The switchboard of one world: pause windows per worker, partition windows per (worker,
    "queue" | "db"), the broker's down windows (``acksim.world.queue.broker.Broker``). Times are
    virtual seconds; a window ``[start, end)`` holds ``start`` and not ``end``."""

    def __init__(self, world) -> None:
        f = world.scenario.faults
        self.world = world
        self.frozen: dict[str, list[tuple[float, float]]] = {}
        for p in f.pauses:
            if p.at_s is not None:
                self.frozen.setdefault(f"worker-{p.worker}", []).append((p.at_s, p.at_s + p.duration_s))
        self.cut: dict[tuple[str, str], list[tuple[float, float]]] = {}
        for c in f.partitions:
            self.cut.setdefault((f"worker-{c.worker}", c.between), []).append((c.at_s, c.at_s + c.duration_s))
        self.call_pauses = {(p.delivery, p.call): p.duration_s for p in f.pauses if p.delivery is not None}
        self.broker = None  # acksim.world.queue.broker.Broker, when the scenario restarts it
        self.crashed_at: dict[str, float] = {}  # worker -> its last crash (a pause ends with the process)

    # --- questions a worker (or the queue) asks -----------------------------------------------
    def frozen_until(self, name: str) -> float:
        """The end of the pause holding worker ``name`` now, or now when it is not paused."""
        now = t = self.world.env.now
        moved = True
        while moved:  # overlapping or touching pauses freeze until the last one ends
            moved = False
            for lo, hi in self.frozen.get(name, ()):
                if lo <= t < hi:
                    t, moved = hi, True
        return max(t, now)

    def _is_cut(self, name: str, between: str) -> bool:
        now = self.world.env.now
        return any(lo <= now < hi for lo, hi in self.cut.get((name, between), ()))

    def queue_reachable(self, name: str) -> bool:
        """Whether worker ``name`` can reach the queue now: the broker is up, the worker is not
        paused and not partitioned from it."""
        if self.broker is not None and self.broker.down():
            return False
        return self.frozen_until(name) <= self.world.env.now and not self._is_cut(name, "queue")

    def why_unreachable(self, name: str) -> str:
        """Why ``queue_reachable(name)`` is False: "broker_down", "paused" or "partition"."""
        if self.broker is not None and self.broker.down():
            return "broker_down"
        return "paused" if self.frozen_until(name) > self.world.env.now else "partition"

    # --- named steps of an attempt ------------------------------------------------------------
    def hold(self, name: str):
        """SimPy sub-process: while worker ``name`` is paused, wait for the pause to end."""
        env = self.world.env
        while (until := self.frozen_until(name)) > env.now:
            yield env.timeout(until - env.now)

    def at_call(self, name: str, delivery: "Delivery", call: int):
        """SimPy sub-process before store call ``call`` of ``delivery``: a pause scheduled at
        this call starts now; a paused worker waits; raises ``StoreUnreachable`` when the
        worker is partitioned from the database."""
        duration = self.call_pauses.pop((delivery.number, call), None)  # once, not at each retry
        if duration:
            self.pause(name, duration)
        yield from self.hold(name)
        if self._is_cut(name, "db"):
            raise StoreUnreachable(f"store call {call}")

    def at_commit(self, name: str):
        """SimPy sub-process before a commit: wait out a pause; raise ``StoreUnreachable`` when
        partitioned from the database."""
        yield from self.hold(name)
        if self._is_cut(name, "db"):
            raise StoreUnreachable("commit")

    def ack_failed(self, name: str, delivery: "Delivery", what: str = "ack") -> None:
        """Record that worker ``name``'s ack (or nack: ``what``) of ``delivery`` did not reach
        the queue; the message stays in flight until its lease lapses."""
        self.world.history.record(
            "ack_failed", name, message_id=delivery.message_id, account_id=delivery.job.account_id,
            cleanup_version=delivery.job.cleanup_version, receive_count=delivery.receive_count,
            deadline=delivery.deadline_s, detail=f"{what}:{self.why_unreachable(name)}")

    # --- the windows as they open and close ---------------------------------------------------
    def pause(self, name: str, duration_s: float) -> None:
        """Freeze worker ``name`` from now for ``duration_s`` (a pause at a store call)."""
        now = self.world.env.now
        self.frozen.setdefault(name, []).append((now, now + duration_s))
        pauses.open_window(self, name, duration_s)

    def crashed(self, name: str) -> None:
        """Worker ``name``'s process ended (a crash, a kill): the pauses holding it end too, so
        the process that restarts is not frozen, and no resumption is recorded."""
        now = self.world.env.now
        self.crashed_at[name] = now
        self.frozen[name] = [(lo, min(hi, now)) if lo <= now < hi else (lo, hi) for lo, hi in self.frozen.get(name, ())]

    def start(self) -> None:
        """Start the processes that record the scheduled windows as they open and close."""
        env, f = self.world.env, self.world.scenario.faults
        for p in sorted((p for p in f.pauses if p.at_s is not None), key=lambda p: (p.at_s, p.worker)):
            env.process(pauses.pause_at(self, f"worker-{p.worker}", p.at_s, p.duration_s))
        for c in sorted(f.partitions, key=lambda c: (c.at_s, c.worker, c.between)):
            env.process(partitions.window(self, f"worker-{c.worker}", c.between, c.at_s, c.duration_s))


def install(world) -> Links | None:
    """A switchboard for ``world`` when its scenario has pauses, partitions or broker restarts
    (wired into its queue: receives, heartbeats and publishes ask it), else None."""
    f = world.scenario.faults
    if not (f.pauses or f.partitions or f.broker_restarts):
        return None
    links = Links(world)
    world.queue.reachable = links.queue_reachable
    if f.broker_restarts:
        from acksim.world.queue.broker import Broker

        links.broker = Broker(world)
        world.queue.broker = links.broker
    return links


def window_ends(faults) -> list[float]:
    """The ends of every scheduled pause, partition and broker restart window (virtual s)."""
    return [*(p.at_s + p.duration_s for p in faults.pauses if p.at_s is not None),
            *(c.at_s + c.duration_s for c in faults.partitions),
            *(r.at_s + r.down_s for r in faults.broker_restarts)]
