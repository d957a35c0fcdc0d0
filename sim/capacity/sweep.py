"""Sweeps: a grid over scenario fields, times replications, for capacity planning.

A sweep file names a base scenario, fixed overrides, a grid (each key a dotted scenario
field, each value the list of values to try) and a number of replications (seeds). Every
combination of grid values with every seed is one run; a run is a pure function of its
scenario, so a process pool and a Dask cluster give identical rows. Rows are appended to
``runs.csv`` as they finish, so an interrupted sweep keeps them, and a rerun into the same
folder does only the runs still missing.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import tomllib
from dataclasses import dataclass
from pathlib import Path
from types import UnionType
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from acksim.scenario import Scenario, ScenarioError, load, parse

Scalar = int | float | bool | str
MAX_RUNS = 10_000  # grid points x replications a sweep may run unless its file raises max_runs
MAX_SWEEP_BYTES = 1_000_000  # like a scenario file
# Part of the sweep id: rows of an older layout in runs.csv belong to another sweep (rerun afresh).
ROW_FORMAT = "rows-2: figure, figure_threshold, figure_met; processor_errors, stopped_early"
COUNTS: tuple[str, ...] = ("jobs", "crashes", "conflicts", "visibility_expired", "dead_lettered",
                           "processor_errors", "stopped_early")


class SweepSpec(BaseModel):
    """A sweep file. ``scenario``: the base scenario (relative to the sweep file);
    ``replications``: seeds per grid point (base seed, base seed + 1, ...); ``overrides``:
    fixed ``"section.key" = value`` for every run; ``grid``: ``"section.key" = [values]``;
    ``cost``: the grid field whose value is the cost to minimise when picking the cheapest
    point that meets every SLO (default ``workers.count``); ``max_runs``: the most runs (grid
    points x replications) the sweep may have (default ``MAX_RUNS``, 10,000), a guard against
    a grid that would run for days; ``screening``: "none" (default, every replication of every
    point runs) or "drop_failed": a point's replications run one after another and stop at
    the first that fails, since a point that failed once cannot pass (every replication must)
    and so cannot be chosen; its summary then covers the replications it ran. The runs that
    do run give the rows they give unscreened, so screening never changes which point is
    chosen, only what a failed point's figures are averaged over
    (``acksim.capacity.executors.RunOrder``)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    scenario: str = Field(min_length=1)
    replications: int = Field(3, ge=1, le=1000)
    overrides: dict[str, Scalar] = {}
    grid: dict[str, Annotated[list[Scalar], Field(min_length=1, max_length=1000)]] = Field(min_length=1, max_length=20)
    cost: str = "workers.count"
    max_runs: int = Field(MAX_RUNS, ge=1, le=10_000_000)
    screening: Literal["none", "drop_failed"] = "none"


@dataclass(frozen=True)
class RunSpec:
    """One run of a sweep: its index, grid point, parameter values, seed and scenario data.
    A point's runs have consecutive indices, in the order of its seeds."""

    run: int
    point: int
    params: tuple[tuple[str, Scalar], ...]
    seed: int
    scenario: dict


