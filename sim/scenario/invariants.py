"""``[[invariants.custom]]``: invariants of the user's own, judged like the built-in ones.

A custom invariant is a function ``check(history, final) -> list[dict]`` named by reference
(``package.module:function`` or ``path/to/file.py:function``): ``history`` the run's records
(``acksim.history.Record``, their kinds and fields a public, versioned interface:
``docs/history.md``), ``final`` the stores' final state (``acksim.outcome.FinalState``); it
returns its violations, each a dict with at least ``why`` (empty: it holds). Its ``name``
(default: the function's) keys it in summary.json, JUnit and a check's findings.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import Field, field_validator, model_validator

from acksim.invariant_names import INVARIANT_NAMES
from acksim.scenario.base import Tupled, _Section

_NAME = re.compile(r"[a-z_][a-z0-9_]{0,63}")


class CustomInvariant(_Section):
    """One invariant of the user's own: ``ref`` (``package.module:function`` or
    ``path/to/file.py:function``, a relative file taken from the scenario file's folder) and
    its ``name`` (lowercase, 1 to 64 characters; default: the function's name), which may not
    be a built-in invariant's."""

    ref: str = Field(min_length=3, max_length=500)
    name: str = ""

    @field_validator("ref")
    @classmethod
    def _a_reference(cls, v: str) -> str:
        target, colon, function = v.rpartition(":")
        if not colon or not target or not function.isidentifier():
            raise ValueError(f"must be package.module:function or path/to/file.py:function, got {v!r}")
        return v

    @model_validator(mode="after")
    def _named(self) -> "CustomInvariant":
        name = self.name or self.ref.rpartition(":")[2]
        if not _NAME.fullmatch(name):
            raise ValueError(f"name: must be lowercase letters, digits and _ (1 to 64), got {name!r}")
        if name in INVARIANT_NAMES:
            raise ValueError(f"name: {name!r} is a built-in invariant's; give this one another name")
        object.__setattr__(self, "name", name)
        return self


class Invariants(_Section):
    """The invariants a run is judged by besides the built-in five: ``custom``, each a
    ``CustomInvariant`` (at most 50, names distinct)."""

    custom: Annotated[tuple[CustomInvariant, ...], Tupled] = Field((), max_length=50)

    @field_validator("custom")
    @classmethod
    def _distinct(cls, v: tuple[CustomInvariant, ...]) -> tuple[CustomInvariant, ...]:
        names = [c.name for c in v]
        twice = next((n for n in names if names.count(n) > 1), None)
        if twice is not None:
            raise ValueError(f"two custom invariants are named {twice!r}; give each its own name")
        return v

    @property
    def names(self) -> tuple[str, ...]:
        """The custom invariants' names, in order."""
        return tuple(c.name for c in self.custom)
