"""Replay files: a finding written as a scenario file that ``acksim run`` reproduces exactly.

A replay file is the shrunk example's scenario with the processor's reference (and the folder
its module imports from) and an ``[expect]`` table: the invariants it violated, whether the
processor raised, and the SHA-256 of its history. A finding is a fact only once its replay
file reproduces in a fresh process (``confirm_findings``, ``acksim.search.selfcheck``);
``acksim run`` on a replay file says whether it reproduced (``replay_verdict``).
"""

from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

import tomli_w

from acksim.history import Record, history_digest
from acksim.report.outdir import safe_name
from acksim.scenario import Scenario, parse
from acksim.search.design import design_tag
from acksim.search.findings import PROCESSOR_FINDINGS, timeline

if TYPE_CHECKING:
    from acksim.search.check import CheckReport, ExampleResult


def replay_text(scenario: Scenario, result: ExampleResult, processor_ref: str,
                processor_path: str | None = None) -> str:
    """A scenario file that ``acksim run`` reproduces exactly, from any folder, with what it
    should show; ``processor_path``: the folder the processor's module imports from. It holds
    only what differs from a file that names just the queue preset (``minimal_data``), each
    table after a comment saying what it is."""
    data = minimal_data(scenario)
    data["processor"] = processor_ref
    if processor_path is not None:
        data["processor_path"] = processor_path
    data["expect"] = {
        "violated": [n for n, v in result.verdicts.items() if not v["holds"]],  # as `run` will judge it
        "processor_error": any(name in PROCESSOR_FINDINGS for name in result.failures),
        "history_sha256": history_digest(result.history),
    }
    header = ("# A counterexample found by `acksim check`. Reproduce it with `acksim run THIS_FILE`.\n"
              f"# Findings: {', '.join(result.failures)}\n"
              "# Only what differs from the defaults of its queue preset is written (`acksim presets NAME`).\n")
    return header + _commented(tomli_w.dumps(_plain(data)))


# what each table of a replay file is, written above it
_TABLE_NOTES = {
    "workload": "the players' lifecycle settings (their deadlines and steps are the [plan] below)",
    "scheduler": "how jobs were published",
    "queue": "the queue's settings and mechanisms, as drawn for this example",
    "workers": "the consumers",
    "stores": "the design's stores: backend, isolation level, unique keys",
    "faults": "the fault schedule, shrunk: crashes at a delivery and phase, duplicates, pauses, ...",
    "mail": "the outbox relay and the mail provider",
    "run": "when the run stops",
    "plan": "the workload, shrunk: these accounts and lifecycle steps only",
    "invariants": "invariants of your own, judged beside the built-in five",
    "expect": "what the check saw: `acksim run` says whether this run reproduced it",
}


def _commented(text: str) -> str:
    """TOML ``text`` with a comment line before the first header of each table in ``_TABLE_NOTES``."""
    out, seen = [], set()
    for line in text.splitlines(keepends=True):
        header = line.strip().strip("[]").split(".")[0] if line.startswith("[") else None
        if header in _TABLE_NOTES and header not in seen:
            seen.add(header)
            out.append(f"# {_TABLE_NOTES[header]}\n")
        out.append(line)
    return "".join(out)


def minimal_data(scenario: Scenario) -> dict:
    """``scenario`` as a dict holding only the values that differ from those a file naming just
    its queue preset gets (the preset and the model's defaults), which ``parse`` turns back into
    ``scenario`` itself; the whole dump in the rare case it would not."""
    full = scenario.model_dump(exclude_none=True)
    base = parse({"queue": {"preset": scenario.queue.preset}}).model_dump(exclude_none=True)
    out: dict = {}
    for key, value in full.items():
        before = base.get(key)
        if isinstance(value, dict) and isinstance(before, dict):
            changed = {k: v for k, v in value.items() if k not in before or before[k] != v}
            if changed:
                out[key] = changed
        elif value != before:
            out[key] = value
    out.setdefault("queue", {})["preset"] = scenario.queue.preset
    return out if parse(dict(out)) == scenario else full


