"""The user's own invariants (``[[invariants.custom]]``, ``acksim.scenario.invariants``),
loaded and judged beside the built-in ones.

A custom invariant is loaded in the judging process (never in the supervised child that runs
the code under test), once per process and reference: a module reference is imported with
the scenario's ``processor_path`` first on ``sys.path`` and the current folder last (as
``python -m`` finds a module), a file reference from its file. What it returns is checked: a
list of dicts, each a violation.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import sys
from functools import cache
from typing import Callable, Sequence

from acksim.history import Record
from acksim.outcome import FinalState
from acksim.scenario import Scenario, ScenarioError
from acksim.scenario.file_refs import is_file_ref

Checker = Callable[[Sequence[Record], FinalState], list[dict]]


@cache
def load_check(ref: str, path: str | None = None) -> Checker:
    """The function ``ref`` names (``package.module:function`` or ``path/to/file.py:function``),
    imported with ``path`` (a folder, or None) first on ``sys.path``. Raises ``ScenarioError``
    (one line naming ``invariants.custom``) when it cannot be imported or is not callable."""
    target, _, function = ref.rpartition(":")
    try:
        if is_file_ref(ref):
            name = "acksim_custom_invariant_" + hashlib.sha256(os.path.abspath(target).encode()).hexdigest()[:16]
            spec = importlib.util.spec_from_file_location(name, target)
            if spec is None or spec.loader is None:
                raise ImportError(f"cannot load {target!r}")
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        else:
            extra = [p for p in (path,) if p] + [os.getcwd()]
            saved = list(sys.path)
            sys.path[:] = extra[:-1] + saved + extra[-1:]
            try:
                module = importlib.import_module(target)
            finally:
                sys.path[:] = saved
        fn = getattr(module, function)
    except Exception as exc:  # the user's module: whatever its import raises is bad input
        raise ScenarioError(f"invariants.custom: {ref!r} does not load: {type(exc).__name__}: {exc}") from None
    if not callable(fn):
        raise ScenarioError(f"invariants.custom: {ref!r} is not a function")
    return fn


def custom_invariants(scenario: Scenario) -> tuple[tuple[str, Checker], ...]:
    """``scenario``'s own invariants as (name, checker) pairs, in order, each checker checked
    (``checked``). Raises ``ScenarioError`` for one that does not load."""
    return tuple((c.name, checked(c.name, load_check(c.ref, scenario.processor_path)))
                 for c in scenario.invariants.custom)


def checked(name: str, fn: Checker) -> Checker:
    """``fn`` with its answer checked: a list (or tuple) of dicts. Raises ``ScenarioError``
    (one line naming the invariant) for an exception of its own or another answer."""

    def check(history: Sequence[Record], final: FinalState) -> list[dict]:
        try:
            found = fn(history, final)
        except Exception as exc:
            raise ScenarioError(f"invariants.custom: {name} raised {type(exc).__name__}: {exc}") from None
        if not isinstance(found, (list, tuple)) or not all(isinstance(v, dict) for v in found):
            raise ScenarioError(f"invariants.custom: {name} must return a list of dicts (its violations), "
                                f"got {type(found).__name__}")
        return list(found)

    return check
