"""Live faults done for real, ready for the scenario keys that name them.

A pause is SIGSTOP to a worker process and SIGCONT after the pause's wall time: the process
keeps its broker connection and its SQLite transaction, holds its delivery while the broker's
clock runs on (a visibility timeout or a claim's min idle lapses; RabbitMQ keeps the delivery
while the TCP connection stays open, until the heartbeat or the ack timeout). A broker restart
stops the server (SIGTERM, or SIGKILL for a crash) and starts it again on the same port and data
folder after its down time (``acksim.live.brokers.Broker.restart``): what survives is the
broker's own durability (Redis: only with an append-only file; RabbitMQ quorum queues: ready
and unacked messages; moto: nothing).

``LiveRun`` (``acksim.live.run``) runs these from its loop as the items ``("pause", worker
index, down_s)`` and ``("broker_restart", down_s, hard)`` (virtual seconds, scaled there); the
``[faults]`` keys that schedule them come with the simulation's pause and broker-restart faults.
All times here are wall seconds.
"""

from __future__ import annotations

import os
import signal
import time


def process_state(pid: int) -> str:
    """The one-letter state of process ``pid`` from /proc (``"T"``: stopped; ``"S"``, ``"R"``:
    running or sleeping; ``""`` when it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return ""


def pause(pid: int) -> bool:
    """SIGSTOP process ``pid``; False when it is already gone."""
    try:
        os.kill(pid, signal.SIGSTOP)
        return True
    except ProcessLookupError:
        return False


def resume(pid: int) -> bool:
    """SIGCONT process ``pid``; False when it is already gone."""
    try:
        os.kill(pid, signal.SIGCONT)
        return True
    except ProcessLookupError:
        return False


def restart_broker(broker, down_s: float, hard: bool = False) -> float:
    """Stop ``broker`` (SIGKILL when ``hard``), wait ``down_s``, start it again; returns the wall
    seconds from the stop to the first client round trip after it. Raises what
    ``Broker.restart`` raises (``BrokerStartError``, ``BrokerStopError``)."""
    t = time.monotonic()
    broker.restart(down_s, hard)
    return time.monotonic() - t


__all__ = ["pause", "resume", "process_state", "restart_broker"]
