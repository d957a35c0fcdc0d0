"""A broker restart under way in a live run: the real server stops and comes back.

``broker_down`` starts one ("broker_down"): the server stops and starts again in a thread of
its own (``BrokerOutage``) so the parent's loop goes on meanwhile (the lifecycle commits,
worker restarts, journals), and jobs due meanwhile are deferred. Once it is ``done()``,
``broker_back`` reconnects, records "broker_restarted" with what the real broker did with its
deliveries, in the simulation's words, records each message the restart lost ("dropped") and
publishes what waited. ``end_outage`` lets a restart under way finish on the way out.

The functions are over the run ``run`` (``LiveRun``, ``acksim.live.run``: named, not
imported): its ``restarting`` outage, ``deferred`` jobs, ``broker``, ``transport``,
``journal``, ``ledger``, ``kind``, ``persistent``, ``scale``, ``broker_up``,
``broker_downtimes`` and ``publish``. All times here are wall seconds but ``down_s``
(virtual seconds).
"""

from __future__ import annotations

import threading
import time

RECONNECT_WALL_S = 30.0  # after a broker restart: wall seconds the parent keeps trying to reconnect


class BrokerOutage:
    """A broker restart under way, in a thread of its own so the parent's loop goes on (the
    lifecycle commits, worker restarts, journals): stop the server (SIGTERM, or SIGKILL when
    ``hard``), wait ``down_wall_s``, start it again on the same port and data folder
    (``Broker.stop`` / ``Broker.start``). ``wall_s``: wall seconds from the stop to ready;
    ``error``: what the stop or start raised (``BrokerStartError``, ``BrokerStopError``)."""

    def __init__(self, broker, down_wall_s: float, hard: bool = False) -> None:
        self.broker, self.down_wall_s, self.hard = broker, down_wall_s, hard
        self.wall_s = 0.0
        self.up_at: float | None = None  # the wall time (monotonic) it answered again
        self.error: BaseException | None = None
        self._cancel = threading.Event()
        self._thread = threading.Thread(target=self._run, name="acksim-broker-restart", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        t = time.monotonic()
        try:
            self.broker.stop(hard=self.hard)
            self._cancel.wait(self.down_wall_s)
            self.broker.start()
        except BaseException as exc:  # noqa: BLE001 - reported to the loop, which stops the run
            self.error = exc
        self.up_at = time.monotonic()
        self.wall_s = self.up_at - t

    def done(self) -> bool:
        """Whether the restart is over (the server is back, or ``error`` says why not)."""
        return not self._thread.is_alive()

    def cancel(self) -> None:
        """Cut the down time short (the run is ending)."""
        self._cancel.set()

    def join(self) -> None:
        """Wait until the restart is over."""
        self._thread.join()


def broker_down(run, down_s: float, hard: bool) -> None:
    """Restart ``run``'s broker now for ``down_s`` virtual seconds (SIGKILL when ``hard``),
    recording "broker_down"; nothing while a restart is under way (it comes back once)."""
    if run.restarting is not None:  # still down from the last one: it comes back once
        return
    run.journal.record("broker_down", "broker", detail=f"{down_s:g} s")
    run.restarting = BrokerOutage(run.broker, down_s * run.scale, hard)


def broker_back(run, publish: bool = True) -> str:
    """The restart is over: record "broker_restarted", reconnect, record what the restart
    lost ("dropped"), publish what waited (unless ``publish`` is False: the run is over).
    Returns a stop reason when the broker did not come back, else ""."""
    r, run.restarting = run.restarting, None
    error = r.error
    if error is None:
        deadline = time.monotonic() + RECONNECT_WALL_S
        while True:  # a node that takes connections before its queues are ready
            try:
                run.transport.reconnect()
                break
            except Exception as exc:  # noqa: BLE001 - only a lost broker is retried
                if not run.transport.lost_connection(exc) or time.monotonic() > deadline:
                    error = exc
                    break
                time.sleep(0.2)
    if error is not None:
        run.broker_up = False
        return f"live: the broker did not come back after its restart ({type(error).__name__}: {error})"
    run.broker_downtimes.append(r.wall_s)
    kept = run.transport.surviving_ids()
    # what the real broker did with its deliveries, in the simulation's words: RabbitMQ's
    # closed connections requeue them; Redis keeps its pending entries with an append-only
    # file (started with one unless the scenario says "lost"), else loses everything
    what = "requeue" if run.kind == "rabbitmq" else "lease" if run.persistent else "lost"
    run.journal.record("broker_restarted", "broker", at=r.up_at, detail=what)  # when it answered
    if kept is not None:
        ledger = run.ledger
        for mid in sorted(ledger.unfinished() - kept):
            aid, version, deadline_s = ledger.published[mid]
            ledger.terminal.add(mid)
            run.journal.record("dropped", "broker", message_id=mid, account_id=aid, cleanup_version=version,
                               deadline=deadline_s, detail="broker_restart:not_persisted")
    deferred, run.deferred = (run.deferred, []) if publish else ([], run.deferred)
    for aid, version, deadline_s in deferred:
        run.publish(aid, version, deadline_s)
    return ""


def end_outage(run) -> None:
    """On the way out (an error, Ctrl-C): let a restart under way finish, so the broker it
    started is the one stopped."""
    if run.restarting is not None:
        run.restarting.cancel()
        run.restarting.join()


__all__ = ["BrokerOutage", "broker_back", "broker_down", "end_outage"]
