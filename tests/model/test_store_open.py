"""``open_database``: backend selection and its one-line errors."""

from __future__ import annotations

import pytest

from acksim.model.memory_store import MemoryDatabase
from acksim.model.sqlite_store import SqliteDatabase
from acksim.model.store_api import DbOptions
from acksim.model.stores import open_database


def test_backends(tmp_path):
    db = open_database("sqlite", str(tmp_path / "a.db"))
    assert isinstance(db, SqliteDatabase)
    assert db.options == DbOptions()
    db.close()
    assert (tmp_path / "a.db").exists()
    assert isinstance(open_database("memory"), MemoryDatabase)
    rc = DbOptions(isolation="read_committed")
    assert open_database("memory", options=rc).options is rc


@pytest.mark.parametrize(
    "args, message",
    [
        (("mysql", "x.db"), r"^backend='mysql': unknown backend"),
        (("memory", None, DbOptions(isolation="repeatable_read")),
         r"^isolation='repeatable_read': memory offers only serializable and read_committed isolation$"),
        (("sqlite", None), r"^path: the sqlite backend needs a database file path$"),
        (("sqlite", ":memory:"), r"^path=':memory:'"),
        (("sqlite", "x.db", DbOptions(isolation="read_committed")),
         r"^isolation='read_committed': sqlite offers only serializable isolation$"),
        (("memory", None, DbOptions(isolation="snapshot")), r"^isolation='snapshot': unknown"),
    ],
)
def test_errors(tmp_path, monkeypatch, args, message):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match=message):
        open_database(*args)
    assert not (tmp_path / "x.db").exists()


def test_reopen_keeps_data_and_checks_uniqueness_options(tmp_path):
    path = str(tmp_path / "a.db")
    db = open_database("sqlite", path, DbOptions(unique_markers=False))
    db.session().cleanup_store.apply_once(account_id="x", cleanup_version=1)
    db.close()
    again = open_database("sqlite", path, DbOptions(unique_markers=False))
    assert again.session().cleanup_store.markers() == [("x", 1)]
    again.close()
    mismatch = r"^unique_markers=True: .*created with unique_markers=False"
    with pytest.raises(ValueError, match=mismatch):
        open_database("sqlite", path, DbOptions())
