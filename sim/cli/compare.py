"""The ``acksim compare`` command and its report folder.

``acksim compare SCENARIO [--presets a,b,...] [--out DIR] [--seed N]`` runs the scenario on
each preset (``acksim.capacity.compare``) and writes compare.json, compare.csv, compare.md and plots/*.png
into a scratch folder beside ``DIR``, renamed into place only once complete. Exit codes: 0 every
preset passed (every invariant held, every SLO threshold met); 1 one did not (a comparison for
a design review is a verdict); 2 bad input (scenario, preset names, folder).
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from acksim.capacity.compare import (
    compare_table,
    comparison,
    preset_names,
    preset_scenarios,
)
from acksim.printable import shown_path
from acksim.report.outdir import check_out_dir, output_error, safe_name
from acksim.scenario.presets import PRESETS
from acksim.scenario import read_data, scenario_file
from acksim.report import staged
from acksim.scenario.file_refs import anchor_refs
from acksim.world.sandbox.processor_ref import canonical_ref
from acksim.search.candidates import resolve as resolve_candidate
from acksim.search.design import merge_design
from acksim.report.plots._canvas import new_figure, to_png
from acksim.judges.slo import LOWER_BOUND_FIGURES
from acksim.judges.summary import reasons_text
from acksim.report.junit import Suite, check_junit_path, summary_cases, write_junit
from acksim.judges.figure_text import format_figure


def add_compare_parser(sub) -> None:
    """Add the ``compare`` subcommand to the ``acksim`` argument parser."""
    p = sub.add_parser("compare", help="run one scenario on several queue presets, side by side")
    p.add_argument("scenario", help="scenario TOML file (its [queue] table is replaced by each preset's)")
    p.add_argument("--presets", help="comma-separated preset names (default: every preset; acksim presets lists them)")
    p.add_argument("--out", help="report folder (default: reports/compare-<scenario name>)")
    p.add_argument("--seed", type=int, help="override the scenario's seed for every preset (0 .. 2**63-1)")
    p.add_argument("--junit-xml", metavar="FILE", help="also write the verdicts as JUnit XML: a suite per preset, "
                                                       "a test case per invariant and SLO figure")
    p.add_argument("--processor", metavar="REF", help="code under test (default: the scenario's processor)")
    p.add_argument("--candidate", metavar="NAME", help="a bundled candidate design (its processor and design "
                                                       "options) from acksim.model.candidates; see README")


def cmd_compare(args) -> int:
    """Run ``acksim compare``; returns the exit code. Raises ``UsageError`` and
    ``ScenarioError`` for bad input (preset names, any preset's scenario, the folder), before
    anything runs or is written."""
    names = preset_names(args.presets)
    path = scenario_file(args.scenario)  # a file, or a bundled scenario by name
    data = anchor_refs(read_data(path), path.parent, args.scenario)  # refs from its folder
    ref, design = resolve_candidate(getattr(args, "candidate", None), getattr(args, "processor", None))
    if ref is not None or design:
        data = merge_design(data, design, canonical_ref(ref) if ref else None)
    scenarios = preset_scenarios(data, args.scenario, names, args.seed)
    out = Path(args.out) if args.out is not None else Path("reports") / f"compare-{safe_name(scenarios[0].name)}"
    check_out_dir(out)  # an earlier comparison (acksim's files only) is replaced
    junit = check_junit_path(args.junit_xml, out=out) if args.junit_xml else None
    result = comparison(scenarios)
    try:
        write_compare_report(out, result)
    except OSError as exc:  # a full disk: the verdicts still print, then one line (exit 4)
        for entry in result["presets"]:
            print(verdict_line(entry))
        raise output_error(exc, f"the report {shown_path(out)}") from None
    for entry in result["presets"]:
        print(verdict_line(entry))
    print(f"report: {shown_path(out)}")
    if junit is not None:
        write_junit(junit, junit_suites(result))
    return 0 if all(e["verdict"] == "PASS" for e in result["presets"]) else 1


def verdict_line(entry: dict) -> str:
    """``PASS: <preset>: every invariant holds and every SLO threshold is met; hazard
    witnesses: N``, or ``FAIL: <preset>: <reasons>; hazard witnesses: N``: the preset run's own
    verdict and reasons (``acksim.judges.summary``), never judged again here."""
    return f"{entry['verdict']}: {entry['preset']}: {reasons_text(entry)}; hazard witnesses: {entry['hazard']['witnesses']}"


def junit_suites(result: dict) -> list[Suite]:
    """One JUnit suite per preset: a case per invariant and per SLO figure, and the run checks."""
    suites = []
    for e in result["presets"]:
        summary = {"invariants": {n: {"holds": h, "violations": e["violations"][n], "example": None}
                                  for n, h in e["invariants"].items()},
                   "slo": e["slo"], "reasons": e["reasons"]}
        suites.append(Suite(f"{result['scenario']} on {e['preset']}",
                            tuple(summary_cases(summary, f"{result['scenario']}.{e['preset']}"))))
    return suites


def write_compare_report(out: Path, result: dict) -> list[Path]:
    """Write compare.json, compare.csv, compare.md and plots/*.png for ``result`` (what
    ``acksim.capacity.compare.comparison`` returns) into a scratch folder beside ``out``, then rename it to
    ``out`` (an existing ``out`` is replaced only once the new report is complete; on any
    failure nothing is left behind). Returns the written paths, sorted."""
    with staged(out, kind="compare") as staging:
        plots = render_plots(result)
        files = {"compare.json": (json.dumps(result, indent=2, allow_nan=False) + "\n").encode("utf-8"),
                 "compare.csv": compare_table(result).to_csv(index=False, lineterminator="\n").encode("utf-8"),
                 "compare.md": render_markdown(result, [(n, c) for n, c, _png in plots]).encode("utf-8"),
                 **{f"plots/{name}": png for name, _caption, png in plots}}
        (staging / "plots").mkdir()
        for rel, data in files.items():
            (staging / rel).write_bytes(data)
    return sorted(out / rel for rel in files)


def side_by_side(result: dict) -> pd.DataFrame:
    """compare.md's table: one column per preset; rows "verdict" (the preset run's own), each
    invariant ("holds" or "VIOLATED (n)"), each SLO figure (its value, "no sample" without
    one, "missed" when it misses its threshold; the threshold in the row name; numbers in the
    report's one format, ``acksim.judges.figure_text.format_figure``) and "hazard witnesses"."""
    columns = {}
    for e in result["presets"]:
        col = {"verdict": e["verdict"]}
        for name, holds in e["invariants"].items():
            col[name] = "holds" if holds else f"VIOLATED ({e['violations'][name]})"
        for fig, v in e["slo"].items():
            col[_figure_label(fig, v["threshold"])] = (
                ("no sample" if v["value"] is None or v.get("n") == 0 else format_figure(fig, v["value"]))
                + (" missed" if v["met"] is False else ""))
        col["hazard witnesses"] = str(e["hazard"]["witnesses"])
        columns[e["preset"]] = col
    return pd.DataFrame(columns)


def render_markdown(result: dict, plots: list[tuple[str, str]]) -> str:
    """The text of compare.md: the side-by-side table, each preset's verdict and reasons (as
    ``verdict_line`` prints them), each preset's characteristic hazard
    with its witnesses, the plots as links (``plots`` are (file name, caption) pairs)."""
    table = side_by_side(result)
    lines = [f"# acksim compare: {result['scenario']} (seed {result['seed']})", "",
             "The same workload and fault schedule on each queue preset. Times are virtual seconds.", "",
             "| | " + " | ".join(table.columns) + " |", "| --- |" + " --- |" * len(table.columns)]
    lines += [f"| {row} | " + " | ".join(str(c) for c in cells) + " |" for row, cells in table.iterrows()]
    lines += ["", "## Verdicts", ""]
    lines += [f"- {verdict_line(e)}" for e in result["presets"]]
    lines += ["", "## Characteristic hazards", ""]
    for e in result["presets"]:
        kinds = ", ".join(f"`{k}`" for k in PRESETS[e["preset"]].hazard_kinds)
        lines.append(f"- **{e['preset']}**: {e['hazard']['text']} ({e['hazard']['witnesses']} witnesses: {kinds})")
    lines += ["", "## Plots", ""]
    for name, caption in plots:
        lines += [f"![{caption}](plots/{name})", ""]
    return "\n".join(lines)


def render_plots(result: dict) -> list[tuple[str, str, bytes]]:
    """(file name, caption, PNG bytes): a bar chart per SLO figure that has a value for some
    preset (its threshold as a dashed line), one of hazard witnesses, and one of redeliveries,
    dead-lettered messages and lost work (``no_lost_work`` violations) per preset."""
    entries = result["presets"]
    names = [e["preset"] for e in entries]
    plots = []
    for fig in entries[0]["slo"]:
        values = [e["slo"][fig]["value"] for e in entries]
        if all(v is None for v in values):
            continue
        threshold = entries[0]["slo"][fig]["threshold"]
        missed = [e["slo"][fig]["met"] is False for e in entries]
        plots.append((f"{fig}.png", f"{fig} by preset", _bars(names, values, fig, threshold, missed)))
    plots.append(("hazard_witnesses.png", "characteristic hazard witnesses by preset",
                  _bars(names, [e["hazard"]["witnesses"] for e in entries], "hazard witnesses (records)")))
    losses = pd.DataFrame({"redeliveries": [e["counts"]["redeliveries"] for e in entries],
                           "dead_lettered": [e["counts"]["dead_lettered"] for e in entries],
                           "lost work": [e["violations"]["no_lost_work"] for e in entries]}, index=names)
    fig, ax = new_figure((10.0, 4.5))
    losses.plot.bar(ax=ax, width=0.8)
    ax.set_xticks(range(len(names)), names, rotation=30, ha="right")
    ax.set_title("Redeliveries, dead-lettered messages and lost work by preset")
    ax.set_ylabel("count")
    plots.append(("redeliveries_dead_lettered_lost_work.png", "redeliveries, dead-lettered and lost work by preset",
                  to_png(fig)))
    return plots


def _bars(names: list[str], values: list, label: str, threshold: float | None = None,
          missed: list[bool] | None = None) -> bytes:
    fig, ax = new_figure((10.0, 4.5))
    colors = ["tab:red" if m else "tab:blue" for m in (missed or [False] * len(names))]
    ax.bar(range(len(names)), [0.0 if v is None else float(v) for v in values], color=colors)
    for i, v in enumerate(values):
        if v is None:
            ax.text(i, 0, "no sample", ha="center", va="bottom", fontsize=8, color="#777777", rotation=90)
    if threshold is not None:
        ax.axhline(threshold, color="red", linestyle="--", label=f"threshold {format_figure(label, threshold)}")
        ax.legend(fontsize=8)
    ax.set_xticks(range(len(names)), names, rotation=30, ha="right")
    ax.set_ylabel(label)
    ax.set_title(f"{label} by preset" + (" (red: threshold missed)" if any(missed or []) else ""))
    return to_png(fig)


def _figure_label(fig: str, threshold: float | None) -> str:
    if threshold is None:
        return fig
    return f"{fig} ({'>=' if fig in LOWER_BOUND_FIGURES else '<='} {format_figure(fig, threshold)})"
