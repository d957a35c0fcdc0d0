"""The shipment fan-out: keys, error classification, the delivery processor and both stores."""

from __future__ import annotations

import pytest

from acksim.model.errors import BusySnapshotError, TransactionStateError, UniqueViolation
from acksim.model.shipment import (
    DEAD_LETTER,
    DONE,
    Decision,
    DeliveryTask,
    ShipmentUpdate,
    backoff_s,
    classify,
    deliver,
    delivery_key,
    fan_out,
    update_complete,
)
from acksim.model.shipment_store import (
    DeliveryRecord,
    MemoryDeliveryRecords,
    SqliteDeliveryRecords,
    connect,
)

BASE_S, MAX_S = 2.0, 30.0
UPDATE = ShipmentUpdate("upd-1", ("sub-a", "sub-b", "sub-c"))
TASK_A, TASK_B, TASK_C = fan_out("job-1", UPDATE)
KEY_A = "cleanup:job-1:sub-a"


class FakeEndpoint:
    """Answers each subscriber from its script (the last answer repeats; (200, None) when
    unscripted) and logs every send as (subscriber, update id, idempotency key)."""

    def __init__(self, script: dict[str, list[tuple[int, float | None]]] | None = None):
        self.script = {s: list(answers) for s, answers in (script or {}).items()}
        self.sends: list[tuple[str, str, str]] = []

    def send(self, subscriber: str, update_id: str, idempotency_key: str):
        self.sends.append((subscriber, update_id, idempotency_key))
        answers = self.script.get(subscriber) or [(200, None)]
        return answers.pop(0) if len(answers) > 1 else answers[0]


def work(records, task: DeliveryTask, endpoint, attempt: int = 1) -> Decision:
    """One worker attempt: begin, deliver, commit on "done" (the ack would follow), else
    roll back."""
    records.begin()
    decision = deliver(task, records, endpoint, attempt=attempt, base_s=BASE_S, max_s=MAX_S)
    if decision.action == "done":
        records.commit()
    else:
        records.rollback()
    return decision


@pytest.fixture(params=["sqlite", "memory"])
def store_backend(request) -> str:
    return request.param


@pytest.fixture
def open_records(store_backend, tmp_path):
    """``open_records()``: a fresh-or-shared records store of ``store_backend``; sqlite ones
    are separate connections to one file (closed after the test)."""
    conns = []
    memory = MemoryDeliveryRecords()

    def make():
        if store_backend == "memory":
            return memory
        conns.append(connect(str(tmp_path / "records.sqlite")))
        return SqliteDeliveryRecords(conns[-1])

    yield make
    for conn in conns:
        conn.close()


@pytest.fixture
def records(open_records):
    return open_records()


# --- keys, tasks, updates ----------------------------------------------------------------


def test_delivery_key_and_fan_out():
    assert delivery_key("job-1", "rec-9") == "cleanup:job-1:rec-9"
    assert fan_out("job-1", UPDATE) == (
        DeliveryTask("job-1", "upd-1", "sub-a", "sub-a"),
        DeliveryTask("job-1", "upd-1", "sub-b", "sub-b"),
        DeliveryTask("job-1", "upd-1", "sub-c", "sub-c"),
    )
    assert [t.key for t in fan_out("job-1", UPDATE)] == [
        "cleanup:job-1:sub-a", "cleanup:job-1:sub-b", "cleanup:job-1:sub-c"]


@pytest.mark.parametrize("job_id, record_id", [("", "r"), ("j", ""), ("a:b", "r"), (7, "r")])
def test_delivery_key_rejects_ambiguous_or_empty_ids(job_id, record_id):
    with pytest.raises(ValueError):
        delivery_key(job_id, record_id)


@pytest.mark.parametrize(
    "subscribers, message",
    [((), "non-empty tuple"), (["a"], "non-empty tuple"), (("a", "a"), "each subscriber once"),
     (("a", ""), "non-empty string")],
)
def test_shipment_update_rejects_bad_subscribers(subscribers, message):
    with pytest.raises(ValueError, match=message):
        ShipmentUpdate("upd-1", subscribers)


def test_decision_rejects_bad_shapes():
    with pytest.raises(ValueError, match="action"):
        Decision("ack")
    with pytest.raises(ValueError, match="only a retry"):
        Decision("done", 1.0)
    with pytest.raises(ValueError, match="delay_s"):
        Decision("retry", -1.0)


# --- error classification ----------------------------------------------------------------

