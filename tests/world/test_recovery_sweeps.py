"""Recovery sweeps of a dead consumer's deliveries, with exact virtual times: a sweep at
process start only after its interval, an orphan left alone while its heartbeat lives, a sweep
on broker traffic waiting for the next operation."""

from helpers.queues import consumer, make, publish


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
