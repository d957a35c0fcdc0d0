"""The PostgreSQL server of the ``postgres`` store backend: a private cluster acksim starts and
always stops, or the user's own server.

``ACKSIM_POSTGRES_DSN`` set (a libpq connection string or URI): that server is used as it is;
each database acksim opens there lives in a schema of its own, dropped when it closes
(``acksim.model.postgres_store``). Otherwise a ``PrivateCluster``: ``initdb`` into a new
temporary folder ``acksim-pg-*`` (trust authentication, user ``acksim``, locale C, no fsync),
then ``postgres`` listening on a Unix socket in that folder only (no TCP port), with
``fsync``, ``full_page_writes`` and ``synchronous_commit`` off (nothing here must survive a
crash), autovacuum off (nothing moves rows behind the simulation's back) and a
``deadlock_timeout`` of an hour (acksim breaks deadlocks itself, the same way every time).
Started in about 0.6 s; stopped with a fast shutdown (SIGINT) and its folder removed.

Running as root: ``initdb`` and ``postgres`` refuse root, so they run as the ``postgres`` OS
user that Debian's package creates (``nobody`` where there is none); the folder is given to
that user. The binaries are looked up in ``/usr/lib/postgresql/<version>/bin`` (Debian; the
highest version), then ``pg_config --bindir``, then ``PATH``.

One cluster per process, shared by every database that process opens (``acquire`` /
``release``): it stops when its last user releases it, unless a ``held_server()`` block keeps
it for the runs inside (the command line holds it around a run, so the supervised child
process the run happens in uses the parent's cluster). A forked child never stops its parent's
cluster. Nets under a bypassed stop: ``acksim.server_process`` kills it at interpreter exit,
and the kernel when the process that started it dies (SIGQUIT; then only its folder is left).
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Iterator

from acksim.server_process import ServerProcess, log_tail

DSN_VARIABLE = "ACKSIM_POSTGRES_DSN"
USER = "acksim"
START_TIMEOUT_S = 30.0
SETTINGS = {
    "listen_addresses": "",  # the Unix socket in the cluster's folder only
    "fsync": "off",
    "full_page_writes": "off",
    "synchronous_commit": "off",
    "autovacuum": "off",
    "deadlock_timeout": "1h",
    "max_connections": "200",
    "shared_buffers": "32MB",
    "max_pred_locks_per_transaction": "256",
}


class PostgresError(RuntimeError):
    """Base class of the server's errors (one line, saying what to do where it can)."""


class PostgresNotInstalled(PostgresError):
    """No ``initdb``/``postgres`` binaries: install Debian's ``postgresql`` package."""


class PostgresStartError(PostgresError):
    """``initdb`` failed, or the server exited or did not answer in ``START_TIMEOUT_S``."""


def bin_dir() -> Path:
    """The folder of ``initdb`` and ``postgres``. Raises ``PostgresNotInstalled``."""
    debian = sorted(Path("/usr/lib/postgresql").glob("*/bin/postgres"),
                    key=lambda p: int(p.parent.parent.name) if p.parent.parent.name.isdigit() else 0)
    if debian:
        return debian[-1].parent
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        out = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True, timeout=10)
        if out.returncode == 0 and (Path(out.stdout.strip()) / "postgres").exists():
            return Path(out.stdout.strip())
    found = shutil.which("initdb")
    if found and (Path(found).resolve().parent / "postgres").exists():
        return Path(found).resolve().parent
    raise PostgresNotInstalled("PostgreSQL not found (no initdb/postgres): install it with "
                               "apt-get install postgresql (or run tools/install-postgres.sh)")


def run_as() -> str | None:
    """The OS user the server runs as: None (this one) unless we are root; then "postgres",
    or "nobody" where there is no such user."""
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam("postgres")
        return "postgres"
    except KeyError:
        return "nobody"


