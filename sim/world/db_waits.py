"""Waiting on database locks in virtual time: the world's ``acksim.model.store_api.LockWaits``.

A PostgreSQL statement that waits on a row lock another simulated actor's open transaction
holds must not block the one thread the whole world runs on. The store calls ``park(blocked)``
from the greenlet the statement runs in: the greenlet switches back to its parent, the SimPy
process that drives it, with the ``Blocked`` as the value (``acksim.world.attempt`` receives it
from ``Attempt.step``, as it receives a ``Sleep``; the renewals from ``run``). That process
waits on ``wait()``: a SimPy event that fires at the virtual instant the next transaction of
any session ends (``released``, called by the store after every commit, rollback or cancelled
statement), then switches back in, and the store looks again: the statement has answered,
still waits (it parks again) or waits for someone else now. So a blocked actor resumes at the
exact instant its holder commits or rolls back; every parked actor rechecks then, in the order
they parked (deterministic: no wall clock decides anything).

The harness's own code (the relay, the scheduler, the world's final read) runs in the world's
main greenlet, which has nowhere to park: a statement blocked there gets ``LockNotAvailable``
(a conflict: the caller retries later, as it retries a busy SQLite).
"""

from __future__ import annotations

from typing import Any, Callable, Iterator

from greenlet import getcurrent, greenlet

from acksim.model.errors import LockNotAvailable
from acksim.model.store_api import Blocked


class DbWaits:
    """The world's lock waits on ``env`` (a SimPy environment). Made in the greenlet the world
    runs in (its "main": statements blocked there cannot park)."""

    def __init__(self, env) -> None:
        self.env = env
        self.main = getcurrent()
        self._released = None  # the event parked processes wait on, made by the first of them
        self.parks = 0  # how many times a statement parked (for reports and tests)

    def park(self, blocked: Blocked) -> None:
        """Called by the store in the blocked statement's greenlet: switch to the process that
        drives it, which waits (``wait``) and switches back. ``LockNotAvailable`` from the
        world's main greenlet."""
        current = getcurrent()
        if current is self.main or current.parent is None:
            raise LockNotAvailable(f"a statement of the harness's own waits on a lock held by {blocked.holders}")
        self.parks += 1
        current.parent.switch(blocked)

    def released(self) -> None:
        """A transaction ended: wake every parked process (at this virtual instant)."""
        event, self._released = self._released, None
        if event is not None:
            event.succeed()

    def wait(self, blocked: Blocked) -> Iterator[Any]:
        """SimPy process step of a parked actor: until the next transaction ends."""
        if self._released is None:
            self._released = self.env.event()
        yield self._released

    def run(self, function: Callable[..., Any], *args: Any) -> Iterator[Any]:
        """SimPy process step: ``function(*args)`` in a greenlet of its own, waiting out each
        statement it parks (``wait``); returns its value, raises its exception."""
        runner = greenlet(function, parent=getcurrent())
        value = runner.switch(*args)
        while not runner.dead:
            yield from self.wait(value)
            value = runner.switch()
        return value
