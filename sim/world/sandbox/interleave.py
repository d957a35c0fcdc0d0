"""Running unmodified synchronous processor code inside virtual time.

The processor is ordinary Python that calls its stores directly. Each attempt runs in its own
greenlet; the stores it receives are thin proxies that, at every call, switch back to the
worker's SimPy process. The worker lets virtual time pass (the store's latency), lets the
fault plan decide whether to crash there, and then switches back in, so other workers and
renewals interleave between any two store calls, like threads on a scheduler we control.

A crash is not an exception the processor can catch: the worker abandons the attempt, and
the greenlet is unwound with ``Abandoned`` (a BaseException) while every store refuses
further calls.

While the processor runs it lives in its worker's process image and on virtual time: every
switch into the greenlet enters the worker's ``acksim.world.sandbox.images.Image`` (its own copy of
the user's modules in ``sys.modules``) and the world's ``acksim.world.sandbox.vclock.VirtualClock``
(``time.time``, ``datetime.now`` and the like read ``epoch + env.now``; ``time.monotonic`` and
``perf_counter`` read an origin + ``env.now``; ``time.sleep``, also bound early as
``from time import sleep``, passes virtual time), and leaves both on the way out, so the
harness between two switches sees the real clocks and its own modules.

Misbehaving code gets a verdict, never a hung harness: ``time.sleep`` inside the processor
passes virtual time instead of wall time; a processor that swallows ``Abandoned`` and keeps
calling its stores is left suspended after ``MAX_REFUSED_CALLS`` refusals; and a processor
that runs longer than ``STEP_BUDGET_S`` of wall-clock time between two store calls (less
any time the process waited for a CPU: a starved process is not a hung one, see
``acksim.world.sandbox.runclock``) is interrupted and reported as ``ProcessorHung`` (the one
place the harness reads a clock), as is one that makes over ``MAX_CALLS`` store calls in one
attempt. Limits: the interruption is
a ``KeyboardInterrupt`` that a processor could swallow, it cannot stop a blocking C call,
a virtual clock does not move inside a busy-wait (``while monotonic() < t: pass`` is reported
as hung), and ``os._exit`` ends the process: only a separate process would contain those.
"""

from __future__ import annotations

import _thread
import ctypes
import os
import signal
import threading
import time
from typing import Any, Callable

from greenlet import greenlet, getcurrent

from acksim.world.sandbox.runclock import RunClock, TaskWait, schedstat_path
from acksim.world.sandbox.store_proxy import Finished, Sleep, StoreCall, proxy_for

STEP_BUDGET_S = 10.0
MAX_REFUSED_CALLS = 1000
MAX_CALLS = 10_000
_REAL_SLEEP = time.sleep
_REAL_MONOTONIC = time.monotonic  # bound early: user code may run with time.monotonic virtual
POLL_S = 0.05  # wall seconds between two looks of the watchdog at the running step
_DRAIN_TRIES = 100  # 1 ms sleeps waiting for an interrupt already sent to land (it lands at the first)
_ZOMBIES: list = []  # processors that would not stop; kept so garbage collection never resumes them
# In a supervised child (``acksim.world.sandbox.contain``): shared doubles the parent reads, [0] when
# the running step started (0: none), [1] its budget, [2] the harness's last sign of life
_SLOTS = None


class Abandoned(BaseException):
    """Thrown into an attempt the harness gave up on (its worker crashed). Not an Exception,
    so a processor's ``except Exception`` does not swallow it."""


class ProcessorHung(Exception):
    """The processor ran longer than its budget of wall-clock time (less any wait for a CPU)
    without reaching a store call, or made too many store calls in one attempt."""


