"""The bundled scenarios, shipped as package data (``acksim.scenarios``): ``game-renewal.toml``
(the default of ``acksim run``), ``smoke.toml``, ``compare-cleanup.toml``,
``shipment-fanout.toml``, ``incidents/`` and ``sweeps/``."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path


def bundled(name: str) -> Path:
    """The path of a bundled scenario file, e.g. ``bundled("smoke.toml")`` or
    ``bundled("incidents/04-five-schedulers-no-leader.toml")``; raises ``FileNotFoundError``
    when there is none by that name."""
    path = Path(str(files(__name__).joinpath(name)))
    if not path.is_file():
        raise FileNotFoundError(f"no bundled scenario {name!r}")
    return path
