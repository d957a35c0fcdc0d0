"""Opening a store backend by name: "sqlite" (real, durable), "memory" (fast twin) or
"postgres" (a real PostgreSQL).

Each returns a ``acksim.model.store_api.Database``; see ``acksim.model.sqlite_store``,
``acksim.model.memory_store`` and ``acksim.model.postgres_store`` for how each one implements
transactions and conflicts. The isolation levels each offers: ``ISOLATIONS``.
"""

from __future__ import annotations

from acksim.model.memory_store import MemoryDatabase
from acksim.model.sqlite_store import SqliteDatabase
from acksim.model.store_api import Database, DbOptions, LockWaits

BACKENDS = ("sqlite", "memory", "postgres")
# the isolation levels of each backend ("repeatable_read" on the memory twin: not yet)
ISOLATIONS = {"sqlite": ("serializable",), "memory": ("serializable", "read_committed"),
              "postgres": ("serializable", "repeatable_read", "read_committed")}
_ALL_ISOLATIONS = ("serializable", "repeatable_read", "read_committed")


def open_database(
    backend: str, path: str | None = None, options: DbOptions = DbOptions(), *,
    waits: LockWaits | None = None,
) -> Database:
    """Open a database of the named backend.

    ``backend``: "sqlite" (``path`` to a database file is required; created with the schema
    if absent, reused otherwise), "memory" (``path`` is ignored; a fresh empty database) or
    "postgres" (``path`` is a libpq connection string, or None for
    ``acksim.postgres_server``'s server; a fresh schema of its own). ``options``: isolation
    level and uniqueness of markers and outbox keys. ``waits``: how a PostgreSQL statement
    that waits on a lock parks its actor (``acksim.model.postgres_wire``; ignored by the
    others, which never wait).

    Raises ValueError (one line naming the field) for an unknown backend or isolation level,
    a level the backend does not offer (``ISOLATIONS``), a missing sqlite ``path``, or an
    sqlite file created with different uniqueness options; ``StoreError`` and
    ``acksim.postgres_server.PostgresError`` when PostgreSQL cannot be reached or started.
    """
    if options.isolation not in _ALL_ISOLATIONS:
        raise ValueError(
            f"isolation={options.isolation!r}: unknown isolation level (expected one of "
            f"{', '.join(_ALL_ISOLATIONS)})"
        )
    if backend in ISOLATIONS and options.isolation not in ISOLATIONS[backend]:
        raise ValueError(f"isolation={options.isolation!r}: {backend} offers only "
                         f"{' and '.join(ISOLATIONS[backend])} isolation")
    if backend == "memory":
        return MemoryDatabase(options)
    if backend == "postgres":
        from acksim.model.postgres_store import PostgresDatabase

        return PostgresDatabase(options, path, waits=waits)
    if backend == "sqlite":
        if path is None:
            raise ValueError("path: the sqlite backend needs a database file path")
        return SqliteDatabase(str(path), options)
    raise ValueError(
        f"backend={backend!r}: unknown backend (expected one of {', '.join(BACKENDS)})"
    )
