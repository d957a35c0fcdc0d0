"""``python -m acksim.live.brokers [redis|rabbitmq|sqs ...]``: start each broker, print it and
the listening sockets, stop it."""

import subprocess
import sys

from acksim.live.brokers import rabbitmq_server, redis_server, sqs_server

makers = {"redis": redis_server, "rabbitmq": rabbitmq_server, "sqs": sqs_server}
for name in sys.argv[1:] or list(makers):
    with makers[name]() as br:
        print(f"{br!r} started in {br.startup_s:.2f} s; extra ports {br.extra_ports}")
        sys.stdout.flush()
        subprocess.run(["ss", "-ltnp"], check=False)
    print(f"{name} stopped")