def load_sweep(path: str | Path) -> tuple[SweepSpec, list[RunSpec], str]:
    """Read a sweep file and expand it into runs; returns (spec, runs, sweep id).

    Every run's scenario is validated before anything runs. Raises ``ScenarioError`` (one
    line naming the field, or the grid point and its field) for bad input: a file over
    ``MAX_SWEEP_BYTES``, invalid TOML (an integer of over 4,300 digits, nesting too deep
    included), a grid of more than ``max_runs`` runs (before any is expanded)."""
    from acksim.printable import shown_path
    from acksim.scenario.loading import scenario_file

    p = scenario_file(path)
    where = shown_path(p)
    try:
        if p.is_file() and p.stat().st_size > MAX_SWEEP_BYTES:
            raise ScenarioError(f"{where}: {p.stat().st_size} bytes; a sweep file may have at most {MAX_SWEEP_BYTES}")
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except ScenarioError:
        raise
    except FileNotFoundError:
        raise ScenarioError(f"{where}: sweep file not found") from None
    except IsADirectoryError:
        raise ScenarioError(f"{where}: not a regular file") from None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ScenarioError(f"{where}: cannot read sweep file: {_first_line(exc)}") from None
    except ValueError as exc:  # an integer literal over the interpreter's digit limit
        raise ScenarioError(f"{where}: not valid TOML: {_first_line(exc)}") from None
    except RecursionError:
        raise ScenarioError(f"{where}: not valid TOML: arrays or tables nested too deeply") from None
    try:
        spec = SweepSpec.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise ScenarioError(f"{where}: {'.'.join(map(str, err['loc'])) or '(top level)'}: {err['msg']}") from None
    total = spec.replications
    for values in spec.grid.values():
        total *= len(values)
    if total > spec.max_runs:
        sizes = " x ".join(str(len(v)) for v in spec.grid.values())
        raise ScenarioError(f"{where}: grid: {sizes} points x {spec.replications} replications = {total} runs, over "
                            f"max_runs = {spec.max_runs}; shrink the grid, or raise max_runs in the sweep file")
    if "seed" in spec.grid:
        raise ScenarioError(f"{where}: grid.seed: a sweep cannot vary seed (the replications are the seeds); "
                            "set replications, or the base seed in overrides")
    if spec.cost not in spec.grid:
        raise ScenarioError(f"{where}: cost: {spec.cost!r} is not a grid field ({', '.join(spec.grid)})")
    base = load(p.parent / spec.scenario).model_dump(exclude_none=True)
    base.pop("expect", None)
    for key, value in spec.overrides.items():
        _set(base, key, value, f"{where}: overrides.{key}")
    keys = list(spec.grid)
    runs: list[RunSpec] = []
    for point, values in enumerate(itertools.product(*(spec.grid[k] for k in keys))):
        data = copy.deepcopy(base)
        for key, value in zip(keys, values):
            _set(data, key, value, f"{where}: grid.{key}")
        parse(data, f"{where}: grid point {dict(zip(keys, values))}")  # validate up front
        for rep in range(spec.replications):
            seeded = copy.deepcopy(data)
            seeded["seed"] = base["seed"] + rep
            runs.append(RunSpec(len(runs), point, tuple(zip(keys, values)), seeded["seed"], seeded))
    # neither the guard nor screening changes a run's row: a folder resumes with either changed
    sweep_id = hashlib.sha256(json.dumps([ROW_FORMAT, spec.model_dump(exclude={"max_runs", "screening"}), base],
                                         sort_keys=True, default=str).encode()).hexdigest()[:12]
    return spec, runs, sweep_id


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _set(data: dict, dotted: str, value: Any, where: str) -> None:
    """Set the scenario field ``dotted`` ("section.key", or a top-level key) of the scenario
    dict ``data`` to ``value``. A field is valid when the scenario schema has it, whether or
    not ``data`` sets it: a threshold the base leaves unset, or a table it leaves out, is
    written in. The value itself is checked by ``parse`` afterwards. Raises ``ScenarioError``
    (one line, starting with ``where``) for a field the schema does not have, a table named as
    a field, or a field a sweep cannot vary."""
    if dotted == "queue.preset":  # a preset is a set of defaults; the base has every field set already
        raise ScenarioError(f"{where}: a sweep cannot vary queue.preset (each preset brings its own defaults); "
                            "name it in the scenario, or compare presets with acksim compare")
    *sections, key = dotted.split(".")
    model: type[BaseModel] = Scenario
    node = data
    for section in sections:
        table = _table(model, section)
        if table is None or section == "expect":
            raise ScenarioError(f"{where}: no scenario table {section!r}")
        model = table
        node = node.setdefault(section, {})  # a table the base leaves at its defaults
    if key not in model.model_fields or key == "expect":
        raise ScenarioError(f"{where}: no scenario field {dotted!r}")
    table = _table(model, key)
    if table is not None:
        raise ScenarioError(f"{where}: {dotted!r} is a table; name one of its fields, "
                            f"e.g. {dotted}.{next(iter(table.model_fields))}")
    node[key] = value


def _table(model: type[BaseModel], name: str) -> type[BaseModel] | None:
    """The model class of the table ``name`` of ``model`` (``T`` or ``T | None``); None when
    ``name`` is not a field of ``model`` or not a table."""
    field = model.model_fields.get(name)
    if field is None:
        return None
    annotation = field.annotation
    if get_origin(annotation) in (Union, UnionType):  # T | None
        annotation = next((a for a in get_args(annotation) if a is not type(None)), None)
    return annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None


def run_one(spec: RunSpec) -> dict:
    """Run one sweep run and return its row: ``run``, ``point``, ``seed``, the parameters;
    per SLO figure (``FIGURES`` order) its value (virtual seconds, counts, per second; None
    without a sample), ``<figure>_threshold`` (None: not set) and ``<figure>_met`` (None
    without a threshold); ``holds_<invariant>`` per invariant; ``passed``; the run's
    ``verdict`` and ``reasons`` (their texts joined by "; ", as summary.json has them); and
    ``count_<name>`` for each of ``COUNTS``. Every row has the same keys. A pure function of
    ``spec`` (picklable, for process pools and Dask workers)."""
    from acksim.judges.summary import build_summary, passed
    from acksim.world.core import simulate

    scenario = parse(spec.scenario, f"run {spec.run}")
    summary = build_summary(scenario, simulate(scenario))
    row: dict = {"run": spec.run, "point": spec.point, "seed": spec.seed, **dict(spec.params)}
    for name, v in summary["slo"].items():
        row[name] = v["value"]
        row[f"{name}_threshold"] = v["threshold"]
        row[f"{name}_met"] = v["met"]
    for name, v in summary["invariants"].items():
        row[f"holds_{name}"] = v["holds"]
    row["passed"] = passed(summary)
    row["verdict"] = summary["verdict"]
    row["reasons"] = "; ".join(r["text"] for r in summary["reasons"])
    for name in COUNTS:
        row[f"count_{name}"] = int(summary["counts"].get(name, 0))
    return row