CLASSIFICATION = [
    # (status, retry_after_s, attempt) -> decision; base 2 s, cap 30 s
    ((200, None, 1), DONE),
    ((201, None, 1), DONE),
    ((204, 5.0, 3), DONE),
    ((400, None, 1), DEAD_LETTER),
    ((404, None, 2), DEAD_LETTER),
    ((409, 5.0, 1), DEAD_LETTER),
    ((429, 12.5, 1), Decision("retry", 12.5)),
    ((429, 12.5, 4), Decision("retry", 12.5)),  # Retry-After, not the backoff
    ((429, 90.0, 1), Decision("retry", 90.0)),  # honoured above the cap
    ((429, 0.0, 1), Decision("retry", 0.0)),
    ((429, None, 1), Decision("retry", 2.0)),  # no Retry-After: the backoff
    ((429, None, 3), Decision("retry", 8.0)),
    ((429, None, 6), Decision("retry", 30.0)),
    ((500, None, 1), Decision("retry", 2.0)),
    ((500, None, 2), Decision("retry", 4.0)),
    ((500, None, 3), Decision("retry", 8.0)),
    ((500, None, 4), Decision("retry", 16.0)),
    ((500, None, 5), Decision("retry", 30.0)),  # 32 capped
    ((500, None, 6), Decision("retry", 30.0)),
    ((503, None, 1), Decision("retry", 2.0)),
    ((503, None, 2), Decision("retry", 4.0)),
    ((503, None, 3), Decision("retry", 8.0)),
    ((503, None, 4), Decision("retry", 16.0)),
    ((503, None, 5), Decision("retry", 30.0)),
    ((503, 120.0, 6), Decision("retry", 30.0)),  # 5xx ignores Retry-After: stays bounded
]


@pytest.mark.parametrize("response, expected", CLASSIFICATION,
                         ids=[f"{s}-ra{ra}-attempt{a}" for (s, ra, a), _ in CLASSIFICATION])
def test_classify(response, expected):
    status, retry_after_s, attempt = response
    assert classify(status, retry_after_s, attempt, BASE_S, MAX_S) == expected


@pytest.mark.parametrize(
    "args, field",
    [((302, None, 1, 2.0, 30.0), "status"), ((100, None, 1, 2.0, 30.0), "status"),
     ((600, None, 1, 2.0, 30.0), "status"), ((429, -1.0, 1, 2.0, 30.0), "retry_after_s"),
     ((429, float("nan"), 1, 2.0, 30.0), "retry_after_s"), ((500, None, 0, 2.0, 30.0), "attempt"),
     ((500, None, 1, 0.0, 30.0), "base_s"), ((500, None, 1, 2.0, 1.0), "max_s")],
)
def test_classify_rejects_bad_input(args, field):
    with pytest.raises(ValueError, match=field):
        classify(*args)


def test_classify_rejects_a_non_int_status():
    with pytest.raises(TypeError, match="status"):
        classify("200", None, 1, BASE_S, MAX_S)


def test_backoff_reaches_the_cap_without_overflow():
    assert [backoff_s(a, 0.5, 5.0) for a in range(1, 7)] == [0.5, 1.0, 2.0, 4.0, 5.0, 5.0]
    assert backoff_s(5000, 2.0, 30.0) == 30.0


# --- the processor ------------------------------------------------------------------------


def test_first_delivery_sends_once_and_records(records):
    endpoint = FakeEndpoint()
    assert work(records, TASK_A, endpoint) == DONE
    assert endpoint.sends == [("sub-a", "upd-1", KEY_A)]
    assert records.all() == (DeliveryRecord(KEY_A, "upd-1", "sub-a"),)


def test_duplicate_task_one_send_one_record(records):
    endpoint = FakeEndpoint()
    assert work(records, TASK_A, endpoint) == DONE
    assert work(records, TASK_A, endpoint, attempt=2) == DONE  # crash after commit, redelivered
    assert work(records, DeliveryTask("job-1", "upd-1", "sub-a", "sub-a"), endpoint) == DONE  # spurious dup
    assert endpoint.sends == [("sub-a", "upd-1", KEY_A)]
    assert records.all() == (DeliveryRecord(KEY_A, "upd-1", "sub-a"),)


@pytest.mark.parametrize("status", [400, 404, 409, 410])
def test_4xx_dead_letters_without_record(records, status):
    endpoint = FakeEndpoint({"sub-a": [(status, None)]})
    assert work(records, TASK_A, endpoint) == DEAD_LETTER
    assert endpoint.sends == [("sub-a", "upd-1", KEY_A)]
    assert records.all() == ()


def test_429_retries_after_retry_after_then_records(records):
    endpoint = FakeEndpoint({"sub-a": [(429, 12.5), (200, None)]})
    assert work(records, TASK_A, endpoint, attempt=1) == Decision("retry", 12.5)
    assert records.all() == ()
    assert work(records, TASK_A, endpoint, attempt=2) == DONE
    assert endpoint.sends == [("sub-a", "upd-1", KEY_A)] * 2  # same idempotency key
    assert records.all() == (DeliveryRecord(KEY_A, "upd-1", "sub-a"),)


