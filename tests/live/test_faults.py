"""The live side of the pause and broker-restart faults (``acksim.live.faults``) and their
``[faults]`` keys: SIGSTOP holds a real worker process and SIGCONT lets it go on; a Redis
restart with an append-only file keeps the stream, the group and the pending entry, and the
consumer's next call reconnects; the run's loop resumes a paused process before stopping it.
Then the scenario keys live, next to the simulation of the same scenario: a pause outliving
its lease on Redis (redelivered to the other worker, the paused one's ack stale) and a
RabbitMQ restart mid-job (the ack fails, the delivery is requeued and run again: one effect);
and what live refuses (a pause at a store call; a restart of moto)."""

from __future__ import annotations

import multiprocessing
import time
from pathlib import Path

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
    from acksim.live.brokers.redis import redis_server
    from acksim.live.transports import encode
    from acksim.live.transports.redis_streams import RedisTransport

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


# --- the [faults] keys, live -------------------------------------------------------------------
ROOT = Path(__file__).resolve().parents[2]
REF = "acksim.model.processor:process"


def _of(history, kind: str, message_id: int | None = None):
    return [r for r in history if r.kind == kind and (message_id is None or r.message_id == message_id)]


def _holds(outcome) -> dict[str, bool]:
    from acksim.judges.invariants import check_all

    return {n: v["holds"] for n, v in check_all(outcome.history, outcome.final).items()}


