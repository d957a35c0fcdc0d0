"""Server processes a broker run owns: each in its own session, its output in a log file, stopped
with its whole process tree (SIGTERM, then SIGKILL to the group and to every descendant that left
it), and killed at interpreter exit if a ``with`` block was bypassed. Also: finding a server's
binary or Python module, or saying which package to install."""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import os
import shutil
import signal
import subprocess
import time
from typing import List, Optional, Sequence

from acksim.live.brokers.errors import BrokerNotInstalled


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


def _descendants(pid: int) -> List[int]:
    if not os.path.isdir("/proc"):
        return []
    kids, out, todo = _children_map(), [], [pid]
    while todo:
        for c in kids.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def _alive(pid: int) -> bool:
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


class _Proc:
    """One server process in its own session, output appended to ``log_path``."""

    live: "set[_Proc]" = set()

    def __init__(self, argv: Sequence[str], log_path: str, cwd: str,
                 env: Optional[dict] = None):
        self.argv = list(argv)
        self.log_path = log_path
        self._log = open(log_path, "ab")
        try:
            self.popen = subprocess.Popen(
                self.argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                stdout=self._log, stderr=subprocess.STDOUT,
                start_new_session=True)
        except BaseException:
            self._log.close()
            raise
        _Proc.live.add(self)

    @property
    def pid(self) -> int:
        return self.popen.pid

    def exited(self) -> Optional[int]:
        return self.popen.poll()

    def stop(self, term_timeout: float, hard: bool = False) -> None:
        """SIGTERM (or SIGKILL if ``hard``) the group, then SIGKILL leftovers."""
        pid = self.popen.pid
        desc = _descendants(pid)
        sig = signal.SIGKILL if hard else signal.SIGTERM
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
        while any(_alive(d) for d in desc) and time.monotonic() < deadline:
            time.sleep(0.05)
        for d in desc:
            if _alive(d):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(d, signal.SIGKILL)
        self.popen.wait()
        self._log.close()
        _Proc.live.discard(self)


@atexit.register
def _kill_leftovers() -> None:  # last resort if a ``with`` block was bypassed
    for p in list(_Proc.live):
        with contextlib.suppress(Exception):
            p.stop(term_timeout=2.0, hard=True)


def _log_tail(path: str, n: int = 15) -> str:
    try:
        with open(path, "rb") as f:
            lines = f.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return "(no log)"
    return "\n".join(lines[-n:])


def _need_binary(name: str, package: str) -> str:
    path = shutil.which(name) or next(
        (p for p in (f"/usr/sbin/{name}", f"/usr/bin/{name}") if os.access(p, os.X_OK)),
        None)
    if not path:
        raise BrokerNotInstalled(
            f"{name} not found: install the Debian package: apt-get install {package}")
    return path


def _need_module(module: str, pip_name: str) -> None:
    try:
        found = importlib.util.find_spec(module) is not None
    except ImportError:
        found = False
    if not found:
        raise BrokerNotInstalled(
            f"Python module {module} not found: pip install '{pip_name}'")
