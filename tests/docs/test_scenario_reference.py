"""docs/scenarios.md names every key of the scenario schema, and docs/summary.md every SLO
figure a scenario's ``[slo]`` table can set a threshold on."""

import re
import typing

from pydantic import BaseModel

from acksim.scenario.root import Scenario
from acksim.scenario.slo import Slo
from helpers.doc_blocks import ROOT


def models_in(annotation) -> list[type[BaseModel]]:
    """The pydantic models an annotation holds (``X``, ``list[X]``, ``X | None``, ...)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in typing.get_args(annotation) for m in models_in(arg)]


def keys(model: type[BaseModel], prefix: str = "") -> list[str]:
    """Every dotted key of ``model``, tables and the keys inside them."""
    out = []
    for name, field in model.model_fields.items():
        out.append(prefix + name)
        for sub in models_in(field.annotation):
            out += keys(sub, f"{prefix}{name}.")
    return out


def named(key: str, page: str) -> bool:
    """``key`` appears on ``page`` as `name`, `table.name`, `name = ...`, `[table]`, `[[table]]`
    or `[[table.sub]]`."""
    leaf = re.escape(key.rsplit(".", 1)[-1])
    return (re.search(rf"`(\[\[?)?([\w.]+\.)?{leaf}(\]\]?| = [^`]*)?`", page) is not None
            or f"`[[{key}." in page or f"`[{key}." in page)  # a table named by its sub-table


def test_the_scenario_reference_names_every_key():
    page = (ROOT / "docs" / "scenarios.md").read_text()
    every = keys(Scenario)
    assert len(every) > 150 and "faults.pauses.duration_s" in every
    assert [k for k in every if not k.startswith("slo.") and not named(k, page)] == []


def test_the_summary_page_names_every_slo_figure():
    page = (ROOT / "docs" / "summary.md").read_text()
    figures = list(Slo.model_fields)
    assert "recovery_time_p99_s" in figures
    # "`end_to_end_p50_s`, `_p95_s`, `_p99_s`": a figure is named in full or by its suffix
    assert [f for f in figures if f"`{f}`" not in page and "`_{}_{}`".format(*f.rsplit("_", 2)[1:]) not in page] == []


def test_a_missing_key_is_found():
    assert not named("workload.no_such_key", "`[workload]` | `accounts`, `renew_lead_s = [low, high]`")
    assert named("workload.renew_lead_s", "`[workload]` | `accounts`, `renew_lead_s = [low, high]`")
