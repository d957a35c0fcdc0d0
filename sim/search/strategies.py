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

Every strategy that depends on a drawn value (the number of accounts, of deliveries, of
distinct deadlines) is built once per value and kept (``functools.cache``), and the example
is assembled in one ``st.composite``: the choices are the ones the nested ``flatmap`` form
drew, in the same order, but no strategy is rebuilt (and validated again) on every draw.
A fault's instant is drawn as an index into the example's sorted deadlines and resolved
after the draw, so its strategy depends on how many deadlines there are, not on which.
"""

from __future__ import annotations

from functools import cache

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
EXTEND_AMOUNTS_S = (60.0, 600.0, 3600.0)
MODES = ("per_deadline", "cron")
SEEDS = st.integers(0, 2**32 - 1)


def account_plans(max_accounts: int = 30):
    """Strategy: ``(accounts, steps)`` of a ``[plan]`` table: accounts ``a1..aN`` with
    deadlines on a 10 s grid (so jobs collide), lifecycle steps near those deadlines."""
    return _account_plan(max_accounts)


@cache  # one strategy object per argument: a composite made anew is validated anew at every draw
@st.composite
def _account_plan(draw, max_accounts: int):
    n = draw(_account_counts(max_accounts))
    ds = draw(_deadlines(n))
    ids = [f"a{i}" for i in range(1, n + 1)]
    steps = [{"at_s": max(ds[i] + off, 0.0), "kind": kind, "account_id": ids[i],
              "amount_s": amount if kind == "extend" else 0.0}
             for i, kind, off, amount in draw(_steps(n))]
    return [{"account_id": a, "deadline_s": d} for a, d in zip(ids, ds)], steps


@cache
def _account_counts(max_accounts: int):
    return st.integers(1, max_accounts)


@cache
def _deadlines(n: int):
    """``n`` deadlines (s) on a 10 s grid, 10 .. 300."""
    return st.lists(st.integers(1, 30).map(lambda k: k * 10.0), min_size=n, max_size=n)


@cache
def _steps(n: int):
    """Up to ``2n`` lifecycle steps as (account index, kind, offset from its deadline s,
    extension s)."""
    return st.lists(st.tuples(st.integers(0, n - 1), st.sampled_from(STEP_KINDS), st.sampled_from(STEP_OFFSETS_S),
                              st.sampled_from(EXTEND_AMOUNTS_S)), max_size=2 * n)


def fault_schedules(n_deliveries: int, instants: list[float], cron: bool, restart: str = "lease",
                    time_limit_s: float = 0.0):
    """Strategy: the ``[faults]``, mail outages and scheduler pauses of one example, as
    scenario tables (dicts). ``instants`` are times worth aiming at (the deadlines);
    ``restart`` and ``time_limit_s`` are the base's ``queue.on_broker_restart`` and
    ``workers.execution_timeout_s`` (s), drawn first."""
    instants = list(instants)
    return _fault_tables(n_deliveries, len(instants), cron, restart, time_limit_s).map(
        lambda tables: _at_instants(tables, instants))


@cache
@st.composite
def _fault_tables(draw, n_deliveries: int, n_instants: int, cron: bool, restart: str, time_limit_s: float):
    """``fault_schedules`` with every instant an index into the sorted instants (see
    ``_at_instants``): each table drawn in turn from a strategy built once per number of
    deliveries or of instants."""
    return {"crashes": draw(_crash_lists(n_deliveries)), "duplicates": draw(_duplicate_lists(n_deliveries)),
            "latency_spikes": draw(_spike_lists(n_instants)), "deployments": draw(_deployment_lists(n_instants)),
            "outages": draw(_outage_lists(n_instants)), "paused": draw(_pause_lists(n_instants)) if cron else [],
            "pauses": draw(_process_pause_lists(n_deliveries, n_instants)),
            "partitions": draw(_partition_lists(n_instants)),
            "broker_restarts": draw(_broker_restart_lists(n_instants)),
            "queue": {"on_broker_restart": draw(_base_first(restart, RESTART_RECOVERIES))},
            "workers": {"execution_timeout_s": draw(_base_first(time_limit_s, EXECUTION_TIMEOUTS))}}


@cache
def _crash_lists(n_deliveries: int):
    return st.lists(st.builds(lambda d, p, c: {"delivery": d, "phase": p, "call": c}, st.integers(1, n_deliveries),
                              st.sampled_from(CRASH_PHASES), st.sampled_from(CRASH_CALLS)), max_size=4)


@cache
def _duplicate_lists(n_deliveries: int):
    return st.lists(st.integers(1, n_deliveries).map(lambda d: {"delivery": d}), max_size=3)


@cache
def _instants(n_instants: int):
    return st.sampled_from(range(n_instants))


@cache
def _spike_lists(n_instants: int):
    return st.lists(st.builds(lambda a, d, f: {"at_s": a, "duration_s": d, "factor": f}, _instants(n_instants),
                              st.sampled_from((10.0, 100.0)), st.sampled_from((10_000.0, 100.0))), max_size=1)


@cache
def _deployment_lists(n_instants: int):
    return st.lists(st.builds(lambda a, d: {"at_s": a, "worker_down_s": d}, _instants(n_instants),
                              st.sampled_from((1.0, 10.0))), max_size=1)


@cache
def _outage_lists(n_instants: int):
    """Outages as {start_s: instant index, end_s: length s, error}: ``_at_instants`` makes
    ``end_s`` the instant plus the length."""
    return st.lists(st.builds(lambda a, d, e: {"start_s": a, "end_s": d, "error": e}, _instants(n_instants),
                              st.sampled_from((10.0, 100.0)), st.sampled_from(("transient", "permanent"))),
                    max_size=1)


@cache
def _pause_lists(n_instants: int):
    return st.lists(st.builds(lambda a, d: (a, d), _instants(n_instants), st.sampled_from((60.0, 600.0))),
                    max_size=1)


def _at_instants(tables: dict, instants: list[float]) -> dict:
    """``_fault_tables``' draw with its instant indices replaced by ``instants`` (s): a
    spike or deployment at ``instants[i]``, an outage or pause from ``instants[i]`` for
    its drawn length."""
    return {
        **tables,
        "latency_spikes": [{**s, "at_s": instants[s["at_s"]]} for s in tables["latency_spikes"]],
        "deployments": [{**d, "at_s": instants[d["at_s"]]} for d in tables["deployments"]],
        "outages": [{**o, "start_s": instants[o["start_s"]], "end_s": instants[o["start_s"]] + o["end_s"]}
                    for o in tables["outages"]],
        "paused": [(instants[a], instants[a] + d) for a, d in tables["paused"]],
        "pauses": [_offset(p, instants) if "worker" in p else p for p in tables["pauses"]],
        "partitions": [_offset(p, instants) for p in tables["partitions"]],
        "broker_restarts": [_offset(b, instants) for b in tables["broker_restarts"]],
    }


def _offset(entry: dict, instants: list[float]) -> dict:
    """A drawn entry with ``at_s`` an instant index and ``offset_s`` from it (s): the entry
    at ``instants[at_s] + offset_s`` (not before 0), without ``offset_s``."""
    at = max(instants[entry["at_s"]] + entry["offset_s"], 0.0)
    return {**{k: v for k, v in entry.items() if k != "offset_s"}, "at_s": at}


# a pause or partition starts this long after a deadline: inside the attempt of its job
# (store calls about 1 ms each), or just before it
LINK_OFFSETS_S = (0.0015, 0.0, 0.0035, -0.5)
# the values drawn for three settings, each after the base's own (``_base_first``):
# ``queue.on_broker_restart``: "lease", or "requeue" (RabbitMQ); not "lost": a broker without
# persistence loses work whatever the design does
RESTART_RECOVERIES = ("lease", "requeue")
# ``queue.prefetch``: one delivery at a time, or a batch of 3 that waits in the worker under
# its leases
PREFETCHES = (1, 3)
# ``workers.execution_timeout_s``: the base scenario's first, then none or a limit that an
# attempt overruns only when a pause or a latency spike holds it (1 s: a hundred times a
# normal attempt of a few store calls). Never a limit an ordinary attempt of a correct but
# slower processor overruns: a finding must be about the design, not a setting nobody runs
# (a scenario that declares a limit has it drawn first)
EXECUTION_TIMEOUTS = (0.0, 1.0)


@cache
def _base_first(base_value, values: tuple):
    """Strategy: ``base_value`` (the base scenario's setting) first, then the other
    ``values``: shrinking goes back to the base's setting."""
    return st.sampled_from((base_value, *(v for v in values if v != base_value)))


@cache
def _process_pause_lists(n_deliveries: int, n_instants: int):
    """``[[faults.pauses]]`` entries: the holder of a delivery frozen before one of its store
    calls (the writes first), or worker 1-3 frozen at an instant (index, and ``offset_s``
    from it: see ``_at_instants``), for longer than the drawn visibility timeouts first (so
    the lease moves on) or shorter."""
    durations = st.sampled_from((30.0, 2.0, 10.0))
    at_call = st.builds(lambda d, c, s: {"delivery": d, "call": c, "duration_s": s},
                        st.integers(1, n_deliveries), st.sampled_from(CRASH_CALLS), durations)
    at_time = st.builds(lambda w, a, o, s: {"worker": w, "at_s": a, "offset_s": o, "duration_s": s},
                        st.integers(1, 3), _instants(n_instants), st.sampled_from(LINK_OFFSETS_S), durations)
    return st.lists(st.one_of(at_call, at_time), max_size=1)


@cache
def _partition_lists(n_instants: int):
    """``[[faults.partitions]]`` entries: worker 1-3 cut off from the queue (first) or its
    database around an instant (index and ``offset_s``)."""
    return st.lists(st.builds(
        lambda w, b, a, o, s: {"worker": w, "between": b, "at_s": a, "offset_s": o, "duration_s": s},
        st.integers(1, 3), st.sampled_from(("queue", "db")), _instants(n_instants),
        st.sampled_from(LINK_OFFSETS_S), st.sampled_from((10.0, 30.0))), max_size=1)


@cache
def _broker_restart_lists(n_instants: int):
    """``[[faults.broker_restarts]]`` entries just after an instant (index and ``offset_s``:
    an attempt under way), down 10 s or 1 s. Losses of a broker without persistence are not
    drawn: they lose work whatever the design does."""
    return st.lists(st.builds(lambda a, o, d: {"at_s": a, "offset_s": o, "down_s": d},
                              _instants(n_instants), st.sampled_from((0.003, 0.0015, 0.0)),
                              st.sampled_from((10.0, 1.0))), max_size=1)


def queue_mechanisms(base: Scenario, cron: bool):
    """Strategy: ``[queue]`` overrides for the queue mechanisms (ack by, recovery sweeps, tombstones), base's settings first
    (so shrinking drops them): ack by message id or by receipt; recovery of a dead
    consumer's deliveries only by a sweep at each process start (a claim queue without a
    claimer; the heartbeat expires in half the workers' restart delay, so every crash's
    orphans come back at its worker's restart, later than the lease of a quarter of it that
    a timer would have given); and, in a state-based cron run (which publishes a trimmed job
    again), a short stream whose trimmed pending entries come back as tombstones."""
    return _queue_mechanisms(base.queue.ack_by, base.workers.restart_delay_s,
                             cron and base.scheduler.cron_selection == "due")


@cache
def _queue_mechanisms(ack_by: str, restart_s: float, tombstones_apply: bool):
    ack = st.sampled_from((ack_by, "message_id" if ack_by == "receipt" else "receipt"))
    recovery = st.sampled_from(({}, {"redelivery": "claim", "sweep_interval_s": 0.0, "recovery_sweep": "process_start",
                                     "recovery_interval_s": 0.0, "heartbeat_ttl_s": restart_s / 2,
                                     # the lease a timer-based queue would have given (no timer here)
                                     "visibility_timeout_s": max(restart_s / 4, 0.001)}))
    tombstones = st.just({})
    if tombstones_apply:
        tombstones = st.sampled_from(({}, {"tombstones": True, "max_length": 3}, {"tombstones": True, "max_length": 8}))
    return st.builds(lambda a, r, t: {"ack_by": a, **r, **t}, ack, recovery, tombstones)


def scheduler_ordering(base: Scenario):
    """Strategy: ``[scheduler]`` overrides for its two steps (publish, record), base's first:
    the order, and a crash between them in a third of the publishes (publish then record:
    the job published again; record then publish: left to the sweeper)."""
    return _scheduler_ordering(base.scheduler.order, base.scheduler.publish_crash_probability)


@cache
def _scheduler_ordering(order: str, crash_probability: float):
    orders = st.sampled_from((order, "record_then_publish" if order == "publish_then_record"
                              else "publish_then_record"))
    crash = st.sampled_from((crash_probability, 0.3))
    return st.builds(lambda o, p: {"order": o, "publish_crash_probability": p}, orders, crash)


def check_scenarios(base: Scenario, max_accounts: int = 30):
    """Strategy: validated ``Scenario`` objects around ``base`` (its stores, workers, queue and
    mail settings, the design under check) with a drawn plan, fault schedule, queue
    parameters, worker count, scheduler mode and seed."""
    return _check_scenario(base, max_accounts)


@st.composite
def _check_scenario(draw, base: Scenario, max_accounts: int):
    accounts, steps = draw(_account_plan(max_accounts))
    instants = sorted({a["deadline_s"] for a in accounts})
    mode = draw(_MODE)
    faults = _at_instants(draw(_fault_tables(3 * len(accounts) + 3, len(instants), mode == "cron",
                                             base.queue.on_broker_restart, base.workers.execution_timeout_s)),
                          instants)
    queue = dict(draw(_queue_tables(base.queue.visibility_timeout_s, base.queue.max_receive_count)))
    queue["redrive_at_s"] = (instants[-1] + 300.0,) if queue["redrive_at_s"] else ()
    queue.update(draw(queue_mechanisms(base, mode == "cron")))
    workers = draw(_worker_counts(max(base.workers.count, 1) + 1))
    seed = draw(SEEDS)
    scheduler = draw(scheduler_ordering(base))
    faults["queue"]["prefetch"] = draw(_base_first(base.queue.prefetch, PREFETCHES))  # drawn last
    data = base.model_dump(exclude_none=True)
    data.update(seed=seed, plan={"accounts": accounts, "steps": steps})
    data["scheduler"].update(mode=mode, paused=faults.pop("paused"), **scheduler)
    data["mail"]["outages"] = faults.pop("outages")
    data["queue"].update(faults.pop("queue"))  # drawn with the faults (restart recovery)
    data["workers"].update(faults.pop("workers"))  # (execution time limit)
    for entry in (*faults["pauses"], *faults["partitions"]):  # a drawn worker that exists
        if "worker" in entry:
            entry["worker"] = min(entry["worker"], workers)
    if queue.get("recovery_sweep", "none") != "none":  # no claimer: a live worker's lost ack or nack stays
        faults["broker_restarts"] = []               # pending for good, whatever the design does
        faults["partitions"] = [p for p in faults["partitions"] if p["between"] != "queue"]
    data["faults"].update(faults)
    data["queue"].update(queue)
    data["workers"]["count"] = workers
    data.pop("expect", None)
    return Scenario.model_validate(data)


_MODE = st.sampled_from(MODES)


@cache
def _queue_tables(vt: float, mrc: int):
    """The drawn queue parameters around the base's visibility timeout ``vt`` (s) and max
    receive count ``mrc``; ``redrive_at_s`` is drawn as 0 (none) or 1 (an operator redrive
    300 s after the last deadline)."""
    return st.fixed_dictionaries({
        "visibility_timeout_s": st.sampled_from((vt, vt / 4, vt * 4)),
        "max_receive_count": st.sampled_from((mrc, 2, 0)),
        "redrive_at_s": st.sampled_from((0, 1)),
    })


@cache
def _worker_counts(most: int):
    return st.integers(1, most)
