"""Server processes a broker run owns (``acksim.server_process``: each in its own session,
its output in a log file, stopped with its whole process tree, killed at interpreter exit if a
``with`` block was bypassed), and finding a server's binary or Python module, or saying which
package to install."""

from __future__ import annotations

import importlib.util
import os
import shutil

from acksim.live.brokers.errors import BrokerNotInstalled
from acksim.server_process import ServerProcess as _Proc
from acksim.server_process import log_tail as _log_tail

__all__ = ["_Proc", "_log_tail", "_need_binary", "_need_module"]


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
