"""The redelivery mechanisms of the presets, one rule per test, with exact virtual times:
heartbeat leases with a cap, sweeps, consumer death and the ack timeout (RabbitMQ), claims
(Redis Streams), stalls (BullMQ), pop-on-fetch, worker-lost policies, attempt limits, drops
and the stream length cap."""

from helpers.queues import consumer, make, publish, trace


def test_heartbeat_extends_the_lease_until_the_cap_from_receipt():
    env, h, q = make(visibility_timeout_s=300, heartbeat_interval_s=60, max_lease_s=1000)
    publish(q)
    env.process(consumer(env, q, "w1"))  # keeps it (alive: heartbeats go on)
    env.process(consumer(env, q, "w2", start=1))
    env.run(until=2000)
    # renewed every minute to 300 s ahead, never past 1000 s from the receipt at 0
    assert trace(h, "delivered", "visibility_expired") == [
        (0, "delivered", "w1", 1), (1000, "visibility_expired", "queue", 1), (1000, "delivered", "w2", 2)]


def test_a_dead_holder_stops_heartbeating_and_its_lease_lapses():
    env, h, q = make(visibility_timeout_s=300, heartbeat_interval_s=60, max_lease_s=43_200)
    publish(q)
    env.process(consumer(env, q, "w1"))
    env.process(consumer(env, q, "w2", start=1))
    env.run(until=130)
    q.consumer_lost("w1")  # the last heartbeat was at 120 s
    env.run(until=1000)
    assert trace(h, "visibility_expired", "delivered")[1:] == [
        (420, "visibility_expired", "queue", 1), (420, "delivered", "w2", 2)]


def test_lease_held_tracks_the_current_loan():
    env, h, q = make(visibility_timeout_s=30)
    publish(q)
    got = []

    def grab():
        got.append((yield q.receive("w1")))
    env.process(grab())
    env.run(until=10)
    assert q.lease_held(got[0])
    env.run(until=31)
    assert not q.lease_held(got[0])


def test_a_sweep_notices_a_lapsed_lease_only_at_its_next_tick():
    env, h, q = make(visibility_timeout_s=30, sweep_interval_s=60)
    publish(q)
    env.process(consumer(env, q, "w1"))
    env.process(consumer(env, q, "w2", start=1))
    env.run(until=100)  # lapsed at 30, noticed at 60; w2's lease (to 90) is next noticed at 120
    assert trace(h, "visibility_expired") == [(60, "visibility_expired", "queue", 1)]


def test_rabbitmq_ack_timeout_requeues_every_delivery_of_that_consumer():
    env, h, q = make(redelivery="consumer_death", visibility_timeout_s=1800, sweep_interval_s=60)
    publish(q, 2)
    env.process(consumer(env, q, "w1", times=2))  # holds both, acks neither
    env.process(consumer(env, q, "w2", start=1, times=2))
    env.run(until=2000)
    expired = [(r.time, r.message_id, r.detail) for r in h.records if r.kind == "visibility_expired"]
    assert expired == [(1800, 1, "consumer_timeout"), (1800, 2, "consumer_timeout")]


def test_rabbitmq_ack_timeout_takes_back_only_the_loans_it_saw_lapse():
    env, h, q = make(redelivery="consumer_death", visibility_timeout_s=1800, sweep_interval_s=60)
    publish(q, 2)
    env.process(consumer(env, q, "w1", times=2))  # holds both, acks neither
    env.process(consumer(env, q, "w2", start=1, times=2))
    env.process(consumer(env, q, "w3", start=2))
    env.run(until=1900)
    # both requeued at 1800 and handed straight to w2 and w3: those new loans are not lapsed
    assert [(r.time, r.kind, r.actor, r.message_id) for r in h.records
            if r.time == 1800 and r.kind in ("visibility_expired", "delivered")] == [
        (1800, "visibility_expired", "queue", 1), (1800, "delivered", "w2", 1),
        (1800, "visibility_expired", "queue", 2), (1800, "delivered", "w3", 2)]