def test_5xx_retries_with_bounded_backoff(records):
    endpoint = FakeEndpoint({"sub-a": [(503, None)]})
    decisions = [work(records, TASK_A, endpoint, attempt=a) for a in range(1, 7)]
    assert decisions == [Decision("retry", d) for d in (2.0, 4.0, 8.0, 16.0, 30.0, 30.0)]
    assert len(endpoint.sends) == 6
    assert records.all() == ()


def test_crash_before_commit_resends_with_the_same_key(records):
    endpoint = FakeEndpoint()
    records.begin()
    assert deliver(TASK_A, records, endpoint) == DONE
    records.rollback()  # the worker vanished before the commit: nothing is durable
    assert records.all() == ()
    assert work(records, TASK_A, endpoint, attempt=2) == DONE
    assert endpoint.sends == [("sub-a", "upd-1", KEY_A)] * 2
    assert records.all() == (DeliveryRecord(KEY_A, "upd-1", "sub-a"),)


def test_update_complete_only_when_all_n_recorded(records):
    endpoint = FakeEndpoint({"sub-b": [(503, None), (200, None)]})
    trace = []
    for task, attempt in [(TASK_A, 1), (TASK_B, 1), (TASK_C, 1), (TASK_B, 2)]:
        decision = work(records, task, endpoint, attempt)
        trace.append((task.subscriber, decision.action, update_complete(records, UPDATE)))
    assert trace == [("sub-a", "done", False), ("sub-b", "retry", False),
                     ("sub-c", "done", False), ("sub-b", "done", True)]
    assert records.recorded_for("upd-1") == ("sub-a", "sub-c", "sub-b")


def test_dead_lettered_subscriber_keeps_the_update_incomplete(records):
    endpoint = FakeEndpoint({"sub-c": [(404, None)]})
    assert [work(records, t, endpoint).action for t in (TASK_A, TASK_B, TASK_C)] == [
        "done", "done", "dead_letter"]
    assert update_complete(records, UPDATE) is False


def test_bad_policy_is_rejected_before_any_send(records):
    endpoint = FakeEndpoint()
    with pytest.raises(ValueError, match="attempt"):
        deliver(TASK_A, records, endpoint, attempt=0)
    assert endpoint.sends == []


# --- the stores (both backends, same results) ---------------------------------------------


def test_store_reads_and_writes(records):
    records.record_once("cleanup:j1:a", "u1", "a")  # autocommit
    records.begin()
    records.record_once("cleanup:j2:x", "u2", "x")
    records.record_once("cleanup:j1:b", "u1", "b")
    assert records.in_transaction
    assert records.was_recorded("cleanup:j1:b")  # own write visible
    assert records.recorded_for("u1") == ("a", "b")
    records.commit()
    assert not records.in_transaction
    assert records.was_recorded("cleanup:j1:a")
    assert not records.was_recorded("cleanup:j1:c")
    assert records.recorded_for("u1") == ("a", "b")
    assert records.recorded_for("u2") == ("x",)
    assert records.recorded_for("u3") == ()
    assert records.all() == (DeliveryRecord("cleanup:j1:a", "u1", "a"),
                             DeliveryRecord("cleanup:j2:x", "u2", "x"),
                             DeliveryRecord("cleanup:j1:b", "u1", "b"))


def test_rollback_discards(records):
    records.begin()
    records.record_once(KEY_A, "upd-1", "sub-a")
    assert update_complete(records, ShipmentUpdate("upd-1", ("sub-a",)))
    records.rollback()
    assert records.all() == ()
    assert not update_complete(records, ShipmentUpdate("upd-1", ("sub-a",)))


def test_duplicate_committed_key_raises_unique_violation(records):
    records.record_once(KEY_A, "upd-1", "sub-a")
    with pytest.raises(UniqueViolation, match="already recorded"):
        records.record_once(KEY_A, "upd-1", "sub-a")
    records.begin()
    with pytest.raises(UniqueViolation):
        records.record_once(KEY_A, "upd-other", "sub-z")
    records.rollback()
    assert records.all() == (DeliveryRecord(KEY_A, "upd-1", "sub-a"),)


def test_duplicate_in_one_transaction_keeps_it_open(records):
    records.begin()
    records.record_once("cleanup:j:1", "u", "s1")
    with pytest.raises(UniqueViolation):
        records.record_once("cleanup:j:1", "u", "s1")
    assert records.in_transaction
    records.record_once("cleanup:j:2", "u", "s2")
    records.commit()
    assert records.recorded_for("u") == ("s1", "s2")


