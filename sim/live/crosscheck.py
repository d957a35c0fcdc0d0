"""``acksim crosscheck``: the same schedules in the simulation and live, verdict by verdict.

Each row is one schedule: a scenario given on the command line, or one drawn from
``acksim.search.strategies.check_scenarios`` around the check base with a candidate design
(cycling through ``CANDIDATE_CYCLE`` so that some of them break an invariant). What the live
mode cannot run is taken out of every schedule first, for both sides (``livable``): cron
scheduling, kills, spurious duplicates, latency spikes, pauses, redrives, poison accounts.
Both sides are judged by ``acksim.judges.invariants.check_all``; a row agrees when every
invariant has the same verdict in both. The report (``crosscheck.md``, ``crosscheck.json``)
has a row per schedule, the agreement rate, and for each disagreement both timelines
(``<row>-sim.csv``, ``<row>-live.csv``; the records of the example's account in the page).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from acksim.history import COLUMNS, Record, to_csv
from acksim.judges.invariants import INVARIANTS, check_all
from acksim.scenario import Scenario, parse

CANDIDATE_CYCLE = ("reference", "naive", "no-renewed-check", "reference", "no-version-check", "autocommit",
                   "ack-before-processing")
VIOLATING_SHARE = 1 / 3  # of the drawn schedules, this share violates an invariant in the simulation
TARGET_WALL_S = 20.0  # a drawn schedule's planned span is scaled to about this many wall seconds
MIN_SCALE, MAX_SCALE = 0.005, 0.05


def livable(scenario: Scenario, design: dict | None = None) -> Scenario:
    """``scenario`` with ``design`` (section -> {key: value}) applied and what the live mode
    cannot run removed (see the module docstring); stores on SQLite, processor errors do not
    end the run. Raises ``ScenarioError`` for an impossible design."""
    data = scenario.model_dump(exclude_none=True)
    for section, values in (design or {}).items():
        data.setdefault(section, {}).update(values)
    data["stores"]["backend"] = "sqlite"
    data["scheduler"].update(mode="per_deadline", paused=[], instances=1, publish_crash_probability=0.0)
    data["faults"].update(kills=[], duplicates=[], latency_spikes=[], poison_accounts=[], scheduler_stalls=[])
    data["queue"].update(redrive_at_s=[], duplicate_probability=0.0)
    data["run"]["stop_on_processor_error"] = False
    data.pop("expect", None)
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
        out.append((name, livable(sc, CANDIDATES[name].design)))
    return out


def pick(n: int, seed: int) -> list[tuple[str, Scenario, bool]]:
    """``n`` drawn schedules ``(candidate, scenario, violates in the simulation)``, about
    ``VIOLATING_SHARE`` of them violating: up to ``8 n`` are drawn (``draw``) and simulated,
    and the first ones of each kind kept, in draw order (fewer violating ones if the draws had
    fewer)."""
    from acksim.model.candidates import CANDIDATES
    from acksim.world.core import simulate

    want_bad = round(n * VIOLATING_SHARE)
    bad, good = [], []
    for i, (name, sc) in enumerate(draw(8 * n, seed)):
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
    if scenario.plan.accounts:
        ends = [a.deadline_s for a in scenario.plan.accounts] + [s.at_s + s.amount_s for s in scenario.plan.steps]
    else:
        ends = [scenario.workload.deadline_start_s + scenario.workload.deadline_window_s]
    span = max(ends) + scenario.workload.term_s + scenario.workload.rollover_delay_s
    return max(MIN_SCALE, min(MAX_SCALE, TARGET_WALL_S / max(span, 1.0)))


@dataclass
class Row:
    """One schedule's verdicts: ``sim`` and ``live`` map invariant name -> holds."""

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

    @property
    def agrees(self) -> bool:
        return all(self.sim[n]["holds"] == self.live[n]["holds"] for n, _ in INVARIANTS)


def crosscheck_one(label: str, candidate: str, scenario: Scenario, processor_ref: str, broker: str,
                   scale: float | None = None) -> Row:
    """Run ``scenario`` in the simulation and live on ``broker``; the row of both verdicts."""
    from acksim.live.run import run_live
    from acksim.world.core import simulate
    from acksim.world.processor_ref import load_processor

    scale = fit_scale(scenario) if scale is None else scale
    sim = simulate(scenario, load_processor(processor_ref))
    live = run_live(scenario, broker, processor_ref, scale)
    sv, lv = check_all(sim.history, sim.final), check_all(live.outcome.history, live.outcome.final)
    examples = {n: {"sim": sv[n]["example"], "live": lv[n]["example"]} for n, _ in INVARIANTS
                if sv[n]["holds"] != lv[n]["holds"]}
    return Row(label, candidate, processor_ref, scale, sv, lv, sim.history, live.outcome.history, examples,
               live.live)


