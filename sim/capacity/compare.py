"""Comparing presets: one workload and one fault schedule, run on each queue preset.

A design review asks which queue to build on. ``acksim compare`` answers the way a wind tunnel
compares wings: the same air (accounts, renewals, crashes, deployments, duplicates) over each
candidate, and the same instruments (invariants, SLO figures, the preset's characteristic
hazard) read side by side. Each preset replaces the scenario's ``[queue]`` table whole, except
the keys that describe the environment rather than the product (``ENVIRONMENT_QUEUE_KEYS``);
a preset's other tables (workers, scheduler) fill in only what the scenario leaves out.

Each preset's run is a pure function of its scenario, so a process pool and a plain loop give
the same results, always in the order the presets were named.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Iterable, Sequence

import pandas as pd

from acksim.history import Record
from acksim.report.outdir import UsageError
from acksim.scenario.presets import PRESETS
from acksim.scenario import Scenario, parse

ENVIRONMENT_QUEUE_KEYS: tuple[str, ...] = ("ack_latency_s", "redrive_at_s")
KEY_COUNTS: tuple[str, ...] = ("jobs", "deliveries", "redeliveries", "crashes", "cleanups", "reminders_sent",
                               "dead_lettered", "retention_expired", "dropped", "trimmed", "wasted_worker_s",
                               "processor_errors", "stopped_early")


def preset_names(text: str | None) -> list[str]:
    """The ``--presets`` value ("a,b,c"; None: every preset, in ``PRESETS`` order) as a list.
    Raises ``UsageError`` (one line naming ``--presets`` and the allowed names) for an empty,
    unknown or repeated name."""
    if text is None:
        return list(PRESETS)
    names = [n.strip() for n in text.split(",")]
    allowed = f"allowed: {', '.join(PRESETS)}"
    for name in names:
        if name not in PRESETS:
            what = "an empty name" if not name else f"unknown preset {name!r}"
            raise UsageError(f"--presets: {what}; {allowed}")
    repeated = sorted({n for n in names if names.count(n) > 1}, key=names.index)
    if repeated:
        raise UsageError(f"--presets: {', '.join(repeated)} named more than once; name each preset once")
    return names


def preset_data(data: dict, name: str, seed: int | None = None) -> dict:
    """A copy of the scenario dict ``data`` on preset ``name``: its ``[queue]`` table replaced
    by ``{"preset": name}`` plus the scenario's ``ENVIRONMENT_QUEUE_KEYS``; every other table
    as given; ``seed`` (when not None) replacing the scenario's. ``data`` is not modified."""
    out = copy.deepcopy(data)
    given = data.get("queue") if isinstance(data.get("queue"), dict) else {}
    out["queue"] = {"preset": name, **{k: copy.deepcopy(given[k]) for k in ENVIRONMENT_QUEUE_KEYS if k in given}}
    if seed is not None:
        out["seed"] = seed
    return out


def preset_scenarios(data: dict, source: str, names: Sequence[str], seed: int | None = None) -> list[Scenario]:
    """Each preset's validated scenario, in the order of ``names``; the source of preset ``p``
    reads "<source> (preset p)" in errors. Raises ``ScenarioError`` (one line), and
    ``UsageError`` for a fan-out scenario (compare runs the cleanup design)."""
    scenarios = [parse(preset_data(data, name, seed), f"{source} (preset {name})") for name in names]
    if scenarios and scenarios[0].fanout.updates:
        raise UsageError(f"{source}: compare runs the cleanup design; a scenario with a [fanout] table "
                         "runs with acksim run")
    return scenarios


def matches(record: Record, entry: str) -> bool:
    """Whether ``record`` witnesses the hazard entry ``entry``: "kind" matches every record of
    that kind, "kind:prefix" those of that kind whose ``detail`` starts with ``prefix``."""
    kind, sep, prefix = entry.partition(":")
    return record.kind == kind and (not sep or record.detail.startswith(prefix))


