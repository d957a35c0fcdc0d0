"""Containment: the code under test runs in a supervised child process; the judges stay out of its reach.

Like a crash-test rig: the car (the processor, inside its world) is driven in a cell of its
own, the instruments are read from outside. A ``Child`` is a process forked from this one
(cheap: everything already imported is shared copy-on-write) that runs ``target(args, emit)``
for each ``call(args)`` and sends the result back over a pipe, pickled; ``emit`` streams
progress on the way. The parent only waits on that pipe, so supervision works alike on the
main thread, in a pool process and in a Dask worker's thread, and it decides everything
that a processor could otherwise decide for it:

- the child dies (``os._exit``, a fatal signal, a segfault, the kernel's out-of-memory
  killer, SIGINT or SIGTERM it sent itself): ``Died("processor_killed_worker", ...)``, naming
  the exit status or the signal;
- a step of the processor runs ``budget + GRACE_S`` wall seconds (the budget the child's
  in-process watchdog uses, shared through a small shared-memory block, see
  ``acksim.world.sandbox.interleave``), or the child's harness shows no sign of life for
  ``QUIET_S`` wall seconds (a ``__del__`` that loops while the harness runs): the parent
  SIGKILLs it, ``Died("processor_hung", ...)``. Both count the seconds the child's main
  thread could run, its waits for a CPU left out (``acksim.world.sandbox.runclock``): a
  child starved on a loaded machine is not a hung one;
- threads the call left behind are named in ``Reply.threads`` (the non-daemon ones) and the
  child is retired with them, so they never outlive the call or reach the next one.

The child leaves the parent's process group (a Ctrl-C at the terminal reaches the parent
alone, which kills its children), asks the kernel to kill it if the parent dies, treats a
SIGINT that is not its watchdog's and SIGTERM as fatal (a processor signalling its own
process is a killed worker, not the user), and ends with ``os._exit`` (no interpreter
shutdown running user code). Exceptions ``target`` raises come back and are raised again in
the parent (a ``ScenarioError`` stays one: bad input, exit 2), with the child's traceback as
a note.
"""

from __future__ import annotations

import builtins
import ctypes
import dataclasses
import enum
import gc
import mmap
import os
import pickle
import signal
import sys
import threading
import time
import traceback
import io
from dataclasses import dataclass
from multiprocessing import Pipe
from typing import Any, Callable

from acksim.world.sandbox.runclock import RunClock, TaskWait, schedstat_path

GRACE_S = 2.0  # wall seconds past a step's budget before the parent kills the child (waits for a CPU left out)
QUIET_S = 30.0  # wall seconds the child's harness may go without a sign of life outside steps (likewise)
POLL_S = 0.1  # how often the parent looks at the shared clock while it waits
PICKLING_S = 3600.0  # what a sign of life before pickling the answer counts for (a history of millions of records)
_PR_SET_PDEATHSIG = 1


class Died(Exception):
    """The child ended without answering: ``finding`` is ``processor_killed_worker`` (it died),
    ``processor_hung`` (it was killed for running over its budget) or ``processor_error`` (its
    answer held an object of the user's code, which the parent does not read); ``str()`` one
    line."""

    def __init__(self, finding: str, text: str) -> None:
        super().__init__(text)
        self.finding, self.text = finding, text


@dataclass(frozen=True)
class Reply:
    """What a call gave: ``value`` (what ``target`` returned) and ``threads``, the names of the
    non-daemon threads it left running (the child was retired with them)."""

    value: Any
    threads: tuple[str, ...] = ()


