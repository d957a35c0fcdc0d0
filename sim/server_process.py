"""Server processes acksim starts and must always stop (the live mode's brokers, the private
PostgreSQL of the ``postgres`` store backend).

A ``ServerProcess`` runs in its own session (so a Ctrl-C at the terminal reaches acksim, which
stops it cleanly, and not the server directly), its output appended to a log file, optionally
as another OS user (a server that refuses to run as root). ``stop`` sends the stop signal to
the whole process group, then SIGKILL to the group and to every descendant that left it, and
reaps it. Two nets under a bypassed ``stop``: at interpreter exit every server still running
is killed (``atexit``), and with ``die_with_parent`` the kernel sends the server SIGQUIT when
the process that started it dies, even by SIGKILL (``PR_SET_PDEATHSIG``, Linux). All
durations are wall seconds.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import time
from typing import List, Optional, Sequence

_PR_SET_PDEATHSIG = 1


def _children_map() -> dict:
    kids: dict = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        # field 4 (ppid) follows the ")" that closes the command name
        ppid = int(stat[stat.rindex(b")") + 2:].split()[1])
        kids.setdefault(ppid, []).append(int(d))
    return kids


def descendants(pid: int) -> List[int]:
    """The pids of every descendant of ``pid`` now (children, their children...); [] without /proc."""
    if not os.path.isdir("/proc"):
        return []
    kids, out, todo = _children_map(), [], [pid]
    while todo:
        for c in kids.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def alive(pid: int) -> bool:
    """True while process ``pid`` exists and is not a zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # zombies count as dead
        with open(f"/proc/{pid}/stat", "rb") as f:
            s = f.read()
        return s[s.rindex(b")") + 2:s.rindex(b")") + 3] != b"Z"
    except OSError:
        return False


def _die_with_parent() -> None:  # runs in the child between fork and exec (after any setuid)
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGQUIT)


class ServerProcess:
    """One server process in its own session, output appended to ``log_path``.

    ``argv``, ``cwd``, ``env``: as ``subprocess.Popen``. ``user``: run as this OS user (uid
    or name; needs root), with its primary group and no other. ``stop_signal``: what ``stop``
    sends first (SIGTERM; PostgreSQL's fast shutdown is SIGINT). ``die_with_parent``: see the
    module docstring. Raises OSError when the program cannot be started."""

    live: "set[ServerProcess]" = set()

    def __init__(self, argv: Sequence[str], log_path: str, cwd: str, env: Optional[dict] = None, *,
                 user: int | str | None = None, stop_signal: int = signal.SIGTERM,
                 die_with_parent: bool = False):
        self.argv = list(argv)
        self.log_path = log_path
        self.stop_signal = stop_signal
        self._log = open(log_path, "ab")
        ids = {} if user is None else {"user": user, "group": _group_of(user), "extra_groups": []}
        try:
            self.popen = subprocess.Popen(
                self.argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                stdout=self._log, stderr=subprocess.STDOUT,
                start_new_session=True, preexec_fn=_die_with_parent if die_with_parent else None, **ids)
        except BaseException:
            self._log.close()
            raise
        self.owner_pid = os.getpid()  # a forked child never stops its parent's servers at its exit
        ServerProcess.live.add(self)

    @property
    def pid(self) -> int:
        return self.popen.pid

    def exited(self) -> Optional[int]:
        """The exit code once the server has exited, else None."""
        return self.popen.poll()

    def stop(self, term_timeout: float, hard: bool = False) -> None:
        """``stop_signal`` (or SIGKILL if ``hard``) to the group, up to ``term_timeout`` s for
        it to exit, then SIGKILL to the group and to every descendant still alive; reaps it."""
        pid = self.popen.pid
        desc = descendants(pid)
        sig = signal.SIGKILL if hard else self.stop_signal
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, sig)
        try:
            self.popen.wait(term_timeout)
        except subprocess.TimeoutExpired:
            pass
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
        # erl_child_setup / inet_gethost run in sessions of their own: give
        # them a moment to exit with their parent, then kill them.
        deadline = time.monotonic() + (0 if hard else 2.0)
        while any(alive(d) for d in desc) and time.monotonic() < deadline:
            time.sleep(0.05)
        for d in desc:
            if alive(d):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(d, signal.SIGKILL)
        self.popen.wait()
        self._log.close()
        ServerProcess.live.discard(self)


def _group_of(user: int | str) -> int:
    import pwd

    entry = pwd.getpwuid(user) if isinstance(user, int) else pwd.getpwnam(user)
    return entry.pw_gid


@atexit.register
def _kill_leftovers() -> None:  # last resort if a ``with`` block was bypassed
    for p in list(ServerProcess.live):
        if p.owner_pid == os.getpid():
            with contextlib.suppress(Exception):
                p.stop(term_timeout=2.0, hard=True)


def log_tail(path: str, n: int = 15) -> str:
    """The last ``n`` lines of the log at ``path`` ("(no log)" when it cannot be read)."""
    try:
        with open(path, "rb") as f:
            lines = f.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return "(no log)"
    return "\n".join(lines[-n:])
