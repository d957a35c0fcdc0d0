"""report.md: the report as a markdown page, for a terminal, a pull request or a wiki.

Lays out ``tables``: title, scenario, seed and processor, the verdict line, the scenario
parameters that ran, the invariants, SLO and counts
tables, then the plots as image links relative to the report folder (``plots/<name>.png``).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from acksim.report import tables


def render_markdown(summary: Mapping[str, Any], plots: Sequence[tuple[str, str]], *, title: str) -> str:
    """The text of report.md. ``plots`` are ``(relative path, caption)`` pairs in display
    order. Raises KeyError for a summary without the fixed keys."""
    _passed, line = tables.verdict(summary)
    out = [
        f"# {_inline(title)}",
        "",
        f"Scenario `{_inline(str(summary['scenario']))}`, seed {summary['seed']}"
        + (f", processor `{_inline(str(summary['parameters']['processor']))}`." if summary.get("parameters") else "."),
        "",
        f"**Verdict: {_inline(line)}**",
        "",
        "## Scenario parameters",
        "",
        *_table(tables.PARAMETER_HEADER, tables.parameter_rows(summary)),
        "",
        "## Invariants",
        "",
        *_table(tables.INVARIANT_HEADER, tables.invariant_rows(summary)),
        "",
        "## SLO figures",
        "",
        *_table(tables.SLO_HEADER, tables.slo_rows(summary)),
        "",
        "## Counts",
        "",
        *_table(tables.COUNT_HEADER, tables.count_rows(summary)),
        "",
        "## Plots",
        "",
    ]
    for path, caption in plots:
        out += [f"![{_inline(caption)}]({path})", ""]
    return "\n".join(out)


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    if not rows:
        return ["(none)"]
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return lines


def _cell(text: str) -> str:
    return _inline(text).replace("|", "\\|")


def _inline(text: str) -> str:
    return " ".join(str(text).split())
