"""Queue semantics with exact virtual timestamps, one rule per test."""

import json

import pytest
from hypothesis import given, settings, strategies as st

from acksim.model.job import CleanupJob
from acksim.world.queue.core import MessageTooLarge, body_bytes
from helpers.queues import JOB, consumer, make, trace


def test_visibility_timeout_redelivers_an_unacked_message():
    env, h, q = make(visibility_timeout_s=30)
    q.publish(JOB, 0.0, 0.0, "scheduler", 100)
    env.process(consumer(env, q, "w1"))              # receives and never acks
    env.process(consumer(env, q, "w2", start=1.0, hold_s=5))
    env.run(until=100)
    assert trace(h) == [
        (0.0, "published", "scheduler", None),
        (0.0, "delivered", "w1", 1),
        (30.0, "visibility_expired", "queue", 1),
        (30.0, "delivered", "w2", 2),
        (35.0, "acked", "w2", 2),
    ]
    assert q.idle


def test_ack_deletes_and_no_expiry_follows():
    env, h, q = make(visibility_timeout_s=30)
    q.publish(JOB, 0.0, 0.0, "scheduler", 100)
    env.process(consumer(env, q, "w1", hold_s=5))
    env.run(until=100)
    assert trace(h, "delivered", "acked", "visibility_expired") == [
        (0.0, "delivered", "w1", 1), (5.0, "acked", "w1", 1)]


def test_ack_with_an_outdated_receipt_deletes_nothing():
    env, h, q = make(visibility_timeout_s=10)
    q.publish(JOB, 0.0, 0.0, "scheduler", 100)
    env.process(consumer(env, q, "slow", hold_s=12))    # outlives its visibility timeout
    env.process(consumer(env, q, "w2", start=1.0, hold_s=3))
    env.run(until=100)
    assert trace(h, "delivered", "acked", "ack_stale", "visibility_expired") == [
        (0.0, "delivered", "slow", 1),
        (10.0, "visibility_expired", "queue", 1),
        (10.0, "delivered", "w2", 2),
        (12.0, "ack_stale", "slow", 1),
        (13.0, "acked", "w2", 2),
    ]


def test_nack_makes_the_message_visible_after_bounded_backoff():
    env, h, q = make(visibility_timeout_s=30, nack_backoff_base_s=2, nack_backoff_max_s=5)
    q.publish(JOB, 0.0, 0.0, "scheduler", 100)
    env.process(consumer(env, q, "w1", hold_s=1, action="nack", times=4))
    env.run(until=100)
    nacks = [r for r in h.records if r.kind == "nacked"]
    # receive count 1, 2, 3, 4 -> backoff 2, 4, 5 (capped), 5
    assert [(r.time, r.visible_at) for r in nacks] == [(1.0, 3.0), (4.0, 8.0), (9.0, 14.0), (15.0, 20.0)]
    assert [r.time for r in h.records if r.kind == "delivered"] == [0.0, 3.0, 8.0, 14.0]
    assert [q.backoff(n) for n in (1, 2, 3, 9)] == [2.0, 4.0, 5.0, 5.0]


def test_dead_letter_after_max_receive_count_then_redrive_resets_the_count():
    env, h, q = make(visibility_timeout_s=10, max_receive_count=2)
    q.publish(JOB, 0.0, 0.0, "scheduler", 100)
    env.process(consumer(env, q, "w1", times=3))        # never acks
    env.run(until=50)
    assert trace(h, "delivered", "visibility_expired", "dead_lettered") == [
        (0.0, "delivered", "w1", 1),
        (10.0, "visibility_expired", "queue", 1),
        (10.0, "delivered", "w1", 2),
        (20.0, "visibility_expired", "queue", 2),
        (20.0, "dead_lettered", "queue", 2),
    ]
    assert q.dead_letter_queue == (1,) and q.idle
    assert q.redrive() == 1
    env.run(until=60)
    assert trace(h, "redriven", "delivered")[-2:] == [(50.0, "redriven", "operator", 0), (50.0, "delivered", "w1", 1)]
    assert q.dead_letter_queue == ()