class Child:
    """A supervised child process for calls of ``target(args, emit)``; ``target`` is taken by
    the fork, so it may be any callable (a closure, a lambda), while ``args`` and the value
    returned are pickled. ``keep``: one child serves call after call (a check's examples; a
    fresh one is forked after a death, a kill or threads left behind); otherwise each call
    gets a fresh child.

    Lifecycle: ``call()`` as often as needed, then ``close()`` (also a context manager). Not
    for concurrent use from several threads. The child runs with the garbage collector's
    thresholds of the moment the ``Child`` was made (a check raises this process's while its
    search runs: ``acksim.search.check``)."""

    def __init__(self, target: Callable[[Any, Callable[[Any], None]], Any], keep: bool = True) -> None:
        self.target, self.keep = target, keep
        self.pid: int | None = None
        self._conn = None
        self._shared = mmap.mmap(-1, 3 * 8)  # anonymous and shared with the children
        self._slots = (ctypes.c_double * 3).from_buffer(self._shared)  # step started, budget, heartbeat
        self._clock: RunClock | None = None  # the child's main thread's: wall time less its waits for a CPU
        self.forks = 0
        self._gc_threshold = gc.get_threshold()

    def __enter__(self) -> "Child":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def call(self, args: Any, on_message: Callable[[Any], None] | None = None) -> Reply:
        """Run ``target(args, emit)`` in the child; messages it emits go to ``on_message``.
        Returns its ``Reply``. Raises ``Died`` (the child died or was killed for hanging),
        what ``target`` raised, and ``KeyboardInterrupt`` (after killing the child) when the
        parent is interrupted while it waits."""
        if self.pid is None:
            self._start()
        try:
            return self._wait(args, on_message)
        except BaseException:
            self._stop()
            raise
        finally:
            if not self.keep:
                self._stop()

    def close(self) -> None:
        """Stop the child (if any) and wait for it."""
        self._stop()

    # --- the parent's side -----------------------------------------------------------------
    def _start(self) -> None:
        for stream in (sys.stdout, sys.stderr):  # or the child would print what is buffered again
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        here, there = Pipe()
        self._slots[0], self._slots[2] = 0.0, time.monotonic()
        pid = os.fork()
        if pid == 0:  # the child: never returns
            here.close()
            _child_main(there, self.target, self._slots, self._gc_threshold)
        there.close()
        self.pid, self._conn = pid, here
        self._clock = RunClock(TaskWait(schedstat_path(pid, pid)))  # its main thread: the one that forked
        self.forks += 1

    def _wait(self, args: Any, on_message) -> Reply:
        self._slots[0], self._slots[2] = 0.0, time.monotonic()
        try:
            self._conn.send(args)
        except OSError:
            raise self._died() from None
        while True:
            if self._conn.poll(POLL_S):
                try:
                    data = self._conn.recv_bytes()
                except (EOFError, OSError):
                    raise self._died() from None
                try:
                    message = _AnswerUnpickler(io.BytesIO(data)).load()
                except pickle.UnpicklingError as exc:  # an object of the user's code in the answer
                    self._stop()
                    raise Died("processor_error", f"the processor handed the harness an object the judges do not "
                                                  f"read ({exc}): store arguments must be plain values") from None
                except Exception as exc:  # noqa: BLE001 - e.g. an exception class that cannot be rebuilt
                    message = ("raised", RuntimeError(f"the supervised child's answer cannot be read: "
                                                      f"{type(exc).__name__}: {exc}"), (), "")
                if message[0] == "emit":
                    if on_message is not None:
                        on_message(message[1])
                    continue
                kind, value, threads, note = message
                if threads:
                    self._stop()  # retired with what it left running
                if kind == "raised":
                    value.add_note(note)
                    raise value
                return Reply(value, threads)
            overdue = self._overdue()
            if overdue:
                self._stop()
                raise Died("processor_hung", overdue)
            reaped = _reap(self.pid)  # gone, its pipe still open in another process (a concurrent fork)
            if reaped is not None:
                raise self._died(reaped)

    def _overdue(self) -> str:
        """Why the child is to be killed now ("" for no reason): its step ran over its budget +
        ``GRACE_S``, or its harness gave no sign of life for ``QUIET_S``, counted in seconds
        its main thread could run (``self._clock``, sampled here)."""
        started, budget, beat = self._slots
        clock = self._clock
        clock.sample()
        clock.forget_before(min(started, beat) if started else beat)
        if started and clock.runnable_since(started) > budget + GRACE_S:
            return (f"the processor ran over {budget:g} s of wall-clock time without reaching a store call or "
                    f"returning, and did not stop when interrupted; its worker process was killed after "
                    f"{budget + GRACE_S:g} s (time spent waiting for a CPU not counted)")
        if not started and clock.runnable_since(beat) > QUIET_S:
            return (f"the processor's worker process showed no progress for {QUIET_S:g} wall seconds outside "
                    "the processor's steps (its code running inside the harness: a __del__, a finalizer, "
                    "a signal handler) and was killed (time spent waiting for a CPU not counted)")
        return ""

    def _died(self, status: int | None = None) -> Died:
        for _ in range(250):  # its pipe closed: it is exiting
            if status is not None:
                break
            status = _reap(self.pid)
            time.sleep(0.02)
        self._forget(kill=status is None)
        code = os.waitstatus_to_exitcode(status) if status not in (None, -1) else None
        return Died("processor_killed_worker", f"the processor's worker process died: {describe_exit(code)}")

    def _stop(self) -> None:
        if self.pid is not None:
            self._forget(kill=True)

    def _forget(self, kill: bool) -> None:
        pid, self.pid = self.pid, None
        if self._clock is not None:
            self._clock.read_wait.close()
            self._clock = None
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        if kill:
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass


