"""What a run will cost, estimated before any set-up: a scenario whose estimate is over
``run.max_events`` is refused at once, with one line naming the field that makes it
expensive, instead of spending minutes and gigabytes building a world that the event budget
(``acksim.world.budget``) would stop anyway.

The estimate is deliberately rough (within a small factor of the SimPy events a run
really takes): about ``EVENTS_PER_JOB`` events per published job (measured: 22 to 36 on the
bundled scenarios), plus every periodic actor's ticks over the horizon, plus the heartbeats
of each job's hold. Raise ``run.max_events`` to run an expensive scenario anyway.
"""

from __future__ import annotations

from acksim.scenario import Scenario, ScenarioError
from acksim.scenario.base import DAY

EVENTS_PER_JOB = 40
CALLS_PER_ATTEMPT = 5  # the reference's store calls and its commit


def estimate(scenario: Scenario) -> list[tuple[float, str]]:
    """The estimated SimPy events of a run of ``scenario``, as ``(events, why)`` terms, the
    largest first; ``why`` names the scenario field behind the term and its value."""
    sc = scenario
    q, w, st, run = sc.queue, sc.workers, sc.stores, sc.run
    horizon = min(run.max_time_s, _last_planned(sc) + 2 * DAY)
    terms: list[tuple[float, str]] = []
    if sc.fanout.updates:
        tasks = sc.fanout.updates * sc.fanout.subscribers
        terms.append((tasks * EVENTS_PER_JOB, f"fanout.updates x fanout.subscribers = {sc.fanout.updates} x "
                                              f"{sc.fanout.subscribers} delivery tasks"))
        terms.append((horizon / sc.fanout.join_interval_s, f"fanout.join_interval_s = {sc.fanout.join_interval_s:g}"))
        jobs = tasks
    else:
        accounts = len(sc.plan.accounts) or sc.workload.accounts
        jobs = accounts * sc.scheduler.instances
        terms.append((jobs * EVENTS_PER_JOB, f"workload.accounts x scheduler.instances = {accounts} x "
                                             f"{sc.scheduler.instances} jobs"))
        terms.append((horizon / sc.mail.poll_interval_s, f"mail.poll_interval_s = {sc.mail.poll_interval_s:g}"))
        if sc.scheduler.mode == "cron":
            terms.append((sc.scheduler.instances * horizon / sc.scheduler.cron_interval_s,
                          f"scheduler.cron_interval_s = {sc.scheduler.cron_interval_s:g}"))
        stalls = len(sc.faults.scheduler_stalls)
        if stalls:
            terms.append((stalls * stalls, f"faults.scheduler_stalls ({stalls} windows)"))
    hold = w.service_time_mean_s + CALLS_PER_ATTEMPT * st.latency_mean_s + q.ack_latency_s
    if q.heartbeat_interval_s:
        terms.append((jobs * hold / q.heartbeat_interval_s,
                      f"queue.heartbeat_interval_s = {q.heartbeat_interval_s:g} (a heartbeat per interval of each "
                      f"job's ~{hold:.3g} s hold)"))
    if q.sweep_interval_s:
        terms.append((horizon / q.sweep_interval_s, f"queue.sweep_interval_s = {q.sweep_interval_s:g}"))
    terms.append((horizon / run.idle_check_s, f"run.idle_check_s = {run.idle_check_s:g}"))
    return sorted(terms, key=lambda t: -t[0])


def refuse_if_too_costly(scenario: Scenario) -> None:
    """Raise ``ScenarioError`` (one line) when a run of ``scenario`` cannot do anything (it
    ends before the first deadline) or its estimated SimPy events exceed ``run.max_events``."""
    sc = scenario
    if not sc.fanout.updates and not sc.plan.accounts and sc.run.max_time_s < sc.workload.deadline_start_s:
        raise ScenarioError(f"run.max_time_s: {sc.run.max_time_s:g} s ends before the first deadline "
                            f"(workload.deadline_start_s = {sc.workload.deadline_start_s:g}): nothing would run")
    terms = estimate(sc)
    total = sum(events for events, _why in terms)
    if total > sc.run.max_events:
        raise ScenarioError(f"run.max_events: the scenario would take about {total:.2g} SimPy events, over "
                            f"run.max_events = {sc.run.max_events}; most of it from {terms[0][1]}; raise "
                            f"run.max_events to run it anyway")


def _last_planned(sc: Scenario) -> float:
    """The last planned instant (virtual seconds): the last deadline or lifecycle step, the
    last update of a fan-out, the last fault."""
    if sc.fanout.updates:
        last = sc.fanout.start_s + sc.fanout.updates * sc.fanout.update_interval_s
    elif sc.plan.accounts:
        last = max([a.deadline_s for a in sc.plan.accounts] + [s.at_s for s in sc.plan.steps])
    elif sc.workload.arrivals == "stages":
        last = sc.workload.stages_end_s + sc.workload.term_s
    elif sc.workload.arrivals == "poisson":
        last = sc.workload.deadline_start_s + sc.workload.accounts / sc.workload.arrival_rate_per_s
    else:
        last = sc.workload.deadline_start_s + sc.workload.deadline_window_s + sc.workload.term_s
    faults = sc.faults
    return max([last, *(d.at_s for d in faults.deployments), *(k.at_s + k.down_s for k in faults.kills),
                *(hi for _lo, hi in faults.scheduler_stalls), *sc.queue.redrive_at_s])
