"""A scenario file's references to other files, taken from the file's own folder.

A processor reference names a module (``package.module:function``) or a file
(``path/to/file.py:function``); a file reference in a scenario file, and its
``processor_path``, are relative to the scenario file's folder, so a scenario runs the same
from any current folder. ``anchor_refs`` makes them absolute before validation; loading the
code they name is ``acksim.world.sandbox.processor_ref``'s.
"""

from __future__ import annotations

from pathlib import Path

from acksim.scenario.base import ScenarioError


def is_file_ref(ref: str) -> bool:
    """Whether ``ref`` names a file (``path/to/file.py:function``) rather than a module."""
    target = ref.rpartition(":")[0]
    return target.endswith(".py") or "/" in target or "\\" in target


def anchor_refs(data: dict, folder: Path, source: str) -> dict:
    """``data`` (a scenario file's parsed TOML) with its file references (``processor``,
    ``fanout.processor``, ``invariants.custom``'s) and ``processor_path`` made absolute against ``folder``, the
    scenario file's folder. Raises ``ScenarioError`` (``source``, the field) when such a file
    or folder does not exist there; a replay file's (one with ``[expect]``) ``processor_path``
    that does not exist here (the file came from another machine) is dropped instead, so its
    processor is imported from the current folder, as ``python -m`` would. Other values are left for validation."""
    data = dict(data)
    fanout = dict(data["fanout"]) if isinstance(data.get("fanout"), dict) else None
    for table, key, field in ((data, "processor", "processor"), (fanout, "processor", "fanout.processor")):
        ref = table.get(key) if table is not None else None
        if not isinstance(ref, str) or not is_file_ref(ref) or ":" not in ref:
            continue
        table[key] = _anchored(ref, folder, source, field)
    if fanout is not None:
        data["fanout"] = fanout
    invariants = data.get("invariants")
    if isinstance(invariants, dict) and isinstance(invariants.get("custom"), list):
        custom = [dict(c) if isinstance(c, dict) else c for c in invariants["custom"]]
        for i, entry in enumerate(custom):
            ref = entry.get("ref") if isinstance(entry, dict) else None
            if isinstance(ref, str) and ":" in ref and is_file_ref(ref):
                entry["ref"] = _anchored(ref, folder, source, f"invariants.custom[{i}].ref")
        data["invariants"] = {**invariants, "custom": custom}
    extra = data.get("processor_path")
    if isinstance(extra, str) and extra:
        place = (folder / extra).resolve()
        if place.is_dir():
            data["processor_path"] = str(place)
        elif "expect" in data:  # a replay file from another machine (a CI artifact): import from here
            del data["processor_path"]
        else:
            raise ScenarioError(f"{source}: processor_path: folder {extra!r} not found (a relative path is "
                                f"taken from the scenario file's folder, {folder.resolve()})")
    return data


def _anchored(ref: str, folder: Path, source: str, field: str) -> str:
    """File reference ``ref`` with its file made absolute against ``folder``. Raises
    ``ScenarioError`` naming ``source`` and ``field`` when there is no such file."""
    target, _, name = ref.rpartition(":")
    file = (folder / target).resolve()
    if not file.is_file():
        raise ScenarioError(f"{source}: {field}: file {target!r} not found (a relative path is taken "
                            f"from the scenario file's folder, {folder.resolve()})")
    return f"{file}:{name}"
