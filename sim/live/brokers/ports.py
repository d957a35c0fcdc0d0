"""TCP ports on 127.0.0.1 for the brokers: free ones to bind (drawn below the kernel's ephemeral
range), whether one accepts connections, and waiting until a stopped server's ports close."""

from __future__ import annotations

import socket
import time
from typing import List, Sequence

from acksim.live.brokers.errors import BrokerStopError

HOST = "127.0.0.1"


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
