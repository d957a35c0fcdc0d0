"""The steps an attempt yields to its worker (``Sleep``, ``StoreCall``, ``Finished``) and the
store proxies that make every store call a step: the processor calls its stores as usual,
and each call switches back to the harness before and after it
(``acksim.world.sandbox.interleave.Attempt``'s ``begin_call`` and ``end_call``)."""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, NamedTuple


@dataclass(frozen=True, slots=True)
class Sleep:
    """The processor called ``time.sleep(seconds)``: the harness lets virtual time pass."""

    seconds: float


class StoreCall(NamedTuple):
    """The attempt is about to call ``store.method`` (``when`` = "before") or has just
    called it (``when`` = "after"); ``index`` counts the attempt's store calls from 0.
    Immutable; a named tuple, made at every boundary, costs a third of a frozen dataclass."""

    store: str
    method: str
    index: int
    when: str


@dataclass(frozen=True, slots=True)
class Finished:
    """The processor returned ``value`` (``error`` None) or raised ``error`` (an Exception)."""

    error: BaseException | None = None
    value: Any = None


class _StoreProxy:
    """Forwards method calls to ``target``, switching to the harness before and after each.

    The public methods of the target's class are methods of a subclass made once per target
    class (``proxy_for``), so an attempt's proxies cost one small object each; any other
    attribute goes through ``__getattr__`` (cached on the proxy after its first use)."""

    __slots__ = ("_attempt", "_name", "_target", "__dict__", "__weakref__")

    def __init__(self, attempt, name: str, target: Any) -> None:  # an interleave.Attempt
        self._attempt = attempt
        self._name = name
        self._target = target

    def __getattr__(self, method: str):
        fn = getattr(self._target, method)
        if not callable(fn):
            return fn
        call = _forwarding(method).__get__(self)  # what a class method of ``proxy_for`` does
        setattr(self, method, call)  # cache: later calls skip __getattr__
        return call


def _forwarding(method: str):
    """The proxy method for the target's ``method``: the boundary before, the call (the
    target's attribute looked up then), the boundary after. Made once per class for the public
    methods (``proxy_for``), on first use for any other callable attribute (``__getattr__``)."""

    def call(self, *args, **kwargs):
        attempt = self._attempt
        i = attempt.begin_call(self._name, method)
        result = getattr(self._target, method)(*args, **kwargs)
        attempt.end_call(self._name, method, i)
        return result

    call.__name__ = call.__qualname__ = method
    return call


_PROXY_CLASSES: dict[type, type] = {}


def proxy_for(target: Any) -> type:
    """The ``_StoreProxy`` subclass for ``target``'s class: a forwarding method for each of the
    class's public plain functions (not static or class methods, properties or attributes)."""
    kind = type(target)
    cls = _PROXY_CLASSES.get(kind)
    if cls is None:
        methods = {name: _forwarding(name) for name in dir(kind)
                   if not name.startswith("_") and inspect.isfunction(inspect.getattr_static(kind, name, None))}
        # named as the base, so a processor's error text about its store reads as before
        cls = _PROXY_CLASSES[kind] = type("_StoreProxy", (_StoreProxy,),
                                          {"__slots__": (), "__qualname__": "_StoreProxy", **methods})
    return cls
