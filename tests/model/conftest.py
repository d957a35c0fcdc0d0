"""Fixtures shared by the store tests: a database factory parametrized over both backends."""

from __future__ import annotations

import pytest

from acksim.model.store_api import DbOptions
from acksim.model.stores import open_database


@pytest.fixture(params=["sqlite", "memory"])
def backend(request) -> str:
    return request.param


@pytest.fixture
def make_db(backend, tmp_path):
    """``make_db(options=DbOptions())`` opens a fresh database of ``backend`` (closed after)."""
    opened = []

    def make(options: DbOptions = DbOptions()):
        db = open_database(backend, str(tmp_path / f"db{len(opened)}.sqlite"), options)
        opened.append(db)
        return db

    yield make
    for db in opened:
        db.close()