@pytest.mark.parametrize("scenario, broker, field", [
    ("incidents/09-event-loop-pause-stale-lock.toml", "redis", "faults.pauses: a pause at a delivery's store call"),
    ("live-broker-restart.toml", "sqs", "faults.broker_restarts: moto (the live SQS)"),
])
def test_live_refuses_what_it_cannot_do_faithfully_exit_2(tmp_path, capsys, scenario, broker, field):
    from acksim.cli.main import main

    rc = main(["live", str(ROOT / "scenarios" / scenario), "--broker", broker, "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and field in err[0], err
    assert not (tmp_path / "o").exists()


def test_a_resumed_lease_is_read_from_the_journals():
    """The lease detail of "worker_resumed": a later delivery or another worker's ack moved
    it; past the visibility timeout (wall s) it lapsed; else it is held (RabbitMQ: always)."""
    from types import SimpleNamespace

    from acksim.live.pauses import lease_detail
    from acksim.live.run import LiveRun
    from acksim.scenario import load

    r = LiveRun(load(ROOT / "scenarios" / "live-pause-stale-ack.toml"), "redis", REF)
    r.transport = SimpleNamespace(visibility_s=3.0)
    now = time.monotonic()
    held = (now - 1.0, "worker-1", 1)
    r.ledger.deliveries_seen = {1: [held]}
    assert lease_detail(r, 1, held) == "lease_held"
    old = (now - 4.0, "worker-1", 1)
    r.ledger.deliveries_seen = {1: [old]}
    assert lease_detail(r, 1, old) == "lease_lapsed"
    r.ledger.deliveries_seen = {1: [held]}
    r.ledger.deliveries_seen[1].append((now - 0.5, "worker-2", 2))
    assert lease_detail(r, 1, held) == "lease_moved"
    r.ledger.deliveries_seen, r.ledger.terminal, r.ledger.acked_by = {1: [held]}, {1}, {1: "worker-1"}
    assert lease_detail(r, 1, held) == "lease_held"  # its own ack ended it: nothing moved
    r.ledger.acked_by = {1: "worker-2"}
    assert lease_detail(r, 1, held) == "lease_moved"
    old = (now - 40.0, "worker-1", 1)
    r.kind, r.ledger.terminal, r.ledger.deliveries_seen = "rabbitmq", set(), {1: [old]}
    assert lease_detail(r, 1, old) == "lease_held"  # no visibility timeout


@pytest.mark.live
@pytest.mark.timeout(90)
def test_a_pause_past_the_min_idle_time_redelivers_and_the_late_ack_is_stale(need):
    """scenarios/live-pause-stale-ack.toml on a real Redis, next to its simulation: worker 1
    SIGSTOPped at 105 s for 100 s while it holds a job; worker 2 claims the idle entry and runs
    it again; worker 1 resumes with the lease moved on and its XACK acks nothing. Virtual s."""
    need("redis")
    from acksim.live.run import run_live
    from acksim.scenario import load
    from acksim.world.core import simulate

    sc = load(ROOT / "scenarios" / "live-pause-stale-ack.toml")
    sim, res = simulate(sc), run_live(sc, "redis", REF, 0.05)
    live = res.outcome
    for side, o in (("sim", sim), ("live", live)):
        h = o.history
        (paused,) = _of(h, "worker_paused")
        (resumed,) = _of(h, "worker_resumed")
        mid = paused.message_id
        assert (paused.actor, paused.detail, resumed.actor, resumed.message_id, resumed.detail) == (
            "worker-1", "100 s", "worker-1", mid, "lease_moved"), side
        assert 105.0 <= paused.time <= 110.0 and 98.0 <= resumed.time - paused.time <= 110.0, (side, paused, resumed)
        got = _of(h, "delivered", mid)
        assert [(d.actor, d.receive_count) for d in got] == [("worker-1", 1), ("worker-2", 2)], side
        # pending and idle until a claim finds it idle for the min idle time (60 s)
        assert 60.0 <= got[1].time - got[0].time <= 60.0 + 20.0, (side, got)
        assert [r.detail for r in _of(h, "visibility_expired", mid)] == ["claimed"], side
        assert [(r.actor, r.receive_count) for r in _of(h, "acked", mid)] == [("worker-2", 2)], side
        (stale,) = _of(h, "ack_stale", mid)
        assert (stale.actor, stale.receive_count) == ("worker-1", 1) and stale.time >= resumed.time, side
        assert len(_of(h, "cleanup_applied")) == 2 and all(_holds(o).values()), side
        assert sorted(m[0] for m in o.final.markers) == ["p000", "p001"], side
    assert res.live["stop_reason"] == ""


@pytest.mark.live
@pytest.mark.timeout(120)
def test_a_rabbitmq_restart_mid_job_requeues_the_delivery_and_it_runs_again(need):
    """scenarios/live-broker-restart.toml on a real RabbitMQ node, next to its simulation: the
    node stops at 70 s (SIGTERM; the same data folder, so the quorum queue survives) and starts
    again 250 s later; the worker that held the job commits, its ack fails on the lost
    connection, the delivery comes back at the restart and the second run finds the work done:
    one effect. Virtual s; the live down time adds the node's own stop and start."""
    need("rabbitmq")
    from acksim.live.run import run_live
    from acksim.scenario import load
    from acksim.world.core import simulate

    sc = load(ROOT / "scenarios" / "live-broker-restart.toml")
    scale = 0.02
    sim, res = simulate(sc), run_live(sc, "rabbitmq", REF, scale)
    live = res.outcome
    for side, o in (("sim", sim), ("live", live)):
        h = o.history
        (down,) = _of(h, "broker_down")
        (up,) = _of(h, "broker_restarted")
        assert (down.actor, down.detail, up.detail) == ("broker", "250 s", "requeue"), side
        assert 70.0 <= down.time <= 75.0 and up.time - down.time >= 250.0, (side, down, up)
        got = _of(h, "delivered", 1)
        # back once the broker is (live, a worker may take it a moment before the parent has
        # recorded the restart: it polls every 0.2 wall s, the parent's probe every 0.1 s)
        # RabbitMQ 3.10.8 counts the return of the lost connection's delivery in x-delivery-count:
        # once, or (seen in one run of three here) twice
        counts = [d.receive_count for d in got]
        assert counts[0] == 1 and counts[1] in ((2,) if side == "sim" else (2, 3)) and len(counts) == 2, (side, got)
        assert got[1].time >= down.time + 250.0, (side, got)
        (failed,) = _of(h, "ack_failed", 1)
        assert (failed.actor, failed.detail, failed.receive_count) == (got[0].actor, "ack:broker_down", 1), side
        assert down.time < failed.time < up.time and 258.0 <= failed.time <= 300.0, (side, failed)
        assert [(r.actor, r.receive_count) for r in _of(h, "acked", 1)] == [(got[1].actor, counts[1])], side
        assert len(_of(h, "cleanup_applied")) == 1 and all(_holds(o).values()), side
        assert [m[0] for m in o.final.markers] == ["p000"], side
    # the real down time: the 5 wall s asked for, plus the node's stop and start
    (took,) = res.live["broker_restart_wall_s"]
    assert 250 * scale <= took <= 250 * scale + 40.0 and res.live["stop_reason"] == ""


def test_a_broker_restart_defers_publishes_and_records_what_it_lost(tmp_path):
    """While the broker is down a job due is recorded "publish_deferred" and published when it
    is back; "broker_restarted" says what the broker did; a message the restart lost (Redis
    without persistence) is recorded "dropped" and ends. No broker: a stand-in transport."""
    from types import SimpleNamespace

    from acksim.live.broker_outage import broker_back
    from acksim.live.journal import Journal, read_journal
    from acksim.live.run import LiveRun
    from acksim.scenario import load, parse

    data = load(ROOT / "scenarios" / "live-pause-stale-ack.toml").model_dump(exclude_none=True)
    data["queue"]["on_broker_restart"] = "lost"
    data["faults"] = {"broker_restarts": [{"at_s": 10.0, "down_s": 5.0}]}
    r = LiveRun(parse(data, "t"), "redis", REF)
    sent = []
    r.transport = SimpleNamespace(reconnect=lambda: None, surviving_ids=lambda: {2}, publish=sent.append,
                                  lost_connection=lambda exc: False)
    r.journal = Journal(tmp_path / "j.jsonl", time.monotonic(), 1.0)
    r.ledger.published = {1: ("p000", 1, 100.0), 2: ("p001", 1, 100.5)}
    r.restarting = SimpleNamespace(error=None, wall_s=0.25, up_at=None)
    r._do(("publish", "p002", 1, 101.0), None)
    assert sent == [] and r.deferred == [("p002", 1, 101.0)]
    assert broker_back(r) == "" and r.restarting is None and r.broker_downtimes == [0.25]
    got = [(x["k"], x.get("message_id"), x.get("detail")) for x in read_journal(tmp_path / "j.jsonl")]
    assert got == [("publish_deferred", None, "broker_down"), ("broker_restarted", None, "lost"),
                   ("dropped", 1, "broker_restart:not_persisted"), ("published", 3, None)]
    assert r.ledger.terminal == {1} and len(sent) == 1 and '"message_id":3' in sent[0]
    r.restarting = SimpleNamespace(error=RuntimeError("port in use"), wall_s=1.0)
    assert broker_back(r).startswith("live: the broker did not come back") and not r.broker_up


@pytest.mark.live
@pytest.mark.timeout(60)
def test_a_redis_restart_keeps_the_pending_entry_and_a_claim_runs_it_again(need):
    """live-broker-restart's job on Redis Streams (40 s of work, down 40 s from 70 s), next to
    its simulation: started with an append-only file, the server keeps the stream, the group
    and the pending entry; the ack sent while it is down fails; once the entry is idle for the
    min idle time (60 s after its delivery) a claim takes it and the second run finds the work
    done. Virtual s."""
    need("redis")
    from acksim.live.run import run_live
    from acksim.scenario import load, parse
    from acksim.world.core import simulate

    data = load(ROOT / "scenarios" / "live-broker-restart.toml").model_dump(exclude_none=True)
    data["queue"] = {"preset": "redis-streams", "visibility_timeout_s": 60.0, "sweep_interval_s": 2.0,
                     "ack_latency_s": 0.0}
    data["workers"]["service_time_mean_s"] = 40.0
    data["faults"]["broker_restarts"] = [{"at_s": 70.0, "down_s": 40.0}]
    sc = parse(data, "redis-restart")
    sim, res = simulate(sc), run_live(sc, "redis", REF, 0.05)
    for side, o in (("sim", sim), ("live", res.outcome)):
        h = o.history
        (down,), (up,) = _of(h, "broker_down"), _of(h, "broker_restarted")
        assert (down.detail, up.detail) == ("40 s", "lease") and 40.0 <= up.time - down.time <= 60.0, (side, up)
        (failed,) = _of(h, "ack_failed", 1)
        assert failed.detail == "ack:broker_down" and down.time < failed.time < up.time, side
        got = _of(h, "delivered", 1)
        assert [d.receive_count for d in got] == [1, 2] and 120.0 <= got[1].time <= 135.0, (side, got)
        assert [r.detail for r in _of(h, "visibility_expired", 1)] == ["claimed"], side
        assert len(_of(h, "acked", 1)) == 1 and len(_of(h, "cleanup_applied")) == 1, side
        assert all(_holds(o).values()) and [m[0] for m in o.final.markers] == ["p000"], side
    (took,) = res.live["broker_restart_wall_s"]
    assert 2.0 <= took <= 12.0
