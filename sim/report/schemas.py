"""The JSON Schemas acksim ships: ``scenario`` (a scenario file, generated from the pydantic
models) and ``summary`` (summary.json, written by hand; its ``schema_version`` is
``acksim.judges.summary.SCHEMA_VERSION``).

Both live in ``acksim/schemas/*.schema.json`` (package data). An editor that validates TOML
against a JSON Schema (taplo, Even Better TOML) reads the scenario schema from a
``#:schema <path or URL>`` comment on a scenario file's first line; ``acksim schema scenario``
(or ``python -m acksim.report.schemas scenario``) prints it. A test keeps the shipped scenario
schema equal to ``scenario_schema()``, so it never goes stale.
"""

from __future__ import annotations

import json
import sys
from importlib.resources import files

SCHEMAS: tuple[str, ...] = ("scenario", "summary")


def scenario_schema() -> dict:
    """The JSON Schema of a scenario file, as pydantic generates it from ``Scenario``."""
    from acksim.scenario import Scenario

    schema = Scenario.model_json_schema()
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema}


def render(schema: dict) -> str:
    """A schema as the shipped file holds it: two-space indent, one trailing newline."""
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def shipped(name: str) -> str:
    """The text of the shipped schema ``name`` (one of ``SCHEMAS``). Raises ValueError for
    another name and FileNotFoundError when the package data is missing."""
    if name not in SCHEMAS:
        raise ValueError(f"schema: unknown {name!r}; one of {', '.join(SCHEMAS)}")
    return (files("acksim") / "schemas" / f"{name}.schema.json").read_text(encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    """``python -m acksim.report.schemas scenario|summary``: print that schema; exit 2 with one
    line on stderr for anything else."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or args[0] not in SCHEMAS:
        print(f"usage: python -m acksim.report.schemas {'|'.join(SCHEMAS)}", file=sys.stderr)
        return 2
    sys.stdout.write(shipped(args[0]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
