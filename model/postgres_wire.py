"""PostgreSQL statements driven from one thread, where a statement that waits on a lock parks
its actor instead of blocking the thread (the ``postgres`` store backend's wire).

Each ``Wire`` is one libpq connection (one server process) of one session. A statement is
sent with ``send_query_params`` and its answer read without blocking (``consume_input``,
``is_busy``): most answer within ``FIRST_WAIT_S`` of wall time. One that has not is asked
about on the database's monitoring connection (``pg_blocking_pids``), as PostgreSQL's own
isolation tester does, to tell a blocked statement from a slow one: a slow one is waited for
(wall time); a blocked one first has its database look for a lock cycle (``LockHub``), then
calls ``LockWaits.park`` (the harness lets virtual time pass and other actors run) and, when
that returns, looks again. With no ``LockWaits`` a statement simply waits (wall time), as an
ordinary client would. If ``park`` raises (the actor crashed), the statement is cancelled and
the error goes on.

Deadlocks are broken here, not by PostgreSQL (whose detector runs on a wall-clock timer, so
its victim would depend on timing; the private cluster sets ``deadlock_timeout`` to an hour):
when a statement blocks, the wait-for graph of the database's sessions that are in a statement
is read, and a cycle through it is broken by cancelling its youngest transaction (the one that
began last), whose statement then raises ``DeadlockDetected``. Ties and orders never depend
on server process ids: sessions are ordered by when they were opened.

Values travel as text: parameters are encoded from str, int, bool (None is NULL), columns
decoded by type (bigint, integer, boolean, text). SQLSTATE maps to ``acksim.model.errors``:
40001 ``SerializationFailure``, 40P01 ``DeadlockDetected``, 23505 ``UniqueViolation``, 55P03
``LockNotAvailable``, 25P02 ``TransactionAborted``; anything else is a ``StoreError``.
"""

from __future__ import annotations

import contextlib
import select
from typing import Sequence

from psycopg import pq

from acksim.model.errors import (
    DeadlockDetected,
    LockNotAvailable,
    SerializationFailure,
    StoreError,
    TransactionAborted,
    UniqueViolation,
)
from acksim.model.store_api import Blocked, LockWaits

FIRST_WAIT_S = 0.002  # wall seconds a statement may take before it is asked whether it is blocked
NEXT_WAIT_S = 0.01  # then between two questions while it runs unblocked
_ERRORS = {b"40001": SerializationFailure, b"40P01": DeadlockDetected, b"23505": UniqueViolation,
           b"55P03": LockNotAvailable, b"25P02": TransactionAborted}
_QUERY_CANCELED = b"57014"
_BOOL, _INT8, _INT4, _INT2 = 16, 20, 23, 21
_INT_ARRAY = 1007


def connect(conninfo: str, schema: str | None = None) -> pq.PGconn:
    """A libpq connection (autocommit until BEGIN) with messages below ERROR silenced and, with
    ``schema``, that schema first on its search path. Raises ``StoreError`` when it fails."""
    pg = pq.PGconn.connect(conninfo.encode())
    if pg.status != pq.ConnStatus.OK:
        message = pg.get_error_message()
        pg.finish()
        raise StoreError(f"cannot connect to PostgreSQL: {message.strip()}")
    setup = "SET client_min_messages TO error"
    if schema is not None:
        setup += f"; SET search_path TO {quote_ident(schema)}"
    check(pg.exec_(setup.encode()))
    return pg


def quote_ident(name: str) -> str:
    """``name`` as a quoted SQL identifier."""
    return '"' + name.replace('"', '""') + '"'


def encode(value) -> bytes | None:
    """A parameter in text format (None: NULL)."""
    if value is None:
        return None
    if value is True or value is False:
        return b"t" if value else b"f"
    return str(value).encode()


