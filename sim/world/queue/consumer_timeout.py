"""The ack timeout that ends the consumer: a closed channel takes the process down with it.

RabbitMQ closes the channel of a consumer whose delivery outlived ``consumer_timeout``, with
PRECONDITION_FAILED, and requeues every delivery on it [RMQ-CONS]; a Celery worker takes
that as an unrecoverable error and its process ends [C-6760], to be restarted by its
supervisor. With ``queue.ack_timeout_ends_consumer`` the world does the same: after the
channel is closed (``acksim.world.queue.leases.lapse``) the consumer's worker process is
interrupted wherever it is (crash kind "consumer_timeout") and restarts after
``workers.restart_delay_s``; its unacked deliveries were requeued by the closing channel.
"""

from __future__ import annotations

PHASE = "consumer_timeout"


def end_consumer(queue, consumer: str) -> None:
    """End the worker process of ``consumer`` ("worker-N"), if it runs (see the module)."""
    hook = getattr(queue, "end_consumer", None)
    if hook is not None:
        hook(consumer)


def install(world) -> None:
    """Let ``world.queue`` end a consumer's process: interrupt worker "worker-N" with
    ("consumer_timeout", ``workers.restart_delay_s``) when its process is alive."""
    def end(consumer: str) -> None:
        number = int(consumer.rsplit("-", 1)[1]) if consumer.startswith("worker-") else 0
        if 1 <= number <= len(world.workers) and world.workers[number - 1].is_alive:
            world.workers[number - 1].interrupt((PHASE, world.scenario.workers.restart_delay_s))

    world.queue.end_consumer = end
