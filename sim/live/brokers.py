"""Start and always stop real message brokers on 127.0.0.1 for ``acksim live``.

Three context managers, each yielding a :class:`Broker`:

* :func:`redis_server`    -- Debian ``redis-server`` (package ``redis-server``)
* :func:`rabbitmq_server` -- Debian ``rabbitmq-server`` (package ``rabbitmq-server``)
                             with a private epmd, node name and data folder
* :func:`sqs_server`      -- moto's SQS server (pip ``moto[server]``)

Every server binds 127.0.0.1 only, on a free port, with data in a temporary
folder.  Each process is started in its own session (process group); leaving
the ``with`` block -- normally, by exception or by KeyboardInterrupt -- sends
SIGTERM to the whole group, then SIGKILL to the group and to every descendant
still alive (erl_child_setup and inet_gethost leave the group), and waits
until the ports are closed.  All durations are wall seconds.

Errors: :class:`BrokerNotInstalled` (one line, names the package to install),
:class:`BrokerStartError` (server exited or never answered; includes the log
tail), :class:`BrokerStopError` (a port stayed open after the kill).
All derive from :class:`BrokerError` (a RuntimeError).
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from typing import Callable, Iterator, List, Optional, Sequence

HOST = "127.0.0.1"

__all__ = [
    "Broker", "BrokerError", "BrokerNotInstalled", "BrokerStartError",
    "BrokerStopError", "free_port", "free_ports", "redis_server",
    "rabbitmq_server", "sqs_server", "HOST",
]


class BrokerError(RuntimeError):
    """Base class of every error raised by this module."""


class BrokerNotInstalled(BrokerError):
    """A server binary or Python package is missing (message names the package)."""


class BrokerStartError(BrokerError):
    """The server exited early, the port was taken, or readiness timed out."""


class BrokerStopError(BrokerError):
    """A port was still accepting connections after the server was killed."""


# --------------------------------------------------------------------------
# ports and processes
# --------------------------------------------------------------------------

def _ephemeral_range() -> tuple:
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            lo, hi = (int(x) for x in f.read().split())
        return lo, hi
    except (OSError, ValueError):
        return 32768, 60999


def free_ports(n: int, host: str = HOST) -> List[int]:
    """Return ``n`` distinct TCP ports that were free on ``host`` a moment ago.

    Ports are drawn at random from below the kernel's ephemeral range
    (``ip_local_port_range``, usually 32768-60999), from 20000 up: a port
    taken from inside that range can be grabbed as the local end of some
    outgoing connection before the server binds it (seen: RabbitMQ failing
    with ``dist_port_already_used``).  The sockets are held together so the
    ports are distinct, then closed.  Raises BrokerError if none is found.
    """
    import random
    lo, _ = _ephemeral_range()
    pool = list(range(20000, lo)) if lo - 20000 >= 1000 else []
    random.SystemRandom().shuffle(pool)
    socks: list = []
    try:
        for port in pool:
            if len(socks) == n:
                break
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            try:
                s.bind((host, port))
            except OSError:
                s.close()
                continue
            socks.append(s)
        while len(socks) < n:  # no usable range: fall back to the kernel's pick
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((host, 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def free_port(host: str = HOST) -> int:
    """Return one TCP port that was free on ``host`` a moment ago."""
    return free_ports(1, host)[0]


def port_open(port: int, host: str = HOST, timeout: float = 0.2) -> bool:
    """True if a TCP connect to ``host:port`` succeeds within ``timeout`` s."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def _wait_ports_closed(ports: Sequence[int], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        still = [p for p in ports if port_open(p)]
        if not still:
            return
        if time.monotonic() > deadline:
            raise BrokerStopError(f"port(s) {still} on {HOST} still open after stop")
        time.sleep(0.05)


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


# --------------------------------------------------------------------------
# the yielded object
# --------------------------------------------------------------------------

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


# --------------------------------------------------------------------------
# Redis
# --------------------------------------------------------------------------

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


# --------------------------------------------------------------------------
# RabbitMQ
# --------------------------------------------------------------------------

def _rabbit_script() -> str:
    # /usr/sbin/rabbitmq-server is a wrapper that, as root, su's to the
    # rabbitmq user and redirects output to /var/log/rabbitmq; the real
    # script is in /usr/lib/rabbitmq/bin.
    _need_binary("rabbitmq-server", "rabbitmq-server")
    for p in ("/usr/lib/rabbitmq/bin/rabbitmq-server",):
        if os.access(p, os.X_OK):
            return p
    return _need_binary("rabbitmq-server", "rabbitmq-server")


