"""Differential tests: the memory twin (serializable) agrees with real SQLite, step by step;
PostgreSQL agrees with SQLite on every schedule whose transactions do not overlap.

Hypothesis generates interleaved operations of 2-3 sessions on a small key space; each step
runs on a fresh SQLite database and a fresh memory database with the same options, and must
give the same outcome (return value or error class), the same autocommitted writes, and at
the end the same committed state. Commit write logs are compared as commit return values.

PostgreSQL's writers do not exclude each other (SQLite's do), so overlapping transactions
differ by design there (its own tests pin those: ``test_postgres_store``); with transactions
one after another every isolation level must give SQLite's answers, except outbox ``seq``
numbers, which a sequence draws (a rolled-back insert leaves a gap), so events compare by
their order.
"""

from __future__ import annotations

import tempfile
from dataclasses import replace
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import HealthCheck, example, given, settings
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
    "get_for_update": st.tuples(ACCOUNT_IDS),
    "apply_if_current": st.tuples(ACCOUNT_IDS, VERSIONS),
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
        elif name == "get_for_update":
            value = session.accounts.get(args[0], for_update=True)
        elif name == "apply_if_current":
            value = session.cleanup_store.apply_if_current(account_id=args[0], cleanup_version=args[1])
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


def final_state(db, renumber: bool = False) -> tuple:
    """Accounts, markers and outbox events; ``renumber``: events' seq replaced by their rank."""
    reader = db.session()
    events = reader.outbox.events()
    if renumber:
        events = [replace(e, seq=i) for i, e in enumerate(events, 1)]
    state = (reader.accounts.all(), reader.cleanup_store.markers(), events)
    reader.close()
    return state


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


# one session's work: an autocommitted call, or a whole transaction ending in commit or rollback
CALLS = OPERATIONS.filter(lambda op: op[0] not in ("begin", "commit", "rollback"))
BLOCKS = st.tuples(st.integers(0, 2), st.one_of(
    CALLS.map(lambda op: [op]),
    st.tuples(st.lists(CALLS, max_size=6), st.sampled_from(["commit", "rollback"])).map(
        lambda t: [("begin",), *t[0], (t[1],)])))
SERIAL = st.lists(BLOCKS, min_size=1, max_size=12)


def renumbered(outcome):
    """An outcome with outbox events' seq replaced by their rank (a list of events only)."""
    kind, value = outcome
    if isinstance(value, list) and value and hasattr(value[0], "seq"):
        return kind, [replace(e, seq=i) for i, e in enumerate(value, 1)]
    return outcome


@settings(max_examples=3 * settings.default.max_examples, deadline=None,  # ci: 120
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(isolation=st.sampled_from(["serializable", "repeatable_read", "read_committed"]),
       unique_markers=st.booleans(), unique_keys=st.booleans(), blocks=SERIAL)
def test_postgres_agrees_with_sqlite_on_serial_schedules(postgres_server, isolation, unique_markers, unique_keys,
                                                         blocks):
    with tempfile.TemporaryDirectory() as tmp:
        real = open_database("sqlite", f"{tmp}/diff.sqlite", DbOptions("serializable", unique_markers, unique_keys))
        pg = open_database("postgres", None, DbOptions(isolation, unique_markers, unique_keys))
        try:
            sessions = [(real.session(), pg.session()) for _ in range(3)]
            for i, (who, ops) in enumerate(blocks):
                r, p = sessions[who]
                for op in ops:
                    expected = (renumbered(perform(r, op)), r.in_transaction, r.take_autocommitted())
                    got = (renumbered(perform(p, op)), p.in_transaction, p.take_autocommitted())
                    assert got == expected, f"block {i}: session {who} {op}"
            assert final_state(pg, renumber=True) == final_state(real, renumber=True)
        finally:
            real.close()
            pg.close()


@pytest.mark.parametrize("isolation", ["serializable", "repeatable_read", "read_committed"])
def test_postgres_serial_example(postgres_server, isolation):
    """One schedule of every kind of call, spelled out (the property above draws them)."""
    blocks = [(0, [put("a")]), (1, [("begin",), ("get_for_update", "a"), ("apply_if_current", "a", 1),
                                    ("add_once", "a", 1), ("commit",)]),
              (2, [("begin",), ("add_once", "b", 1), ("rollback",)]), (0, [("add_once", "b", 2)]),
              (1, [("apply_if_current", "a", 2)]), (2, [("mark_sent", "a", 1)]), (0, [("due", 2)])]
    test_postgres_agrees_with_sqlite_on_serial_schedules.hypothesis.inner_test(
        postgres_server, isolation, True, True, blocks)
