"""The design options of the cleanup pipeline: the choices a design makes that the checks
judge it under.

A design is more than its processor: the same code is safe when the worker acks after the
commit and unsafe when it acks first, safe with unique markers and unsafe without. Six options
say which design runs: the ack policy, the transaction scope, the isolation level, the store
backend, unique markers and unique outbox keys. Each is a key of a scenario table
(``workers`` or ``stores``); ``DESIGN_OPTIONS`` lists them once, and every way of choosing
them (``acksim check``'s flags, ``acksim.check(**design)``, a candidate's design) merges them
into a scenario with ``merge_design``.

A *design* here is the options grouped by table, ``{section: {key: value}}``, as a scenario's
data holds them: ``{"workers": {"ack_policy": "before_processing"}}``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from acksim.scenario import ScenarioError

_SWITCH = {"on": True, "off": False}


@dataclass(frozen=True)
class DesignOption:
    """One design option: the scenario table (``section``) and ``key`` it sets, and the
    ``choices`` it is written as on a command line ("on"/"off" for a switch)."""

    key: str
    section: str
    choices: tuple[str, ...]

    @property
    def flag(self) -> str:
        """The command-line flag: ``--ack-policy`` for ``ack_policy``."""
        return "--" + self.key.replace("_", "-")

    def value(self, choice: str) -> Any:
        """The scenario value of a command-line ``choice``: "on"/"off" as a bool, else as written."""
        return _SWITCH.get(choice, choice)


DESIGN_OPTIONS = (
    DesignOption("ack_policy", "workers", ("after_commit", "before_processing")),
    DesignOption("transaction_scope", "workers", ("unit_of_work", "autocommit")),
    DesignOption("isolation", "stores", ("serializable", "repeatable_read", "read_committed")),
    DesignOption("backend", "stores", ("memory", "sqlite", "postgres")),
    DesignOption("unique_markers", "stores", ("on", "off")),
    DesignOption("unique_outbox_keys", "stores", ("on", "off")),
)


def design_of(options: Mapping[str, Any], over: Mapping[str, Mapping[str, Any]] | None = None) -> dict:
    """The design ``{section: {key: value}}`` of ``options`` (``{key: value}``, keys of
    ``DESIGN_OPTIONS``), laid over the design ``over`` (a candidate's; not changed). Raises
    ``ScenarioError`` naming the allowed keys for a key that is not a design option."""
    sections = {option.key: option.section for option in DESIGN_OPTIONS}
    unknown = set(options) - set(sections)
    if unknown:
        raise ScenarioError(f"acksim check: unknown design option(s) {sorted(unknown)}; "
                            f"allowed: {', '.join(sections)}")
    design = {section: dict(values) for section, values in (over or {}).items()}
    for key, value in options.items():
        design.setdefault(sections[key], {})[key] = value
    return design


def merge_design(data: Mapping[str, Any], design: Mapping[str, Mapping[str, Any]],
                 processor: str | None = None) -> dict:
    """A scenario's data (its tables, as ``Scenario.model_dump`` or a TOML file gives them)
    with the ``design`` merged into its tables and, unless None, ``processor`` set; a copy,
    neither input is changed. Validation is the scenario's (``acksim.scenario.parse``)."""
    data = {k: dict(v) if isinstance(v, dict) else v for k, v in data.items()}
    for section, values in design.items():
        data.setdefault(section, {}).update(values)
    if processor is not None:
        data["processor"] = processor
    return data


def describe(scenario) -> str:
    """The design options of ``scenario`` (a ``Scenario``) in one line, e.g. "ack
    after_commit, unit_of_work, memory serializable, unique markers on, unique outbox keys on"."""
    w, s = scenario.workers, scenario.stores
    return (f"ack {w.ack_policy}, {w.transaction_scope}, {s.backend} {s.isolation}, "
            f"unique markers {'on' if s.unique_markers else 'off'}, "
            f"unique outbox keys {'on' if s.unique_outbox_keys else 'off'}")


def design_tag(scenario) -> str:
    """The design options of ``scenario`` that differ from the reference design, for file
    names: e.g. ``autocommit`` or ``read-committed+no-unique-markers``; empty for the reference."""
    w, s = scenario.workers, scenario.stores
    tags = [tag for tag, on in (
        ("ack-before-processing", w.ack_policy == "before_processing"),
        ("autocommit", w.transaction_scope == "autocommit"),
        ("read-committed", s.isolation == "read_committed"),
        ("repeatable-read", s.isolation == "repeatable_read"),
        ("no-unique-markers", not s.unique_markers),
        ("no-unique-outbox-keys", not s.unique_outbox_keys),
        ("sqlite", s.backend == "sqlite"),
        ("postgres", s.backend == "postgres")) if on]
    return "+".join(tags)
