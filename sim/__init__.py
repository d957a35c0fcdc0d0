"""acksim: simulate and verify a scheduled, queue-driven cleanup pipeline on real code.

The public API (imported lazily, so ``import acksim`` and the command line start fast)::

    import acksim

    scenario = acksim.load("scenarios/smoke.toml")          # or acksim.bundled("smoke.toml")
    outcome = acksim.simulate(scenario)                      # or simulate(scenario, my_processor)
    summary = acksim.build_summary(scenario, outcome)        # the content of summary.json
    report, ref, base = acksim.check("mypkg.cleanup:process", max_examples=100)

Layout, one sub-package per role: ``acksim.world`` (the world and its actors),
``acksim.scenario`` (the scenario schema, by table, and the queue presets), ``acksim.judges``
(invariants, SLO figures, hazards and the summary over one append-only ``acksim.history``),
``acksim.search`` (``acksim check``), ``acksim.capacity`` (sweeps, queueing theory,
``acksim compare``), ``acksim.report`` and ``acksim.cli``; ``acksim.model`` is the code under
test (the reference processor, candidate designs and the stores) and ``acksim.scenarios`` the
bundled scenario files.
"""

from __future__ import annotations

from importlib import import_module
from importlib.metadata import PackageNotFoundError, version as _version

try:
    __version__ = _version("acksim")
except PackageNotFoundError:  # run from a source tree without an install
    __version__ = "0.0.0+unknown"

_API = {
    "load": ("acksim.scenario", "load"),
    "parse": ("acksim.scenario", "parse"),
    "Scenario": ("acksim.scenario", "Scenario"),
    "ScenarioError": ("acksim.scenario", "ScenarioError"),
    "World": ("acksim.world.core", "World"),
    "Outcome": ("acksim.outcome", "Outcome"),
    "simulate": ("acksim.world.core", "simulate"),
    "build_summary": ("acksim.judges.summary", "build_summary"),
    "check": ("acksim.search.api", "check"),
    "to_frame": ("acksim.history", "to_frame"),
    "bundled": ("acksim.scenarios", "bundled"),
}

__all__ = ["__version__", *_API]


def __getattr__(name: str):
    """The public names of ``_API``, imported on first use."""
    if name in _API:
        module, attr = _API[name]
        value = getattr(import_module(module), attr)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'acksim' has no attribute {name!r}")