def _reap(pid: int) -> int | None:
    """The wait status of the child ``pid`` if it has ended (reaped now), -1 if someone else
    reaped it already, None while it runs."""
    try:
        done, status = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return -1
    return status if done else None


def describe_exit(code: int | None) -> str:
    """An exit code (``os.waitstatus_to_exitcode``: negative for a signal) in words."""
    if code is None:
        return "its exit status is unknown (it closed its pipe, or another part of this process reaped it)"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"killed by {name}" + (" (a segmentation fault)" if name == "SIGSEGV" else "")
    return f"it exited with status {code} (os._exit, or exit() in C code)"


# --- the child's side ----------------------------------------------------------------------
def _child_main(conn, target, slots, gc_threshold: tuple[int, ...]) -> None:
    """The child's loop: receive args, run ``target``, send ``(kind, value, threads, note)``;
    ends with ``os._exit`` at end of input, after threads were left behind, or on any error
    of its own. ``gc_threshold``: the garbage collector's thresholds it runs with."""
    code = 0
    try:
        gc.set_threshold(*gc_threshold)
        _become_child(slots)
        while True:
            try:
                args = conn.recv()
            except (EOFError, OSError):
                break
            before = set(threading.enumerate())
            slots[2] = time.monotonic()
            try:
                reply = ("value", target(args, lambda m: conn.send_bytes(pickle.dumps(("emit", m)))), "")
            except BaseException as exc:  # noqa: BLE001 - sent to the parent, raised there
                reply = ("raised", _sendable(exc), "in the supervised child:\n" + "".join(traceback.format_exception(exc))[-20_000:])
            _flush()
            left = [t for t in threading.enumerate() if t not in before and t.is_alive()
                    and t.name != "acksim-watchdog"]
            threads = tuple(t.name for t in left if not t.daemon)
            message = (*reply[:2], threads, reply[2])
            slots[2] = time.monotonic() + PICKLING_S  # no user code runs while the answer is pickled and sent
            try:
                data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
            except BaseException as exc:  # noqa: BLE001 - an unpicklable value or exception
                data = pickle.dumps(("raised", RuntimeError(f"the supervised child's answer cannot be pickled: "
                                                            f"{type(exc).__name__}"), threads, reply[2]))
            conn.send_bytes(data)
            if left:
                break
    except BaseException:  # noqa: BLE001 - nothing may unwind into the parent's code
        code = 3
    _flush()
    os._exit(code)


