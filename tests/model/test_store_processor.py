"""The reference processor inside a unit of work, on both backends."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from acksim.model import CleanupJob, process
from acksim.model.job import Account
from acksim.model.store_api import OutboxEvent, Write

T0 = datetime(2024, 3, 1, 12, 0, tzinfo=timezone.utc)


def run(session, job: CleanupJob) -> tuple[Write, ...]:
    session.begin()
    process(job, session.accounts, session.cleanup_store, session.outbox)
    return session.commit()


@pytest.fixture
def session(make_db):
    s = make_db().session()
    s.accounts.put(Account("fresh", 3, False, T0))
    s.accounts.put(Account("renewed", 3, True, T0))
    s.accounts.put(Account("done", 3, False, T0))
    s.cleanup_store.apply_once(account_id="done", cleanup_version=3)
    s.take_autocommitted()
    return s


@pytest.mark.parametrize(
    "job",
    [
        CleanupJob("gone", 3, T0),
        CleanupJob("fresh", 2, T0),  # superseded by version 3
        CleanupJob("renewed", 3, T0),
        CleanupJob("done", 3, T0),  # a retry of finished work
    ],
    ids=["gone", "stale-version", "renewed", "already-applied"],
)
def test_nothing_to_do(session, job):
    assert run(session, job) == ()
    assert session.cleanup_store.markers() == [("done", 3)]
    assert session.outbox.events() == []


def test_applied(session):
    writes = run(session, CleanupJob("fresh", 3, T0))
    assert writes == (
        Write("cleanup_applied", "fresh", 3),
        Write("outbox_added", "fresh", 3, "renewal-reminder:fresh:3"),
    )
    assert session.cleanup_store.markers() == [("done", 3), ("fresh", 3)]
    assert session.outbox.events() == [
        OutboxEvent(1, "renewal-reminder:fresh:3", "fresh", 3, "pending")
    ]
    # redelivery of the same job is now a no-op
    assert run(session, CleanupJob("fresh", 3, T0)) == ()
    assert len(session.outbox.events()) == 1