def decode(res: pq.PGresult) -> list[tuple]:
    """The rows of a result as tuples of Python values (by column type; text otherwise)."""
    types = [res.ftype(j) for j in range(res.nfields)]
    rows = []
    for i in range(res.ntuples):
        row = []
        for j, oid in enumerate(types):
            raw = res.get_value(i, j)
            if raw is None:
                row.append(None)
            elif oid in (_INT8, _INT4, _INT2):
                row.append(int(raw))
            elif oid == _BOOL:
                row.append(raw == b"t")
            elif oid == _INT_ARRAY:
                row.append(tuple(int(x) for x in raw.strip(b"{}").split(b",") if x))
            else:
                row.append(raw.decode())
        rows.append(tuple(row))
    return rows


def error_of(res: pq.PGresult, victim: bool = False) -> StoreError:
    """The ``acksim.model.errors`` exception for a failed result (``victim``: this session's
    statement was cancelled to break a deadlock)."""
    state = res.error_field(pq.DiagnosticField.SQLSTATE) or b""
    message = (res.error_message or b"").decode(errors="replace").strip()
    if state == _QUERY_CANCELED and victim:
        return DeadlockDetected(f"chosen as the victim of a lock cycle: {message}")
    return _ERRORS.get(state, StoreError)(f"{message} (SQLSTATE {state.decode()})")


def check(res: pq.PGresult) -> pq.PGresult:
    """``res`` unless it failed (then its ``error_of``)."""
    if res.status == pq.ExecStatus.FATAL_ERROR:
        raise error_of(res)
    return res


class Wire:
    """One session's connection (see the module docstring). ``number``: the session's order
    in its database; ``tx_number``: when its current transaction began (the database's
    counter; set by the session); ``busy``: a statement is out; ``victim``: cancelled to
    break a deadlock."""

    def __init__(self, conninfo: str, schema: str, hub: "LockHub") -> None:
        self.pg = connect(conninfo, schema)
        self.pid = self.pg.backend_pid
        self.hub = hub
        self.number = hub.add(self)
        self.tx_number = 0
        self.busy = False
        self.victim = False
        self.parked = False

    def execute(self, sql: bytes, params: Sequence = ()) -> pq.PGresult:
        """Run one statement; its result (``error_of`` raised for a failure). Parks while it
        is blocked (``LockWaits.park``); ``self.parked`` says afterwards whether it did."""
        pg = self.pg
        self.parked = False
        try:
            pg.send_query_params(sql, [encode(v) for v in params])
        except Exception as exc:  # noqa: BLE001 - psycopg's OperationalError on a dead connection
            raise StoreError(f"PostgreSQL connection lost: {exc}") from exc
        self.busy = True
        try:
            self._await()
        finally:
            self.busy = False
        return self._result()

    def _await(self) -> None:
        if self._answered(FIRST_WAIT_S):
            return
        waits = self.hub.waits
        while True:
            if waits is None or self.victim:
                self._answered(None)
                return
            holders = self.hub.holders(self.pid)
            if not holders:
                if self._answered(NEXT_WAIT_S):
                    return
                continue
            self.hub.break_cycle(self)
            if self.victim:
                continue
            self.parked = True
            try:
                waits.park(Blocked(self.pid, holders))
            except BaseException:
                self.cancel()
                raise
            if self._answered(0):
                return

    def _answered(self, timeout: float | None) -> bool:
        """True once the answer is in (waiting up to ``timeout`` wall seconds, None: no limit)."""
        pg = self.pg
        try:
            pg.consume_input()
            while pg.is_busy():
                if timeout == 0 or not select.select([pg.socket], [], [], timeout)[0]:
                    return False
                pg.consume_input()
        except Exception as exc:  # noqa: BLE001 - psycopg's OperationalError on a dead connection
            raise StoreError(f"PostgreSQL connection lost: {exc}") from exc
        return True

    def _result(self) -> pq.PGresult:
        last = failed = None
        while (res := self.pg.get_result()) is not None:
            if res.status == pq.ExecStatus.FATAL_ERROR:
                failed = failed or res
            else:
                last = res
        if failed is not None:
            victim, self.victim = self.victim, False
            raise error_of(failed, victim)
        assert last is not None
        return last

    def cancel(self) -> None:
        """Cancel the statement that is out, if any, and drop its answer (never raises)."""
        with contextlib.suppress(Exception):
            if self.pg.is_busy():
                self.hub.cancel(self.pid)
                self._answered(None)
            while self.pg.get_result() is not None:
                pass
        self.victim = False

    def close(self) -> None:
        """Cancel what is out and close the connection (idempotent)."""
        self.cancel()
        self.hub.remove(self)
        with contextlib.suppress(Exception):
            self.pg.finish()


