"""report.html: the report as one self-contained page, to open from disk or attach to a ticket.

Same content as report.md (both lay out ``tables``), with inline CSS and the plots embedded as
``data:image/png;base64`` URIs: the page fetches nothing. All text is escaped.
"""

from __future__ import annotations

import base64
from html import escape
from typing import Any, Mapping, Sequence

from acksim.report import tables

_CSS = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 72em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: left; vertical-align: top; }
th { background: #f2f2f2; }
td.example { font-family: ui-monospace, monospace; font-size: 0.9em; }
.verdict { font-weight: bold; padding: 0.5em 0.8em; border-radius: 4px; }
.pass { background: #e3f4e3; color: #185c18; }
.fail { background: #fbe4e4; color: #8a1616; }
figure { margin: 1em 0; }
img { max-width: 100%; }
""".strip()


def render_html(summary: Mapping[str, Any], plots: Sequence[tuple[str, str, bytes]], *, title: str) -> str:
    """The text of report.html. ``plots`` are ``(name, caption, PNG bytes)`` in display order.
    Raises KeyError for a summary without the fixed keys."""
    passed, line = tables.verdict(summary)
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        f"<title>{escape(title)}</title>",
        f"<style>\n{_CSS}\n</style>",
        "</head>",
        "<body>",
        f"<h1>{escape(title)}</h1>",
        f"<p>Scenario <code>{escape(str(summary['scenario']))}</code>, "
        f"seed {escape(str(summary['seed']))}"
        + (f", processor <code>{escape(str(summary['parameters']['processor']))}</code>.</p>"
           if summary.get("parameters") else ".</p>"),
        f'<p class="verdict {"pass" if passed else "fail"}">Verdict: {escape(line)}</p>',
        "<h2>Scenario parameters</h2>",
        _table(tables.PARAMETER_HEADER, tables.parameter_rows(summary)),
        "<h2>Invariants</h2>",
        _table(tables.INVARIANT_HEADER, tables.invariant_rows(summary), example_column=3),
        "<h2>SLO figures</h2>",
        _table(tables.SLO_HEADER, tables.slo_rows(summary)),
        "<h2>Counts</h2>",
        _table(tables.COUNT_HEADER, tables.count_rows(summary)),
        "<h2>Plots</h2>",
    ]
    for name, caption, png in plots:
        data = base64.b64encode(png).decode("ascii")
        parts.append(f'<figure><img alt="{escape(caption)}" src="data:image/png;base64,{data}">'
                     f"<figcaption>{escape(caption)} ({escape(name)})</figcaption></figure>")
    parts += ["</body>", "</html>", ""]
    return "\n".join(parts)


def _table(header: Sequence[str], rows: Sequence[Sequence[str]], example_column: int = -1) -> str:
    if not rows:
        return "<p>(none)</p>"
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = []
    for row in rows:
        cells = "".join(
            f'<td class="example">{escape(c)}</td>' if i == example_column else f"<td>{escape(c)}</td>"
            for i, c in enumerate(row))
        body.append(f"<tr>{cells}</tr>")
    return "<table>\n<thead><tr>" + head + "</tr></thead>\n<tbody>\n" + "\n".join(body) + "\n</tbody>\n</table>"