def test_delayed_message_becomes_receivable_at_its_delay_and_the_delay_is_capped():
    env, h, q = make(max_delay_s=600)
    q.publish(JOB, 100.0, 100.0, "scheduler", 100)
    env.process(consumer(env, q, "w1", hold_s=1))
    env.run(until=1000)
    assert trace(h, "published", "delivered", "acked") == [
        (0.0, "published", "scheduler", None), (100.0, "delivered", "w1", 1), (101.0, "acked", "w1", 1)]
    assert h.records[0].visible_at == 100.0
    with pytest.raises(ValueError, match="max_delay_s"):
        q.publish(JOB, 700.0, 601.0, "scheduler", 100)


def test_retention_deletes_in_flight_and_visible_messages_and_says_so():
    env, h, q = make(visibility_timeout_s=1000, retention_s=60)
    q.publish(JOB, 0.0, 0.0, "scheduler", 100)
    q.publish(JOB, 0.0, 10.0, "scheduler", 100)
    env.process(consumer(env, q, "w1"))  # takes message 1 and keeps it
    env.run(until=200)
    assert [(r.time, r.kind, r.message_id, r.detail) for r in h.records if r.kind == "retention_expired"] == [
        (60.0, "retention_expired", 1, "in_flight"), (60.0, "retention_expired", 2, "visible")]
    assert q.idle


def test_publish_over_the_size_limit_is_refused_with_the_limit_named():
    env, h, q = make(max_message_bytes=1024)
    size = body_bytes(JOB, payload_bytes=2000)
    assert size == body_bytes(JOB) + 2000
    with pytest.raises(MessageTooLarge, match=r"body is \d+ bytes; queue.max_message_bytes allows at most 1024"):
        q.publish(JOB, 0.0, 0.0, "scheduler", size)
    assert h.records == []


def test_the_body_size_is_the_compact_json_body_with_escapes():
    assert body_bytes(JOB) == len('{"account_id":"acct-1","cleanup_version":1,"deadline":"2026-01-01T00:00:00+00:00"}') == 82
    odd = CleanupJob('a"\u00e9', 12, JOB.deadline)  # a quote and a non-ASCII letter: escaped
    assert body_bytes(odd) == len('{"account_id":"a\\"\\u00e9","cleanup_version":12,'
                                  '"deadline":"2026-01-01T00:00:00+00:00"}') == 86


@settings(max_examples=200)
@given(st.text(max_size=20), st.one_of(st.integers(), st.booleans()),
       st.datetimes(timezones=st.timezones()), st.integers(0, 10_000))
def test_the_body_size_is_the_length_of_the_compact_json_body(account_id, version, deadline, payload):
    """The size is that of ``json.dumps`` of the job's fields, byte for byte, escapes included."""
    job = CleanupJob(account_id, version, deadline)
    body = json.dumps({"account_id": account_id, "cleanup_version": version, "deadline": deadline.isoformat()},
                      separators=(",", ":"))
    assert body_bytes(job, payload) == len(body.encode()) + payload


def test_fifo_deduplicates_within_the_five_minute_window():
    env, h, q = make(kind="fifo")
    env.process(_publish_at(env, q, [0.0, 299.0, 300.0]))
    env.run(until=400)
    assert [(r.time, r.kind) for r in h.records] == [
        (0.0, "published"), (299.0, "deduplicated"), (300.0, "published")]


def _publish_at(env, q, times):
    for t in times:
        yield env.timeout(t - env.now)
        q.publish(JOB, 0.0, 0.0, "scheduler", 100)


def test_spurious_duplicate_goes_to_another_consumer_and_either_ack_deletes():
    env, h, q = make(duplicate_probability=1.0, visibility_timeout_s=30)
    q.publish(JOB, 0.0, 0.0, "scheduler", 100)
    env.process(consumer(env, q, "w1", hold_s=5))
    env.process(consumer(env, q, "w2", hold_s=2))
    env.run(until=100)
    assert [(r.time, r.kind, r.actor, r.detail) for r in h.records if r.kind != "published"] == [
        (0.0, "delivered", "w1", ""),
        (0.0, "delivered", "w2", "duplicate"),
        (2.0, "acked", "w2", "duplicate"),
        (5.0, "ack_stale", "w1", "deleted"),
    ]


def test_cancelled_receive_gets_nothing():
    env, h, q = make()
    ev = q.receive("w1")
    q.cancel(ev)
    q.publish(JOB, 0.0, 0.0, "scheduler", 100)
    env.run(until=1)
    assert not ev.triggered and [r.kind for r in h.records] == ["published"]