def test_rabbitmq_requeues_a_dead_consumers_deliveries_after_the_heartbeat_timeout():
    env, h, q = make(redelivery="consumer_death", visibility_timeout_s=1800, sweep_interval_s=60,
                     disconnect_detect_s=60)
    publish(q)
    env.process(consumer(env, q, "w1"))
    env.process(consumer(env, q, "w2", start=1))
    env.run(until=10)
    q.consumer_lost("w1")
    env.run(until=500)
    assert [(r.time, r.detail) for r in h.records if r.kind == "visibility_expired"] == [(70, "connection_lost")]
    assert trace(h, "delivered")[-1] == (70, "delivered", "w2", 2)


def test_redis_streams_entries_stay_pending_without_a_claimer():
    env, h, q = make(redelivery="claim", visibility_timeout_s=30, sweep_interval_s=0)
    publish(q)
    env.process(consumer(env, q, "w1"))
    env.process(consumer(env, q, "w2", start=1))
    env.run(until=100_000)
    assert trace(h, "delivered", "visibility_expired") == [(0, "delivered", "w1", 1)]
    assert q.in_flight() == [1]


def test_redis_streams_claimer_takes_idle_entries_at_its_sweeps():
    env, h, q = make(redelivery="claim", visibility_timeout_s=100, sweep_interval_s=60)
    publish(q)
    env.process(consumer(env, q, "w1"))
    env.process(consumer(env, q, "w2", start=1))
    env.run(until=200)  # idle 100 s at 100, claimed at the sweep of 120
    assert [(r.time, r.detail) for r in h.records if r.kind == "visibility_expired"] == [(120, "claimed")]


def test_bullmq_a_second_stall_fails_the_job():
    env, h, q = make(redelivery="stalled_sweep", visibility_timeout_s=30, sweep_interval_s=30,
                     max_stalled_count=1, max_receive_count=0)
    publish(q)
    for i, start in enumerate((0, 1, 2)):
        env.process(consumer(env, q, f"w{i}", start=start))
    env.run(until=10)
    q.consumer_lost("w0")
    env.run(until=80)
    q.consumer_lost("w1")
    env.run(until=500)
    assert [(r.time, r.kind, r.detail) for r in h.records if r.kind in ("visibility_expired", "dead_lettered")] == [
        (30, "visibility_expired", "stalled"), (60, "visibility_expired", "stalled"),
        (60, "dead_lettered", "max_stalled_count")]
    assert q.dead_letter_queue == (1,)


def test_pop_on_fetch_forgets_the_message_at_receipt():
    env, h, q = make(redelivery="none")
    publish(q)
    env.process(consumer(env, q, "w1"))
    env.run(until=10)
    assert [(r.kind, r.detail) for r in h.records if r.kind == "delivered"] == [("delivered", "pop_on_fetch")]
    assert q.in_flight() == [] and not q.idle  # gone from the queue, still being worked on
    q.consumer_lost("w1", executing=1)
    assert q.idle
    env.run(until=10_000)
    assert len([r for r in h.records if r.kind == "delivered"]) == 1


def test_on_worker_lost_ack_deletes_and_requeue_returns_it_at_once():
    for policy, kinds in (("ack", ["acked"]), ("requeue", ["nacked", "delivered"])):
        env, h, q = make(on_worker_lost=policy, visibility_timeout_s=300)
        publish(q)
        env.process(consumer(env, q, "w1"))
        env.process(consumer(env, q, "w2", start=1))
        env.run(until=5)
        q.consumer_lost("w1", executing=1)
        env.run(until=1000)
        after = [(r.time, r.kind) for r in h.records if r.time == 5 and r.kind in ("acked", "nacked", "delivered")]
        assert [k for _t, k in after] == kinds