def _plain(value):
    """Tuples to lists and dropped empty containers, for the TOML writer."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if v is not None and v != () and v != []}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def replay_stem(ref: str, scenario: Scenario, finding: str) -> str:
    """The file name (without suffix) of ``finding``'s replay file: the processor (module stem
    and function), the design tag (``acksim.search.design.design_tag``) and the finding name, at
    most 80 characters. A long processor or design part is cut, never the finding name, so the
    findings of one check get one file each."""
    module, _, function = ref.rpartition(":")
    short = Path(module).stem if module.endswith(".py") else module
    prefix = safe_name("-".join(p for p in (f"{short}.{function}", design_tag(scenario)) if p))
    return f"{prefix[:79 - len(finding)]}-{finding}"


def save_findings(report: CheckReport, ref: str, out: Path, corpus: Path | None,
                  processor_path: str | None = None) -> list[Path]:
    """Write one replay file per finding of ``report`` into ``out`` (and ``corpus``), with its
    timeline as a swimlane PNG beside it in ``out``; returns the replay files' paths.
    ``processor_path``: the folder the processor's module imports from, recorded in the file
    (None: none). Raises ``OSError`` when a file cannot be written."""
    paths = []
    for name, (scenario, result) in report.findings.items():
        from acksim.report.plots.counterexample import plot_counterexample  # matplotlib: only for a finding

        text = replay_text(scenario, result, ref, processor_path)
        stem = replay_stem(ref, scenario, name)
        out.mkdir(parents=True, exist_ok=True)
        path = out / f"{stem}.toml"
        path.write_text(text, encoding="utf-8")
        examples = [v["example"] for v in result.verdicts.values() if not v["holds"] and v.get("example")]
        (out / f"{stem}.png").write_bytes(plot_counterexample(result.history, examples))  # the timeline, drawn
        paths.append(path)
        if corpus is not None:
            corpus.mkdir(parents=True, exist_ok=True)
            (corpus / f"{stem}.toml").write_text(text, encoding="utf-8")
    return paths


def confirm_findings(report: CheckReport, ref: str, processor_path: str | None):
    """Replay each finding's replay file in a fresh process (``acksim.search.selfcheck``):
    returns (the report with only the findings that came back the same, findings and history
    hash; {name: (scenario, result, what differed)} for the flaky ones)."""
    from acksim.search.selfcheck import differences, replay_in_fresh_process

    confirmed, flaky = {}, {}
    with tempfile.TemporaryDirectory(prefix="acksim-selfcheck-") as tmp:
        for name, (scenario, result) in report.findings.items():
            path = Path(tmp) / f"{safe_name(name)}.toml"
            path.write_text(replay_text(scenario, result, ref, processor_path), encoding="utf-8")
            diff = differences(result.failures, history_digest(result.history), replay_in_fresh_process(path))
            if diff:
                flaky[name] = (scenario, result, diff)
            else:
                confirmed[name] = (scenario, result)
    return replace(report, findings=confirmed), flaky


def replay_lines(scenario: Scenario, history: Sequence[Record], summary) -> list[str]:
    """A replay's verdict line (``replay_verdict``), then its text timeline
    (``acksim.search.findings.timeline``)."""
    return [replay_verdict(scenario, history, summary), *timeline(history)]


def replay_verdict(scenario: Scenario, history: Sequence[Record], summary) -> str:
    """One line: did this run (``history``, judged in ``summary``) reproduce what the replay
    file ``scenario`` recorded in its ``[expect]`` table?"""
    expect = scenario.expect
    violated = tuple(n for n, v in summary["invariants"].items() if not v["holds"])
    errors = bool(summary["counts"].get("processor_errors") or summary.get("contained"))
    same_history = not expect.history_sha256 or history_digest(history) == expect.history_sha256
    if violated == tuple(expect.violated) and errors == expect.processor_error and same_history:
        return (f"replay: reproduced ({', '.join(violated) or 'no violation'}"
                f"{', processor error' if errors else ''}; same history, record for record)")
    return (f"replay: NOT reproduced: expected {list(expect.violated)} processor_error={expect.processor_error}, "
            f"got {list(violated)} processor_error={errors}; history {'same' if same_history else 'differs'}")
