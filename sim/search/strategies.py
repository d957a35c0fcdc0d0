"""Hypothesis strategies for ``acksim check``: small workloads and fault schedules.

A drawn example is a whole scenario: up to ~30 accounts with deadlines that share instants,
lifecycle steps that land before, at and during processing of the account's job, and a fault
schedule (crashes at a delivery and phase, spurious duplicates, latency spikes that make
processing outlive the visibility timeout, rolling deployments, mail provider outages,
scheduler pauses, process pauses, partitions, broker restarts, execution time limits, prefetch), with queue parameters drawn around the base scenario's.

Choices are ordered so that Hypothesis's shrinking is semantic: fewer accounts, steps and
faults; crash phases toward the commit (``after_commit`` first) and crash calls toward the
writes; step offsets toward the instant the job is being processed; the base scenario's
queue parameters first. Crashes and duplicates address a delivery by its number over the
run, so removing an account can move a fault to another job: shrinking keeps the failure,
not always the same job.
"""

from __future__ import annotations

from hypothesis import strategies as st

from acksim.scenario import Scenario

# where a lifecycle step lands relative to the account's deadline (s): first the instants a
# job is in flight (store calls take about a millisecond each), then around, then well before
STEP_OFFSETS_S = (0.002, 0.0, 0.001, 0.003, 0.005, 0.01, -1.0, 1.0, -60.0, 30.0, 120.0, 600.0)
CRASH_PHASES = ("after_commit", "during_ack", "before_call", "after_call")
# the reference's calls: get, was_applied, apply_once, add_once; the writes first, so a crash
# shrinks toward the write (and the commit after it)
CRASH_CALLS = (2, 3, 1, 0, 4)
STEP_KINDS = ("renew", "extend", "delete", "resubscribe")


def account_plans(max_accounts: int = 30):
    """Strategy: ``(accounts, steps)`` of a ``[plan]`` table: accounts ``a1..aN`` with
    deadlines on a 10 s grid (so jobs collide), lifecycle steps near those deadlines."""
    return st.integers(1, max_accounts).flatmap(_plan_for)


def _plan_for(n: int):
    ids = [f"a{i}" for i in range(1, n + 1)]
    deadlines = st.lists(st.integers(1, 30).map(lambda k: k * 10.0), min_size=n, max_size=n)

    def with_steps(ds):
        step = st.builds(
            lambda i, kind, off, amount: {"at_s": max(ds[i] + off, 0.0), "kind": kind,
                                          "account_id": ids[i], "amount_s": amount if kind == "extend" else 0.0},
            st.integers(0, n - 1), st.sampled_from(STEP_KINDS), st.sampled_from(STEP_OFFSETS_S),
            st.sampled_from((60.0, 600.0, 3600.0)))
        accounts = [{"account_id": a, "deadline_s": d} for a, d in zip(ids, ds)]
        return st.lists(step, max_size=2 * n).map(lambda steps: (accounts, steps))

    return deadlines.flatmap(with_steps)


def fault_schedules(n_deliveries: int, instants: list[float], cron: bool):
    """Strategy: the ``[faults]``, mail outages and scheduler pauses of one example, as
    scenario tables (dicts). ``instants`` are times worth aiming at (the deadlines)."""
    at = st.sampled_from(instants)
    crash = st.builds(lambda d, p, c: {"delivery": d, "phase": p, "call": c},
                      st.integers(1, n_deliveries), st.sampled_from(CRASH_PHASES), st.sampled_from(CRASH_CALLS))
    spike = st.builds(lambda a, d, f: {"at_s": a, "duration_s": d, "factor": f},
                      at, st.sampled_from((10.0, 100.0)), st.sampled_from((10_000.0, 100.0)))
    deployment = st.builds(lambda a, d: {"at_s": a, "worker_down_s": d}, at, st.sampled_from((1.0, 10.0)))
    outage = st.builds(lambda a, d, e: {"start_s": a, "end_s": a + d, "error": e},
                       at, st.sampled_from((10.0, 100.0)), st.sampled_from(("transient", "permanent")))
    pause = st.builds(lambda a, d: (a, a + d), at, st.sampled_from((60.0, 600.0)))
    return st.fixed_dictionaries({
        "crashes": st.lists(crash, max_size=4),
        "duplicates": st.lists(st.integers(1, n_deliveries).map(lambda d: {"delivery": d}), max_size=3),
        "latency_spikes": st.lists(spike, max_size=1),
        "deployments": st.lists(deployment, max_size=1),
        "outages": st.lists(outage, max_size=1),
        "paused": st.lists(pause, max_size=1) if cron else st.just([]),
        "pauses": pauses(n_deliveries, instants),
        "partitions": partitions(instants),
        "broker_restarts": broker_restarts(instants),
        "queue": st.fixed_dictionaries({"on_broker_restart": restart_recoveries(), "prefetch": prefetches()}),
        "workers": st.fixed_dictionaries({"execution_timeout_s": execution_timeouts()}),
    })


