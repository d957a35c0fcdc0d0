"""Virtual time inside the code under test.

While user code runs (between ``VirtualClock.enter(now, sleeper)`` and ``exit()``, i.e. while
the harness has switched into a worker's greenlet), the clocks follow the simulation:

* wall clocks = ``epoch + now``: ``time.time``, ``time.time_ns``, ``datetime.datetime.now``,
  ``utcnow``, ``today``, ``datetime.date.today``, ``time.localtime`` / ``gmtime`` /
  ``strftime`` without argument, ``time.clock_gettime(CLOCK_REALTIME)``, ``uuid.uuid1``.
  These are patched by time-machine at the C level, which changes the built-in function objects
  themselves, so names bound early (``from time import time``, ``from datetime import datetime``)
  follow too. By default each ``enter`` starts a time-machine travel to the exact nanosecond
  (``travel(whole seconds, tick=False)`` then ``shift(fraction)``, both exact) and ``exit``
  stops it, so the harness between two switches reads real time with no care at all
  (``session=True``: one travel for the whole run, cheaper, see ``VirtualClock``).
* monotonic clocks = ``monotonic_origin + now``: ``time.monotonic``, ``time.perf_counter`` and
  their ``_ns`` forms. time-machine leaves them alone; ``enter`` sets the ``time`` module's
  attributes to dispatchers, and ``EARLY_BOUND`` lets ``images.Image`` rebind names bound early.
* ``time.sleep(s)`` = a virtual sleep: it calls the ``sleeper`` given to ``enter`` (the harness
  switches to the worker's SimPy process with a ``Sleep(s)`` request; virtual time passes; no
  wall time). Same mechanism as the monotonic clocks: time-machine does not patch ``sleep``.

The dispatchers answer with the real clock (and really sleep) outside ``enter``/``exit`` and in
any thread but the one that entered, so the watchdog thread and the harness stay on real time.
For real wall-clock reads *during* user code (another thread), use ``real_time()``.

Limits: ``sleep`` / ``monotonic`` / ``perf_counter`` bound early somewhere ``EARLY_BOUND``
rebinding does not reach (a closure, a container, a third-party module's global, C code)
stay real; ``time.process_time`` / ``thread_time`` (CPU time) stay real; C extensions reading
the system clock directly (``clock_gettime`` in C) see real time. The time zone is the
process's: set ``TZ=UTC`` once at harness start for naive ``datetime.now()`` to be the same on
every machine (time-machine would set ``TZ`` per travel for a ``datetime`` destination, at
13-25 µs per switch, which is why ``enter`` passes a number). time-machine patches process-wide, so
another thread reading ``time.time()`` during user code gets virtual time.
"""

from __future__ import annotations

import _thread
import datetime as dt
import math
import operator
import time
from typing import Any, Callable

import time_machine
from time_machine import escape_hatch

NS_PER_S = 1_000_000_000
DEFAULT_MONOTONIC_ORIGIN_S = 10_000.0  # never 0.0: code may treat a falsy timestamp as "unset"

real_sleep = time.sleep
real_monotonic = time.monotonic
real_monotonic_ns = time.monotonic_ns
real_perf_counter = time.perf_counter
real_perf_counter_ns = time.perf_counter_ns

# (clock, monotonic seconds, monotonic ns, sleeper, thread id) while user code runs, else None
_ACTIVE: tuple | None = None


def real_time() -> float:
    """The real ``time.time()`` in seconds, also while a virtual clock is entered."""
    return escape_hatch.time.time() if escape_hatch.is_travelling() else time.time()


def real_time_ns() -> int:
    """The real ``time.time_ns()``, also while a virtual clock is entered."""
    return escape_hatch.time.time_ns() if escape_hatch.is_travelling() else time.time_ns()


def _check_sleep_length(seconds: Any) -> float:
    """``seconds`` as a float, with the errors the real ``time.sleep`` raises: ``TypeError``
    for a non-number, ``ValueError`` for a negative length or NaN, ``OverflowError`` for
    infinity."""
    if isinstance(seconds, (str, bytes)) or not hasattr(seconds, "__float__") and not hasattr(seconds, "__index__"):
        raise TypeError(f"'{type(seconds).__name__}' object cannot be interpreted as an integer")
    s = float(seconds)
    if math.isnan(s):
        raise ValueError("Invalid value NaN (not a number)")
    if s < 0:
        raise ValueError("sleep length must be non-negative")
    if math.isinf(s):
        raise OverflowError("timestamp out of range for platform time_t")
    return s


def virtual_sleep(seconds: float) -> None:
    """``time.sleep`` for user code: hands ``seconds`` (a float >= 0) to the entered clock's
    sleeper, which passes virtual time; a real sleep outside user code or in another thread.
    Raises what the real ``time.sleep`` raises for a bad length, and whatever the sleeper raises
    (the harness's ``Abandoned`` when the worker crashes during the sleep)."""
    active = _ACTIVE
    if active is None or _thread.get_ident() != active[4]:
        return real_sleep(seconds)
    active[3](_check_sleep_length(seconds))
    return None


