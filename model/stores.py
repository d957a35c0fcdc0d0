"""Opening a store backend by name: "sqlite" (real, durable) or "memory" (fast twin).

Both return a ``acksim.model.store_api.Database``; see ``acksim.model.sqlite_store`` and
``acksim.model.memory_store`` for how each one implements transactions and conflicts.
"""

from __future__ import annotations

from acksim.model.memory_store import MemoryDatabase
from acksim.model.sqlite_store import SqliteDatabase
from acksim.model.store_api import Database, DbOptions

BACKENDS = ("sqlite", "memory")
_ISOLATIONS = ("serializable", "read_committed")


def open_database(
    backend: str, path: str | None = None, options: DbOptions = DbOptions()
) -> Database:
    """Open a database of the named backend.

    ``backend``: "sqlite" (``path`` to a database file is required; created with the schema
    if absent, reused otherwise) or "memory" (``path`` is ignored; a fresh empty database).
    ``options``: isolation level and uniqueness of markers and outbox keys.

    Raises ValueError (one line naming the field) for an unknown backend or isolation level,
    a missing sqlite ``path``, isolation "read_committed" on sqlite, or an sqlite file created
    with different uniqueness options.
    """
    if options.isolation not in _ISOLATIONS:
        raise ValueError(
            f"isolation={options.isolation!r}: unknown isolation level (expected one of "
            f"{', '.join(_ISOLATIONS)})"
        )
    if backend == "memory":
        return MemoryDatabase(options)
    if backend == "sqlite":
        if options.isolation != "serializable":
            raise ValueError(
                f"isolation={options.isolation!r}: sqlite offers only serializable isolation"
            )
        if path is None:
            raise ValueError("path: the sqlite backend needs a database file path")
        return SqliteDatabase(str(path), options)
    raise ValueError(
        f"backend={backend!r}: unknown backend (expected one of {', '.join(BACKENDS)})"
    )
