"""The wall clock as an actor's ``env`` port: a live run drives the simulation's own actors.

An actor written for SimPy (``acksim.world.actors.renewals.Renewals``) asks its ``env`` for
``now``, ``timeout(delay)`` and ``process(generator)``. ``WallEnv`` answers on the wall clock
of a live run: ``now`` is the virtual time the run's journal reads from the wall clock
(``wall = virtual * time_scale``), and a generator that yields a timeout is resumed by the
run's loop (``LiveRun``, ``acksim.live.run``: named, not imported) when that virtual time
comes. Times are virtual seconds.
"""

from __future__ import annotations

from dataclasses import dataclass

from acksim.live.journal import Journal


@dataclass(frozen=True, slots=True)
class Timeout:
    """What ``WallEnv.timeout`` returns: a wait of ``delay`` virtual seconds (>= 0)."""

    delay: float


class WallEnv:
    """``now`` (virtual s from the wall clock), ``timeout(d)`` and ``process(gen)``: a
    generator yielding ``timeout`` events is resumed by the parent's loop at that time.
    ``journal`` tells the time; ``loop`` has ``at(virtual_s, item)`` and resumes the
    generator of a ``("step", gen)`` item."""

    def __init__(self, journal: Journal, loop) -> None:
        self._j, self._loop = journal, loop

    @property
    def now(self) -> float:
        """Virtual seconds now."""
        return self._j.now()

    def timeout(self, delay: float) -> Timeout:
        """A wait of ``delay`` virtual seconds (a negative one: none)."""
        return Timeout(max(0.0, float(delay)))

    def process(self, gen) -> None:
        """Start generator ``gen`` now: the loop steps it to its first wait."""
        self._loop.at(self.now, ("step", gen))


__all__ = ["Timeout", "WallEnv"]