# a pause or partition starts this long after a deadline: inside the attempt of its job
# (store calls about 1 ms each), or just before it
LINK_OFFSETS_S = (0.0015, 0.0, 0.0035, -0.5)


def pauses(n_deliveries: int, instants: list[float]):
    """Strategy: ``[[faults.pauses]]`` entries: the holder of a delivery frozen before one of
    its store calls (the writes first), or worker 1-3 frozen at a drawn instant, for longer
    than the drawn visibility timeouts first (so the lease moves on) or shorter."""
    durations = st.sampled_from((30.0, 2.0, 10.0))
    at_call = st.builds(lambda d, c, s: {"delivery": d, "call": c, "duration_s": s},
                        st.integers(1, n_deliveries), st.sampled_from(CRASH_CALLS), durations)
    at_time = st.builds(lambda w, a, o, s: {"worker": w, "at_s": max(a + o, 0.0), "duration_s": s},
                        st.integers(1, 3), st.sampled_from(instants), st.sampled_from(LINK_OFFSETS_S), durations)
    return st.lists(st.one_of(at_call, at_time), max_size=1)


def partitions(instants: list[float]):
    """Strategy: ``[[faults.partitions]]`` entries: worker 1-3 cut off from the queue (first)
    or its database around a drawn instant."""
    return st.lists(st.builds(
        lambda w, b, a, o, s: {"worker": w, "between": b, "at_s": max(a + o, 0.0), "duration_s": s},
        st.integers(1, 3), st.sampled_from(("queue", "db")), st.sampled_from(instants),
        st.sampled_from(LINK_OFFSETS_S), st.sampled_from((10.0, 30.0))), max_size=1)


def broker_restarts(instants: list[float]):
    """Strategy: ``[[faults.broker_restarts]]`` entries just after a drawn instant (an attempt
    under way), down 10 s or 1 s. Losses of a broker without persistence are not drawn: they
    lose work whatever the design does."""
    return st.lists(st.builds(lambda a, o, d: {"at_s": max(a + o, 0.0), "down_s": d},
                              st.sampled_from(instants), st.sampled_from((0.003, 0.0015, 0.0)),
                              st.sampled_from((10.0, 1.0))), max_size=1)


def restart_recoveries():
    """Strategy: ``queue.on_broker_restart``, "lease" first, or "requeue" (RabbitMQ)."""
    return st.sampled_from(("lease", "requeue"))


def prefetches():
    """Strategy: ``queue.prefetch``: one delivery at a time first, or a batch of 3 that waits
    in the worker under its leases."""
    return st.sampled_from((1, 3))


def execution_timeouts():
    """Strategy: ``workers.execution_timeout_s``: none first, or limits an attempt of a few
    store calls (about 5 ms) overruns, or a pause or spike makes it overrun."""
    return st.sampled_from((0.0, 0.003, 1.0))


def check_scenarios(base: Scenario, max_accounts: int = 30):
    """Strategy: validated ``Scenario`` objects around ``base`` (its stores, workers, queue and
    mail settings, the design under check) with a drawn plan, fault schedule, queue
    parameters, worker count, scheduler mode and seed."""
    return account_plans(max_accounts).flatmap(lambda plan: _around(base, plan))


def _around(base: Scenario, plan):
    accounts, steps = plan
    instants = sorted({a["deadline_s"] for a in accounts})
    vt, mrc = base.queue.visibility_timeout_s, base.queue.max_receive_count
    n_deliveries = 3 * len(accounts) + 3

    def build(mode, faults, queue, workers, seed):
        data = base.model_dump(exclude_none=True)
        data.update(seed=seed, plan={"accounts": accounts, "steps": steps})
        data["scheduler"].update(mode=mode, paused=faults.pop("paused"))
        data["mail"]["outages"] = faults.pop("outages")
        data["queue"].update(faults.pop("queue"))  # drawn with the faults (restart recovery)
        data["workers"].update(faults.pop("workers"))  # (execution time limit)
        for entry in (*faults["pauses"], *faults["partitions"]):  # a drawn worker that exists
            if "worker" in entry:
                entry["worker"] = min(entry["worker"], workers)
        data["faults"].update(faults)
        data["queue"].update(queue)
        data["workers"]["count"] = workers
        data.pop("expect", None)
        return Scenario.model_validate(data)

    queue = st.fixed_dictionaries({
        "visibility_timeout_s": st.sampled_from((vt, vt / 4, vt * 4)),
        "max_receive_count": st.sampled_from((mrc, 2, 0)),
        "redrive_at_s": st.sampled_from(((), (instants[-1] + 300.0,))),
    })
    mode = st.sampled_from(("per_deadline", "cron"))
    return mode.flatmap(lambda m: st.builds(
        build, st.just(m), fault_schedules(n_deliveries, instants, m == "cron"), queue,
        st.integers(1, max(base.workers.count, 1) + 1), st.integers(0, 2**32 - 1)))
