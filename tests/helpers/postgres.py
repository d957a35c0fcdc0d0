"""What the PostgreSQL tests need: the server binaries and psycopg. ``need_postgres()`` skips a
test when they are missing, or fails it with ``ACKSIM_REQUIRE_POSTGRES=1`` (or
``ACKSIM_REQUIRE_LIVE=1``, as ``.ci/run`` sets both), naming what to install."""

from __future__ import annotations

import importlib.util
import os

import pytest

INSTALL = "tools/install-postgres.sh (apt-get install postgresql) && pip install 'acksim[postgres]'"


def missing() -> list[str]:
    """What is missing to run PostgreSQL tests here (empty: nothing)."""
    out = [] if importlib.util.find_spec("psycopg") else ["psycopg"]
    if not os.environ.get("ACKSIM_POSTGRES_DSN"):
        from acksim.postgres_server import PostgresNotInstalled, bin_dir

        try:
            bin_dir()
        except PostgresNotInstalled:
            out.append("postgresql (initdb, postgres)")
    return out


def need_postgres() -> None:
    """Skip (or, when required, fail) unless PostgreSQL tests can run here."""
    gone = missing()
    if gone:
        msg = f"postgres test did not run: missing {', '.join(gone)}; install: {INSTALL}"
        if os.environ.get("ACKSIM_REQUIRE_POSTGRES") == "1" or os.environ.get("ACKSIM_REQUIRE_LIVE") == "1":
            pytest.fail(msg)
        pytest.skip(msg)
