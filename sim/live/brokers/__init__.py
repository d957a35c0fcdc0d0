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

One module per concept: ``errors``, ``ports``, ``processes`` (the server process tree),
``broker`` (the yielded ``Broker``), and one per server: ``redis``, ``rabbitmq``, ``sqs``.
This package is the documented place (docs/live.md) to import them from.
"""

from __future__ import annotations

from acksim.live.brokers.broker import Broker
from acksim.live.brokers.errors import BrokerError, BrokerNotInstalled, BrokerStartError, BrokerStopError
from acksim.live.brokers.ports import HOST, free_port, free_ports
from acksim.live.brokers.rabbitmq import rabbitmq_server
from acksim.live.brokers.redis import redis_server
from acksim.live.brokers.sqs import sqs_server

__all__ = [
    "Broker", "BrokerError", "BrokerNotInstalled", "BrokerStartError",
    "BrokerStopError", "free_port", "free_ports", "redis_server",
    "rabbitmq_server", "sqs_server", "HOST",
]
