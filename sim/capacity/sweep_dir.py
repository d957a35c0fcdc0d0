"""The sweep folder: one sweep at a time, acksim's own marker, rows that are never lost.

Like a lab notebook with one pen: a sweep holds an exclusive lock on its folder
(``fcntl.flock`` on ``LOCK``) from before its first run until its last file is written, so a
second sweep into the same folder is refused at once (``UsageError``, exit 2) rather than
interleaving its rows. The folder carries acksim's marker (``acksim.report.outdir.MARKER``,
kind ``"sweep"``) listing every file a sweep may write, written before the first run, so an
interrupted sweep's folder is still recognised as acksim's; a folder holding any other file
is refused, never written into.

Rows are appended to ``runs.csv`` as one ``write`` of a whole line (header too, for the first
row), then ``fsync``; a crash or a full disk can only leave the *last* line torn (it does not
end with a newline). ``repair_rows`` drops that line on resume, so its run is redone. The
result files (``runs.csv`` sorted, ``summary.csv``, ``sweep.json``, plots, ``runs.parquet``)
are each written whole to a temporary file beside it and renamed into place (``write_whole``):
a full disk leaves the previous file or none, never a 0-byte or half file.
"""

from __future__ import annotations

import csv
import errno
import fcntl
import io
import json
import os
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from acksim.printable import shown_path
from acksim.report.outdir import MARKER, UsageError, check_out_dir, marker_kind, owned_files

LOCK = ".acksim-sweep.lock"
KIND = "sweep"
RESULT_FILES = ("runs.csv", "summary.csv", "sweep.json", "runs.parquet")


def sweep_files() -> list[str]:
    """Every file a sweep may write in its folder (relative ``/``-paths), the lock included."""
    from acksim.judges.slo import FIGURES

    return sorted([*RESULT_FILES, LOCK, *(f"plots/{f}.png" for f in FIGURES)])


def check_sweep_dir(out: Path, flag: str = "--out") -> None:
    """Refuse, before any run, a sweep folder that cannot be written or that holds a file
    acksim's sweeps do not write (``UsageError`` naming ``flag`` and up to three of those
    files). A folder without a marker is accepted when it holds only sweep files and its
    ``runs.csv`` is a sweep's (from before the marker)."""
    check_out_dir(out, replaces=False, flag=flag)
    if not out.is_dir():
        return
    try:
        foreign = _foreign(out)
    except OSError as exc:
        raise UsageError(f"{flag}: cannot read {shown_path(out)}: {exc.strerror or exc}") from None
    kind = marker_kind(out)
    if kind is not None and kind != KIND:
        raise UsageError(f"{flag}: {shown_path(out)} holds an acksim {kind} report, not a sweep's results; "
                         "choose another folder for the sweep")
    if foreign:
        shown = ", ".join(foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3 else "")
        raise UsageError(f"{flag}: {shown_path(out)} holds files acksim did not write ({shown}); "
                         "move them away or choose another folder for the sweep")


def _foreign(out: Path) -> list[str]:
    present = {p.relative_to(out).as_posix() for p in out.rglob("*") if not p.is_dir()}
    if (out / MARKER).is_file():
        own = owned_files(out)
        if not own:  # a marker that is not acksim's
            return sorted(present)
    elif _legacy_sweep(out):
        own = set(sweep_files())
    else:
        own = set()
    own = own | {LOCK}  # ours by its name; present from the moment a sweep takes the folder
    return sorted(f for f in present if f not in own and not _stale_temp(f, own))


def _legacy_sweep(out: Path) -> bool:
    try:
        with (out / "runs.csv").open("rb") as f:
            return f.read(9) == b"sweep_id,"
    except OSError:
        return False


def _stale_temp(rel: str, own: set[str]) -> bool:
    """A temporary file ``write_whole`` left when the process was killed mid-write."""
    folder, _, name = rel.rpartition("/")
    base, sep, _ = name.partition(".tmp-")
    return bool(sep) and base.startswith(".") and f"{folder + '/' if folder else ''}{base[1:]}" in own