_SAFE_BUILTINS = frozenset({"set", "frozenset", "list", "dict", "tuple", "str", "bytes", "bytearray", "int",
                            "float", "complex", "bool", "slice", "range", "object"})


class _AnswerUnpickler(pickle.Unpickler):
    """Reads a child's answer with only the types an answer is made of: plain builtins and
    builtin exceptions, ``datetime`` and ``collections`` types, tblib's exception rebuilders
    (their classes read the same way), and the dataclasses, named tuples (a history's
    ``Record``), enums and exceptions of acksim modules this process has already imported. Anything else (a
    class of the user's code, a function a crafted ``__reduce__`` names) raises
    ``pickle.UnpicklingError``: no user code runs in the judging process while it reads."""

    def find_class(self, module: str, name: str):
        if "." not in name:
            if module == "builtins":
                obj = getattr(builtins, name, None)
                if name in _SAFE_BUILTINS or (isinstance(obj, type) and issubclass(obj, BaseException)):
                    return obj
            elif module in ("datetime", "collections") or (module == "copyreg" and name == "_reconstructor"):
                obj = super().find_class(module, name)
                if isinstance(obj, type) or name == "_reconstructor":
                    return obj
            elif module == "tblib.pickling_support" and name.startswith("unpickle_") and module in sys.modules:
                return super().find_class(module, name)  # how exceptions pickle once Dask loaded tblib
            elif module == "tblib" and name in ("Traceback", "Frame", "Code") and module in sys.modules:
                return super().find_class(module, name)  # (and their tracebacks: plain data)
            elif (module == "acksim" or module.startswith("acksim.")) and module in sys.modules:
                obj = getattr(sys.modules[module], name, None)
                if isinstance(obj, type) and (issubclass(obj, (BaseException, enum.Enum))
                                              or dataclasses.is_dataclass(obj)
                                              or (issubclass(obj, tuple) and hasattr(obj, "_fields")
                                                  and obj.__module__.split(".")[0] == "acksim")):
                    return obj
        raise pickle.UnpicklingError(f"{module}.{name} is not a type a supervised child's answer holds")


def _sendable(exc: BaseException) -> BaseException:
    """``exc`` if its class is one the parent reads back (a builtin or acksim exception),
    else a ``RuntimeError`` (an ``ImportError`` for an import error) with its class name and
    text: the parent never loads a class of the user's code."""
    cls = type(exc)
    if cls.__module__ == "builtins" or cls.__module__.split(".")[0] == "acksim":
        return exc
    try:
        text = str(exc)[:2000]
    except Exception:  # noqa: BLE001 - a __str__ that raises
        text = "(its text cannot be read)"
    kind = ImportError if isinstance(exc, ImportError) else RuntimeError
    return kind(f"{cls.__module__}.{cls.__qualname__}: {text}")


def _become_child(slots) -> None:
    """Set the child up: own process group, killed with its parent, its signals, a fresh
    watchdog of its own, the shared clock for the parent to read."""
    try:
        os.setpgid(0, 0)  # a Ctrl-C at the terminal is the parent's to handle
    except OSError:
        pass
    try:
        ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)  # Linux: die with the parent
    except (OSError, AttributeError):
        pass
    signal.signal(signal.SIGINT, _child_sigint)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    from acksim import interrupts
    from acksim.world.sandbox import interleave

    interrupts._state.update(installed=True, received=None, busy=False)  # a processor's own KeyboardInterrupt is its own
    interleave.reset_after_fork(slots)


def _child_sigint(signum, frame) -> None:
    from acksim.interrupts import watchdogs

    mine = watchdogs(signum)
    if mine:
        raise KeyboardInterrupt  # the watchdog stopping a hung processor
    if mine is not None:
        return  # the watchdog's, for a step that has returned
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # anyone else's SIGINT (the processor's own) ends the worker
    os.kill(os.getpid(), signal.SIGINT)


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:  # noqa: BLE001 - a closed or replaced stream
            pass
