"""The worker processes of a live run: one slot per worker, one process per incarnation.

Each of the scenario's ``workers.count`` workers has a slot ("worker-N") that holds its
current process. ``spawn`` starts the slot's next incarnation (a fork when the platform has
it), journaling to a file of its own (``<name>.<incarnation>.jsonl``); ``exited`` hands each
process that ended to the run's loop once, which schedules the restart; the processes a
pause stopped (SIGSTOP) are counted so they are resumed before the final kill, since a
stopped process does not die of SIGTERM. Wall seconds throughout.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from acksim.live.faults import resume
from acksim.live.worker import WorkerConfig, run_worker

JOIN_ALL_WALL_S = 10.0  # at the end: wall seconds the workers get to finish before the kill


@dataclass
class Slot:
    """One worker's place: ``name`` ("worker-N"), its current process (None before the first
    start), its ``incarnation`` (-1 before the first start), ``down_until`` (virtual s of the
    planned restart; None while it runs) and whether a deployment took it down."""

    name: str
    proc: object = None
    incarnation: int = -1
    down_until: float | None = None  # virtual s; None while running
    deploying: bool = False


class WorkerSlots:
    """The ``count`` worker slots of one live run. ``base``: the ``WorkerConfig`` fields every
    incarnation shares; ``journals``: the folder of the journals. ``stop`` is the event that
    tells every worker to finish; ``paused`` counts the open pauses of each stopped pid."""

    def __init__(self, count: int, base: dict, journals: Path) -> None:
        ctx = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn")
        self.ctx, self.deliveries, self.stop = ctx, ctx.Value("q", 0), ctx.Event()
        self.slots = [Slot(f"worker-{i}") for i in range(1, count + 1)]
        self.base, self.journals = base, journals
        self.paused: dict[int, int] = {}  # SIGSTOPped worker pid -> open pauses (resumed before a kill)

    def spawn(self, slot: Slot) -> None:
        """Start the next incarnation of ``slot``: it runs, nothing planned for it."""
        slot.incarnation += 1
        slot.down_until, slot.deploying = None, False
        path = self.journals / f"{slot.name}.{slot.incarnation:03d}.jsonl"
        cfg = WorkerConfig(name=slot.name, incarnation=slot.incarnation, journal=str(path), **self.base)
        slot.proc = self.ctx.Process(target=_worker_entry, args=(cfg, self.deliveries, self.stop),
                                     name=f"acksim-{slot.name}", daemon=True)
        slot.proc.start()

    def exited(self):
        """Each slot whose process ended since the last look, once, in slot order."""
        for slot in self.slots:
            p = slot.proc
            if p is None or p.exitcode is None or getattr(p, "_acksim_seen", False):
                continue
            p._acksim_seen = True
            yield slot

    def join_all(self) -> None:
        """Give the workers ``JOIN_ALL_WALL_S`` in all to finish, then kill what is left."""
        deadline = time.monotonic() + JOIN_ALL_WALL_S
        for slot in self.slots:
            p = slot.proc
            if p is not None:
                p.join(max(0.0, deadline - time.monotonic()))
        self.kill_all()

    def kill_all(self) -> None:
        """SIGKILL every worker still alive (a paused one resumed first)."""
        for pid in list(self.paused):
            resume(pid)  # a stopped process would not die of SIGTERM; resume before the kill
        self.paused = {}
        for slot in self.slots:
            p = slot.proc
            if p is not None and p.is_alive():
                os.kill(p.pid, signal.SIGKILL)
                p.join(5.0)


def _worker_entry(cfg, deliveries, stop) -> None:
    run_worker(cfg, deliveries, stop)


__all__ = ["Slot", "WorkerSlots"]
