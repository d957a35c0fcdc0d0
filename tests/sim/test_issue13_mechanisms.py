"""The queue and scheduler mechanisms of issue 13, one rule per test, with exact virtual
times: the quorum queue's delivery limit, ack by message id, recovery sweeps of a dead
consumer's deliveries, tombstones of trimmed entries, record-then-publish."""

from helpers.queues import JOB, consumer, make, trace


def publish(q, n=1, delay=0.0):
    return [q.publish(JOB, 0.0, delay, "scheduler", 100) for _ in range(n)]


def test_a_quorum_delivery_limit_ends_a_message_at_the_return_past_it():
    env, h, q = make(delivery_limit=2, nack_backoff_base_s=0, nack_backoff_max_s=0, max_receive_count=0)
    publish(q)
    env.process(consumer(env, q, "w1", hold_s=10, action="nack", times=5))
    env.run(until=100)
    # returned at 10 and 20 (within the limit), the third return at 30 passes it: 3 deliveries
    assert trace(h, "delivered", "nacked", "dead_lettered") == [
        (0, "delivered", "w1", 1), (10, "nacked", "w1", 1), (10, "delivered", "w1", 2),
        (20, "nacked", "w1", 2), (20, "delivered", "w1", 3), (30, "nacked", "w1", 3),
        (30, "dead_lettered", "queue", 3)]
    assert [r.detail for r in h.records if r.kind == "dead_lettered"] == ["delivery_limit"]


def test_a_delivery_limit_counts_lapsed_loans_and_lost_consumers_too():
    env, h, q = make(redelivery="consumer_death", visibility_timeout_s=1800, sweep_interval_s=60,
                     disconnect_detect_s=60, delivery_limit=1, on_exhaustion="drop", max_receive_count=0)
    publish(q)
    env.process(consumer(env, q, "w1"))  # keeps it: the ack timeout lapses at 1800
    env.process(consumer(env, q, "w2", start=1))
    env.run(until=1850)
    q.consumer_lost("w2")  # w2 received it at 1800; the broker notices 60 s later
    env.run(until=3000)
    assert trace(h, "delivered", "visibility_expired", "dropped") == [
        (0, "delivered", "w1", 1), (1800, "visibility_expired", "queue", 1), (1800, "delivered", "w2", 2),
        (1910, "visibility_expired", "queue", 2), (1910, "dropped", "queue", 2)]


def test_ack_by_receipt_rejects_the_first_runs_outdated_receipt():
    env, h, q = make(visibility_timeout_s=60)
    publish(q)
    env.process(consumer(env, q, "w1", hold_s=100))  # its lease lapses at 60
    env.process(consumer(env, q, "w2", start=1, hold_s=50))  # receives at 60, acks at 110
    env.run(until=300)
    assert [(r.time, r.kind, r.actor, r.receive_count, r.detail) for r in h.records
            if r.kind in ("delivered", "visibility_expired", "acked", "ack_stale")] == [
        (0, "delivered", "w1", 1, ""), (60, "visibility_expired", "queue", 1, ""), (60, "delivered", "w2", 2, ""),
        (100, "ack_stale", "w1", 1, "receipt_expired"), (110, "acked", "w2", 2, "")]


def test_ack_by_message_id_lets_the_first_run_to_finish_delete_it():
    env, h, q = make(visibility_timeout_s=60, ack_by="message_id")
    publish(q)
    env.process(consumer(env, q, "w1", hold_s=100))
    env.process(consumer(env, q, "w2", start=1, hold_s=50))
    env.run(until=300)
    # w1's ack at 100 deletes the message w2 holds; w2's own ack at 110 finds it gone
    assert [(r.time, r.kind, r.actor, r.receive_count, r.detail) for r in h.records
            if r.kind in ("delivered", "visibility_expired", "acked", "ack_stale")] == [
        (0, "delivered", "w1", 1, ""), (60, "visibility_expired", "queue", 1, ""), (60, "delivered", "w2", 2, ""),
        (100, "acked", "w1", 1, "by_id"), (110, "ack_stale", "w2", 2, "deleted")]
    assert q.idle


