"""The report folder: checked before any work, so a run never fails at its end for a folder
it cannot write, and never replaces a folder that is not one of its own reports.

Every report folder acksim writes holds a marker file, ``.acksim-report``: JSON
``{"tool": "acksim", "kind": "run" | "compare" | ..., "version": "...", "files": [...]}``,
``files`` being every file acksim wrote there (paths relative to the folder, ``/``-separated).
A folder is replaced only when it is empty, or holds such a marker and nothing but the files
the marker lists (or, from before the marker, nothing but a report's usual files). A folder
that also holds a file acksim did not write is refused, so no report write ever deletes one.
"""

from __future__ import annotations

import errno
import json
import os
import tempfile
from pathlib import Path

from acksim.printable import shown_path

MARKER = ".acksim-report"
# what reports held before the marker existed: accepted once, to be replaced by a marked report
_LEGACY_FILES = {"summary.json", "report.md", "report.html", "events.csv", "compare.json", "compare.csv",
                 "compare.md"}


def check_out_dir(out: Path, replaces: bool = True, flag: str = "--out") -> None:
    """Refuse, before any work, a folder that cannot be written or (``replaces``: a report
    folder, replaced whole) would overwrite something that is not acksim's: an existing file,
    a non-empty folder that is not an acksim report (see ``foreign_files``), a name the file
    system refuses, a parent that is a file or read-only. Leaves nothing behind. Raises
    ``UsageError`` naming ``flag``."""
    if not str(out) or not out.name or out.name in (".", ".."):
        raise UsageError(f"{flag}: {str(out)!r} needs a folder name, e.g. reports/run1")
    try:
        _check_writable(out, replaces, flag)
    except OSError as exc:
        raise UsageError(f"{flag}: cannot write at {shown_path(out)}: {exc.strerror or exc}") from None


def refuse_replacing(out: Path, flag: str = "--out") -> None:
    """Raise ``UsageError`` (naming ``flag``) unless ``out`` is missing, empty, or an acksim
    report holding only files acksim wrote; the message says which files are in the way."""
    if marker_kind(out) == "sweep":
        raise UsageError(f"{flag}: {shown_path(out)} holds a sweep's results (its {MARKER} says kind \"sweep\"); "
                         "a report never replaces them: choose another folder")
    problem = foreign_files(out)
    if problem is None:
        return
    if not (out / MARKER).is_file() and not (out / "summary.json").is_file() and not (out / "compare.json").is_file():
        raise UsageError(f"{flag}: {shown_path(out)} is a non-empty folder that holds no acksim report (no {MARKER}); "
                         "choose a new folder, or an earlier report's folder to replace it")
    shown = ", ".join(problem[:3]) + (f" and {len(problem) - 3} more" if len(problem) > 3 else "")
    raise UsageError(f"{flag}: {shown_path(out)} holds files acksim did not write ({shown}); move them away or "
                     "choose another folder (a report folder is replaced whole)")


def foreign_files(out: Path) -> list[str] | None:
    """None when ``out`` may be replaced by a report (missing, empty, or only acksim's own
    files); else the files in it acksim did not write, sorted (relative ``/``-paths; for a
    folder with no marker, every file). Raises ``OSError`` when the folder cannot be read."""
    if not out.is_dir():
        return None
    present = _files(out)
    if not present:
        return None
    own = owned_files(out)
    foreign = sorted(f for f in present if f not in own)
    return foreign or None


def marker_kind(out: Path) -> str | None:
    """The ``kind`` in ``out``'s acksim marker ("run", "sweep", ...), or None without one."""
    try:
        data = json.loads((out / MARKER).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    return data.get("kind") if isinstance(data, dict) and data.get("tool") == "acksim" else None


def owned_files(out: Path) -> set[str]:
    """The files of ``out`` acksim wrote: those its marker lists (and the marker itself), or,
    in an unmarked report from before the marker (a summary.json or compare.json present),
    the usual report files; else none."""
    marker = out / MARKER
    if marker.is_file():
        try:
            data = json.loads(marker.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError):
            return set()
        if not isinstance(data, dict) or data.get("tool") != "acksim" or not isinstance(data.get("files"), list):
            return set()
        return {MARKER, *(f for f in data["files"] if isinstance(f, str))}
    if (out / "summary.json").is_file() or (out / "compare.json").is_file():
        return {f for f in _files(out) if f in _LEGACY_FILES or (f.startswith("plots/") and f.count("/") == 1
                                                                 and f.endswith(".png"))}
    return set()


def write_marker(folder: Path, kind: str) -> None:
    """Write ``folder``'s marker, listing every file in it (call it last)."""
    from acksim import __version__

    data = {"tool": "acksim", "kind": kind, "version": __version__, "files": sorted(_files(folder) - {MARKER})}
    (folder / MARKER).write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def remove_report(folder: Path) -> list[str]:
    """Delete the files acksim wrote in ``folder`` (``owned_files``), then its empty
    sub-folders and the folder itself when empty; returns what was left (sorted, not acksim's)."""
    own = owned_files(folder)
    for rel in own:
        try:
            (folder / rel).unlink()
        except FileNotFoundError:
            pass
    for dirpath, _dirs, _files_ in sorted(os.walk(folder), key=lambda t: -len(t[0])):
        try:
            os.rmdir(dirpath)
        except OSError:
            pass
    return sorted(_files(folder)) if folder.exists() else []


def _files(folder: Path) -> set[str]:
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*") if not p.is_dir()}


def _check_writable(out: Path, replaces: bool, flag: str) -> None:
    if out.exists() and not out.is_dir():
        raise UsageError(f"{flag}: {shown_path(out)} exists and is not a folder")
    if replaces:
        refuse_replacing(out, flag)
    for p in (out.parent, *out.parent.parents):
        if p.exists() and not p.is_dir():
            raise UsageError(f"{flag}: {shown_path(p)} is a file, not a folder")
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


class OutputError(Exception):
    """The results could not be written (a full disk, a read-only folder, an I/O error) after
    the work was done: one line, exit 4 (``acksim.cli.main.OUTPUT_FAILED``)."""


def output_error(exc: OSError, what: str = "") -> OutputError:
    """``exc`` as one line: ``cannot write <what or its file>: <the OS's reason> (ENOSPC)``."""
    target = what or (shown_path(exc.filename) if exc.filename else "the results")
    code = errno.errorcode.get(exc.errno, "") if exc.errno else ""
    reason = (exc.strerror or str(exc) or type(exc).__name__).splitlines()[0]
    return OutputError(f"cannot write {target}: {reason}" + (f" ({code})" if code else ""))


def safe_name(name: str) -> str:
    """A scenario name as one short folder name: ASCII letters, digits, ``-_.`` kept, anything
    else (path separators included) replaced by ``_``, no leading dot, at most 80 characters."""
    cleaned = "".join(c if (c.isascii() and c.isalnum()) or c in "-_." else "_" for c in name).lstrip(".")
    return cleaned[:80] or "scenario"