def test_a_second_job_for_the_same_update_is_not_deduplicated_by_key(records):
    """The key is per job: a re-published fan-out records the subscriber again, and
    ``recorded_for`` shows the repeat for an exactly-once check to count."""
    endpoint = FakeEndpoint()
    again = fan_out("job-2", UPDATE)[0]
    assert [work(records, t, endpoint).action for t in (TASK_A, again)] == ["done", "done"]
    assert records.recorded_for("upd-1") == ("sub-a", "sub-a")
    assert [s[2] for s in endpoint.sends] == [KEY_A, "cleanup:job-2:sub-a"]


def test_transaction_state_errors(records):
    with pytest.raises(TransactionStateError):
        records.commit()
    with pytest.raises(TransactionStateError):
        records.rollback()
    records.begin()
    with pytest.raises(TransactionStateError):
        records.begin()
    records.rollback()


def test_backends_agree_on_a_script(tmp_path):
    script = [("record", "k1", "u", "a"), ("begin",), ("record", "k2", "u", "b"),
              ("record", "k1", "u", "a"), ("was", "k2"), ("rollback",), ("was", "k2"),
              ("record", "k2", "u", "b"), ("commit",), ("for", "u"), ("all",)]

    def run(records):
        outcomes = []
        for op, *args in script:
            call = {"record": records.record_once, "begin": records.begin,
                    "commit": records.commit, "rollback": records.rollback,
                    "was": records.was_recorded, "for": records.recorded_for,
                    "all": records.all}[op]
            try:
                outcomes.append(("ok", call(*args)))
            except Exception as exc:  # noqa: BLE001 - the error class is the outcome
                outcomes.append(("error", type(exc).__name__))
        return outcomes

    conn = connect(str(tmp_path / "agree.sqlite"))
    try:
        on_sqlite = run(SqliteDeliveryRecords(conn))
    finally:
        conn.close()
    assert on_sqlite == run(MemoryDeliveryRecords())
    assert on_sqlite[3] == ("error", "UniqueViolation")
    assert on_sqlite[8] == ("error", "TransactionStateError")  # the script's commit: no tx
    assert on_sqlite[-1] == ("ok", (DeliveryRecord("k1", "u", "a"),
                                    DeliveryRecord("k2", "u", "b")))


# --- SQLite only: real connections ---------------------------------------------------------


def test_sqlite_needs_autocommit_connection(tmp_path):
    import sqlite3

    conn = sqlite3.connect(str(tmp_path / "x.sqlite"))  # default: implicit transactions
    try:
        with pytest.raises(ValueError, match="isolation_level=None"):
            SqliteDeliveryRecords(conn)
    finally:
        conn.close()


@pytest.mark.parametrize("store_backend", ["sqlite"])
def test_sqlite_commit_is_visible_to_other_connections(open_records):
    writer, reader = open_records(), open_records()
    writer.begin()
    writer.record_once(KEY_A, "upd-1", "sub-a")
    assert reader.all() == ()  # uncommitted
    writer.commit()
    assert reader.was_recorded(KEY_A)
    assert reader.all() == (DeliveryRecord(KEY_A, "upd-1", "sub-a"),)


@pytest.mark.parametrize("store_backend", ["sqlite"])
def test_sqlite_concurrent_duplicate_surfaces_as_unique_violation(open_records):
    """Worker 1 runs in autocommit mode; while it waits on the endpoint, worker 2 records the
    same task. Worker 1's write raises UniqueViolation; its retry finds the record."""
    one, two = open_records(), open_records()

    class Racing(FakeEndpoint):
        def send(self, subscriber, update_id, idempotency_key):
            if not self.sends:
                deliver(TASK_A, two, FakeEndpoint())
            return super().send(subscriber, update_id, idempotency_key)

    endpoint = Racing()
    with pytest.raises(UniqueViolation):
        deliver(TASK_A, one, endpoint)
    assert deliver(TASK_A, one, endpoint, attempt=2) == DONE
    assert len(endpoint.sends) == 1
    assert one.all() == (DeliveryRecord(KEY_A, "upd-1", "sub-a"),)


@pytest.mark.parametrize("store_backend", ["sqlite"])
def test_sqlite_open_transaction_across_the_send_conflicts(open_records):
    """The hazard the module docstring names: worker 1 reads inside BEGIN, worker 2 commits
    another subscriber's record meanwhile, worker 1's record_once gets BusySnapshotError."""
    one, two = open_records(), open_records()

    class Racing(FakeEndpoint):
        def send(self, subscriber, update_id, idempotency_key):
            if subscriber == "sub-a":
                work(two, TASK_B, FakeEndpoint())
            return super().send(subscriber, update_id, idempotency_key)

    one.begin()
    with pytest.raises(BusySnapshotError):
        deliver(TASK_A, one, Racing())
    one.rollback()
    assert one.recorded_for("upd-1") == ("sub-b",)