class LockHub:
    """A database's monitoring connection and its sessions' wires: who blocks whom
    (``holders``), cycles (``break_cycle``), cancelling (``cancel``), the transaction counter
    (``next_tx``) and the harness's ``waits`` (None: statements wait in wall time)."""

    def __init__(self, conninfo: str, waits: LockWaits | None) -> None:
        self.monitor = connect(conninfo)
        self.waits = waits
        self.wires: dict[int, Wire] = {}
        self._opened = 0
        self._tx = 0

    def add(self, wire: Wire) -> int:
        self.wires[wire.pid] = wire
        self._opened += 1
        return self._opened

    def remove(self, wire: Wire) -> None:
        self.wires.pop(wire.pid, None)

    def next_tx(self) -> int:
        """The next transaction's number (the youngest has the highest)."""
        self._tx += 1
        return self._tx

    def holders(self, pid: int) -> tuple[int, ...]:
        """The server processes ``pid`` waits for (empty when it is not waiting on a lock)."""
        res = check(self.monitor.exec_params(b"SELECT pg_blocking_pids($1)", [encode(pid)]))
        return decode(res)[0][0]

    def cancel(self, pid: int) -> None:
        """Ask the server to cancel ``pid``'s running statement."""
        check(self.monitor.exec_params(b"SELECT pg_cancel_backend($1)", [encode(pid)]))

    def break_cycle(self, wire: Wire) -> None:
        """If ``wire``'s wait closes a cycle of waits among this database's sessions, cancel
        the cycle's youngest transaction (marked ``victim``) and, when that is another
        session, wake the parked ones (``waits.released``) so that it sees its error."""
        busy = sorted((w for w in self.wires.values() if w.busy), key=lambda w: w.number)
        pids = "{" + ",".join(str(w.pid) for w in busy) + "}"
        res = check(self.monitor.exec_params(
            b"SELECT pid, pg_blocking_pids(pid) FROM unnest($1::int[]) AS pid", [pids.encode()]))
        by_pid = {w.pid: w for w in busy}
        edges = {by_pid[pid]: sorted((by_pid[h] for h in holders if h in by_pid), key=lambda w: w.number)
                 for pid, holders in decode(res)}
        cycle = cycle_through(wire, edges)
        if not cycle:
            return
        victim = max(cycle, key=lambda w: w.tx_number)
        victim.victim = True
        self.cancel(victim.pid)
        if victim is not wire and self.waits is not None:
            self.waits.released()

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.monitor.finish()


def cycle_through(start, edges: dict) -> list | None:
    """A cycle of ``edges`` (node -> ordered successors) through ``start``, as the list of its
    nodes from ``start``, or None. Depth first, successors in their order: deterministic."""
    path, seen, stack = [start], {start}, [iter(edges.get(start, ()))]
    while stack:
        nxt = next(stack[-1], None)
        if nxt is None:
            stack.pop()
            path.pop()
        elif nxt is start:
            return list(path)
        elif nxt not in seen and nxt in edges:
            seen.add(nxt)
            path.append(nxt)
            stack.append(iter(edges[nxt]))
    return None
