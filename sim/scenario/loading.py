"""Reading a scenario: TOML file to dict (``read_data``), dict to validated ``Scenario``
(``parse``, with the queue preset filled in), both (``load``), and the command line's
overrides (``with_overrides``). A pydantic validation error becomes a ``ScenarioError`` of
one line naming the field, what is wrong and the allowed range (``_one_line``)."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Sequence, get_args

import annotated_types as at
from pydantic import BaseModel, ValidationError

from acksim.printable import shown_path
from acksim.scenario.base import MAX_SCENARIO_BYTES, ScenarioError
from acksim.scenarios import find
from acksim.scenario.file_refs import anchor_refs, is_file_ref
from acksim.scenario.root import Scenario


def _model_in(annotation) -> type[BaseModel] | None:
    """The settings model inside an annotation (bare, ``Annotated``, ``tuple[...]``), if any."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in get_args(annotation):
        found = _model_in(arg)
        if found is not None:
            return found
    return None


def _walk(loc: tuple) -> tuple[type[BaseModel], object | None]:
    """For an error location: the model whose keys the last name was looked up in, and the
    ``FieldInfo`` of that name (None when it is no field there). List indices are skipped."""
    model, info = Scenario, None
    for part in loc:
        if isinstance(part, int):
            continue
        if part not in model.model_fields:
            return model, None
        info = model.model_fields[part]
        inner = _model_in(info.annotation)
        if inner is None:
            return model, info
        model = inner
    return model, info


def _describe_range(info) -> str:
    """'allowed: 0 < value <= 43200' from the constraints of a field, or ''."""
    lo = hi = ""
    for m in getattr(info, "metadata", ()):
        if isinstance(m, at.Gt):
            lo = f"{m.gt} < "
        elif isinstance(m, at.Ge):
            lo = f"{m.ge} <= "
        elif isinstance(m, at.Lt):
            hi = f" < {m.lt}"
        elif isinstance(m, at.Le):
            hi = f" <= {m.le}"
    return f"allowed: {lo}value{hi}" if lo or hi else ""


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _one_line(exc: ValidationError, source: str) -> str:
    err = exc.errors()[0]
    loc = tuple(err["loc"])
    field = ".".join(str(p) for p in loc) or "(top level)"
    model, info = _walk(loc)
    if err["type"] == "extra_forbidden":
        return f"{source}: {field}: unknown key (allowed keys here: {', '.join(model.model_fields)})"
    msg = err["msg"].removeprefix("Value error, ")
    head, sep, rest = msg.partition(": ")
    if err["type"] == "value_error" and sep and all(part.isidentifier() for part in head.split(".")):
        # a check across fields names its field first: "queue: x: ..." reads "queue.x: ..."
        field, msg = (f"{'.'.join(str(p) for p in loc)}.{head}" if loc else head), rest
    rng = _describe_range(info) if info is not None and loc and isinstance(loc[-1], str) else ""
    got = err.get("input")
    got_s = "" if isinstance(got, dict) else f" (got {_short(got)})"
    return f"{source}: {field}: {msg}{got_s}" + (f"; {rng}" if rng and rng not in msg else "")


def parse(data: dict, source: str = "scenario") -> Scenario:
    """Validate a scenario given as a dict (the parsed TOML), its queue preset's defaults
    filled in under the fields it sets (``acksim.scenario.presets``). Raises ``ScenarioError``."""
    from acksim.scenario.presets import apply_preset, limit_violation

    try:
        data, preset = apply_preset(data)
    except KeyError as exc:
        raise ScenarioError(f"{source}: {exc.args[0]}") from None
    try:
        scenario = Scenario.model_validate(data)
    except ValidationError as exc:
        raise ScenarioError(_one_line(exc, source)) from None
    problem = limit_violation(preset, scenario.queue)
    q = scenario.queue
    if not problem and q.max_lease_s < q.visibility_timeout_s:  # after the preset's limits: they say more
        problem = (f"queue.max_lease_s: must be at least visibility_timeout_s ({q.visibility_timeout_s:g}), "
                   f"got {q.max_lease_s:g}")
    if problem:
        raise ScenarioError(f"{source}: {problem}")
    return scenario


def scenario_file(path: str | Path) -> Path:
    """The file a command line's scenario argument names: ``path`` itself when it exists,
    else the bundled scenario of that name (``acksim.scenarios.find``: ``smoke``,
    ``07-poison-job-crash-loop``, ``workers-and-timeout``), else ``path`` (which then reads
    as not found)."""
    p = Path(path)
    if not p.exists():
        found = find(str(path))
        if found is not None:
            return found
    return p


def read_data(path: str | Path) -> dict:
    """A scenario file's parsed TOML, not yet validated. Raises ``ScenarioError`` (one line)
    for a missing or unreadable file, one over ``MAX_SCENARIO_BYTES``, or invalid TOML (an
    integer of over 4,300 digits and nesting too deep included). A path with a control
    character shows escaped (``shown_path``)."""
    p = Path(path)
    where = shown_path(p)
    try:
        if not p.exists():
            hint = "" if p.suffix or "/" in str(path) else " (nor a bundled scenario: `acksim scenarios` lists them)"
            raise ScenarioError(f"{where}: scenario file not found{hint}")
        if not p.is_file():
            raise ScenarioError(f"{where}: not a regular file")
        if p.stat().st_size > MAX_SCENARIO_BYTES:
            raise ScenarioError(f"{where}: {p.stat().st_size} bytes; a scenario file may have at most {MAX_SCENARIO_BYTES}")
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ScenarioError(f"{where}: cannot read scenario file: {exc}") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ScenarioError(f"{where}: not valid TOML: {exc}") from None
    except ValueError as exc:  # an integer literal over the interpreter's 4,300-digit limit
        reason = (str(exc).strip() or type(exc).__name__).splitlines()[0]
        raise ScenarioError(f"{where}: not valid TOML: {reason}") from None
    except RecursionError:
        raise ScenarioError(f"{where}: not valid TOML: arrays or tables nested too deeply") from None


def load(path: str | Path) -> Scenario:
    """Read and validate a scenario file.

    Raises ``ScenarioError`` (one line) for a missing or unreadable file, invalid TOML, an
    unknown key, a wrong type or an out-of-range value, and for a file reference or
    ``processor_path`` that does not exist relative to the file's folder (where they are taken from).
    """
    path = scenario_file(path)
    where = shown_path(path)
    return parse(anchor_refs(read_data(path), path.parent, where), where)


def with_overrides(scenario: Scenario, seed: int | None = None, invariants: Sequence[str] = ()) -> Scenario:
    """A copy of ``scenario`` with the command line's overrides applied (re-validated): the
    ``seed``, and ``invariants`` (references, ``--invariant``) added to its custom invariants
    (a relative file reference taken from the current folder)."""
    data = scenario.model_dump()
    if seed is not None:
        data["seed"] = seed
    for ref in invariants:
        target, colon, function = ref.rpartition(":")
        if colon and is_file_ref(ref):
            ref = f"{Path(target).resolve()}:{function}"
        data["invariants"]["custom"] = (*data["invariants"]["custom"], {"ref": ref})
    source = "--invariant" if invariants else "--seed" if seed is not None else "scenario"
    return parse(data, source)