def rabbitmq_env(data_dir: str, nodename: str, port: int, dist_port: int,
                 epmd_port: int) -> dict:
    """The environment that confines one RabbitMQ node to ``data_dir`` and 127.0.0.1.

    Returns a full environment dict (os.environ plus overrides) usable for
    rabbitmq-server and for rabbitmqctl against the same node.
    """
    env = dict(os.environ)
    env.update({
        "HOME": data_dir,                      # .erlang.cookie goes here
        "RABBITMQ_CONF_ENV_FILE": os.path.join(data_dir, "rabbitmq-env.conf"),
        "RABBITMQ_NODENAME": nodename,
        "RABBITMQ_NODE_IP_ADDRESS": HOST,
        "RABBITMQ_NODE_PORT": str(port),
        "RABBITMQ_DIST_PORT": str(dist_port),  # default NODE_PORT+20000 may exceed 65535
        "RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS": "-kernel inet_dist_use_interface {127,0,0,1}",
        "ERL_EPMD_ADDRESS": HOST,
        "ERL_EPMD_PORT": str(epmd_port),
        "RABBITMQ_MNESIA_BASE": os.path.join(data_dir, "mnesia"),
        "RABBITMQ_LOG_BASE": os.path.join(data_dir, "log"),
        "RABBITMQ_CONFIG_FILE": os.path.join(data_dir, "rabbitmq.conf"),
        "RABBITMQ_ADVANCED_CONFIG_FILE": os.path.join(data_dir, "advanced.config"),
        "RABBITMQ_ENABLED_PLUGINS_FILE": os.path.join(data_dir, "enabled_plugins"),
        "RABBITMQ_PLUGINS_EXPAND_DIR": os.path.join(data_dir, "plugins-expand"),
    })
    return env


@contextlib.contextmanager
def rabbitmq_server(timeout: float = 60.0, keep_data: bool = False,
                    extra_conf: str = "") -> Iterator[Broker]:
    """Run Debian's ``rabbitmq-server`` as a private node; yield a :class:`Broker`.

    AMQP, Erlang distribution and a private epmd all listen on 127.0.0.1 only,
    on free ports (``b.extra_ports`` = ``{"dist": .., "epmd": ..}``), node name
    ``acksim<port>@localhost``, no plugins, data/logs/config in the temp
    folder.  Login guest/guest, vhost ``/``.  ``b.env`` is the environment for
    ``rabbitmqctl`` against this node; ``b.ctl(*args)`` runs it.

    Args:
        timeout: wall seconds to wait until an AMQP connection opens
            (a start takes ~4-10 s).
        extra_conf: more lines for rabbitmq.conf (new-style sysctl format).
        keep_data: keep the temp folder after exit.

    Raises BrokerNotInstalled (apt-get install rabbitmq-server / epmd comes
    with erlang-base; pip install pika), BrokerStartError, BrokerStopError.
    """
    script = _rabbit_script()
    epmd = _need_binary("epmd", "erlang-base")
    _need_module("pika", "pika")
    port, dist_port, epmd_port = free_ports(3)
    nodename = f"acksim{port}@localhost"
    data_dir = tempfile.mkdtemp(prefix="acksim-rabbitmq-")
    env = rabbitmq_env(data_dir, nodename, port, dist_port, epmd_port)
    try:
        for d in ("mnesia", "log", "plugins-expand"):
            os.makedirs(os.path.join(data_dir, d), exist_ok=True)
        with open(env["RABBITMQ_CONF_ENV_FILE"], "w"):
            pass
        with open(env["RABBITMQ_ENABLED_PLUGINS_FILE"], "w") as f:
            f.write("[].\n")
        with open(env["RABBITMQ_CONFIG_FILE"], "w") as f:
            f.write(f"listeners.tcp.1 = {HOST}:{port}\n"
                    "log.console = false\nlog.file.level = info\n" + extra_conf)
    except BaseException:
        shutil.rmtree(data_dir, ignore_errors=True)
        raise
    epmd_proc: List[_Proc] = []

    def start(b: Broker) -> None:
        if not epmd_proc or epmd_proc[0].exited() is not None:
            # Our own foreground epmd, so it belongs to us and dies with us;
            # erl's own "epmd -daemon" then finds the port taken and exits.
            epmd_proc[:] = [_Proc([epmd, "-address", HOST, "-port", str(epmd_port)],
                                  os.path.join(data_dir, "epmd.log"), data_dir, env)]
            deadline = time.monotonic() + 5
            while not port_open(epmd_port):
                if time.monotonic() > deadline or epmd_proc[0].exited() is not None:
                    raise BrokerStartError(f"epmd did not open {HOST}:{epmd_port}; log:\n"
                                           + _log_tail(epmd_proc[0].log_path))
                time.sleep(0.02)
        b.proc = _Proc([script], b.log_path, cwd=data_dir, env=env)

        def probe() -> str:
            import logging
            import pika
            log = logging.getLogger("pika")   # silence refused-connection noise
            level = log.level
            log.setLevel(logging.CRITICAL)
            params = pika.ConnectionParameters(
                host=HOST, port=b.port, connection_attempts=1, socket_timeout=2,
                blocked_connection_timeout=2, stack_timeout=5)
            try:
                conn = pika.BlockingConnection(params)
            finally:
                log.setLevel(level)
            try:
                v = conn._impl.server_properties.get("version", b"")
                return v.decode() if isinstance(v, bytes) else str(v)
            finally:
                conn.close()

        _wait_ready(b, probe, timeout)

    def stop(b: Broker, hard: bool) -> None:
        assert b.proc is not None
        b.proc.stop(term_timeout=30.0, hard=hard)
        _wait_ports_closed([b.port, dist_port], timeout=10.0)

    b = Broker("rabbitmq", port, data_dir, start, stop)
    b.extra_ports = {"dist": dist_port, "epmd": epmd_port}
    b.env = env  # type: ignore[attr-defined]
    b.nodename = nodename  # type: ignore[attr-defined]

    def ctl(*args: str, timeout: float = 30.0) -> str:
        """Run ``rabbitmqctl -n <node> ARGS`` against this node (~0.6 s); return stdout.

        Raises BrokerError on a non-zero exit, subprocess.TimeoutExpired after
        ``timeout`` wall seconds.
        """
        ctl_exe = "/usr/lib/rabbitmq/bin/rabbitmqctl"
        if not os.access(ctl_exe, os.X_OK):
            ctl_exe = _need_binary("rabbitmqctl", "rabbitmq-server")
        r = subprocess.run([ctl_exe, "-n", nodename, *args], env=env, cwd=data_dir,
                           capture_output=True, text=True, timeout=timeout)
        if r.returncode != 0:
            raise BrokerError(f"rabbitmqctl {' '.join(args)} failed: {r.stderr.strip()}")
        return r.stdout

    b.ctl = ctl  # type: ignore[attr-defined]
    with _sigterm_as_exit():
        try:
            with _running(b, keep_data=True):
                yield b
        finally:
            try:
                for p in epmd_proc:
                    p.stop(term_timeout=5.0)
                _wait_ports_closed([epmd_port], timeout=5.0)
            finally:
                if not keep_data:
                    shutil.rmtree(data_dir, ignore_errors=True)


