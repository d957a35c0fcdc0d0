"""moto's SQS server on 127.0.0.1 (``sqs_server``), in memory, and a boto3 client for it
(``sqs_client``: dummy credentials, region us-east-1)."""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from typing import Iterator

from acksim.live.brokers.broker import Broker, _running, _wait_ready
from acksim.live.brokers.ports import HOST, free_port
from acksim.live.brokers.processes import _need_module, _Proc


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
