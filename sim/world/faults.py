"""Faults as data, and the plan that decides where crashes land.

A fault schedule is frozen data (the scenario's ``ScheduledCrash`` and ``Deployment``) so a
failing run reads as a short schedule. The ``FaultPlan`` answers one question at each crash
opportunity of a worker: crash here? It combines the scheduled crashes with the scenario's
per-phase probabilities, drawn from the asking worker's own seeded random stream.
"""

from __future__ import annotations

import random

import simpy

from acksim.scenario import CRASH_PHASES, Faults, Scenario


class FaultPlan:
    """Decides crashes. ``crash(rng, delivery, phase, call)`` is True when the worker must
    crash at that point: a scheduled crash matches, or the phase's probability fires."""

    def __init__(self, faults: Faults) -> None:
        self._p = {phase: getattr(faults, f"crash_{phase}") for phase in CRASH_PHASES}
        self._scheduled = frozenset(
            (c.delivery, c.phase, c.call if c.phase in ("before_call", "after_call") else 0)
            for c in faults.crashes
        )

    def draws(self, phase: str) -> bool:
        """Whether ``crash`` at ``phase`` draws from the worker's stream (its probability is
        above 0); when not, its answer depends on the schedule alone."""
        return self._p[phase] > 0.0

    def crash(self, rng: random.Random, delivery: int, phase: str, call: int = 0) -> bool:
        """Whether to crash at ``phase`` of the attempt on delivery number ``delivery``."""
        if self._scheduled and (delivery, phase, call) in self._scheduled:
            return True
        p = self._p[phase]
        return p > 0.0 and rng.random() < p


def store_latency(scenario: Scenario, now: float, rng: random.Random) -> float:
    """One store call's (or commit's) latency in virtual seconds: ``stores.latency_mean_s``,
    constant or exponential (drawn from ``rng``), times the factor of every latency spike
    active at ``now``. 0 without drawing when the mean is 0."""
    st = scenario.stores
    if st.latency_mean_s <= 0:
        return 0.0
    base = st.latency_mean_s if st.latency_distribution == "constant" else rng.expovariate(1.0 / st.latency_mean_s)
    factor = 1.0
    for spike in scenario.faults.latency_spikes:
        if spike.at_s <= now < spike.at_s + spike.duration_s:
            factor *= spike.factor
    return base * factor


def latency_of(scenario: Scenario):
    """``store_latency`` for ``scenario`` as a function ``(now, rng) -> seconds``, the same
    draws and the same floats, with what does not change during a run looked up once."""
    st = scenario.stores
    mean = st.latency_mean_s
    if mean <= 0:
        return lambda now, rng: 0.0
    if scenario.faults.latency_spikes:
        return lambda now, rng: store_latency(scenario, now, rng)
    if st.latency_distribution == "constant":
        return lambda now, rng: mean
    rate = 1.0 / mean
    return lambda now, rng: rng.expovariate(rate)  # times a factor of 1.0: the same float


def stay_down(env: simpy.Environment, history, name: str, down_s: float):
    """SimPy sub-process of a crashed worker ``name``: stay down ``down_s`` (a deployment or
    kill reaching it while down keeps it down until the later of the two restarts), then
    record "restarted"."""
    down_until = env.now + down_s
    while env.now < down_until:
        try:
            yield env.timeout(down_until - env.now)
        except simpy.Interrupt as again:
            down_until = max(down_until, env.now + again.cause[1])
    history.record("restarted", name)


def fault_injector(world, deployments) -> "simpy.events.ProcessGenerator":
    """SimPy process: rolling deployments. At each deployment's ``at_s`` every worker in turn
    is interrupted (cause "deployment") and stays down ``worker_down_s``; the next worker is
    stopped ``worker_down_s`` later, once the previous one's restart at that instant is done
    (a worker already down for longer stays down for the longer time)."""
    env = world.env
    for dep in sorted(deployments, key=lambda d: d.at_s):
        if dep.at_s > env.now:
            yield env.timeout(dep.at_s - env.now)
        world.history.record("deployment_started", "fault-injector", detail=f"worker_down_s={dep.worker_down_s}")
        for proc in world.workers:
            if proc.is_alive:
                proc.interrupt(("deployment", dep.worker_down_s))
            yield env.timeout(dep.worker_down_s)
            yield env.timeout(0)  # let the worker's own restart at this instant come first


def killer(world, kills) -> "simpy.events.ProcessGenerator":
    """SimPy process: hard kills. At each kill's ``at_s`` worker number ``worker`` is
    interrupted wherever it is (cause "killed") and stays down ``down_s``."""
    env = world.env
    for kill in sorted(kills, key=lambda k: (k.at_s, k.worker)):
        if kill.at_s > env.now:
            yield env.timeout(kill.at_s - env.now)
        world.history.record("worker_killed", "fault-injector", detail=f"worker-{kill.worker} down_s={kill.down_s:g}")
        if kill.worker <= len(world.workers) and world.workers[kill.worker - 1].is_alive:
            world.workers[kill.worker - 1].interrupt(("killed", kill.down_s))