class Attempt:
    """One run of ``processor(job, *stores.values())`` in its own greenlet (the cleanup
    design: ``processor(job, accounts, cleanup_store, outbox)``).

    ``image`` (an ``acksim.world.sandbox.images.Image``, whose ``function`` is normally
    ``processor``) is entered around every step; ``clock`` (an ``acksim.world.sandbox.vclock
    .VirtualClock``) is entered at ``now()`` (virtual seconds) around every step. Without a
    clock only ``time.sleep`` is replaced (by ``sleep``).

    Lifecycle: ``step()`` runs the processor until its next store call boundary and returns
    a ``StoreCall`` or, at the end, ``Finished``; call ``step()`` again to continue. After
    ``abandon()`` the attempt is dead: the processor was unwound and its stores refuse calls.
    ``calls`` counts the store calls made so far. Setting ``pause_after`` False at a
    "before" boundary skips the "after" boundary of that call (one switch fewer). With
    ``stop_after`` set (a function of the call's index -> bool, pure harness logic that reads
    no clock and imports nothing, e.g. a crash draw from the worker's own random stream), the
    attempt asks it right after each store call returns, inside the greenlet, and stops at
    the "after" boundary only when it says True (one switch fewer for every False).
    """

    def __init__(self, processor: Callable, job: Any, stores: dict[str, Any],
                 budget_s: float = STEP_BUDGET_S, *, image: Any = None, clock: Any = None,
                 now: Callable[[], float] | None = None) -> None:
        self.image, self.clock, self.now = image, clock, now
        self.calls = 0
        self.pause_after = True  # stop at the "after" boundary of the next store call
        self.stop_after: Callable[[int], bool] | None = None
        self.abandoned = False
        self.refused = 0
        self.budget_s = budget_s
        proxies = {name: proxy_for(target)(self, name, target) for name, target in stores.items()}
        self._parent = getcurrent()
        self._g = greenlet(lambda: self._body(processor, job, proxies), parent=self._parent)

    @staticmethod
    def _body(processor: Callable, job: Any, proxies: dict[str, Any]) -> Finished:
        try:
            value = processor(job, *proxies.values())  # the stores in the order given
        except Abandoned:
            raise  # the harness's own unwinding
        except KeyboardInterrupt as exc:
            from acksim.interrupts import from_user

            if _WATCHDOG.fired or from_user():
                raise  # Ctrl-C or SIGTERM (or the watchdog)
            return Finished(exc)  # raised by the processor itself: its result, not an interrupt
        except BaseException as exc:  # noqa: BLE001 - SystemExit, GeneratorExit...: the processor's result
            return Finished(exc)
        return Finished(value=value)

    def begin_call(self, store: str, method: str) -> int:
        """Called inside the greenlet before a store call; returns the call's index. Raises
        ``ProcessorHung`` past ``MAX_CALLS`` calls in one attempt (a processor that loops on
        its stores never returns either)."""
        if self.abandoned:
            self._refuse()
        if self.calls >= MAX_CALLS:  # left suspended: an exception could be swallowed
            self.abandoned = True
            _ZOMBIES.append(self._g)
            self._parent.switch(Finished(ProcessorHung(f"the processor made over {MAX_CALLS} store calls "
                                                       "in one attempt")))
        i = self.calls
        self.calls += 1
        self._parent.switch(StoreCall(store, method, i, "before"))
        return i

    def end_call(self, store: str, method: str, index: int) -> None:
        """Called inside the greenlet after a store call returned: switches to the harness
        unless it said, by ``pause_after`` False before the call, that it has nothing to do
        there (the processor then runs on to its next store call, sleep or return)."""
        if self.pause_after:
            stop_after = self.stop_after
            if stop_after is None or stop_after(index):
                self._parent.switch(StoreCall(store, method, index, "after"))

    def sleep(self, seconds: float) -> None:
        """``time.sleep`` while the processor runs: virtual time passes instead. Raises what
        the real one raises for a negative, NaN or infinite length."""
        if self.abandoned:
            self._refuse()
        seconds = float(seconds)
        if seconds != seconds or seconds < 0:
            raise ValueError("sleep length must be non-negative")
        if seconds == float("inf"):
            raise OverflowError("sleep length is too large")
        self._parent.switch(Sleep(seconds))

    def _refuse(self) -> None:
        self.refused += 1
        if self.refused >= MAX_REFUSED_CALLS:
            _ZOMBIES.append(self._g)
            self._parent.switch(Finished())  # never resumed
        raise Abandoned()

    def step(self) -> StoreCall | Sleep | Finished:
        """Run until the next boundary. Raises RuntimeError on a finished or abandoned attempt
        and ``ProcessorHung`` when the processor overran its budget (see ``_Watchdog``)."""
        if self.abandoned or self._g.dead:
            raise RuntimeError("attempt is no longer running")
        return _watched(self, self._g.switch)

    def abandon(self) -> str | None:
        """Unwind the processor with ``Abandoned`` and refuse every later store call. Returns
        a note when the processor resisted (swallowed ``Abandoned``), else None."""
        self.abandoned = True
        if self._g and not self._g.dead:
            try:
                _watched(self, lambda: self._g.throw(Abandoned()))
            except Abandoned:
                pass
        if self.refused:
            kept = "and was left suspended" if self.refused >= MAX_REFUSED_CALLS else "then stopped"
            return f"swallowed its crash and kept calling stores ({self.refused} refused calls) {kept}"
        return None