def hazard_witnesses(history: Iterable[Record], entries: Sequence[str]) -> int:
    """How many records of ``history`` match any of ``entries`` (a preset's ``hazard_kinds``);
    a record matching two entries counts once."""
    return sum(1 for r in history if any(matches(r, e) for e in entries))


def run_preset(scenario: Scenario) -> dict:
    """Run one preset's scenario to the end and judge it; returns its compare.json entry:
    ``preset``, ``passed``, ``verdict`` and ``reasons`` (as summary.json has them),
    ``invariants`` {name: holds}, ``violations`` {name: count},
    ``slo`` {figure: {value, n, censored, threshold, met}} (virtual seconds, counts), ``counts`` (the
    ``KEY_COUNTS``) and ``hazard`` {text, witnesses}. As ``simulate``: the world runs in a
    supervised child process, and a processor that hangs ends the run, judged on what happened
    (as ``acksim run`` does). Raises what ``World`` raises for an impossible configuration."""
    from acksim.judges.summary import build_summary, passed
    from acksim.world.core import simulate

    outcome = simulate(scenario)
    summary = build_summary(scenario, outcome)
    counts = {**summary["counts"], "redeliveries": int(summary["slo"]["redeliveries"]["value"])}
    preset = PRESETS[scenario.queue.preset]
    return {
        "preset": preset.name,
        "passed": passed(summary),
        "verdict": summary["verdict"],
        "reasons": summary["reasons"],
        "invariants": {n: v["holds"] for n, v in summary["invariants"].items()},
        "violations": {n: v["violations"] for n, v in summary["invariants"].items()},
        "slo": summary["slo"],
        "counts": {k: counts[k] for k in KEY_COUNTS},
        "hazard": {"text": preset.characteristic_hazard,
                   "witnesses": hazard_witnesses(outcome.history, preset.hazard_kinds)},
    }


def run_all(scenarios: Sequence[Scenario], processes: int | None = None) -> list[dict]:
    """``run_preset`` for each scenario, in order. ``processes``: a local process pool of that
    size (None: one per core, at most one per scenario); 1 runs them here, one after another.
    The results are the same either way."""
    n = min(processes or os.cpu_count() or 1, len(scenarios))
    if n <= 1:
        return [run_preset(s) for s in scenarios]
    from functools import partial

    from acksim.capacity.executors import pool_of
    from acksim.interrupts import guarded

    with pool_of(n) as pool:  # an interrupt terminates the pool's processes
        return list(pool.map(partial(guarded, run_preset), scenarios))


def comparison(scenarios: Sequence[Scenario], processes: int | None = None) -> dict:
    """Run each preset's scenario (from ``preset_scenarios``) with ``run_all``; returns the
    content of compare.json: ``{"scenario": name, "seed", "presets": [run_preset entries, in
    order]}``. Raises ``UsageError`` for no scenario at all."""
    if not scenarios:
        raise UsageError("--presets: name at least one preset")
    first = scenarios[0]
    return {"scenario": first.name, "seed": first.seed, "presets": run_all(scenarios, processes)}


def compare_table(result: dict) -> pd.DataFrame:
    """compare.csv as a table, one row per preset in order: ``preset``, ``passed``,
    ``holds_<invariant>`` for each invariant, each SLO figure's value (empty: no sample),
    ``hazard_witnesses``, the ``KEY_COUNTS``, then ``verdict`` and ``reasons`` (their texts,
    joined by "; ")."""
    rows = []
    for entry in result["presets"]:
        rows.append({"preset": entry["preset"], "passed": entry["passed"],
                     **{f"holds_{n}": holds for n, holds in entry["invariants"].items()},
                     **{f: v["value"] for f, v in entry["slo"].items()},
                     "hazard_witnesses": entry["hazard"]["witnesses"], **entry["counts"],
                     "verdict": entry["verdict"], "reasons": "; ".join(r["text"] for r in entry["reasons"])})
    return pd.DataFrame(rows)
