"""Debian's ``redis-server`` on 127.0.0.1 (``redis_server``): no persistence, or an append-only
file in the temporary folder that survives a restart."""

from __future__ import annotations

import contextlib
import socket
import tempfile
from typing import Iterator, Sequence

from acksim.live.brokers.broker import Broker, _running, _wait_ready
from acksim.live.brokers.errors import BrokerError
from acksim.live.brokers.ports import HOST, free_port
from acksim.live.brokers.processes import _need_binary, _Proc


def _resp(port: int, *args: str, timeout: float = 1.0) -> bytes:
    """Send one RESP command, return the raw reply (enough for PING / INFO)."""
    payload = b"*%d\r\n" % len(args) + b"".join(
        b"$%d\r\n%s\r\n" % (len(a.encode()), a.encode()) for a in args)
    with socket.create_connection((HOST, port), timeout=timeout) as s:
        s.sendall(payload)
        buf = s.recv(65536)
        if buf.startswith(b"$"):  # bulk string: read until complete
            n = int(buf[1:buf.index(b"\r\n")])
            need = buf.index(b"\r\n") + 2 + n + 2
            while len(buf) < need:
                chunk = s.recv(65536)
                if not chunk:
                    break
                buf += chunk
        return buf


@contextlib.contextmanager
def redis_server(appendonly: bool = False, appendfsync: str = "everysec",
                 extra_args: Sequence[str] = (), timeout: float = 10.0,
                 keep_data: bool = False) -> Iterator[Broker]:
    """Run ``redis-server`` on 127.0.0.1:<free port>; yield a :class:`Broker`.

    Args:
        appendonly: False -> no persistence at all (``--save ''``, no AOF):
            a restart loses every key.  True -> AOF in the temp folder
            (``--appendonly yes --appendfsync <appendfsync>``): keys survive
            a graceful restart; with ``hard`` restarts up to ~1 s of writes
            may be lost under ``everysec``.
        extra_args: more ``--option value`` args for redis-server.
        timeout: wall seconds to wait for PING -> PONG.
        keep_data: keep the temp folder after exit (for post-mortems).

    Raises BrokerNotInstalled (apt-get install redis-server), BrokerStartError,
    BrokerStopError.
    """
    exe = _need_binary("redis-server", "redis-server")
    port = free_port()
    data_dir = tempfile.mkdtemp(prefix="acksim-redis-")

    def start(b: Broker) -> None:
        argv = [exe, "--bind", HOST, "--port", str(b.port), "--protected-mode", "yes",
                "--daemonize", "no", "--dir", b.data_dir, "--logfile", "",
                "--save", "", "--appendonly", "yes" if appendonly else "no",
                "--appendfsync", appendfsync, *extra_args]
        b.proc = _Proc(argv, b.log_path, cwd=b.data_dir)

        def probe() -> str:
            if not _resp(b.port, "PING").startswith(b"+PONG"):
                raise BrokerError("no PONG")
            info = _resp(b.port, "INFO", "server").decode("utf-8", "replace")
            return next(l.split(":", 1)[1].strip() for l in info.splitlines()
                        if l.startswith("redis_version:"))

        _wait_ready(b, probe, timeout)

    def stop(b: Broker, hard: bool) -> None:
        assert b.proc is not None
        b.proc.stop(term_timeout=10.0, hard=hard)

    with _running(Broker("redis", port, data_dir, start, stop), keep_data) as b:
        yield b
