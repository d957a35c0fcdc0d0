"""History records: immutable named tuples, sent between processes as plain tuples."""

import pickle

import pytest

from acksim.history import COLUMNS, History, Record, pack, to_frame, unpack
from acksim.world.sandbox.contain import Child


def _history() -> tuple[Record, ...]:
    now = [0.0]
    h = History(lambda: now[0])
    h.record("published", "queue", message_id=1, account_id="acct-1", cleanup_version=2, deadline=60.0,
             visible_at=60.0)
    now[0] = 60.25
    h.record("delivered", "worker-1", message_id=1, account_id="acct-1", cleanup_version=2, receive_count=1,
             deadline=60.0)
    h.record("acked", "worker-1", message_id=1, receive_count=1, detail="r-1")
    return h.frozen()


def test_a_record_is_immutable_and_has_the_columns_in_order():
    r = _history()[1]
    with pytest.raises(AttributeError):
        r.kind = "acked"
    assert COLUMNS == ("time", "seq", "kind", "actor", "message_id", "account_id", "cleanup_version",
                       "receive_count", "deadline", "visible_at", "detail")
    assert (r.time, r.seq, r.kind, r.actor, r.receive_count, r.detail) == (60.25, 1, "delivered", "worker-1", 1, "")
    assert Record(1.0, 0, "acked", "w") == Record(time=1.0, seq=0, kind="acked", actor="w", detail="")


def test_records_of_one_instant_share_their_time_and_deadline_floats():
    h = _history()
    assert h[1].time is h[2].time
    assert h[0].deadline is h[1].deadline


def test_pack_and_unpack_give_back_equal_records():
    h = _history()
    rows = pack(h)
    assert all(type(row) is tuple for row in rows)
    back = unpack(pickle.loads(pickle.dumps(rows)))
    assert back == h
    assert all(type(r) is Record for r in back)
    assert back[2].detail == "r-1" and back[0].visible_at == 60.0


def test_a_record_comes_back_from_a_supervised_child():
    h = _history()
    with Child(lambda _args, _emit: (h[2], list(h)), keep=False) as child:
        one, many = child.call(None).value
    assert one == h[2] and type(one) is Record
    assert many == list(h)


def test_the_frame_has_one_row_per_record():
    frame = to_frame(_history())
    assert list(frame.columns) == list(COLUMNS)
    assert frame["kind"].tolist() == ["published", "delivered", "acked"]
    assert frame["time"].tolist() == [0.0, 60.25, 60.25]


@pytest.mark.parametrize("width", [10, 12])
def test_unpack_refuses_a_row_without_one_value_per_column(width):
    rows = pack(_history())
    rows[1] = rows[1][:width] if width < len(COLUMNS) else rows[1] + ("extra",)
    with pytest.raises(ValueError, match="needs 11 values"):
        unpack(rows)
    assert unpack([]) == ()


def test_a_final_state_packed_for_the_parent_comes_back_equal():
    from datetime import datetime, timezone

    from acksim.model.job import Account
    from acksim.model.store_api import OutboxEvent
    from acksim.outcome import FinalState, pack_final, unpack_final

    final = FinalState((Account("a1", 2, False, datetime(2026, 1, 1, tzinfo=timezone.utc)),
                        Account("a2", 1, True, datetime(2026, 1, 2, tzinfo=timezone.utc))),
                       (("a1", 2), ("a1", 2)), (OutboxEvent(1, "renewal-reminder:a1:2", "a1", 2, "sent"),),
                       (7,), (8, 9), 123.5, True, "run.max_records = 10", contained="processor_hung")
    packed = pack_final(final)
    assert type(packed[0][0]) is tuple and type(packed[1][0]) is tuple
    back = unpack_final(pickle.loads(pickle.dumps(packed)))
    assert back == final
    assert type(back.accounts[0]) is Account and type(back.outbox[0]) is OutboxEvent
