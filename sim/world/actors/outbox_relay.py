"""The outbox relay and the mail provider: how a committed outbox event becomes a reminder.

The relay polls the outbox for pending events outside any worker transaction, every
``mail.poll_interval_s``; a poll that finds nothing sleeps until a worker commits an outbox
event (``poke``) and then wakes at the poll instant it would have reached by polling on, so
idle polls cost no simulation events and the polls that find work land where they always did.
It sends each pending event to the mail provider with the event key as the provider's idempotency key, and marks it sent.
The provider is the ground truth for "a reminder was sent": it records ``reminder_sent`` the
first time it accepts a key and ``reminder_duplicate`` for a resend it recognises. Transient
errors (429, 5xx) are retried on later polls up to ``mail.max_attempts``; permanent errors
(4xx, invalid input) fail the event at once, as the design documents classify them.
"""

from __future__ import annotations

import random

from acksim.model.errors import ConflictError
from acksim.scenario import Mail
from acksim.world.ticks import delay_until, next_tick


MARK_RETRIES = 100
MARK_RETRY_S = 0.01


class MailProvider:
    """The external provider. With ``idempotent`` it remembers the keys it has accepted and
    drops a resend; without, it sends every request it gets."""

    def __init__(self, idempotent: bool = True) -> None:
        self.idempotent = idempotent
        self.accepted: dict[str, float] = {}

    def send(self, event_key: str, now: float) -> bool:
        """Send a reminder; returns False when it was dropped as a resend of ``event_key``."""
        if self.idempotent and event_key in self.accepted:
            return False
        self.accepted.setdefault(event_key, now)
        return True


class OutboxRelay:
    """The relay actor. ``idle`` is True when the outbox holds no pending event.

    Its ports: ``env`` (a SimPy environment), ``session`` (its own unit of work on the stores),
    ``record`` (``History.record``'s signature), ``config`` (the ``[mail]`` section) and
    ``rng`` (its random stream)."""

    def __init__(self, env, session, record, config: Mail, rng: random.Random) -> None:
        self.env, self.session, self.record, self.config = env, session, record, config
        self.rng = rng
        self.provider = MailProvider(config.provider_idempotency)
        self._attempts: dict[int, int] = {}  # outbox row seq -> transient failures
        self._asleep = None  # the SimPy event an idle relay waits on until ``poke``

    def poke(self) -> None:
        """A worker committed an outbox event: wake a relay that found nothing to send."""
        if self._asleep is not None and not self._asleep.triggered:
            self._asleep.succeed()

    @property
    def idle(self) -> bool:
        """True when the outbox holds no pending event."""
        return not self.session.outbox.pending(1)

    def run(self):
        """SimPy process: poll every ``mail.poll_interval_s`` and send what is pending."""
        env, cfg, record = self.env, self.config, self.record
        outbox = self.session.outbox
        poll = cfg.poll_interval_s
        while True:
            yield env.timeout(poll)
            pending = outbox.pending(cfg.batch)
            while not pending:  # idle: sleep until a commit, then wake on the polling grid
                tick = env.now
                self._asleep = env.event()
                yield self._asleep
                self._asleep = None
                yield env.timeout(delay_until(env.now, next_tick(tick, poll, env.now)))
                pending = outbox.pending(cfg.batch)
            for ev in pending:
                yield env.timeout(cfg.latency_s)
                fields = dict(account_id=ev.account_id, cleanup_version=ev.cleanup_version, detail=ev.event_key)
                u = self.rng.random()
                outage = next((o.error for o in cfg.outages if o.start_s <= env.now < o.end_s), None)
                try:
                    if outage == "permanent" or (outage is None and u < cfg.permanent_error_probability):
                        outbox.mark_failed(ev.event_key, ev.seq)
                        record("reminder_failed", "outbox-relay", **fields)
                    elif outage == "transient" or u < cfg.permanent_error_probability + cfg.transient_error_probability:
                        n = self._attempts.get(ev.seq, 0) + 1
                        self._attempts[ev.seq] = n
                        if n >= cfg.max_attempts:
                            outbox.mark_failed(ev.event_key, ev.seq)
                            record("reminder_failed", "outbox-relay", **fields)
                        else:
                            record("reminder_retry", "outbox-relay", **fields)
                    else:
                        first = self.provider.send(ev.event_key, env.now)
                        record("reminder_sent" if first else "reminder_duplicate", "mail-provider", **fields)
                        yield from self._mark_sent(ev.event_key, ev.seq)
                except ConflictError:
                    pass  # a worker holds the write lock: the event stays pending for the next poll
                self.session.take_autocommitted()  # the relay's own writes need no record

    def _mark_sent(self, event_key: str, seq: int):
        """Mark the outbox row ``seq`` (of ``event_key``) sent, that row only: a second row
        of the same key (a design without unique outbox keys) is sent on its own, and the
        provider counts it (``reminder_sent`` again, or ``reminder_duplicate`` when it
        recognises the key). Record a send that happened: a worker holding the write lock delays the mark, it
        does not undo it (retried every ``MARK_RETRY_S`` up to ``MARK_RETRIES`` times; then
        the event stays pending and the next poll sends it again, which only an idempotent
        provider absorbs)."""
        for _ in range(MARK_RETRIES):
            try:
                self.session.outbox.mark_sent(event_key, seq)
                return
            except ConflictError:
                yield self.env.timeout(MARK_RETRY_S)
