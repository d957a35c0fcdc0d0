"""JUnit XML: a verdict in the format every CI system reads (``--junit-xml FILE``).

One test case per thing that was judged, so a CI page lists exactly what held and what broke:
for ``acksim run`` each invariant, each SLO figure (skipped when it has no threshold) and the
two run-level checks (``processor_errors``, ``drained``); for ``acksim check`` each invariant
and processor finding kind, and each hazard window (failing only under
``--require-coverage``); for ``acksim compare`` one suite per preset, for ``acksim sweep`` one
per grid point. A failure carries what a reader needs to start: the first counterexample, the
shrunk schedule, or the missed threshold and the value.

The cases are built from what the judges already decided (``verdict``, ``reasons``, ``met``),
never judged again here. Written with the standard library's ``xml.etree.ElementTree``, into a
temporary file beside the destination renamed into place, so a reader never sees half a file.
"""

from __future__ import annotations

import json
import os
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from acksim.report.outdir import UsageError


@dataclass(frozen=True)
class Case:
    """One ``<testcase>``: ``classname`` groups cases (e.g. ``smoke.invariants``); a case
    fails when ``failure`` (its one-line message) is set, with ``detail`` as the body; it is
    skipped when ``skipped`` (why) is set; otherwise it passed."""

    classname: str
    name: str
    failure: str | None = None
    detail: str = ""
    skipped: str | None = None


@dataclass(frozen=True)
class Suite:
    """One ``<testsuite>``: a run, a check, a preset or a grid point, with its cases and the
    wall ``seconds`` it took (0 when not measured)."""

    name: str
    cases: tuple[Case, ...]
    seconds: float = 0.0

    @property
    def failures(self) -> int:
        return sum(1 for c in self.cases if c.failure is not None)

    @property
    def skipped(self) -> int:
        return sum(1 for c in self.cases if c.failure is None and c.skipped is not None)


def check_junit_path(path: str | Path, flag: str = "--junit-xml", out: Path | None = None) -> Path:
    """``path`` as a Path, checked before anything runs. Raises ``UsageError`` (one line naming
    ``flag``) for an existing folder, a parent that is a file, or a path that is the report
    folder ``out`` or lies inside it (a report folder is replaced whole)."""
    p = Path(path)
    if out is not None:
        folder, target = Path(out).resolve(), p.resolve()
        if target == folder or folder in target.parents:
            raise UsageError(f"{flag}: {str(p)!r} is in the report folder {str(out)!r}, which is replaced whole; "
                             "name a file outside it")
    if p.is_dir():
        raise UsageError(f"{flag}: {str(p)!r} is a folder; name a file, e.g. {str(p / 'acksim.xml')!r}")
    for parent in p.parents:
        if parent.exists():
            if not parent.is_dir():
                raise UsageError(f"{flag}: {str(parent)!r} is not a folder")
            break
    return p


def summary_cases(summary: Mapping[str, Any], prefix: str, run_checks: bool = True) -> list[Case]:
    """The cases of one judged summary (summary.json's shape, with ``reasons``): one per
    invariant (failing with its violation count and first counterexample), one per SLO figure
    (failing with the reason's text: value against threshold, or "no sample"; skipped without
    a threshold) and, with ``run_checks``, ``processor_errors`` and ``drained``."""
    reasons = {(r["kind"], r["name"]): r["text"] for r in summary.get("reasons", ())}
    cases = []
    for name, inv in summary["invariants"].items():
        if inv["holds"]:
            cases.append(Case(f"{prefix}.invariants", name))
        else:
            example = inv.get("example")
            cases.append(Case(f"{prefix}.invariants", name, f"{name} violated ({inv['violations']} violation(s))",
                              "first counterexample: " + json.dumps(example, default=str) if example else ""))
    for name, fig in summary["slo"].items():
        text = reasons.get(("slo", name)) or reasons.get(("no_sample", name))
        if fig["met"] is False:
            cases.append(Case(f"{prefix}.slo", name, text or f"{name} missed its threshold",
                              json.dumps({k: fig.get(k) for k in ("value", "n", "censored", "threshold")})))
        elif fig["threshold"] is None:
            cases.append(Case(f"{prefix}.slo", name, skipped="no threshold"))
        else:
            cases.append(Case(f"{prefix}.slo", name))
    if run_checks:
        cases.append(Case(f"{prefix}.run", "processor_errors", reasons.get(("processor_errors", "processor_errors"))))
        cases.append(Case(f"{prefix}.run", "drained", reasons.get(("stopped_early", "stopped_early"))))
    return cases


def run_suite(summary: Mapping[str, Any]) -> Suite:
    """The suite of one ``acksim run``: ``summary_cases`` of its summary, named after the
    scenario and seed."""
    name = f"{summary['scenario']} seed {summary['seed']}"
    return Suite(name, tuple(summary_cases(summary, str(summary["scenario"]))))


def check_suite(name: str, findings: Mapping[str, str], kinds: Sequence[str],
                coverage: Mapping[str, int], require_coverage: bool) -> Suite:
    """The suite of one ``acksim check``: one case per finding kind of ``kinds`` (failing when
    ``findings`` has it; the value is the failure's text: what broke, the shrunk schedule, the
    replay command) and one per hazard window of ``coverage`` (examples that hit it; a window
    never hit fails under ``require_coverage`` and is skipped otherwise)."""
    cases = []
    for kind in kinds:
        if kind in findings:
            first = findings[kind].strip().splitlines()[0] if findings[kind].strip() else kind
            cases.append(Case(f"{name}.findings", kind, first, findings[kind]))
        else:
            cases.append(Case(f"{name}.findings", kind))
    for window, hits in coverage.items():
        if hits:
            cases.append(Case(f"{name}.hazards", window))
        elif require_coverage:
            cases.append(Case(f"{name}.hazards", window, f"hazard window {window} never hit (--require-coverage)"))
        else:
            cases.append(Case(f"{name}.hazards", window, skipped="never hit"))
    return Suite(name, tuple(cases))


def write_junit(path: str | Path, suites: Iterable[Suite], name: str = "acksim") -> Path:
    """Write ``suites`` as one JUnit XML document to ``path`` (a temporary file beside it, then
    renamed into place; the parent folder is created if missing) and return the path. A suite's
    ``time`` is its wall seconds; every case takes 0 s (what a case judges happened in virtual
    time). Raises OSError from the file system; on any
    failure no temporary file is left behind."""
    suites = list(suites)
    root = ET.Element("testsuites", name=name, tests=str(sum(len(s.cases) for s in suites)),
                      failures=str(sum(s.failures for s in suites)), errors="0",
                      skipped=str(sum(s.skipped for s in suites)), time=f"{sum(s.seconds for s in suites):.3f}")
    for suite in suites:
        el = ET.SubElement(root, "testsuite", name=suite.name, tests=str(len(suite.cases)),
                           failures=str(suite.failures), errors="0", skipped=str(suite.skipped),
                           time=f"{suite.seconds:.3f}")
        for case in suite.cases:
            tc = ET.SubElement(el, "testcase", classname=case.classname, name=case.name, time="0")
            if case.failure is not None:
                failure = ET.SubElement(tc, "failure", message=case.failure, type="acksim")
                failure.text = case.detail or case.failure
            elif case.skipped is not None:
                ET.SubElement(tc, "skipped", message=case.skipped)
    ET.indent(root)
    data = ET.tostring(root, encoding="utf-8", xml_declaration=True) + b"\n"
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.tmp-", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
