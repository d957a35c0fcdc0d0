"""Execution time limits: an attempt hard-killed after ``workers.execution_timeout_s``.

A time limit is a stopwatch started when the worker takes a delivery up: Celery's hard
``time_limit`` kills the pool child running the task, Temporal's Start-To-Close timeout ends
the activity attempt [T-AF], Airflow's ``execution_timeout`` fails the task [A-CFG], Cloud
Tasks cancels a request past its ``dispatch_deadline`` [GCT-TASK]. When the stopwatch runs
out before the worker is done, the worker is interrupted wherever it is (a store call, the
work, a pause, the ack) with the crash kind "execution_timeout": its transaction rolls back,
its delivery is handled as ``queue.on_worker_lost`` says (Celery acks a timed-out late-ack
task [C-CONF]; otherwise its lease lapses) and it restarts after ``workers.restart_delay_s``.
The crash is a failed execution, so it counts in recovery time.
"""

from __future__ import annotations

import simpy

PHASE = "execution_timeout"


class Stopwatch:
    """One attempt's time limit; ``stop()`` when the attempt ends in time."""

    __slots__ = ("running",)

    def __init__(self) -> None:
        self.running = True

    def stop(self) -> None:
        """The attempt finished (or crashed) before its limit: the stopwatch does nothing."""
        self.running = False


def start(world, process: simpy.Process) -> Stopwatch | None:
    """Start the time limit of the attempt ``process`` (a worker) is beginning now; None when
    ``workers.execution_timeout_s`` is 0 (no limit)."""
    limit = world.scenario.workers.execution_timeout_s
    if not limit:
        return None
    watch = Stopwatch()
    world.env.process(_expire(world, process, limit, watch))
    return watch


def stop(watch: Stopwatch | None) -> None:
    """Stop ``watch`` (None: no limit)."""
    if watch is not None:
        watch.stop()


def _expire(world, process: simpy.Process, limit: float, watch: Stopwatch):
    yield world.env.timeout(limit)
    if watch.running and process.is_alive:
        watch.running = False
        process.interrupt((PHASE, world.scenario.workers.restart_delay_s))
