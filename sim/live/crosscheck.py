"""``acksim crosscheck``: the same schedules in the simulation and live, verdict by verdict.

Each row is one schedule: a scenario given on the command line, or one drawn from
``acksim.search.strategies.check_scenarios`` around the check base with a candidate design
(cycling through ``CANDIDATE_CYCLE``; ``pick`` keeps about a third that violate an invariant in
the simulation). What the live mode cannot run is taken out of every schedule first, for both
sides (``livable``): cron scheduling, kills, spurious duplicates, latency spikes, pauses,
redrives, poison accounts, and (for now) process pauses (``acksim live`` runs a worker's pause
and a broker restart for real, but the agreement was measured without them), partitions, broker
restarts, time limits, prefetch, ack by id, recovery sweeps, tombstones and record-then-publish;
extensions are cut to ``EXTENSION_CAP_S`` (``compact``). Then both
sides get the broker's own queue (``for_broker``): the simulation's model of that broker's
redelivery (``BROKER_QUEUE``: a claim for Redis, requeue on consumer death for RabbitMQ, the
visibility timeout for SQS), the live harness's measured latencies, a visibility timeout of at
least ``MIN_VISIBILITY_WALL_S`` on the wall clock, and lifecycle steps kept
``RACE_GAP_WALL_S`` away from their account's deadline (a closer race is below the live
harness's timing resolution). Both sides are judged by ``acksim.judges.invariants.check_all``;
a row agrees when every invariant has the same verdict in both. The timing-dependent figures
(deliveries, redeliveries, receive-count distribution, dead-lettered, recovery time) are shown
side by side and compared with ``COUNT_TOLERANCE`` / ``RECOVERY_TOLERANCE_REL``; they do not
count toward agreement. One broker serves every row (``run_rows``), each row on queues of its
own, one row at a time. The report (``crosscheck.md``, ``crosscheck.json``) has a row per
schedule, the agreement rates (schedules, verdicts), the figures, and for each disagreement
both timelines (``<row>-sim.csv``, ``<row>-live.csv``; the records of the example's account side
by side in the page).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from acksim.history import COLUMNS, Record
from acksim.judges.invariants import INVARIANTS, check_all
from acksim.scenario import Scenario, parse

CANDIDATE_CYCLE = ("reference", "naive", "no-renewed-check", "reference", "no-version-check", "autocommit",
                   "ack-before-processing")
VIOLATING_SHARE = 1 / 3  # of the drawn schedules, this share violates an invariant in the simulation
TARGET_WALL_S = 10.0  # a drawn schedule's planned span is scaled to about this many wall seconds
MIN_SCALE, MAX_SCALE = 0.005, 0.05
EXTENSION_CAP_S = 600.0  # a drawn extension longer than this (check draws up to 3600 s) is cut to it
# the shortest visibility timeout (min idle of a claim) on the wall clock: a worker descheduled
# for less than this on a loaded machine must not lose its delivery to another one. Measured on
# this 2-core machine shared with other test runs (live-smoke, Dec 2026): a delivery's commit to
# its ack took 1 ms (redis) / 20 ms (sqs) at the median but up to 1.3 s (redis) and 4 s (sqs)
# in the tail. SQS's is whole seconds (moto, like SQS, takes an integer).
MIN_VISIBILITY_WALL_S = {"redis": 2.0, "rabbitmq": 2.0, "sqs": 2.0}
# the live harness's own latencies, median wall seconds, measured the same way (events.csv of
# live-smoke: published -> first delivered, one store call, commit -> acked). The simulation of a
# crosschecked schedule takes these (divided by the time scale) as its publish, store and ack
# latencies, so a lifecycle step drawn a few milliseconds after a deadline lands at the same
# point of the job in both worlds. SQS's receive is a poll every 0.1 s over HTTP.
LIVE_LATENCY_WALL_S = {"redis": {"publish": 0.0024, "store_call": 0.0001, "ack": 0.001},
                       "rabbitmq": {"publish": 0.002, "store_call": 0.0001, "ack": 0.001},
                       "sqs": {"publish": 0.077, "store_call": 0.0001, "ack": 0.02}}
RECEIVE_POLL_WALL_S = 0.1  # a live worker's receive blocks this long (acksim.live.worker), then claims again
# the simulation's model of each broker's redelivery, as the live transport uses it
# (acksim.live.transports): the queue table each side of a drawn schedule runs with
BROKER_QUEUE = {
    # XAUTOCLAIM by every worker at each receive: a lapsed entry waits for the next claim
    "redis": {"redelivery": "claim", "nack_backoff_base_s": 0.0, "nack_backoff_max_s": 0.0},
    # a SIGKILLed consumer's TCP connection closes at once: requeued at the head; the ack
    # timeout (consumer_timeout, 30 wall minutes) is never reached; a nack requeues at once
    "rabbitmq": {"redelivery": "consumer_death", "disconnect_detect_s": 0.0, "visibility_timeout_s": 43_200.0,
                 "max_lease_s": 43_200.0, "sweep_interval_s": 60.0, "nack_backoff_base_s": 0.0,
                 "nack_backoff_max_s": 0.0, "requeue_at_head": True},
    # visibility timeout; a nack is ChangeMessageVisibility to the backoff in whole wall seconds
    # (0 at these scales)
    "sqs": {"redelivery": "visibility_timeout", "nack_backoff_base_s": 0.0, "nack_backoff_max_s": 0.0},
}
# a lifecycle step drawn closer than this (wall s) to its account's deadline is moved to this
# far before (drawn at or before the deadline) or after it, and a rolling deployment takes its
# workers down at least this far apart (check draws 1 s: 10 wall ms at 0.01): the live harness's own jitter (the
# parent's 10 ms tick, publish to receive 2 ms (redis) to 77 ms (sqs, a 0.1 s poll) at the median
# and seconds in the tail on a loaded machine) makes a closer race a coin toss live. Races inside
# a job's few milliseconds stay `acksim check`'s, in virtual time.
RACE_GAP_WALL_S = {"redis": 0.25, "rabbitmq": 0.25, "sqs": 0.5}
# timing-dependent figures agree when |live - sim| <= max(absolute, relative * sim)
COUNT_TOLERANCE = (2.0, 0.25)  # deliveries, redeliveries, dead-lettered
RECOVERY_TOLERANCE_REL = 0.5  # recovery times: plus the visibility timeout and restart delay (absolute)


# the settings ``check`` draws that the live harness does not run yet, by scenario section
NOT_LIVE_YET = {"queue": ("prefetch", "on_broker_restart", "ack_by", "recovery_sweep", "tombstones", "delivery_limit"),
                "workers": ("execution_timeout_s",), "scheduler": ("order",)}


def livable(scenario: Scenario, design: dict | None = None) -> Scenario:
    """``scenario`` with ``design`` (section -> {key: value}) applied and what the live mode
    cannot run removed (see the module docstring); stores on SQLite, processor errors do not
    end the run. Raises ``ScenarioError`` for an impossible design."""
    data = scenario.model_dump(exclude_none=True)
    for section, values in (design or {}).items():
        data.setdefault(section, {}).update(values)
    data["stores"]["backend"] = "sqlite"
    data["scheduler"].update(mode="per_deadline", paused=[], instances=1, publish_crash_probability=0.0)
    data["faults"].update(kills=[], duplicates=[], latency_spikes=[], poison_accounts=[], scheduler_stalls=[],
                          pauses=[], partitions=[], broker_restarts=[])
    data["queue"].update(redrive_at_s=[], duplicate_probability=0.0)
    for section, keys in NOT_LIVE_YET.items():  # drawn by check, not run live yet: their defaults
        model = type(getattr(scenario, section))
        data[section].update({k: model.model_fields[k].default for k in keys})
    data["run"]["stop_on_processor_error"] = False
    data.pop("expect", None)
    return parse(data, "crosscheck")


def compact(scenario: Scenario) -> Scenario:
    """A drawn schedule made small enough to play live: extensions cut to ``EXTENSION_CAP_S``
    (the same schedule otherwise)."""
    data = scenario.model_dump(exclude_none=True)
    for step in data.get("plan", {}).get("steps", []):
        step["amount_s"] = min(step.get("amount_s", 0.0), EXTENSION_CAP_S)
    return parse(data, "crosscheck")


def for_broker(scenario: Scenario, broker: str, scale: float) -> Scenario:
    """``scenario`` with the simulation's model of ``broker``'s redelivery (``BROKER_QUEUE``),
    the live harness's latencies (``LIVE_LATENCY_WALL_S``), jobs published at their deadlines
    (no broker delay, as the live parent does), lifecycle steps at least ``RACE_GAP_WALL_S``
    from their account's deadline and a rolling deployment's workers as far apart, and a
    visibility timeout of at least ``MIN_VISIBILITY_WALL_S[broker]`` wall seconds at time
    scale ``scale`` (whole wall seconds for SQS), so both sides run the same queue. Virtual s."""
    import math

    data = scenario.model_dump(exclude_none=True)
    q = data["queue"]
    wall = max(MIN_VISIBILITY_WALL_S[broker], q["visibility_timeout_s"] * scale)
    if broker == "sqs":
        wall = float(math.ceil(wall - 1e-9))
    q["visibility_timeout_s"] = wall / scale
    q.update(BROKER_QUEUE[broker])
    q["max_delay_s"] = 0.0  # the live parent holds each job until its deadline, then publishes it
    gap = RACE_GAP_WALL_S[broker] / scale
    deadline = {a["account_id"]: a["deadline_s"] for a in data.get("plan", {}).get("accounts", [])}
    for step in data.get("plan", {}).get("steps", []):
        d = deadline.get(step["account_id"])
        if d is not None and abs(step["at_s"] - d) < gap:
            step["at_s"] = max(0.0, d - gap) if step["at_s"] <= d else d + gap
    for dep in data["faults"].get("deployments", []):  # one worker down after the other: as far apart
        dep["worker_down_s"] = max(dep["worker_down_s"], gap)
    lat = LIVE_LATENCY_WALL_S[broker]
    q["ack_latency_s"] = lat["ack"] / scale
    data["scheduler"]["publish_latency_s"] = lat["publish"] / scale
    data["stores"].update(latency_mean_s=lat["store_call"] / scale, latency_distribution="exponential")
    if broker == "redis":
        q["sweep_interval_s"] = RECEIVE_POLL_WALL_S / scale
    q["max_lease_s"] = max(q.get("max_lease_s", 0.0), q["visibility_timeout_s"])
    return parse(data, "crosscheck")


def draw(n: int, seed: int) -> list[tuple[str, Scenario]]:
    """``n`` schedules ``(candidate name, scenario)`` drawn from ``check_scenarios`` with the
    Hypothesis seed ``seed`` (the same ``n`` and ``seed`` give the same schedules)."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hseed

    from acksim.model.candidates import CANDIDATES
    from acksim.search.check import base_scenario
    from acksim.search.strategies import check_scenarios

    got: list[Scenario] = []

    @hseed(seed)
    @settings(max_examples=n, database=None, phases=[Phase.generate], deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(check_scenarios(base_scenario(None), max_accounts=12))
    def collect(sc):
        if len(got) < n:
            got.append(sc)

    collect()
    out = []
    for i, sc in enumerate(got):
        name = CANDIDATE_CYCLE[i % len(CANDIDATE_CYCLE)]
        out.append((name, compact(livable(sc, CANDIDATES[name].design))))
    return out


def pick(n: int, seed: int, broker: str | None = None,
         time_scale: float | None = None) -> list[tuple[str, Scenario, bool]]:
    """``n`` drawn schedules ``(candidate, scenario, violates in the simulation)``, about
    ``VIOLATING_SHARE`` of them violating: up to ``8 n`` are drawn (``draw``), fitted to
    ``broker`` (``for_broker`` at ``time_scale`` or ``fit_scale``'s) and simulated, and the first
    ones of each kind kept, in draw order (fewer violating ones if the draws had fewer)."""
    from acksim.model.candidates import CANDIDATES
    from acksim.world.core import simulate

    want_bad = round(n * VIOLATING_SHARE)
    bad, good = [], []
    for i, (name, sc) in enumerate(draw(8 * n, seed)):
        if broker is not None:
            sc = for_broker(sc, broker, fit_scale(sc) if time_scale is None else time_scale)
        found = check_all(*_outcome(simulate(sc, CANDIDATES[name].processor)))
        violates = not all(v["holds"] for v in found.values())
        (bad if violates else good).append((i, name, sc, violates))
        if len(bad) >= want_bad and len(good) >= n - want_bad:
            break
    chosen = bad[:want_bad] + good[:n - len(bad[:want_bad])]
    return [(name, sc, v) for _i, name, sc, v in sorted(chosen, key=lambda t: t[0])]


def _outcome(o):
    return o.history, o.final


def fit_scale(scenario: Scenario) -> float:
    """A time scale that plays the scenario's planned span in about ``TARGET_WALL_S`` wall
    seconds, within [``MIN_SCALE``, ``MAX_SCALE``]."""
    return max(MIN_SCALE, min(MAX_SCALE, TARGET_WALL_S / max(span_s(scenario), 1.0)))


def span_s(scenario: Scenario) -> float:
    """The planned span of a schedule, virtual s: its last deadline or step (with the extension)
    plus a term and a roll-over (what a renewal or roll-over arms past the plan)."""
    if scenario.plan.accounts:
        ends = [a.deadline_s for a in scenario.plan.accounts] + [s.at_s + s.amount_s for s in scenario.plan.steps]
    else:
        ends = [scenario.workload.deadline_start_s + scenario.workload.deadline_window_s]
    return max(ends) + scenario.workload.term_s + scenario.workload.rollover_delay_s


def wall_bound_s(scenario: Scenario, scale: float) -> float:
    """The live wall bound of a crosschecked schedule: its span scaled, times 1.5, plus a
    visibility timeout per planned crash and 20 s (wall s)."""
    crashes = len(scenario.faults.crashes) + len(scenario.faults.deployments) * scenario.workers.count
    return span_s(scenario) * scale * 1.5 + crashes * scenario.queue.visibility_timeout_s * scale + 20.0


def figures(scenario: Scenario, outcome) -> dict:
    """The timing-dependent figures of one side: deliveries, redeliveries (deliveries with
    receive count > 1), dead-lettered, crashes, the receive-count distribution
    ({count: deliveries}) and recovery time p50 / max (virtual s; None without a failure)."""
    from collections import Counter

    from acksim.judges.slo import figures as slo_figures

    h = outcome.history
    delivered = [r for r in h if r.kind == "delivered"]
    dist = Counter(r.receive_count or 1 for r in delivered)
    slo = slo_figures(h)
    return {"deliveries": len(delivered), "redeliveries": sum(1 for r in delivered if (r.receive_count or 1) > 1),
            "dead_lettered": len({r.message_id for r in h if r.kind == "dead_lettered"}),
            "crashes": sum(1 for r in h if r.kind == "crashed"),
            "receive_counts": {int(k): v for k, v in sorted(dist.items())},
            "recovery_p50_s": slo.get("recovery_time_p50_s"), "recovery_max_s": slo.get("recovery_time_max_s")}


def within(sim: float | None, live: float | None, absolute: float, relative: float) -> bool:
    """Whether ``live`` is within ``max(absolute, relative * |sim|)`` of ``sim`` (both None: yes)."""
    if sim is None or live is None:
        return sim is None and live is None
    return abs(live - sim) <= max(absolute, relative * abs(sim))


@dataclass
class Row:
    """One schedule's verdicts: ``sim`` and ``live`` map invariant name -> verdict (``holds``,
    ``violations``, ``example``); ``sim_figures`` / ``live_figures`` are each side's ``figures``;
    ``slack_s`` the absolute tolerance of recovery times (visibility timeout + restart delay,
    virtual s)."""

    label: str
    candidate: str
    processor: str
    scale: float
    sim: dict
    live: dict
    sim_history: tuple[Record, ...] = field(repr=False, default=())
    live_history: tuple[Record, ...] = field(repr=False, default=())
    examples: dict = field(default_factory=dict)
    live_info: dict = field(default_factory=dict)
    sim_figures: dict = field(default_factory=dict)
    live_figures: dict = field(default_factory=dict)
    slack_s: float = 0.0
    wall_s: float = 0.0

    @property
    def agrees(self) -> bool:
        return all(self.sim[n]["holds"] == self.live[n]["holds"] for n, _ in INVARIANTS)

    @property
    def counts_within(self) -> dict[str, bool]:
        """Per timing-dependent figure: whether live is within the stated tolerance of sim."""
        a, rel = COUNT_TOLERANCE
        out = {k: within(self.sim_figures.get(k), self.live_figures.get(k), a, rel)
               for k in ("deliveries", "redeliveries", "dead_lettered")}
        for k in ("recovery_p50_s", "recovery_max_s"):
            sv, lv = self.sim_figures.get(k), self.live_figures.get(k)
            out[k] = within(sv, lv, self.slack_s, RECOVERY_TOLERANCE_REL) if sv is not None and lv is not None \
                else (sv is None) == (lv is None)
        return out


def crosscheck_one(label: str, candidate: str, scenario: Scenario, processor_ref: str, broker: str,
                   scale: float | None = None, running=None, namespace: str = "") -> Row:
    """Run ``scenario`` in the simulation and live on ``broker``; the row of both verdicts.
    ``scenario`` should already be ``for_broker``'s (the same queue on both sides);
    ``running``: a broker started once for many rows (see ``run_live``)."""
    import time

    from acksim.live.run import run_live
    from acksim.world.core import simulate

    scale = fit_scale(scenario) if scale is None else scale
    t = time.monotonic()
    sim = simulate(scenario, processor_ref)  # contained, a fresh image per worker start, as the live workers
    live = run_live(scenario, broker, processor_ref, scale, wall_bound_s(scenario, scale), running=running,
                    namespace=namespace)
    sv, lv = check_all(sim.history, sim.final), check_all(live.outcome.history, live.outcome.final)
    examples = {n: {"sim": sv[n]["example"], "live": lv[n]["example"]} for n, _ in INVARIANTS
                if sv[n]["holds"] != lv[n]["holds"]}
    slack = scenario.queue.visibility_timeout_s + scenario.workers.restart_delay_s
    if scenario.queue.redelivery == "consumer_death":
        slack = scenario.queue.disconnect_detect_s + scenario.workers.restart_delay_s + 1.0
    return Row(label, candidate, processor_ref, scale, sv, lv, sim.history, live.outcome.history, examples,
               live.live, figures(scenario, sim), figures(scenario, live.outcome), slack,
               round(time.monotonic() - t, 2))


def run_rows(todo, broker: str, on_row=None) -> list[Row]:
    """Every ``(label, candidate, scenario, processor_ref, scale)`` of ``todo`` on one ``broker``
    started once (each schedule on fresh queues of its own, deleted after it), one after the
    other so a row's live run has the machine's cores to itself. ``on_row(row)`` after each."""
    from acksim.live.preflight import broker_context

    rows = []
    with broker_context(broker) as running:
        for i, (label, cand, sc, pref, scale) in enumerate(todo):
            row = crosscheck_one(label, cand, sc, pref, broker, scale, running, f"cc{i + 1}")
            rows.append(row)
            if on_row is not None:
                on_row(row)
    return rows


__all__ = ["draw", "livable", "compact", "for_broker", "pick", "crosscheck_one", "run_rows", "fit_scale", "span_s",
           "wall_bound_s", "figures", "within", "Row", "COLUMNS"]