@contextmanager
def locked(out: Path, flag: str = "--out") -> Iterator[None]:
    """Hold the sweep folder ``out`` for the block: create it, take the exclusive lock
    (``UsageError`` when another sweep holds it), check it again for foreign files, remove
    temporary files a killed sweep left, and write the marker (kind ``"sweep"``) listing
    every file a sweep may write. The lock goes with the process (also on a crash)."""
    check_sweep_dir(out, flag)
    out.mkdir(parents=True, exist_ok=True)
    fd = os.open(out / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise UsageError(f"{flag}: {shown_path(out)} is in use by another acksim sweep (it holds {LOCK}); "
                             "wait for it to finish or choose another folder") from None
        check_sweep_dir(out, flag)  # again, now that no other sweep can write
        own = set(sweep_files())
        for p in list(out.rglob("*")):
            rel = p.relative_to(out).as_posix()
            if p.is_file() and _stale_temp(rel, own):
                p.unlink()
        from acksim import __version__

        marker = {"tool": "acksim", "kind": KIND, "version": __version__, "files": sweep_files()}
        write_whole(out / MARKER, (json.dumps(marker, indent=2) + "\n").encode("utf-8"))
        yield
    finally:
        os.close(fd)  # releases the lock


def write_whole(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` whole or not at all: a temporary file beside it, flushed
    and fsynced, renamed over ``path``. On any error (``OSError``: a full disk, ...) the
    temporary file is removed, ``path`` is as it was, and the error is raised."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.tmp-", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        if isinstance(exc, OSError) and exc.filename is None:
            exc.filename = str(path)  # so the error names the file, not the temporary one
        raise


def append_row(path: Path, row: dict) -> None:
    """Append ``row`` to the CSV file ``path`` (with the header first when the file is new
    or empty; else in the order of the file's header, which a finished sweep's rewritten
    ``runs.csv`` may list differently) as one write of whole lines, then fsync. Raises
    ``OSError`` when the write fails or is short (the torn part is cut off again where the
    file system lets us), ValueError when the file's header names other columns than ``row``."""
    buf = io.StringIO()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        size = os.fstat(fd).st_size
        fields = list(row) if size == 0 else _header(path)
        if sorted(fields) != sorted(row):
            raise ValueError(f"{path.name}: its header has other columns than the row to append: "
                             f"{', '.join(sorted(set(fields) ^ set(row)))}")
        writer = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n")
        if size == 0:
            writer.writeheader()
        writer.writerow(row)
        data = buf.getvalue().encode("utf-8")
        try:
            written = os.write(fd, data)
            if written != len(data):
                raise OSError(errno.ENOSPC, f"short write ({written} of {len(data)} bytes)", str(path))
            os.fsync(fd)
        except OSError as exc:
            try:
                os.ftruncate(fd, size)
            except OSError:
                pass  # the torn line stays; the next resume drops it
            if exc.filename is None:
                exc.filename = str(path)
            raise
    finally:
        os.close(fd)


def _header(path: Path) -> list[str]:
    """The column names in the first line of the CSV file ``path`` ([] for none)."""
    with open(path, newline="", encoding="utf-8") as f:
        return next(csv.reader(f), [])


def repair_rows(path: Path) -> int:
    """Drop a torn last line of the CSV file ``path`` (one not ending with a newline: a crash
    or full disk mid-append) and any row whose field count differs from the header's;
    rewrites the file whole when something was dropped (removes it when not even the header
    is whole). Returns how many rows were dropped (0 for a missing or sound file)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return 0
    if not data:
        return 0
    torn = not data.endswith(b"\n")
    records = list(csv.reader(io.StringIO(data.decode("utf-8", errors="replace"), newline="")))
    if torn:
        records = records[:-1]
    if not records:
        path.unlink()
        return 1
    header, rows = records[0], records[1:]
    good = [r for r in rows if len(r) == len(header)]
    dropped = len(rows) - len(good) + (1 if torn else 0)
    if dropped:
        buf = io.StringIO()
        csv.writer(buf, lineterminator="\n").writerows([header, *good])
        write_whole(path, buf.getvalue().encode("utf-8"))
    return dropped


def note(text: str) -> None:
    """One line on stderr."""
    print(f"acksim: note: {text}", file=sys.stderr)
