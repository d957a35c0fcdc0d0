"""Before a live run: refuse what the live mode cannot run, and start the broker it needs.

``check_live_scenario`` refuses a scenario the live mode has no real counterpart for (one
line naming the field, ``ScenarioError``); ``broker_context`` starts a real broker
(``acksim.live.brokers``) for a block and always stops it, and refuses one that is not
installed (``BrokerMissing``, one line naming the package).
"""

from __future__ import annotations

import sys
from contextlib import contextmanager

from acksim.scenario import Scenario, ScenarioError


class BrokerMissing(ScenarioError):
    """A broker binary or client module is not installed (one line naming the package)."""


@contextmanager
def broker_context(kind: str, persistent: bool = False):
    """Start broker ``kind`` for the block, stop it after; raises ``BrokerMissing`` when its
    binary or client module is not installed. ``persistent``: Redis keeps an append-only file
    (``appendfsync everysec``, Redis's default for it) so a restart keeps the stream, the group
    and its pending entries; RabbitMQ's quorum queues persist anyway, moto never does."""
    from acksim.live import brokers

    makers = {"redis": (lambda: brokers.redis_server(appendonly=True)) if persistent else brokers.redis_server,
              "rabbitmq": brokers.rabbitmq_server, "sqs": brokers.sqs_server}
    cm = makers[kind]()
    try:
        broker = cm.__enter__()
    except brokers.BrokerNotInstalled as exc:
        raise BrokerMissing(f"--broker {kind}: {exc}") from None
    try:
        yield broker
    except BaseException:
        if not cm.__exit__(*sys.exc_info()):
            raise
    else:
        cm.__exit__(None, None, None)


def check_live_scenario(sc: Scenario, broker: str | None = None) -> None:
    """Refuse what the live mode cannot run (one line naming the field; ``ScenarioError``);
    ``broker`` ("redis", "rabbitmq", "sqs"; None: any) refuses what one broker cannot do."""
    if any(p.delivery is not None for p in sc.faults.pauses):
        raise ScenarioError("faults.pauses: a pause at a delivery's store call (delivery, call) has no live mode; "
                            "pause a worker at a time instead (worker, at_s)")
    if broker == "sqs" and sc.faults.broker_restarts:
        raise ScenarioError("faults.broker_restarts: moto (the live SQS) keeps its queues in memory, so a restart "
                            "would lose them, which SQS never does; use --broker redis or rabbitmq")
    if sc.fanout.updates:
        raise ScenarioError("fanout.updates: the shipment fan-out design has no live mode")
    if sc.stores.isolation != "serializable":
        raise ScenarioError("stores.isolation: live runs use SQLite, which offers only serializable isolation")
    if sc.scheduler.mode != "per_deadline":
        raise ScenarioError("scheduler.mode: live runs publish at each deadline (per_deadline); cron is not live yet")
    if sc.queue.eta_held_by_worker:
        raise ScenarioError("queue.eta_held_by_worker: not supported live")


__all__ = ["BrokerMissing", "broker_context", "check_live_scenario"]
