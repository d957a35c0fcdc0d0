"""A running broker (``Broker``): its port, version, data folder and log, started until a client
round trip succeeds, stopped until its ports close, restarted as a fault; and the ``with`` block
every server runs in, which stops it on any exit, SIGTERM included."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import time
from typing import Callable, Iterator, List, Optional

from acksim.live.brokers.errors import BrokerStartError
from acksim.live.brokers.ports import HOST, _wait_ports_closed, port_open
from acksim.live.brokers.processes import _Proc, _log_tail


class Broker:
    """A running broker.

    Attributes:
        kind: ``"redis"``, ``"rabbitmq"`` or ``"sqs"``.
        host: always ``"127.0.0.1"``.
        port: the client port (RESP, AMQP 0-9-1, or HTTP for SQS).
        version: server version string, e.g. ``"7.0.15"``, ``"3.10.8"``, ``"5.2.5"``.
        data_dir: the temporary folder (server data, config and ``*.log``).
        log_path: the server's stdout/stderr log.
        startup_s: wall seconds the last (re)start took until ready.
        startups: wall seconds of every start, in order.
        stop_s: wall seconds the last stop took (until processes gone, ports closed).
        extra_ports: other ports this broker holds (RabbitMQ: dist, epmd).
    """

    def __init__(self, kind: str, port: int, data_dir: str,
                 start: Callable[["Broker"], None],
                 stop: Callable[["Broker", bool], None]):
        self.kind = kind
        self.host = HOST
        self.port = port
        self.data_dir = data_dir
        self.log_path = os.path.join(data_dir, f"{kind}.log")
        self.version = ""
        self.startup_s = 0.0
        self.startups: List[float] = []
        self.stop_s = 0.0
        self.extra_ports: dict = {}
        self.proc: Optional[_Proc] = None
        self._start, self._stop = start, stop

    def __repr__(self) -> str:
        return f"<Broker {self.kind} {self.version} {self.host}:{self.port}>"

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.exited() is None

    def start(self) -> None:
        """Start the server and block until a client round trip succeeds.

        Raises BrokerStartError if the port is taken, the server exits, or it is
        not ready within its timeout.  No-op if already running.
        """
        if self.running:
            return
        if self.proc is not None:  # it died on its own: reap it and its leftovers
            self._stop(self, True)
            self.proc = None
        if port_open(self.port):
            raise BrokerStartError(f"{self.kind}: port {self.host}:{self.port} is already in use")
        t0 = time.monotonic()
        try:
            self._start(self)
        except BaseException:
            # Not ready (error, timeout, Ctrl-C): nothing to preserve, and
            # RabbitMQ ignores SIGTERM for a long time while it boots.
            if self.proc is not None:
                self._stop(self, True)
                self.proc = None
            raise
        self.startup_s = time.monotonic() - t0
        self.startups.append(self.startup_s)

    def stop(self, hard: bool = False) -> None:
        """Stop the server (SIGTERM, or SIGKILL if ``hard``) and wait for the port to close.

        Raises BrokerStopError if the port still accepts connections afterwards.
        """
        t0 = time.monotonic()
        if self.proc is not None:
            self._stop(self, hard)
            self.proc = None
        _wait_ports_closed([self.port], timeout=10.0)
        self.stop_s = time.monotonic() - t0

    def restart(self, down_s: float = 0.0, hard: bool = False) -> float:
        """Broker-restart fault: stop, sleep ``down_s`` wall seconds, start again.

        Same port, same data folder, same node name.  ``hard=True`` kills with
        SIGKILL (a crash: no shutdown flush); otherwise SIGTERM (graceful).
        Returns the wall seconds the new start took.  Raises like start()/stop().
        """
        self.stop(hard=hard)
        if down_s > 0:
            time.sleep(down_s)
        self.start()
        return self.startup_s


def _wait_ready(b: Broker, probe: Callable[[], str], timeout: float) -> None:
    """Call ``probe`` until it returns the version string; raise on exit/timeout."""
    deadline = time.monotonic() + timeout
    last: Optional[BaseException] = None
    while True:
        assert b.proc is not None
        rc = b.proc.exited()
        if rc is not None:
            raise BrokerStartError(
                f"{b.kind} exited with code {rc} during startup; log {b.log_path}:\n"
                + _log_tail(b.log_path))
        try:
            b.version = probe()
            return
        except Exception as e:  # not ready yet
            last = e
        if time.monotonic() > deadline:
            raise BrokerStartError(
                f"{b.kind} not ready after {timeout:.0f} s (last error: {last!r}); "
                f"log {b.log_path}:\n" + _log_tail(b.log_path))
        time.sleep(0.1)


class _SigTerm(SystemExit):
    pass


def _raise_on_sigterm(signum, frame):  # noqa: ARG001
    raise _SigTerm(128 + signum)


@contextlib.contextmanager
def _sigterm_as_exit() -> Iterator[None]:
    """While inside, SIGTERM raises SystemExit(143) so ``finally`` blocks run.

    Only if SIGTERM still has its default action and we are in the main
    thread; the previous handler is restored on exit.
    """
    import threading
    install = (threading.current_thread() is threading.main_thread()
               and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL)
    if install:
        signal.signal(signal.SIGTERM, _raise_on_sigterm)
    try:
        yield
    finally:
        if install:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)


@contextlib.contextmanager
def _running(b: Broker, keep_data: bool) -> Iterator[Broker]:
    with _sigterm_as_exit():
        try:
            b.start()
            yield b
        finally:
            try:
                b.stop()
            finally:
                if not keep_data:
                    shutil.rmtree(b.data_dir, ignore_errors=True)
