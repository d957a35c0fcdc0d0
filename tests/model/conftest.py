"""Fixtures shared by the store tests: a database factory parametrized over the backends."""

from __future__ import annotations

import pytest

from acksim.model.store_api import DbOptions
from acksim.model.stores import open_database


@pytest.fixture(params=["sqlite", "memory", "postgres"])
def backend(request) -> str:
    if request.param == "postgres":
        request.getfixturevalue("postgres_server")
    return request.param


@pytest.fixture
def make_db(backend, tmp_path):
    """``make_db(options=DbOptions())`` opens a fresh database of ``backend`` (closed after)."""
    opened = []

    def make(options: DbOptions = DbOptions()):
        path = None if backend == "postgres" else str(tmp_path / f"db{len(opened)}.sqlite")
        db = open_database(backend, path, options)
        opened.append(db)
        return db

    yield make
    for db in opened:
        db.close()
