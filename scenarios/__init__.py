"""The bundled scenarios, shipped as package data (``acksim.scenarios``): ``game-renewal.toml``
(the default of ``acksim run``), ``smoke.toml``, ``compare-cleanup.toml``,
``shipment-fanout.toml``, ``incidents/`` and ``sweeps/``. Each can be named on the command
line without a path: ``acksim run smoke``, ``acksim run 07-poison-job-crash-loop``,
``acksim sweep workers-and-timeout`` (``find``); ``acksim scenarios`` lists them
(``catalogue``)."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

# the folders searched for a bare name, in order
FOLDERS = ("", "incidents", "sweeps")


def bundled(name: str) -> Path:
    """The path of a bundled scenario file, e.g. ``bundled("smoke.toml")`` or
    ``bundled("incidents/04-five-schedulers-no-leader.toml")``; raises ``FileNotFoundError``
    when there is none by that name."""
    path = Path(str(files(__name__).joinpath(name)))
    if not path.is_file():
        raise FileNotFoundError(f"no bundled scenario {name!r}")
    return path


def find(name: str) -> Path | None:
    """The bundled scenario or sweep file called ``name`` (``smoke``, ``smoke.toml``,
    ``incidents/07-poison-job-crash-loop``, ``07-poison-job-crash-loop``,
    ``workers-and-timeout``): the first of ``FOLDERS`` that has it, ``.toml`` added when
    missing; None when there is none (a name with ``..`` or an absolute path never matches)."""
    if not name or name.startswith("/") or ".." in Path(name).parts:
        return None
    stem = name if name.endswith(".toml") else f"{name}.toml"
    candidates = [stem] if "/" in stem else [f"{folder}/{stem}" if folder else stem for folder in FOLDERS]
    for rel in candidates:
        try:
            return bundled(rel)
        except FileNotFoundError:
            continue
    return None


ABOUT_CHARS = 100  # a catalogue line's description at most


def catalogue() -> list[tuple[str, str]]:
    """Every bundled file as (the name to give on the command line, the first sentence of its
    opening comment, cut to ``ABOUT_CHARS``), scenarios first, then incidents, then sweeps,
    each sorted by name."""
    out = []
    root = files(__name__)
    for folder in FOLDERS:
        where = root.joinpath(folder) if folder else root
        for entry in sorted(where.iterdir(), key=lambda e: e.name):
            if entry.name.endswith(".toml") and entry.is_file():
                out.append((entry.name.removesuffix(".toml"), _about(entry.read_text(encoding="utf-8"))))
    return out


def _about(text: str) -> str:
    """The first sentence of a file's opening comment (its leading ``#`` lines)."""
    words = []
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        words.append(line.lstrip("# ").strip())
    sentence = " ".join(words).split(". ")[0].rstrip(".")
    return sentence if len(sentence) <= ABOUT_CHARS else sentence[:ABOUT_CHARS - 1].rstrip() + "…"
