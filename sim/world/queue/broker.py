"""Broker restarts and failovers: the queue itself goes away for a while.

While the broker is down (``[[faults.broker_restarts]]``: ``[at_s, at_s + down_s)``) nothing
reaches it: no receives, heartbeats, acks or nacks (the workers' attempts fail, recorded as
"ack_failed"), and a publish is retried by the publisher's client until the broker is back
(recorded as "publish_deferred", then published at the restart). No lease is taken back while
it is down. At the restart the broker recovers its in-flight deliveries as its system
documents (``queue.on_broker_restart``):

- "requeue" (RabbitMQ [RMQ-CONF]): the connections were lost, so every unacked delivery is
  requeued at once ("visibility_expired", detail "broker_restart");
- "lease" (SQS, BullMQ, Redis Streams [AWS-VIS][B-STALL][R-XCL]): each delivery stays on loan
  until its lease lapses and the queue's own mechanism (a timer, a stalled check, a claimer)
  notices it, as without a restart;
- "lost" (a broker without persistence [R-PERSIST]): every message it held, in flight or
  waiting, is gone ("dropped", detail "broker_restart:not_persisted").

With ``queue.broker_lost_writes_s`` > 0 the messages published in that many seconds before
the restart are lost too (a store that syncs to disk periodically [R-PERSIST]: "dropped",
detail "broker_restart:unsynced"). ``world`` is the ``World`` (``acksim.world.core``), which
builds the broker: named, not imported.
"""

from __future__ import annotations

from acksim.world.queue.delivery_limit import returned


class Broker:
    """The broker's up/down state for one world. ``down()`` asks it at the current instant
    (the windows are fixed in advance); ``defer`` keeps a publish for the restart; ``run`` is
    the SimPy process that restarts it."""

    def __init__(self, world) -> None:
        self.world = world
        self.windows = sorted((r.at_s, r.at_s + r.down_s) for r in world.scenario.faults.broker_restarts)
        self.deferred: list[tuple] = []

    def down(self) -> bool:
        """Whether the broker is down now."""
        now = self.world.env.now
        return any(lo <= now < hi for lo, hi in self.windows)

    def defer(self, job, deadline_s: float, delay_s: float, actor: str, size: int) -> None:
        """A publish while down: record "publish_deferred" and publish it at the restart
        (the client's retry). Returns None, like a deduplicated publish."""
        self.world.history.record("publish_deferred", actor, account_id=job.account_id,
                                  cleanup_version=job.cleanup_version, deadline=deadline_s, detail="broker_down")
        self.deferred.append((job, deadline_s, delay_s, actor, size, self.world.env.now))
        return None

    def run(self):
        """SimPy process: each restart window, record "broker_down" at its start and recover
        at its end ("broker_restarted")."""
        env, q = self.world.env, self.world.queue
        for lo, hi in self.windows:
            if lo > env.now:
                yield env.timeout(lo - env.now)
            self.world.history.record("broker_down", "broker", detail=f"{hi - lo:g} s")
            yield env.timeout(hi - env.now)
            self.world.history.record("broker_restarted", "broker", detail=q.config.on_broker_restart)
            self._recover(lo)

    def _recover(self, went_down_at: float) -> None:
        q = self.world.queue
        cfg, now = q.config, self.world.env.now
        if cfg.broker_lost_writes_s > 0:
            since = went_down_at - cfg.broker_lost_writes_s
            for msg in list(q.messages.values()):
                if since <= msg.sent_at < went_down_at and msg.state in ("delayed", "visible", "in_flight"):
                    q.delete(msg)
                    q.log("dropped", "broker", msg, msg.receive_count, "broker_restart:unsynced")
        mode = cfg.on_broker_restart
        if mode == "lost":
            for msg in list(q.messages.values()):
                if msg.state in ("delayed", "visible", "in_flight"):
                    q.delete(msg)
                    q.log("dropped", "broker", msg, msg.receive_count, "broker_restart:not_persisted")
        elif mode == "requeue":
            for msg in list(q.loans.values()):
                q.log("visibility_expired", "broker", msg, msg.receive_count, "broker_restart")
                msg.receipt += 1  # the old channel's delivery tags are void
                if not returned(q, msg):  # a closed connection's requeue is a return (RMQ-QQ)
                    q.make_visible(msg, head=cfg.requeue_at_head)
        elif cfg.sweep_interval_s == 0 and cfg.redelivery not in ("claim", "none"):
            from acksim.world.queue.leases import lapse

            lapsed = [(m, m.receipt) for m in q.loans.values() if m.lease_until <= now]
            for msg, receipt in lapsed:  # its lease timer fired while the broker was down
                if msg.state == "in_flight" and msg.receipt == receipt:  # (not requeued by an earlier one)
                    lapse(q, msg)
        deferred, self.deferred = self.deferred, []
        for job, deadline_s, delay_s, actor, size, asked_at in deferred:
            q.publish(job, deadline_s, max(delay_s - (now - asked_at), 0.0), actor, size)
        q.dispatch()