class _Watchdog:
    """One daemon thread per process: interrupts the main thread once the armed step of an
    attempt has had more than its budget of time it could run, until the step returns. That
    time is wall-clock time less the main thread's wait for a CPU
    (``acksim.world.sandbox.runclock``): a blocking call counts, starvation on a loaded
    machine does not, so a starved process is never taken for a hung one.

    The main thread arms it (``arm``) as a step begins and clears ``started_at`` as the step
    returns, with no call before that store (so no interrupt can land in between), then calls
    ``settle``. The watchdog decides to fire under a lock and only while the step it timed is
    still armed; ``settle`` takes that lock, so no interrupt is sent for a step after it, and
    catches one that was sent before and had not landed yet: the interrupt never lands in the
    harness outside ``_watched``. acksim's SIGINT handlers ask ``claim`` whether a SIGINT is the
    watchdog's, and drop one whose step has returned."""

    def __init__(self) -> None:
        self.started_at: float | None = None  # wall (monotonic) seconds the armed step began
        self.budget_s = STEP_BUDGET_S
        self.fired = False  # the watchdog interrupted the armed (or last) step
        self.pending = False  # ... and that interrupt has not been seen yet
        self.deciding = False  # the watchdog's thread is deciding whether to fire (``settle``'s fast path)
        self.clock: RunClock | None = None
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def ensure_running(self) -> None:
        """Start the watchdog's thread; the calling thread (the main one) is the one watched."""
        if self._thread is None:
            self.clock = RunClock(TaskWait(schedstat_path(threading.get_native_id())))
            self._thread = threading.Thread(target=self._watch, name="acksim-watchdog", daemon=True)
            self._thread.start()

    def after_fork(self) -> None:
        """In a forked child: no thread, no step, a lock of its own (the parent's watchdog may
        have held its lock at the fork)."""
        if self.clock is not None and isinstance(self.clock.read_wait, TaskWait):
            self.clock.read_wait.close()  # the parent's thread's file
        self._thread, self.clock, self._lock = None, None, threading.Lock()
        self.started_at, self.fired, self.pending, self.deciding = None, False, False, False

    def _watch(self) -> None:
        while True:
            _REAL_SLEEP(POLL_S)
            if self.overdue():
                _REAL_SLEEP(0.2)

    def overdue(self) -> bool:
        """Sample the clock; interrupt the main thread if the armed step has had more than
        its budget of time it could run (returns True then)."""
        clock = self.clock
        now = clock.sample()
        started = self.started_at
        clock.forget_before(now if started is None else started)
        if started is None or clock.runnable_since(started) <= self.budget_s:
            return False
        self.deciding = True  # before the look at started_at (see ``settle``)
        try:
            with self._lock:
                if self.started_at != started:  # the step returned meanwhile
                    return False
                self.fired = self.pending = True
                _interrupt_main()
        finally:
            self.deciding = False
        return True

    def arm(self, budget_s: float) -> float:
        """Arm for a step of ``budget_s`` seconds; returns its start (wall seconds). The
        caller clears ``started_at`` when the step returns, then calls ``settle``."""
        self.budget_s, self.fired, self.pending = budget_s, False, False
        self.started_at = started = _REAL_MONOTONIC()
        return started

    def settle(self) -> bool:
        """After ``started_at`` was cleared: wait until the watchdog can send no interrupt for
        the step, catch one it sent that has not landed yet, and return whether it fired.
        A ``KeyboardInterrupt`` the watchdog did not send goes on. Fast (no lock) when the
        watchdog is not deciding and has not fired: it sets ``deciding`` before it looks at
        ``started_at``, so if it is not deciding now it either saw the step running and
        decided not to fire, or will see ``started_at`` cleared."""
        if not (self.deciding or self.fired):
            return False
        tries = 0
        while True:
            try:
                with self._lock:
                    pass  # a decision to fire under way is over; none comes after
                while self.pending and tries < _DRAIN_TRIES:  # it lands at the interpreter's next check
                    tries += 1
                    _REAL_SLEEP(0.001)
                self.pending = False  # or the processor caught it
                return self.fired
            except KeyboardInterrupt:
                if not self.fired:
                    raise
                self.pending = False

    def claim(self) -> bool | None:
        """For acksim's SIGINT handlers: None when no interrupt of the watchdog's is on its
        way (the signal is someone else's); else it is taken, and the handler raises
        ``KeyboardInterrupt`` when this says True (its step still runs) and drops it when
        False (the step has returned: it must not land in the harness)."""
        if not self.pending:
            return None
        self.pending = False
        return self.started_at is not None


