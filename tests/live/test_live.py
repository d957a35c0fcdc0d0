"""``acksim live`` against the real brokers: the reference passes, the naive design's duplicate
reminders are caught, bad input is refused, an interrupt leaves nothing running.

Tests marked ``live`` start real servers (redis-server, rabbitmq-server, moto). A missing one is
a skip naming what to install, or a failure with ``ACKSIM_REQUIRE_LIVE=1`` (``.ci/run``).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from acksim.cli.main import main
from acksim.live.journal import Journal, merge
from helpers.live_brokers import need

ROOT = Path(__file__).resolve().parents[2]
SCENARIO = str(ROOT / "scenarios" / "live-smoke.toml")
# wall seconds per virtual second: SQS's visibility timeout is whole seconds, so its runs keep
# the default (20 virtual s x 0.05 = 1 s exactly); the others run faster
SCALE = {"redis": "0.02", "rabbitmq": "0.02", "sqs": "0.05"}


def _run(tmp_path: Path, broker: str, *extra: str) -> tuple[int, dict]:
    out = tmp_path / f"{broker}{'-'.join(extra).replace('--', '-')}"
    rc = main(["live", SCENARIO, "--broker", broker, "--time-scale", SCALE[broker], "--out", str(out), *extra])
    return rc, json.loads((out / "summary.json").read_text())


def _brokers_running() -> set[str]:
    """Broker processes and live runs (their forked workers share the command line) alive now."""
    ps = subprocess.run(["ps", "-eo", "pid,stat,args"], capture_output=True, text=True).stdout
    return {l.strip() for l in ps.splitlines()
            if " Z" not in l and any(k in l for k in ("acksim-rabbitmq-", "moto.server", "redis-server 127.0.0.1",
                                                       "live-smoke.toml --broker"))}


@pytest.mark.live
@pytest.mark.timeout(300)
@pytest.mark.parametrize("broker", ["redis", "rabbitmq", "sqs"])
def test_reference_passes_and_naive_reminds_twice(tmp_path, broker, capsys):
    need(broker)
    before = _brokers_running()  # another run on this machine may have its own
    rc, s = _run(tmp_path, broker)
    assert (rc, s["verdict"]) == (0, "PASS"), s["reasons"]
    assert s["live"]["broker"] == broker and s["live"]["version"]
    assert s["counts"]["accounts"] == 40 and s["counts"]["jobs"] >= 40
    assert s["counts"]["crashes_after_commit"] >= 1 and s["counts"]["crashes_deployment"] >= 1
    assert s["counts"]["cleanups"] == s["counts"]["outbox_events"] >= 20
    assert all(inv["holds"] for inv in s["invariants"].values())
    assert s["live"]["worker_failures"] == []
    assert set(s) - {"live"} == {"schema_version", "scenario", "seed", "verdict", "reasons", "invariants", "slo",
                                 "counts", "parameters", "stop_reason"}
    rc, s = _run(tmp_path, broker, "--candidate", "naive")
    assert rc == 1 and s["verdict"] == "FAIL"
    dup = s["invariants"]["at_most_once_effect"]
    assert not dup["holds"] and dup["violations"] >= 1
    assert dup["example"]["why"].startswith("second ")
    assert s["parameters"]["processor"] == "acksim.model.candidates:naive"
    assert _brokers_running() - before == set()


@pytest.mark.live
@pytest.mark.timeout(120)
def test_sigterm_stops_broker_and_workers(tmp_path):
    need("redis")
    before = _brokers_running()
    out = tmp_path / "r"
    p = subprocess.Popen([sys.executable, "-m", "acksim", "live", SCENARIO, "--broker", "redis", "--out", str(out)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(6.0)
    p.send_signal(signal.SIGTERM)
    _out, err = p.communicate(timeout=60)
    assert p.returncode == 130, err
    assert "interrupted" in err
    assert not out.exists()
    time.sleep(0.5)
    assert _brokers_running() - before == set()


def test_missing_broker_is_one_line_exit_2(tmp_path, monkeypatch, capsys):
    from acksim.live import brokers
    from acksim.live.brokers import redis as redis_broker

    def missing(name, package):
        raise brokers.BrokerNotInstalled(f"{name} not found: install the Debian package: apt-get install {package}")

    monkeypatch.setattr(redis_broker, "_need_binary", missing)
    out = tmp_path / "r"
    assert main(["live", SCENARIO, "--broker", "redis", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err == ("acksim: error: --broker redis: redis-server not found: install the Debian package: "
                   "apt-get install redis-server\n")
    assert not out.exists()


@pytest.mark.parametrize("args, first", [
    (["--time-scale", "0"], "acksim: error: --time-scale: must be 0.001 .. 10"),
    (["--candidate", "read-committed"], "acksim: error: --candidate read-committed: needs read committed"),
    (["--candidate", "nope"], "acksim: error: --candidate: unknown 'nope'"),
    (["--max-wall-s", "0"], "acksim: error: --max-wall-s: must be 1 .. 86400"),
])
def test_bad_input_exit_2(tmp_path, capsys, args, first):
    out = tmp_path / "r"
    assert main(["live", SCENARIO, "--broker", "redis", "--out", str(out), *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith(first) and err.count("\n") == 1
    assert not out.exists()


def test_unknown_broker_exit_2(capsys):
    assert main(["live", SCENARIO, "--broker", "kafka"]) == 2
    assert "invalid choice: 'kafka'" in capsys.readouterr().err


def test_journals_merge_by_time_then_journal_then_line(tmp_path):
    t0 = 1000.0
    a, b = Journal(tmp_path / "00-parent.jsonl", t0, 0.5), Journal(tmp_path / "worker-1.000.jsonl", t0, 0.5)
    a.record("published", "scheduler", at=1001.0, message_id=1, account_id="acct-1", cleanup_version=1, deadline=2.0)
    b.record("delivered", "worker-1", at=1001.0, message_id=1, account_id="acct-1", cleanup_version=1,
             receive_count=1)
    b.record("tx_committed", "worker-1", at=1001.5, message_id=1, detail="0")
    a.record("renewed", "renewals", at=1001.25, account_id="acct-1", cleanup_version=1, deadline=2.0,
             detail="renewed")
    a.close()
    b.close()
    with open(tmp_path / "worker-1.000.jsonl", "ab") as f:
        f.write(b'{"w": 1002.0, "k": "acked"')  # a line cut by SIGKILL
    h = merge(sorted(tmp_path.iterdir()), t0, 0.5)
    assert [(r.time, r.seq, r.kind, r.actor) for r in h] == [
        (2.0, 0, "published", "scheduler"), (2.0, 1, "delivered", "worker-1"),
        (2.5, 2, "renewed", "renewals"), (3.0, 3, "tx_committed", "worker-1")]
    assert (h[1].receive_count, h[3].detail, h[2].detail, h[0].deadline) == (1, "0", "renewed", 2.0)


def test_livable_takes_out_what_live_cannot_run():
    from acksim.live.crosscheck import draw, livable
    from acksim.search.check import base_scenario

    sc = base_scenario(None, {"faults": {"kills": [{"at_s": 5.0, "worker": 1}], "duplicates": [{"delivery": 2}]},
                              "scheduler": {"mode": "cron"}, "queue": {"redrive_at_s": [100.0]}})
    out = livable(sc, {"workers": {"transaction_scope": "autocommit"}})
    assert (out.faults.kills, out.faults.duplicates, out.scheduler.mode, out.queue.redrive_at_s) == ((), (), "per_deadline", ())
    assert (out.stores.backend, out.workers.transaction_scope, out.run.stop_on_processor_error) == ("sqlite", "autocommit", False)
    drawn = draw(7, 0)
    assert [name for name, _ in drawn] == ["reference", "naive", "no-renewed-check", "reference", "no-version-check",
                                            "autocommit", "ack-before-processing"]
    assert all(s.scheduler.mode == "per_deadline" and not s.faults.duplicates for _, s in drawn)
    assert [len(s.plan.accounts) for _, s in drawn] == [len(s.plan.accounts) for _, s in draw(7, 0)]


@pytest.mark.live
@pytest.mark.timeout(240)
def test_crosscheck_writes_a_row_per_schedule(tmp_path, capsys):
    need("redis")
    out = tmp_path / "cc"
    rc = main(["crosscheck", "--broker", "redis", "--runs", "3", "--out", str(out)])
    doc = json.loads((out / "crosscheck.json").read_text())
    assert rc == (0 if doc["agreeing"] == 3 else 1)
    assert [(r["label"], r["candidate"]) for r in doc["rows"]] == [
        ("drawn-1", "reference"), ("drawn-2", "naive"), ("drawn-3", "ack-before-processing")]
    assert [all(r["sim"].values()) for r in doc["rows"]] == [True, True, False]  # a third violate, in the simulation
    assert doc["sim_violating"] == 1 and doc["broker"] == "redis" and doc["schedules"] == 3
    assert len(list(out.glob("row*-live.csv"))) == 3 - doc["agreeing"]
    md = (out / "crosscheck.md").read_text()
    assert md.startswith("# acksim crosscheck: simulation vs redis ") and "| drawn-2 | naive |" in md
    assert f"{doc['agreeing']} of 3 schedules agree on every invariant" in md
    assert "crosscheck on redis: " in capsys.readouterr().out


def test_for_broker_runs_the_brokers_mechanism_on_both_sides():
    from acksim.live.crosscheck import compact, for_broker, livable, wall_bound_s, within
    from acksim.search.check import base_scenario

    plan = {"accounts": [{"account_id": "a1", "deadline_s": 100.0}],
            "steps": [{"at_s": 100.002, "kind": "renew", "account_id": "a1"},
                      {"at_s": 100.0, "kind": "delete", "account_id": "a1"},
                      {"at_s": 40.0, "kind": "extend", "account_id": "a1", "amount_s": 3600.0}]}
    sc = compact(livable(base_scenario(None, {"plan": plan, "faults": {"deployments": [
        {"at_s": 100.0, "worker_down_s": 1.0}]}})))
    assert [s.amount_s for s in sc.plan.steps] == [0.0, 0.0, 600.0]  # extensions cut to 600 s
    r = for_broker(sc, "redis", 0.01)
    q = r.queue
    # min idle at least 2 wall s (200 virtual s at 0.01); claimed at the workers' 0.1 s poll
    assert (q.redelivery, q.visibility_timeout_s, q.sweep_interval_s, q.max_delay_s) == ("claim", 200.0, 10.0, 0.0)
    # steps within 0.25 wall s (25 virtual s) of the deadline moved out of the race, keeping their side
    assert [s.at_s for s in r.plan.steps] == [125.0, 75.0, 40.0]
    assert [d.worker_down_s for d in r.faults.deployments] == [25.0]  # workers down 0.25 wall s apart
    assert round(r.stores.latency_mean_s, 6) == 0.01 and round(r.scheduler.publish_latency_s, 6) == 0.24
    s = for_broker(sc, "sqs", 0.03)
    assert (s.queue.redelivery, round(s.queue.visibility_timeout_s * 0.03, 9)) == ("visibility_timeout", 2.0)
    assert round(for_broker(sc, "sqs", 0.003).queue.visibility_timeout_s * 0.003, 9) == 2.0  # whole wall seconds
    m = for_broker(sc, "rabbitmq", 0.01).queue
    assert (m.redelivery, m.disconnect_detect_s, m.requeue_at_head, m.nack_backoff_base_s) == (
        "consumer_death", 0.0, True, 0.0)
    crashes = r.workers.count  # a deployment: each worker once
    assert wall_bound_s(r, 0.01) == pytest.approx((640.0 + 125.0) * 0.01 * 1.5 + crashes * 2.0 + 20.0)
    assert within(10, 12, 2, 0.25) and not within(10, 13, 2, 0.25) and within(100, 125, 2, 0.25)
    assert within(None, None, 1, 0.5) and not within(None, 3.0, 1, 0.5)


def test_at_one_instant_a_fault_goes_before_the_job_published_then():
    import heapq

    from acksim.live.run import LiveRun
    from acksim.scenario import load

    r = LiveRun(load(SCENARIO), "redis", "acksim.model.processor:process")
    r.at(10.0, ("publish", "a1", 1, 10.0))
    r.at(10.0, ("step", None))
    r.at(10.0, ("deploy", 1.0))
    r.at(9.5, ("publish", "a2", 1, 9.5))
    assert [heapq.heappop(r._heap)[-1][0] for _ in range(4)] == ["publish", "deploy", "publish", "step"]