def _account_lines(history, account_id) -> list[str]:
    return [f"| {r.time:.3f} | {r.kind} | {r.actor} | {r.message_id if r.message_id is not None else ''} | "
            f"{r.cleanup_version if r.cleanup_version is not None else ''} | "
            f"{r.receive_count if r.receive_count is not None else ''} | {r.detail} |"
            for r in history if r.account_id == account_id]


def write_crosscheck(out: Path, rows: list[Row], broker: str) -> dict:
    """Write crosscheck.md, crosscheck.json and the disagreeing timelines into ``out``;
    returns the json document."""
    out.mkdir(parents=True, exist_ok=True)
    names = [n for n, _ in INVARIANTS]
    agree = sum(r.agrees for r in rows)
    doc = {"broker": broker, "version": rows[0].live_info.get("version") if rows else None,
           "schedules": len(rows), "agreeing": agree, "agreement_rate": agree / len(rows) if rows else None,
           "sim_violating": sum(not all(r.sim[n]["holds"] for n in names) for r in rows),
           "rows": [{"label": r.label, "candidate": r.candidate, "processor": r.processor, "time_scale": r.scale,
                     "agrees": r.agrees, "sim": {n: r.sim[n]["holds"] for n in names},
                     "live": {n: r.live[n]["holds"] for n in names}, "disagreements": r.examples}
                    for r in rows]}
    (out / "crosscheck.json").write_text(json.dumps(doc, indent=2, default=str) + "\n")
    short = {"no_cleanup_after_renewal": "renewal", "at_most_once_effect": "once", "effect_with_outbox": "outbox",
             "ack_after_durable": "ack", "no_lost_work": "lost"}
    lines = [f"# acksim crosscheck: simulation vs {broker} {doc['version'] or ''}", "",
             f"{agree} of {len(rows)} schedules agree on every invariant "
             f"(agreement rate {doc['agreement_rate']:.0%}); {doc['sim_violating']} violate an invariant in the "
             "simulation.", "",
             "Verdicts as sim/live: `ok` holds, `X` violated.", "",
             "| schedule | candidate | scale | " + " | ".join(short[n] for n in names) + " | agree |",
             "| --- | --- | --- | " + " | ".join("---" for _ in names) + " | --- |"]
    for r in rows:
        cells = [f"{'ok' if r.sim[n]['holds'] else 'X'}/{'ok' if r.live[n]['holds'] else 'X'}" for n in names]
        lines.append(f"| {r.label} | {r.candidate} | {r.scale:g} | " + " | ".join(cells)
                     + f" | {'yes' if r.agrees else '**no**'} |")
    for i, r in enumerate(rows):
        if r.agrees:
            continue
        stem = f"row{i + 1:02d}"
        (out / f"{stem}-sim.csv").write_text(to_csv(r.sim_history))
        (out / f"{stem}-live.csv").write_text(to_csv(r.live_history))
        lines += ["", f"## Disagreement: {r.label} ({r.candidate})", "",
                  f"Timelines: [{stem}-sim.csv]({stem}-sim.csv), [{stem}-live.csv]({stem}-live.csv)."]
        for n, ex in r.examples.items():
            lines += ["", f"### {n}: sim {'holds' if r.sim[n]['holds'] else 'violated'}, "
                          f"live {'holds' if r.live[n]['holds'] else 'violated'}", ""]
            example = ex["sim"] or ex["live"] or {}
            lines.append(f"Example: `{json.dumps(example, default=str)}`")
            aid = example.get("account_id")
            if aid:
                for side, hist in (("simulation", r.sim_history), ("live", r.live_history)):
                    lines += ["", f"{side}, records of {aid}:", "",
                              "| time (virtual s) | kind | actor | message | version | receive | detail |",
                              "| --- | --- | --- | --- | --- | --- | --- |", *_account_lines(hist, aid)]
    (out / "crosscheck.md").write_text("\n".join(lines) + "\n")
    return doc


__all__ = ["draw", "livable", "crosscheck_one", "write_crosscheck", "fit_scale", "Row", "COLUMNS"]