def _interrupt_main() -> None:
    """Raise ``KeyboardInterrupt`` in the main thread, where the hung step runs. Through its
    SIGINT handler when that is Python's own or one of ``acksim.interrupts`` (both raise it),
    and always in a supervised child (``acksim.world.sandbox.contain``: a processor that ignores
    SIGINT there is killed by the parent at its budget + 2 s); otherwise straight into the
    thread (``PyThreadState_SetAsyncExc``): ``interrupt_main`` does nothing when SIGINT is
    ignored or left to the system, and another library's handler may not raise, and in this
    process nothing else would stop the hung step."""
    handler = signal.getsignal(signal.SIGINT)
    if _SLOTS is not None or handler is signal.default_int_handler \
            or getattr(handler, "__module__", None) == "acksim.interrupts":
        _thread.interrupt_main()
    else:
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(threading.main_thread().ident),
                                                   ctypes.py_object(KeyboardInterrupt))


_WATCHDOG = _Watchdog()
# a forked child (a ``check --jobs`` search) inherits no thread: it starts its own watchdog
os.register_at_fork(after_in_child=_WATCHDOG.after_fork)


def heartbeat() -> None:
    """The harness is alive (called between chunks of SimPy events): tells the parent of a
    supervised child (``acksim.world.sandbox.contain``) that no processor code is stuck in it."""
    if _SLOTS is not None:
        _SLOTS[2] = _REAL_MONOTONIC()


def reset_after_fork(slots) -> None:
    """In a freshly forked supervised child: a watchdog of its own (the parent's did not
    survive the fork) and ``slots``, the clock the parent reads."""
    global _SLOTS
    _SLOTS = slots
    _WATCHDOG.after_fork()


def _watched(attempt: Attempt, run: Callable):
    """Run a greenlet switch inside the attempt's image and virtual clock (or with only
    ``time.sleep`` virtualised, without a clock) and with the watchdog armed. Raises
    ``ProcessorHung`` when the watchdog interrupted the step, wherever its interrupt landed:
    anywhere from arming to the end of ``run()`` (caught below), at the call of ``settle``
    (caught there) or inside it (caught by it); never after. (The watchdog's ``arm`` and
    ``settle``'s fast path are written out here: this runs at every store call.)"""
    watchdog = _WATCHDOG
    if watchdog._thread is None and threading.current_thread() is threading.main_thread():
        watchdog.ensure_running()  # once per process (after a fork, again)
    slots = _SLOTS
    image, clock = attempt.image, attempt.clock
    if image is not None:
        image.enter()
    if clock is not None:
        clock.enter(attempt.now(), attempt.sleep)  # time.sleep too: a virtual Sleep
    else:
        saved, time.sleep = time.sleep, attempt.sleep
    error = None
    try:
        try:
            budget = attempt.budget_s  # ``watchdog.arm(budget)``, written out
            watchdog.budget_s, watchdog.fired, watchdog.pending = budget, False, False
            watchdog.started_at = started = _REAL_MONOTONIC()
            if slots is not None:
                slots[1], slots[0] = budget, started
            result = run()
        except BaseException as exc:  # noqa: BLE001 - raised again below
            watchdog.started_at = None  # first, with no call before it: acksim's handlers raise no more
            error = exc
        else:
            watchdog.started_at = None
        try:
            hung = watchdog.settle() if (watchdog.deciding or watchdog.fired) else False  # its fast path
        except KeyboardInterrupt:  # sent before the step was disarmed, landed at the call (Python's own handler)
            hung = watchdog.settle()  # (the fired flag was set before it was sent: not the fast path)
        if error is None and not hung:
            return result
        if hung and (error is None or isinstance(error, KeyboardInterrupt)):
            attempt.abandoned = True
            _ZOMBIES.append(attempt._g)
            raise ProcessorHung(f"the processor ran over {attempt.budget_s:g} s of wall-clock time without reaching "
                                "a store call or returning (time spent waiting for a CPU not counted)") from None
        raise error
    finally:
        error = None  # no cycle through the traceback
        if slots is not None:
            slots[0], slots[2] = 0.0, _REAL_MONOTONIC()
        if clock is not None:
            clock.exit()
        else:
            time.sleep = saved
        if image is not None:
            image.exit()
