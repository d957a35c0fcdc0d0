"""User interrupts: Ctrl-C (SIGINT) and SIGTERM handled alike, and told apart from a
``KeyboardInterrupt`` the processor raises itself.

The command line runs every command inside ``handled()``: both signals raise
``KeyboardInterrupt`` in the main thread, so everything unwinds the same way (temporary
stores and report folders removed, pool workers terminated) and the command exits 130. The
handler notes that a signal arrived; a ``KeyboardInterrupt`` out of processor code with no
signal noted is the processor's own doing, judged as a processor error (exit 1), not an
interrupt (``acksim.world.sandbox.interleave``). Outside ``handled()`` (acksim used as a library,
the pytest plugin) no handler of ours is installed and every ``KeyboardInterrupt`` is taken
as the user's. The code under test runs in a supervised child process outside the command's
process group (``acksim.world.sandbox.contain``): a SIGINT or SIGTERM it sends its own process kills
that child, a finding, never read as the user's.

Pool workers (``acksim sweep``, ``acksim compare``) start with ``in_worker``: Ctrl-C at a
terminal reaches the whole process group, and the parent alone acts on it; the parent then
terminates its workers with SIGTERM, on which a worker unwinds the run in progress (its
temporary stores removed) and exits at once (``guarded``), never taking the next run.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from contextlib import contextmanager
from typing import Iterator

SIGNALS = (signal.SIGINT, signal.SIGTERM)
_state = {"installed": False, "received": None, "busy": False}
INTERRUPTED = 130  # 128 + SIGINT, as a shell reports a command stopped by Ctrl-C


def watchdogs(signum: int) -> bool | None:
    """Whether a signal is the step watchdog's interrupt (``acksim.world.sandbox.interleave``,
    which it comes from only once imported): None when it is not (someone else's); True when
    it is and its step still runs (raise ``KeyboardInterrupt``); False when it is and its step
    has returned (drop it: it must not land in the harness)."""
    interleave = sys.modules.get("acksim.world.sandbox.interleave")
    if signum != signal.SIGINT or interleave is None:
        return None
    return interleave._WATCHDOG.claim()


def _handler(signum, frame) -> None:
    mine = watchdogs(signum)
    if mine is not None:  # the watchdog stopping a hung processor, not the user
        if mine:
            raise KeyboardInterrupt
        return
    _state["received"] = signum
    raise KeyboardInterrupt


@contextmanager
def handled() -> Iterator[None]:
    """Within the block, SIGINT and SIGTERM raise ``KeyboardInterrupt`` and are noted
    (``from_user``); the previous handlers come back after it. Only in the main thread
    (elsewhere the block runs unchanged)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.signal(s, _handler) for s in SIGNALS}
    _state.update(installed=True, received=None)
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
        _state.update(installed=False, received=None)


def from_user() -> bool:
    """Whether a ``KeyboardInterrupt`` now is the user's: a signal arrived inside
    ``handled()``, or no handler of ours is installed (then it cannot be told apart)."""
    return not _state["installed"] or _state["received"] is not None


def in_worker() -> None:
    """Initializer of a pool worker process: SIGINT is left to the parent (the watchdog's own
    interrupt of a hung processor apart), SIGTERM unwinds the run in progress and ends the
    worker (``guarded``)."""
    signal.signal(signal.SIGINT, _worker_sigint)
    signal.signal(signal.SIGTERM, _worker_sigterm)
    _state.update(installed=True, received=None, busy=False)


def _worker_sigint(signum, frame) -> None:
    if watchdogs(signum):
        raise KeyboardInterrupt  # the watchdog stopping a hung processor


def _worker_sigterm(signum, frame) -> None:
    _state["received"] = signum
    if not _state["busy"]:
        os._exit(INTERRUPTED)  # between runs: nothing to clean up
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # unwind undisturbed (the pool may send more); kill ends it
    raise KeyboardInterrupt


def guarded(fn, *args):
    """``fn(*args)`` in a pool worker; on SIGTERM the run unwinds (its ``finally`` blocks
    remove its temporary stores) and the worker process exits with ``INTERRUPTED``."""
    _state["busy"] = True
    try:
        return fn(*args)
    except KeyboardInterrupt:
        if _state["received"] is not None:
            sys.stdout.flush()
            os._exit(INTERRUPTED)
        raise
    finally:
        _state["busy"] = False