# --------------------------------------------------------------------------
# SQS (moto)
# --------------------------------------------------------------------------

SQS_REGION = "us-east-1"
SQS_CREDENTIALS = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}


def sqs_client(endpoint_url: str, **config):
    """A boto3 SQS client for a moto server: dummy credentials, us-east-1.

    ``config`` goes to botocore.config.Config (default: 1 attempt, 5 s timeouts).
    """
    import boto3
    from botocore.config import Config
    cfg = {"retries": {"max_attempts": 1, "mode": "standard"},
           "connect_timeout": 5, "read_timeout": 5, **config}
    return boto3.session.Session().client(
        "sqs", region_name=SQS_REGION, endpoint_url=endpoint_url,
        config=Config(**cfg), **SQS_CREDENTIALS)


@contextlib.contextmanager
def sqs_server(timeout: float = 30.0, keep_data: bool = False) -> Iterator[Broker]:
    """Run moto's server (``python -m moto.server -H 127.0.0.1 -p PORT``); yield a :class:`Broker`.

    Uses the current interpreter (``sys.executable``), so moto[server] must be
    installed in the running venv.  ``b.endpoint_url`` is ``http://127.0.0.1:PORT``,
    ``b.client()`` returns a boto3 SQS client (dummy creds, region us-east-1).
    moto keeps everything in memory: a restart loses all queues.

    Args:
        timeout: wall seconds to wait for ListQueues to succeed.
        keep_data: keep the temp folder (only the log) after exit.

    Raises BrokerNotInstalled (pip install 'moto[server]' / boto3),
    BrokerStartError, BrokerStopError.
    """
    _need_module("moto", "moto[server]")
    _need_module("flask", "moto[server]")
    _need_module("boto3", "boto3")
    from importlib.metadata import version as _dist_version
    port = free_port()
    data_dir = tempfile.mkdtemp(prefix="acksim-sqs-")
    endpoint = f"http://{HOST}:{port}"

    def start(b: Broker) -> None:
        env = dict(os.environ, **{"AWS_ACCESS_KEY_ID": "testing",
                                  "AWS_SECRET_ACCESS_KEY": "testing",
                                  "AWS_DEFAULT_REGION": SQS_REGION})
        b.proc = _Proc([sys.executable, "-m", "moto.server", "-H", HOST, "-p", str(b.port)],
                       b.log_path, cwd=b.data_dir, env=env)
        client = sqs_client(endpoint)

        def probe() -> str:
            client.list_queues()
            return _dist_version("moto")

        _wait_ready(b, probe, timeout)

    def stop(b: Broker, hard: bool) -> None:
        assert b.proc is not None
        b.proc.stop(term_timeout=10.0, hard=hard)

    b = Broker("sqs", port, data_dir, start, stop)
    b.endpoint_url = endpoint  # type: ignore[attr-defined]
    b.client = lambda **cfg: sqs_client(endpoint, **cfg)  # type: ignore[attr-defined]
    with _running(b, keep_data):
        yield b


if __name__ == "__main__":  # python brokers.py [redis|rabbitmq|sqs ...]: start, print, stop
    makers = {"redis": redis_server, "rabbitmq": rabbitmq_server, "sqs": sqs_server}
    for name in sys.argv[1:] or list(makers):
        with makers[name]() as br:
            print(f"{br!r} started in {br.startup_s:.2f} s; extra ports {br.extra_ports}")
            sys.stdout.flush()
            subprocess.run(["ss", "-ltnp"], check=False)
        print(f"{name} stopped")