class PrivateCluster:
    """A throw-away cluster in its own temporary folder (see the module docstring).

    ``start()`` makes and starts it (``PostgresNotInstalled``, ``PostgresStartError``; on any
    failure nothing is left behind); ``conninfo`` is the connection string while it runs;
    ``stop()`` shuts it down and removes the folder (idempotent). ``folder``: the temporary
    folder (None once stopped); ``startup_s``: wall seconds the start took."""

    def __init__(self) -> None:
        self.folder: str | None = None
        self.proc: ServerProcess | None = None
        self.startup_s = 0.0
        self.owner_pid = os.getpid()

    @property
    def conninfo(self) -> str:
        if self.folder is None:
            raise PostgresError("the cluster is not running")
        return f"host={self.folder} dbname=postgres user={USER}"

    def start(self) -> None:
        t0 = time.monotonic()
        bins = bin_dir()
        user = run_as()
        self.folder = tempfile.mkdtemp(prefix="acksim-pg-", dir=_base_dir(user))
        self.owner_pid = os.getpid()
        try:
            if user is not None:
                entry = pwd.getpwnam(user)
                os.chown(self.folder, entry.pw_uid, entry.pw_gid)
            data = os.path.join(self.folder, "data")
            ids = {} if user is None else {"user": user, "group": pwd.getpwnam(user).pw_gid, "extra_groups": []}
            init = subprocess.run([str(bins / "initdb"), "-D", data, "-A", "trust", "-U", USER, "--no-sync",
                                   "-E", "UTF8", "--locale=C", "--no-instructions"],
                                  cwd=self.folder, capture_output=True, text=True, timeout=120, **ids)
            if init.returncode != 0:
                raise PostgresStartError(f"initdb failed ({init.returncode}): {init.stderr.strip()[-2000:]}")
            argv = [str(bins / "postgres"), "-D", data, "-k", self.folder]
            for key, value in SETTINGS.items():
                argv += ["-c", f"{key}={value}"]
            self.proc = ServerProcess(argv, os.path.join(self.folder, "postgres.log"), cwd=self.folder,
                                      user=user, stop_signal=signal.SIGINT, die_with_parent=True)
            self._wait_ready(t0)
        except BaseException:
            self.stop()
            raise
        self.startup_s = time.monotonic() - t0

    def _wait_ready(self, t0: float) -> None:
        import psycopg

        while True:
            assert self.proc is not None and self.folder is not None
            code = self.proc.exited()
            if code is not None:
                raise PostgresStartError(f"postgres exited with code {code} during startup:\n"
                                         + log_tail(self.proc.log_path))
            try:
                psycopg.connect(self.conninfo, connect_timeout=5).close()
                return
            except psycopg.OperationalError as exc:
                if time.monotonic() - t0 > START_TIMEOUT_S:
                    raise PostgresStartError(f"postgres not ready after {START_TIMEOUT_S:.0f} s ({exc}):\n"
                                             + log_tail(self.proc.log_path)) from exc
            time.sleep(0.02)

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.stop(term_timeout=10.0)
            self.proc = None
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None


def _base_dir(user: str | None) -> str:
    """Where the cluster's folder goes: the temporary folder (``TMPDIR``), unless its path is
    too long for the server's socket path (107 bytes) or, for a server that runs as another
    user, not open to that user; then /tmp."""
    base = tempfile.gettempdir()
    if len(base) > 60 or (user is not None and not _open_to_all(base)):
        return "/tmp"
    return base


def _open_to_all(path: str) -> bool:
    """True when every folder from / down to ``path`` lets any user through (o+x)."""
    current = Path(path).resolve()
    return all(p.stat().st_mode & 0o001 for p in (current, *current.parents))


_shared: dict = {"cluster": None, "users": 0, "held": 0}


def acquire() -> str:
    """The connection string of the server to use: ``ACKSIM_POSTGRES_DSN``'s, or this
    process's private cluster (started now if needed: ``PostgresNotInstalled``,
    ``PostgresStartError``). Pair every call with ``release()``."""
    dsn = os.environ.get(DSN_VARIABLE)
    if dsn:
        return dsn
    cluster = _shared["cluster"]
    if cluster is None or cluster.folder is None:
        cluster = PrivateCluster()
        cluster.start()
        _shared["cluster"] = cluster
    _shared["users"] += 1
    return cluster.conninfo


def release() -> None:
    """One user of ``acquire`` is done: stop the private cluster when it was the last and no
    ``held_server()`` block keeps it (never one a parent process started)."""
    if os.environ.get(DSN_VARIABLE):
        return
    _shared["users"] = max(_shared["users"] - 1, 0)
    _stop_if_unused()


def _stop_if_unused() -> None:
    cluster = _shared["cluster"]
    if cluster is not None and not _shared["users"] and not _shared["held"] and cluster.owner_pid == os.getpid():
        _shared["cluster"] = None
        cluster.stop()


@contextlib.contextmanager
def held_server() -> Iterator[str]:
    """Within the block the server is running (started now if needed) and kept between the
    databases opened and closed inside, in this process and its forked children; yields its
    connection string. Stopped at the end if nothing else uses it, also on an exception or
    KeyboardInterrupt."""
    conninfo = acquire()
    _shared["held"] += 1
    release()
    try:
        yield conninfo
    finally:
        _shared["held"] -= 1
        _stop_if_unused()


def running_cluster() -> PrivateCluster | None:
    """This process's private cluster while it runs, else None (for tests and reports)."""
    cluster = _shared["cluster"]
    return cluster if cluster is not None and cluster.folder is not None else None