def sweeps(h):
    return [(r.time, r.kind, r.actor, r.receive_count, r.detail) for r in h.records
            if r.kind in ("delivered", "visibility_expired", "recovery_sweep")]


def test_a_process_start_sweep_recovers_an_orphan_only_after_the_interval():
    env, h, q = make(redelivery="claim", visibility_timeout_s=300, recovery_sweep="process_start",
                     recovery_interval_s=3600, heartbeat_ttl_s=60)
    publish(q)
    env.process(consumer(env, q, "w1"))
    env.run(until=10)
    q.consumer_lost("w1")  # dies holding it at 10
    env.process(consumer(env, q, "w1", start=30))    # restarts at 40: within the hour, no sweep
    env.process(consumer(env, q, "w2", start=3690))  # starts at 3700: the next orphan check
    env.run(until=5000)
    assert sweeps(h) == [
        (0, "delivered", "w1", 1, ""), (0, "recovery_sweep", "w1", None, "process_start recovered=0"),
        (3700, "visibility_expired", "queue", 1, "recovered:process_start:late"),  # 3700 s on a 300 s lease
        (3700, "delivered", "w1", 2, ""), (3700, "recovery_sweep", "w2", None, "process_start recovered=1")]


def test_a_sweep_leaves_an_orphan_whose_heartbeat_has_not_expired():
    env, h, q = make(redelivery="claim", visibility_timeout_s=300, recovery_sweep="process_start",
                     recovery_interval_s=0, heartbeat_ttl_s=60)
    publish(q)
    env.process(consumer(env, q, "w1"))
    env.run(until=10)
    q.consumer_lost("w1")
    env.process(consumer(env, q, "w1", start=30))   # 40: dead for 30 s < 60 s, left alone
    env.process(consumer(env, q, "w2", start=100))  # 110: dead for 100 s, recovered (not late: 110 < 300)
    env.run(until=500)
    assert sweeps(h)[2:] == [
        (40, "recovery_sweep", "w1", None, "process_start recovered=0"),
        (110, "visibility_expired", "queue", 1, "recovered:process_start"),
        (110, "delivered", "w1", 2, ""), (110, "recovery_sweep", "w2", None, "process_start recovered=1")]


def test_a_traffic_sweep_waits_for_the_next_broker_operation():
    env, h, q = make(redelivery="claim", visibility_timeout_s=300, recovery_sweep="traffic",
                     recovery_interval_s=600, heartbeat_ttl_s=60)
    publish(q)
    publish(q, delay=1000)  # the next traffic: its delivery at 1000
    env.process(consumer(env, q, "w1"))
    env.process(consumer(env, q, "w2", start=1, times=3))
    env.run(until=10)
    q.consumer_lost("w1")
    env.run(until=5000)
    assert [(r.time, r.kind, r.actor, r.message_id, r.detail) for r in h.records
            if r.kind in ("delivered", "visibility_expired", "recovery_sweep")] == [
        (0, "delivered", "w1", 1, ""), (0, "recovery_sweep", "w1", None, "traffic recovered=0"),
        (1000, "delivered", "w2", 2, ""),
        (1000, "visibility_expired", "queue", 1, "recovered:traffic:late"),
        (1000, "recovery_sweep", "w2", None, "traffic recovered=1"),
        (1000, "delivered", "w2", 1, "")]


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
    from acksim.world.tombstones import discard

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


def test_the_new_hazard_windows_are_judged_from_the_history_alone():
    from acksim.history import Record
    from acksim.judges.hazards import HAZARDS, hazards_hit

    late = [Record(3700.0, 0, "visibility_expired", "queue", 1, detail="recovered:process_start:late")]
    in_time = [Record(110.0, 0, "visibility_expired", "queue", 1, detail="recovered:process_start")]
    tomb = [Record(360.0, 0, "delivered", "worker-1", 1, detail="tombstone")]
    assert [name for name, _ in HAZARDS][-2:] == ["sweep_recovery_after_visibility_timeout", "tombstone_delivered"]
    assert hazards_hit(late)["sweep_recovery_after_visibility_timeout"]
    assert not hazards_hit(in_time)["sweep_recovery_after_visibility_timeout"]
    assert hazards_hit(tomb)["tombstone_delivered"] and not hazards_hit(late)["tombstone_delivered"]
