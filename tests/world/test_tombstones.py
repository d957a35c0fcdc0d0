"""Tombstones of trimmed stream entries, with exact virtual times: a trimmed pending entry comes
back as an id with no payload, its holder can still ack it, a tombstone is discarded (counted
missing), not acked."""

from helpers.queues import JOB, consumer, make, publish


def test_a_trimmed_pending_entry_comes_back_as_a_tombstone():
    env, h, q = make(visibility_timeout_s=60, max_length=1, tombstones=True)
    publish(q)
    got = []

    def second():
        yield env.timeout(1)
        got.append((yield q.receive("w2")))
    env.process(consumer(env, q, "w1"))  # holds entry 1, never acks
    env.process(second())
    env.run(until=10)
    q.publish(JOB, 0.0, 0.0, "scheduler", 100)  # entry 2 at 10: the cap of 1 trims entry 1's body
    env.run(until=100)
    assert [(r.time, r.kind, r.actor, r.message_id, r.detail) for r in h.records
            if r.kind in ("delivered", "trimmed", "visibility_expired")] == [
        (0, "delivered", "w1", 1, ""), (10, "trimmed", "queue", 1, "in_flight:tombstone"),
        (10, "delivered", "w2", 2, ""), (60, "visibility_expired", "queue", 1, ""),
        (70, "visibility_expired", "queue", 2, "")]
    # nobody waits at 60; the next receive gets entry 1 as an id with no payload
    env.process(consumer(env, q, "w3"))
    env.run(until=101)
    tomb = [r for r in h.records if r.kind == "delivered" and r.detail == "tombstone"]
    assert [(r.time, r.actor, r.message_id, r.receive_count) for r in tomb] == [(100, "w3", 1, 2)]


def test_the_holder_of_a_trimmed_entry_can_still_ack_it_and_a_tombstone_is_discarded_not_acked():
    from acksim.world.queue.tombstones import discard

    env, h, q = make(visibility_timeout_s=60, max_length=1, tombstones=True)
    publish(q)
    got = []

    def hold(name):
        got.append((yield q.receive(name)))
    env.process(hold("w1"))
    env.run(until=5)
    q.publish(JOB, 0.0, 0.0, "scheduler", 100)  # entry 2 trims entry 1, in flight with w1
    assert q.ack(got[0], "w1")  # w1 had the payload: its ack deletes the id
    env.process(hold("w2"))
    env.run(until=6)  # entry 2 to w2 at 5
    q.publish(JOB, 0.0, 0.0, "scheduler", 100)  # entry 3 trims entry 2, in flight with w2
    env.run(until=70)  # entry 2's lease lapses at 66, after entry 3 was queued
    env.process(hold("w3"))
    env.process(hold("w4"))
    env.run(until=71)
    tomb = got[-1]
    assert (tomb.message_id, tomb.tombstone, tomb.receive_count) == (2, True, 2)
    assert discard(q, tomb, "w4")  # counted missing, removed from the pending list: no "acked"
    assert [(r.time, r.kind, r.actor, r.message_id, r.detail) for r in h.records if r.kind in (
        "trimmed", "acked", "tombstone_discarded") or (r.kind == "delivered" and r.message_id == 2)] == [
        (5, "trimmed", "queue", 1, "in_flight:tombstone"), (5, "acked", "w1", 1, ""),
        (5, "delivered", "w2", 2, ""), (6, "trimmed", "queue", 2, "in_flight:tombstone"),
        (70, "delivered", "w4", 2, "tombstone"), (71, "tombstone_discarded", "w4", 2, "missing")]