def virtual_monotonic() -> float:
    """``time.monotonic`` for user code: ``monotonic_origin + now`` in seconds; real outside."""
    active = _ACTIVE
    if active is None or _thread.get_ident() != active[4]:
        return real_monotonic()
    return active[1]


def virtual_monotonic_ns() -> int:
    """``time.monotonic_ns`` for user code: ``monotonic_origin + now`` in ns; real outside."""
    active = _ACTIVE
    if active is None or _thread.get_ident() != active[4]:
        return real_monotonic_ns()
    return active[2]


def virtual_perf_counter() -> float:
    """``time.perf_counter`` for user code: the same virtual clock as ``virtual_monotonic``."""
    active = _ACTIVE
    if active is None or _thread.get_ident() != active[4]:
        return real_perf_counter()
    return active[1]


def virtual_perf_counter_ns() -> int:
    """``time.perf_counter_ns`` for user code: the same virtual clock as ``virtual_monotonic_ns``."""
    active = _ACTIVE
    if active is None or _thread.get_ident() != active[4]:
        return real_perf_counter_ns()
    return active[2]


_PATCHES = {"sleep": virtual_sleep, "monotonic": virtual_monotonic,
            "monotonic_ns": virtual_monotonic_ns, "perf_counter": virtual_perf_counter,
            "perf_counter_ns": virtual_perf_counter_ns}
_PATCHED_NAMES = tuple(_PATCHES)
_TIME_DICT = vars(time)  # written directly: a dict update is cheaper than five setattr calls
_get_patched = operator.itemgetter(*_PATCHED_NAMES)

# original function -> virtual one, for images.Image(rebind=EARLY_BOUND): rebinds
# ``from time import sleep`` (and monotonic, perf_counter) in freshly loaded user modules.
EARLY_BOUND = {real_sleep: virtual_sleep, real_monotonic: virtual_monotonic,
               real_monotonic_ns: virtual_monotonic_ns, real_perf_counter: virtual_perf_counter,
               real_perf_counter_ns: virtual_perf_counter_ns}


def _shift_exact(traveller: time_machine.Traveller, delta_ns: int) -> None:
    """Move ``traveller`` by exactly ``delta_ns``: ``shift`` takes an int as whole seconds
    (exact) and a float as seconds rounded to the ns (exact for a fraction of a second)."""
    seconds, fraction_ns = divmod(delta_ns, NS_PER_S)
    if seconds:
        traveller.shift(seconds)
    if fraction_ns:
        traveller.shift(fraction_ns / NS_PER_S)


