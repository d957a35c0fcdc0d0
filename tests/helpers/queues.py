"""A queue on its own, for exact virtual traces: one job, a queue on a fresh SimPy environment,
a scripted consumer, and the trace of what the queue recorded."""

import random
from datetime import datetime, timezone

import simpy

from acksim.history import History
from acksim.model.job import CleanupJob
from acksim.scenario import Queue as QueueConfig
from acksim.world.queue.core import Queue

JOB = CleanupJob("acct-1", 1, datetime(2026, 1, 1, tzinfo=timezone.utc))


def make(**cfg):
    env = simpy.Environment()
    history = History(lambda: env.now)
    q = Queue(env, history, QueueConfig(**cfg), random.Random(0))
    return env, history, q


def trace(history, *kinds):
    wanted = kinds or None
    return [(r.time, r.kind, r.actor, r.receive_count) for r in history.records
            if wanted is None or r.kind in wanted]


def consumer(env, q, name, hold_s=None, action="ack", start=0.0, times=1):
    """Receive ``times`` deliveries; for each wait ``hold_s`` then ack/nack (None: keep it)."""
    if start:
        yield env.timeout(start)
    for _ in range(times):
        d = yield q.receive(name)
        if hold_s is None:
            continue
        yield env.timeout(hold_s)
        if action == "ack":
            q.ack(d, name)
        elif action == "nack":
            q.nack(d, name, q.backoff(d.receive_count))


def publish(q, n=1, delay=0.0):
    """Publish ``n`` copies of ``JOB`` from the scheduler, each ``delay`` s later (deadline 100)."""
    return [q.publish(JOB, 0.0, delay, "scheduler", 100) for _ in range(n)]
