"""Running unmodified synchronous processor code inside virtual time.

The processor is ordinary Python that calls its stores directly. Each attempt runs in its own
greenlet; the stores it receives are thin proxies that, at every call, switch back to the
worker's SimPy process. The worker lets virtual time pass (the store's latency), lets the
fault plan decide whether to crash there, and then switches back in, so other workers and
renewals interleave between any two store calls, like threads on a scheduler we control.

A crash is not an exception the processor can catch: the worker abandons the greenlet, and
the greenlet is unwound with ``Abandoned`` (a BaseException) while every store refuses
further calls.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from greenlet import greenlet, getcurrent


class Abandoned(BaseException):
    """Thrown into an attempt the harness gave up on (its worker crashed). Not an Exception,
    so a processor's ``except Exception`` does not swallow it."""


@dataclass(frozen=True, slots=True)
class StoreCall:
    """The attempt is about to call ``store.method`` (``when`` = "before") or has just
    called it (``when`` = "after"); ``index`` counts the attempt's store calls from 0."""

    store: str
    method: str
    index: int
    when: str


@dataclass(frozen=True, slots=True)
class Finished:
    """The processor returned (``error`` None) or raised ``error`` (an Exception)."""

    error: BaseException | None = None


class _StoreProxy:
    """Forwards method calls to ``target``, switching to the harness before and after each."""

    def __init__(self, attempt: "Attempt", name: str, target: Any) -> None:
        self._attempt = attempt
        self._name = name
        self._target = target

    def __getattr__(self, method: str):
        fn = getattr(self._target, method)
        if not callable(fn):
            return fn
        attempt, store = self._attempt, self._name

        def call(*args, **kwargs):
            i = attempt.begin_call(store, method)
            result = fn(*args, **kwargs)
            attempt.end_call(store, method, i)
            return result

        call.__name__ = method
        setattr(self, method, call)  # cache: later calls skip __getattr__
        return call


class Attempt:
    """One run of ``processor(job, accounts, cleanup_store, outbox)`` in its own greenlet.

    Lifecycle: ``step()`` runs the processor until its next store call boundary and returns
    a ``StoreCall`` or, at the end, ``Finished``; call ``step()`` again to continue. After
    ``abandon()`` the attempt is dead: the processor was unwound and its stores refuse calls.
    ``calls`` counts the store calls made so far.
    """

    def __init__(self, processor: Callable, job: Any, stores: dict[str, Any]) -> None:
        self.calls = 0
        self.abandoned = False
        proxies = {name: _StoreProxy(self, name, target) for name, target in stores.items()}
        self._parent = getcurrent()
        self._g = greenlet(lambda: self._body(processor, job, proxies), parent=self._parent)

    @staticmethod
    def _body(processor: Callable, job: Any, proxies: dict[str, Any]) -> Finished:
        try:
            processor(job, proxies["accounts"], proxies["cleanup_store"], proxies["outbox"])
        except Exception as exc:  # noqa: BLE001 - the processor's own error is a result
            return Finished(exc)
        return Finished()

    def begin_call(self, store: str, method: str) -> int:
        """Called inside the greenlet before a store call; returns the call's index."""
        if self.abandoned:
            raise Abandoned()
        i = self.calls
        self.calls += 1
        self._parent.switch(StoreCall(store, method, i, "before"))
        return i

    def end_call(self, store: str, method: str, index: int) -> None:
        """Called inside the greenlet after a store call returned."""
        self._parent.switch(StoreCall(store, method, index, "after"))

    def step(self) -> StoreCall | Finished:
        """Run until the next boundary. Raises RuntimeError on a finished or abandoned attempt."""
        if self.abandoned or self._g.dead:
            raise RuntimeError("attempt is no longer running")
        result = self._g.switch()
        return result

    def abandon(self) -> None:
        """Unwind the processor with ``Abandoned`` and refuse every later store call."""
        self.abandoned = True
        if self._g and not self._g.dead:
            try:
                self._g.throw(Abandoned())
            except Abandoned:
                pass
