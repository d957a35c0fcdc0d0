"""The live side of the pause and broker-restart faults (``acksim.live.faults``), ready for the
``[faults]`` keys: SIGSTOP holds a real worker process and SIGCONT lets it go on; a Redis
restart with an append-only file keeps the stream, the group and the pending entry, and the
consumer's next call reconnects; the run's loop resumes a paused process before stopping it."""

from __future__ import annotations

import multiprocessing
import time

import pytest

from acksim.live import faults


def _sleeper(conn):
    while True:
        conn.send(time.monotonic())
        time.sleep(0.01)


def test_pause_holds_a_process_and_resume_lets_it_go_on():
    a, b = multiprocessing.Pipe()
    p = multiprocessing.get_context("fork").Process(target=_sleeper, args=(b,), daemon=True)
    p.start()
    try:
        a.recv()
        assert faults.pause(p.pid)
        time.sleep(0.05)
        while a.poll():  # what it sent before the stop landed
            a.recv()
        assert faults.process_state(p.pid) == "T"
        time.sleep(0.3)
        assert not a.poll()  # nothing sent while stopped
        assert faults.resume(p.pid)
        assert a.poll(5.0) and faults.process_state(p.pid) in ("S", "R")
    finally:
        p.kill()
        p.join(5)
    assert faults.process_state(p.pid) == "" and not faults.pause(p.pid) and not faults.resume(p.pid)


@pytest.mark.live
@pytest.mark.timeout(60)
def test_redis_restart_keeps_the_pending_entry_with_an_append_only_file(need):
    need("redis")
    from acksim.live.brokers import redis_server
    from acksim.live.transports import RedisTransport, encode

    with redis_server(appendonly=True, appendfsync="always") as b:
        t = RedisTransport(b.port, visibility_s=0.2, max_receive_count=0, namespace="restart")
        t.declare()
        t.publish(encode(1, "a1", 1, 10.0))
        c1, c2 = t.consumer("worker-1"), t.consumer("worker-2")
        got = c1.receive(1.0)
        assert (got.message_id, got.receive_count, got.claimed) == (1, 1, False)
        took = faults.restart_broker(b, down_s=0.2, hard=True)
        assert 0.2 <= took < 10.0 and len(b.startups) == 2
        time.sleep(0.3)  # past the min idle: the dead consumer's entry is claimable
        again = c2.receive(1.0)  # redis-py reconnects on its own
        assert (again.message_id, again.receive_count, again.claimed) == (1, 2, True)
        assert c2.ack(again) and not c1.ack(got)  # the late ack of the first holder acks nothing
        t.drop()
        assert t.client().exists(t.stream) == 0