def test_bullmq_max_stalled_count_0_fails_at_the_first_stall_and_redrive_resets_the_counts():
    env, h, q = make(redelivery="stalled_sweep", visibility_timeout_s=30, sweep_interval_s=30,
                     max_stalled_count=0, max_receive_count=0)
    publish(q)
    env.process(consumer(env, q, "w0"))
    env.run(until=10)
    q.consumer_lost("w0")
    env.run(until=40)
    assert [(r.time, r.kind, r.detail) for r in h.records if r.kind == "dead_lettered"] == [
        (30, "dead_lettered", "max_stalled_count")]
    q.redrive()
    env.process(consumer(env, q, "w1"))
    env.run(until=50)
    assert [(r.kind, r.receive_count) for r in h.records if r.kind in ("redriven", "delivered")][-2:] == [
        ("redriven", 0), ("delivered", 1)]


def test_a_worker_lost_requeue_is_not_a_failed_attempt():
    env, h, q = make(on_worker_lost="requeue", max_attempts=1, max_receive_count=0)
    publish(q)
    env.process(consumer(env, q, "w1"))
    env.process(consumer(env, q, "w2", start=1))
    env.run(until=5)
    q.consumer_lost("w1", executing=1)
    env.run(until=10)
    assert [r.kind for r in h.records if r.kind in ("nacked", "dead_lettered", "delivered")] == [
        "delivered", "nacked", "delivered"]


def test_max_attempts_dead_letters_after_that_many_failures():
    env, h, q = make(max_attempts=2, max_receive_count=0, nack_backoff_base_s=0, nack_backoff_max_s=0)
    publish(q)
    env.process(consumer(env, q, "w1", hold_s=1, action="nack", times=3))
    env.run(until=100)
    assert [(r.time, r.kind, r.detail) for r in h.records if r.kind in ("nacked", "dead_lettered")] == [
        (1, "nacked", ""), (2, "nacked", ""), (2, "dead_lettered", "max_attempts")]


def test_exhaustion_without_a_dead_letter_target_drops_the_message():
    env, h, q = make(max_receive_count=1, on_exhaustion="drop", visibility_timeout_s=10)
    publish(q)
    env.process(consumer(env, q, "w1"))
    env.process(consumer(env, q, "w2", start=1))
    env.run(until=100)
    assert [(r.time, r.kind, r.detail) for r in h.records if r.kind in ("dropped", "dead_lettered")] == [
        (10, "dropped", "max_receive_count")]
    assert q.dead_letter_queue == () and q.idle


def test_length_cap_trims_the_oldest_entry_even_while_pending():
    env, h, q = make(max_length=2, visibility_timeout_s=100)
    publish(q)
    env.process(consumer(env, q, "w1"))  # message 1 pending in w1's hands
    env.run(until=1)
    publish(q, 2)
    assert [(r.message_id, r.detail) for r in h.records if r.kind == "trimmed"] == [(1, "in_flight")]
    assert q.in_flight() == []


def test_requeue_at_head_puts_a_nacked_message_first():
    env, h, q = make(requeue_at_head=True, nack_backoff_base_s=0, nack_backoff_max_s=0)
    publish(q, 3)

    def first_nacks():
        d = yield q.receive("w1")
        q.nack(d, "w1", 0.0)
        for _ in range(3):
            d = yield q.receive("w1")
            q.ack(d, "w1")
    env.process(first_nacks())
    env.run(until=10)
    assert [r.message_id for r in h.records if r.kind == "delivered"] == [1, 1, 2, 3]


def test_only_a_sweeping_queue_runs_a_process_of_its_own():
    env, _h, _q = make()
    assert env.peek() == float("inf")
    env, _h, _q = make(sweep_interval_s=60)
    env.step()  # the sweeper's start
    assert env.peek() == 60


def test_on_worker_lost_applies_to_the_executing_job_only():
    env, h, q = make(on_worker_lost="ack", visibility_timeout_s=300)
    publish(q, 2)
    env.process(consumer(env, q, "w1", times=2))  # holds both; executing message 2
    env.process(consumer(env, q, "w2", start=1))
    env.run(until=5)
    q.consumer_lost("w1", executing=2)
    env.run(until=500)
    assert [(r.time, r.kind, r.message_id) for r in h.records if r.kind in ("acked", "visibility_expired")] == [
        (5, "acked", 2), (300, "visibility_expired", 1)]
