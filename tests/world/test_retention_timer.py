"""Retention with one timer at a time: every message still expires ``retention_s`` after it
was sent, to the exact virtual second, and an acked message costs no timer."""

import random
from datetime import datetime, timezone

import simpy

from acksim.history import History
from acksim.model.job import CleanupJob
from acksim.scenario import Queue as QueueConfig
from acksim.world.queue.core import Queue

JOB = CleanupJob("acct-1", 1, datetime(2026, 1, 1, tzinfo=timezone.utc))


def test_messages_sent_apart_expire_apart_and_an_acked_one_is_skipped():
    env = simpy.Environment()
    h = History(lambda: env.now)
    q = Queue(env, h, QueueConfig(visibility_timeout_s=1000, retention_s=60), random.Random(0))
    received = []

    def producer():
        for _ in range(3):
            q.publish(JOB, env.now, 0.0, "scheduler", 100)
            yield env.timeout(10.1)

    def consumer():
        d = yield q.receive("w1")  # message 1, kept in flight
        received.append(d)
        d = yield q.receive("w2")  # message 2, acked at once
        q.ack(d, "w2")

    env.process(producer())
    env.process(consumer())
    env.run(until=61.0)
    timers = [t for t, _prio, _eid, ev in env._queue if ev.value == "_retention_due"]
    assert timers == [80.2]  # one retention timer pending (message 3's; 2 was acked), not two
    env.run(until=200)
    assert [(r.time, r.kind, r.message_id, r.detail) for r in h.records if r.kind == "retention_expired"] == [
        (60.0, "retention_expired", 1, "in_flight"), (80.2, "retention_expired", 3, "visible")]
    assert q.idle
