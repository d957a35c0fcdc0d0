"""The report of one run: summary.json, report.md, report.html, events.csv and plots/*.png.

One small renderer per output format (``summary_json``, ``markdown_page``, ``html_page``,
``plots``; the events file is ``acksim.history.to_csv``). ``write_report`` assembles them the way a
careful editor files a document: everything is written into a fresh scratch folder beside the
destination, and only a complete report is renamed into place, so a failure half way never
leaves a half-written report and never damages the previous one. The folder gets acksim's
marker (``acksim.report.outdir.MARKER``) listing its files, and an existing folder is replaced
only when it holds nothing but an earlier report's files (checked again just before the rename).
"""

from __future__ import annotations

import html
import os
import shutil
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from acksim.history import Record, to_csv
from acksim.report.html_page import render_html
from acksim.report.outdir import remove_report, refuse_replacing, write_marker
from acksim.report.markdown_page import render_markdown
from acksim.report.summary_json import render_summary_json

__all__ = ["write_report", "staged", "move_into_place", "PLOTS"]

PLOTS_DIR = "plots"


def __getattr__(name: str):
    """``PLOTS`` (the plot renderers, ``acksim.report.plots.PLOTS``), imported on first use so
    that importing ``acksim.report`` (for ``outdir``) loads no matplotlib."""
    if name == "PLOTS":
        from acksim.report.plots import PLOTS

        return PLOTS
    raise AttributeError(f"module 'acksim.report' has no attribute {name!r}")


def write_report(out_dir: Path, summary: Mapping[str, Any], history: Sequence[Record], *,
                 title: str, full_timeline: bool = False, replay: Sequence[str] = (),
                 kind: str = "run") -> list[Path]:
    """Write the report of one run into ``out_dir`` and return the written paths, sorted.

    ``summary`` has the fixed shape of summary.json (docs/DESIGN.md): ``scenario``, ``seed``,
    ``invariants`` ``{name: {holds, violations, example}}``, ``slo`` ``{figure: {value,
    threshold, met}}`` (virtual seconds) and ``counts``; ``history`` is the run's records in
    order (may be empty); ``full_timeline`` adds the whole-run swimlane of a short run (a
    replayed counterexample); ``replay``: lines saying whether a replay file was reproduced and
    its text timeline, added to report.md and report.html; ``kind``: the marker's kind of
    report ("run", "replay"). An existing ``out_dir`` is replaced,
    but only once the new report is complete and only when it holds nothing but an earlier
    report's files; the parent folder is created if missing.

    Raises ValueError for a malformed summary (or an infinite float in it) and for an
    ``out_dir`` without a name, NotADirectoryError when ``out_dir`` is an existing file, and
    ``UsageError`` when ``out_dir`` holds files acksim did not write, and
    whatever a renderer or the file system raises; in every failure case no scratch folder is
    left behind and a previous ``out_dir`` is left as it was.
    """
    out_dir = Path(out_dir)
    with staged(out_dir, kind) as staging:
        written = _write_files(staging, summary, history, title, full_timeline, replay)
    return sorted(out_dir / rel for rel in written)


@contextmanager
def staged(out_dir: Path, kind: str = "run") -> Iterator[Path]:
    """A fresh scratch folder beside ``out_dir`` to write a report into; when the block ends
    without an error acksim's marker (``kind`` of report, the files written) is added and the
    folder renamed to ``out_dir`` (replacing an existing one only then, and only one that
    holds nothing but acksim's files), and on any error it is removed and ``out_dir`` is left
    as it was. The parent folder is created if missing. Raises ValueError for an ``out_dir``
    without a name, NotADirectoryError when it is an existing file, and ``UsageError`` when it
    holds files acksim did not write."""
    if not out_dir.name or out_dir.name in (".", ".."):
        raise ValueError(f"report folder {str(out_dir)!r} needs a name, e.g. 'out/report'")
    if out_dir.exists() and not out_dir.is_dir():
        raise NotADirectoryError(f"report folder {str(out_dir)!r} exists and is not a folder")
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.tmp-", dir=out_dir.parent))
    try:
        yield staging
        write_marker(staging, kind)
        os.chmod(staging, 0o755)  # mkdtemp makes it private; a report folder is not
        move_into_place(staging, out_dir)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def _write_files(folder: Path, summary: Mapping[str, Any], history: Sequence[Record],
                 title: str, full_timeline: bool, replay: Sequence[str] = ()) -> list[str]:
    summary_text = render_summary_json(summary)  # first: a malformed summary fails fast
    examples = [v["example"] for v in summary["invariants"].values() if not v["holds"] and v.get("example")]
    from acksim.report.plots import render_plots  # matplotlib: only once a report is written

    plots = render_plots(history, full_timeline, examples)
    plot_links = [(f"{PLOTS_DIR}/{name}", caption) for name, caption, _png in plots]
    files: dict[str, bytes] = {
        "summary.json": summary_text.encode("utf-8"),
        "report.md": (render_markdown(summary, plot_links, title=title) + replay_markdown(replay)).encode("utf-8"),
        "report.html": with_replay_html(render_html(summary, plots, title=title), replay).encode("utf-8"),
        "events.csv": to_csv(history).encode("utf-8"),
    }
    files.update({f"{PLOTS_DIR}/{name}": png for name, _caption, png in plots})
    (folder / PLOTS_DIR).mkdir()
    for rel, data in files.items():
        (folder / rel).write_bytes(data)
    return list(files)


def move_into_place(staging: Path, out_dir: Path) -> None:
    """Rename ``staging`` to ``out_dir``; an existing ``out_dir`` is set aside first and
    restored if the rename fails, and once the new one is in place acksim's files in it are
    deleted (never anything else: a file that appeared meanwhile stays, in the set-aside
    folder, named on stderr). Raises ``UsageError`` (nothing moved) when ``out_dir`` holds
    files acksim did not write."""
    if not out_dir.exists():
        os.rename(staging, out_dir)
        return
    refuse_replacing(out_dir)
    suffix = staging.name.rsplit(".tmp-", 1)[1]  # unique, as mkdtemp made it
    old = staging.with_name(f".{out_dir.name}.old-{suffix}")
    os.rename(out_dir, old)
    try:
        os.rename(staging, out_dir)
    except BaseException:
        os.rename(old, out_dir)
        raise
    left = remove_report(old)
    if left:
        print(f"acksim: warning: {old} keeps files acksim did not write: {', '.join(left[:3])}", file=sys.stderr)


def replay_markdown(lines: Sequence[str]) -> str:
    """The replay section of report.md: the verdict line, then the timeline as a code block."""
    if not lines:
        return ""
    verdict, *timeline = lines
    return f"\n## Replay\n\n{verdict}\n\n```\n" + "\n".join(timeline) + "\n```\n"


def with_replay_html(page: str, lines: Sequence[str]) -> str:
    """``page`` with the replay section (verdict, timeline) before its closing body tag."""
    if not lines:
        return page
    verdict, *timeline = lines
    section = (f"<h2>Replay</h2>\n<p>{html.escape(verdict)}</p>\n<pre>" + html.escape("\n".join(timeline)) +
               "</pre>\n")
    head, sep, tail = page.rpartition("</body>")
    return head + section + sep + tail if sep else page + section