class VirtualClock:
    """The clocks user code sees: wall time ``epoch + now``, monotonic time
    ``monotonic_origin + now`` (``now`` = the simulation's ``env.now``, in seconds).

    ``epoch`` must be a timezone-aware ``datetime`` (``ValueError`` otherwise); it may be in the
    past or the future. ``monotonic_origin`` is in seconds. Virtual instants are kept in integer
    nanoseconds: ``timestamp_ns(now) = epoch_ns + round(now * 1e9)``.

    ``enter(now, sleeper)`` before each switch into user code and ``exit()`` after it; one clock
    entered at a time (``RuntimeError`` otherwise).

    ``session=False`` (the default): each ``enter`` starts a time-machine travel and ``exit``
    stops it, so outside user code every clock is real. ``session=True``: one travel between
    ``start()`` and ``stop()`` (or ``with clock:``), ``enter`` only shifts it; cheaper per
    switch, but between switches ``time.time()`` and ``datetime.now()`` stay frozen at the last
    virtual instant for the harness and every library it uses (logging timestamps included), so
    the harness must read wall time with ``real_time()`` / ``time_machine.escape_hatch``.
    """

    def __init__(self, epoch: dt.datetime, *, monotonic_origin: float = DEFAULT_MONOTONIC_ORIGIN_S,
                 session: bool = False) -> None:
        if not isinstance(epoch, dt.datetime) or epoch.tzinfo is None or epoch.utcoffset() is None:
            raise ValueError(f"epoch must be a timezone-aware datetime, got {epoch!r}")
        self.epoch = epoch.astimezone(dt.timezone.utc)
        whole = self.epoch.replace(microsecond=0)
        self.epoch_ns = int(whole.timestamp()) * NS_PER_S + self.epoch.microsecond * 1_000
        self.monotonic_origin = float(monotonic_origin)
        self._origin_ns = round(self.monotonic_origin * NS_PER_S)
        self.session = session
        self._travel: time_machine.travel | None = None  # the current travel
        self._traveller: time_machine.Traveller | None = None
        self._at_ns = 0  # where the session's traveller is
        self._saved: dict | None = None  # while entered: the time module's own attributes
        self._last: tuple = (None, 0, 0.0, 0)  # (now, target ns, monotonic s, monotonic ns) last entered
        self._restore_key: tuple = ()  # the attributes ``_restore`` puts back (reused while unchanged)
        self._restore: dict = {}

    def timestamp_ns(self, now: float) -> int:
        """The virtual ``time.time_ns()`` at simulation time ``now`` (seconds)."""
        return self.epoch_ns + round(now * NS_PER_S)

    def timestamp(self, now: float) -> float:
        """The virtual ``time.time()`` at ``now``: ``timestamp_ns(now) / 10**9``, correctly
        rounded (equal to ``epoch.timestamp() + now`` whenever that sum is exact)."""
        return self.timestamp_ns(now) / NS_PER_S

    def datetime(self, now: float, tz: dt.tzinfo = dt.timezone.utc) -> dt.datetime:
        """The virtual ``datetime.now(tz)`` at ``now`` (microseconds truncated, like
        time-machine)."""
        seconds, ns = divmod(self.timestamp_ns(now), NS_PER_S)
        return dt.datetime.fromtimestamp(seconds, tz).replace(microsecond=ns // 1_000)

    def _begin_travel(self, target_ns: int) -> None:
        seconds, fraction_ns = divmod(target_ns, NS_PER_S)
        self._travel = time_machine.travel(seconds, tick=False)  # an int: exact, no TZ change
        self._traveller = self._travel.start()
        if fraction_ns:
            self._traveller.shift(fraction_ns / NS_PER_S)
        self._at_ns = target_ns

    def _end_travel(self) -> None:
        travel, self._travel, self._traveller = self._travel, None, None
        travel.stop()

    def start(self) -> None:
        """Session mode: begin the travel for the whole simulation (wall clocks read ``epoch``
        until the first ``enter``). Raises ``RuntimeError`` when not in session mode or
        already started."""
        if not self.session or self._travel is not None:
            raise RuntimeError("start() is for a session clock that is not started")
        self._begin_travel(self.epoch_ns)

    def stop(self) -> None:
        """Session mode: end the travel. Raises ``RuntimeError`` when not started or entered."""
        if not self.session or self._travel is None or self._saved is not None:
            raise RuntimeError("stop() is for a started session clock, outside enter/exit")
        self._end_travel()

    def __enter__(self) -> "VirtualClock":
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def enter(self, now: float, sleeper: Callable[[float], Any]) -> None:
        """Make the clocks read simulation time ``now`` (seconds) until ``exit()``; ``sleeper``
        receives the length of every ``time.sleep`` in user code (seconds, a float >= 0).
        Cost with ``exit``: about 3 µs (1.5 µs in session mode). Raises ``RuntimeError`` when
        a clock is entered, or a session clock is not started."""
        global _ACTIVE
        if _ACTIVE is not None:
            raise RuntimeError("a virtual clock is already entered")
        last = self._last
        if now != last[0]:  # the instants follow from ``now`` alone: computed once per instant
            ns = round(now * NS_PER_S)
            mono_ns = self._origin_ns + ns
            self._last = last = (now, self.epoch_ns + ns, mono_ns / NS_PER_S, mono_ns)
        target_ns = last[1]
        if not self.session:
            self._begin_travel(target_ns)
        elif self._traveller is None:
            raise RuntimeError("session clock not started: call start() first")
        elif target_ns != self._at_ns:
            _shift_exact(self._traveller, target_ns - self._at_ns)
            self._at_ns = target_ns
        _ACTIVE = (self, last[2], last[3], sleeper, _thread.get_ident())
        saved = _get_patched(_TIME_DICT)
        if saved != self._restore_key:
            self._restore_key, self._restore = saved, dict(zip(_PATCHED_NAMES, saved))
        self._saved = self._restore
        _TIME_DICT.update(_PATCHES)

    def exit(self) -> None:
        """Leave user code: real clocks again (in session mode the wall clocks stay at the
        virtual instant). Raises ``RuntimeError`` when this clock is not entered."""
        global _ACTIVE
        if _ACTIVE is None or _ACTIVE[0] is not self or self._saved is None:
            raise RuntimeError("this virtual clock is not entered")
        _TIME_DICT.update(self._saved)
        self._saved = None
        _ACTIVE = None
        if not self.session:
            self._end_travel()

    def run(self, now: float, sleeper: Callable[[float], Any], fn: Callable, *args: Any) -> Any:
        """``fn(*args)`` between ``enter(now, sleeper)`` and ``exit()``; returns its result."""
        self.enter(now, sleeper)
        try:
            return fn(*args)
        finally:
            self.exit()
