"""The queue and scheduler mechanisms of issue 13, one rule per test, with exact virtual
times: the quorum queue's delivery limit, ack by message id, recovery sweeps of a dead
consumer's deliveries, tombstones of trimmed entries, record-then-publish."""

from test_queue import JOB, consumer, make, trace


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
