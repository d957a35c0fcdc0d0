"""Debian's ``rabbitmq-server`` as a private node (``rabbitmq_server``): its own epmd, node name,
configuration and data folder, every port on 127.0.0.1; ``rabbitmqctl`` against that node."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
import time
from typing import Iterator, List

from acksim.live.brokers.broker import Broker, _running, _sigterm_as_exit, _wait_ready
from acksim.live.brokers.errors import BrokerError, BrokerStartError
from acksim.live.brokers.ports import HOST, _wait_ports_closed, free_ports, port_open
from acksim.live.brokers.processes import _log_tail, _need_binary, _need_module, _Proc


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
