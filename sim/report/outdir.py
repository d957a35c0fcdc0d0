"""The report folder: checked before any work, so a run never fails at its end for a folder
it cannot write, and never replaces a folder that is not one of its own reports."""

from __future__ import annotations

import tempfile
from pathlib import Path


def check_out_dir(out: Path, replaces: bool = True, flag: str = "--out") -> None:
    """Refuse, before any work, a folder that cannot be written or (``replaces``: a report
    folder, replaced whole) would overwrite something that is not a report: an existing file,
    a non-empty folder without a summary.json, a name the file system refuses, a parent that
    is a file or read-only. Leaves nothing behind. Raises ``UsageError`` naming ``flag``."""
    if not str(out) or not out.name or out.name in (".", ".."):
        raise UsageError(f"{flag}: {str(out)!r} needs a folder name, e.g. reports/run1")
    try:
        _check_writable(out, replaces, flag)
    except OSError as exc:
        raise UsageError(f"{flag}: cannot write at {out}: {exc.strerror or exc}") from None


def _check_writable(out: Path, replaces: bool, flag: str) -> None:
    if out.exists() and not out.is_dir():
        raise UsageError(f"{flag}: {out} exists and is not a folder")
    if replaces and out.is_dir() and any(out.iterdir()) and not (out / "summary.json").is_file():
        raise UsageError(f"{flag}: {out} is a non-empty folder that holds no acksim report (no summary.json); "
                         "choose a new folder, or an earlier report's folder to replace it")
    for p in (out.parent, *out.parent.parents):
        if p.exists() and not p.is_dir():
            raise UsageError(f"{flag}: {p} is a file, not a folder")
    created = [p for p in (out.parent, *out.parent.parents) if not p.exists()]
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        probe = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
        probe.rmdir()
    finally:
        for p in created:  # deepest first
            try:
                p.rmdir()
            except OSError:
                pass


class UsageError(ValueError):
    """Bad command-line arguments: one line, exit 2."""


def safe_name(name: str) -> str:
    """A scenario name as one short folder name: ASCII letters, digits, ``-_.`` kept, anything
    else (path separators included) replaced by ``_``, no leading dot, at most 80 characters."""
    cleaned = "".join(c if (c.isascii() and c.isalnum()) or c in "-_." else "_" for c in name).lstrip(".")
    return cleaned[:80] or "scenario"
