"""The quorum queue's delivery limit, one rule per test, with exact virtual times: every
return counts (a nack, a lapsed loan, a lost consumer), and the return past the limit ends the
message (dead-lettered or dropped)."""

from helpers.queues import consumer, make, publish, trace


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
