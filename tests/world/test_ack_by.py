"""What an ack names, with exact virtual times: a receipt (an outdated one deletes nothing)
or the message id (the first run to finish deletes the message another run holds)."""

from helpers.queues import consumer, make, publish


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
