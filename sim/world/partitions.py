"""Partitions as they open and close: a worker cut off from the queue or its database.

The switchboard (``acksim.world.links``) answers, instant by instant, whether a worker can
reach the queue and the database; here a partition window is recorded ("partition_started",
"partition_healed") and, for a cut from the queue, a broker that requeues on consumer death
takes the worker's loans back once it notices: after ``queue.disconnect_detect_s``, RabbitMQ's
heartbeat timeout [RMQ-HB][RMQ-CONF]. Times are virtual seconds.
"""

from __future__ import annotations

from acksim.world.queue.leases import disconnected


def window(links, name: str, between: str, at_s: float, duration_s: float):
    """SimPy process of one partition of worker ``name`` from ``between`` ("queue" | "db")
    over ``[at_s, at_s + duration_s)``."""
    world = links.world
    env, q = world.env, world.queue
    if at_s > env.now:
        yield env.timeout(at_s - env.now)
    world.history.record("partition_started", name, detail=f"{between} {duration_s:g} s")
    detect = q.config.disconnect_detect_s
    if between == "queue" and q.config.redelivery == "consumer_death" and detect < duration_s:
        yield env.timeout(detect)
        for m in [m for m in q.loans.values() if m.holder == name]:
            disconnected(q, m, m.receipt)
        yield env.timeout(duration_s - detect)
    else:
        yield env.timeout(duration_s)
    world.history.record("partition_healed", name, detail=between)
    q.dispatch()
