"""Differential test: the memory twin (serializable) agrees with real SQLite, step by step.

Hypothesis generates interleaved operations of 2-3 sessions on a small key space; each step
runs on a fresh SQLite database and a fresh memory database with the same options, and must
give the same outcome (return value or error class), the same autocommitted writes, and at
the end the same committed state. Commit write logs are compared as commit return values.
"""

from __future__ import annotations

import tempfile
from datetime import datetime, timedelta, timezone

from hypothesis import example, given, settings
from hypothesis import strategies as st

from acksim.model.errors import StoreError
from acksim.model.job import Account, reminder_event_key
from acksim.model.store_api import DbOptions
from acksim.model.stores import open_database

T0 = datetime(2024, 3, 1, 12, 0, tzinfo=timezone.utc)
ACCOUNT_IDS = st.sampled_from(["a", "b"])
VERSIONS = st.sampled_from([1, 2])
DEADLINES = st.sampled_from([T0 - timedelta(seconds=60), T0, T0 + timedelta(seconds=60)])

ARGUMENTS = {
    "begin": st.just(()),
    "commit": st.just(()),
    "rollback": st.just(()),
    "get": st.tuples(ACCOUNT_IDS),
    "put": st.tuples(ACCOUNT_IDS, VERSIONS, st.booleans(), DEADLINES),
    "delete": st.tuples(ACCOUNT_IDS),
    "was_applied": st.tuples(ACCOUNT_IDS, VERSIONS),
    "apply_once": st.tuples(ACCOUNT_IDS, VERSIONS),
    "add_once": st.tuples(ACCOUNT_IDS, VERSIONS),
    "mark_sent": st.tuples(ACCOUNT_IDS, VERSIONS),
    "mark_failed": st.tuples(ACCOUNT_IDS, VERSIONS),
    "due": st.tuples(st.integers(0, 2)),
    "markers": st.just(()),
    "pending": st.just(()),
    "all": st.just(()),
}
# weighted so that transactions are usually open, overlap and conflict
KINDS = st.sampled_from(["begin"] * 2 + list(ARGUMENTS)[1:] + ["commit", "get", "was_applied"])
OPERATIONS = KINDS.flatmap(lambda kind: ARGUMENTS[kind].map(lambda args: (kind, *args)))
STEPS = st.lists(st.tuples(st.integers(0, 2), OPERATIONS), min_size=5, max_size=50)


def perform(session, op: tuple):
    """Run one operation; its outcome as ("ok", value) or ("error", error class name)."""
    name, *args = op
    try:
        if name in ("begin", "commit", "rollback"):
            value = getattr(session, name)()
        elif name == "get":
            value = session.accounts.get(args[0])
        elif name == "put":
            account_id, version, renewed, deadline = args
            value = session.accounts.put(Account(account_id, version, renewed, deadline))
        elif name == "delete":
            value = session.accounts.delete(args[0])
        elif name == "was_applied":
            value = session.cleanup_store.was_applied(*args)
        elif name == "apply_once":
            value = session.cleanup_store.apply_once(account_id=args[0], cleanup_version=args[1])
        elif name == "add_once":
            value = session.outbox.add_once(
                event_key=reminder_event_key(*args), account_id=args[0], cleanup_version=args[1]
            )
        elif name in ("mark_sent", "mark_failed"):
            value = getattr(session.outbox, name)(reminder_event_key(*args))
        elif name == "due":
            value = session.accounts.due(T0, args[0])
        elif name == "all":
            value = session.accounts.all()
        elif name == "markers":
            value = session.cleanup_store.markers()
        else:
            value = session.outbox.pending(10)
    except StoreError as exc:
        return ("error", type(exc).__name__)
    return ("ok", value)


def final_state(db) -> tuple:
    reader = db.session()
    return (reader.accounts.all(), reader.cleanup_store.markers(), reader.outbox.events())


def put(account_id: str, version: int = 1) -> tuple:
    return ("put", account_id, version, False, T0)


@settings(max_examples=10 * settings.default.max_examples, deadline=None)  # ci: 400, nightly: 20,000
# SQLite behaviours worth pinning: busy snapshot then retry; a busy first write takes no
# snapshot; a commit that changed nothing makes no snapshot stale.
@example(2, True, True, [(0, ("begin",)), (0, ("get", "a")), (1, put("a")),
                         (0, ("apply_once", "a", 1)), (0, ("rollback",)), (0, ("begin",)),
                         (0, ("get", "a")), (0, ("apply_once", "a", 1)), (0, ("commit",))])
@example(2, True, True, [(1, ("begin",)), (1, put("a")), (0, ("begin",)), (0, put("b")),
                         (1, ("commit",)), (0, ("get", "a")), (0, put("b")), (0, ("commit",))])
@example(2, True, True, [(0, ("apply_once", "a", 1)), (0, ("begin",)), (0, ("get", "a")),
                         (1, ("begin",)), (1, ("apply_once", "a", 1)), (1, ("commit",)),
                         (0, put("a")), (0, ("commit",))])
@given(
    n_sessions=st.integers(2, 3),
    unique_markers=st.booleans(),
    unique_keys=st.booleans(),
    steps=STEPS,
)
def test_memory_twin_agrees_with_sqlite(n_sessions, unique_markers, unique_keys, steps):
    options = DbOptions("serializable", unique_markers, unique_keys)
    with tempfile.TemporaryDirectory() as tmp:
        real = open_database("sqlite", f"{tmp}/diff.sqlite", options)
        twin = open_database("memory", None, options)
        try:
            real_sessions = [real.session() for _ in range(n_sessions)]
            twin_sessions = [twin.session() for _ in range(n_sessions)]
            for i, (who, op) in enumerate(steps):
                r, t = real_sessions[who % n_sessions], twin_sessions[who % n_sessions]
                expected = (perform(r, op), r.in_transaction, r.take_autocommitted())
                got = (perform(t, op), t.in_transaction, t.take_autocommitted())
                assert got == expected, f"step {i}: session {who % n_sessions} {op}"
            # end every open transaction by committing it (rolling back if that fails)
            for r, t in zip(real_sessions, twin_sessions):
                if r.in_transaction:
                    assert perform(t, ("commit",)) == perform(r, ("commit",))
                    if r.in_transaction:
                        r.rollback()
                        t.rollback()
            assert final_state(twin) == final_state(real)
        finally:
            real.close()
            twin.close()
